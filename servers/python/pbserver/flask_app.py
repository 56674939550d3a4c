"""The Flask variant of the REST form (PROTOBENCH_PYTHON_REST=flask): a Flask
application served by gunicorn with sync workers, the way Flask is deployed.

The contract logic (routes, models, dataset, validation, operations, error
messages, JSON encoding) is rest_ops.py, shared with the FastAPI app; this
module only routes, reads the body and writes the answer.
"""

from __future__ import annotations

import errno
import math
import time

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from .config import Config
from .rest_ops import (
    INJECTED_FAILURE,
    REASONS,
    ROUTES,
    ApiError,
    Operations,
    Route,
    decode,
    encode,
    error_body,
    is_json,
)

ACCEPT_BACKOFF_S = 0.1  # at EMFILE/ENFILE


def _error(status: int, message: str, headers=None) -> Response:
    return Response(error_body(status, message), status=status, mimetype="application/json", headers=headers)


def create_app(cfg: Config) -> Flask:
    ops = Operations(cfg)
    app = Flask("pbserver")
    # werkzeug refuses a body over this while reading it (chunked bodies too)
    app.config["MAX_CONTENT_LENGTH"] = cfg.max_request_bytes
    limit = cfg.max_request_bytes

    @app.before_request
    def declared_length_limit():
        # 413 before reading, on every route (as the FastAPI app's wrapper does)
        n = request.content_length
        if n is not None and n > limit:
            return _error(413, REASONS[413])
        return None

    @app.errorhandler(HTTPException)
    def http_error(e: HTTPException):
        status = e.code or 500
        headers = None
        if status == 405 and getattr(e, "valid_methods", None):
            headers = {"Allow": ", ".join(e.valid_methods)}
        return _error(status, REASONS.get(status, "bad request" if status < 500 else "internal error"), headers)

    @app.errorhandler(Exception)
    def unexpected(e: Exception):
        # never send internals (stack traces) to clients
        return _error(500, REASONS[500])

    for route in ROUTES:
        app.add_url_rule(route.path.replace("{name}", "<name>"), endpoint=route.operation,
                         view_func=_view(ops, route), methods=[route.method],
                         provide_automatic_options=False)
    return app


def _view(ops: Operations, route: Route):
    op = route.operation

    def view(name: str | None = None) -> Response:
        try:
            req = None
            if route.request is not None:
                body = request.get_data(cache=False)
                if not is_json(request.headers.get("Content-Type")):
                    raise ApiError(415)
                req = decode(route, body)
            ops.admit(op, req, name)
            if not ops.gate.pass_blocking():
                raise ApiError(500, INJECTED_FAILURE)
            return Response(encode(route, ops.call(op, req, name)), mimetype="application/json")
        except ApiError as e:
            return _error(e.status, e.message)

    view.__name__ = op
    return view


# ---------------------------------------------------------------- gunicorn

def _sync_worker_class():
    from gunicorn.workers.sync import SyncWorker

    class BackoffSyncWorker(SyncWorker):
        """gunicorn's sync worker, except that accept() failing for want of
        descriptors (EMFILE/ENFILE) backs off and retries: the stock worker
        lets the error escape, which kills the worker process (the arbiter
        then starts another)."""

        def accept(self, listener):
            try:
                super().accept(listener)
            except OSError as e:
                if e.errno not in (errno.EMFILE, errno.ENFILE):
                    raise
                time.sleep(ACCEPT_BACKOFF_S)

    return BackoffSyncWorker


def gunicorn_settings(cfg: Config, fd: int, ready, index: int) -> dict:
    tls_context = {}

    def ssl_context(conf, default_factory):
        # gunicorn builds a context (reading the key and certificate files) for
        # every connection; one is built per worker and reused. ALPN http/1.1.
        ctx = tls_context.get("ctx")
        if ctx is None:
            ctx = default_factory()
            ctx.set_alpn_protocols(["http/1.1"])
            tls_context["ctx"] = ctx
        return ctx

    def post_worker_init(worker):
        # the supervisor prints the listening line once every first-generation
        # worker accepts (restarted workers have a higher age)
        if worker.age <= cfg.processes("rest"):
            ready.put(("rest", worker.age - 1, None))

    settings = {
        "bind": [f"fd://{fd}"],
        "workers": cfg.processes("rest"),
        "threads": 1,
        # sync workers: a request (from accepting the connection to the end of
        # the response) taking longer than this gets its worker killed and
        # replaced; it is gunicorn's only bound on a slow or silent client.
        "timeout": max(1, math.ceil(cfg.read_timeout)),
        "graceful_timeout": 10,
        "preload_app": True,
        "accesslog": None,
        "errorlog": "-",
        "loglevel": "warning",
        "proc_name": "pbserver-rest-flask",
        "control_socket_disable": True,
        "post_worker_init": post_worker_init,
    }
    if cfg.tls:
        settings.update(certfile=cfg.tls_cert, keyfile=cfg.tls_key, ssl_context=ssl_context)
    return settings


def run_gunicorn(cfg: Config, sock, ready, index: int) -> None:
    """Runs gunicorn's arbiter in this process on the supervisor's listening
    socket; it forks PROTOBENCH_WORKERS sync workers."""
    from gunicorn.app.base import BaseApplication

    settings = gunicorn_settings(cfg, sock.fileno(), ready, index)
    worker_class = _sync_worker_class()

    class FlaskApplication(BaseApplication):
        def load_config(self):
            for key, value in settings.items():
                self.cfg.set(key, value)
            self.cfg.set("worker_class", worker_class)

        def load(self):
            return create_app(cfg)

    FlaskApplication().run()
