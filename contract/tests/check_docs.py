#!/usr/bin/env python3
"""Checks the contract's interface documents against the .proto files.

    contract/tests/check_docs.sh          # sets up a venv, then runs this

- openapi.yaml is a valid OpenAPI 3.0 document (openapi-spec-validator), has
  exactly the README's operations at their method/path, and one schema per
  proto message and enum that follows the README's canonical JSON rules;
  generated instances (every field at its default, every field populated) are
  accepted and broken ones (missing member, unknown member, wrong type, both
  oneof members) refused;
- wsdl/protobench.xsd compiles (lxml), has the <Op>Request/<Op>Response
  elements and one type per message and enum that follows the README's XML
  rules, accepts generated instances and refuses broken ones;
- wsdl/protobench.wsdl parses with zeep with the 13 operations, their
  soapAction, document/literal, and the service address; its inline schema is
  protobench.xsd (compared canonically);
- when contract/vectors/ exists, every vector's JSON and XML body is valid
  against the documents.

Prints one line per check and `N passed, M failed` (`, K skipped`) last;
exits 1 when a check failed. Needs lxml, PyYAML, zeep, openapi-spec-validator.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import proto_model as pm  # noqa: E402

CONTRACT = HERE.parent
PROTOS = [CONTRACT / "proto/protobench/v1/protobench.proto", CONTRACT / "proto/helloworld/helloworld.proto"]
OPENAPI = CONTRACT / "openapi.yaml"
XSD = CONTRACT / "wsdl/protobench.xsd"
WSDL = CONTRACT / "wsdl/protobench.wsdl"
NS = "urn:protobench:v1"
XS = "http://www.w3.org/2001/XMLSchema"
WSDL_NS = "http://schemas.xmlsoap.org/wsdl/"
SOAP_NS = "http://schemas.xmlsoap.org/wsdl/soap/"
SOAP_ENV = "http://schemas.xmlsoap.org/soap/envelope/"
SOAP_HTTP = "http://schemas.xmlsoap.org/soap/http"
SERVER = "http://127.0.0.1:8080"
ERROR_CODES = {"400", "404", "405", "413", "415", "500"}

OAS_SCALAR = {
    "string": {"type": "string"},
    "bool": {"type": "boolean"},
    "int32": {"type": "integer", "format": "int32"},
    "int64": {"type": "string", "format": "int64"},
    "double": {"type": "number", "format": "double"},
    "float": {"type": "number", "format": "float", "minimum": -3.4028235e38, "maximum": 3.4028235e38},
    "bytes": {"type": "string", "format": "byte"},
}
XSD_SCALAR = {
    "string": "xs:string", "bool": "xs:boolean", "int32": "xs:int", "int64": "xs:long",
    "double": "xs:double", "float": "xs:float", "bytes": "xs:base64Binary",
}


class Failed(Exception):
    """A check's failure, with the reasons."""

    def __init__(self, problems):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("; ".join(self.problems))


class Skip(Exception):
    pass


class Runner:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def check(self, name, fn, *args):
        try:
            note = fn(*args)
        except Skip as e:
            self.skipped += 1
            print(f"skip {name}: {e}")
            return
        except Failed as e:
            self.failed += 1
            print(f"FAIL {name}")
            for p in e.problems[:25]:
                print(f"       {p}")
            if len(e.problems) > 25:
                print(f"       ... and {len(e.problems) - 25} more")
            return
        except Exception:  # a crash in a check is a failure of that check
            self.failed += 1
            print(f"FAIL {name}: crashed")
            print("       " + traceback.format_exc().strip().replace("\n", "\n       "))
            return
        self.passed += 1
        print(f"ok   {name}" + (f" ({note})" if note else ""))


def expect(problems: list[str]) -> None:
    if problems:
        raise Failed(problems)


# --- the model --------------------------------------------------------------

class Ctx:
    model: pm.Model
    ops: list[pm.Operation]
    rpcs: dict[str, pm.Rpc]
    spec: dict
    schema_doc = None      # lxml tree of protobench.xsd
    xmlschema = None       # lxml XMLSchema of it


C = Ctx()


def short(full: str) -> str:
    return full.rsplit(".", 1)[1]


def load_protos():
    C.model = pm.load(PROTOS)
    C.rpcs = {r.name: r for r in C.model.rpcs}
    if len(C.rpcs) != len(C.model.rpcs):
        raise Failed("two rpcs share a name across services")
    return f"{len(C.model.messages)} messages, {len(C.model.enums)} enums, {len(C.model.rpcs)} rpcs"


def check_readme_table():
    C.ops = pm.readme_operations(CONTRACT / "README.md")
    problems = []
    names = [o.name for o in C.ops]
    if len(set(names)) != len(names):
        problems.append(f"duplicate operations in README table: {names}")
    missing = set(C.rpcs) - set(names)
    extra = set(names) - set(C.rpcs)
    if missing:
        problems.append(f"rpcs missing from README table: {sorted(missing)}")
    if extra:
        problems.append(f"README operations that are no rpc: {sorted(extra)}")
    for o in C.ops:
        r = C.rpcs.get(o.name)
        if r and (short(r.request), short(r.response)) != (o.request, o.response):
            problems.append(f"{o.name}: README says {o.request} -> {o.response}, proto says "
                            f"{short(r.request)} -> {short(r.response)}")
        if o.method not in ("GET", "POST"):
            problems.append(f"{o.name}: unexpected method {o.method}")
    expect(problems)
    return f"{len(C.ops)} operations"


