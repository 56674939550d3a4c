"""One worker process: serves one protocol on a listening socket it inherited
from the supervisor (rest, rest-h2, soap) or on a SO_REUSEPORT port (grpc),
and reports to the supervisor once it accepts connections."""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import signal
import sys

from .config import Config

PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except Exception:
        pass
    if os.getppid() != parent_pid:
        sys.exit(0)


def worker_main(proto: str, index: int, cfg: Config, endpoint, ready, parent_pid: int) -> None:
    # Own process group: a terminal's Ctrl-C reaches only the supervisor, which
    # then stops the workers with one SIGTERM each.
    os.setpgrp()
    _die_with_parent(parent_pid)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    def on_ready():
        ready.put((proto, index, None))

    try:
        if proto == "rest" and cfg.rest_impl == "flask":
            from . import flask_app
            flask_app.run_gunicorn(cfg, endpoint, ready, index)
        elif proto == "rest":
            from . import rest
            _run_uvicorn(rest.create_app(cfg), cfg, endpoint, on_ready, alpn="http/1.1",
                         timeout_body=(b"application/json", rest.REQUEST_TIMEOUT_BODY), websocket=True)
        elif proto == "soap":
            from . import soap
            _run_uvicorn(soap.create_app(cfg), cfg, endpoint, on_ready, alpn="http/1.1",
                         timeout_body=(b"text/plain; charset=utf-8", b"request timeout"))
        elif proto in ("graphql", "graphql-get"):
            from . import graphql_app, rest
            _run_uvicorn(graphql_app.create_app(cfg, get=proto == "graphql-get"), cfg, endpoint, on_ready, alpn="http/1.1",
                         timeout_body=(b"application/json", rest.REQUEST_TIMEOUT_BODY))
        elif proto == "rest-h2":
            from . import rest
            import uvloop
            uvloop.run(_run_hypercorn(rest.create_app(cfg), cfg, endpoint, on_ready))
        elif proto == "grpc" and cfg.grpc_impl == "sync":
            _run_grpc_sync(cfg, endpoint, on_ready)
        elif proto == "grpc":
            asyncio.run(_run_grpc(cfg, endpoint, on_ready))
        else:
            raise ValueError(f"unknown protocol {proto}")
    except BaseException as e:  # report start-up failures to the supervisor
        if not isinstance(e, SystemExit):
            ready.put((proto, index, f"{type(e).__name__}: {e}"))
            raise
        raise


# ---------------------------------------------------------------- uvicorn

def _run_uvicorn(app, cfg: Config, sock, on_ready, alpn: str, timeout_body, websocket: bool = False) -> None:
    """uvicorn on `sock`; with `websocket`, WebSocket upgrades are served by
    uvicorn's sans-I/O `websockets` protocol, read one frame at a time
    (ws_protocol.py), with messages and frames up to
    PROTOBENCH_MAX_REQUEST_BYTES (larger ones are closed with 1009)."""
    import uvicorn

    from .http1 import loop_factory, timed_protocol
    from .ws_protocol import OneFrameAtATime

    class Server(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets=sockets)
            if not self.should_exit:
                on_ready()

    config = uvicorn.Config(
        app,
        loop="none",  # the uvloop loop below (uvloop + a TLS handshake timeout)
        http=timed_protocol(cfg.read_timeout, *timeout_body),  # httptools + read/idle timers
        timeout_keep_alive=cfg.idle_timeout,
        ws=OneFrameAtATime if websocket else "none",
        ws_max_size=cfg.max_request_bytes,
        lifespan="off",
        access_log=False,
        log_level="warning",
        server_header=False,
        timeout_graceful_shutdown=10,
        ssl_certfile=cfg.tls_cert,
        ssl_keyfile=cfg.tls_key,
    )
    config.load()
    if websocket:
        logging.getLogger("uvicorn.error").addFilter(_DeniedUpgradeFilter())
    if config.ssl is not None:
        config.ssl.set_alpn_protocols([alpn])
    # uvicorn re-raises the signal that stopped it once it has drained; a no-op
    # handler keeps that from killing the worker with the signal's status.
    signal.signal(signal.SIGTERM, lambda *_: None)
    signal.signal(signal.SIGINT, lambda *_: None)
    with asyncio.Runner(loop_factory=loop_factory(cfg.idle_timeout)) as runner:
        runner.run(Server(config).serve(sockets=[sock]))


