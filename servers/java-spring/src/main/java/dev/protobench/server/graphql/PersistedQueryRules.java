package dev.protobench.server.graphql;

import dev.protobench.server.web.GraphQlGetRequests;
import graphql.ErrorClassification;
import graphql.ExecutionInput;
import graphql.ExecutionResult;
import graphql.GraphQLError;
import graphql.execution.preparsed.PreparsedDocumentEntry;
import graphql.execution.preparsed.PreparsedDocumentProvider;
import graphql.execution.preparsed.persisted.ApolloPersistedQuerySupport;
import graphql.execution.preparsed.persisted.PersistedQueryIdInvalid;
import graphql.execution.preparsed.persisted.PersistedQueryNotFound;
import graphql.execution.preparsed.persisted.PersistedQuerySupport;
import graphql.language.NodeUtil;
import graphql.language.OperationDefinition;
import graphql.language.SourceLocation;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.regex.Pattern;
import org.springframework.graphql.server.WebGraphQlInterceptor;
import org.springframework.graphql.server.WebGraphQlRequest;
import org.springframework.graphql.server.WebGraphQlResponse;
import org.springframework.graphql.support.DefaultExecutionGraphQlResponse;
import org.springframework.http.HttpHeaders;
import reactor.core.publisher.Mono;

/**
 * The contract's answers for persisted queries (Apollo's APQ, docs/graphql-connect.md) around
 * graphql-java's ApolloPersistedQuerySupport, on both GraphQL listeners:
 * - extensions.persistedQuery is checked before anything runs: version 1, sha256Hash 64 hex
 *   digits, and with a document the hash must be its SHA-256 (400 otherwise; graphql-java checks
 *   the hash only when the document is not stored yet, and answers 200);
 * - graphql-java's PersistedQueryNotFound becomes {"errors":[{"message":"PersistedQueryNotFound",
 *   "extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}]} (graphql-java's own error carries its
 *   classification and the hash);
 * - over GET (GraphQlGetRequests), a mutation is refused with 405 and Allow: POST, before it runs.
 * The answers of these rules are a Refusal: its HTTP status (StatusGraphQlHttpHandler) and a body
 * of errors only, with neither data nor graphql-java's classification.
 */
public final class PersistedQueryRules implements WebGraphQlInterceptor {

    /** GraphQLContext key: the request arrived as a GET. */
    static final String OVER_GET = "dev.protobench.graphql.overGet";

    private static final Pattern SHA256_HEX = Pattern.compile("[0-9a-fA-F]{64}");

    /** An answer of these rules: an HTTP status and a GraphQL error of a message and extensions. */
    record Refusal(int status, String message, Map<String, Object> extensions) implements GraphQLError {
        @Override
        public String getMessage() {
            return message;
        }

        @Override
        public List<SourceLocation> getLocations() {
            return null;
        }

        @Override
        public ErrorClassification getErrorType() {
            return null;
        }

        @Override
        public Map<String, Object> getExtensions() {
            return extensions;
        }