# --- OpenAPI ----------------------------------------------------------------

def load_openapi():
    import yaml
    from openapi_spec_validator import validate
    from openapi_spec_validator import __version__ as v
    C.spec = yaml.safe_load(OPENAPI.read_text(encoding="utf-8"))
    if C.spec.get("openapi") != "3.0.3":
        raise Failed(f"openapi is {C.spec.get('openapi')!r}, want '3.0.3'")
    validate(C.spec)
    return f"openapi-spec-validator {v}"


def need_spec():
    if not getattr(C, "spec", None):
        raise Failed("openapi.yaml did not load")


def check_openapi_servers():
    need_spec()
    urls = [s.get("url") for s in C.spec.get("servers", [])]
    expect([] if SERVER in urls else [f"servers {urls} lack {SERVER}"])


def deref(obj):
    """Follows one local $ref."""
    while isinstance(obj, dict) and "$ref" in obj:
        cur = C.spec
        for part in obj["$ref"].lstrip("#/").split("/"):
            cur = cur[part]
        obj = cur
    return obj


def schema_ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def check_openapi_operations():
    need_spec()
    problems = []
    seen = {}
    for path, item in C.spec.get("paths", {}).items():
        for method, op in item.items():
            if method in ("parameters", "summary", "description", "servers"):
                continue
            seen[op.get("operationId")] = (method.upper(), path, op)
    ids = set(seen)
    want = {o.name for o in C.ops}
    if ids != set(C.rpcs):
        problems.append(f"operationIds differ from the rpcs: missing {sorted(set(C.rpcs) - ids)}, "
                        f"extra {sorted(ids - set(C.rpcs))}")
    elif ids != want:
        problems.append(f"operationIds differ: missing {sorted(want - ids)}, extra {sorted(ids - want)}")
    for o in C.ops:
        if o.name not in seen:
            continue
        method, path, op = seen[o.name]
        rpc = C.rpcs[o.name]
        req, resp = C.model.messages[rpc.request], C.model.messages[rpc.response]
        p = f"{o.name}:"
        if (method, path) != (o.method, o.path):
            problems.append(f"{p} at {method} {path}, README says {o.method} {o.path}")
        summary = op.get("summary", "")
        if not summary.strip() or "\n" in summary.strip():
            problems.append(f"{p} summary must be one non-empty line")
        # request: path parameters + body must carry exactly the request's fields
        params = [deref(x) for x in op.get("parameters", [])]
        path_params = {x["name"] for x in params if x.get("in") == "path"}
        template = set(re.findall(r"{(\w+)}", o.path))
        if path_params != template:
            problems.append(f"{p} path parameters {sorted(path_params)} != template {sorted(template)}")
        for x in params:
            if x.get("in") == "path" and not x.get("required"):
                problems.append(f"{p} path parameter {x['name']} must be required")
        for x in params:
            f = next((f for f in req.fields if f.json_name == x["name"]), None)
            if f is None:
                problems.append(f"{p} parameter {x['name']} is no field of {req.name}")
            elif f.type != "string" or f.label:
                problems.append(f"{p} parameter {x['name']} maps to non-string field")
            elif x.get("schema", {}).get("type") != "string":
                problems.append(f"{p} parameter {x['name']} must be a string")
        body = op.get("requestBody")
        if o.method == "GET":
            if body is not None:
                problems.append(f"{p} GET must have no requestBody")
            unmapped = [f.json_name for f in req.fields if f.json_name not in path_params]
            if unmapped:
                problems.append(f"{p} GET cannot carry request fields {unmapped}")
        else:
            if path_params:
                problems.append(f"{p} POST with path parameters is not expected")
            if body is None:
                problems.append(f"{p} POST needs a requestBody")
            else:
                body = deref(body)
                if not body.get("required"):
                    problems.append(f"{p} requestBody must be required")
                content = body.get("content", {})
                if list(content) != ["application/json"]:
                    problems.append(f"{p} requestBody content {list(content)} != ['application/json']")
                elif content["application/json"].get("schema") != schema_ref(req.name):
                    problems.append(f"{p} requestBody schema is not {req.name}")
        responses = op.get("responses", {})
        ok = deref(responses.get("200", {}))
        if list(ok.get("content", {})) != ["application/json"] or \
                ok["content"]["application/json"].get("schema") != schema_ref(resp.name):
            problems.append(f"{p} 200 must be application/json {resp.name}")
        codes = set(responses)
        unexpected = codes - ERROR_CODES - {"200"}
        if unexpected:
            problems.append(f"{p} unexpected responses {sorted(unexpected)}")
        need = {"405", "500"}
        if o.method != "GET":
            need |= {"400", "413", "415"}
        if template:
            need |= {"404"}
        if need - codes:
            problems.append(f"{p} lacks error responses {sorted(need - codes)}")
        for code in codes & ERROR_CODES:
            r = deref(responses[code])
            if r.get("content", {}).get("application/json", {}).get("schema") != schema_ref("Error"):
                problems.append(f"{p} {code} must be application/json Error")
            if code == "405" and "Allow" not in r.get("headers", {}):
                problems.append(f"{p} 405 must document the Allow header")
    expect(problems)
    return f"{len(seen)} operations"


