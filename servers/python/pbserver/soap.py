"""The SOAP form: a spyne 2.14 Application (Soap11 in and out) run by a small
ASGI transport (SoapAsgi) under uvicorn.

The spyne types are derived from the .proto descriptors: one ComplexModel per
message, fields in field-number order named by their JSON names, namespace
urn:protobench:v1 (qualified), repeated fields unwrapped (max_occurs), proto3
optional / oneof members min_occurs=0, every other field min_occurs=1 (as in
contract/wsdl/protobench.xsd). Every operation is document/literal with body
elements <Op>Request / <Op>Response.

The WSDL served at GET /soap?wsdl is the contract's file (not spyne's
generated one), with its soap:address rewritten to the request's host.
"""

from __future__ import annotations

import logging
import re
import email.message

from lxml import etree
from spyne import Application, Fault, MethodContext, ServiceBase, rpc
from spyne.const.xml import NS_SOAP11_ENV
from spyne.model.binary import ByteArray
from spyne.model.complex import ComplexModel
from spyne.model.primitive import (
    Boolean,
    Double,
    Float,
    Integer32,
    Integer64,
    UnsignedInteger32,
    UnsignedInteger64,
    Unicode,
)
from spyne.protocol.soap import Soap11
from spyne.server import ServerBase

from . import SERVER_DIR, protos
from .common import (
    INJECTED_FAILURE,
    INTEGER_VALUE,
    INTEGERS,
    Gate,
    InvalidInput,
    NotFound,
    build_files,
    check_clone,
    check_file,
    load_dataset,
    reverse_scalars,
)
from .config import Config

NS = "urn:protobench:v1"
FD = protos.FD
pb = protos.protobench_pb2
hw = protos.helloworld_pb2

# spyne logs every fault (and the whole document on XML syntax errors): that
# would be per-request logging, so its loggers are silenced.
logging.getLogger("spyne").setLevel(logging.CRITICAL + 1)
logging.getLogger("spyne").propagate = False

_DOCTYPE = re.compile(rb"<!\s*DOCTYPE", re.IGNORECASE)
_ENTITY = re.compile(rb"<!\s*ENTITY", re.IGNORECASE)

# ---------------------------------------------------------------- types

_SCALARS = {
    FD.TYPE_STRING: Unicode,
    FD.TYPE_BOOL: Boolean,
    FD.TYPE_DOUBLE: Double,
    FD.TYPE_FLOAT: Float,
    FD.TYPE_INT32: Integer32,
    FD.TYPE_SINT32: Integer32,
    FD.TYPE_SFIXED32: Integer32,
    FD.TYPE_INT64: Integer64,
    FD.TYPE_SINT64: Integer64,
    FD.TYPE_SFIXED64: Integer64,
    FD.TYPE_UINT32: UnsignedInteger32,
    FD.TYPE_FIXED32: UnsignedInteger32,
    FD.TYPE_UINT64: UnsignedInteger64,
    FD.TYPE_FIXED64: UnsignedInteger64,
    FD.TYPE_BYTES: ByteArray,
}
_TYPES: dict[str, type] = {}


def _field_type(f):
    if f.type == FD.TYPE_MESSAGE:
        return complex_type(f.message_type)
    if f.type == FD.TYPE_ENUM:
        ed = f.enum_type
        return Unicode(values=[v.name for v in ed.values], type_name=ed.name)
    return _SCALARS[f.type]


def complex_type(d) -> type:
    """The spyne ComplexModel of message descriptor d (memoized)."""
    t = _TYPES.get(d.full_name)
    if t is not None:
        return t
    type_info = []
    for f in sorted(d.fields, key=lambda f: f.number):
        base = _field_type(f)
        if protos.is_repeated(f):
            ft = base.customize(min_occurs=0, max_occurs="unbounded")
        elif protos.is_optional_scalar(f):
            ft = base.customize(min_occurs=0, max_occurs=1)
        elif f.type in (FD.TYPE_STRING, FD.TYPE_BYTES):
            # nillable so that an empty element reads as "" (spyne treats its
            # missing text as None); the element itself is still required.
            ft = base.customize(min_occurs=1, max_occurs=1)
        else:
            ft = base.customize(min_occurs=1, max_occurs=1, nillable=False)
        type_info.append((f.json_name, ft))
    t = type(d.name, (ComplexModel,), {
        "__namespace__": NS,
        "__type_name__": d.name,
        "_type_info": type_info,
    })
    _TYPES[d.full_name] = t
    return t


