"""The `graphql` listener: contract/graphql/schema.graphql with strawberry
(code first, snake_case attributes served in camelCase) on uvicorn.

`POST /graphql` with a JSON body `{"query", "operationName", "variables"}`.
The HTTP side is this module's own small Starlette app, as REST's: the body
is read under PROTOBENCH_MAX_REQUEST_BYTES (413), only application/json is
taken (415), other methods are 405 and a body that is not a GraphQL request
400, all with the contract's JSON error; the read deadline is uvicorn's
(http1.py). The document is then strawberry's `Schema.execute`.

Every root field is one call of the contract: validated, then the injected
service time and the failure draw (`injected failure`, extensions.code
INJECTED_FAILURE), so a request with several root fields costs the server
what the REST calls it replaces cost. Output objects are built once from
the dataset at start; graphql-core resolves the selected fields per request.

Limits, as the Rust server's: depth 16 (strawberry's QueryDepthLimiter) and
at most 256 selected fields per operation, fragments expanded
(`FieldCountLimit`, a graphql-core validation rule added with strawberry's
AddValidationRules; strawberry has no cost analysis of its own). Both refuse
the document before it runs, as a GraphQL error.
"""

from __future__ import annotations

import base64
import json
import logging
import math
from enum import Enum
from typing import NewType, Optional
from urllib.parse import parse_qsl