def oas_expected_field(f: pm.Field) -> dict:
    if f.is_scalar:
        if f.type not in OAS_SCALAR:
            raise Failed(f"check_docs.py has no JSON mapping for {f.type}")
        s = dict(OAS_SCALAR[f.type])
    else:
        s = schema_ref(short(f.type))
    return {"type": "array", "items": s} if f.label == "repeated" else s


def field_shape(s: dict) -> dict:
    """The part of a property schema that the mapping fixes."""
    if "$ref" in s:
        return {"$ref": s["$ref"]}
    out = {k: s[k] for k in ("type", "format") if k in s}
    if s.get("format") == "float":  # the float range is part of the mapping; other bounds are semantics
        out.update({k: s[k] for k in ("minimum", "maximum") if k in s})
    if "items" in s:
        out["items"] = field_shape(s["items"])
    return out


def check_openapi_message(msg: pm.Message):
    need_spec()
    schemas = C.spec.get("components", {}).get("schemas", {})
    s = schemas.get(msg.name)
    if s is None:
        raise Failed(f"no schema {msg.name}")
    problems = []
    if s.get("type") != "object":
        problems.append("type must be object")
    if s.get("additionalProperties") is not False:
        problems.append("additionalProperties must be false")
    if s.get("nullable"):
        problems.append("must not be nullable")
    props = s.get("properties", {})
    want_names = [f.json_name for f in msg.fields]
    if list(props) != want_names:
        problems.append(f"properties {list(props)} != fields {want_names} (in field-number order)")
    # An unset singular message field is omitted (README), so it cannot be required.
    want_req = [f.json_name for f in msg.fields if f.label != "optional" and f.oneof is None
                and not (f.label is None and f.type in C.model.messages)]
    if list(s.get("required", [])) != want_req:
        problems.append(f"required {s.get('required', [])} != {want_req}")
    for f in msg.fields:
        p = props.get(f.json_name)
        if p is None:
            continue
        exp, got = oas_expected_field(f), field_shape(p)
        if got != exp:
            problems.append(f"{f.json_name}: {got} != {exp}")
        if f.type == "int64" and "pattern" in p:
            for v in (-2**63, -1, 0, 444325235223, 2**63 - 1):
                if not re.fullmatch(p["pattern"], str(v)):
                    problems.append(f"{f.json_name}: pattern refuses the int64 {v}")
            for v in (-2**63 - 1, 2**63, 10**19):
                if re.fullmatch(p["pattern"], str(v)):
                    problems.append(f"{f.json_name}: pattern admits {v}, outside int64")
        if p.get("nullable"):
            problems.append(f"{f.json_name}: must not be nullable")
    for name, members in msg.oneofs.items():
        names = [pm.json_name(m) for m in members]
        if len(names) > 1 and s.get("not") != {"required": names}:
            problems.append(f"oneof {name}: want `not: {{required: {names}}}` (at most one set)")
        if not any(name in (props.get(n, {}).get("description", "") + s.get("description", "")) for n in names):
            problems.append(f"oneof {name}: not documented")
    expect(problems)


def check_openapi_enum(enum: pm.Enum):
    need_spec()
    s = C.spec.get("components", {}).get("schemas", {}).get(enum.name)
    if s is None:
        raise Failed(f"no schema {enum.name}")
    want = [n for n, _ in enum.values]
    expect([] if s.get("type") == "string" and s.get("enum") == want
           else [f"want type string, enum {want}; got {s.get('type')}, {s.get('enum')}"])


def check_openapi_extra_schemas():
    need_spec()
    schemas = C.spec.get("components", {}).get("schemas", {})
    want = {short(n) for n in C.model.messages} | {short(n) for n in C.model.enums} | {"Error"}
    problems = []
    if set(schemas) - want:
        problems.append(f"schemas that are no proto message or enum: {sorted(set(schemas) - want)}")
    err = schemas.get("Error", {})
    props = err.get("properties", {})
    if err.get("type") != "object" or set(err.get("required", [])) != {"code", "message"} or \
            props.get("code", {}).get("type") != "integer" or props.get("message", {}).get("type") != "string":
        problems.append("Error must be an object with required integer `code` and string `message`")
    expect(problems)


# --- generated instances -------------------------------------------------------

INT64 = "-9007199254740993"   # not representable as a double: must stay a string


def json_value(ftype: str, full: bool):
    if ftype in C.model.messages:
        return json_instance(C.model.messages[ftype], full)
    if ftype in C.model.enums:
        vals = C.model.enums[ftype].values
        return vals[1 if full and len(vals) > 1 else 0][0]
    return {
        "string": "x\u00e9\U0001F600" if full else "",
        "bool": full,
        "int32": 12345 if full else 0,   # within CloneRequest.times' 0..=100000
        "int64": INT64 if full else "0",
        "double": 12.25 if full else 0,
        "float": 0.5 if full else 0,
        "bytes": base64.b64encode(b"\x00\x01\xfe\xff").decode() if full else "",
    }[ftype]


