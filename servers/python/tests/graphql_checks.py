"""The `graphql` listener's checks for tests/check.py: what `protobench verify`
and gql_check.py (every workload, the served schema) do not send. Bad
bodies get the contract's JSON errors (400, 405, 413, 415); bad documents
and values get GraphQL errors naming the problem (status 200, `data` null);
the depth and field-count limits refuse a document before it runs; the
failure draw is per root field. By http.client, as a GraphQL client posts.
"""

from __future__ import annotations

import json

J = {"Content-Type": "application/json"}


def post(c, body, headers=J, method="POST"):
    status, hdrs, out = c.http("graphql", method, "/graphql", body if isinstance(body, bytes)
                               else json.dumps(body).encode(), headers)
    try:
        return status, hdrs, json.loads(out)
    except ValueError:
        return status, hdrs, {"raw": out[:200]}


def gql_error(check, c, name: str, body, words: str):
    status, _, out = post(c, body)
    errors = out.get("errors") or [{}]
    check(f"{name}: GraphQL error naming it", status == 200 and out.get("data") is None
          and words in errors[0].get("message", ""), f"{status} {json.dumps(out)[:300]}")


def http_error(check, c, name: str, status_want: int, body, headers=J, method="POST", words=""):
    status, hdrs, out = post(c, body, headers, method)
    check(f"{name}: {status_want} with the contract's JSON error", status == status_want
          and out.get("code") == status_want and words in out.get("message", ""), f"{status} {out}")
    return hdrs


def check_graphql(check, server, c, tag: str, limit: int):
    t = f"{tag} graphql"
    http_error(check, c, f"{t} malformed JSON", 400, b"{nope", words="not a GraphQL request")
    http_error(check, c, f"{t} JSON without query", 400, {"variables": {}}, words="query must be a string")
    http_error(check, c, f"{t} array body", 400, [1, 2], words="not a JSON object")
    http_error(check, c, f"{t} text/plain", 415, {"query": "{integer{value}}"}, {"Content-Type": "text/plain"})
    hdrs = http_error(check, c, f"{t} GET", 405, b"", {}, "GET")
    check(f"{t} GET: Allow POST", hdrs.get("allow") == "POST", repr(hdrs.get("allow")))
    http_error(check, c, f"{t} body over the limit", 413,
               {"query": "mutation($i: EchoMessageInput!){echo(input:$i){payload}}",
                "variables": {"i": {"payload": "x" * limit}}})
    status, _, out = c.http("graphql", "GET", "/other")
    check(f"{t} other path: 404", status == 404, f"{status} {out[:100]!r}")

    q = "query($n: String!){file(name: $n){name}}"
    gql_error(check, c, f"{t} unknown file", {"query": q, "variables": {"n": "nope"}}, "unknown file 'nope'")
    gql_error(check, c, f"{t} clone times over the limit",
              {"query": "mutation{cloneText(input:{text:\"a\", times: 100001}){texts}}"}, "times must be within")
    gql_error(check, c, f"{t} oneof with both members",
              {"query": "mutation{sayHello(input:{request:{c1:\"a\", c2:true}}){response{name}}}"}, "oneof")
    gql_error(check, c, f"{t} float beyond float32",
              {"query": "mutation{sayHello(input:{request:{f: 3.5e38}}){response{f}}}"}, "float out of range")
    gql_error(check, c, f"{t} Int64 not an integer",
              {"query": "mutation($r: HelloInput){sayHello(input:{request:$r}){response{l}}}",
               "variables": {"r": {"l": "12x"}}}, "Int64")
    gql_error(check, c, f"{t} unknown input member",
              {"query": "mutation{echo(input:{payload:\"a\", other: 1}){payload}}"}, "other")
    gql_error(check, c, f"{t} unknown field", {"query": "{integer{value nope}}"}, "nope")
    gql_error(check, c, f"{t} syntax error", {"query": "{integer{"}, "Syntax Error")

    # limits: 300 aliases of inventoryL's id; depth 17 through fragments is
    # impossible in this schema (its deepest path is 4), so depth is checked
    # with a field nested past the limit, refused before the unknown fields
    bomb = "{" + " ".join(f"a{i}: inventoryL {{ items {{ id }} }}" for i in range(100)) + "}"
    gql_error(check, c, f"{t} 300 fields by aliases (limit 256)", {"query": bomb}, "more than 256 fields")
    frag = ("fragment F on ItemList { items { id name } } "
            "fragment G on Query { a: inventoryL { ...F ...F } b: inventoryL { ...F ...F } } "
            "query Q { ...G " + " ".join(f"x{i}: inventoryL {{ ...F }}" for i in range(90)) + " }")
    gql_error(check, c, f"{t} fields through fragments count (limit 256)", {"query": frag}, "more than 256 fields")
    deep = "{ inventoryL " + "{ items " * 17 + "{ id }" + " }" * 18
    gql_error(check, c, f"{t} depth 18 (limit 16)", {"query": deep}, "exceeds maximum operation depth of 16")
    nested = "{" + "a{" * 1300 + "b" + "}" * 1301
    gql_error(check, c, f"{t} 1300 nested selections: refused by the parser", {"query": nested}, "nested too deeply")
    status, _, out = post(c, {"query": "{ a: integer { value } b: integers { values } }"})
    check(f"{t} two roots in one request", status == 200 and out.get("data", {}).get("a") == {"value": 2147483647}
          and len(out["data"]["b"]["values"]) == 10000 and "errors" not in out, json.dumps(out)[:200])


def check_graphql_failure(check, server, c, tag: str):
    """PROTOBENCH_FAILURE_RATE=1."""
    status, _, out = post(c, {"query": "{ integer { value } }"})
    err = (out.get("errors") or [{}])[0]
    check(f"{tag} graphql injected failure: GraphQL error INJECTED_FAILURE",
          status == 200 and out.get("data") is None and err.get("message") == "injected failure"
          and err.get("extensions", {}).get("code") == "INJECTED_FAILURE", json.dumps(out)[:300])
    gql_error(check, c, f"{tag} graphql unknown file before the draw",
              {"query": "{file(name: \"nope\"){name}}"}, "unknown file")
