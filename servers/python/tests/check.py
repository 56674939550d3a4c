"""Client-side checks for the Python protobench server (run by ../test.sh).

Starts the server (python -m pbserver) on port 0, clear text and TLS, and
checks what only this stack can get wrong: what lxml/spyne make of bad XML,
edge values FastAPI must accept, error texts for inputs the probe does not
send, gRPC reflection (plus grpcurl when it is on PATH), the failure draw with
two worker processes, SIGTERM, this stack's own variables, the streaming
operations' bad input, limits and timeouts (stream_checks.py), the graphql
listener's bad bodies, documents and limits (graphql_checks.py), the
graphql-get listener's persisted queries (graphql_get_checks.py), the Flask
variant (its answers byte for byte as FastAPI's, gunicorn's process model,
the draw, service time and timeouts) and Berg's variants (uvicorn-workers,
grpcio-sync with its draw, service time, idle timeouts and stream limit).
Every workload on every protocol and variant, clear and TLS, is `protobench
verify`'s with zeep, ghz and schemathesis (scripts/verify-servers.sh); bad
HTTP/JSON/XML/gRPC input, the contract's error statuses, HTTP/2 floods and
stream limit, idle, stalled and trickled connections, the request size
limit, the SOAP element bound, descriptor exhaustion, TLS (ALPN, handshake
and idle timeouts), the failure draw with one worker, the service time and
draining are the cross-stack probe's (contract/tests/probe.sh python).
Prints `N passed, M failed`; exits non-zero on any failure.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import pathlib
import queue
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent.parent
REPO = HERE.parent.parent
CONTRACT = REPO / "contract"
VECTORS = CONTRACT / "vectors"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "tests"))

import grpc  # noqa: E402
import h2.settings  # noqa: E402
from lxml import etree  # noqa: E402

import limits as lim  # noqa: E402
import pbserver  # noqa: E402,F401  (puts gen/ on sys.path)
from pbserver import protos  # noqa: E402
from pbserver.common import splitmix64  # noqa: E402

NS = "urn:protobench:v1"
SOAP_ENV = "http://schemas.xmlsoap.org/soap/envelope/"
START_TIMEOUT = 120
CALL_TIMEOUT = 60

PASSED = 0
FAILED = 0
VERBOSE = False
ONLY: set[str] | None = None  # --only: the phases to run


def check(name: str, ok: bool, detail: str = "") -> bool:
    global PASSED, FAILED
    if ok:
        PASSED += 1
        if VERBOSE:
            print(f"ok   {name}")
    else:
        FAILED += 1
        print(f"FAIL {name}{': ' + detail if detail else ''}", flush=True)
    return ok


def guard(name: str, fn, *args, **kwargs):
    """Runs one check function; an exception is one failure."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001
        check(name, False, f"{type(e).__name__}: {str(e)[:300]}")
        return None


# ---------------------------------------------------------------- server

