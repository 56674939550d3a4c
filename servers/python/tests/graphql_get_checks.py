"""The `graphql-get` listener's checks for tests/check.py: GraphQL persisted
queries over GET in Apollo's APQ form (contract addition `graphql-get`).

For every query workload with a GraphQL vector (contract/vectors/*/
request.graphql.json whose document is a query, and contract/graphql/
vectors/*): the hash alone is PersistedQueryNotFound, a POST with the
document and its hash registers it and answers the response vector, then
the hash alone by GET answers the vector, byte for byte what POST /graphql
answers. Then the refusals (wrong hash, mutation by GET, malformed
extensions and variables, neither hash nor query, an oversized query
string), registration by GET, `+` and `%20` spaces in any order, a document
registered on one listener found on the other and by every worker, and the
bound: 1,001 registrations keep at most 1,000 (the first is not found
again). By http.client against the real server on loopback.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import pathlib
import tempfile
import urllib.parse

J = {"Content-Type": "application/json"}
# the exact bodies the contract addition prescribes (written out here, not
# taken from the server's code)
NOT_FOUND = {"errors": [{"message": "PersistedQueryNotFound", "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"}}]}
MISMATCH = {"errors": [{"message": "provided sha does not match query"}]}
CAPACITY = 1000


def sha(doc: str) -> str:
    return hashlib.sha256(doc.encode("utf-8")).hexdigest()


def ext(h: str, version=1) -> dict:
    return {"persistedQuery": {"version": version, "sha256Hash": h}}


def get_path(**params) -> str:
    """GET /graphql with the JSON parameters encoded (urlencode: `+` for spaces)."""
    enc = {k: v if isinstance(v, str) else json.dumps(v, separators=(",", ":")) for k, v in params.items()}
    return "/graphql?" + urllib.parse.urlencode(enc)


def parse(out: bytes):
    try:
        return json.loads(out)
    except ValueError:
        return {"raw": out[:200].decode("utf-8", "replace")}


def query_workloads(contract: pathlib.Path) -> list[tuple[str, dict, bytes]]:
    """(name, request, response bytes) of every query workload with a GraphQL vector."""
    out = []
    for d in sorted((contract / "vectors").iterdir()):
        req = d / "request.graphql.json"
        if req.is_file():
            r = json.loads(req.read_bytes())
            if r["query"].lstrip().startswith("query"):
                out.append((d.name, r, (d / "response.graphql.json").read_bytes()))
    for d in sorted((contract / "graphql" / "vectors").iterdir()):
        out.append((d.name, json.loads((d / "request.json").read_bytes()), (d / "response.json").read_bytes()))
    return out


def check_workloads(check, c, contract: pathlib.Path, tag: str):
    """Rules 1-3 for every query workload, on `graphql-get`."""
    workloads = query_workloads(contract)
    check(f"{tag} query workloads with GraphQL vectors found", len(workloads) >= 12,
          f"{[w for w, _, _ in workloads]}")
    registered = set()
    for name, r, want in workloads:
        t = f"{tag} {name}"
        h = sha(r["query"])
        hash_only = get_path(operationName=r["operationName"], variables=r.get("variables") or {}, extensions=ext(h))
        status, hdrs, out = c.http("graphql-get", "GET", hash_only)
        if h in registered:  # the same document as an earlier workload's (GetFile): known already
            check(f"{t}: hash alone first (document registered before): the response vector", status == 200
                  and parse(out) == json.loads(want), f"{status} {out[:200]!r}")
        else:
            check(f"{t}: hash alone first: 200 PersistedQueryNotFound", status == 200 and parse(out) == NOT_FOUND
                  and hdrs.get("content-type", "").startswith("application/json"), f"{status} {out[:200]!r}")
        registered.add(h)
        status, _, out = c.http("graphql-get", "POST", "/graphql", json.dumps({**r, "extensions": ext(h)}).encode(), J)
        check(f"{t}: registered by POST: the response vector", status == 200 and parse(out) == json.loads(want),
              f"{status} {out[:200]!r}")
        status, hdrs, out = c.http("graphql-get", "GET", hash_only)
        check(f"{t}: hash alone by GET: the response vector", status == 200 and parse(out) == json.loads(want)
              and hdrs.get("content-type", "").startswith("application/json"), f"{status} {out[:200]!r}")
        _, _, posted = c.http("graphql", "POST", "/graphql", json.dumps(r).encode(), J)
        check(f"{t}: GET's bytes are POST /graphql's", out == posted, f"{len(out)} vs {len(posted)} bytes")


def check_rules(check, c, tag: str, limit: int):
    """The refusals and the forms of the request (rules 3, 5, 6, 7)."""
    q = "query GetInteger { integer { value } }"
    want = {"data": {"integer": {"value": 2147483647}}}
    h = sha(q)

    def get(path, name, status_want, body_want=None, words=""):
        status, hdrs, out = c.http("graphql-get", "GET", path)
        j = parse(out)
        msg = (j.get("errors") or [{}])[0].get("message", "") if isinstance(j, dict) else ""
        ok = status == status_want and (j == body_want if body_want is not None else words in msg)
        check(f"{tag} {name}: {status_want}", ok, f"{status} {out[:300]!r}")
        return hdrs, j

    get(get_path(query=q, extensions=ext("0" * 64)), "wrong hash with a query", 400, MISMATCH)
    get(get_path(query=q + " ", extensions=ext(h)), "hash of another text (a space more)", 400, MISMATCH)
    m = 'mutation Echo { echo(input: {payload: "a"}) { payload } }'
    hdrs, j = get(get_path(query=m), "mutation by GET", 405, words="mutations")
    check(f"{tag} mutation by GET: Allow POST", hdrs.get("allow") == "POST", repr(hdrs.get("allow")))
    c.http("graphql-get", "POST", "/graphql", json.dumps({"query": m, "extensions": ext(sha(m))}).encode(), J)
    get(get_path(extensions=ext(sha(m))), "registered mutation by its hash", 405, words="mutations")
    get("/graphql?extensions=%7Bnope", "extensions not JSON", 400, words="extensions")
    get(get_path(extensions=ext(h, 2)), "persistedQuery.version 2", 400, words="version")
    get(get_path(extensions=ext("ab" * 31)), "sha256Hash of 62 digits", 400, words="sha256Hash")
    get(get_path(extensions=ext("g" * 64)), "sha256Hash not hex", 400, words="sha256Hash")
    get(get_path(extensions=[1]), "extensions an array", 400, words="extensions")
    get(get_path(extensions={"persistedQuery": "x"}), "persistedQuery a string", 400, words="persistedQuery")
    get(get_path(query=q, variables=[1]), "variables an array", 400, words="variables")
    get("/graphql?variables=%7Bnope&query=" + urllib.parse.quote(q), "variables not JSON", 400, words="variables")
    get("/graphql", "neither hash nor query", 400, words="query")
    get("/graphql?operationName=GetInteger", "operationName alone", 400, words="query")
    get("/graphql?query=", "empty query", 400, words="query")
    for name, body in (("POST extensions without persistedQuery, no query", {"extensions": {}}),
                       ("POST persistedQuery version 2", {"query": q, "extensions": ext(h, 2)})):
        status, _, out = c.http("graphql-get", "POST", "/graphql", json.dumps(body).encode(), J)
        msg = (parse(out).get("errors") or [{}])[0].get("message", "")
        check(f"{tag} {name}: 400", status == 400 and ("query" in msg or "version" in msg), f"{status} {out[:200]!r}")
    get(get_path(query=q, extensions=ext(h)) + "&query=x", "query given twice", 400, words="query")
    get("/graphql?query=" + "x" * (limit + 1), "query string over the limit", 413)
    status, hdrs, out = c.http("graphql-get", "PUT", "/graphql", b"{}", J)
    check(f"{tag} PUT: 405 Allow GET, POST", status == 405 and hdrs.get("allow") == "GET, POST", f"{status} {hdrs}")

    # registration by GET (hash and query), then the hash alone; spaces as
    # `+` (urlencode) and as `%20`, parameters in any order
    q2 = "query  Ints { integers { values } }"  # two spaces: the hash is of the text as sent
    status, _, out = c.http("graphql-get", "GET", get_path(extensions=ext(sha(q2)), query=q2))
    check(f"{tag} registered by GET with query and hash", status == 200
          and len(parse(out).get("data", {}).get("integers", {}).get("values", [])) == 10000, f"{status} {out[:200]!r}")
    path = "/graphql?extensions=" + urllib.parse.quote(json.dumps(ext(sha(q2))))
    status, _, out2 = c.http("graphql-get", "GET", path)
    check(f"{tag} hash alone after GET registration (%20 spaces)", status == 200 and out2 == out, f"{status}")
    status, _, out = c.http("graphql-get", "GET", get_path(operationName="GetInteger", query=q))
    check(f"{tag} plain GET with query, no extensions: executed", status == 200 and parse(out) == want,
          f"{status} {out[:200]!r}")
    rev = ("/graphql?query=" + urllib.parse.quote(q) + "&extensions=" + urllib.parse.quote_plus(json.dumps(ext(h)))
           + "&variables=%7B%7D&operationName=GetInteger")
    status, _, out = c.http("graphql-get", "GET", rev)
    check(f"{tag} registration by GET, other order, %20 and + mixed", status == 200 and parse(out) == want,
          f"{status} {out[:200]!r}")


def check_shared(check, c, tag: str, tries: int = 24):
    """A document registered on `graphql` is found on `graphql-get`, on new
    connections (which the kernel spreads over the workers), and vice versa."""
    for src, dst in (("graphql", "graphql-get"), ("graphql-get", "graphql")):
        q = f"query Shared{src.replace('-', '')} {{ integer {{ value }} }}"
        h = sha(q)
        status, _, _ = c.http(src, "POST", "/graphql", json.dumps({"query": q, "extensions": ext(h)}).encode(), J)
        found = []
        for _ in range(tries):
            if dst == "graphql-get":
                s, _, out = c.http(dst, "GET", get_path(extensions=ext(h)))
            else:
                s, _, out = c.http(dst, "POST", "/graphql", json.dumps({"extensions": ext(h)}).encode(), J)
            found.append(s == 200 and parse(out).get("data") == {"integer": {"value": 2147483647}})
        check(f"{tag} registered on {src}: found on {dst} by every connection", status == 200 and all(found),
              f"{status} {found}")


def check_bound(check, server, tag: str):
    """1,001 distinct documents registered: the first is not found again,
    the last and the second still are (least recently used / oldest evicted)."""
    host, port = server.addrs["graphql-get"]
    conn = http.client.HTTPConnection(host, port, timeout=60)
    docs = [f"query Q{i} {{ a{i}: inventoryXs }}" for i in range(CAPACITY + 1)]
    bad = []
    try:
        for i, d in enumerate(docs):
            conn.request("POST", "/graphql", json.dumps({"query": d, "extensions": ext(sha(d))}), J)
            r = conn.getresponse()
            out = r.read()
            if r.status != 200 or parse(out) != {"data": {f"a{i}": {}}}:
                bad.append((i, r.status, out[:100]))
    finally:
        conn.close()
    check(f"{tag} {CAPACITY + 1} registrations answered", not bad, repr(bad[:3]))
    # The last first: looking a document up makes it the most recently used.
    for i, found in ((CAPACITY, True), (1, True), (0, False)):
        c = http.client.HTTPConnection(host, port, timeout=60)
        try:
            c.request("GET", get_path(extensions=ext(sha(docs[i]))))
            r = c.getresponse()
            out = parse(r.read())
        finally:
            c.close()
        ok = out == {"data": {f"a{i}": {}}} if found else out == NOT_FOUND
        check(f"{tag} after {CAPACITY + 1} registrations document {i}: {'found' if found else 'not found'}",
              r.status == 200 and ok, f"{r.status} {json.dumps(out)[:200]}")


def check_graphql_get(check, server, c, contract: pathlib.Path, tag: str, limit: int):
    check_workloads(check, c, contract, tag)
    check_rules(check, c, tag, limit)
    check_shared(check, c, tag)
    check_bound(check, server, tag)


def check_graphql_get_failure(check, c, tag: str):
    """PROTOBENCH_FAILURE_RATE=1: a persisted query draws as on `graphql`; an
    unknown hash is answered before any draw."""
    q = "query Failing { integer { value } }"
    h = sha(q)
    status, _, out = c.http("graphql-get", "GET", get_path(extensions=ext(h)))
    check(f"{tag} unknown hash: PersistedQueryNotFound, no draw", status == 200 and parse(out) == NOT_FOUND,
          f"{status} {out[:200]!r}")
    for name, method, path, body in (
            ("registered by POST", "POST", "/graphql", json.dumps({"query": q, "extensions": ext(h)}).encode()),
            ("hash alone by GET", "GET", get_path(extensions=ext(h)), None)):
        status, _, out = c.http("graphql-get", method, path, body, J if body else None)
        j = parse(out)
        err = (j.get("errors") or [{}])[0]
        check(f"{tag} {name}: GraphQL error INJECTED_FAILURE", status == 200 and j.get("data") is None
              and err.get("message") == "injected failure"
              and err.get("extensions", {}).get("code") == "INJECTED_FAILURE", f"{status} {out[:300]!r}")


def check_graphql_get_tls(check, server, c, tag: str):
    """With TLS: ALPN http/1.1, and a persisted query registered and found."""
    import socket
    import ssl

    ctx = ssl.create_default_context(cafile=c.cafile)
    ctx.check_hostname = False
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    with socket.create_connection(server.addrs["graphql-get"], timeout=30) as s:
        with ctx.wrap_socket(s, server_hostname="localhost") as t:
            check(f"{tag} ALPN http/1.1", t.selected_alpn_protocol() == "http/1.1", repr(t.selected_alpn_protocol()))
    q = "query Tls { integer { value } }"
    c.http("graphql-get", "POST", "/graphql", json.dumps({"query": q, "extensions": ext(sha(q))}).encode(), J)
    status, _, out = c.http("graphql-get", "GET", get_path(extensions=ext(sha(q))))
    check(f"{tag} hash alone by GET after registration", status == 200
          and parse(out) == {"data": {"integer": {"value": 2147483647}}}, f"{status} {out[:200]!r}")


def check_store(check, tag: str):
    """pbserver/apq.py's store in process, small bounds: the workers' LRU
    caches in front of one shared SQLite file evicting the oldest
    registration, the byte budget, the extensions' checks."""
    from pbserver import apq

    docs = {k: f"query {k} {{ integer {{ value }} }}" for k in ("A", "B", "C", "D")}
    hs = {k: sha(d) for k, d in docs.items()}
    with tempfile.TemporaryDirectory() as d:
        path = str(pathlib.Path(d) / "q.sqlite3")
        apq.create_shared(path)
        a, b = apq.Store(path, capacity=3), apq.Store(path, capacity=3)
        for k in "ABC":
            a.put(hs[k], docs[k])
        check(f"{tag} registered in one worker, found by another", b.get(hs["A"]) == docs["A"])
        a.put(hs["A"], docs["A"])  # registered again: the newest in the file
        a.put(hs["D"], docs["D"])
        fresh = apq.Store(path, capacity=3)
        got = {k: fresh.get(hs[k]) is not None for k in "ABCD"}
        check(f"{tag} file keeps the 3 most recently registered", got == {"A": True, "B": False, "C": True, "D": True},
              repr(got))
        check(f"{tag} a worker's cache still serves what the file evicted", b.get(hs["A"]) == docs["A"])
        big = "query Big { " + "integer { value } " * 10 + "}"
        small = apq.Store(path, capacity=3, max_bytes=100)
        small.put(sha(big), big)
        check(f"{tag} a document over the byte budget is not kept", small.get(sha(big)) is None
              and apq.Store(path).get(sha(big)) is None)
    lru = apq.Store(None, capacity=3)
    for k in "ABC":
        lru.put(hs[k], docs[k])
    lru.get(hs["A"])  # A used: B is now the least recently used
    lru.put(hs["D"], docs["D"])
    got = {k: lru.get(hs[k]) is not None for k in "ABCD"}
    check(f"{tag} cache evicts the least recently used", got == {"A": True, "B": False, "C": True, "D": True},
          repr(got))
    budget = apq.Store(None, capacity=10, max_bytes=2 * len(docs["A"]))
    for k in "ABC":
        budget.put(hs[k], docs[k])
    got = {k: budget.get(hs[k]) is not None for k in "ABC"}
    check(f"{tag} cache evicts past its byte budget", got == {"A": False, "B": True, "C": True}, repr(got))
    check(f"{tag} hash in capitals accepted, lowercased",
          apq.persisted_hash(ext(hs["A"].upper())) == hs["A"])
    for name, bad in (("version true", {"persistedQuery": {"version": True, "sha256Hash": hs["A"]}}),
                      ("version \"1\"", {"persistedQuery": {"version": "1", "sha256Hash": hs["A"]}}),
                      ("hash of 65 digits", ext(hs["A"] + "0"))):
        try:
            apq.persisted_hash(bad)
            ok = False
        except apq.BadRequest:
            ok = True
        check(f"{tag} {name} refused", ok)
