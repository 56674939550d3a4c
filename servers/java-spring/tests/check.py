#!/usr/bin/env python3
"""Checks what only the java-spring protobench server can get wrong, clear text and TLS: Spring's
own error cases, ALPN, failure injection, service time, draining, grpcurl through reflection,
the streaming operations' and GraphQL's bad input and limits (stream_checks.py, graphql_checks.py),
TLS handshakes, stalled requests, grpc-java's graceful idle close, PROTOBENCH_MAX_STREAMS, a bad
address. Every workload on every protocol, clear and TLS, is scripts/verify-servers.sh's
(protobench verify, zeep, ghz, schemathesis); bad input, the contract's error statuses, the size
limit, HTTP/2 floods, idle connections, gRPC framing, the SOAP element bound, descriptor
exhaustion and bad configuration values are the cross-stack probe's
(contract/tests/probe.sh java-spring). Starts and stops the server itself.

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


def check_alpn(server, label):
    for p, want in (("rest", "http/1.1"), ("soap", "http/1.1"), ("rest-h2", "h2"), ("grpc", "h2")):
        host, port = server.addrs[p].rsplit(":", 1)
        ctx = ssl.create_default_context(cafile=CERT)
        ctx.set_alpn_protocols(["h2", "http/1.1"])
        try:
            with socket.create_connection((host, int(port)), timeout=10) as s:
                with ctx.wrap_socket(s, server_hostname="localhost") as t:
                    got = t.selected_alpn_protocol()
            check(f"{label} {p} ALPN", got == want, f"selected {got!r}, want {want!r}")
        except Exception as e:  # noqa: BLE001
            check(f"{label} {p} ALPN", False, repr(e))


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


def splitmix64(x):
    m = (1 << 64) - 1
    z = (x + 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)


def fails(seed, k, rate):
    return splitmix64((seed + k) & ((1 << 64) - 1)) < rate * 2 ** 64


def check_failures(server, label, seed, rate):
    expected = [fails(seed, k, rate) for k in range(1100)]
    got = []
    bad_body = 0
    with http_client(server, "rest") as c:
        for _ in range(1000):
            r = c.get(server.url("rest", "/v1/tasks/integer"))
            got.append(r.status_code == 500)
            if r.status_code == 500 and r.json() != {"code": 500, "message": "injected failure"}:
                bad_body += 1
            if r.status_code not in (200, 500):
                bad_body += 1
    n = sum(got)
    check(f"{label} 1000 REST calls at rate {rate}: 200 +- 40 failures", 160 <= n <= 240, f"{n} failures")
    check(f"{label} REST failures are exactly the splitmix64 draws", got == expected[:1000],
          f"{n} failures, expected {sum(expected[:1000])}")
    check(f"{label} injected failure body is {{code: 500, message: injected failure}}", bad_body == 0,
          f"{bad_body} bad")
    ch = grpc_channel(server)
    g = []
    for _ in range(50):
        try:
            grpc_raw(ch, "/protobench.v1.Bench/GetInteger", b"")
            g.append(False)
        except grpc.RpcError as e:
            g.append(e.code() == grpc.StatusCode.UNAVAILABLE and e.details() == "injected failure")
    ch.close()
    check(f"{label} gRPC calls 1000..1049 fail (UNAVAILABLE) exactly on the draw", g == expected[1000:1050],
          f"{g} vs {expected[1000:1050]}")
    s = []
    with http_client(server, "soap") as c:
        for _ in range(50):
            r = soap_post(c, server, soap_envelope(f'<GetIntegerRequest xmlns="{NS}"/>'))
            f = soap_fault(r.content) if r.status_code == 500 else None
            s.append(f is not None and f[0] == "Server" and f[2] == "injected failure")
    check(f"{label} SOAP calls 1050..1099 fail (soap:Server) exactly on the draw", s == expected[1050:1100],
          f"{s} vs {expected[1050:1100]}")


def check_service_time(server, label, ms):
    with http_client(server, "rest") as c:
        c.get(server.url("rest", "/v1/tasks/integer"))
        t0 = time.perf_counter()
        r = c.get(server.url("rest", "/v1/tasks/integer"))
        dt = (time.perf_counter() - t0) * 1000
        check(f"{label} REST call takes >= {ms} ms", r.status_code == 200 and dt >= ms, f"{dt:.1f} ms")
    ch = grpc_channel(server)
    grpc_raw(ch, "/protobench.v1.Bench/GetInteger", b"")
    t0 = time.perf_counter()
    grpc_raw(ch, "/protobench.v1.Bench/GetInteger", b"")
    dt = (time.perf_counter() - t0) * 1000
    check(f"{label} gRPC call takes >= {ms} ms", dt >= ms, f"{dt:.1f} ms")
    # sleeping must not block other requests: 16 concurrent calls in well under 16 x ms
    n = 16
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(n) as ex:
        list(ex.map(lambda _: grpc_raw(ch, "/protobench.v1.Bench/GetInteger", b""), range(n)))
    dt = (time.perf_counter() - t0) * 1000
    check(f"{label} {n} concurrent gRPC sleeps overlap", dt < n * ms / 2, f"{dt:.1f} ms")
    ch.close()

    def one(_):
        with http_client(server, "rest") as c:
            return c.get(server.url("rest", "/v1/tasks/integer")).status_code
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(n) as ex:
        codes = list(ex.map(one, range(n)))
    dt = (time.perf_counter() - t0) * 1000
    check(f"{label} {n} concurrent REST sleeps overlap", all(c == 200 for c in codes) and dt < n * ms / 2,
          f"{dt:.1f} ms {codes}")
    with http_client(server, "soap") as c:
        c.post(server.url("soap", "/soap"), content=soap_envelope(f'<GetIntegerRequest xmlns="{NS}"/>'),
               headers={"Content-Type": "text/xml"})
        t0 = time.perf_counter()
        r = soap_post(c, server, soap_envelope(f'<GetIntegerRequest xmlns="{NS}"/>'))
        dt = (time.perf_counter() - t0) * 1000
        check(f"{label} SOAP call takes >= {ms} ms", r.status_code == 200 and dt >= ms, f"{dt:.1f} ms")


def check_drain(server, label):
    """A request in flight when SIGTERM arrives is still answered."""
    c = http_client(server, "rest")
    c.get(server.url("rest", "/v1/inventory/xs"))  # warm connection
    result = {}

    def call():
        try:
            result["status"] = c.get(server.url("rest", "/v1/tasks/integer")).status_code
        except Exception as e:  # noqa: BLE001
            result["status"] = repr(e)
    t = threading.Thread(target=call)
    t.start()
    time.sleep(0.1)
    server.proc.send_signal(signal.SIGTERM)
    t.join(30)
    check(f"{label} request in flight at SIGTERM completes", result.get("status") == 200, str(result))
    c.close()


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


# ---------------------------------------------------------------- main

# ---------------------------------------------------------------- limits (server-limits contract)
#
# PROTOBENCH_IDLE_TIMEOUT / PROTOBENCH_READ_TIMEOUT / PROTOBENCH_MAX_STREAMS where Tomcat and
# grpc-java apply them their own way (the probe owns idle connections in clear text, gRPC
# framing, the SOAP element bound and descriptor exhaustion). The limits server runs with IDLE
# 2 s and READ 3 s (different, so that each check shows which timeout Tomcat applied),
# MAX_STREAMS 7.

IDLE_S, READ_S, MAX_STREAMS = 2, 3, 7
LIMITS_ENV = {"PROTOBENCH_IDLE_TIMEOUT": f"{IDLE_S}s", "PROTOBENCH_READ_TIMEOUT": f"{READ_S}s",
              "PROTOBENCH_MAX_STREAMS": str(MAX_STREAMS), "PROTOBENCH_WORKERS": "1"}
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


def h2_connection(sock):
    import h2.config
    import h2.connection
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    return conn


def h2_until(sock, conn, done, limit=10):
    """Feeds received bytes to conn (sending what it answers, e.g. SETTINGS and PING acks) until
    done(events so far) is true; returns the events."""
    events = []
    sock.settimeout(0.5)
    t0 = time.monotonic()
    while not done(events) and time.monotonic() - t0 < limit:
        try:
            chunk = sock.recv(65536)
        except (socket.timeout, ssl.SSLWantReadError):
            continue
        if not chunk:
            break
        events.extend(conn.receive_data(chunk))
        out = conn.data_to_send()
        if out:
            sock.sendall(out)
    return events


def check_idle_and_read_timeouts(server, label):
    """Stalled requests, unfinished TLS handshakes, grpc-java's graceful idle close and the
    advertised PROTOBENCH_MAX_STREAMS (the probe checks idle connections in clear text: silent,
    after a response or a finished stream, HTTP/2 preface only)."""
    import h2.events
    import h2.settings
    tls = server.tls
    jobs = []  # (name, check): run at the same time, each waits on its own connection
    for p in ("rest", "soap"):
        path = b"/soap" if p == "soap" else b"/v1/products/echo"
        ctype = b"text/xml" if p == "soap" else b"application/json"
        partial_body = (b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Type: " + ctype
                        + b"\r\nContent-Length: 100\r\n\r\n<a")
        jobs.append((None, lambda p=p: check_closed(
            f"{label} {p}: unfinished request headers -> closed after the read timeout",
            raw_socket(server, p), READ_S, send=b"GET /v1/tasks/integer HTTP/1.1\r\nHost: x\r\n")))
        # the body stops: 408 naming the problem, then closed at once (not after a second
        # read timeout spent swallowing the rest of the body)
        jobs.append((None, lambda p=p, b=partial_body: check_408(server, p, label, b)))
    if tls:
        for p in ("rest", "rest-h2", "soap", "grpc"):
            # Tomcat bounds the handshake with connectionTimeout (READ), grpc-java with its
            # handshakeTimeout (IDLE)
            t = IDLE_S if p == "grpc" else READ_S
            jobs.append((None, lambda p=p, t=t: check_closed(
                f"{label} {p}: a TLS handshake that never starts is closed", raw_socket(server, p, handshake=False), t)))
            jobs.append((None, lambda p=p, t=t: check_closed(
                f"{label} {p}: a TLS handshake that stops after a partial ClientHello is closed",
                raw_socket(server, p, handshake=False), t, send=b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")))
    # grpc-java's handshakeTimeout (IDLE) bounds a connection that sends the preface and no SETTINGS
    # (the probe's preface-only connection sends SETTINGS too: the graceful close below)
    jobs.append((None, lambda: check_closed(
        f"{label} grpc: an HTTP/2 connection that sends only the preface is closed after the idle timeout",
        raw_socket(server, "grpc", alpn="h2"), IDLE_S, send=PREFACE)))
    # grpc-java closes an idle connection by GOAWAY + PING and waits up to 10 s for the PING's
    # answer: a peer that never answers is closed after IDLE + 10 s
    jobs.append((None, lambda: check_closed(
        f"{label} grpc: a connection that sends preface and SETTINGS but never answers PING is closed",
        raw_socket(server, "grpc", alpn="h2"), IDLE_S, send=PREFACE + EMPTY_SETTINGS, limit=IDLE_S + 10 + SLACK_S,
        must_contain=b"max_idle")))
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as ex:
        list(ex.map(lambda j: j[1](), jobs))

    # SETTINGS_MAX_CONCURRENT_STREAMS on both HTTP/2 listeners
    for p in ("rest-h2", "grpc"):
        try:
            sock = raw_socket(server, p, alpn="h2")
            conn = h2_connection(sock)
            events = h2_until(sock, conn, lambda ev: any(isinstance(e, h2.events.RemoteSettingsChanged) for e in ev))
            got = None
            for e in events:
                if isinstance(e, h2.events.RemoteSettingsChanged):
                    cs = e.changed_settings.get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS)
                    got = cs.new_value if cs else None
            check(f"{label} {p}: SETTINGS_MAX_CONCURRENT_STREAMS = PROTOBENCH_MAX_STREAMS", got == MAX_STREAMS,
                  f"advertised {got}, want {MAX_STREAMS}")
            sock.close()
        except Exception as e:  # noqa: BLE001
            check(f"{label} {p}: SETTINGS_MAX_CONCURRENT_STREAMS = PROTOBENCH_MAX_STREAMS", False, repr(e))


def check_408(server, p, label, partial_body):
    name = f"{label} {p}: a body that stops arriving -> 408 naming the problem, closed right after"
    # Bounded by the same slack as every other close (it was READ_S + 1.5 s,
    # which a loaded machine missed with the lanes of scripts/test.sh: issue 35).
    data = check_closed(name, raw_socket(server, p), READ_S, send=partial_body, must_contain=b" 408 ")
    body = data.split(b"\r\n\r\n", 1)[-1].decode("latin-1")
    check(f"{name}: body without internals", "408" in body and "timeout" in body and leak(body) is None, body[:200])


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

    section("TLS: ALPN, Spring-specific errors, grpcurl")
    s = Server({"PROTOBENCH_TLS_CERT": CERT, "PROTOBENCH_TLS_KEY": KEY})
    try:
        check("tls listening lines say tls=true", s.tls is True)
        check_alpn(s, "tls")
        check_rest_errors(s, "tls")
        check_grpcurl(s, "tls")
    finally:
        s.stop("tls")

    section("limits: bad values")
    check_bad_address()

    section("limits: stalled requests, HTTP/2 settings")
    s = Server(LIMITS_ENV)
    try:
        check_idle_and_read_timeouts(s, "limits")
    finally:
        s.stop("limits")

    section("limits over TLS: handshakes, stalled requests, HTTP/2 settings")
    s = Server({**LIMITS_ENV, "PROTOBENCH_TLS_CERT": CERT, "PROTOBENCH_TLS_KEY": KEY})
    try:
        check_idle_and_read_timeouts(s, "limits-tls")
    finally:
        s.stop("limits-tls")

    section("failure injection")
    s = Server({"PROTOBENCH_FAILURE_RATE": "0.2", "PROTOBENCH_FAILURE_SEED": "42"})
    try:
        check_failures(s, "failures", 42, 0.2)
    finally:
        s.stop("failures")

    section("service time")
    s = Server({"PROTOBENCH_SERVICE_TIME": "sleep:50ms", "PROTOBENCH_WORKERS": "2"})
    try:
        check_service_time(s, "sleep", 50)
        check_drain(s, "sleep")
    finally:
        s.stop("sleep")
    s = Server({"PROTOBENCH_SERVICE_TIME": "spin:20ms", "PROTOBENCH_WORKERS": "1"}, protocols=("rest", "grpc"))
    try:
        with http_client(s, "rest") as c:
            c.get(s.url("rest", "/v1/tasks/integer"))
            t0 = time.perf_counter()
            r = c.get(s.url("rest", "/v1/tasks/integer"))
            dt = (time.perf_counter() - t0) * 1000
            check("spin REST call takes >= 20 ms", r.status_code == 200 and dt >= 20, f"{dt:.1f} ms")
    finally:
        s.stop("spin")

    section("streaming and GraphQL: bad input, limits, edges")
    import graphql_checks
    import stream_checks
    limit = 65536
    s = Server({"PROTOBENCH_MAX_REQUEST_BYTES": str(limit), "PROTOBENCH_IDLE_TIMEOUT": "2s"},
               protocols=("rest", "grpc", "graphql"))
    try:
        graphql_checks.check_graphql(check, s, limit)
        stream_checks.check_websocket(check, s, limit, 2)
        stream_checks.check_sse_and_poll(check, s)
        ch = grpc_channel(s)
        stream_checks.check_grpc(check, s, ch, limit)
        ch.close()
    finally:
        s.stop("streams")
    s = Server({"PROTOBENCH_FAILURE_RATE": "1"}, protocols=("rest", "grpc", "graphql"))
    try:
        graphql_checks.check_graphql_injected_failure(check, s)
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
