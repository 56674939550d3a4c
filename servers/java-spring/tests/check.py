#!/usr/bin/env python3
"""Checks what only the java-spring protobench server can get wrong, clear text and TLS: Spring's
own error cases, grpcurl through reflection, the streaming operations' and GraphQL's bad input and
limits (stream_checks.py, graphql_checks.py), persisted queries over GET on the graphql-get
listener (graphql_get_checks.py), grpc-java's idle handling, a bad address, SIGTERM.
Every workload on every protocol, clear and TLS, is scripts/verify-servers.sh's (protobench
verify, zeep, ghz, schemathesis); bad input, the contract's error statuses, the size limit, HTTP/2
floods, idle, stalled and trickled connections, TLS (ALPN, handshakes, the stream limit), gRPC
framing, the SOAP element bound, descriptor exhaustion, bad configuration values, the failure
draw, the service time and draining are the cross-stack probe's (contract/tests/probe.sh
java-spring). Starts and stops the server itself.

Usage: check.py <server dir> <generated python proto dir> <work dir>
Prints one line per failed check, a summary per section, and a final "N passed, M failed".
"""
import concurrent.futures
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET

import grpc
import httpx

SERVER_DIR, GEN_DIR, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, GEN_DIR)
from protobench.v1 import protobench_pb2  # noqa: E402


SOAP_ENV = "http://schemas.xmlsoap.org/soap/envelope/"
NS = "urn:protobench:v1"

passed = 0
failed = 0
skipped = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}"[:2000], flush=True)
    return ok


def skip(name, why):
    global skipped
    skipped += 1
    print(f"SKIP {name}: {why}", flush=True)


# ---------------------------------------------------------------- server process


def start_command():
    import tomllib
    with open(os.path.join(SERVER_DIR, "manifest.toml"), "rb") as f:
        return tomllib.load(f)["start"]


class Server:
    def __init__(self, env_extra, protocols=("rest", "rest-h2", "soap", "grpc")):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROTOBENCH_")}
        for p in protocols:
            env["PROTOBENCH_" + p.upper().replace("-", "_") + "_ADDR"] = "127.0.0.1:0"
        env.update(env_extra)
        self.protocols = protocols
        self.stderr = open(os.path.join(WORK, "server-stderr.log"), "ab")
        self.proc = subprocess.Popen(start_command(), cwd=SERVER_DIR, env=env, stdout=subprocess.PIPE,
                                     stderr=self.stderr)
        self.addrs = {}
        self.tls = None
        deadline = time.time() + 90
        lines = []
        while len(self.addrs) < len(protocols) and time.time() < deadline:
            line = self.proc.stdout.readline().decode()
            if not line:
                break
            lines.append(line)
            if line.startswith("listening "):
                kv = dict(part.split("=", 1) for part in line.split()[1:])
                self.addrs[kv["protocol"]] = kv["addr"]
                self.tls = kv["tls"] == "true"
        if len(self.addrs) < len(protocols):
            self.proc.kill()
            raise RuntimeError(f"server did not print its listening lines: {lines}")
        # drain stdout (must stay silent) in the background
        self.extra_stdout = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.proc.stdout:
            self.extra_stdout.append(line)

    def url(self, protocol, path):
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{self.addrs[protocol]}{path}"

    def stop(self, name):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = "timeout"
        check(f"{name}: SIGTERM exits 0", rc == 0, f"exit status {rc}")
        check(f"{name}: nothing on stdout besides the listening lines", not self.extra_stdout,
              repr(self.extra_stdout[:3]))
        self.stderr.close()


# ---------------------------------------------------------------- SOAP faults


