"""Third-party GraphQL check, for any protobench server: Python's gql client
(with graphql-core) fetches the served schema by introspection, checks it
against contract/graphql/schema.graphql (every type, field, argument and
enum value, with their types), then runs every workload's document from
contract/vectors/*/request.graphql.json and contract/graphql/vectors/*/,
validated client-side against the served schema, and compares the result
with the vector's `data` (nulls dropped, numbers by value).

Usage: gql_check.py http(s)://host:port/graphql [CA.pem]
Prints `ok ...` / `FAIL ...` lines and `check: N passed, M failed`."""
import json
import os
import sys

from gql import Client, gql
from gql.transport.requests import RequestsHTTPTransport
from graphql import build_schema, print_ast, GraphQLEnumType, GraphQLInputObjectType, GraphQLObjectType

HERE = os.path.dirname(os.path.abspath(__file__))
CONTRACT = os.path.dirname(HERE)
passed = 0
failed = 0


def report(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what}: {detail}"[:600])


def default_text(field):
    """An input field's default as GraphQL text (graphql-core 3.3 keeps it
    as a literal in `default`), or ""."""
    d = getattr(field, "default", None)
    if d is None:
        return ""
    literal = getattr(d, "literal", None)
    if literal is not None:
        return " = " + print_ast(literal)
    value = getattr(d, "value", None)
    return "" if value is None or "Undefined" in repr(value) else f" = {value!r}"


def shape(schema):
    """Every named type's members with their types, as a set of strings."""
    out = set()
    for name, t in schema.type_map.items():
        # Introspection types, and the built-in scalars (a server may list
        # ID unused).
        if name.startswith("__") or name in ("String", "Int", "Float", "Boolean", "ID"):
            continue
        if isinstance(t, (GraphQLObjectType, GraphQLInputObjectType)):
            for fname, f in t.fields.items():
                out.add(f"{name}.{fname}: {f.type}{default_text(f)}")
                for aname, a in getattr(f, "args", {}).items():
                    out.add(f"{name}.{fname}({aname}: {a.type})")
        elif isinstance(t, GraphQLEnumType):
            for v in t.values:
                out.add(f"{name}.{v}")
        else:
            out.add(f"scalar {name}")
    return out


def drop_nulls(v):
    if isinstance(v, dict):
        return {k: drop_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [drop_nulls(x) for x in v]
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return v


def first_difference(found, expected, path="data"):
    if type(found) is not type(expected):
        return f"{path}: found {str(found)[:80]}, expected {str(expected)[:80]}"
    if isinstance(found, dict):
        for k in sorted(set(found) | set(expected)):
            if k not in found or k not in expected:
                return f"{path}.{k}: found {'absent' if k not in found else 'present'}"
            d = first_difference(found[k], expected[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(found, list):
        if len(found) != len(expected):
            return f"{path}: {len(found)} elements, expected {len(expected)}"
        for i, (f, e) in enumerate(zip(found, expected)):
            d = first_difference(f, e, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if found == expected else f"{path}: found {str(found)[:80]}, expected {str(expected)[:80]}"


def cases():
    vectors = os.path.join(CONTRACT, "vectors")
    for name in sorted(os.listdir(vectors)):
        d = os.path.join(vectors, name)
        yield name, os.path.join(d, "request.graphql.json"), os.path.join(d, "response.graphql.json")
    extra = os.path.join(CONTRACT, "graphql", "vectors")
    for name in sorted(os.listdir(extra)):
        d = os.path.join(extra, name)
        yield name, os.path.join(d, "request.json"), os.path.join(d, "response.json")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    url = sys.argv[1]
    verify = sys.argv[2] if len(sys.argv) > 2 else True
    transport = RequestsHTTPTransport(url=url, verify=verify, timeout=60, retries=0)
    with Client(transport=transport, fetch_schema_from_transport=True) as session:
        served = session.client.schema
        with open(os.path.join(CONTRACT, "graphql", "schema.graphql")) as f:
            contract = build_schema(f.read())
        found, expected = shape(served), shape(contract)
        report(
            found == expected,
            f"schema: the served schema is contract/graphql/schema.graphql ({len(expected)} members)",
            f"served only: {sorted(found - expected)[:5]}; contract only: {sorted(expected - found)[:5]}",
        )
        for name, req_path, resp_path in cases():
            with open(req_path) as f:
                request = json.load(f)
            with open(resp_path) as f:
                want = json.load(f)["data"]
            try:
                document = gql(request["query"])
                got = session.execute(
                    document,
                    variable_values=request.get("variables") or {},
                    operation_name=request.get("operationName"),
                )
            except Exception as e:  # a transport, validation or GraphQL error
                report(False, f"graphql {name}", f"{type(e).__name__}: {e}")
                continue
            diff = first_difference(drop_nulls(got), drop_nulls(want))
            report(diff is None, f"graphql {name}", diff or "")
    print(f"check: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