class _DeniedUpgradeFilter(logging.Filter):
    """uvicorn logs "ASGI callable returned without completing handshake"
    after an upgrade refused with an HTTP response (the ASGI
    websocket.http.response extension, which it implements): here that is the
    injected failure's 500, meant, and not worth a line on stderr per call."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("ASGI callable returned without completing handshake")


# ---------------------------------------------------------------- hypercorn

def _hypercorn_connection_fixes() -> None:
    """Two gaps of hypercorn 0.18's connection handling, closed by a
    ProtocolWrapper subclass (the object hypercorn's TCPServer feeds every
    event to):

    - Every clear-text connection starts as HTTP/1.1; the h2c preface
      ("PRI * HTTP/2.0") counts as a request there, which stops the idle
      timer, and the HTTP/2 protocol that takes over restarts it only when a
      stream ends. A connection that sends the preface and then nothing would
      never be closed. The timer is restarted on that switch when no stream is
      open, as hypercorn does after every stream.
    - When the client closes its side (EOF) while no stream is open, hypercorn
      does not close its own: the socket stays in CLOSE-WAIT until the idle
      timer fires, holding a descriptor for PROTOBENCH_IDLE_TIMEOUT. It is
      closed at once (streams in flight are already cancelled by hypercorn on
      EOF, so nothing could still be answered on it).
    """
    from hypercorn.asyncio import tcp_server
    from hypercorn.events import Closed, Updated
    from hypercorn.protocol import H2Protocol, H11Protocol, ProtocolWrapper

    class FixedProtocolWrapper(ProtocolWrapper):
        async def handle(self, event):
            was_h11 = isinstance(self.protocol, H11Protocol)
            result = await super().handle(event)
            if isinstance(event, Closed):
                await self.send(Closed())
            elif was_h11 and isinstance(self.protocol, H2Protocol) and self.protocol.idle:
                await self.send(Updated(idle=True))
            return result

    tcp_server.ProtocolWrapper = FixedProtocolWrapper


async def _run_hypercorn(app, cfg: Config, sock, on_ready) -> None:
    from hypercorn.asyncio import serve
    from hypercorn.config import Config as HConfig

    _hypercorn_connection_fixes()

    hc = HConfig()
    hc.bind = [f"fd://{sock.fileno()}"]
    hc.accesslog = None
    hc.loglevel = "WARNING"
    hc.graceful_timeout = 10
    hc.include_server_header = False
    # No open stream for this long (including a connection that sent nothing
    # or only the preface): closed. hypercorn's read_timeout is left unset: it
    # bounds every read, so it would also cut a connection whose streams are
    # still being answered.
    hc.keep_alive_timeout = cfg.idle_timeout
    hc.ssl_handshake_timeout = cfg.idle_timeout
    hc.h2_max_concurrent_streams = cfg.max_streams
    hc.websocket_max_message_size = cfg.max_request_bytes
    if cfg.tls:
        hc.certfile = cfg.tls_cert
        hc.keyfile = cfg.tls_key
        hc.alpn_protocols = ["h2"]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    async def shutdown_trigger():
        # hypercorn awaits this once its servers are accepting connections
        on_ready()
        await stop.wait()

    await serve(app, hc, shutdown_trigger=shutdown_trigger)


# ---------------------------------------------------------------- grpc

def _bind_grpc(server, cfg: Config, endpoint) -> None:
    """The SO_REUSEPORT port the supervisor reserved, clear or TLS (the same
    calls on grpc.aio's server and the thread-pool one)."""
    import grpc

    host, port = endpoint
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if cfg.tls:
        with open(cfg.tls_key, "rb") as f:
            key = f.read()
        with open(cfg.tls_cert, "rb") as f:
            cert = f.read()
        bound = server.add_secure_port(target, grpc.ssl_server_credentials([(key, cert)]))
    else:
        bound = server.add_insecure_port(target)
    if bound != port:
        raise OSError(f"gRPC could not bind {target}")


async def _run_grpc(cfg: Config, endpoint, on_ready) -> None:
    from .grpc_server import create_server

    server = create_server(cfg)
    _bind_grpc(server, cfg, endpoint)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    on_ready()
    await stop.wait()
    await server.stop(grace=10)


def _run_grpc_sync(cfg: Config, endpoint, on_ready) -> None:
    """grpcio's thread-pool server: C-core's threads poll the sockets, each
    call's handler runs on one of the executor's threads."""
    import threading

    from .grpc_server import create_sync_server

    server = create_sync_server(cfg)
    _bind_grpc(server, cfg, endpoint)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server.start()
    on_ready()
    # The signal handler runs in this (the main) thread; a bounded wait makes
    # sure it gets to run and the loop sees the event.
    while not stop.wait(1.0):
        pass
    server.stop(grace=10).wait()
