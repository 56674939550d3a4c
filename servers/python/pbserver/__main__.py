"""The supervisor: `python -m pbserver`.

Binds every configured listener (so port 0 resolves once), starts
PROTOBENCH_WORKERS worker processes per protocol (PROTOBENCH_PYTHON_REST_WORKERS
for `rest` when set; multiprocessing "spawn", as uvicorn --workers does), prints one `listening ...` line per protocol once all
its workers accept connections, and on SIGTERM/SIGINT stops the workers
(each drains for up to 10 s) and exits 0. With a GraphQL listener it also
creates the persisted queries' file the GraphQL workers share (apq.py), in a
temporary directory removed at exit.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import queue
import shutil
import signal
import socket
import sys
import tempfile
import time

from .config import PROTOCOLS, Config, ConfigError, load

BACKLOG = 2048
STOP_TIMEOUT_S = 12.0
START_TIMEOUT_S = 120.0


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(BACKLOG)
    sock.set_inheritable(True)
    return sock


def _reserve_reuseport(host: str, port: int) -> socket.socket:
    """Binds (without listening) with SO_REUSEPORT so the gRPC workers can all
    bind the same port, which stays reserved for them."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


def _addr(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Supervisor:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.ctx = multiprocessing.get_context("spawn")
        self.ready = self.ctx.Queue()
        self.procs: list[tuple[str, multiprocessing.Process]] = []
        self.sockets: dict[str, socket.socket] = {}
        self.stopping = False
        self.apq_dir: str | None = None

    def _on_signal(self, signum, frame):
        self.stopping = True

    def start(self) -> None:
        from .worker import worker_main

        if "graphql" in self.cfg.addrs or "graphql-get" in self.cfg.addrs:
            from . import apq

            self.apq_dir = tempfile.mkdtemp(prefix="pbserver-apq-")
            path = os.path.join(self.apq_dir, "persisted-queries.sqlite3")
            apq.create_shared(path)
            self.cfg = dataclasses.replace(self.cfg, apq_store=path)
        for proto in PROTOCOLS:
            if proto not in self.cfg.addrs:
                continue
            host, port = self.cfg.addrs[proto]
            if proto == "grpc":
                sock = _reserve_reuseport(host, port)
                endpoint = (host, sock.getsockname()[1])
            else:
                sock = _listen(host, port)
                endpoint = sock
            self.sockets[proto] = sock
            # Flask: one gunicorn arbiter, which forks the workers itself
            procs = 1 if proto == "rest" and self.cfg.rest_impl == "flask" else self.cfg.processes(proto)
            for i in range(procs):
                p = self.ctx.Process(
                    target=worker_main,
                    args=(proto, i, self.cfg, endpoint, self.ready, os.getpid()),
                    name=f"pbserver-{proto}-{i}",
                )
                p.start()
                self.procs.append((proto, p))

    def wait_ready(self) -> bool:
        pending = {proto: self.cfg.processes(proto) for proto in self.sockets}
        deadline = time.monotonic() + START_TIMEOUT_S
        while pending:
            if self.stopping or time.monotonic() > deadline:
                return False
            try:
                proto, index, error = self.ready.get(timeout=0.2)
            except queue.Empty:
                if any(p.exitcode is not None for _, p in self.procs):
                    print("pbserver: a worker exited during start-up", file=sys.stderr)
                    return False
                continue
            if error is not None:
                print(f"pbserver: {proto} worker {index} failed to start: {error}", file=sys.stderr)
                return False
            pending[proto] -= 1
            if pending[proto] == 0:
                del pending[proto]
                tls = "true" if self.cfg.tls else "false"
                print(f"listening protocol={proto} addr={_addr(self.sockets[proto])} tls={tls}", flush=True)
        return True

    def run(self) -> int:
        while not self.stopping:
            time.sleep(0.2)
            for proto, p in self.procs:
                if p.exitcode is not None and not self.stopping:
                    print(f"pbserver: {p.name} exited unexpectedly ({p.exitcode})", file=sys.stderr)
                    return 1
        return 0

    def stop(self) -> None:
        for _, p in self.procs:
            if p.exitcode is None and p.pid is not None:
                try:
                    os.kill(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for _, p in self.procs:
            p.join(max(0.0, deadline - time.monotonic()))
        for _, p in self.procs:
            if p.exitcode is None:
                p.kill()
                p.join(1.0)
        for sock in self.sockets.values():
            sock.close()
        if self.apq_dir is not None:
            shutil.rmtree(self.apq_dir, ignore_errors=True)


def main() -> int:
    try:
        cfg = load()
    except ConfigError as e:
        print(f"pbserver: {e}", file=sys.stderr)
        return 2
    if not cfg.addrs:
        print("pbserver: no PROTOBENCH_*_ADDR set; nothing to serve", file=sys.stderr)
        return 2
    sup = Supervisor(cfg)
    signal.signal(signal.SIGTERM, sup._on_signal)
    signal.signal(signal.SIGINT, sup._on_signal)
    rc = 0
    try:
        sup.start()
        if not sup.wait_ready():
            rc = 0 if sup.stopping else 1
        else:
            rc = sup.run()
    except OSError as e:
        print(f"pbserver: {e}", file=sys.stderr)
        rc = 1
    finally:
        sup.stop()
    return rc


if __name__ == "__main__":
    sys.exit(main())