        @Override
        public Map<String, Object> toSpecification() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("message", message);
            if (extensions != null) {
                m.put("extensions", extensions);
            }
            return m;
        }
    }

    static final Refusal NOT_FOUND = new Refusal(200, "PersistedQueryNotFound",
            Map.of("code", "PERSISTED_QUERY_NOT_FOUND"));
    static final Refusal HASH_MISMATCH = new Refusal(400, "provided sha does not match query", null);

    /**
     * graphql-java's ApolloPersistedQuerySupport over the bounded store, refusing a mutation that
     * came as a GET once its document is known (stored or sent).
     */
    static PreparsedDocumentProvider documentProvider(PersistedQueryStore store) {
        ApolloPersistedQuerySupport apq = new ApolloPersistedQuerySupport(store);
        return new PreparsedDocumentProvider() {
            @Override
            public CompletableFuture<PreparsedDocumentEntry> getDocumentAsync(ExecutionInput input,
                    Function<ExecutionInput, PreparsedDocumentEntry> parseAndValidate) {
                CompletableFuture<PreparsedDocumentEntry> entry = apq.getDocumentAsync(input, parseAndValidate);
                if (!Boolean.TRUE.equals(input.getGraphQLContext().get(OVER_GET))) {
                    return entry;
                }
                return entry.thenApply(e -> refuseMutation(input, e));
            }
        };
    }

    private static PreparsedDocumentEntry refuseMutation(ExecutionInput input, PreparsedDocumentEntry entry) {
        if (entry.hasErrors()) {
            return entry;
        }
        OperationDefinition op;
        try {
            op = NodeUtil.getOperation(entry.getDocument(), input.getOperationName()).operationDefinition;
        } catch (RuntimeException e) {
            return entry; // no such operation: execution answers it as on POST
        }
        if (op.getOperation() != OperationDefinition.Operation.QUERY) {
            String name = op.getName() == null ? "" : " " + op.getName();
            return new PreparsedDocumentEntry(new Refusal(405, "operation" + name + " is a "
                    + op.getOperation().name().toLowerCase(Locale.ROOT) + ": only a query can be sent by GET; use POST",
                    null));
        }
        return entry;
    }

    @Override
    public Mono<WebGraphQlResponse> intercept(WebGraphQlRequest request, Chain chain) {
        Map<String, Object> extensions = request.getExtensions();
        if (extensions.containsKey("persistedQuery")) {
            Refusal refused = check(request, extensions.get("persistedQuery"));
            if (refused != null) {
                return Mono.just(respond(request.toExecutionInput(), refused));
            }
        }
        if (Boolean.TRUE.equals(request.getAttributes().get(GraphQlGetRequests.GET_ATTRIBUTE))) {
            request.configureExecutionInput((input, b) -> b.graphQLContext(Map.of(OVER_GET, true)).build());
        }
        return chain.next(request).map(PersistedQueryRules::translate);
    }

    /** The refusal of a bad extensions.persistedQuery, or null (a hash in capitals is lowered). */
    private static Refusal check(WebGraphQlRequest request, Object persistedQuery) {
        if (!(persistedQuery instanceof Map<?, ?> pq)) {
            return new Refusal(400, "extensions.persistedQuery: expected a JSON object "
                    + "{\"version\":1,\"sha256Hash\":\"<64 hex digits>\"}", null);
        }
        Object version = pq.get("version");
        if (!(version instanceof Integer v && v == 1)) {
            return new Refusal(400, "extensions.persistedQuery.version: expected 1, found " + version, null);
        }
        if (!(pq.get("sha256Hash") instanceof String hash && SHA256_HEX.matcher(hash).matches())) {
            return new Refusal(400, "extensions.persistedQuery.sha256Hash: expected 64 hex digits "
                    + "(the SHA-256 of the document)", null);
        }
        // no document: Spring's PersistedQueryMarker for a hash-only POST, ours for a hash-only GET
        String document = request.getDocument();
        if (!document.isBlank() && !PersistedQuerySupport.PERSISTED_QUERY_MARKER.equals(document)
                && !sha256Hex(document).equalsIgnoreCase(hash)) {
            return HASH_MISMATCH;
        }
        String lower = hash.toLowerCase(Locale.ROOT);
        if (!lower.equals(hash)) {
            Map<String, Object> lowered = new HashMap<>(pq.size());
            pq.forEach((k, val) -> lowered.put(k.toString(), val));
            lowered.put("sha256Hash", lower);
            Map<String, Object> ext = new HashMap<>(request.getExtensions());
            ext.put("persistedQuery", lowered);
            request.configureExecutionInput((input, b) -> b.extensions(ext).build());
        }
        return null;
    }

    /** graphql-java's persisted-query errors and the refusals of a GET, as the contract answers them. */
    private static WebGraphQlResponse translate(WebGraphQlResponse response) {
        if (response.getExecutionResult().isDataPresent() && response.getExecutionResult().getData() != null) {
            return response;
        }
        for (GraphQLError error : response.getExecutionResult().getErrors()) {
            if (error instanceof Refusal r) {
                return respond(response.getExecutionInput(), r);
            }
            if (error.getErrorType() instanceof PersistedQueryNotFound) {
                return respond(response.getExecutionInput(), NOT_FOUND);
            }
            if (error.getErrorType() instanceof PersistedQueryIdInvalid) {
                return respond(response.getExecutionInput(), HASH_MISMATCH);
            }
        }
        return response;
    }

    private static WebGraphQlResponse respond(ExecutionInput input, Refusal refusal) {
        ExecutionResult result = ExecutionResult.newExecutionResult().addError(refusal).build();
        WebGraphQlResponse response = new WebGraphQlResponse(new DefaultExecutionGraphQlResponse(input, result));
        if (refusal.status() == 405) {
            response.getResponseHeaders().set(HttpHeaders.ALLOW, "POST");
        }
        return response;
    }

    /** The HTTP status a response of these rules asks for, or null. */
    static Integer statusOf(WebGraphQlResponse response) {
        List<GraphQLError> errors = response.getExecutionResult().getErrors();
        return errors.size() == 1 && errors.get(0) instanceof Refusal r ? r.status() : null;
    }

    static String sha256Hex(String text) {
        try {
            return HexFormat.of().formatHex(
                    MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JVM has no SHA-256", e);
        }
    }
}
