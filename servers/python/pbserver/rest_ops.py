"""The REST form's contract logic, shared by both REST implementations: the
FastAPI app (rest.py, on uvicorn and hypercorn) and the Flask app
(flask_app.py, on gunicorn).

Here: the route table, the Pydantic models (derived from the .proto files in
rest_models.py), the dataset in those models, validation, the operations, the
error messages and the canonical JSON encoding. The web frameworks only route,
read the body and write what this module returns.
"""

from __future__ import annotations

import email.message
import json
from typing import NamedTuple

from pydantic import BaseModel, TypeAdapter

from . import protos
from .common import (
    INJECTED_FAILURE,  # noqa: F401  (re-exported for the apps)
    INTEGER_VALUE,
    INTEGERS,
    Gate,
    InvalidInput,
    build_files,
    check_clone,
    load_dataset,
    reverse_scalars,
)
from .config import Config
from .rest_models import model

pb = protos.protobench_pb2
hw = protos.helloworld_pb2

Empty = model(pb.Empty.DESCRIPTOR)
InventoryStatus = model(pb.InventoryStatus.DESCRIPTOR)
DeviceList = model(pb.DeviceList.DESCRIPTOR)
ItemList = model(pb.ItemList.DESCRIPTOR)
Product = model(pb.Product.DESCRIPTOR)
CloneRequest = model(pb.CloneRequest.DESCRIPTOR)
CloneResponse = model(pb.CloneResponse.DESCRIPTOR)
IntegerValue = model(pb.IntegerValue.DESCRIPTOR)
IntegerList = model(pb.IntegerList.DESCRIPTOR)
ObjectList = model(pb.ObjectList.DESCRIPTOR)
FileContent = model(pb.FileContent.DESCRIPTOR)
EchoMessage = model(pb.EchoMessage.DESCRIPTOR)
HelloRequest = model(hw.HelloRequest.DESCRIPTOR)
HelloReply = model(hw.HelloReply.DESCRIPTOR)


class Route(NamedTuple):
    method: str
    path: str  # `{name}` is the one path parameter (GetFile)
    operation: str
    request: type[BaseModel] | None  # JSON body model (POST)
    response: type[BaseModel]


ROUTES = (
    Route("GET", "/v1/inventory/xs", "GetInventoryXs", None, Empty),
    Route("GET", "/v1/inventory/s", "GetInventoryS", None, InventoryStatus),
    Route("GET", "/v1/inventory/m", "GetInventoryM", None, DeviceList),
    Route("GET", "/v1/inventory/l", "GetInventoryL", None, ItemList),
    Route("POST", "/v1/products/echo", "EchoProduct", Product, Product),
    Route("POST", "/v1/products/modify", "ModifyProduct", Product, Product),
    Route("POST", "/v1/tasks/clone", "CloneText", CloneRequest, CloneResponse),
    Route("GET", "/v1/tasks/integer", "GetInteger", None, IntegerValue),
    Route("GET", "/v1/tasks/integers", "GetIntegers", None, IntegerList),
    Route("GET", "/v1/tasks/objects", "GetObjects", None, ObjectList),
    Route("GET", "/v1/tasks/files/{name}", "GetFile", None, FileContent),
    Route("POST", "/v1/echo", "Echo", EchoMessage, EchoMessage),
    Route("POST", "/v1/greeter/hello", "SayHello", HelloRequest, HelloReply),
)

REASONS = {
    400: "bad request",
    404: "not found",
    405: "method not allowed",
    408: "request timeout: the request did not arrive in time",
    413: "request body too large",
    415: "unsupported media type: the body must be application/json",
    500: "internal error",
}


