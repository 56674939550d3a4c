#!/usr/bin/env python3
"""Regenerates contract/openapi.yaml, contract/wsdl/protobench.xsd and
contract/wsdl/protobench.wsdl from the .proto files and the README's
operation table, by the mapping rules of contract/README.md.

    python3 contract/tests/gen_docs.py          # rewrite the three files
    python3 contract/tests/gen_docs.py --diff   # only report what would change

The documents are checked in; this script is a convenience for keeping them in
step with the .proto files. check_docs.sh does NOT use it: it checks the
documents independently against the .proto files. Standard library only.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import proto_model as pm  # noqa: E402

CONTRACT = HERE.parent
PROTOS = [CONTRACT / "proto/protobench/v1/protobench.proto", CONTRACT / "proto/helloworld/helloworld.proto"]
NS = "urn:protobench:v1"
SERVER = "http://127.0.0.1:8080"

# One line per operation (OpenAPI `summary`); falls back to the README column.
SUMMARY = {
    "GetInventoryXs": "Returns the empty message (`{}`).",
    "GetInventoryS": "Returns the dataset's `inventoryStatus`.",
    "GetInventoryM": "Returns the dataset's 480 `devices`.",
    "GetInventoryL": "Returns the dataset's 1,395 `items`.",
    "EchoProduct": "Returns the product unchanged.",
    "ModifyProduct": "Returns the product with `description` reversed by Unicode scalar values "
                     "(not bytes, not UTF-16 code units); every other field unchanged.",
    "CloneText": "Returns `texts` holding `times` copies of `text`; `times` outside 0..=100000, "
                 "or a response over 64 MiB of text, is invalid input (400).",
    "GetInteger": "Returns `value` = 2147483647.",
    "GetIntegers": "Returns `values` = 0, 1, ..., 9999 (10,000 integers).",
    "GetObjects": "Returns the dataset's 16 `people`.",
    "GetFile": "Returns `name` echoed and the named file's bytes; an unknown name is not found (404).",
    "Echo": "Returns the message unchanged.",
    "SayHello": "Returns `response` = `request`, unchanged (grpc_bench's helloworld.Greeter/SayHello).",
}

TAGS = [
    ("inventory", "Inventory (Berg & Mebrahtu Redi 2023): response-heavy, empty request.",
     ["GetInventoryXs", "GetInventoryS", "GetInventoryM", "GetInventoryL"]),
    ("product", "Product (Hedelin 2024).", ["EchoProduct", "ModifyProduct"]),
    ("tasks", "Communication tasks (Bolanowski et al. 2022).",
     ["CloneText", "GetInteger", "GetIntegers", "GetObjects", "GetFile"]),
    ("payload", "Payload sweep (CMPT453).", ["Echo"]),
    ("greeter", "grpc_bench's helloworld.Greeter with its complex_proto shape.", ["SayHello"]),
]

MESSAGE_DOC = {
    "Empty": "No fields; as JSON `{}`.",
    "InventoryStatus": "A service's status (GetInventoryS).",
    "Device": "One inventory device.",
    "DeviceList": "The dataset's devices (GetInventoryM).",
    "Location": "Where an item is stored.",
    "Item": "One inventory item; `description` and `supplier` are proto3 `optional`.",
    "ItemList": "The dataset's items (GetInventoryL).",
    "Product": "A product (EchoProduct, ModifyProduct).",
    "CloneRequest": "`text` and how many copies of it to return.",
    "CloneResponse": "`times` copies of the request's `text`.",
    "IntegerValue": "A single 32-bit integer.",
    "IntegerList": "A list of 32-bit integers.",
    "Person": "One person of the dataset.",
    "ObjectList": "The dataset's people (GetObjects).",
    "FileRequest": "The name of a file; over REST it is the `{name}` path parameter.",
    "FileContent": "A file's name and its bytes.",
    "EchoMessage": "A string payload (Echo).",
    "Hello": "grpc_bench's complex_proto shape. `c1` and `c2` are the members of the oneof "
             "`choice`: at most one of them is set (present); both may be absent.",
    "Pet": "A pet of a Hello.",
    "HelloRequest": "SayHello's request.",
    "HelloReply": "SayHello's response.",
}

def decimal_at_most(bound: str) -> str:
    """A regex alternation for the decimal numerals with as many digits as
    `bound` (no leading zero) that are <= bound."""
    alts = []
    for i, digit in enumerate(bound):
        lo, hi, rest = (1 if i == 0 else 0), int(digit) - 1, len(bound) - i - 1
        if hi >= lo:
            tail = f"[0-9]{{{rest}}}" if rest > 1 else "[0-9]" * rest
            alts.append(bound[:i] + (str(lo) if hi == lo else f"[{lo}-{hi}]") + tail)
    return "|".join(alts + [bound])


# Exactly the int64 range, in canonical form (no leading zeros, no "-0"), so an
# OpenAPI-driven generator never sends a value the type cannot hold.
INT64_PATTERN = (
    f"^(?:0|[1-9][0-9]{{0,17}}|{decimal_at_most(str(2**63 - 1))}"
    f"|-(?:[1-9][0-9]{{0,17}}|{decimal_at_most(str(2**63))}))$"
)

OAS_SCALAR = {
    "string": {"type": "string"},
    "bool": {"type": "boolean"},
    "int32": {"type": "integer", "format": "int32"},
    "int64": {"type": "string", "format": "int64", "pattern": INT64_PATTERN},
    "double": {"type": "number", "format": "double"},
    "float": {"type": "number", "format": "float", "minimum": -3.4028235e38, "maximum": 3.4028235e38},
    "bytes": {"type": "string", "format": "byte"},
}
XSD_SCALAR = {
    "string": "xs:string", "bool": "xs:boolean", "int32": "xs:int", "int64": "xs:long",
    "double": "xs:double", "float": "xs:float", "bytes": "xs:base64Binary",
}

# Extra constraints the README states for a field (OpenAPI only).
FIELD_EXTRA = {
    ("CloneRequest", "times"): {"minimum": 0, "maximum": 100000},
}


# --- a small YAML emitter (block style, flow lists of scalars) --------------

_PLAIN = re.compile(r"^[A-Za-z_/$][A-Za-z0-9_ ./$#{}'-]*$")
_RESERVED = {"true", "false", "yes", "no", "on", "off", "null", "~", "y", "n"}


def _scalar(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    s = str(v)
    if _PLAIN.match(s) and s.lower() not in _RESERVED and not s.endswith(" ") and ": " not in s \
            and " #" not in s and not s.startswith("{"):
        return s
    return json.dumps(s, ensure_ascii=False)


def _key(k) -> str:
    k = str(k)
    if k.lower() in _RESERVED:
        return json.dumps(k)
    return k if re.match(r"^[A-Za-z_/$][A-Za-z0-9_/{}.-]*$", k) else "'" + k + "'"


def to_yaml(obj, indent: int = 0) -> list[str]:
    pad = " " * indent
    out: list[str] = []
    for k, v in obj.items():
        if isinstance(v, dict):
            if not v:
                out.append(f"{pad}{_key(k)}: {{}}")
            else:
                out.append(f"{pad}{_key(k)}:")
                out.extend(to_yaml(v, indent + 2))
        elif isinstance(v, list):
            if all(not isinstance(x, (dict, list)) for x in v):
                out.append(f"{pad}{_key(k)}: [{', '.join(_scalar(x) for x in v)}]")
            else:
                out.append(f"{pad}{_key(k)}:")
                for item in v:
                    lines = to_yaml(item, indent + 4)
                    out.append(f"{pad}  - {lines[0].lstrip()}")
                    out.extend(lines[1:])
        elif isinstance(v, str) and "\n" in v:
            out.append(f"{pad}{_key(k)}: |")
            out.extend(f"{pad}  {line}" if line else "" for line in v.rstrip("\n").split("\n"))
        else:
            out.append(f"{pad}{_key(k)}: {_scalar(v)}")
    return out


# --- OpenAPI ---------------------------------------------------------------

def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def oas_field(model: pm.Model, msg: pm.Message, f: pm.Field) -> dict:
    if f.is_scalar:
        if f.type not in OAS_SCALAR:
            raise SystemExit(f"no OpenAPI mapping for scalar type {f.type}")
        s = dict(OAS_SCALAR[f.type])
    else:
        s = ref(model.short(f.type))
    if f.label == "repeated":
        s = {"type": "array", "items": s}
    elif "$ref" not in s:
        s.update(FIELD_EXTRA.get((msg.name, f.json_name), {}))
        notes = []
        if f.type == "int64":
            notes.append("int64 as a decimal string.")
        if f.type == "bytes":
            notes.append("Standard base64 with padding.")
        if f.label == "optional":
            notes.append("proto3 `optional`: omitted when unset.")
        if f.oneof:
            others = [x for x in msg.oneofs[f.oneof] if x != f.name]
            notes.append(f"Member of the oneof `{f.oneof}`: omitted when unset; never present "
                         f"together with {', '.join('`' + pm.json_name(o) + '`' for o in others)}.")
        if notes:
            s = {"description": " ".join(notes), **s}
    return s


def oas_message(model: pm.Model, msg: pm.Message) -> dict:
    s: dict = {"type": "object", "description": f"`{msg.full_name[1:]}`. {MESSAGE_DOC.get(msg.name, '')}".strip()}
    # Singular message-typed fields are omitted when unset (contract/README.md), so never required.
    required = [f.json_name for f in msg.fields if f.label != "optional" and f.oneof is None
                and not (f.label is None and f.type in model.messages)]
    if required:
        s["required"] = required
    s["properties"] = {f.json_name: oas_field(model, msg, f) for f in msg.fields}
    for members in msg.oneofs.values():
        if len(members) > 1:
            s["not"] = {"required": [pm.json_name(x) for x in members]}
            if len(msg.oneofs) > 1 or len(members) > 2:
                raise SystemExit("only one two-member oneof per message is expressed; extend gen_docs.py")
    s["additionalProperties"] = False
    return s


def error_response(desc: str, extra_headers: dict | None = None) -> dict:
    r: dict = {"description": desc}
    if extra_headers:
        r["headers"] = extra_headers
    r["content"] = {"application/json": {"schema": ref("Error")}}
    return r


def openapi(model: pm.Model, ops: list[pm.Operation]) -> str:
    rpcs = {r.name: r for r in model.rpcs}
    paths: dict = {}
    tag_of = {op: t for t, _, members in TAGS for op in members}
    for op in ops:
        rpc = rpcs[op.name]
        req, resp = model.short(rpc.request), model.short(rpc.response)
        o: dict = {
            "operationId": op.name,
            "tags": [tag_of.get(op.name, "other")],
            "summary": SUMMARY.get(op.name, op.semantics),
            "description": f"gRPC `{rpc.service[1:]}/{op.name}`; SOAP action `{NS}#{op.name}`.",
        }
        has_body = op.method != "GET"
        if "{name}" in op.path:
            o["parameters"] = [{"$ref": "#/components/parameters/FileName"}]
        if has_body:
            o["requestBody"] = {
                "required": True,
                "description": f"The `{req}` message as canonical JSON (unknown members are an error).",
                "content": {"application/json": {"schema": ref(req)}},
            }
        responses: dict = {"200": {"description": f"The `{resp}` message.",
                                   "content": {"application/json": {"schema": ref(resp)}}}}
        if has_body:
            responses["400"] = {"$ref": "#/components/responses/BadRequest"}
        if "{name}" in op.path:
            responses["404"] = {"$ref": "#/components/responses/NotFound"}
        responses["405"] = {"$ref": "#/components/responses/MethodNotAllowed"}
        if has_body:
            responses["413"] = {"$ref": "#/components/responses/PayloadTooLarge"}
            responses["415"] = {"$ref": "#/components/responses/UnsupportedMediaType"}
        responses["500"] = {"$ref": "#/components/responses/InjectedFailure"}
        o["responses"] = responses
        paths.setdefault(op.path, {})[op.method.lower()] = o

    schemas: dict = {}
    for msg in model.messages.values():
        schemas[msg.name] = oas_message(model, msg)
    for enum in model.enums.values():
        schemas[enum.name] = {"type": "string", "description": f"`{enum.full_name[1:]}`, by value name.",
                              "enum": [n for n, _ in enum.values]}
    schemas["Error"] = {
        "type": "object",
        "description": "The body of every REST error response.",
        "required": ["code", "message"],
        "properties": {
            "code": {"type": "integer", "format": "int32", "description": "The HTTP status code."},
            "message": {"type": "string", "description": "What was wrong (`injected failure` for an injected failure)."},
        },
        "additionalProperties": False,
    }

    doc = {
        "openapi": "3.0.3",
        "info": {
            "title": "protobench",
            "version": "1.0.0",
            "description": INFO_DESCRIPTION,
            "license": {"name": "Apache-2.0"},
        },
        "servers": [{"url": SERVER, "description": "a local server under test (PROTOBENCH_REST_ADDR)"}],
        "tags": [{"name": t, "description": d} for t, d, _ in TAGS],
        "paths": paths,
        "components": {
            "parameters": {
                "FileName": {
                    "name": "name",
                    "in": "path",
                    "required": True,
                    "description": "`FileRequest.name`: `file-455k` (455,000 bytes) or `file-3m4` "
                                   "(3,400,000 bytes); byte i of each is (i * 131 + 7) mod 251. "
                                   "Any other name is not found (404).",
                    "schema": {"type": "string"},
                    "example": "file-455k",
                },
            },
            "responses": {
                "BadRequest": error_response(
                    "Malformed body, wrong types, unknown members or invalid values (code 400)."),
                "NotFound": error_response("Unknown path, or unknown file (code 404)."),
                "MethodNotAllowed": error_response(
                    "Known path, wrong method (code 405).",
                    {"Allow": {"description": "The method the path accepts.", "schema": {"type": "string"}}}),
                "PayloadTooLarge": error_response(
                    "Request body over the size limit, PROTOBENCH_MAX_REQUEST_BYTES (code 413)."),
                "UnsupportedMediaType": error_response(
                    "Request body with a content type other than application/json (code 415)."),
                "InjectedFailure": error_response(
                    "Injected failure (PROTOBENCH_FAILURE_RATE); message `injected failure` (code 500)."),
            },
            "schemas": schemas,
        },
    }
    return HEADER_YAML + "\n".join(to_yaml(doc)) + "\n"


HEADER_YAML = """\
# The REST form of the protobench contract (see README.md). The messages are
# derived from proto/protobench/v1/protobench.proto and
# proto/helloworld/helloworld.proto by the README's canonical JSON rules;
# tests/check_docs.sh checks this file against them.
"""

INFO_DESCRIPTION = """\
The REST form of the protobench contract: one operation per rpc of
`protobench.v1.Bench` plus `helloworld.Greeter/SayHello`, with the same names
in every protocol (contract/README.md).