def json_instance(msg: pm.Message, full: bool) -> dict:
    """Canonical JSON: every non-optional field; with full, every field set."""
    out = {}
    done_oneofs = set()
    for f in msg.fields:
        if f.label == "optional" and not full:
            continue
        if f.oneof is not None:
            if not full or f.oneof in done_oneofs:
                continue
            done_oneofs.add(f.oneof)
        if f.label == "repeated":
            out[f.json_name] = [json_value(f.type, True), json_value(f.type, False)] if full else []
        else:
            out[f.json_name] = json_value(f.type, full)
    return out


def json_breakages(msg: pm.Message):
    """(what, instance) pairs the schema must refuse."""
    base = json_instance(msg, True)
    yield "unknown member", {**base, "unknownMember": 1}
    for f in msg.fields:
        n = f.json_name
        if f.label != "optional" and f.oneof is None and not (f.label is None and f.type in C.model.messages):
            yield f"missing {n}", {k: v for k, v in base.items() if k != n}
        if f.oneof is not None:
            others = {pm.json_name(m) for m in msg.oneofs[f.oneof]} - {n}
            base = {k: v for k, v in json_instance(msg, True).items() if k not in others}
        else:
            base = json_instance(msg, True)
        wrong = {
            "string": 1, "bool": "true", "int32": "1", "int64": 1, "double": "1.5",
            "float": "1.5", "bytes": 5,
        }.get(f.type) if f.is_scalar else ("NOT_A_VALUE" if f.type in C.model.enums else "x")
        if f.label == "repeated":
            yield f"{n} not a list", {**base, n: json_value(f.type, True)}
            yield f"{n} with a wrong item", {**base, n: [wrong]}
        else:
            yield f"{n} of the wrong type", {**base, n: wrong}
        if f.type == "int32" and f.label != "repeated":
            yield f"{n} over int32", {**base, n: 2147483648}
    for name, members in msg.oneofs.items():
        inst = dict(base)
        for m in members:
            f = next(x for x in msg.fields if x.name == m)
            inst[f.json_name] = json_value(f.type, True)
        if len(members) > 1:
            yield f"both members of oneof {name}", inst


def oas_validator(name: str):
    from openapi_schema_validator import OAS30Validator
    from openapi_schema_validator import oas30_format_checker
    schema = {"$ref": f"#/components/schemas/{name}", "components": C.spec["components"]}
    return OAS30Validator(schema, format_checker=oas30_format_checker)


def check_openapi_instances(msg: pm.Message):
    need_spec()
    v = oas_validator(msg.name)
    problems = []
    for full in (False, True):
        inst = json_instance(msg, full)
        errs = [e.message for e in v.iter_errors(inst)]
        if errs:
            problems.append(f"{'populated' if full else 'default'} instance refused: {errs[:3]} ({json.dumps(inst)[:200]})")
    n = 0
    for what, inst in json_breakages(msg):
        n += 1
        if v.is_valid(inst):
            problems.append(f"accepted an instance with {what}")
    expect(problems)
    return f"2 valid, {n} invalid"


# --- XSD -----------------------------------------------------------------------

def q(ns, local):
    return f"{{{ns}}}{local}"


def load_xsd():
    from lxml import etree
    C.schema_doc = etree.parse(str(XSD), etree.XMLParser(resolve_entities=False, no_network=True))
    root = C.schema_doc.getroot()
    problems = []
    if root.tag != q(XS, "schema"):
        problems.append(f"root is {root.tag}")
    if root.get("targetNamespace") != NS:
        problems.append(f"targetNamespace {root.get('targetNamespace')} != {NS}")
    if root.get("elementFormDefault") != "qualified":
        problems.append("elementFormDefault must be qualified")
    expect(problems)
    C.xmlschema = etree.XMLSchema(C.schema_doc)
    return "compiles with lxml"


def need_xsd():
    if C.xmlschema is None:
        raise Failed("protobench.xsd did not load")


def resolve_qname(elem, value: str) -> str:
    prefix, _, local = value.rpartition(":")
    ns = elem.nsmap.get(prefix or None)
    return q(ns, local) if ns else local


def check_xsd_elements():
    need_xsd()
    root = C.schema_doc.getroot()
    got = {e.get("name"): resolve_qname(e, e.get("type", "")) for e in root.findall(q(XS, "element"))}
    want = {}
    for r in C.rpcs.values():
        o = r
        want[f"{o.name}Request"] = q(NS, short(r.request))
        want[f"{o.name}Response"] = q(NS, short(r.response))
    problems = []
    for k in sorted(set(want) | set(got)):
        if want.get(k) != got.get(k):
            problems.append(f"element {k}: type {got.get(k)} != {want.get(k)}")
    expect(problems)
    return f"{len(got)} elements"