class Server:
    def __init__(self, env_extra: dict, protocols=("rest", "rest-h2", "grpc", "soap"), workers=2):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROTOBENCH_")}
        for p in protocols:
            env[f"PROTOBENCH_{p.upper().replace('-', '_')}_ADDR"] = "127.0.0.1:0"
        env["PROTOBENCH_WORKERS"] = str(workers)
        env.update(env_extra)
        self.tls = "PROTOBENCH_TLS_CERT" in env
        self.proc = subprocess.Popen(
            [str(HERE / ".venv" / "bin" / "python"), "-m", "pbserver"],
            cwd=HERE, env=env, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        )
        self.lines: queue.Queue = queue.Queue()
        self.extra_stdout: list[str] = []
        self.expected_lines = len(protocols)
        threading.Thread(target=self._read, daemon=True).start()
        self.addrs: dict[str, tuple[str, int]] = {}
        deadline = time.monotonic() + START_TIMEOUT
        while len(self.addrs) < len(protocols):
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                self.kill()
                raise RuntimeError(f"server did not print all listening lines (got {sorted(self.addrs)})")
            try:
                line = self.lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            m = re.fullmatch(r"listening protocol=(\S+) addr=(\S+):(\d+) tls=(true|false)", line.strip())
            if not m or m.group(4) != ("true" if self.tls else "false") or m.group(1) in self.addrs:
                self.kill()
                raise RuntimeError(f"unexpected stdout line {line!r}")
            self.addrs[m.group(1)] = (m.group(2), int(m.group(3)))

    def _read(self):
        seen = 0
        for line in self.proc.stdout:
            if seen >= self.expected_lines:
                self.extra_stdout.append(line)  # nothing may follow the listening lines
            seen += 1
            self.lines.put(line)

    def addr(self, proto: str) -> str:
        h, p = self.addrs[proto]
        return f"{h}:{p}"

    def stop(self) -> int | None:
        """SIGTERM; returns the exit status (None if it had to be killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


# ---------------------------------------------------------------- clients

class Clients:
    def __init__(self, server: Server, cafile: str | None):
        self.server = server
        self.cafile = cafile
        self.ssl_ctx = None
        if server.tls:
            self.ssl_ctx = ssl.create_default_context(cafile=cafile)
            self.ssl_ctx.check_hostname = False
            self.ssl_ctx.set_alpn_protocols(["http/1.1"])
        self._grpc = None

    # --- HTTP/1.1 (rest, soap)
    def http(self, proto, method, path, body=None, headers=None):
        host, port = self.server.addrs[proto]
        if self.server.tls:
            conn = http.client.HTTPSConnection(host, port, timeout=CALL_TIMEOUT, context=self.ssl_ctx)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=CALL_TIMEOUT)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    # --- gRPC (raw bytes)
    def channel(self):
        if self._grpc is None:
            target = self.server.addr("grpc")
            opts = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]
            if self.server.tls:
                creds = grpc.ssl_channel_credentials(root_certificates=pathlib.Path(self.cafile).read_bytes())
                opts.append(("grpc.ssl_target_name_override", "localhost"))
                self._grpc = grpc.secure_channel(target, creds, options=opts)
            else:
                self._grpc = grpc.insecure_channel(target, options=opts)
        return self._grpc

    def grpc_raw(self, path: str, payload: bytes):
        call = self.channel().unary_unary(path, request_serializer=None, response_deserializer=None)
        return call(payload, timeout=CALL_TIMEOUT)

    def close(self):
        if self._grpc is not None:
            self._grpc.close()
            self._grpc = None


# ---------------------------------------------------------------- decoding

SAFE_PARSER = dict(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True)


def soap_payload(body: bytes):
    root = etree.fromstring(body, etree.XMLParser(**SAFE_PARSER))
    if root.tag != f"{{{SOAP_ENV}}}Envelope":
        raise ValueError(f"root is {root.tag}")
    bodies = [c for c in root if c.tag == f"{{{SOAP_ENV}}}Body"]
    if len(bodies) != 1:
        raise ValueError("no single soap Body")
    elems = [c for c in bodies[0] if isinstance(c.tag, str)]
    if len(elems) != 1:
        raise ValueError(f"Body holds {len(elems)} elements")
    return elems[0]


def soap_fault(body: bytes):
    p = soap_payload(body)
    if p.tag != f"{{{SOAP_ENV}}}Fault":
        return None
    code = (p.findtext("faultcode") or "").strip()
    # resolve the QName prefix
    prefix, _, local = code.rpartition(":")
    ns = p.nsmap.get(prefix or None)
    return ns, local, (p.findtext("faultstring") or "").strip()


# ---------------------------------------------------------------- vectors (for the Flask comparison)

def load_workloads():
    return json.loads((CONTRACT / "workloads.json").read_text())


def vec(w, name) -> bytes:
    return (VECTORS / w["name"] / name).read_bytes()


# ---------------------------------------------------------------- error checks

def rest_error(c: Clients, name, status_want, method, path, body=None, headers=None, allow=None):
    status, hdrs, out = c.http("rest", method, path, body, headers)
    check(f"{name} status {status_want}", status == status_want, f"got {status}: {out[:200]!r}")
    try:
        j = json.loads(out)
        check(f"{name} error body", isinstance(j, dict) and j.get("code") == status_want
              and isinstance(j.get("message"), str) and set(j) == {"code", "message"}, repr(out[:200]))
    except ValueError:
        check(f"{name} error body", False, f"not JSON: {out[:200]!r}")
    if allow is not None:
        check(f"{name} Allow header", allow in hdrs.get("allow", ""), hdrs.get("allow", "<none>"))


def check_rest_accepts(c: Clients, tag: str):
    """Edge values that must be accepted (the probe's errors phase checks the refusals; the Flask
    variant answers those byte for byte as FastAPI does, check_flask_same_as_fastapi)."""
    j = {"Content-Type": "application/json"}
    # float: 3.4028235e38 (the largest float32's shortest form) rounds to it; 3.4028236e38 overflows.
    status, _, out = c.http("rest", "POST", "/v1/greeter/hello", b'{"request": {"f": 3.4028235e38}}', j)
    check(f"{tag} rest largest float32 accepted", status == 200 and json.loads(out)["response"]["f"] == 3.4028235e38,
          f"got {status}: {out[:200]!r}")
    # null is absent; a charset parameter is allowed
    status, _, out = c.http("rest", "POST", "/v1/echo", b'{"payload": null}',
                            {"Content-Type": "application/json; charset=utf-8"})
    check(f"{tag} rest null is absent", status == 200 and json.loads(out) == {"payload": ""}, repr(out[:100]))


def soap_post(c: Clients, body: bytes, ctype="text/xml; charset=utf-8", path="/soap", method="POST"):
    return c.http("soap", method, path, body, {"Content-Type": ctype} if body is not None else {})


def expect_fault(name, status, out, code_local, text=None):
    check(f"{name} status 500", status == 500, f"got {status}: {out[:200]!r}")
    try:
        f = soap_fault(out)
    except Exception as e:  # noqa: BLE001
        check(f"{name} fault", False, f"not a SOAP envelope: {e}")
        return None
    if not check(f"{name} fault", f is not None and f[0] == SOAP_ENV and f[1] == code_local,
                 repr(f)):
        return None
    if text is not None:
        check(f"{name} faultstring", f[2] == text, repr(f[2]))
    return f


def envelope(inner: str) -> bytes:
    return (f'<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="{SOAP_ENV}">'
            f"<soap:Body>{inner}</soap:Body></soap:Envelope>").encode()


def check_soap_errors(c: Clients, tag: str):
    """What lxml/spyne make of bad XML beyond the probe's faults: each
    malformed document's faultstring names its own problem (not an earlier
    parse's), a DOCTYPE hidden in UTF-16 is refused (the WSDL's address is
    the probe's in clear text and zeep's, which calls it, with TLS)."""
    status, _, out = soap_post(c, envelope(f'<EchoRequest xmlns="{NS}"><payload>x</wrong></EchoRequest>'))
    f = expect_fault(f"{tag} soap mismatched tags", status, out, "Client")
    check(f"{tag} soap mismatched tags named", f is not None and "mismatch" in f[2] and "wrong" in f[2], repr(f))
    status, _, out = soap_post(c, envelope(f'<EchoRequest xmlns="{NS}"><payload>BAD</payload></EchoRequest>')
                               .replace(b"BAD", bytes([0xFF, 0xFE])))
    f = expect_fault(f"{tag} soap invalid UTF-8", status, out, "Client")
    check(f"{tag} soap invalid UTF-8 named", f is not None and "encoding" in f[2] and "mismatch" not in f[2],
          repr(f))
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as tf:
        tf.write("SECRET-FILE-CONTENT")
    try:
        external = (f'<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file://{tf.name}">]>'
                    f'<soap:Envelope xmlns:soap="{SOAP_ENV}"><soap:Body><EchoRequest xmlns="{NS}">'
                    f"<payload>&xxe;</payload></EchoRequest></soap:Body></soap:Envelope>").encode("utf-16")
        status, _, out = soap_post(c, external)
        check(f"{tag} soap XXE utf-16 refused", status == 500 and b"SECRET-FILE-CONTENT" not in out,
              f"{status} {out[:200]!r}")
    finally:
        os.unlink(tf.name)


def grpc_code(fn):
    try:
        fn()
    except grpc.RpcError as e:
        return e.code(), e.details()
    return grpc.StatusCode.OK, ""


def check_reflection(c: Clients, tag: str):
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    stub = reflection_pb2_grpc.ServerReflectionStub(c.channel())
    resp = list(stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                          timeout=CALL_TIMEOUT))
    names = {s.name for s in resp[0].list_services_response.service}
    check(f"{tag} grpc reflection lists services",
          {"protobench.v1.Bench", "helloworld.Greeter"} <= names, repr(names))
    grpcurl = shutil.which("grpcurl")
    if grpcurl and not c.server.tls:
        res = subprocess.run([grpcurl, "-plaintext", "-d", "{}", c.server.addr("grpc"),
                              "protobench.v1.Bench/GetInteger"], capture_output=True, text=True, timeout=60)
        check(f"{tag} grpcurl GetInteger", res.returncode == 0 and "2147483647" in res.stdout,
              res.stderr.strip()[:200])
    elif not grpcurl and tag == "clear":
        print("note: grpcurl not on PATH; reflection checked with grpcio-reflection only")


# ---------------------------------------------------------------- behaviour checks

def expected_failures(rate: float, seed: int, n: int) -> int:
    return sum(1 for k in range(n) if splitmix64((seed + k) & ((1 << 64) - 1)) / float(1 << 64) < rate)


def check_failure_draw(server: Server, c: Clients, rate: float, seed: int, n: int, exact: bool, tag: str,
                       protocols=("rest", "grpc", "soap")):
    pb = protos.protobench_pb2
    want = expected_failures(rate, seed, n)

    def count(proto):
        fails, others = 0, 0
        if proto == "rest":
            host, port = server.addrs["rest"]
            conn = http.client.HTTPConnection(host, port, timeout=CALL_TIMEOUT)
            for _ in range(n):
                conn.request("GET", "/v1/tasks/integer")
                r = conn.getresponse()
                body = r.read()
                if r.status == 500 and json.loads(body) == {"code": 500, "message": "injected failure"}:
                    fails += 1
                elif r.status != 200:
                    others += 1
            conn.close()
        elif proto == "grpc":
            for _ in range(n):
                code, details = grpc_code(lambda: c.grpc_raw("/protobench.v1.Bench/GetInteger", b""))
                if code == grpc.StatusCode.UNAVAILABLE and details == "injected failure":
                    fails += 1
                elif code != grpc.StatusCode.OK:
                    others += 1
        elif proto == "soap":
            host, port = server.addrs["soap"]
            conn = http.client.HTTPConnection(host, port, timeout=CALL_TIMEOUT)
            body = envelope(f'<GetIntegerRequest xmlns="{NS}"/>')
            for _ in range(n):
                conn.request("POST", "/soap", body, {"Content-Type": "text/xml; charset=utf-8"})
                r = conn.getresponse()
                out = r.read()
                if r.status == 500:
                    f = soap_fault(out)
                    if f and f[1] == "Server" and f[2] == "injected failure":
                        fails += 1
                        continue
                if r.status != 200:
                    others += 1
            conn.close()
        return fails, others

    for proto in protocols:
        fails, others = count(proto)
        check(f"{tag} {proto} no other errors", others == 0, f"{others} unexpected errors")
        if exact:
            check(f"{tag} {proto} failures == splitmix64 count {want}", fails == want, f"got {fails}")
        else:
            check(f"{tag} {proto} failures {fails} within 200+-40", abs(fails - n * rate) <= 40, f"got {fails}")


def stop_check(server: Server, tag: str):
    t0 = time.perf_counter()
    rc = server.stop()
    dt = time.perf_counter() - t0
    check(f"{tag} SIGTERM exits 0", rc == 0, f"exit status {rc} after {dt:.1f} s")
    if dt > 5:
        print(f"note: {tag}: the server took {dt:.1f} s to stop", flush=True)
    check(f"{tag} nothing else on stdout", not server.extra_stdout, repr(server.extra_stdout[:3]))


# ---------------------------------------------------------------- limits (issue 14)

def _h1_ctx(c: Clients):
    return lim.tls_client_ctx(c.cafile, ["http/1.1"]) if c.server.tls else None


def _h2_ctx(c: Clients):
    return lim.tls_client_ctx(c.cafile, ["h2"]) if c.server.tls else None


def _scheme(c: Clients) -> str:
    return "https" if c.server.tls else "http"


def check_idle_timeouts(server: Server, c: Clients, tag: str):
    """PROTOBENCH_IDLE_TIMEOUT=2s on grpcio-sync's grpc listener (the probe checks
    the default server's): silent connections, HTTP/2 preface only and after a
    finished stream, TLS handshakes that never finish."""
    wait = lim.TIMEOUT_S + lim.SLACK_S + 1
    results = {}

    def run(name, fn):
        # the waits are independent: run them side by side (bounded by `wait`)
        t = threading.Thread(target=lambda: results.__setitem__(name, guard(name, fn)), daemon=True)
        t.start()
        return t

    def silent(proto):
        return lim.wait_closed(lim.connect(server.addrs[proto], _h2_ctx(c)), wait)[0]

    def stalled_handshake(proto):
        s = lim.connect(server.addrs[proto])
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # the start of a ClientHello
        return lim.wait_closed(s, wait)[0]

    def preface_only(proto):
        s = lim.connect(server.addrs[proto], _h2_ctx(c))
        s.sendall(lim.h2_preface()[1])
        return lim.wait_closed(s, wait)[0]

    def after_stream(proto):
        s = lim.connect(server.addrs[proto], _h2_ctx(c))
        conn, preface = lim.h2_preface()
        s.sendall(preface)
        out = lim.h2_exchange(s, conn, lim.grpc_headers("/protobench.v1.Bench/GetInteger", "application/grpc",
                                                        _scheme(c)), lim.grpc_frame(b""))
        if out["status"] != "200":
            raise RuntimeError(f"status {out['status']}")
        return lim.wait_closed(s, wait)[0]

    threads = []
    for proto in server.addrs:
        threads.append(run(f"{tag} {proto} silent connection", lambda p=proto: silent(p)))
        if server.tls:
            threads.append(run(f"{tag} {proto} stalled TLS handshake", lambda p=proto: stalled_handshake(p)))
        threads.append(run(f"{tag} {proto} HTTP/2 preface only", lambda p=proto: preface_only(p)))
        threads.append(run(f"{tag} {proto} HTTP/2 idle after a finished stream", lambda p=proto: after_stream(p)))
    for t in threads:
        t.join(wait + 15)
    for name, elapsed in sorted(results.items()):
        if elapsed is not None or name in results:
            check(f"{name} closed {lim.EARLY_S:.0f}..{lim.TIMEOUT_S + lim.SLACK_S:.1f} s after it went idle",
                  lim.closed_in_time(elapsed), f"closed after {elapsed} s (None = still open after {wait} s)")


def check_max_streams(server: Server, c: Clients, tag: str, want: int):
    for proto in ("rest-h2", "grpc"):
        if proto in server.addrs:
            got = lim.h2_settings(server.addrs[proto], _h2_ctx(c)).get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS)
            check(f"{tag} {proto} SETTINGS_MAX_CONCURRENT_STREAMS = {want}", got == want, f"got {got}")


def check_config_errors(tag: str):
    py = str(HERE / ".venv" / "bin" / "python")
    # the probe's config phase refuses the other bad values (1.5s is not among them: rust takes it)
    for var, value in (("PROTOBENCH_IDLE_TIMEOUT", "1.5s"), ("PROTOBENCH_PYTHON_REST", "django")):
        rc, out = lim.run_config_error(py, HERE, {var: value})
        check(f"{tag} {var}={value} refused at start", rc != 0 and var in out, f"exit {rc}: {out[-300:]!r}")
    rc, out = lim.run_config_error(py, HERE, {"PROTOBENCH_PYTHON_REST": "django"})
    check(f"{tag} PROTOBENCH_PYTHON_REST error names the accepted values", "fastapi" in out and "flask" in out,
          out[-300:])


def check_error_texts(server: Server, c: Clients, tag: str):
    """Error bodies and faultstrings say what was wrong with the input, never
    our code or a library's: the bad requests the probe does not send (the
    Flask variant answers the probe's ones as FastAPI does, byte for byte)."""
    texts = []
    j = {"Content-Type": "application/json"}
    rest = [("POST", "/v1/echo", b"null", j), ("POST", "/v1/echo", b"\xff\xfe\x00", j),
            ("POST", "/v1/echo", b'{"payload": "\\ud800"}', j), ("POST", "/v1/greeter/hello", b'{"request": {"f": "NaN"}}', j)]
    for method, path, body, headers in rest:
        status, _, out = c.http("rest", method, path, body, headers)
        texts.append((f"rest {method} {path} {body!r:.40}", status, out.decode("utf-8", "replace")))
    if "soap" in server.addrs:
        for body in (b"", envelope("<EchoRequest/>"), f'<soap:Envelope xmlns:soap="{SOAP_ENV}"></soap:Envelope>'.encode(),
                     envelope(f'<SayHelloRequest xmlns="{NS}"><request><d>zz</d></request></SayHelloRequest>')):
            status, _, out = soap_post(c, body)
            try:
                f = soap_fault(out)
                text = f[2] if f else out.decode("utf-8", "replace")
            except Exception:  # noqa: BLE001
                text = out.decode("utf-8", "replace")
            texts.append((f"soap {body[:40]!r}", status, text))
    for name, status, text in texts:
        bad = lim.internals_in(text)
        check(f"{tag} {name}: error text names no internals", bad is None, f"{status} {bad!r} in {text[:300]!r}")
        check(f"{tag} {name}: is an error", status != 200, f"{status}")