def from_json(d, value):
    """A spyne instance of message d from its canonical JSON form (dataset)."""
    cls = complex_type(d)
    kwargs = {}
    for f in d.fields:
        if f.json_name not in value or value[f.json_name] is None:
            continue
        v = value[f.json_name]
        if f.type == FD.TYPE_MESSAGE:
            conv = lambda x, _m=f.message_type: from_json(_m, x)  # noqa: E731
        elif f.type in protos.INT64_TYPES:
            conv = int
        elif f.type in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
            conv = float
        else:
            conv = lambda x: x  # noqa: E731
        kwargs[f.json_name] = [conv(x) for x in v] if protos.is_repeated(f) else conv(v)
    for f in d.fields:  # non-optional fields are present, also at their default
        if f.json_name not in kwargs and not protos.has_explicit_presence(f):
            if protos.is_repeated(f):
                kwargs[f.json_name] = []
            elif f.type == FD.TYPE_ENUM:
                kwargs[f.json_name] = f.enum_type.values[0].name
            elif f.type == FD.TYPE_STRING:
                kwargs[f.json_name] = ""
            elif f.type == FD.TYPE_BOOL:
                kwargs[f.json_name] = False
            elif f.type == FD.TYPE_BYTES:
                kwargs[f.json_name] = [b""]
            else:
                kwargs[f.json_name] = 0
    return cls(**kwargs)


def operation(name: str):
    """@rpc for operation `name`: body elements <name>Request / <name>Response
    holding the message's fields (document/literal, bare)."""
    m = protos.method(name)
    kw = {"_in_message_name": name + "Request", "_out_message_name": name + "Response",
          "_operation_name": name}
    args = ()
    if m.input_type.fields:
        args = (complex_type(m.input_type).customize(type_name=name + "Request"),)
    if m.output_type.fields:
        kw["_returns"] = complex_type(m.output_type).customize(type_name=name + "Response")
    if m.input_type.fields or m.output_type.fields:
        kw["_body_style"] = "bare"  # spyne refuses 'bare' with an empty model;
    # wrapped with no parts gives the same empty <name>Request/<name>Response.
    return rpc(*args, **kw)


Product = complex_type(pb.Product.DESCRIPTOR)
CloneResponse = complex_type(pb.CloneResponse.DESCRIPTOR)
IntegerValue = complex_type(pb.IntegerValue.DESCRIPTOR)
IntegerList = complex_type(pb.IntegerList.DESCRIPTOR)
FileContent = complex_type(pb.FileContent.DESCRIPTOR)
HelloReply = complex_type(hw.HelloReply.DESCRIPTOR)


# ---------------------------------------------------------------- service

class Data:
    """Loaded once per process at start-up (see SoapAsgi)."""
    status = devices = items = people = None
    files: dict = {}


class BenchService(ServiceBase):
    @operation("GetInventoryXs")
    def GetInventoryXs(ctx):
        return None

    @operation("GetInventoryS")
    def GetInventoryS(ctx):
        return Data.status

    @operation("GetInventoryM")
    def GetInventoryM(ctx):
        return Data.devices

    @operation("GetInventoryL")
    def GetInventoryL(ctx):
        return Data.items

    @operation("EchoProduct")
    def EchoProduct(ctx, product):
        return product

    @operation("ModifyProduct")
    def ModifyProduct(ctx, product):
        product.description = reverse_scalars(product.description)
        return product

    @operation("CloneText")
    def CloneText(ctx, req):
        return CloneResponse(texts=[req.text] * req.times)

    @operation("GetInteger")
    def GetInteger(ctx):
        return IntegerValue(value=INTEGER_VALUE)

    @operation("GetIntegers")
    def GetIntegers(ctx):
        return IntegerList(values=INTEGERS)

    @operation("GetObjects")
    def GetObjects(ctx):
        return Data.people

    @operation("GetFile")
    def GetFile(ctx, req):
        content = Data.files.get(req.name)
        if content is None:
            raise Fault("Client", f"unknown file {req.name!r}")
        return FileContent(name=req.name, content=[content])

    @operation("Echo")
    def Echo(ctx, message):
        return message

    @operation("SayHello")
    def SayHello(ctx, req):
        return HelloReply(response=req.request)


def _validate_clone(req):
    check_clone(req.text, req.times)


def _validate_file(req):
    try:
        check_file(req.name)
    except NotFound as e:
        raise InvalidInput(str(e)) from None


def _validate_hello(req):
    h = req.request
    if h is not None and h.c1 is not None and h.c2 is not None:
        raise InvalidInput("more than one member of oneof choice is set")


# Checks that belong to decoding/validation (run before the service time and
# the failure draw), by operation.
VALIDATORS = {"CloneTextRequest": _validate_clone, "SayHelloRequest": _validate_hello, "GetFileRequest": _validate_file}


MAX_ELEMENTS = 10_000  # the largest contract request has fewer than 40
_FEED_BYTES = 16 * 1024  # at most ~4,000 elements per step of the count