class ApiError(Exception):
    """An answer other than 200: the status and the message of the body."""

    def __init__(self, status: int, message: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message if message is not None else REASONS[status]


def error_body(status: int, message: str) -> bytes:
    """`{"code": status, "message": message}` as Starlette's JSONResponse writes it."""
    return json.dumps({"code": status, "message": message}, ensure_ascii=False,
                      allow_nan=False, separators=(",", ":")).encode("utf-8")


REQUEST_TIMEOUT_BODY = error_body(408, REASONS[408])


def validation_message(errors) -> str:
    """The 400 message for Pydantic's (or FastAPI's) validation errors: where
    and what, never the model's or library's names."""
    if not errors:
        return "invalid request"
    e = errors[0]
    where = ".".join(str(p) for p in e.get("loc", ()) if p != "body")
    what = e.get("msg", "invalid")
    if e.get("type") == "json_invalid":
        return "malformed JSON"
    if e.get("type") == "missing" and not where:
        return "missing JSON body"
    return f"{where}: {what}" if where else what


def is_json(content_type: str | None) -> bool:
    """Content-Type application/json (parameters such as charset allowed)."""
    if content_type is None:
        return False
    msg = email.message.Message()
    msg["content-type"] = content_type
    return msg.get_content_type() == "application/json"


_ADAPTERS = {r.response: TypeAdapter(r.response) for r in ROUTES}


def encode(route: Route, value: BaseModel) -> bytes:
    """The canonical JSON of a response, as FastAPI writes a response_model with
    response_model_exclude_none=True (pydantic-core's dump_json)."""
    return _ADAPTERS[route.response].dump_json(value, by_alias=True, exclude_none=True)


def decode(route: Route, body: bytes) -> BaseModel:
    """A request body by FastAPI's rules (json.loads, then the model);
    raises ApiError(400)."""
    from pydantic import ValidationError

    if not body:
        raise ApiError(400, "missing JSON body")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "malformed JSON") from None
    try:
        # from_attributes: the wording of FastAPI's errors for a non-object
        # body (json.loads yields no object with attributes)
        return route.request.model_validate(data, from_attributes=True)
    except ValidationError as e:
        raise ApiError(400, validation_message(e.errors(include_url=False))) from None


class Operations:
    """The dataset in the REST models and the operations over it. `admit`
    checks a decoded request (invalid input, unknown file); then the caller
    applies the service time and the failure draw (`gate`), then `call`."""

    def __init__(self, cfg: Config):
        data = load_dataset(cfg.dataset)
        self.status = InventoryStatus.model_validate(data["inventoryStatus"])
        self.devices = DeviceList.model_validate({"devices": data["devices"]})
        self.items = ItemList.model_validate({"items": data["items"]})
        self.people = ObjectList.model_validate({"people": data["people"]})
        self.files = build_files()
        self.gate = Gate(cfg)

    def admit(self, op: str, req, name: str | None) -> None:
        if op == "CloneText":
            try:
                check_clone(req.text, req.times)
            except InvalidInput as e:
                raise ApiError(400, str(e)) from None
        elif op == "GetFile" and name not in self.files:
            # an unknown name is refused like invalid input: before the
            # service time and the failure draw (contract/README.md)
            raise ApiError(404, f"unknown file {name!r}")

    def call(self, op: str, req, name: str | None) -> BaseModel:
        if op == "GetInventoryXs":
            return Empty()
        if op == "GetInventoryS":
            return self.status
        if op == "GetInventoryM":
            return self.devices
        if op == "GetInventoryL":
            return self.items
        if op in ("EchoProduct", "Echo"):
            return req
        if op == "ModifyProduct":
            return req.model_copy(update={"description": reverse_scalars(req.description)})
        if op == "CloneText":
            return CloneResponse.model_construct(texts=[req.text] * req.times)
        if op == "GetInteger":
            return IntegerValue(value=INTEGER_VALUE)
        if op == "GetIntegers":
            return IntegerList.model_construct(values=INTEGERS)
        if op == "GetObjects":
            return self.people
        if op == "GetFile":
            return FileContent.model_construct(name=name, content=self.files[name])
        if op == "SayHello":
            return HelloReply.model_construct(response=req.request)
        raise ValueError(f"unknown operation {op}")