# ---------------------------------------------------------------- Flask variant (PROTOBENCH_PYTHON_REST=flask)

REST_ERROR_REQUESTS = (
    ("POST", "/v1/echo", b'{"payload": ', {"Content-Type": "application/json"}),
    ("POST", "/v1/echo", b'{"payload": 5}', {"Content-Type": "application/json"}),
    ("POST", "/v1/echo", b'{"payload": "a", "x": 1}', {"Content-Type": "application/json"}),
    ("POST", "/v1/echo", b"[1]", {"Content-Type": "application/json"}),
    ("POST", "/v1/echo", b"null", {"Content-Type": "application/json"}),
    ("POST", "/v1/echo", b"", {"Content-Type": "application/json"}),
    ("POST", "/v1/echo", b'{"payload": "\\ud800"}', {"Content-Type": "application/json"}),
    ("POST", "/v1/echo", b'{"payload": null}', {"Content-Type": "application/json; charset=utf-8"}),
    ("POST", "/v1/echo", b'{"payload": "a"}', {"Content-Type": "text/plain"}),
    ("POST", "/v1/echo", b'{"payload": "a"}', {}),
    ("POST", "/v1/products/echo", b'{"id": 2147483648}', {"Content-Type": "application/json"}),
    ("POST", "/v1/products/echo", b'{"id": "12", "price": 1.5}', {"Content-Type": "application/json"}),
    ("POST", "/v1/greeter/hello", b'{"request": {"f": 3.4028236e38}}', {"Content-Type": "application/json"}),
    ("POST", "/v1/greeter/hello", b'{"request": {"f": "NaN"}}', {"Content-Type": "application/json"}),
    ("POST", "/v1/greeter/hello", b'{"request": {"c1": {}, "c2": {}}}', {"Content-Type": "application/json"}),
    ("POST", "/v1/tasks/clone", b'{"text": "a", "times": 100001}', {"Content-Type": "application/json"}),
    ("POST", "/v1/tasks/clone", b'{"text": "a", "times": -1}', {"Content-Type": "application/json"}),
    ("GET", "/v1/nope", None, {}),
    ("GET", "/v1/tasks/files/nope", None, {}),
    ("DELETE", "/v1/inventory/s", None, {}),
    ("POST", "/v1/tasks/integer", b"{}", {"Content-Type": "application/json"}),
    ("GET", "/v1/echo", None, {}),
)