def _syntax_message(parser, e: etree.XMLSyntaxError) -> str:
    """libxml2's own description of the first fatal error of this parse, with
    its position (not the exception's text, which names lxml's pseudo file
    `<string>`; and not `e.error_log`, which also holds earlier parses')."""
    errors = parser.error_log.filter_from_fatals()
    if errors:
        err = errors[0]
        return f"malformed XML: {err.message.strip()} (line {err.line}, column {err.column})"
    return f"malformed XML: {e.msg}" if getattr(e, "msg", None) else "malformed XML"


def parse_counted(data: bytes, parser_kwargs: dict):
    """Parses a request with lxml's pull parser, fed in small steps, counting
    start tags as they come: over MAX_ELEMENTS the parse stops (soap:Client
    fault) with at most one step's elements built, so no tree of the whole
    document is ever made for it. Returns the root element."""
    parser = etree.XMLPullParser(events=("start",), **parser_kwargs)
    count = 0
    view = memoryview(data)
    try:
        for i in range(0, len(data), _FEED_BYTES):
            parser.feed(bytes(view[i:i + _FEED_BYTES]))
            for _ in parser.read_events():
                count += 1
            if count > MAX_ELEMENTS:
                raise Fault("Client", f"too many XML elements: more than {MAX_ELEMENTS}")
        return parser.close()
    except etree.XMLSyntaxError as e:
        raise Fault("Client", _syntax_message(parser, e)) from None


class StrictSoap11(Soap11):
    """Soap11 that refuses any DTD, bounds the number of elements, and writes
    faults as soap:Client/soap:Server."""

    soap_env = "soap"

    def create_in_document(self, ctx, charset=None):
        data = b"".join(ctx.in_string)
        if _DOCTYPE.search(data) or _ENTITY.search(data):
            raise Fault("Client", "DTDs (<!DOCTYPE>) are not allowed")
        # The parser does not load DTDs, resolve entities or use the network
        # (spyne's defaults, set explicitly in make_application). This replaces
        # spyne's _parse_xml_string (etree.XMLID), including its id map.
        root = parse_counted(data, self.parser_kwargs)
        if root.getroottree().docinfo.doctype:
            raise Fault("Client", "DTDs (<!DOCTYPE>) are not allowed")
        # spyne reads the Body's first element without checking there is one.
        body = root.find(f"{{{NS_SOAP11_ENV}}}Body")
        if body is not None and not any(isinstance(c.tag, str) for c in body):
            raise Fault("Client", "the soap:Body holds no operation element")
        xmlids = {}
        for el in root.iter(etree.Element):
            xml_id = el.get("id")
            if xml_id:
                xmlids[xml_id] = el
        ctx.in_document = (root, xmlids)


def make_application() -> Application:
    proto = dict(validator="soft", load_dtd=False, resolve_entities=False, no_network=True,
                 dtd_validation=False, huge_tree=False, attribute_defaults=False)
    app = Application([BenchService], tns=NS, name="Protobench",
                      in_protocol=StrictSoap11(**proto), out_protocol=StrictSoap11(**proto))
    return app