def flatten(particle, min_mult=1, max_mult=1, group=None):
    """(name, type, minOccurs, maxOccurs, choice-group) of a particle tree."""
    def occ(e):
        lo = int(e.get("minOccurs", "1"))
        hi = e.get("maxOccurs", "1")
        return lo, (None if hi == "unbounded" else int(hi))
    out = []
    for child in particle:
        if not isinstance(child.tag, str) or child.tag == q(XS, "annotation"):
            continue
        lo, hi = occ(child)
        lo2 = min_mult * lo
        hi2 = None if (hi is None or max_mult is None) else max_mult * hi
        if child.tag == q(XS, "element"):
            out.append((child.get("name"), resolve_qname(child, child.get("type", "")), lo2, hi2, group))
        elif child.tag == q(XS, "sequence"):
            out.extend(flatten(child, lo2, hi2, group))
        elif child.tag == q(XS, "choice"):
            members = [c for c in child if isinstance(c.tag, str) and c.tag != q(XS, "annotation")]
            # in a choice every member may be skipped
            out.extend(flatten(child, 0 if len(members) > 1 else lo2, hi2, id(child)))
        else:
            raise Failed(f"unsupported particle {child.tag}")
    return out


def xsd_expected(f: pm.Field):
    t = q(XS, XSD_SCALAR[f.type][3:]) if f.is_scalar else q(NS, short(f.type))
    if f.label == "repeated":
        return t, 0, None
    if f.label == "optional" or f.oneof is not None:
        return t, 0, 1
    return t, 1, 1


def check_xsd_message(msg: pm.Message):
    need_xsd()
    root = C.schema_doc.getroot()
    ct = [e for e in root.findall(q(XS, "complexType")) if e.get("name") == msg.name]
    if len(ct) != 1:
        raise Failed(f"want one complexType {msg.name}, found {len(ct)}")
    ct = ct[0]
    content = [c for c in ct if isinstance(c.tag, str) and c.tag != q(XS, "annotation")]
    if len(content) != 1 or content[0].tag != q(XS, "sequence") or content[0].get("minOccurs", "1") != "1" \
            or content[0].get("maxOccurs", "1") != "1":
        raise Failed("content must be exactly one xs:sequence")
    if ct.get("mixed") in ("true", "1"):
        raise Failed("must not be mixed")
    got = flatten(content[0])
    problems = []
    if [g[0] for g in got] != [f.json_name for f in msg.fields]:
        problems.append(f"elements {[g[0] for g in got]} != fields {[f.json_name for f in msg.fields]} "
                        "(field-number order)")
    by_name = {g[0]: g for g in got}
    for f in msg.fields:
        g = by_name.get(f.json_name)
        if g is None:
            continue
        t, lo, hi = xsd_expected(f)
        if (g[1], g[2], g[3]) != (t, lo, hi):
            problems.append(f"{f.json_name}: type/min/max {g[1:4]} != {(t, lo, hi)}")
        if f.oneof is None and g[4] is not None:
            problems.append(f"{f.json_name}: only oneof members may be in an xs:choice")
    for name, members in msg.oneofs.items():
        groups = {by_name[pm.json_name(m)][4] for m in members if pm.json_name(m) in by_name}
        if len(members) > 1 and (len(groups) != 1 or None in groups):
            problems.append(f"oneof {name}: members must share one xs:choice (at most one set)")
    expect(problems)


def check_xsd_enum(enum: pm.Enum):
    need_xsd()
    root = C.schema_doc.getroot()
    st = [e for e in root.findall(q(XS, "simpleType")) if e.get("name") == enum.name]
    if len(st) != 1:
        raise Failed(f"want one simpleType {enum.name}, found {len(st)}")
    r = st[0].find(q(XS, "restriction"))
    problems = []
    if r is None or resolve_qname(r, r.get("base", "")) != q(XS, "string"):
        problems.append("must be an xs:string restriction")
    else:
        vals = [e.get("value") for e in r.findall(q(XS, "enumeration"))]
        if vals != [n for n, _ in enum.values]:
            problems.append(f"enumeration {vals} != {[n for n, _ in enum.values]}")
    expect(problems)


def check_xsd_extra_types():
    need_xsd()
    root = C.schema_doc.getroot()
    names = {e.get("name") for e in root if isinstance(e.tag, str) and e.tag in (q(XS, "complexType"), q(XS, "simpleType"))}
    want = {short(n) for n in C.model.messages} | {short(n) for n in C.model.enums}
    other = [e.tag for e in root if isinstance(e.tag, str) and e.tag not in
             (q(XS, "complexType"), q(XS, "simpleType"), q(XS, "element"), q(XS, "annotation"))]
    problems = []
    if names != want:
        problems.append(f"types differ: missing {sorted(want - names)}, extra {sorted(names - want)}")
    if other:
        problems.append(f"unexpected top-level {other}")
    expect(problems)


def xml_text(ftype: str, full: bool) -> str:
    v = json_value(ftype, full)
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def xml_fill(parent, msg: pm.Message, full: bool):
    from lxml import etree
    done = set()
    for f in msg.fields:
        if f.label == "optional" and not full:
            continue
        if f.oneof is not None:
            if not full or f.oneof in done:
                continue
            done.add(f.oneof)
        count = (2 if full else 0) if f.label == "repeated" else 1
        for i in range(count):
            e = etree.SubElement(parent, q(NS, f.json_name))
            sub_full = full and i == 0
            if f.type in C.model.messages:
                xml_fill(e, C.model.messages[f.type], sub_full)
            else:
                e.text = xml_text(f.type, sub_full)
    return parent


def xml_instance(element: str, msg: pm.Message, full: bool):
    from lxml import etree
    return xml_fill(etree.Element(q(NS, element), nsmap={None: NS}), msg, full)


