"""Helpers of check.py for the server limits it checks itself (the timeouts
over TLS, slow requests, PROTOBENCH_MAX_STREAMS, the configuration errors,
the Flask variant; the cross-stack probe, contract/tests/probe.py, owns the
rest). Every wait is bounded."""

from __future__ import annotations

import os
import re
import socket
import ssl
import subprocess
import threading
import time

import h2.config
import h2.connection
import h2.events
import h2.settings

# Every timer test runs with both timeouts at this value.
TIMEOUT_S = 2.0
SLACK_S = 2.5  # closed within TIMEOUT_S + SLACK_S
EARLY_S = 1.0  # and not before this: it is the timeout, not some other close

# Text that would name our code or a library's instead of the problem.
INTERNALS = re.compile(
    r"Traceback|File \"|\.py\b|lxml|etree|spyne|pydantic|starlette|fastapi|werkzeug|flask|gunicorn|"
    r"grpc\._|_cython|\b[A-Z][A-Za-z]*(Error|Exception)\b|\w+\(\)|<string>",
)


def internals_in(text: str) -> str | None:
    m = INTERNALS.search(text)
    return m.group(0) if m else None


# ---------------------------------------------------------------- raw sockets

def tls_client_ctx(cafile: str, alpn: list[str]) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.check_hostname = False
    ctx.set_alpn_protocols(alpn)
    return ctx


def connect(addr, ctx: ssl.SSLContext | None = None, timeout: float = 10.0):
    s = socket.create_connection(addr, timeout=timeout)
    if ctx is not None:
        s = ctx.wrap_socket(s, server_hostname="localhost")
    return s


def wait_closed(s: socket.socket, limit: float) -> tuple[float | None, bytes]:
    """Reads until the peer closes; returns (seconds until then or None if it
    did not within `limit`, what was read)."""
    t0 = time.monotonic()
    got = b""
    try:
        while True:
            left = limit - (time.monotonic() - t0)
            if left <= 0:
                return None, got
            s.settimeout(left)
            d = s.recv(65536)
            if not d:
                return time.monotonic() - t0, got
            got += d
    except (socket.timeout, TimeoutError):
        return None, got
    except (ConnectionResetError, BrokenPipeError, ssl.SSLError, OSError):
        return time.monotonic() - t0, got
    finally:
        s.close()


def closed_in_time(elapsed: float | None, timeout: float = TIMEOUT_S) -> bool:
    return elapsed is not None and EARLY_S <= elapsed <= timeout + SLACK_S


def h2_preface() -> tuple[h2.connection.H2Connection, bytes]:
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
    c.initiate_connection()
    return c, c.data_to_send()


def h2_exchange(s: socket.socket, c: h2.connection.H2Connection, headers, body: bytes | None,
                limit: float = 10.0) -> dict:
    """Sends one request on stream 1.. and reads until the stream ends.
    Returns {'status', 'headers', 'data', 'trailers', 'settings', 'reset'}."""
    sid = c.get_next_available_stream_id()
    c.send_headers(sid, headers, end_stream=body is None)
    if body is not None:
        c.send_data(sid, body, end_stream=True)
    s.sendall(c.data_to_send())
    out = {"headers": {}, "data": b"", "trailers": {}, "settings": {}, "reset": None}
    deadline = time.monotonic() + limit
    done = False
    while not done and time.monotonic() < deadline:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            d = s.recv(65536)
        except (socket.timeout, TimeoutError):
            break
        if not d:
            break
        for ev in c.receive_data(d):
            if isinstance(ev, h2.events.RemoteSettingsChanged):
                out["settings"].update({int(k): v.new_value for k, v in ev.changed_settings.items()})
            elif getattr(ev, "stream_id", None) != sid:
                continue
            elif isinstance(ev, h2.events.ResponseReceived):
                out["headers"] = {k.decode(): v.decode() for k, v in ev.headers}
            elif isinstance(ev, h2.events.DataReceived):
                out["data"] += ev.data
                c.acknowledge_received_data(ev.flow_controlled_length, sid)
            elif isinstance(ev, h2.events.TrailersReceived):
                out["trailers"] = {k.decode(): v.decode() for k, v in ev.headers}
            elif isinstance(ev, h2.events.StreamReset):
                out["reset"] = ev.error_code
                done = True
            if isinstance(ev, h2.events.StreamEnded):
                done = True
        s.sendall(c.data_to_send())
    out["status"] = out["headers"].get(":status")
    return out


def h2_settings(addr, ctx=None) -> dict:
    """The server's SETTINGS (after the preface)."""
    s = connect(addr, ctx)
    try:
        c, preface = h2_preface()
        s.sendall(preface)
        settings = {}
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not settings:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            d = s.recv(65536)
            if not d:
                break
            for ev in c.receive_data(d):
                if isinstance(ev, h2.events.RemoteSettingsChanged):
                    settings.update({int(k): v.new_value for k, v in ev.changed_settings.items()})
        return settings
    finally:
        s.close()


def grpc_frame(*messages: bytes) -> bytes:
    return b"".join(b"\x00" + len(m).to_bytes(4, "big") + m for m in messages)


def grpc_headers(path: str, content_type: str | None, scheme="http"):
    hdrs = [(":method", "POST"), (":scheme", scheme), (":path", path), (":authority", "localhost"),
            ("te", "trailers")]
    if content_type is not None:
        hdrs.append(("content-type", content_type))
    return hdrs


# ---------------------------------------------------------------- process facts

def children(pid: int) -> list[int]:
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def run_config_error(python: str, cwd, env_extra: dict, timeout: float = 30) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROTOBENCH_")}
    env["PROTOBENCH_REST_ADDR"] = "127.0.0.1:0"
    env.update(env_extra)
    res = subprocess.run([python, "-m", "pbserver"], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=timeout, stdin=subprocess.DEVNULL)
    return res.returncode, res.stderr + res.stdout


class Dribbler:
    """Sends `data` one byte every `every` seconds on a thread, so that an
    inactivity timeout never fires while a total one does."""

    def __init__(self, s: socket.socket, data: bytes, every: float = 0.4):
        self.s, self.data, self.every = s, data, every
        self.stop = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        for i in range(len(self.data)):
            if self.stop.wait(self.every):
                return
            try:
                self.s.sendall(self.data[i:i + 1])
            except OSError:
                return

    def close(self):
        self.stop.set()
        self.t.join(5)