def check_flask_same_as_fastapi(flask_c: Clients, fastapi_c: Clients, tag: str):
    """The Flask app answers every workload and every error case with the
    FastAPI app's status, content type and body bytes."""
    for w in load_workloads():
        body = vec(w, "request.json") if w["restMethod"] == "POST" else None
        headers = {"Content-Type": "application/json"} if body is not None else {}
        a = flask_c.http("rest", w["restMethod"], w["restPath"], body, headers)
        b = fastapi_c.http("rest", w["restMethod"], w["restPath"], body, headers)
        check(f"{tag} {w['name']} same status, content type and bytes as FastAPI",
              (a[0], a[1].get("content-type"), a[2]) == (b[0], b[1].get("content-type"), b[2]),
              f"flask {a[0]} {a[1].get('content-type')} {a[2][:120]!r} / fastapi {b[0]} "
              f"{b[1].get('content-type')} {b[2][:120]!r}")
    for method, path, body, headers in REST_ERROR_REQUESTS:
        a = flask_c.http("rest", method, path, body, headers)
        b = fastapi_c.http("rest", method, path, body, headers)
        check(f"{tag} {method} {path} {body!r:.40} same answer as FastAPI", (a[0], a[2]) == (b[0], b[2]),
              f"flask {a[0]} {a[2][:160]!r} / fastapi {b[0]} {b[2][:160]!r}")
        if a[0] == 405:
            check(f"{tag} {method} {path} 405 Allow", "allow" in a[1], repr(a[1]))