def xml_breakages(element: str, msg: pm.Message):
    from lxml import etree
    base = xml_instance(element, msg, True)
    e = copy.deepcopy(base)
    etree.SubElement(e, q(NS, "unknownElement")).text = "1"
    yield "an unknown element", e
    kids = list(base)
    for f in msg.fields:
        tag = q(NS, f.json_name)
        if base.find(tag) is None:
            continue   # an unset oneof member
        if f.label != "optional" and f.oneof is None and f.label != "repeated":
            e = copy.deepcopy(base)
            e.remove(e.find(tag))
            yield f"{f.json_name} missing", e
        if f.label != "repeated":
            e = copy.deepcopy(base)
            e.find(tag).addnext(copy.deepcopy(e.find(tag)))
            yield f"{f.json_name} twice", e
        # (libxml2 skips characters outside the base64 alphabet, so a bad
        # length is what it reliably refuses)
        wrong = {"int32": "1.5", "int64": "x", "double": "x", "float": "x", "bool": "yes",
                 "bytes": "AAA"}.get(f.type)
        if f.type in C.model.enums:
            wrong = "NOT_A_VALUE"
        if wrong is not None:
            e = copy.deepcopy(base)
            e.find(tag).text = wrong
            yield f"{f.json_name} = {wrong!r}", e
        if f.type == "int32":
            e = copy.deepcopy(base)
            e.find(tag).text = "2147483648"
            yield f"{f.json_name} over int32", e
        e = copy.deepcopy(base)
        etree.SubElement(e.find(tag), q(NS, "unknownChild"))
        yield f"{f.json_name} with an unknown child", e
        e = copy.deepcopy(base)
        e.find(tag).tag = f.json_name   # unqualified
        yield f"{f.json_name} unqualified", e
    distinct = []
    for k in kids:
        if k.tag not in distinct:
            distinct.append(k.tag)
    if len(distinct) >= 2:
        e = copy.deepcopy(base)
        first = [k for k in e if k.tag == distinct[0]]
        for k in first:
            e.remove(k)
            e.append(k)
        yield "fields out of order", e
    for name, members in msg.oneofs.items():
        if len(members) > 1:
            e = xml_instance(element, msg, True)
            f2 = next(x for x in msg.fields if x.name == members[1])
            anchor = e.find(q(NS, pm.json_name(members[0])))
            new = etree.Element(q(NS, f2.json_name))
            new.text = xml_text(f2.type, True)
            anchor.addnext(new)
            yield f"both members of oneof {name}", e


def check_xsd_instances(rpc: pm.Rpc):
    need_xsd()
    problems = []
    n = 0
    o = rpc
    for kind, full_name in (("Request", rpc.request), ("Response", rpc.response)):
        msg = C.model.messages[full_name]
        for full in (False, True):
            inst = xml_instance(o.name + kind, msg, full)
            if not C.xmlschema.validate(inst):
                problems.append(f"{kind} {'populated' if full else 'default'} instance refused: "
                                f"{C.xmlschema.error_log.last_error}")
        for what, inst in xml_breakages(o.name + kind, msg):
            n += 1
            if C.xmlschema.validate(inst):
                problems.append(f"{kind}: accepted {what}")
    expect(problems)
    return f"4 valid, {n} invalid"


# --- WSDL ----------------------------------------------------------------------

def canon(elem):
    """A comparable form of a schema element: expanded names, QName-valued
    attributes resolved, whitespace collapsed, comments dropped."""
    qname_attrs = {"type", "base", "ref", "itemType", "substitutionGroup", "refer"}
    attrs = []
    for k, v in sorted(elem.attrib.items()):
        if k in qname_attrs:
            v = resolve_qname(elem, v)
        elif k == "memberTypes":
            v = " ".join(resolve_qname(elem, x) for x in v.split())
        attrs.append((k, v))
    text = " ".join((elem.text or "").split())
    kids = []
    for c in elem:
        if isinstance(c.tag, str):
            kids.append(canon(c))
            tail = " ".join((c.tail or "").split())
            if tail:
                kids.append(("#text", tail))
    return (elem.tag, tuple(attrs), text, tuple(kids))


def first_difference(a, b, path="schema"):
    if a[0] != b[0] or a[1] != b[1] or a[2] != b[2]:
        return f"{path}: {a[:3]} != {b[:3]}"
    for i, (x, y) in enumerate(zip(a[3], b[3])):
        d = first_difference(x, y, f"{path}/{y[0].split('}')[-1]}[{i}]")
        if d:
            return d
    if len(a[3]) != len(b[3]):
        return f"{path}: {len(a[3])} children != {len(b[3])}"
    return None


def check_inline_schema():
    from lxml import etree
    wsdl = etree.parse(str(WSDL), etree.XMLParser(resolve_entities=False, no_network=True))
    types = wsdl.getroot().findall(q(WSDL_NS, "types"))
    if len(types) != 1:
        raise Failed(f"want one wsdl:types, found {len(types)}")
    schemas = [c for c in types[0] if isinstance(c.tag, str)]
    if len(schemas) != 1 or schemas[0].tag != q(XS, "schema"):
        raise Failed("wsdl:types must hold exactly one xs:schema")
    if schemas[0].findall(q(XS, "import")) or schemas[0].findall(q(XS, "include")):
        raise Failed("the inline schema must be self-contained (no import/include)")
    standalone = etree.parse(str(XSD)).getroot()
    d = first_difference(canon(schemas[0]), canon(standalone), "xs:schema")
    if d:
        raise Failed(f"inline schema differs from protobench.xsd: {d}")
    # and it compiles on its own
    etree.XMLSchema(etree.ElementTree(copy.deepcopy(schemas[0])))
    return "canonically equal to protobench.xsd"


