"""The graphql-get listener of the java-spring server (contract: GraphQL persisted queries over
GET, Apollo's APQ form): for every query workload with a GraphQL vector, a hash-only GET is
PersistedQueryNotFound, a POST with extensions registers the document and answers the response
vector, then the hash-only GET answers the vector, byte for byte what POST /graphql answers; the
400s (wrong hash, bad extensions or variables), the 405 of a mutation by GET, the shared store of
both GraphQL listeners, the limits of graphql on the GET path, and the bound of 1,000 documents
with the least recently used one evicted.

Imported by check.py, which passes its `check` function, the Server it started and a client.
"""
import glob
import hashlib
import json
import os
from urllib.parse import quote, quote_plus

CONTRACT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "contract")
NOT_FOUND = {"errors": [{"message": "PersistedQueryNotFound", "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"}}]}
MISMATCH = {"errors": [{"message": "provided sha does not match query"}]}
STORE_BOUND = 1000


def sha256(text):
    return hashlib.sha256(text.encode()).hexdigest()


def apq(text, version=1):
    return {"persistedQuery": {"version": version, "sha256Hash": sha256(text)}}


def query_workloads():
    """(workload, request, response) of every query workload with a GraphQL vector."""
    out = []
    for path in sorted(glob.glob(os.path.join(CONTRACT, "vectors", "*", "request.graphql.json"))
                       + glob.glob(os.path.join(CONTRACT, "graphql", "vectors", "*", "request.json"))):
        with open(path) as f:
            request = json.load(f)
        if not request["query"].startswith("query"):
            continue
        name = "response.graphql.json" if path.endswith("request.graphql.json") else "response.json"
        with open(os.path.join(os.path.dirname(path), name)) as f:
            out.append((os.path.basename(os.path.dirname(path)), request, json.load(f)))
    return out


def error_message(r):
    """The message of a {"errors":[{"message"}]} body with nothing else, or None."""
    try:
        body = r.json()
    except ValueError:
        return None
    if set(body) != {"errors"} or len(body["errors"]) != 1 or set(body["errors"][0]) != {"message"}:
        return None
    return body["errors"][0]["message"]


class Endpoint:
    def __init__(self, client, server):
        self.c = client
        self.get_url = server.url("graphql-get", "/graphql")
        self.post_urls = {p: server.url(p, "/graphql") for p in ("graphql", "graphql-get") if p in server.addrs}

    def get(self, **params):
        """GET /graphql with the given parameters, JSON values encoded as JSON."""
        encoded = {k: v if isinstance(v, str) else json.dumps(v) for k, v in params.items() if v is not None}
        return self.c.get(self.get_url, params=encoded)

    def get_raw(self, query_string):
        return self.c.get(self.get_url + "?" + query_string)

    def post(self, body, listener="graphql-get"):
        return self.c.post(self.post_urls[listener], content=json.dumps(body),
                           headers={"Content-Type": "application/json"})


def hash_only(ep, request):
    return ep.get(operationName=request.get("operationName"), variables=request.get("variables") or None,
                  extensions=apq(request["query"]))


def check_vectors(check, ep):
    workloads = query_workloads()
    check("graphql-get: the query workloads with a GraphQL vector are found", len(workloads) >= 12,
          str([w for w, _, _ in workloads]))
    registered = set()
    for workload, request, response in workloads:
        # workloads sharing a document (tasks.file-*: GetFile with other variables) share its hash
        if request["query"] not in registered:
            r = hash_only(ep, request)
            check(f"graphql-get {workload}: hash-only GET before registering is PersistedQueryNotFound",
                  r.status_code == 200 and r.json() == NOT_FOUND, f"{r.status_code} {r.text[:300]}")
            registered.add(request["query"])
        r = ep.post({**request, "extensions": apq(request["query"])})
        check(f"graphql-get {workload}: POST with extensions registers and answers the vector",
              r.status_code == 200 and r.json() == response, f"{r.status_code} {r.text[:300]}")
        r = hash_only(ep, request)
        check(f"graphql-get {workload}: hash-only GET answers the vector",
              r.status_code == 200 and r.headers.get("content-type", "").startswith("application/json")
              and r.json() == response, f"{r.status_code} {r.headers.get('content-type')} {r.text[:300]}")
        if "graphql" in ep.post_urls:
            plain = ep.post(request, listener="graphql")
            check(f"graphql-get {workload}: the GET's bytes are POST /graphql's", r.content == plain.content,
                  f"GET {r.text[:200]} POST {plain.text[:200]}")