def check_flask_process_model(server: Server, workers: int, tag: str):
    """One gunicorn arbiter for rest (a child of the supervisor) forking
    PROTOBENCH_WORKERS sync workers."""
    kids = [p for p in lim.children(server.proc.pid) if "resource_tracker" not in lim.cmdline(p)]
    grand = {p: lim.children(p) for p in kids}
    arbiters = [p for p, g in grand.items() if len(g) == workers]
    check(f"{tag} one gunicorn arbiter with {workers} workers", len(arbiters) == 1,
          repr({p: len(g) for p, g in grand.items()}))


def check_flask_timeouts(server: Server, c: Clients, tag: str):
    """gunicorn sync workers: a silent connection, a TLS handshake that stalls
    and headers or a body trickling in all end when gunicorn's --timeout
    (PROTOBENCH_READ_TIMEOUT) kills the worker; a new one serves on."""
    addr = server.addrs["rest"]
    wait = lim.TIMEOUT_S + lim.SLACK_S + 2
    el, _ = lim.wait_closed(lim.connect(addr, _h1_ctx(c)), wait)
    check(f"{tag} silent connection closed by the worker timeout", lim.closed_in_time(el, lim.TIMEOUT_S + 1),
          f"closed after {el} s")
    if server.tls:
        s = lim.connect(addr)
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
        el, _ = lim.wait_closed(s, wait)
        check(f"{tag} stalled TLS handshake closed by the worker timeout", lim.closed_in_time(el, lim.TIMEOUT_S + 1),
              f"closed after {el} s")
    s = lim.connect(addr, _h1_ctx(c))
    s.sendall(b"POST /v1/echo HTTP/1.1\r\nHost: localhost\r\n")
    d = lim.Dribbler(s, b"X-Slow: " + b"a" * 60)
    try:
        el, _ = lim.wait_closed(s, wait)
    finally:
        d.close()
    check(f"{tag} slow headers closed by the worker timeout", lim.closed_in_time(el, lim.TIMEOUT_S + 1),
          f"closed after {el} s")
    deadline = time.monotonic() + 15
    status = None
    while time.monotonic() < deadline and status != 200:
        try:
            status = c.http("rest", "GET", "/v1/tasks/integer")[0]
        except Exception:  # noqa: BLE001
            time.sleep(0.5)
    check(f"{tag} served again after the timeouts", status == 200, f"status {status}")


def check_flask_accept_backoff(tag: str):
    """EMFILE/ENFILE from accept(): the sync worker sleeps and returns (the
    stock worker raises, which kills the worker); other errors still raise."""
    import errno

    from pbserver import flask_app

    cls = flask_app._sync_worker_class()
    worker = cls.__new__(cls)

    class Listener:
        def __init__(self, err):
            self.err = err

        def accept(self):
            raise OSError(self.err, os.strerror(self.err))

    for err in (errno.EMFILE, errno.ENFILE):
        t0 = time.monotonic()
        try:
            worker.accept(Listener(err))
            dt = time.monotonic() - t0
            check(f"{tag} accept {errno.errorcode[err]} backs off", dt >= flask_app.ACCEPT_BACKOFF_S * 0.9,
                  f"returned after {dt:.3f} s")
        except OSError as e:
            check(f"{tag} accept {errno.errorcode[err]} backs off", False, f"raised {e}")
    try:
        worker.accept(Listener(errno.EINVAL))
        check(f"{tag} accept EINVAL still raises", False, "did not raise")
    except OSError:
        check(f"{tag} accept EINVAL still raises", True)


# ---------------------------------------------------------------- main