def soap_fault(data):
    """(faultcode local name, faultcode namespace, faultstring) of a SOAP 1.1 fault, or None."""
    root = ET.fromstring(data)
    fault = root.find(f"{{{SOAP_ENV}}}Body/{{{SOAP_ENV}}}Fault")
    if fault is None:
        return None
    code = fault.findtext("faultcode").strip()
    prefix, _, local = code.rpartition(":")
    # resolve the prefix by scanning the raw namespace declarations
    ns = None
    text = data.decode("utf-8", "replace")
    decl = f'xmlns:{prefix}="'
    i = text.find(decl)
    if i >= 0:
        ns = text[i + len(decl):text.index('"', i + len(decl))]
    return local, ns, fault.findtext("faultstring")


# ---------------------------------------------------------------- clients


def http_client(server, protocol):
    verify = ssl.create_default_context(cafile=CERT) if server.tls else False
    if protocol == "rest-h2":
        # h2 by ALPN with TLS, h2c with prior knowledge in clear text
        return httpx.Client(http1=bool(server.tls), http2=True, verify=verify, timeout=60)
    return httpx.Client(http1=True, http2=False, verify=verify, timeout=60)


def grpc_channel(server):
    opts = [("grpc.max_receive_message_length", 64 * 1024 * 1024),
            ("grpc.max_send_message_length", 64 * 1024 * 1024)]
    if server.tls:
        creds = grpc.ssl_channel_credentials(root_certificates=open(CERT, "rb").read())
        return grpc.secure_channel(server.addrs["grpc"], creds, options=opts)
    return grpc.insecure_channel(server.addrs["grpc"], options=opts)


def grpc_raw(channel, path, payload, timeout=60):
    call = channel.unary_unary(path, request_serializer=lambda b: b, response_deserializer=lambda b: b)
    return call(payload, timeout=timeout)


def soap_post(client, server, body, action=None, content_type="text/xml; charset=utf-8"):
    headers = {"Content-Type": content_type}
    if action is not None:
        headers["SOAPAction"] = f'"{action}"'
    return client.post(server.url("soap", "/soap"), content=body, headers=headers)


# ---------------------------------------------------------------- sections


INTERNALS = re.compile(r"Exception\b|Error:|\bat [a-z]+\.[a-z]|\.java\b|\b(org|com|java|javax|jakarta|jdk|io)"
                       r"\.[a-z]+\.[a-zA-Z]|springframework|Caused by|\$[A-Z]\w*\b|SAAJ\d|Traceback")


def leak(text):
    """The part of an error text that names our code or a library's (a stack frame, an exception
    class, a package), or None: errors must say what was wrong with the input, nothing else."""
    m = INTERNALS.search(text or "")
    return m.group(0) if m else None


def rest_error(r, status):
    try:
        body = r.json()
    except Exception:  # noqa: BLE001
        return False
    return (r.status_code == status and body.get("code") == status and isinstance(body.get("message"), str)
            and r.headers.get("content-type", "").startswith("application/json") and leak(r.text) is None)