Bodies are proto3's canonical JSON mapping with unpopulated fields emitted:

- member names are the lowerCamelCase JSON names of the proto fields;
- every non-`optional` field is present, also at its default (`0`, `""`,
  `false`, `[]`, the enum's zero name), so it is `required` here;
- an unset proto3 `optional` field, oneof member or message-typed field is
  omitted (a verifier treats `null` as absent), so message-typed fields are
  not `required`;
- enums are their value names as strings; `int64` values are decimal strings;
  32-bit integers are numbers; `bytes` are standard base64 with padding;
  floating-point values are numbers.

Requests with a body use `Content-Type: application/json` (a charset
parameter is allowed) and are parsed by proto3's JSON parsing rules: a member
a request omits takes its default value (so `required` above binds responses;
every server accepts a request with members left out), unknown members are
an error (400), and a floating-point value must be a finite number within its
type's range (`float`: about 3.4e38), else 400. GET operations take no
body. Every error is
`{"code": <http status>, "message": "..."}`: 400 (malformed body, wrong
types, invalid values), 404 (unknown path or file), 405 (known path, wrong
method; with `Allow`), 413 (body over the size limit), 415 (body with a
content type other than JSON), 500 (injected failure, message
`injected failure`).
"""


# --- XSD / WSDL ------------------------------------------------------------

def xsd(model: pm.Model, ops: list[pm.Operation], indent: str = "") -> str:
    """The schema element (no XML declaration), each line prefixed by indent."""
    rpcs = {r.name: r for r in model.rpcs}
    L: list[str] = []
    a = L.append
    a('<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"')
    a(f'           xmlns:tns="{NS}"')
    a(f'           targetNamespace="{NS}"')
    a('           elementFormDefault="qualified">')
    a('')
    a('  <xs:annotation>')
    a('    <xs:documentation>')
    for line in XSD_DOC.strip("\n").split("\n"):
        a(f'      {xml_escape(line)}' if line else '')
    a('    </xs:documentation>')
    a('  </xs:annotation>')
    a('')
    a('  <!-- The SOAP body elements: <Op>Request and <Op>Response, typed by the message. -->')
    for op in ops:
        rpc = rpcs[op.name]
        a(f'  <xs:element name="{op.name}Request" type="tns:{model.short(rpc.request)}"/>')
        a(f'  <xs:element name="{op.name}Response" type="tns:{model.short(rpc.response)}"/>')
    a('')
    a('  <!-- Enums: the proto value names. -->')
    for enum in model.enums.values():
        a(f'  <xs:simpleType name="{enum.name}">')
        a(f'    <xs:annotation><xs:documentation>{enum.full_name[1:]}</xs:documentation></xs:annotation>')
        a('    <xs:restriction base="xs:string">')
        for n, _ in enum.values:
            a(f'      <xs:enumeration value="{n}"/>')
        a('    </xs:restriction>')
        a('  </xs:simpleType>')
        a('')
    a('  <!-- Messages: their fields in field-number order. -->')
    for msg in model.messages.values():
        a(f'  <xs:complexType name="{msg.name}">')
        a(f'    <xs:annotation><xs:documentation>{msg.full_name[1:]}</xs:documentation></xs:annotation>')
        if not msg.fields:
            a('    <xs:sequence/>')
            a('  </xs:complexType>')
            a('')
            continue
        a('    <xs:sequence>')
        open_oneof = None
        for f in msg.fields:
            if f.oneof != open_oneof:
                if open_oneof is not None:
                    a('      </xs:choice>')
                if f.oneof is not None:
                    a(f'      <!-- oneof {f.oneof}: at most one member -->')
                    a('      <xs:choice minOccurs="0">')
                open_oneof = f.oneof
            t = XSD_SCALAR[f.type] if f.is_scalar else f"tns:{model.short(f.type)}"
            occurs = ""
            if f.label == "repeated":
                occurs = ' minOccurs="0" maxOccurs="unbounded"'
            elif f.label == "optional":
                occurs = ' minOccurs="0"'
            elif f.oneof is not None:
                occurs = ' minOccurs="0"'
            pad = "        " if f.oneof is not None else "      "
            a(f'{pad}<xs:element name="{f.json_name}" type="{t}"{occurs}/>')
        if open_oneof is not None:
            a('      </xs:choice>')
        a('    </xs:sequence>')
        a('  </xs:complexType>')
        a('')
    a('</xs:schema>')
    return "\n".join(indent + line if line else "" for line in L) + "\n"


XSD_DOC = """\
The XML form of the protobench contract (contract/README.md), derived from
proto/protobench/v1/protobench.proto and proto/helloworld/helloworld.proto.
A message is a sequence of its fields in field-number order, each an element
named by the field's lowerCamelCase JSON name. Every non-optional field is
present, also at its default; a proto3 optional field or oneof member is
absent when unset; a repeated field is one element per value, with no
wrapper. Scalars: string xs:string, int32 xs:int, int64 xs:long (decimal),
double xs:double, float xs:float, bool xs:boolean (true/false), bytes
xs:base64Binary (standard base64), enums by value name.
The same schema is inlined in protobench.wsdl."""


def wsdl(model: pm.Model, ops: list[pm.Operation]) -> str:
    L: list[str] = []
    a = L.append
    a('<?xml version="1.0" encoding="UTF-8"?>')
    a('<!-- The SOAP 1.1 document/literal form of the protobench contract (see')
    a('     ../README.md). Servers serve this file at GET /soap?wsdl. The schema in')
    a('     wsdl:types is protobench.xsd inlined; tests/check_docs.sh checks they agree. -->')
    a('<wsdl:definitions name="Protobench"')
    a(f'                  targetNamespace="{NS}"')
    a('                  xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/"')
    a('                  xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/"')
    a('                  xmlns:xs="http://www.w3.org/2001/XMLSchema"')
    a(f'                  xmlns:tns="{NS}">')
    a('')
    a('  <wsdl:documentation>')
    for line in WSDL_DOC.strip("\n").split("\n"):
        a(f'    {xml_escape(line)}' if line else '')
    a('  </wsdl:documentation>')
    a('')
    a('  <wsdl:types>')
    L.extend(xsd(model, ops, "    ").rstrip("\n").split("\n"))
    a('  </wsdl:types>')
    a('')
    for op in ops:
        for kind in ("Request", "Response"):
            a(f'  <wsdl:message name="{op.name}{kind}">')
            a(f'    <wsdl:part name="parameters" element="tns:{op.name}{kind}"/>')
            a('  </wsdl:message>')
    a('')
    a('  <wsdl:portType name="ProtobenchPortType">')
    for op in ops:
        a(f'    <wsdl:operation name="{op.name}">')
        a(f'      <wsdl:documentation>{xml_escape(plain(SUMMARY.get(op.name, op.semantics)))}</wsdl:documentation>')
        a(f'      <wsdl:input message="tns:{op.name}Request"/>')
        a(f'      <wsdl:output message="tns:{op.name}Response"/>')
        a('    </wsdl:operation>')
    a('  </wsdl:portType>')
    a('')
    a('  <wsdl:binding name="ProtobenchSoapBinding" type="tns:ProtobenchPortType">')
    a('    <soap:binding style="document" transport="http://schemas.xmlsoap.org/soap/http"/>')
    for op in ops:
        a(f'    <wsdl:operation name="{op.name}">')
        a(f'      <soap:operation soapAction="{NS}#{op.name}" style="document"/>')
        a('      <wsdl:input><soap:body use="literal"/></wsdl:input>')
        a('      <wsdl:output><soap:body use="literal"/></wsdl:output>')
        a('    </wsdl:operation>')
    a('  </wsdl:binding>')
    a('')
    a('  <wsdl:service name="ProtobenchService">')
    a('    <wsdl:port name="ProtobenchPort" binding="tns:ProtobenchSoapBinding">')
    a(f'      <soap:address location="{SERVER}/soap"/>')
    a('    </wsdl:port>')
    a('  </wsdl:service>')
    a('')
    a('</wsdl:definitions>')
    return "\n".join(L) + "\n"


WSDL_DOC = """\
protobench: protobench.v1.Bench and helloworld.Greeter/SayHello over SOAP 1.1,
document/literal. The body holds one element <Op>Request or <Op>Response in
namespace urn:protobench:v1 (also for SayHello); SOAPAction is
"urn:protobench:v1#<Op>" (servers dispatch on the body element and accept a
missing or empty SOAPAction). Errors are SOAP 1.1 Faults with HTTP status 500:
soap:Client for bad input (malformed XML, unknown body element, invalid
values, unknown file), soap:Server for an injected failure (faultstring
"injected failure"). A body over the size limit gets HTTP 413, a content type
other than text/xml 415. DTDs are refused."""


def plain(md: str) -> str:
    """An OpenAPI summary as WSDL documentation: no Markdown, SOAP's errors."""
    md = md.replace(" is not found (404)", " is a soap:Client fault").replace(" (400)", " (soap:Client fault)")
    return md.replace("`", "")


def xml_escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main() -> int:
    model = pm.load(PROTOS)
    ops = pm.readme_operations(CONTRACT / "README.md")
    rpcs = {r.name: r for r in model.rpcs}
    for op in ops:
        if op.name not in rpcs:
            raise SystemExit(f"README operation {op.name} is not an rpc in the .proto files")
    outputs = {
        CONTRACT / "openapi.yaml": openapi(model, ops),
        CONTRACT / "wsdl/protobench.xsd": '<?xml version="1.0" encoding="UTF-8"?>\n'
        "<!-- The XML Schema of the protobench contract's SOAP form (see ../README.md).\n"
        "     protobench.wsdl inlines the same schema; tests/check_docs.sh checks they agree. -->\n"
        + xsd(model, ops),
        CONTRACT / "wsdl/protobench.wsdl": wsdl(model, ops),
    }
    diff_only = "--diff" in sys.argv[1:]
    changed = 0
    for path, text in outputs.items():
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        if old == text:
            continue
        changed += 1
        if diff_only:
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), text.splitlines(True), str(path), str(path) + " (generated)"))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(CONTRACT.parent)}")
    if diff_only:
        return 1 if changed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
