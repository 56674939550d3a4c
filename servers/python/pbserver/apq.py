"""Automatic persisted queries (Apollo's APQ) for the GraphQL listeners.

strawberry has no APQ, so this is the small registry in front of its
executor: the SHA-256 (lowercase hex) of a document as the client sent it ->
the document. A client registers a document by sending it together with
`extensions.persistedQuery.sha256Hash` (POST on either GraphQL listener, or
GET with a `query` parameter on `graphql-get`), then sends the hash alone.

The store is bounded at CAPACITY documents and at `max_bytes` of document
text (MAX_BYTES, or the request-size limit if larger: one document larger
than the request-size limit cannot arrive), in two levels:
- every worker process keeps an LRU cache (an OrderedDict) of at most
  CAPACITY documents; a hit moves the document to the end, the least
  recently used falls out first;
- behind it, one SQLite file shared by all the worker processes of both
  GraphQL listeners (the supervisor creates it in a temporary directory),
  so a document registered through one worker is found by the others; it
  keeps the CAPACITY most recently registered documents (the oldest
  registration is evicted; registering a known document again makes it the
  newest). A worker asks it only when its own cache misses.
A document evicted from the shared file may still be served by a worker
whose cache holds it; the bound (per worker, and in the file) holds either
way.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections import OrderedDict

CAPACITY = 1000
MAX_BYTES = 64 * 1024 * 1024
NOT_FOUND = {"errors": [{"message": "PersistedQueryNotFound",
                         "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"}}]}
HASH_MISMATCH = "provided sha does not match query"
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_SCHEMA = ("CREATE TABLE IF NOT EXISTS queries (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
           "hash TEXT NOT NULL UNIQUE, document TEXT NOT NULL, size INTEGER NOT NULL)")
# the rows past the newest `capacity` or past `max_bytes` of documents, newest first
_EVICT = ("DELETE FROM queries WHERE seq IN (SELECT seq FROM (SELECT seq, "
          "ROW_NUMBER() OVER (ORDER BY seq DESC) AS n, SUM(size) OVER (ORDER BY seq DESC) AS total "
          "FROM queries) WHERE n > ? OR total > ?)")


class BadRequest(ValueError):
    """A request the APQ rules refuse with 400; the message names the parameter."""


def sha256_hex(document: str) -> str:
    return hashlib.sha256(document.encode("utf-8")).hexdigest()


def persisted_hash(extensions) -> str | None:
    """`extensions.persistedQuery.sha256Hash` in lowercase, or None when the
    request carries no persisted query; raises BadRequest when `extensions`
    is not an object, the version is not 1 or the hash not 64 hex digits."""
    if extensions is None:
        return None
    if not isinstance(extensions, dict):
        raise BadRequest("extensions must be a JSON object")
    pq = extensions.get("persistedQuery")
    if pq is None:
        return None
    if not isinstance(pq, dict):
        raise BadRequest("extensions.persistedQuery must be a JSON object")
    version = pq.get("version")
    if isinstance(version, bool) or version != 1:
        raise BadRequest(f"extensions.persistedQuery.version must be 1, not {json.dumps(version)[:40]}")
    h = pq.get("sha256Hash")
    if not isinstance(h, str) or not _HEX64.fullmatch(h):
        raise BadRequest("extensions.persistedQuery.sha256Hash must be 64 hex digits "
                         "(the SHA-256 of the query)")
    return h.lower()


def create_shared(path: str) -> None:
    """Creates the shared store's file (by the supervisor, before any worker)."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(_SCHEMA)
    finally:
        db.close()


class Store:
    """One worker's view of the store: its LRU cache in front of the shared
    file at `path` (None: the cache alone), each holding at most `capacity`
    documents and `max_bytes` of their UTF-8 text (a larger document is
    not kept)."""

    def __init__(self, path: str | None, capacity: int = CAPACITY, max_bytes: int = MAX_BYTES):
        self.capacity = capacity
        self.max_bytes = max_bytes
        self.cache: OrderedDict[str, tuple[str, int]] = OrderedDict()
        self.cache_bytes = 0
        self.db = None
        if path is not None:
            self.db = sqlite3.connect(path, isolation_level=None, timeout=10.0)
            self.db.execute("PRAGMA synchronous=NORMAL")

    def get(self, h: str) -> str | None:
        entry = self.cache.get(h)
        if entry is not None:
            self.cache.move_to_end(h)
            return entry[0]
        if self.db is None:
            return None
        row = self.db.execute("SELECT document FROM queries WHERE hash = ?", (h,)).fetchone()
        if row is None:
            return None
        self._remember(h, row[0], len(row[0].encode("utf-8")))
        return row[0]

    def put(self, h: str, doc: str) -> None:
        size = len(doc.encode("utf-8"))
        self._remember(h, doc, size)
        if self.db is None:
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("INSERT OR REPLACE INTO queries (hash, document, size) VALUES (?, ?, ?)", (h, doc, size))
            self.db.execute(_EVICT, (self.capacity, self.max_bytes))
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def _remember(self, h: str, doc: str, size: int) -> None:
        old = self.cache.pop(h, None)
        if old is not None:
            self.cache_bytes -= old[1]
        self.cache[h] = (doc, size)
        self.cache_bytes += size
        while len(self.cache) > self.capacity or self.cache_bytes > self.max_bytes:
            self.cache_bytes -= self.cache.popitem(last=False)[1][1]