def make_cert(d: pathlib.Path) -> tuple[str, str, str]:
    """A throw-away CA and a localhost/127.0.0.1 server certificate it signed
    (strict X.509 verifiers, like urllib3's, refuse a lone self-signed leaf)."""
    def run(*a):
        subprocess.run(a, check=True, capture_output=True, cwd=d)
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=protobench test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        "-keyout", "ca.key", "-out", "ca.pem")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
        "-keyout", "key.pem", "-out", "server.csr")
    (d / "ext.cnf").write_text("basicConstraints=critical,CA:FALSE\n"
                               "keyUsage=critical,digitalSignature,keyEncipherment\n"
                               "extendedKeyUsage=serverAuth\n"
                               "subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-days", "1", "-extfile", "ext.cnf", "-out", "cert.pem")
    return str(d / "cert.pem"), str(d / "key.pem"), str(d / "ca.pem")


def run_phase(tag, env, fn, workers=2, protocols=("rest", "rest-h2", "grpc", "soap"), cafile=None):
    if ONLY is not None and tag not in ONLY:
        return
    try:
        server = Server(env, protocols=protocols, workers=workers)
    except Exception as e:  # noqa: BLE001
        check(f"{tag} server starts", False, str(e))
        return
    check(f"{tag} server starts", True)
    c = Clients(server, cafile)
    try:
        fn(server, c)
    finally:
        c.close()
        stop_check(server, tag)


def main() -> int:
    global VERBOSE
    ap = argparse.ArgumentParser()
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--quick", action="store_true", help="skip the TLS phases")
    ap.add_argument("--only", help="comma-separated phases to run (e.g. tls,config,flask)")
    args = ap.parse_args()
    VERBOSE = args.verbose
    global ONLY
    ONLY = set(args.only.split(",")) if args.only else None
    if not VECTORS.is_dir():
        check("contract/vectors present", False, str(VECTORS))
        print(f"{PASSED} passed, {FAILED} failed")
        return 1

    all4 = ("rest", "rest-h2", "grpc", "soap")

    def clear(server, c):
        guard("clear rest accepts", check_rest_accepts, c, "clear")
        guard("clear soap errors", check_soap_errors, c, "clear")
        guard("clear reflection", check_reflection, c, "clear")
        guard("clear error texts", check_error_texts, server, c, "clear")

    run_phase("clear", {}, clear)
    if ONLY is None or "config" in ONLY:
        check_config_errors("config")

    # TLS (ALPN, handshakes, idle and slow connections), the stream limit, the failure draw with one
    # worker and the service time: the probe's trickle, tls and service phases.
    if not args.quick:
        with tempfile.TemporaryDirectory() as d:
            cert, key, ca = make_cert(pathlib.Path(d))
            run_phase("tls", {"PROTOBENCH_TLS_CERT": cert, "PROTOBENCH_TLS_KEY": key},
                      lambda s, c: guard("tls reflection", check_reflection, c, "tls"), cafile=ca)
    # Two workers: each process draws on its own counter (README), so only the rate holds.
    run_phase("failure-2workers", {"PROTOBENCH_FAILURE_RATE": "0.2", "PROTOBENCH_FAILURE_SEED": "7"},
              lambda s, c: check_failure_draw(s, c, 0.2, 7, 1000, False, "failure-2workers"),
              workers=2, protocols=("rest", "grpc", "soap"))

    stream_phases(quick=args.quick)
    flask_phases(cert_dir_phase=args.quick)
    berg_phases(quick=args.quick)

    print(f"{PASSED} passed, {FAILED} failed")
    return 0 if FAILED == 0 else 1


def stream_phases(quick: bool):
    """The streaming operations (tests/stream_checks.py): bad input, limits,
    timeouts, the failure draw and the service time, on grpc, rest and rest-h2;
    the graphql listener's bad bodies, documents and limits
    (tests/graphql_checks.py); the graphql-get listener's persisted queries
    (tests/graphql_get_checks.py)."""
    import stream_checks as sc

    limit = 4096
    lim_env = {"PROTOBENCH_MAX_REQUEST_BYTES": str(limit)}
    streaming = ("rest", "rest-h2", "grpc")

    def main_phase(server, c):
        tag = server_tag(server, "streams")
        guard(f"{tag} websocket", sc.check_ws, check, server, c, tag, limit)
        guard(f"{tag} sse and poll", sc.check_sse_poll, check, server, c, tag)
        guard(f"{tag} grpc", sc.check_grpc, check, server, c, tag, limit)

    run_phase("streams", lim_env, main_phase, workers=1, protocols=streaming)
    import graphql_checks as gc

    run_phase("graphql", lim_env, lambda s, c: gc.check_graphql(check, s, c, "graphql", limit),
              workers=1, protocols=("graphql",))
    run_phase("graphql-failure", {"PROTOBENCH_FAILURE_RATE": "1"},
              lambda s, c: gc.check_graphql_failure(check, s, c, "graphql-failure"), workers=1,
              protocols=("graphql",))
    import graphql_get_checks as ggc

    # two workers: a persisted query is found by whichever worker a connection reaches
    run_phase("graphql-get", lim_env, lambda s, c: guard("graphql-get", ggc.check_graphql_get, check, s, c, CONTRACT, "graphql-get", limit),
              workers=2, protocols=("graphql", "graphql-get"))
    if ONLY is None or "graphql-get-store" in ONLY:
        guard("graphql-get-store", ggc.check_store, check, "graphql-get-store")
    run_phase("graphql-get-failure", {"PROTOBENCH_FAILURE_RATE": "1"},
              lambda s, c: guard("graphql-get-failure", ggc.check_graphql_get_failure, check, c, "graphql-get-failure"), workers=1,
              protocols=("graphql-get",))
    run_phase("streams-timeouts", {"PROTOBENCH_IDLE_TIMEOUT": "2s", "PROTOBENCH_READ_TIMEOUT": "1s"},
              lambda s, c: sc.check_ws_timeouts(check, s, c, "streams-timeouts"), workers=1, protocols=("rest",))
    run_phase("streams-failure", {"PROTOBENCH_FAILURE_RATE": "1"},
              lambda s, c: sc.check_failure(check, s, c, "streams-failure"), workers=1, protocols=("rest", "grpc"))
    run_phase("streams-sleep", {"PROTOBENCH_SERVICE_TIME": "sleep:500ms"},
              lambda s, c: sc.check_service_time(check, s, c, "streams-sleep"), workers=1, protocols=("rest", "grpc"))
    if quick:
        return
    with tempfile.TemporaryDirectory() as d:
        cert, key, ca = make_cert(pathlib.Path(d))
        run_phase("streams-tls", {**lim_env, "PROTOBENCH_TLS_CERT": cert, "PROTOBENCH_TLS_KEY": key}, main_phase,
                  workers=1, protocols=streaming, cafile=ca)
        run_phase("graphql-get-tls", {"PROTOBENCH_TLS_CERT": cert, "PROTOBENCH_TLS_KEY": key},
                  lambda s, c: guard("graphql-get-tls", ggc.check_graphql_get_tls, check, s, c, "graphql-get-tls"), workers=1,
                  protocols=("graphql-get",), cafile=ca)