def check_wsdl_zeep():
    import zeep
    from zeep.wsdl import Document
    from zeep.wsdl.bindings.soap import Soap11Binding
    doc = Document(str(WSDL), zeep.Transport())
    problems = []
    if list(doc.services) != ["ProtobenchService"]:
        problems.append(f"services {list(doc.services)} != ['ProtobenchService']")
        expect(problems)
    svc = doc.services["ProtobenchService"]
    if len(svc.ports) != 1:
        problems.append(f"want one port, found {list(svc.ports)}")
    port = next(iter(svc.ports.values()))
    if port.binding_options.get("address") != f"{SERVER}/soap":
        problems.append(f"address {port.binding_options.get('address')} != {SERVER}/soap")
    b = port.binding
    if not isinstance(b, Soap11Binding):
        problems.append(f"binding is {type(b).__name__}, want SOAP 1.1")
    if getattr(b, "transport", SOAP_HTTP) != SOAP_HTTP:
        problems.append(f"transport {b.transport}")
    ops = b._operations
    want = list(C.rpcs)
    if set(ops) != set(want) or len(ops) != len(want):
        problems.append(f"operations differ: missing {sorted(set(want) - set(ops))}, extra {sorted(set(ops) - set(want))}")
    for name in want:
        op = ops.get(name)
        if op is None:
            continue
        if op.soapaction != f"{NS}#{name}":
            problems.append(f"{name}: soapAction {op.soapaction!r}")
        if op.style != "document":
            problems.append(f"{name}: style {op.style}")
        if op.input.body.qname.text != q(NS, f"{name}Request"):
            problems.append(f"{name}: input element {op.input.body.qname}")
        if op.output.body.qname.text != q(NS, f"{name}Response"):
            problems.append(f"{name}: output element {op.output.body.qname}")
    expect(problems)
    return f"zeep {zeep.__version__}: {len(ops)} operations"


def check_wsdl_literal():
    """What zeep does not insist on: use=literal, one part per message, names."""
    from lxml import etree
    root = etree.parse(str(WSDL)).getroot()
    problems = []
    if root.get("targetNamespace") != NS:
        problems.append(f"targetNamespace {root.get('targetNamespace')}")
    for m in root.findall(q(WSDL_NS, "message")):
        parts = m.findall(q(WSDL_NS, "part"))
        if len(parts) != 1 or parts[0].get("element") is None or parts[0].get("type") is not None:
            problems.append(f"message {m.get('name')}: want one part with element=")
        elif resolve_qname(parts[0], parts[0].get("element")) != q(NS, m.get("name")):
            problems.append(f"message {m.get('name')}: part element {parts[0].get('element')}")
    for b in root.findall(q(WSDL_NS, "binding")):
        sb = b.find(q(SOAP_NS, "binding"))
        if sb is None or sb.get("style") != "document" or sb.get("transport") != SOAP_HTTP:
            problems.append("soap:binding must be style=document over HTTP")
        for op in b.findall(q(WSDL_NS, "operation")):
            for io in ("input", "output"):
                body = op.find(f"{q(WSDL_NS, io)}/{q(SOAP_NS, 'body')}")
                if body is None or body.get("use") != "literal":
                    problems.append(f"{op.get('name')} {io}: soap:body use must be literal")
    pts = root.findall(q(WSDL_NS, "portType"))
    if len(pts) != 1 or [o.get("name") for o in pts[0].findall(q(WSDL_NS, "operation"))] != [o.name for o in C.ops]:
        problems.append("want one portType with the operations in README order")
    expect(problems)


# --- vectors (when generated) ----------------------------------------------------

def check_vectors():
    from lxml import etree
    vdir = CONTRACT / "vectors"
    if not vdir.is_dir():
        raise Skip("no contract/vectors/ yet")
    need_spec()
    need_xsd()
    reg = json.loads((CONTRACT / "workloads.json").read_text(encoding="utf-8"))
    if isinstance(reg, dict):
        reg = reg.get("workloads", reg)
    if isinstance(reg, dict):   # {name: {operation: ...}} or {name: operation}
        reg = [{"name": k, **(v if isinstance(v, dict) else {"operation": v})} for k, v in reg.items()]
    op_of = {w["name"]: w["operation"] for w in reg}
    problems = []
    n = 0
    for d in sorted(p for p in vdir.iterdir() if p.is_dir()):
        op = op_of.get(d.name)
        if op not in C.rpcs:
            problems.append(f"{d.name}: unknown workload or operation {op!r}")
            continue
        rpc = C.rpcs[op]
        for kind, msg in (("request", rpc.request), ("response", rpc.response)):
            jf, xf = d / f"{kind}.json", d / f"{kind}.xml"
            if jf.exists():
                n += 1
                errs = [e.message[:120] for e in oas_validator(short(msg)).iter_errors(json.loads(jf.read_bytes()))]
                if errs:
                    problems.append(f"{d.name}/{jf.name}: {errs[:2]}")
            if xf.exists():
                n += 1
                env = etree.fromstring(xf.read_bytes(), etree.XMLParser(resolve_entities=False, no_network=True))
                body = env.find(q(SOAP_ENV, "Body"))
                kids = [c for c in (body if body is not None else []) if isinstance(c.tag, str)]
                want = q(NS, f"{op}{kind.capitalize()}")
                if env.tag != q(SOAP_ENV, "Envelope") or len(kids) != 1 or kids[0].tag != want:
                    problems.append(f"{d.name}/{xf.name}: want one {want} in a SOAP 1.1 Body")
                elif not C.xmlschema.validate(etree.ElementTree(copy.deepcopy(kids[0]))):
                    problems.append(f"{d.name}/{xf.name}: {C.xmlschema.error_log.last_error}")
    expect(problems)
    return f"{n} bodies"