_EXCEPTION_NAME = re.compile(r"\b[A-Za-z_][\w.]*(Error|Exception)\b")
_LEADING_VALUE = re.compile(r"""^('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")


def _client_or_server(fault: Fault) -> Fault:
    """Folds spyne's subcodes into soap:Client / soap:Server and keeps library
    internals out of the faultstring: spyne words some validation faults as
    `'<value>': ValueError("...")` and server errors as `InternalError: ...`."""
    code = fault.faultcode or "Server"
    client = code == "Client" or code.startswith("Client.")
    fault.faultcode = "Client" if client else "Server"
    text = fault.faultstring if isinstance(fault.faultstring, str) else ""
    if _EXCEPTION_NAME.search(text):
        if client:
            m = _LEADING_VALUE.match(text)
            fault.faultstring = f"invalid value {m.group(1)}" if m else "invalid value"
        else:
            fault.faultstring = "Internal Error"
    return fault


# ---------------------------------------------------------------- transport

def _header(scope, name: bytes):
    for k, v in scope["headers"]:
        if k == name:
            return v.decode("latin-1")
    return None


async def _plain(send, status: int, text: str, headers=()) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


class _TooLarge(Exception):
    pass


class SoapAsgi:
    """ASGI transport for the spyne application: HTTP checks (path, method,
    size, content type), WSDL, then spyne's decode -> validate -> service
    time + failure draw -> call -> encode."""

    def __init__(self, cfg: Config):
        data = load_dataset(cfg.dataset)
        Data.status = from_json(pb.InventoryStatus.DESCRIPTOR, data["inventoryStatus"])
        Data.devices = from_json(pb.DeviceList.DESCRIPTOR, {"devices": data["devices"]})
        Data.items = from_json(pb.ItemList.DESCRIPTOR, {"items": data["items"]})
        Data.people = from_json(pb.ObjectList.DESCRIPTOR, {"people": data["people"]})
        Data.files = build_files()
        self.max_bytes = cfg.max_request_bytes
        self.gate = Gate(cfg)
        self.scheme = "https" if cfg.tls else "http"
        self.app = make_application()
        self.server = ServerBase(self.app)
        # Faults and responses use the prefix `soap` for the envelope namespace.
        nsmap = self.app.interface.nsmap
        for prefix, ns in list(nsmap.items()):
            if ns == NS_SOAP11_ENV:
                del nsmap[prefix]
        nsmap["soap"] = NS_SOAP11_ENV
        wsdl = (SERVER_DIR / ".." / ".." / "contract" / "wsdl" / "protobench.wsdl").read_bytes()
        self.wsdl_parts = re.split(rb'(?<=<soap:address location=")[^"]*(?=")', wsdl, maxsplit=1)

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        if scope["path"] != "/soap":
            await _plain(send, 404, "not found")
            return
        method = scope["method"]
        if method in ("GET", "HEAD") and scope["query_string"].lower() == b"wsdl":
            await self._wsdl(scope, send, method == "HEAD")
            return
        if method != "POST":
            await _plain(send, 405, "method not allowed", [(b"allow", b"POST, GET")])
            return
        length = _header(scope, b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await _plain(send, 413, "request body too large")
            return
        ct = _header(scope, b"content-type")
        if ct is None or _media_type(ct) != "text/xml":
            await _plain(send, 415, "unsupported media type: the body must be text/xml")
            return
        try:
            body = await self._body(receive)
        except _TooLarge:
            await _plain(send, 413, "request body too large")
            return
        status, out = await self._rpc(body)
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/xml; charset=utf-8"),
                                (b"content-length", str(len(out)).encode())]})
        await send({"type": "http.response.body", "body": out})

    async def _body(self, receive) -> bytes:
        chunks, total = [], 0
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                raise _TooLarge  # nobody is listening; the reply is dropped
            chunk = msg.get("body", b"")
            total += len(chunk)
            if total > self.max_bytes:
                raise _TooLarge
            chunks.append(chunk)
            if not msg.get("more_body", False):
                return b"".join(chunks)

    async def _wsdl(self, scope, send, head_only: bool) -> None:
        host = _header(scope, b"host")
        if not host:
            server = scope.get("server") or ("127.0.0.1", 0)
            host = f"{server[0]}:{server[1]}"
        location = f"{self.scheme}://{host}/soap".encode()
        location = location.replace(b"&", b"&amp;").replace(b'"', b"&quot;").replace(b"<", b"&lt;")
        body = location.join(self.wsdl_parts)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/xml; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": b"" if head_only else body})

    async def _rpc(self, body: bytes):
        server = self.server
        ctx = MethodContext(server, MethodContext.SERVER)
        ctx.in_string = [body]
        contexts = server.generate_contexts(ctx)  # parse, find the operation
        p_ctx = contexts[0]
        if p_ctx.in_error is not None:
            return self._fault(p_ctx, p_ctx.in_error)
        server.get_in_object(p_ctx)  # decode and validate the request message
        if p_ctx.in_error is not None:
            return self._fault(p_ctx, p_ctx.in_error)
        # descriptor.name is the request element's name (<Op>Request)
        check = VALIDATORS.get(p_ctx.descriptor.name)
        if check is not None:
            req = p_ctx.in_object
            if isinstance(req, (list, tuple)):
                req = req[0]
            try:
                check(req)
            except InvalidInput as e:
                return self._fault(p_ctx, Fault("Client", str(e)))
        if not await self.gate.apass():
            return self._fault(p_ctx, Fault("Server", INJECTED_FAILURE))
        server.get_out_object(p_ctx)  # call the operation
        if p_ctx.out_error is not None:
            return self._fault(p_ctx, p_ctx.out_error)
        try:
            server.get_out_string(p_ctx)  # encode the response
        except Exception:
            return self._fault(p_ctx, Fault("Server", "Internal Error"))
        return 200, b"".join(p_ctx.out_string)

    def _fault(self, p_ctx, fault: Fault):
        p_ctx.out_object = None
        p_ctx.out_error = _client_or_server(fault)
        p_ctx.out_document = None
        p_ctx.out_string = None
        self.server.get_out_string(p_ctx)
        return 500, b"".join(p_ctx.out_string)


def _media_type(ct: str) -> str:
    msg = email.message.Message()
    msg["content-type"] = ct
    return msg.get_content_type()


def create_app(cfg: Config) -> SoapAsgi:
    return SoapAsgi(cfg)