def flask_phases(cert_dir_phase: bool):
    """The Flask variant: the same start command with PROTOBENCH_PYTHON_REST=flask."""
    flask = {"PROTOBENCH_PYTHON_REST": "flask"}

    def main_phase(server, c):
        check_flask_process_model(server, 2, "flask")
        guard("flask rest accepts", check_rest_accepts, c, "flask")
        guard("flask error texts", check_error_texts, server, c, "flask")
        try:
            fastapi = Server({}, protocols=("rest",), workers=1)
        except Exception as e:  # noqa: BLE001
            check("flask FastAPI reference server starts", False, str(e))
        else:
            fc = Clients(fastapi, None)
            try:
                guard("flask same as fastapi", check_flask_same_as_fastapi, c, fc, "flask")
            finally:
                fastapi.stop()

    run_phase("flask", flask, main_phase, workers=2, protocols=("rest", "grpc"))
    if ONLY is None or "flask" in ONLY:
        guard("flask accept backoff", check_flask_accept_backoff, "flask")

    limit = 4096

    def limit_phase(server, c):
        j = {"Content-Type": "application/json"}
        rest_error(c, "flask-limit rest oversized body", 413, "POST", "/v1/echo",
                   json.dumps({"payload": "x" * (limit + 10)}).encode(), j)
        status, _, _ = c.http("rest", "POST", "/v1/echo", json.dumps({"payload": "x" * (limit - 20)}).encode(), j)
        check("flask-limit rest body under the limit accepted", status == 200, f"status {status}")

    run_phase("flask-limit", {**flask, "PROTOBENCH_MAX_REQUEST_BYTES": str(limit)}, limit_phase,
              workers=1, protocols=("rest",))
    seed = 20240917
    run_phase("flask-failure", {**flask, "PROTOBENCH_FAILURE_RATE": "0.2", "PROTOBENCH_FAILURE_SEED": str(seed)},
              lambda s, c: check_failure_draw(s, c, 0.2, seed, 500, True, "flask-failure", protocols=("rest",)),
              workers=1, protocols=("rest",))
    run_phase("flask-sleep", {**flask, "PROTOBENCH_SERVICE_TIME": "sleep:50ms"},
              lambda s, c: check_service_time_single(s, c, "flask-sleep", 0.050, protocols=("rest",)),
              workers=1, protocols=("rest",))
    short = {"PROTOBENCH_IDLE_TIMEOUT": "2s", "PROTOBENCH_READ_TIMEOUT": "2s"}
    run_phase("flask-timeouts", {**flask, **short}, lambda s, c: check_flask_timeouts(s, c, "flask-timeouts"),
              workers=1, protocols=("rest",))
    if cert_dir_phase:
        return
    with tempfile.TemporaryDirectory() as d:
        cert, key, ca = make_cert(pathlib.Path(d))

        def tls_phase(server, c):
            ctx = ssl.create_default_context(cafile=c.cafile)
            ctx.check_hostname = False
            ctx.set_alpn_protocols(["h2", "http/1.1"])
            with socket.create_connection(server.addrs["rest"], timeout=10) as s:
                with ctx.wrap_socket(s, server_hostname="localhost") as t:
                    check("flask-tls rest ALPN http/1.1", t.selected_alpn_protocol() == "http/1.1",
                          repr(t.selected_alpn_protocol()))
            guard("flask-tls timeouts", check_flask_timeouts, server, c, "flask-tls")

        run_phase("flask-tls", {**flask, **short, "PROTOBENCH_TLS_CERT": cert, "PROTOBENCH_TLS_KEY": key},
                  tls_phase, workers=1, protocols=("rest",), cafile=ca)


# ---------------------------------------------------------------- Berg's variants
# uvicorn-workers (PROTOBENCH_PYTHON_REST_WORKERS, PROTOBENCH_PYTHON_REST_JSON=orjson)
# and grpcio-sync (PROTOBENCH_PYTHON_GRPC=sync)

def worker_processes(server: Server) -> int:
    """The supervisor's worker processes (multiprocessing's resource tracker
    is not one)."""
    return len([p for p in lim.children(server.proc.pid) if "resource_tracker" not in lim.cmdline(p)])


def check_orjson_wiring(tag: str):
    """With PROTOBENCH_PYTHON_REST_JSON=orjson every route answers through
    FastAPI's ORJSONResponse (whose bytes match the default path's, so the
    wire alone cannot tell); without it, through FastAPI's default."""
    from fastapi.responses import ORJSONResponse
    from fastapi.routing import APIRoute

    from pbserver import config, rest

    env = {"PROTOBENCH_DATASET": str(CONTRACT / "data" / "dataset.json")}
    for value, want in (("orjson", True), ("", False)):
        app = rest.create_fastapi_app(config.load({**env, "PROTOBENCH_PYTHON_REST_JSON": value}))
        routes = [r for r in app.routes if isinstance(r, APIRoute)]
        got = [r.response_class is ORJSONResponse for r in routes]
        check(f"{tag} PROTOBENCH_PYTHON_REST_JSON={value or '(unset)'}: ORJSONResponse on every route = {want}",
              len(routes) > 0 and all(g == want for g in got), repr(got))