def check_rest_errors(server, label):
    """What Spring MVC and Jackson could get wrong beyond the probe's refusals (its errors phase
    checks the contract's 400/404/405/415 answers on rest and rest-h2)."""
    for p in ("rest", "rest-h2"):
        with http_client(server, p) as c:
            J = {"Content-Type": "application/json"}
            r = c.get(server.url(p, "/soap?wsdl"))
            check(f"{label} {p} /soap not on a REST listener -> 404", rest_error(r, 404),
                  f"{r.status_code} {r.text[:200]}")
            r = c.post(server.url(p, "/v1/echo"), content=b'{"payload": "x"}',
                       headers={"Content-Type": "application/json; charset=utf-8"})
            check(f"{label} {p} charset parameter accepted", r.status_code == 200 and r.json() == {"payload": "x"},
                  f"{r.status_code} {r.text[:200]}")
            r = c.post(server.url(p, "/v1/products/modify"),
                       content=json.dumps({"description": "ab\U0001F600c\u00e9"}).encode(), headers=J)
            check(f"{label} {p} modify reverses by scalar values",
                  r.status_code == 200 and r.json().get("description") == "\u00e9c\U0001F600ba",
                  f"{r.status_code} {r.text[:200]}")
            r = c.post(server.url(p, "/v1/greeter/hello"), content=b'{"request": {"l": 12}}', headers=J)
            check(f"{label} {p} int64 accepted as number, written as string",
                  r.status_code == 200 and r.json()["response"]["l"] == "12", f"{r.status_code} {r.text[:200]}")
            for body in (b'{"request": {"d": "Infinity"}}', b'{"request": {"f": 8.5e168}}'):
                r = c.post(server.url(p, "/v1/greeter/hello"), content=body, headers=J)
                check(f"{label} {p} non-finite float {body.decode()} -> 400", rest_error(r, 400),
                      f"{r.status_code} {r.text[:200]}")
            r = c.get(server.url(p, "/v1/inventory/s"), headers={"Content-Type": "multipart/form-data"})
            check(f"{label} {p} GET with a stray multipart Content-Type -> 200", r.status_code == 200,
                  f"{r.status_code} {r.text[:200]}")
            r = c.post(server.url(p, "/v1/echo"), content=b'x', headers={"Content-Type": "multipart/form-data"})
            check(f"{label} {p} multipart POST -> 415", rest_error(r, 415), f"{r.status_code} {r.text[:200]}")
            r = c.post(server.url(p, "/v1/products/modify"), content=b'{"price": "NaN"}', headers=J)
            check(f"{label} {p} NaN price -> 400", rest_error(r, 400), f"{r.status_code} {r.text[:200]}")
    with http_client(server, "soap") as c:
        r = c.get(server.url("soap", "/v1/tasks/integer"))
        check(f"{label} REST path not on the soap listener -> 404", r.status_code == 404, f"{r.status_code}")


def soap_envelope(inner):
    return (f'<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="{SOAP_ENV}"><soap:Body>'
            f'{inner}</soap:Body></soap:Envelope>').encode()


def check_grpcurl(server, label):
    exe = shutil.which("grpcurl") or (os.path.expanduser("~/go/bin/grpcurl")
                                      if os.path.exists(os.path.expanduser("~/go/bin/grpcurl")) else None)
    if not exe:
        skip(f"{label} grpcurl", "grpcurl not installed (go install github.com/fullstorydev/grpcurl/cmd/grpcurl@latest)")
        return
    tls = ["-cacert", CERT] if server.tls else ["-plaintext"]
    out = subprocess.run([exe, *tls, server.addrs["grpc"], "list"], capture_output=True, text=True, timeout=60)
    check(f"{label} grpcurl lists services by reflection",
          "protobench.v1.Bench" in out.stdout and "helloworld.Greeter" in out.stdout, out.stdout + out.stderr)
    out = subprocess.run([exe, *tls, "-d", '{"text": "hi", "times": 3}', server.addrs["grpc"],
                          "protobench.v1.Bench/CloneText"], capture_output=True, text=True, timeout=60)
    try:
        ok = json.loads(out.stdout) == {"texts": ["hi", "hi", "hi"]}
    except ValueError:
        ok = False
    check(f"{label} grpcurl CloneText through reflection", ok, out.stdout + out.stderr)


# ---------------------------------------------------------------- limits (server-limits contract)
#
# PROTOBENCH_IDLE_TIMEOUT where grpc-java applies it its own way (the probe owns stalled and
# trickled requests, TLS handshakes, idle connections, the stream limit, gRPC framing, the SOAP
# element bound and descriptor exhaustion).

IDLE_S = 2
LIMITS_ENV = {"PROTOBENCH_IDLE_TIMEOUT": f"{IDLE_S}s", "PROTOBENCH_WORKERS": "1"}
SLACK_S = 3  # how much later than its timeout a close may come on this shared machine
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
EMPTY_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def raw_socket(server, protocol, handshake=True, alpn=None):
    """A connection to a listener; with TLS, handshaken (ALPN alpn) unless handshake=False."""
    host, port = server.addrs[protocol].rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    if server.tls and handshake:
        ctx = ssl.create_default_context(cafile=CERT)
        if alpn:
            ctx.set_alpn_protocols([alpn])
        s = ctx.wrap_socket(s, server_hostname="localhost")
    return s


