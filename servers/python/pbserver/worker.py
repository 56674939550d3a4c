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
        if proto == "rest":
            from . import rest
            _run_uvicorn(rest.create_app(cfg), cfg, endpoint, on_ready, alpn="http/1.1")
        elif proto == "soap":
            from . import soap
            _run_uvicorn(soap.create_app(cfg), cfg, endpoint, on_ready, alpn="http/1.1")
        elif proto == "rest-h2":
            from . import rest
            import uvloop
            uvloop.run(_run_hypercorn(rest.create_app(cfg), cfg, endpoint, on_ready))
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

def _run_uvicorn(app, cfg: Config, sock, on_ready, alpn: str) -> None:
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets=sockets)
            if not self.should_exit:
                on_ready()

    config = uvicorn.Config(
        app,
        loop="uvloop",
        http="httptools",
        lifespan="off",
        access_log=False,
        log_level="warning",
        server_header=False,
        timeout_graceful_shutdown=10,
        ssl_certfile=cfg.tls_cert,
        ssl_keyfile=cfg.tls_key,
    )
    config.load()
    if config.ssl is not None:
        config.ssl.set_alpn_protocols([alpn])
    # uvicorn re-raises the signal that stopped it once it has drained; a no-op
    # handler keeps that from killing the worker with the signal's status.
    signal.signal(signal.SIGTERM, lambda *_: None)
    signal.signal(signal.SIGINT, lambda *_: None)
    Server(config).run(sockets=[sock])


# ---------------------------------------------------------------- hypercorn

async def _run_hypercorn(app, cfg: Config, sock, on_ready) -> None:
    from hypercorn.asyncio import serve
    from hypercorn.config import Config as HConfig

    hc = HConfig()
    hc.bind = [f"fd://{sock.fileno()}"]
    hc.accesslog = None
    hc.loglevel = "WARNING"
    hc.graceful_timeout = 10
    hc.include_server_header = False
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

async def _run_grpc(cfg: Config, endpoint, on_ready) -> None:
    import grpc

    from .grpc_server import create_server

    host, port = endpoint
    server = create_server(cfg)
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
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    on_ready()
    await stop.wait()
    await server.stop(grace=10)
