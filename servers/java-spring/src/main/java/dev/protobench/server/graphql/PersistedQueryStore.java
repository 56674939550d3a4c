package dev.protobench.server.graphql;

import graphql.ExecutionInput;
import graphql.execution.preparsed.PreparsedDocumentEntry;
import graphql.execution.preparsed.persisted.PersistedQueryCache;
import graphql.execution.preparsed.persisted.PersistedQueryCacheMiss;
import graphql.execution.preparsed.persisted.PersistedQueryNotFound;
import graphql.execution.preparsed.persisted.PersistedQuerySupport;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The store of graphql-java's ApolloPersistedQuerySupport: sha256Hash -> the parsed and validated
 * document, at most MAX_DOCUMENTS of them; when full, the least recently used one is evicted
 * (an untrusted client cannot grow it without limit). graphql-java's own InMemoryPersistedQueryCache
 * has no bound. A document that does not parse or validate is answered but not stored.
 */
public final class PersistedQueryStore implements PersistedQueryCache {

    public static final int MAX_DOCUMENTS = 1000;

    private final int capacity;
    private final Map<String, PreparsedDocumentEntry> lru;

    public PersistedQueryStore(int capacity) {
        this.capacity = capacity;
        this.lru = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, PreparsedDocumentEntry> eldest) {
                return size() > PersistedQueryStore.this.capacity;
            }
        };
    }

    @Override
    public CompletableFuture<PreparsedDocumentEntry> getPersistedQueryDocumentAsync(Object persistedQueryId,
            ExecutionInput input, PersistedQueryCacheMiss onCacheMiss) throws PersistedQueryNotFound {
        String key = persistedQueryId.toString();
        PreparsedDocumentEntry entry;
        synchronized (lru) {
            entry = lru.get(key);
        }
        if (entry != null) {
            return CompletableFuture.completedFuture(entry);
        }
        String text = input.getQuery();
        if (text == null || text.isBlank() || PersistedQuerySupport.PERSISTED_QUERY_MARKER.equals(text)) {
            throw new PersistedQueryNotFound(persistedQueryId);
        }
        // parses and validates outside the lock; graphql-java checks the hash first
        entry = onCacheMiss.apply(text);
        if (!entry.hasErrors()) {
            synchronized (lru) {
                lru.put(key, entry);
            }
        }
        return CompletableFuture.completedFuture(entry);
    }
}
