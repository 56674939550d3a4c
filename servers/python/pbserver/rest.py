"""The REST form: a FastAPI application (served by uvicorn for `rest` and by
hypercorn for `rest-h2`)."""

# No `from __future__ import annotations`: FastAPI reads the (dynamically
# derived) model classes from the handlers' annotations at definition time.

import email.message

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from . import protos
from .common import (
    INJECTED_FAILURE,
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

_REASONS = {
    400: "bad request",
    404: "not found",
    405: "method not allowed",
    413: "request body too large",
    415: "unsupported media type: the body must be application/json",
    500: "internal error",
}


def _error(status: int, message: str, headers=None) -> JSONResponse:
    return JSONResponse({"code": status, "message": message}, status_code=status, headers=headers)


async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
    detail = exc.detail if isinstance(exc.detail, str) and exc.status_code in (400, 404, 500) \
        else _REASONS.get(exc.status_code, str(exc.detail))
    if exc.status_code == 404 and detail == "Not Found":
        detail = "not found"
    return _error(exc.status_code, detail, getattr(exc, "headers", None))


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    if errors:
        e = errors[0]
        where = ".".join(str(p) for p in e.get("loc", ()) if p != "body")
        what = e.get("msg", "invalid")
        if e.get("type") == "json_invalid":
            message = "malformed JSON"
        elif e.get("type") == "missing" and not where:
            message = "missing JSON body"
        else:
            message = f"{where}: {what}" if where else what
    else:
        message = "invalid request"
    return _error(400, message)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    # Never send internals (stack traces) to clients.
    return _error(500, "internal error")


async def require_json(request: Request) -> None:
    """415 unless the request says its body is JSON (a charset is allowed)."""
    ct = request.headers.get("content-type")
    if ct is not None:
        msg = email.message.Message()
        msg["content-type"] = ct
        if msg.get_content_type() == "application/json":
            return
    raise HTTPException(415, _REASONS[415])


class DeclaredLengthLimit:
    """Answers 413 with the contract's JSON body, before any reading, when the
    declared Content-Length is over the limit. (FastAPI's max_body_size
    enforces the limit while the body is read, for chunked bodies too, but for
    a declared length Starlette replaces the response with a plain-text 413.)"""

    def __init__(self, app, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            for k, v in scope["headers"]:
                if k == b"content-length":
                    if v.isdigit() and int(v) > self.limit:
                        await _error(413, _REASONS[413])(scope, receive, send)
                        return
                    break
        await self.app(scope, receive, send)


def create_app(cfg: Config):
    """The ASGI application: the FastAPI app behind DeclaredLengthLimit."""
    return DeclaredLengthLimit(create_fastapi_app(cfg), cfg.max_request_bytes)


def create_fastapi_app(cfg: Config) -> FastAPI:
    data = load_dataset(cfg.dataset)
    status = InventoryStatus.model_validate(data["inventoryStatus"])
    devices = DeviceList.model_validate({"devices": data["devices"]})
    items = ItemList.model_validate({"items": data["items"]})
    people = ObjectList.model_validate({"people": data["people"]})
    files = build_files()
    gate = Gate(cfg)
    del data

    app = FastAPI(
        title="protobench",
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        redirect_slashes=False,
        max_body_size=cfg.max_request_bytes,
        exception_handlers={
            HTTPException: _http_error,
            RequestValidationError: _validation_error,
            Exception: _unexpected,
        },
    )
    json_body = [Depends(require_json)]

    async def passed() -> None:
        """Service time, then the failure draw (after decoding/validation)."""
        if not await gate.apass():
            raise HTTPException(500, INJECTED_FAILURE)

    @app.get("/v1/inventory/xs", response_model=Empty, response_model_exclude_none=True)
    async def get_inventory_xs() -> Empty:
        await passed()
        return Empty()

    @app.get("/v1/inventory/s", response_model=InventoryStatus, response_model_exclude_none=True)
    async def get_inventory_s() -> InventoryStatus:
        await passed()
        return status

    @app.get("/v1/inventory/m", response_model=DeviceList, response_model_exclude_none=True)
    async def get_inventory_m() -> DeviceList:
        await passed()
        return devices

    @app.get("/v1/inventory/l", response_model=ItemList, response_model_exclude_none=True)
    async def get_inventory_l() -> ItemList:
        await passed()
        return items

    @app.post("/v1/products/echo", response_model=Product, response_model_exclude_none=True,
              dependencies=json_body)
    async def echo_product(product: Product) -> Product:
        await passed()
        return product

    @app.post("/v1/products/modify", response_model=Product, response_model_exclude_none=True,
              dependencies=json_body)
    async def modify_product(product: Product) -> Product:
        await passed()
        return product.model_copy(update={"description": reverse_scalars(product.description)})

    @app.post("/v1/tasks/clone", response_model=CloneResponse, response_model_exclude_none=True,
              dependencies=json_body)
    async def clone_text(req: CloneRequest) -> CloneResponse:
        try:
            check_clone(req.text, req.times)
        except InvalidInput as e:
            raise HTTPException(400, str(e)) from None
        await passed()
        return CloneResponse.model_construct(texts=[req.text] * req.times)

    @app.get("/v1/tasks/integer", response_model=IntegerValue, response_model_exclude_none=True)
    async def get_integer() -> IntegerValue:
        await passed()
        return IntegerValue(value=INTEGER_VALUE)

    @app.get("/v1/tasks/integers", response_model=IntegerList, response_model_exclude_none=True)
    async def get_integers() -> IntegerList:
        await passed()
        return IntegerList.model_construct(values=INTEGERS)

    @app.get("/v1/tasks/objects", response_model=ObjectList, response_model_exclude_none=True)
    async def get_objects() -> ObjectList:
        await passed()
        return people

    @app.get("/v1/tasks/files/{name}", response_model=FileContent, response_model_exclude_none=True)
    async def get_file(name: str) -> FileContent:
        await passed()
        content = files.get(name)
        if content is None:
            raise HTTPException(404, f"unknown file {name!r}")
        return FileContent.model_construct(name=name, content=content)

    @app.post("/v1/echo", response_model=EchoMessage, response_model_exclude_none=True,
              dependencies=json_body)
    async def echo(message: EchoMessage) -> EchoMessage:
        await passed()
        return message

    @app.post("/v1/greeter/hello", response_model=HelloReply, response_model_exclude_none=True,
              dependencies=json_body)
    async def say_hello(req: HelloRequest) -> HelloReply:
        await passed()
        return HelloReply.model_construct(response=req.request)

    return app