def seconds_until_closed(sock, limit, on_data=None):
    """(seconds until the server closed the connection, or None if it was still open after
    limit seconds; the bytes received). on_data(bytes) may answer (e.g. HTTP/2 PING acks)."""
    t0 = time.monotonic()
    sock.settimeout(0.2)
    data = b""
    while time.monotonic() - t0 < limit:
        try:
            chunk = sock.recv(65536)
        except (socket.timeout, ssl.SSLWantReadError):
            continue
        except OSError:
            return time.monotonic() - t0, data
        if not chunk:
            return time.monotonic() - t0, data
        data += chunk
        if on_data:
            on_data(chunk)
    return None, data


def check_closed(name, sock, timeout_s, send=b"", must_contain=None, earliest=None, limit=None, on_data=None):
    """Sends send, then checks the server closes the connection between earliest (default: half
    the timeout) and timeout + SLACK_S seconds later. Returns the bytes received."""
    try:
        if send:
            sock.sendall(send)
        bound = limit if limit is not None else timeout_s + SLACK_S
        t, data = seconds_until_closed(sock, bound, on_data)
        low = timeout_s / 2 if earliest is None else earliest
        ok = t is not None and t >= low and (must_contain is None or must_contain in data)
        check(name, ok, f"closed after {t if t is None else round(t, 2)} s (want {low}..{bound} s), "
                        f"received {data[:200]!r}")
        return data
    except Exception as e:  # noqa: BLE001
        check(name, False, repr(e))
        return b""
    finally:
        sock.close()


def check_graphql_get_alpn(server):
    """The graphql-get listener is HTTP/1.1: offered h2 and http/1.1, its TLS ALPN picks http/1.1."""
    host, port = server.addrs["graphql-get"].rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=CERT)
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    with ctx.wrap_socket(socket.create_connection((host, int(port)), timeout=10), server_hostname="localhost") as s:
        check("tls graphql-get: ALPN http/1.1 (h2 offered too)", s.selected_alpn_protocol() == "http/1.1",
              str(s.selected_alpn_protocol()))


def check_grpc_idle(server, label):
    """grpc-java's own idle handling (the probe checks stalled and trickled requests, TLS handshakes,
    idle connections and the stream limit): a connection that sends the preface and no SETTINGS is
    closed by grpc-java's handshakeTimeout (IDLE); one that sends preface and SETTINGS but never
    answers the idle close's PING is closed IDLE + 10 s later (the probe declares it a deviation)."""
    jobs = [lambda: check_closed(
        f"{label} grpc: an HTTP/2 connection that sends only the preface is closed after the idle timeout",
        raw_socket(server, "grpc", alpn="h2"), IDLE_S, send=PREFACE),
        lambda: check_closed(
        f"{label} grpc: a connection that sends preface and SETTINGS but never answers PING is closed",
        raw_socket(server, "grpc", alpn="h2"), IDLE_S, send=PREFACE + EMPTY_SETTINGS, limit=IDLE_S + 10 + SLACK_S,
        must_contain=b"max_idle")]
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as ex:
        list(ex.map(lambda j: j(), jobs))