def check_encodings(check, ep):
    """Both %20 and + for a space, any parameter order, variables absent; the same store on both listeners."""
    text = "query EncodedInteger { integer { value } }"
    r = ep.post({"query": text, "extensions": apq(text)}, listener="graphql")
    check("graphql: POST with extensions registers on the graphql listener too", r.status_code == 200
          and r.json() == {"data": {"integer": {"value": 2147483647}}}, f"{r.status_code} {r.text[:200]}")
    ext = json.dumps(apq(text))
    for label, qs in (("%20, extensions first", f"extensions={quote(ext, safe='')}&operationName=EncodedInteger"),
                      ("+, operationName first", f"operationName=EncodedInteger&extensions={quote_plus(ext)}")):
        r = ep.get_raw(qs)
        check(f"graphql-get: hash-only GET registered on graphql ({label})",
              r.status_code == 200 and r.json() == {"data": {"integer": {"value": 2147483647}}},
              f"{r.status_code} {r.text[:200]}")
    for listener in ep.post_urls:
        r = ep.post({"extensions": apq(text)}, listener=listener)
        r2 = ep.post({"query": "", "extensions": apq(text)}, listener=listener)
        check(f"{listener}: hash-only POST (no query, and an empty one) answers a stored document",
              r.status_code == 200 and r.json() == {"data": {"integer": {"value": 2147483647}}}
              and r2.status_code == 200 and r2.json() == r.json(), f"{r.status_code} {r.text[:200]} {r2.text[:200]}")
        unknown = f"query NeverStored{listener.replace('-', '')} {{ integer {{ value }} }}"
        r = ep.post({"extensions": apq(unknown)}, listener=listener)
        check(f"{listener}: hash-only POST of an unknown hash is PersistedQueryNotFound",
              r.status_code == 200 and r.json() == NOT_FOUND, f"{r.status_code} {r.text[:200]}")
    other = "query PlusSpaces { integers { values } }"
    r = ep.get_raw(f"query={quote_plus(other)}&extensions={quote_plus(json.dumps(apq(other)))}")
    check("graphql-get: GET registering with query and hash (+ for spaces) runs it",
          r.status_code == 200 and len(r.json()["data"]["integers"]["values"]) > 0, f"{r.status_code} {r.text[:200]}")
    r = ep.get(extensions=apq(other))
    check("graphql-get: a document registered by GET is then found by its hash",
          r.status_code == 200 and "integers" in r.json().get("data", {}), f"{r.status_code} {r.text[:200]}")
    r = ep.get(query="{ integer { value } }")
    check("graphql-get: a plain GET with query and no extensions is executed (GraphQL-over-HTTP)",
          r.status_code == 200 and r.json() == {"data": {"integer": {"value": 2147483647}}},
          f"{r.status_code} {r.text[:200]}")


def check_refusals(check, ep, limit):
    text = "query Refused { integer { value } }"
    r = ep.get(query="{ integer { value } }", extensions=apq(text))
    check("graphql-get: GET with a query and a wrong hash is 400 'provided sha does not match query'",
          r.status_code == 400 and r.json() == MISMATCH, f"{r.status_code} {r.text[:200]}")
    for listener in ep.post_urls:
        r = ep.post({"query": text, "extensions": apq("query Other { integer { value } }")}, listener=listener)
        check(f"{listener}: POST with a query and a wrong hash is 400 and stores nothing",
              r.status_code == 400 and r.json() == MISMATCH, f"{r.status_code} {r.text[:200]}")
    r = ep.get(extensions=apq("query Other { integer { value } }"))
    check("graphql-get: the hash of a refused registration stays unknown", r.status_code == 200
          and r.json() == NOT_FOUND, f"{r.status_code} {r.text[:200]}")

    mutation = 'mutation ByGet { echo(input: {payload: "a"}) { payload } }'
    r = ep.get(query=mutation)
    check("graphql-get: a mutation by GET is 405 with Allow: POST and a JSON errors body",
          r.status_code == 405 and r.headers.get("allow") == "POST" and "mutation" in (error_message(r) or ""),
          f"{r.status_code} {r.headers.get('allow')} {r.text[:200]}")
    r = ep.post({"query": mutation, "extensions": apq(mutation)})
    check("graphql-get: the same mutation by POST registers and runs", r.status_code == 200
          and r.json() == {"data": {"echo": {"payload": "a"}}}, f"{r.status_code} {r.text[:200]}")
    r = ep.get(extensions=apq(mutation))
    check("graphql-get: a stored mutation by hash-only GET is 405 with Allow: POST",
          r.status_code == 405 and r.headers.get("allow") == "POST" and "mutation" in (error_message(r) or ""),
          f"{r.status_code} {r.headers.get('allow')} {r.text[:200]}")

    h = sha256(text)
    for label, qs, needle in (
            ("extensions not JSON", "extensions=%7Bnot%20json", "extensions"),
            ("extensions an array", "extensions=%5B1%5D", "extensions"),
            ("variables not an object", f"extensions={quote(json.dumps(apq(text)))}&variables=%5B1%5D", "variables"),
            ("version 2", f"extensions={quote(json.dumps(apq(text, version=2)))}", "version"),
            ("sha256Hash too short", "extensions=" + quote(json.dumps({"persistedQuery": {"version": 1,
                                                                                          "sha256Hash": h[:63]}})),
             "sha256Hash"),
            ("persistedQuery not an object", "extensions=" + quote('{"persistedQuery":"x"}'), "persistedQuery"),
            ("neither hash nor query", "operationName=Refused", "query")):
        r = ep.get_raw(qs)
        message = error_message(r)
        check(f"graphql-get: {label} is 400 naming the parameter", r.status_code == 400 and message is not None
              and needle in message, f"{r.status_code} {r.text[:200]}")
    r = ep.post({"query": text, "extensions": {"persistedQuery": {"version": 2, "sha256Hash": h}}}, listener="graphql")
    check("graphql: POST with persistedQuery version 2 is 400 naming the version",
          r.status_code == 400 and "version" in (error_message(r) or ""), f"{r.status_code} {r.text[:200]}")

    r = ep.c.put(ep.get_url, content="{}", headers={"Content-Type": "application/json"})
    check("graphql-get: PUT is 405 with Allow: GET, POST", r.status_code == 405 and r.headers.get("allow") == "GET, POST",
          f"{r.status_code} {r.headers.get('allow')}")
    r = ep.post({"query": "{ integer { value } }", "variables": {"pad": "x" * limit}})
    check(f"graphql-get: a POST over {limit} bytes is 413", r.status_code == 413, f"{r.status_code} {r.text[:200]}")
    deep = "{ __schema { types { fields { type " + "{ ofType " * 12 + "{ name }" + " }" * 12 + " } } } }"
    r = ep.get(query=deep, extensions=apq(deep))
    body = r.json()
    check("graphql-get: a document deeper than 16 is refused on the GET path as on POST",
          r.status_code == 200 and body.get("data") is None and "depth" in body["errors"][0]["message"], r.text[:300])


