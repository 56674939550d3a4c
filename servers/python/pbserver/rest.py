"""The REST form: a FastAPI application (served by uvicorn for `rest` and by
hypercorn for `rest-h2`)."""

# No `from __future__ import annotations`: FastAPI reads the (dynamically
# derived) model classes from the handlers' annotations at definition time.

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from .config import Config
from .rest_ops import (
    INJECTED_FAILURE,
    REASONS,
    REQUEST_TIMEOUT_BODY,  # noqa: F401  (used by worker.py)
    ROUTES,
    ApiError,
    Operations,
    Route,
    is_json,
    validation_message,
)

_REASONS = REASONS


def _error(status: int, message: str, headers=None) -> JSONResponse:
    return JSONResponse({"code": status, "message": message}, status_code=status, headers=headers)


async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
    detail = exc.detail if isinstance(exc.detail, str) and exc.status_code in (400, 404, 500) \
        else _REASONS.get(exc.status_code, str(exc.detail))
    if exc.status_code == 404 and detail == "Not Found":
        detail = "not found"
    return _error(exc.status_code, detail, getattr(exc, "headers", None))


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    return _error(400, validation_message(exc.errors()))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    # Never send internals (stack traces) to clients.
    return _error(500, "internal error")


async def require_json(request: Request) -> None:
    """415 unless the request says its body is JSON (a charset is allowed)."""
    if not is_json(request.headers.get("content-type")):
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


def _response_class(cfg: Config) -> dict:
    """PROTOBENCH_PYTHON_REST_JSON=orjson: responses rendered by FastAPI's
    ORJSONResponse (the model dumped to Python objects, then orjson), as
    Berg & Mebrahtu Redi's server did. The default leaves FastAPI's own path,
    which dumps the response model to JSON in pydantic-core; FastAPI 0.165
    deprecates ORJSONResponse in its favour, so its warnings are silenced (they
would be written to stderr from the request path)."""
    if cfg.rest_json != "orjson":
        return {}
    import warnings

    # typing_extensions' DeprecationWarning on use, and FastAPI's own
    # FastAPIDeprecationWarning (a UserWarning, shown by default) on responses
    warnings.filterwarnings("ignore", message="ORJSONResponse is deprecated")
    from fastapi.responses import ORJSONResponse
    import orjson  # noqa: F401  (fail at start, not on the first call, if it is missing)

    return {"default_response_class": ORJSONResponse}


def create_fastapi_app(cfg: Config) -> FastAPI:
    ops = Operations(cfg)
    app = FastAPI(
        **_response_class(cfg),
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
    # The streaming operations' WebSocket, SSE and polling forms.
    from .stream_http import StreamRoutes

    StreamRoutes(cfg, ops.gate).install(app)
    json_body = [Depends(require_json)]
    for route in ROUTES:
        app.add_api_route(
            route.path, _endpoint(ops, route), methods=[route.method], name=route.operation,
            response_model=route.response, response_model_exclude_none=True,
            dependencies=json_body if route.request is not None else None,
        )
    return app


async def _serve(ops: Operations, op: str, req, name):
    """Validate, service time + failure draw, operation (contract order)."""
    try:
        ops.admit(op, req, name)
        if not await ops.gate.apass():
            raise ApiError(500, INJECTED_FAILURE)
        return ops.call(op, req, name)
    except ApiError as e:
        raise HTTPException(e.status, e.message) from None


def _endpoint(ops: Operations, route: Route):
    """The path operation function of one route; FastAPI reads the body model
    (and the path parameter) from its signature."""
    op = route.operation
    if route.request is not None:
        body_model = route.request

        async def with_body(body: body_model):
            return await _serve(ops, op, body, None)
        return with_body
    if "{name}" in route.path:
        async def with_name(name: str):
            return await _serve(ops, op, None, name)
        return with_name

    async def without_body():
        return await _serve(ops, op, None, None)
    return without_body