def check_workloads():
    """workloads.json's REST method/path and SOAPAction agree with the documents."""
    from lxml import etree
    wf = CONTRACT / "workloads.json"
    if not wf.exists():
        raise Skip("no contract/workloads.json yet")
    need_spec()
    reg = json.loads(wf.read_text(encoding="utf-8"))
    if isinstance(reg, dict):
        reg = reg.get("workloads", reg)
    if not isinstance(reg, list):
        raise Failed("workloads.json: expected a list of workloads")
    routes = {}
    for path, item in C.spec.get("paths", {}).items():
        for method, op in item.items():
            if isinstance(op, dict) and "operationId" in op:
                routes[op["operationId"]] = (method.upper(), path)
    root = etree.parse(str(WSDL)).getroot()
    actions = {op.get("name"): op.find(q(SOAP_NS, "operation")).get("soapAction")
               for b in root.findall(q(WSDL_NS, "binding")) for op in b.findall(q(WSDL_NS, "operation"))}
    problems = []
    for w in reg:
        name, op = w.get("name"), w.get("operation")
        if op not in routes:
            problems.append(f"{name}: operation {op!r} is not in openapi.yaml")
            continue
        method, template = routes[op]
        if "restMethod" in w and w["restMethod"] != method:
            problems.append(f"{name}: restMethod {w['restMethod']} != {method}")
        if "restPath" in w:
            rx = "^" + re.sub(r"\\{\w+\\}", "[^/]+", re.escape(template)) + "$"
            if not re.match(rx, w["restPath"]):
                problems.append(f"{name}: restPath {w['restPath']} does not match {template}")
        if "soapAction" in w and w["soapAction"] != actions.get(op):
            problems.append(f"{name}: soapAction {w['soapAction']} != WSDL's {actions.get(op)}")
    expect(problems)
    return f"{len(reg)} workloads"


def main() -> int:
    r = Runner()
    r.check("proto: parse the .proto files", load_protos)
    if r.failed:
        print(f"{r.passed} passed, {r.failed} failed")
        return 1
    r.check("readme: operation table matches the rpcs", check_readme_table)
    if not getattr(C, "ops", None):
        C.ops = [pm.Operation(x.name, short(x.request), short(x.response), "?", "?", "") for x in C.model.rpcs]
    r.check("openapi: valid OpenAPI 3.0.3", load_openapi)
    r.check(f"openapi: servers include {SERVER}", check_openapi_servers)
    r.check("openapi: operations, methods, paths, bodies, responses", check_openapi_operations)
    for msg in C.model.messages.values():
        r.check(f"openapi: schema {msg.name} = {msg.full_name[1:]}", check_openapi_message, msg)
    for enum in C.model.enums.values():
        r.check(f"openapi: schema {enum.name} = {enum.full_name[1:]}", check_openapi_enum, enum)
    r.check("openapi: no other schemas; Error schema", check_openapi_extra_schemas)
    for msg in C.model.messages.values():
        r.check(f"openapi: {msg.name} instances", check_openapi_instances, msg)
    r.check("xsd: protobench.xsd is a valid schema", load_xsd)
    r.check("xsd: <Op>Request/<Op>Response elements", check_xsd_elements)
    for msg in C.model.messages.values():
        r.check(f"xsd: complexType {msg.name} = {msg.full_name[1:]}", check_xsd_message, msg)
    for enum in C.model.enums.values():
        r.check(f"xsd: simpleType {enum.name} = {enum.full_name[1:]}", check_xsd_enum, enum)
    r.check("xsd: no other types", check_xsd_extra_types)
    for o in C.model.rpcs:
        r.check(f"xsd: {o.name} instances", check_xsd_instances, o)
    r.check("wsdl: inline schema = protobench.xsd", check_inline_schema)
    r.check(f"wsdl: zeep reads the {len(C.rpcs)} document operations, soapActions, address", check_wsdl_zeep)
    r.check("wsdl: document/literal messages and binding", check_wsdl_literal)
    r.check("workloads.json: REST routes and SOAPActions agree", check_workloads)
    r.check("vectors: JSON and XML bodies valid", check_vectors)
    tail = f", {r.skipped} skipped" if r.skipped else ""
    print(f"{r.passed} passed, {r.failed} failed{tail}")
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