def check_bound(check, ep):
    """1,001 distinct documents: at most 1,000 are kept, the least recently used one evicted."""
    docs = [f"query Q{i} {{ a{i}: inventoryXs }}" for i in range(STORE_BOUND + 1)]
    bad = []
    for i, doc in enumerate(docs[:STORE_BOUND]):
        r = ep.post({"query": doc, "extensions": apq(doc)})
        if r.status_code != 200 or r.json() != {"data": {f"a{i}": {}}}:
            bad.append((i, r.status_code, r.text[:100]))
    check(f"graphql-get: {STORE_BOUND} distinct documents register", not bad, str(bad[:3]))
    r = ep.get(extensions=apq(docs[0]))
    check("graphql-get: the first of 1,000 is still stored (the bound is not below 1,000)",
          r.status_code == 200 and r.json() == {"data": {"a0": {}}}, f"{r.status_code} {r.text[:200]}")
    r = ep.post({"query": docs[STORE_BOUND], "extensions": apq(docs[STORE_BOUND])})
    check("graphql-get: the 1,001st document registers", r.status_code == 200, f"{r.status_code} {r.text[:200]}")
    r = ep.get(extensions=apq(docs[1]))
    check("graphql-get: after 1,001 the least recently used one is evicted (PersistedQueryNotFound)",
          r.status_code == 200 and r.json() == NOT_FOUND, f"{r.status_code} {r.text[:200]}")
    for i in (0, 2, STORE_BOUND):
        r = ep.get(extensions=apq(docs[i]))
        check(f"graphql-get: document {i} is still stored after the eviction",
              r.status_code == 200 and r.json() == {"data": {f"a{i}": {}}}, f"{r.status_code} {r.text[:200]}")


def check_graphql_get(check, server, client, limit):
    ep = Endpoint(client, server)
    check_vectors(check, ep)
    check_encodings(check, ep)
    check_refusals(check, ep, limit)
    check_bound(check, ep)


def check_graphql_get_tls(check, server, client):
    """graphql-get over TLS: the same answers (the listener's ALPN is checked by check.py)."""
    ep = Endpoint(client, server)
    text = "query TlsInteger { integer { value } }"
    r = ep.get(extensions=apq(text))
    check("tls graphql-get: hash-only GET is PersistedQueryNotFound", r.status_code == 200 and r.json() == NOT_FOUND,
          f"{r.status_code} {r.text[:200]}")
    r = ep.post({"query": text, "extensions": apq(text)})
    r2 = ep.get(extensions=apq(text))
    check("tls graphql-get: registered by POST, then answered by GET", r.status_code == 200
          and r2.status_code == 200 and r2.json() == {"data": {"integer": {"value": 2147483647}}},
          f"{r.status_code} {r2.status_code} {r2.text[:200]}")


def check_graphql_get_injected_failure(check, server, client):
    ep = Endpoint(client, server)
    text = "query Failing { integer { value } }"
    for label, r in (("plain GET", ep.get(query=text)), ("GET registering", ep.get(query=text, extensions=apq(text))),
                     ("hash-only GET", ep.get(extensions=apq(text)))):
        body = r.json()
        errors = body.get("errors") or [{}]
        check(f"graphql-get injected failure, {label}: a GraphQL error INJECTED_FAILURE, data null",
              r.status_code == 200 and body.get("data", 0) is None
              and (errors[0].get("extensions") or {}).get("code") == "INJECTED_FAILURE", r.text[:300])
