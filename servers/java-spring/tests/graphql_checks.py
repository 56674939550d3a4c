"""GraphQL on the java-spring server (Spring for GraphQL): the HTTP errors of the contract
(405, 415, 400, 413), GraphQL errors with "data": null and extensions.code, the depth (16) and
complexity (256) limits, the graphql listener holding only /graphql, and an injected failure.
Every workload's content, clear and TLS, is protobench verify's and Python gql's
(scripts/verify-servers.sh).

Imported by check.py, which passes its `check` function and the Server it started.
"""
import json

import httpx


def post(c, server, body, content_type="application/json"):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return c.post(f"http://{server.addrs['graphql']}/graphql", content=data, headers={"Content-Type": content_type})


def error_of(r):
    """(message, extensions.code) of the first GraphQL error when the response is a GraphQL error."""
    body = r.json()
    if r.status_code != 200 or "data" not in body or body["data"] is not None or not body.get("errors"):
        return None
    first = body["errors"][0]
    return first.get("message", ""), (first.get("extensions") or {}).get("code")


def check_graphql(check, server, limit):
    with httpx.Client(timeout=20) as c:
        r = post(c, server, {"query": "{ integer { value } inventoryS { activeDeviceCount } }"})
        check("graphql: two root fields in one request",
              r.status_code == 200 and r.json()["data"]["integer"] == {"value": 2147483647}
              and "activeDeviceCount" in r.json()["data"]["inventoryS"], r.text[:200])
        r = post(c, server, {"query": "{ inventoryL { items { id description } } }"})
        items = r.json()["data"]["inventoryL"]["items"]
        check("graphql: 1,395 items, an unset optional field is null",
              len(items) == 1395 and any(i["description"] is None for i in items), str(items[:2]))

        r = c.get(f"http://{server.addrs['graphql']}/graphql?query=%7Binteger%7Bvalue%7D%7D")
        check("graphql GET: 405 with Allow: POST", r.status_code == 405 and r.headers.get("allow") == "POST"
              and r.json()["code"] == 405, f"{r.status_code} {r.headers.get('allow')} {r.text[:200]}")
        r = post(c, server, {"query": "{ integer { value } }"}, "text/plain")
        check("graphql text/plain: 415", r.status_code == 415 and r.json()["code"] == 415, f"{r.status_code} {r.text[:200]}")
        for label, body in (("not JSON", "{not json"), ("JSON without a query", {"foo": 1})):
            r = post(c, server, body)
            check(f"graphql body {label}: 400 JSON error", r.status_code == 400 and r.json()["code"] == 400,
                  f"{r.status_code} {r.text[:200]}")
        r = post(c, server, {"query": "{ integer { value } }", "variables": {"pad": "x" * limit}})
        check(f"graphql body over {limit} bytes: 413", r.status_code == 413, f"{r.status_code} {r.text[:200]}")

        for label, query, want_code, needle in (
                ("unknown file", '{ file(name: "nope") { name } }', "NOT_FOUND", "nope"),
                ("cloneText times out of range", 'mutation { cloneText(input: {text: "a", times: 100001}) { texts } }',
                 "INVALID_ARGUMENT", "times"),
                ("both members of the oneof", 'mutation { sayHello(input: {request: {c1: "x", c2: true}}) '
                 '{ response { name } } }', "INVALID_ARGUMENT", "c1 and c2"),
                ("a float beyond float32", "mutation { sayHello(input: {request: {f: 1e39}}) { response { f } } }",
                 "INVALID_ARGUMENT", "request.f"),
                ("an unknown input member", 'mutation { echo(input: {payload: "a", bogus: 1}) { payload } }', None, "bogus"),
                ("a syntax error", "{ integer { value ", None, "")):
            r = post(c, server, {"query": query})
            got = error_of(r)
            check(f"graphql {label}: a GraphQL error with data null{' and ' + want_code if want_code else ''}",
                  got is not None and needle in got[0] and (want_code is None or got[1] == want_code),
                  f"{r.status_code} {r.text[:300]}")

        # complexity: 40 aliases of inventoryL with 8 fields each (well past 256) are refused before running
        aliases = " ".join(f"a{i}: inventoryL {{ items {{ id name category unitPrice weightKg quantity inStock fragile }} }}"
                           for i in range(40))
        r = post(c, server, {"query": "{" + aliases + "}"})
        got = error_of(r)
        check("graphql: a document over complexity 256 is refused", got is not None and "complexity" in got[0],
              r.text[:300])
        # depth: introspection nested 17 levels deep (the schema itself has no type deeper than 4)
        deep = "{ __schema { types { fields { type " + "{ ofType " * 12 + "{ name }" + " }" * 12 + " } } } }"
        r = post(c, server, {"query": deep})
        got = error_of(r)
        check("graphql: a document deeper than 16 is refused", got is not None and "depth" in got[0], r.text[:300])

        r = c.get(f"http://{server.addrs['graphql']}/v1/tasks/integer")
        check("graphql listener: REST paths are 404", r.status_code == 404, str(r.status_code))
        r = c.post(f"http://{server.addrs['rest']}/graphql", content="{}", headers={"Content-Type": "application/json"})
        check("rest listener: /graphql is 404", r.status_code == 404, str(r.status_code))


def check_graphql_injected_failure(check, server):
    with httpx.Client(timeout=20) as c:
        r = post(c, server, {"query": "{ integer { value } }"})
        got = error_of(r)
        check("injected failure: GraphQL error INJECTED_FAILURE, data null",
              got == ("injected failure", "INJECTED_FAILURE"), r.text[:300])