import strawberry
from graphql import (
    FieldNode,
    FloatValueNode,
    FragmentSpreadNode,
    GraphQLDefaultInput,
    GraphQLError,
    GraphQLFloat,
    GraphQLInputObjectType,
    InlineFragmentNode,
    ValidationRule,
    get_nullable_type,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from strawberry.exceptions import MissingQueryError
from strawberry.extensions import AddValidationRules, MaskErrors, QueryDepthLimiter
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types.graphql import OperationType

from . import apq
from .common import (
    INJECTED_FAILURE,
    INTEGER_VALUE,
    INTEGERS,
    Gate,
    InvalidInput,
    build_files,
    check_clone,
    has_surrogate,
    load_dataset,
    reverse_scalars,
)
from .config import Config
from .rest_ops import is_json

PATH = "/graphql"
MAX_DEPTH = 16
MAX_FIELDS = 256
_FLOAT32_OVERFLOW = 2.0**128 - 2.0**103

# ---------------------------------------------------------------- scalars


def _parse_int64(v) -> int:
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise ValueError("Int64 is a decimal string")
    try:
        n = int(v, 10) if isinstance(v, str) else v
    except ValueError:
        raise ValueError(f"Int64 {str(v)[:40]!r} is not a decimal integer") from None
    if not -(2**63) <= n < 2**63:
        raise ValueError(f"Int64 {n} is out of the 64-bit range")
    return n


Int64 = strawberry.scalar(NewType("Int64", int), name="Int64",
                          description="A 64-bit integer, as a decimal string (GraphQL's Int is 32-bit).",
                          serialize=str, parse_value=_parse_int64)
Bytes = strawberry.scalar(NewType("Bytes", bytes), name="Bytes", description="Bytes, as standard base64 with padding.",
                          serialize=lambda b: base64.b64encode(b).decode("ascii"),
                          parse_value=lambda v: base64.b64decode(v, validate=True))
Empty = strawberry.scalar(NewType("Empty", object), name="Empty",
                          description="The empty message: always the object {} (an object type needs a field).",
                          serialize=lambda _: {}, parse_value=lambda _: {})

# ---------------------------------------------------------------- output types


@strawberry.type
class InventoryStatus:
    service_name: str
    region_code: str
    status_message: str
    recent_errors: list[str]
    cpu_utilization: float
    memory_utilization: float
    average_response_millis: float
    active_device_count: int


@strawberry.enum
class DeviceState(Enum):
    DEVICE_STATE_UNSPECIFIED = "DEVICE_STATE_UNSPECIFIED"
    DEVICE_STATE_ONLINE = "DEVICE_STATE_ONLINE"
    DEVICE_STATE_OFFLINE = "DEVICE_STATE_OFFLINE"
    DEVICE_STATE_MAINTENANCE = "DEVICE_STATE_MAINTENANCE"


@strawberry.type
class Device:
    device_id: str
    state: DeviceState
    reading_count: int


@strawberry.type
class DeviceList:
    devices: list[Device]


@strawberry.enum
class ItemCategory(Enum):
    ITEM_CATEGORY_UNSPECIFIED = "ITEM_CATEGORY_UNSPECIFIED"
    ITEM_CATEGORY_HARDWARE = "ITEM_CATEGORY_HARDWARE"
    ITEM_CATEGORY_ELECTRONICS = "ITEM_CATEGORY_ELECTRONICS"
    ITEM_CATEGORY_TOOLS = "ITEM_CATEGORY_TOOLS"
    ITEM_CATEGORY_SUPPLIES = "ITEM_CATEGORY_SUPPLIES"


@strawberry.type
class Location:
    warehouse: str
    aisle: int
    shelf: int
    bin: str


@strawberry.type
class Item:
    id: str
    name: str
    category: ItemCategory
    unit_price: float
    weight_kg: float
    quantity: int
    in_stock: bool
    fragile: bool
    location: Optional[Location]
    description: Optional[str]
    supplier: Optional[str]


@strawberry.type
class ItemList:
    items: list[Item]


@strawberry.type
class Product:
    id: int
    name: str
    description: str
    price: float
    stock: int
    tags: list[str]


@strawberry.type
class CloneResponse:
    texts: list[str]


@strawberry.type
class IntegerValue:
    value: int


@strawberry.type
class IntegerList:
    values: list[int]


@strawberry.type
class Person:
    id: int
    first_name: str
    last_name: str
    email: str
    age: int
    active: bool
    balance: float


@strawberry.type
class ObjectList:
    people: list[Person]


@strawberry.type
class FileContent:
    name: str
    content: Bytes


@strawberry.type
class EchoMessage:
    payload: str


@strawberry.enum
class Color(Enum):
    BLACK = "BLACK"
    WHITE = "WHITE"
    BLUE = "BLUE"
    RED = "RED"
    YELLOW = "YELLOW"
    GREEN = "GREEN"


@strawberry.type
class Pet:
    name: str
    color: Color


@strawberry.type
class Hello:
    name: str
    d: float
    f: float
    b: bool
    n: int
    l: Int64  # noqa: E741  (the contract's field name)
    c1: Optional[str]
    c2: Optional[bool]
    pets: list[Pet]


@strawberry.type
class HelloReply:
    response: Optional[Hello]


# ---------------------------------------------------------------- inputs (proto3 defaults)


@strawberry.input
class ProductInput:
    id: int = 0
    name: str = ""
    description: str = ""
    price: float = 0.0
    stock: int = 0
    tags: list[str] = strawberry.field(default_factory=list)


@strawberry.input
class CloneRequestInput:
    text: str = ""
    times: int = 0


@strawberry.input
class EchoMessageInput:
    payload: str = ""


@strawberry.input
class PetInput:
    name: str = ""
    color: Color = Color.BLACK


@strawberry.input
class HelloInput:
    name: str = ""
    d: float = 0.0
    f: float = 0.0
    b: bool = False
    n: int = 0
    l: Int64 = 0  # noqa: E741
    c1: Optional[str] = strawberry.UNSET
    c2: Optional[bool] = strawberry.UNSET
    pets: list[PetInput] = strawberry.field(default_factory=list)


@strawberry.input
class HelloRequestInput:
    request: Optional[HelloInput] = strawberry.UNSET


# ---------------------------------------------------------------- the data


class Data:
    """The dataset as output objects (built once), the files, the gate."""

    def __init__(self, cfg: Config):
        d = load_dataset(cfg.dataset)
        s = d["inventoryStatus"]
        self.status = InventoryStatus(
            service_name=s["serviceName"], region_code=s["regionCode"], status_message=s["statusMessage"],
            recent_errors=list(s["recentErrors"]), cpu_utilization=s["cpuUtilization"],
            memory_utilization=s["memoryUtilization"], average_response_millis=s["averageResponseMillis"],
            active_device_count=s["activeDeviceCount"])
        self.devices = DeviceList(devices=[
            Device(device_id=x["deviceId"], state=DeviceState[x["state"]], reading_count=x["readingCount"])
            for x in d["devices"]])
        self.items = ItemList(items=[_item(x) for x in d["items"]])
        self.people = ObjectList(people=[
            Person(id=p["id"], first_name=p["firstName"], last_name=p["lastName"], email=p["email"], age=p["age"],
                   active=p["active"], balance=p["balance"]) for p in d["people"]])
        self.files = build_files()
        self.gate = Gate(cfg)


def _item(x: dict) -> Item:
    loc = x.get("location")
    return Item(id=x["id"], name=x["name"], category=ItemCategory[x["category"]], unit_price=x["unitPrice"],
                weight_kg=x["weightKg"], quantity=x["quantity"], in_stock=x["inStock"], fragile=x["fragile"],
                location=Location(warehouse=loc["warehouse"], aisle=loc["aisle"], shelf=loc["shelf"], bin=loc["bin"])
                if loc is not None else None,
                description=x.get("description"), supplier=x.get("supplier"))


def _data(info) -> Data:
    return info.context["data"]


async def _admit(info) -> None:
    """The service time and the failure draw of one root field."""
    if not await _data(info).gate.apass():
        raise GraphQLError(INJECTED_FAILURE, extensions={"code": "INJECTED_FAILURE"})


def _invalid(message: str) -> GraphQLError:
    return GraphQLError(message, extensions={"code": "INVALID_ARGUMENT"})


def _check_text(name: str, *values: str) -> None:
    for v in values:
        if has_surrogate(v):
            raise _invalid(f"{name}: string is not valid Unicode")


def _check_float32(name: str, x: float) -> None:
    if not math.isfinite(x) or abs(x) >= _FLOAT32_OVERFLOW:
        raise _invalid(f"{name}: float out of range")


# ---------------------------------------------------------------- roots


@strawberry.type
class Query:
    @strawberry.field
    async def inventory_xs(self, info: strawberry.Info) -> Empty:
        await _admit(info)
        return {}

    @strawberry.field
    async def inventory_s(self, info: strawberry.Info) -> InventoryStatus:
        await _admit(info)
        return _data(info).status

    @strawberry.field
    async def inventory_m(self, info: strawberry.Info) -> DeviceList:
        await _admit(info)
        return _data(info).devices

    @strawberry.field
    async def inventory_l(self, info: strawberry.Info) -> ItemList:
        await _admit(info)
        return _data(info).items

    @strawberry.field
    async def integer(self, info: strawberry.Info) -> IntegerValue:
        await _admit(info)
        return IntegerValue(value=INTEGER_VALUE)

    @strawberry.field
    async def integers(self, info: strawberry.Info) -> IntegerList:
        await _admit(info)
        return IntegerList(values=INTEGERS)

    @strawberry.field
    async def objects(self, info: strawberry.Info) -> ObjectList:
        await _admit(info)
        return _data(info).people

    @strawberry.field
    async def file(self, info: strawberry.Info, name: str) -> FileContent:
        content = _data(info).files.get(name)
        if content is None:  # refused like invalid input: before the draw
            raise GraphQLError(f"unknown file {name[:100]!r}", extensions={"code": "NOT_FOUND"})
        await _admit(info)
        return FileContent(name=name, content=content)


def _product(p: ProductInput, description: str) -> Product:
    _check_text("input", p.name, p.description, *p.tags)
    return Product(id=p.id, name=p.name, description=description, price=p.price, stock=p.stock, tags=list(p.tags))


def _hello(r: HelloInput) -> Hello:
    c1 = None if r.c1 is strawberry.UNSET else r.c1
    c2 = None if r.c2 is strawberry.UNSET else r.c2
    if c1 is not None and c2 is not None:
        raise _invalid("input.request: more than one member of a oneof is set (c1, c2)")
    _check_float32("input.request.f", r.f)
    _check_text("input.request", r.name, c1 or "", *(p.name for p in r.pets))
    return Hello(name=r.name, d=r.d, f=r.f, b=r.b, n=r.n, l=r.l, c1=c1, c2=c2,
                 pets=[Pet(name=p.name, color=p.color) for p in r.pets])


@strawberry.type
class Mutation:
    @strawberry.mutation
    async def echo_product(self, info: strawberry.Info, input: ProductInput) -> Product:  # noqa: A002
        product = _product(input, input.description)
        await _admit(info)
        return product

    @strawberry.mutation
    async def modify_product(self, info: strawberry.Info, input: ProductInput) -> Product:  # noqa: A002
        product = _product(input, reverse_scalars(input.description))
        await _admit(info)
        return product

    @strawberry.mutation
    async def clone_text(self, info: strawberry.Info, input: CloneRequestInput) -> CloneResponse:  # noqa: A002
        _check_text("input", input.text)
        try:
            check_clone(input.text, input.times)
        except InvalidInput as e:
            raise _invalid(str(e)) from None
        await _admit(info)
        return CloneResponse(texts=[input.text] * input.times)

    @strawberry.mutation
    async def echo(self, info: strawberry.Info, input: EchoMessageInput) -> EchoMessage:  # noqa: A002
        _check_text("input", input.payload)
        await _admit(info)
        return EchoMessage(payload=input.payload)

    @strawberry.mutation
    async def say_hello(self, info: strawberry.Info, input: HelloRequestInput) -> HelloReply:  # noqa: A002
        request = None if input.request in (None, strawberry.UNSET) else input.request
        reply = HelloReply(response=_hello(request) if request is not None else None)
        await _admit(info)
        return reply


# ---------------------------------------------------------------- limits


class FieldCountLimit(ValidationRule):
    """Refuses an operation selecting more than MAX_FIELDS fields, each
    field counted once where it is selected and fragments expanded where
    they are spread (what bounds aliases repeating a large root field). The
    count stops at the limit, so a fragment that spreads others many times
    costs no more than MAX_FIELDS steps."""

    def enter_operation_definition(self, node, *_args):
        count = self._count(node.selection_set, (), MAX_FIELDS + 1)
        if count > MAX_FIELDS:
            name = f" {node.name.value}" if node.name else ""
            self.report_error(GraphQLError(
                f"the operation{name} selects more than {MAX_FIELDS} fields (fragments expanded); "
                f"the most allowed is {MAX_FIELDS}", node))

    def _count(self, selection_set, spreading: tuple, budget: int) -> int:
        n = 0
        for s in selection_set.selections if selection_set else ():
            if n >= budget:
                break
            if isinstance(s, FieldNode):
                n += 1
                if s.selection_set:
                    n += self._count(s.selection_set, spreading, budget - n)
            elif isinstance(s, InlineFragmentNode):
                n += self._count(s.selection_set, spreading, budget - n)
            elif isinstance(s, FragmentSpreadNode) and s.name.value not in spreading:
                fragment = self.context.get_fragment(s.name.value)
                if fragment is not None:
                    n += self._count(fragment.selection_set, (*spreading, s.name.value), budget - n)
        return n


def _mask(error: GraphQLError) -> bool:
    """Errors of our own or of the GraphQL layer pass; an unexpected
    exception inside a resolver is masked (no internals to clients)."""
    original = getattr(error, "original_error", None)
    return original is not None and not isinstance(original, (GraphQLError, ValueError, TypeError))


def make_schema() -> strawberry.Schema:
    schema = strawberry.Schema(
        query=Query, mutation=Mutation,
        extensions=[
            QueryDepthLimiter(max_depth=MAX_DEPTH),
            AddValidationRules([FieldCountLimit]),
            MaskErrors(should_mask_error=_mask, error_message="internal error"),
        ],
    )
    _float_defaults_as_floats(schema._schema)
    return schema


def _float_defaults_as_floats(gschema) -> None:
    """graphql-core prints a whole Float default as an Int literal (`= 0`,
    as graphql-js does); the contract's schema says `= 0.0`. Each Float input
    field's default is given as the Float literal of the same value, which
    introspection then shows as it is (the value it coerces to is the same)."""
    for t in gschema.type_map.values():
        if not isinstance(t, GraphQLInputObjectType):
            continue
        for field in t.fields.values():
            if get_nullable_type(field.type) is GraphQLFloat and isinstance(field.default_value, float):
                field.default = GraphQLDefaultInput(literal=FloatValueNode(value=repr(field.default_value)))


# ---------------------------------------------------------------- HTTP


def _error(status: int, message: str, headers=None) -> JSONResponse:
    return JSONResponse({"code": status, "message": message}, status_code=status, headers=headers)


def _json(out, status: int = 200, headers=None) -> Response:
    return Response(json.dumps(out, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(),
                    status_code=status, media_type="application/json", headers=headers)


def _apq_error(status: int, message: str, headers=None) -> Response:
    """The persisted queries' refusals: a GraphQL-style `errors` body."""
    return _json({"errors": [{"message": message}]}, status, headers)


NOT_A_REQUEST = 'the body is not a GraphQL request ({"query", "operationName", "variables"})'
GET_PARAMS = ("query", "operationName", "variables", "extensions")
MAX_GET_PARAMS = 16


def _graphql_request(body: bytes) -> tuple:
    """(query, operationName, variables, extensions) of a POST body, or
    raises ValueError saying what is wrong. `query` may be absent only
    when `extensions` is given (a persisted query's hash alone)."""
    try:
        obj = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ValueError(f"{NOT_A_REQUEST}: malformed JSON") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{NOT_A_REQUEST}: not a JSON object")
    query = obj.get("query")
    extensions = obj.get("extensions")
    if not isinstance(query, str) and (query is not None or extensions is None):
        raise ValueError(f"{NOT_A_REQUEST}: query must be a string")
    name = obj.get("operationName")
    if name is not None and not isinstance(name, str):
        raise ValueError(f"{NOT_A_REQUEST}: operationName must be a string or null")
    variables = obj.get("variables")
    if variables is not None and not isinstance(variables, dict):
        raise ValueError(f"{NOT_A_REQUEST}: variables must be an object or null")
    if has_surrogate(query or "") or _has_surrogate(variables):
        raise ValueError(f"{NOT_A_REQUEST}: a string is not valid Unicode")
    return query, name, variables, extensions


def _get_request(raw: bytes) -> tuple:
    """(query, operationName, variables, extensions) of a GET's query string
    (form encoding, `+` or `%20` for a space, any order), or raises
    apq.BadRequest naming the parameter that is wrong."""
    try:
        pairs = parse_qsl(raw.decode("utf-8"), keep_blank_values=True, encoding="utf-8", errors="strict",
                          max_num_fields=MAX_GET_PARAMS)
    except UnicodeDecodeError:
        raise apq.BadRequest("the query string is not UTF-8") from None
    except ValueError:
        raise apq.BadRequest(f"the query string has more than {MAX_GET_PARAMS} parameters") from None
    params: dict[str, str] = {}
    for key, value in pairs:
        if key in GET_PARAMS:
            if key in params:
                raise apq.BadRequest(f"parameter {key} is given more than once")
            params[key] = value
    variables = _json_param(params, "variables")
    extensions = _json_param(params, "extensions")
    if _has_surrogate(variables):
        raise apq.BadRequest("parameter variables: a string is not valid Unicode")
    return params.get("query"), params.get("operationName") or None, variables, extensions


def _json_param(params: dict, key: str):
    """The JSON object in parameter `key`, or None when it is absent."""
    text = params.get(key)
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        raise apq.BadRequest(f"parameter {key} is not JSON") from None
    if not isinstance(value, dict):
        raise apq.BadRequest(f"parameter {key} must be a JSON object")
    return value


def _has_surrogate(v) -> bool:
    if isinstance(v, str):
        return has_surrogate(v)
    if isinstance(v, dict):
        return any(_has_surrogate(k) or _has_surrogate(x) for k, x in v.items())
    if isinstance(v, list):
        return any(_has_surrogate(x) for x in v)
    return False


async def _read_body(request: Request, limit: int) -> bytes | None:
    """The body, or None past `limit` bytes (chunked bodies too)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(cfg: Config, get: bool = False):
    """The handler of `graphql` (POST) and, with `get`, of `graphql-get`
    (GET and POST): the same schema, executor, limits and store."""
    # strawberry logs every GraphQL error (an injected failure, a refused
    # document) at ERROR on stderr; they are the client's answers here.
    logging.getLogger("strawberry.execution").setLevel(logging.CRITICAL)
    schema = make_schema()
    context = {"data": Data(cfg)}
    store = apq.Store(cfg.apq_store, max_bytes=max(apq.MAX_BYTES, cfg.max_request_bytes))
    limit = cfg.max_request_bytes
    methods = "GET, POST" if get else "POST"

    async def execute(query, name, variables, extensions, by_get: bool) -> Response:
        """The persisted query rules (apq.py), then strawberry's execution."""
        try:
            h = apq.persisted_hash(extensions)
        except apq.BadRequest as e:
            return _apq_error(400, str(e))
        if h is not None:
            if query is None:
                query = store.get(h)
                if query is None:
                    return _json(apq.NOT_FOUND)
            elif apq.sha256_hex(query) != h:
                return _apq_error(400, apq.HASH_MISMATCH)
            else:
                store.put(h, query)
        elif query is None:
            return _apq_error(400, "the request has neither a query nor extensions.persistedQuery "
                                   "(a persisted query's sha256Hash)")
        try:
            result = await schema.execute(query, variable_values=variables, operation_name=name,
                                          context_value=context,
                                          allowed_operation_types=(OperationType.QUERY,) if by_get else None)
        except InvalidOperationTypeError as e:
            return _apq_error(405, f"{e.as_http_error_reason('GET')}: send them by POST", {"allow": "POST"})
        except MissingQueryError:
            return _apq_error(400, "query is empty")
        except CannotGetOperationTypeError as e:
            out = {"data": None, "errors": [{"message": e.as_http_error_reason()}]}
        except RecursionError:
            out = {"data": None, "errors": [{"message": "the document is nested too deeply"}]}
        else:
            out = {"data": result.data}
            if result.errors:
                out = {"errors": [e.formatted for e in result.errors], "data": result.data}
        return _json(out)

    async def graphql(request: Request) -> Response:
        if get and request.method == "GET":
            raw = request.scope.get("query_string", b"")
            if len(raw) > limit:
                return _error(413, f"query string too large: more than {limit} bytes")
            try:
                params = _get_request(raw)
            except apq.BadRequest as e:
                return _apq_error(400, str(e))
            return await execute(*params, by_get=True)
        if request.method != "POST":
            return _error(405, f"method {request.method} is not allowed on {PATH}; allowed: {methods}",
                          headers={"allow": methods})
        if not is_json(request.headers.get("content-type")):
            return _error(415, f"content type {request.headers.get('content-type', '(none)')[:100]} is not "
                               "supported; expected application/json")
        body = await _read_body(request, limit)
        if body is None:
            return _error(413, f"request body too large: more than {limit} bytes")
        try:
            params = _graphql_request(body)
        except ValueError as e:
            return _error(400, str(e))
        return await execute(*params, by_get=False)

    async def not_found(request: Request) -> Response:
        return _error(404, f"no operation at {request.method} {request.url.path[:100]}; "
                           f"GraphQL is served at {methods.replace(', ', ' and ')} {PATH}")

    from .rest import DeclaredLengthLimit

    app = Starlette(routes=[
        Route(PATH, graphql, methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]),
        Route("/{path:path}", not_found, methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]),
    ])
    return DeclaredLengthLimit(app, limit)