def check_grpc_concurrency(c: Clients, tag: str, n: int, min_s: float):
    """`n` calls at once, each sleeping `min_s`, end together: the executor's
    threads serve them side by side."""
    results = []

    def one():
        results.append(grpc_code(lambda: c.grpc_raw("/protobench.v1.Bench/GetInteger", b""))[0])

    t0 = time.perf_counter()
    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(CALL_TIMEOUT)
    total = time.perf_counter() - t0
    check(f"{tag} grpc {n} sleeping calls side by side", results.count(grpc.StatusCode.OK) == n
          and total < n * min_s * 0.75, f"{n} calls took {total * 1000:.0f} ms: {results}")


def berg_phases(quick: bool):
    """The variants Berg & Mebrahtu Redi ran: FastAPI on N uvicorn workers with
    ORJSONResponse, grpcio's thread-pool server."""
    workers_env = {"PROTOBENCH_PYTHON_REST_WORKERS": "3", "PROTOBENCH_PYTHON_REST_JSON": "orjson"}

    def workers_phase(server, c):
        # rest: 3 processes whatever PROTOBENCH_WORKERS (1) says; grpc: 1
        check("uvicorn-workers 3 rest + 1 grpc worker processes", worker_processes(server) == 4,
              f"{worker_processes(server)} processes")
        guard("uvicorn-workers rest accepts", check_rest_accepts, c, "uvicorn-workers")
        guard("uvicorn-workers error texts", check_error_texts, server, c, "uvicorn-workers")

    run_phase("uvicorn-workers", workers_env, workers_phase, workers=1, protocols=("rest", "grpc"))
    if ONLY is None or "uvicorn-workers" in ONLY:
        guard("uvicorn-workers orjson wiring", check_orjson_wiring, "uvicorn-workers")
        py = str(HERE / ".venv" / "bin" / "python")
        for var, value in (("PROTOBENCH_PYTHON_REST_WORKERS", "0"), ("PROTOBENCH_PYTHON_REST_JSON", "ujson"),
                           ("PROTOBENCH_PYTHON_GRPC", "threads")):
            rc, out = lim.run_config_error(py, HERE, {var: value})
            check(f"uvicorn-workers {var}={value} refused at start", rc != 0 and var in out,
                  f"exit {rc}: {out[-300:]!r}")
        rc, out = lim.run_config_error(py, HERE, {"PROTOBENCH_PYTHON_REST": "flask",
                                                  "PROTOBENCH_PYTHON_REST_JSON": "orjson"})
        check("uvicorn-workers orjson with flask refused at start", rc != 0 and "ORJSONResponse" in out,
              f"exit {rc}: {out[-300:]!r}")

    sync = {"PROTOBENCH_PYTHON_GRPC": "sync"}

    def sync_phase(server, c):
        check("grpcio-sync 2 grpc worker processes", worker_processes(server) == 2,
              f"{worker_processes(server)} processes")
        guard("grpcio-sync reflection", check_reflection, c, "grpcio-sync")

    run_phase("grpcio-sync", sync, sync_phase, workers=2, protocols=("grpc",))
    seed = 20240917
    run_phase("grpcio-sync-failure", {**sync, "PROTOBENCH_FAILURE_RATE": "0.2", "PROTOBENCH_FAILURE_SEED": str(seed)},
              lambda s, c: check_failure_draw(s, c, 0.2, seed, 500, True, "grpcio-sync-failure",
                                              protocols=("grpc",)),
              workers=1, protocols=("grpc",))
    run_phase("grpcio-sync-sleep", {**sync, "PROTOBENCH_SERVICE_TIME": "sleep:50ms"},
              lambda s, c: [check_service_time_single(s, c, "grpcio-sync-sleep", 0.050, protocols=("grpc",)),
                            check_grpc_concurrency(c, "grpcio-sync-sleep", 8, 0.050)],
              workers=1, protocols=("grpc",))
    short = {"PROTOBENCH_IDLE_TIMEOUT": "2s", "PROTOBENCH_READ_TIMEOUT": "2s", "PROTOBENCH_MAX_STREAMS": "77"}

    def sync_timeouts(server, c):
        tag = server_tag(server, "grpcio-sync-timeouts")
        guard(f"{tag} idle", check_idle_timeouts, server, c, tag)
        guard(f"{tag} max streams", check_max_streams, server, c, tag, 77)

    run_phase("grpcio-sync-timeouts", {**sync, **short}, sync_timeouts, workers=1, protocols=("grpc",))
    if quick:
        return
    with tempfile.TemporaryDirectory() as d:
        cert, key, ca = make_cert(pathlib.Path(d))
        tls = {"PROTOBENCH_TLS_CERT": cert, "PROTOBENCH_TLS_KEY": key}
        run_phase("grpcio-sync-tls", {**sync, **short, **tls}, sync_timeouts, workers=1, protocols=("grpc",), cafile=ca)


def server_tag(server: Server, tag: str) -> str:
    return f"{tag}-tls" if server.tls else tag


def check_service_time_single(server, c, tag, min_s, protocols=("rest", "grpc", "soap")):
    for proto in protocols:
        t0 = time.perf_counter()
        if proto == "rest":
            ok = c.http("rest", "GET", "/v1/tasks/integer")[0] == 200
        elif proto == "grpc":
            ok = grpc_code(lambda: c.grpc_raw("/protobench.v1.Bench/GetInteger", b""))[0] == grpc.StatusCode.OK
        else:
            ok = soap_post(c, envelope(f'<GetIntegerRequest xmlns="{NS}"/>'))[0] == 200
        dt = time.perf_counter() - t0
        check(f"{tag} {proto} call takes >= {min_s * 1000:.0f} ms", ok and dt >= min_s, f"{dt * 1000:.1f} ms")


if __name__ == "__main__":
    sys.exit(main())