def check_bad_address():
    """An address that is not HOST:PORT stops the server at start, naming the variable and what
    it accepts (the probe's config phase refuses the bad values of every other variable)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROTOBENCH_")}
    env["PROTOBENCH_REST_ADDR"] = "x:99999"
    name = "bad value PROTOBENCH_REST_ADDR=x:99999 -> exit non-zero naming the variable"
    try:
        p = subprocess.run(start_command(), cwd=SERVER_DIR, env=env, capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        check(name, False, "still running after 60 s")
        return
    err = p.stderr.decode(errors="replace")
    check(name, p.returncode != 0 and "PROTOBENCH_REST_ADDR" in err and "expected" in err and leak(err) is None
          and not p.stdout, f"exit {p.returncode}, stderr {err[:300]!r}")


CERT = os.path.join(WORK, "cert.pem")
KEY = os.path.join(WORK, "key.pem")


def section(title):
    print(f"== {title}", flush=True)


def main():
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", KEY, "-out", CERT],
                   check=True, capture_output=True)

    section("clear text: Spring-specific errors, grpcurl")
    s = Server({})
    try:
        check("clear listening lines say tls=false", s.tls is False)
        check_rest_errors(s, "clear")
        check_grpcurl(s, "clear")
    finally:
        s.stop("clear")

    section("TLS: Spring-specific errors, grpcurl, graphql-get")
    import graphql_get_checks
    s = Server({"PROTOBENCH_TLS_CERT": CERT, "PROTOBENCH_TLS_KEY": KEY},
               protocols=("rest", "rest-h2", "soap", "grpc", "graphql-get"))
    try:
        check("tls listening lines say tls=true", s.tls is True)
        check_rest_errors(s, "tls")
        check_grpcurl(s, "tls")
        check_graphql_get_alpn(s)
        with http_client(s, "graphql-get") as c:
            graphql_get_checks.check_graphql_get_tls(check, s, c)
    finally:
        s.stop("tls")

    section("limits: bad values")
    check_bad_address()

    section("limits: grpc-java's idle handling")
    s = Server(LIMITS_ENV, protocols=("grpc",))
    try:
        check_grpc_idle(s, "limits")
    finally:
        s.stop("limits")

    section("limits over TLS: grpc-java's idle handling")
    s = Server({**LIMITS_ENV, "PROTOBENCH_TLS_CERT": CERT, "PROTOBENCH_TLS_KEY": KEY}, protocols=("grpc",))
    try:
        check_grpc_idle(s, "limits-tls")
    finally:
        s.stop("limits-tls")

    section("streaming and GraphQL: bad input, limits, edges")
    import graphql_checks
    import stream_checks
    limit = 65536
    s = Server({"PROTOBENCH_MAX_REQUEST_BYTES": str(limit), "PROTOBENCH_IDLE_TIMEOUT": "2s"},
               protocols=("rest", "grpc", "graphql", "graphql-get"))
    try:
        graphql_checks.check_graphql(check, s, limit)
        with http_client(s, "graphql-get") as c:
            graphql_get_checks.check_graphql_get(check, s, c, limit)
        stream_checks.check_websocket(check, s, limit, 2)
        stream_checks.check_sse_and_poll(check, s)
        ch = grpc_channel(s)
        stream_checks.check_grpc(check, s, ch, limit)
        ch.close()
    finally:
        s.stop("streams")
    s = Server({"PROTOBENCH_FAILURE_RATE": "1"}, protocols=("rest", "grpc", "graphql", "graphql-get"))
    try:
        graphql_checks.check_graphql_injected_failure(check, s)
        with http_client(s, "graphql-get") as c:
            graphql_get_checks.check_graphql_get_injected_failure(check, s, c)
        ch = grpc_channel(s)
        stream_checks.check_injected_failure(check, s, ch)
        ch.close()
    finally:
        s.stop("streams-failing")

    section("gRPC only (no web server)")
    s = Server({}, protocols=("grpc",))
    try:
        ch = grpc_channel(s)
        out = protobench_pb2.IntegerValue.FromString(grpc_raw(ch, "/protobench.v1.Bench/GetInteger", b""))
        check("grpc-only GetInteger", out.value == 2147483647, str(out))
        ch.close()
    finally:
        s.stop("grpc-only")

    line = f"{passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line, flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
