#!/usr/bin/env python3
"""Cross-stack hardening probe (issue 14): bad input and hostile connections
against a running server's listeners, checked against the server limits of
contract/README.md (idle and read timeouts, HTTP/2 stream limit, descriptor
exhaustion, SOAP element bound, gRPC framing, the request size limit, the
status of each bad request, errors that name no internals); and, on the
server started again by --start with other settings, TLS (ALPN, handshake and
idle timeouts, trickled requests, the stream limit), the failure draw, the
service time and SIGTERM.

usage: probe.py --pid PID [--rest ADDR] [--rest-h2 ADDR] [--grpc ADDR]
                [--soap ADDR] [--idle S] [--read S] [--spare-fds N]
                [--start CMD --dir DIR [--start-timeout S]]

PID is the server's process (its children are measured too). Prints one line
per check, `ok|FAIL|skip category check: expected X, observed Y`, and exits 1
if any check failed. The running server is probed in clear text; the tls
phase's server uses a throw-away certificate (openssl). Normally run by
probe.sh, which starts the server with PROTOBENCH_IDLE_TIMEOUT and
PROTOBENCH_READ_TIMEOUT set.

Python 3.11 with the `h2` package (HTTP/2 framing and HPACK); probe.sh
installs it into a venv under ${XDG_CACHE_HOME:-~/.cache}/protobench/.
"""

import argparse
import errno
import json
import os
import re
import resource
import select
import signal
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import h2.config
import h2.connection
import h2.events
import h2.settings

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SOAP_NS = "http://schemas.xmlsoap.org/soap/envelope/"
ENVELOPE = ('<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="' + SOAP_NS + '"><soap:Body>'
            '<EchoRequest xmlns="urn:protobench:v1">{}</EchoRequest></soap:Body></soap:Envelope>')
# What an error text must not contain: stack traces, exception classes,
# source files, function names, library packages.
INTERNALS = re.compile(
    r"Traceback|\bat [\w$.<>]+\(|\b[A-Z]\w*(?:Error|Exception)\b|\.(?:py|go|rs|java|js|ts|kt)\b"
    r"|\w::\w|\w\(\)|\b(?:org|java|javax|com|io)\.[a-z]+\.|node_modules|goroutine|panicked|lxml|spyne|\bGo struct\b|\bstruct field\b"
    r"|\bsaxparse|\bexpat\b",
)
REPORT = []
# "category check" -> why: failures the server's manifest declares as known
# deviations of its library ([probe] deviations). They are printed as `dev`
# and not counted as failures; a declared deviation that no longer happens is
# a failure, so the declarations stay true.
DEVIATIONS = {}
DEVIATIONS_SEEN = set()


def report(ok, category, check, expected, observed):
    key = f"{category} {check}"
    why = DEVIATIONS.get(key)
    if why is not None:
        DEVIATIONS_SEEN.add(key)
    if why is not None and ok is False:
        ok, status, observed = "dev", "dev ", f"{observed} (known deviation: {why})"
    elif why is not None and ok is True:
        ok, status = False, "FAIL"
        observed = f"{observed}, but the manifest declares a deviation here: remove it from [probe] deviations"
    else:
        status = "ok  " if ok is True else ("skip" if ok is None else "FAIL")
    line = f"{status} {category} {check}: expected {expected}, observed {observed}"
    REPORT.append(ok)
    print(line, flush=True)


def skip(category, check, why):
    report(None, category, check, "-", f"skipped: {why}")


def addr(text):
    host, port = text.rsplit(":", 1)
    return host.strip("[]"), int(port)


def connect(target, timeout=5.0, ctx=None):
    """A TCP connection to `target`, through a TLS handshake when `ctx` is given."""
    s = socket.create_connection(target, timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return ctx.wrap_socket(s, server_hostname="localhost") if ctx is not None else s


def tls_ctx(alpn=("h2", "http/1.1")):
    """A TLS client context offering `alpn` that takes the variant's throw-away certificate."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(list(alpn))
    return ctx


def read_until_closed(sock, within):
    """Reads until EOF or reset; returns (bytes, seconds, closed)."""
    start = time.monotonic()
    data = b""
    while True:
        left = within - (time.monotonic() - start)
        if left <= 0:
            return data, time.monotonic() - start, False
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            return data, time.monotonic() - start, False
        except OSError:
            return data, time.monotonic() - start, True
        if not chunk:
            return data, time.monotonic() - start, True
        data += chunk


def status_line(data):
    line = data.split(b"\r\n", 1)[0].decode("latin-1")
    m = re.match(r"HTTP/1\.[01] (\d{3})", line)
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------- HTTP/1.1

def h1_exchange(target, raw, within=10.0):
    """Sends `raw`, returns (status, headers, body, seconds, closed)."""
    s = connect(target)
    start = time.monotonic()
    try:
        s.sendall(raw)
    except OSError:
        pass
    data, closed = read_h1(s, start, within)
    s.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    if re.search(rb"(?im)^transfer-encoding:\s*chunked", head):
        rest = dechunk(rest)
    return status_line(data), head.decode("latin-1"), rest, time.monotonic() - start, closed


def read_h1(s, start, within):
    """Reads one whole HTTP/1.1 response (or until EOF or `within` seconds after `start`); returns (bytes, closed)."""
    data = b""
    while True:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep:
            length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
            chunked = re.search(rb"(?im)^transfer-encoding:\s*chunked", head)
            if length and len(rest) >= int(length.group(1)):
                return data, False
            if chunked and rest.endswith(b"0\r\n\r\n"):
                return data, False
        left = within - (time.monotonic() - start)
        if left <= 0:
            return data, False
        s.settimeout(left)
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            return data, False
        except OSError:
            return data, True
        if not chunk:
            return data, True
        data += chunk


def dechunk(body):
    out = b""
    while body:
        size_line, _, body = body.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            break
        if size == 0:
            break
        out += body[:size]
        body = body[size + 2:]
    return out


def h1_request(target, method, path, body=b"", content_type=None, within=10.0):
    head = f"{method} {path} HTTP/1.1\r\nHost: {target[0]}:{target[1]}\r\nConnection: close\r\n"
    if content_type:
        head += f"Content-Type: {content_type}\r\n"
    if body or method == "POST":
        head += f"Content-Length: {len(body)}\r\n"
    return h1_exchange(target, head.encode() + b"\r\n" + body, within)


def health(target, protocol):
    """Whether a new connection gets a normal answer (within 5 s)."""
    try:
        if protocol == "soap":
            status = h1_request(target, "GET", "/soap?wsdl", within=5)[0]
        elif protocol == "rest":
            status = h1_request(target, "GET", "/v1/inventory/xs", within=5)[0]
        elif protocol == "rest-h2":
            status = H2(target).request("GET", "/v1/inventory/xs", within=5)["status"]
        else:
            r = H2(target).grpc("/protobench.v1.Bench/GetInventoryXs", grpc_frame(b""), within=5)
            return r["grpc-status"] == "0"
        return status == 200
    except OSError:
        return False


def probe_http(t, protocol):
    cat = "http"
    cases = [
        ("malformed request line", b"GARBAGE / NOT-HTTP\r\n\r\n"),
        ("oversized headers", b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n"),
        ("header flood", b"GET / HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(10000)) + b"\r\n"),
    ]
    for name, raw in cases:
        status, _, _, secs, closed = h1_exchange(t, raw, within=10)
        ok = (status is not None and 400 <= status < 500) or (status is None and closed)
        observed = f"status {status}" if status else ("closed" if closed else "no answer, still open")
        report(ok, cat, f"{protocol} {name}", "4xx or close within 10 s", f"{observed} after {secs:.1f} s")
    report(health(t, protocol), cat, f"{protocol} still answers", "a new connection answered", "answered" if health(t, protocol) else "not answered")


def json_message(body):
    try:
        doc = json.loads(body)
        return doc.get("message") if isinstance(doc, dict) else None
    except ValueError:
        return None


def probe_json(t):
    cat = "json"
    cases = [
        ("truncated", "/v1/echo", b'{"payload":"ab'),
        ("wrong types", "/v1/echo", b'{"payload":5}'),
        ("wrong nested types", "/v1/products/echo", b'{"id":"x","price":{"a":1}}'),
        ("huge integer", "/v1/tasks/clone", b'{"text":"x","times":1' + b"0" * 400 + b"}"),
        ("huge float", "/v1/greeter/hello", b'{"request":{"name":"a","d":1e999999}}'),
        ("deep nesting", "/v1/echo", b'{"payload":' + b"[" * 100000 + b"]" * 100000 + b"}"),
    ]
    for name, path, body in cases:
        status, _, resp, secs, _ = h1_request(t, "POST", path, body, "application/json")
        message = json_message(resp)
        leak = INTERNALS.search(message or "")
        ok = status == 400 and bool(message) and not leak
        observed = f"{status}, message {message!r}" if message is not None else f"{status}, body {resp[:120]!r}"
        if leak:
            observed += f" (names {leak.group(0)!r})"
        report(ok, cat, name, "400 with a message naming no internals", observed[:300])


def soap_fault(body):
    text = body.decode("utf-8", "replace")
    code = re.search(r"<(?:\w+:)?faultcode[^>]*>([^<]*)<", text)
    string = re.search(r"<(?:\w+:)?faultstring[^>]*>([^<]*)<", text)
    return (code.group(1).strip() if code else None), (string.group(1).strip() if string else None)


def tree_pids(pid):
    pids = [pid]
    for p in pids:
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                pids.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return pids


def tree_rss_kib(pid):
    total = 0
    for p in tree_pids(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                m = re.search(r"VmRSS:\s+(\d+)", f.read())
            total += int(m.group(1)) if m else 0
        except OSError:
            pass
    return total


def proc_cpu_s(pid):
    """CPU seconds (user + system) of each process of the tree, by pid."""
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = {}
    for p in tree_pids(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu[p] = (int(fields[11]) + int(fields[12])) / ticks
        except (OSError, IndexError):
            pass
    return cpu


def tree_cpu_s(pid):
    return sum(proc_cpu_s(pid).values())


LISTENERS = {}  # port -> protocol, filled by main() from the targets


def listening_ports(pid):
    """The TCP ports a process holds a listening socket on (/proc/net/tcp*)."""
    inodes = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                for line in f.readlines()[1:]:
                    fields = line.split()
                    if fields[3] == "0A":  # LISTEN
                        inodes[fields[9]] = int(fields[1].rsplit(":", 1)[1], 16)
        except OSError:
            pass
    ports = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:[") and link[8:-1] in inodes:
                ports.add(inodes[link[8:-1]])
    except OSError:
        pass
    return ports


def proc_name(pid):
    """A process of the tree as `pid N (program arg1 arg2; serving PROTOCOL)`."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return f"pid {pid}"
    shown = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argv[:3]))[:40]
    serving = sorted(LISTENERS.get(port, str(port)) for port in listening_ports(pid))
    return f"pid {pid} ({shown}" + (f"; serving {', '.join(serving)})" if serving else ")")


def probe_soap(t, pid):
    cat = "xml"
    client = re.compile(r"^(?:[\w.-]+:)?Client$")
    cases = [
        ("DOCTYPE/XXE", ('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                         '<soap:Envelope xmlns:soap="' + SOAP_NS + '"><soap:Body><EchoRequest xmlns="urn:protobench:v1">'
                         '<payload>&x;</payload></EchoRequest></soap:Body></soap:Envelope>').encode()),
        ("billion laughs", ('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">'
                            + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(9))
                            + ']><soap:Envelope xmlns:soap="' + SOAP_NS + '"><soap:Body><EchoRequest xmlns="urn:protobench:v1">'
                            '<payload>&j;</payload></EchoRequest></soap:Body></soap:Envelope>').encode()),
        ("malformed XML", b'<soap:Envelope xmlns:soap="' + SOAP_NS.encode() + b'"><soap:Body><EchoRequest>'),
        ("mismatched tags", ENVELOPE.format("<payload>x</payloa>").encode()),
        ("bad value", ENVELOPE.replace("EchoRequest", "CloneTextRequest").format("<text>x</text><times>many</times>").encode()),
        ("not UTF-8", ENVELOPE.format("<payload>\xff\xfe</payload>").encode("latin-1")),
    ]
    for name, body in cases:
        status, head, resp, secs, _ = h1_request(t, "POST", "/soap", body, "text/xml; charset=utf-8")
        code, string = soap_fault(resp)
        leak = INTERNALS.search(string or "")
        xml = re.search(r"(?im)^content-type:\s*text/xml", head) is not None
        ok = (status == 500 and xml and bool(code and client.match(code)) and bool(string) and not leak
              and b"root:" not in resp and secs < 5)
        observed = f"{status}{'' if xml else ' not text/xml'} {code} {string!r} after {secs:.1f} s"
        if leak:
            observed += f" (names {leak.group(0)!r})"
        report(ok, cat, name, "soap:Client fault (text/xml) naming no internals within 5 s", observed[:300])

    # 8 MB of empty sibling elements: refused, and the server's RSS stays small.
    # Just under the default request limit of 8 MiB, so that it is parsed, not refused as too large.
    siblings = (8 * 1024 * 1024 - len(ENVELOPE.format(""))) // 4
    body = ENVELOPE.format("<a/>" * siblings).encode()
    baseline = tree_rss_kib(pid)
    peak = [baseline]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], tree_rss_kib(pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        status, _, resp, secs, _ = h1_request(t, "POST", "/soap", body, "text/xml; charset=utf-8", within=30)
    finally:
        time.sleep(0.2)
        done.set()
        sampler.join()
    code, string = soap_fault(resp)
    ok = status == 500 and bool(code and client.match(code)) and "too many XML elements" in (string or "")
    report(ok, cat, "8 MB of <a/> siblings", "soap:Client 'too many XML elements: more than 10000'",
           f"{status} {code} {(string or '')[:120]!r} after {secs:.1f} s")
    growth_mb = (peak[0] - baseline) / 1024
    report(growth_mb < 48, cat, "8 MB of <a/> siblings memory", "server RSS growth < 48 MB", f"{growth_mb:.1f} MB")
    report(health(t, "soap"), cat, "soap still answers", "a new connection answered", "answered" if health(t, "soap") else "not answered")


# ---------------------------------------------------------------- HTTP/2

def grpc_frame(message):
    return b"\x00" + struct.pack(">I", len(message)) + message


class DrainingConnection(h2.connection.H2Connection):
    """An h2 connection that goes on reading after a GOAWAY without error (RFC 9113 6.8: the streams up to
    its last stream id are still answered); the h2 package closes the connection's state machine there."""

    def _receive_goaway_frame(self, frame):
        frames, events = super()._receive_goaway_frame(frame)
        if frame.error_code == 0:
            self.state_machine.state = h2.connection.ConnectionState.CLIENT_OPEN
        return frames, events


class H2:
    """One HTTP/2 connection with prior knowledge (h2c), through the h2 package."""

    def __init__(self, target, timeout=5.0, ctx=None, graceful=False):
        self.target = target
        # graceful: a GOAWAY without error ends only the streams above its last stream id (a server
        # draining on SIGTERM still answers the others); otherwise it ends the connection.
        self.graceful = graceful
        self.scheme = "https" if ctx is not None else "http"
        self.sock = connect(target, timeout, ctx)
        config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        self.conn = (DrainingConnection if graceful else h2.connection.H2Connection)(config=config)
        self.conn.initiate_connection()
        self.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1 << 24})
        self.conn.increment_flow_control_window(1 << 24)
        self.flush()
        self.remote_settings_seen = False
        self.closed = False
        self.streams = {}

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def pump(self, within):
        """Reads and handles frames for up to `within` seconds or until closed."""
        deadline = time.monotonic() + within
        while not self.closed:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except (socket.timeout, ssl.SSLWantReadError):
                return
            except OSError:
                self.closed = True
                return
            if not data:
                self.closed = True
                return
            try:
                events = self.conn.receive_data(data)
            except Exception:  # a protocol error of the server's: treat as closed
                self.closed = True
                return
            for e in events:
                self.handle(e)
            try:
                self.flush()
            except OSError:
                self.closed = True
            return

    def handle(self, e):
        s = self.streams.setdefault(getattr(e, "stream_id", 0), {"headers": {}, "data": b"", "done": False})
        if isinstance(e, h2.events.RemoteSettingsChanged):
            self.remote_settings_seen = True
        elif isinstance(e, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
            for k, v in e.headers:
                s["headers"][k] = v
        elif isinstance(e, h2.events.DataReceived):
            s["data"] += e.data
            self.conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
        elif isinstance(e, h2.events.StreamEnded):
            s["done"] = True
        elif isinstance(e, h2.events.StreamReset):
            s["done"] = True
            s["reset"] = e.error_code
        elif isinstance(e, h2.events.ConnectionTerminated):
            if self.graceful and e.error_code == 0:
                for sid, st in self.streams.items():
                    st["done"] = st["done"] or sid > (e.last_stream_id or 0)
            else:
                self.closed = True

    def settings(self, within=5.0):
        deadline = time.monotonic() + within
        while not self.remote_settings_seen and not self.closed and time.monotonic() < deadline:
            self.pump(deadline - time.monotonic())
        return self.conn.remote_settings

    def request(self, method, path, headers=(), body=b"", within=10.0, end=True):
        sid = self.conn.get_next_available_stream_id()
        hdrs = [(":method", method), (":path", path), (":scheme", self.scheme),
                (":authority", f"{self.target[0]}:{self.target[1]}")] + list(headers)
        self.conn.send_headers(sid, hdrs, end_stream=not body and end)
        self.streams[sid] = {"headers": {}, "data": b"", "done": False}
        self.flush()
        deadline = time.monotonic() + within
        sent = 0
        while sent < len(body) and not self.closed and not self.streams[sid]["done"]:
            window = min(self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size)
            if window > 0:
                chunk = body[sent:sent + window]
                sent += len(chunk)
                self.conn.send_data(sid, chunk, end_stream=sent == len(body) and end)
                try:
                    self.flush()
                except OSError:  # the server stopped reading (it may have answered, e.g. 413): read what it sent
                    break
            else:
                self.pump(min(1.0, deadline - time.monotonic()))
            if time.monotonic() > deadline:
                break
        while not self.streams[sid]["done"] and not self.closed and time.monotonic() < deadline:
            self.pump(deadline - time.monotonic())
        r = self.streams[sid]
        return {"status": int(r["headers"].get(":status", 0)) or None, "headers": r["headers"],
                "data": r["data"], "done": r["done"], "reset": r.get("reset")}

    def grpc(self, path, body, content_type="application/grpc", within=10.0):
        headers = [("te", "trailers")]
        if content_type is not None:
            headers.append(("content-type", content_type))
        r = self.request("POST", path, headers, body, within)
        r["grpc-status"] = r["headers"].get("grpc-status")
        return r

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def probe_grpc(t, max_bytes):
    cat = "grpc"
    path = "/protobench.v1.Bench/EchoProduct"
    for name, ctype in [("no content-type", None), ("wrong content-type", "application/json")]:
        r = H2(t).grpc(path, grpc_frame(b""), content_type=ctype)
        report(r["status"] == 415, cat, name, "HTTP 415", f"HTTP {r['status']}, grpc-status {r['grpc-status']}")
    one = H2(t).grpc(path, grpc_frame(b""))
    two = H2(t).grpc(path, grpc_frame(b"") * 2)
    report(one["grpc-status"] == "0" and two["grpc-status"] in ("13", "12"), cat, "two messages on a unary call",
           "grpc-status 13 (INTERNAL) or 12 (UNIMPLEMENTED) (one message: OK)",
           f"grpc-status {two['grpc-status']} {two['headers'].get('grpc-message', '')!r} (one message: {one['grpc-status']})")
    msg = two["headers"].get("grpc-message", "")
    big = H2(t).grpc(path, grpc_frame(b"\x0a" + b"\x00" * (max_bytes + 1)), within=30)
    report(big["grpc-status"] == "8", cat, "oversized message", "grpc-status 8 (RESOURCE_EXHAUSTED)",
           f"grpc-status {big['grpc-status']} {big['headers'].get('grpc-message', '')!r}"
           + (f", reset {big['reset']}" if big.get("reset") is not None else ""))
    garbage = H2(t).grpc(path, grpc_frame(b"\xff\xff\xff\xff"))
    texts = [msg, big["headers"].get("grpc-message", ""), garbage["headers"].get("grpc-message", "")]
    leaks = [m.group(0) for m in (INTERNALS.search(x) for x in texts) if m]
    report(garbage["grpc-status"] not in (None, "0") and not leaks, cat, "grpc-message names no internals",
           "non-OK status for garbage, messages without internals",
           f"grpc-status {garbage['grpc-status']}, messages {texts!r}"[:300])


# ---------------------------------------------------------------- status codes of bad requests

JSON_CT = "application/json"
# (check, method, path, content-type, body, status, Allow must name): the
# contract's status for each bad REST request, asked on rest and rest-h2.
REST_ERRORS = [
    ("malformed JSON", "POST", "/v1/echo", JSON_CT, b'{"payload": ', 400, None),
    ("unknown member", "POST", "/v1/echo", JSON_CT, b'{"payload":"a","x":1}', 400, None),
    ("number for a string", "POST", "/v1/echo", JSON_CT, b'{"payload":5}', 400, None),
    ("data after the value", "POST", "/v1/echo", JSON_CT, b'{"payload":"x"} {}', 400, None),
    ("empty body", "POST", "/v1/echo", JSON_CT, b"", 400, None),
    ("array body", "POST", "/v1/echo", JSON_CT, b"[1]", 400, None),
    ("string for an int32", "POST", "/v1/products/echo", JSON_CT, b'{"id":"abc"}', 400, None),
    ("fraction for an int32", "POST", "/v1/products/echo", JSON_CT, b'{"id":1.5}', 400, None),
    ("int32 out of range", "POST", "/v1/products/echo", JSON_CT, b'{"id":2147483648}', 400, None),
    ("float beyond float32", "POST", "/v1/greeter/hello", JSON_CT, b'{"request":{"f":3.4028236e38}}', 400, None),
    ("unknown enum name", "POST", "/v1/greeter/hello", JSON_CT,
     b'{"request":{"pets":[{"name":"a","color":"PURPLE"}]}}', 400, None),
    ("two oneof members", "POST", "/v1/greeter/hello", JSON_CT, b'{"request":{"c1":"a","c2":true}}', 400, None),
    ("clone times 100001", "POST", "/v1/tasks/clone", JSON_CT, b'{"text":"a","times":100001}', 400, None),
    ("clone times -1", "POST", "/v1/tasks/clone", JSON_CT, b'{"text":"a","times":-1}', 400, None),
    ("clone over 64 MiB", "POST", "/v1/tasks/clone", JSON_CT,
     b'{"text":"' + b"x" * 1000 + b'","times":100000}', 400, None),
    ("unknown path", "GET", "/v1/nope", None, b"", 404, None),
    ("unknown file", "GET", "/v1/tasks/files/nope", None, b"", 404, None),
    ("wrong method", "DELETE", "/v1/inventory/s", None, b"", 405, "GET"),
    ("POST on a GET path", "POST", "/v1/tasks/integer", JSON_CT, b"{}", 405, "GET"),
    ("GET on a POST path", "GET", "/v1/echo", None, b"", 405, "POST"),
    ("text/plain body", "POST", "/v1/echo", "text/plain", b'{"payload":"a"}', 415, None),
]


def rest_ask(t, protocol, method, path, ctype, body):
    """One request on rest (HTTP/1.1) or rest-h2 (h2c); returns (status, {lower-case header: value}, body)."""
    if protocol == "rest":
        status, head, resp, _, _ = h1_request(t, method, path, body, ctype)
        headers = {}
        for line in head.split("\r\n")[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        return status, headers, resp
    c = H2(t)
    try:
        hdrs = [("content-type", ctype)] if ctype else []
        if body:
            hdrs.append(("content-length", str(len(body))))
        r = c.request(method, path, hdrs, body)
        return r["status"], {k.lower(): v for k, v in r["headers"].items()}, r["data"]
    finally:
        c.close()


def probe_rest_errors(t, protocol):
    cat = "errors"
    for name, method, path, ctype, body, want, allow in REST_ERRORS:
        status, headers, resp = rest_ask(t, protocol, method, path, ctype, body)
        try:
            doc = json.loads(resp)
        except ValueError:
            doc = None
        message = doc.get("message") if isinstance(doc, dict) else None
        leak = INTERNALS.search(message or "")
        ok = (status == want and headers.get("content-type", "").startswith("application/json")
              and doc.get("code") == want and isinstance(message, str) and bool(message) and not leak)
        if allow is not None:
            ok = ok and allow in headers.get("allow", "")
        expected = f"{want} with a JSON {{code, message}} naming no internals" + (f", Allow {allow}" if allow else "")
        observed = f"{status} {headers.get('content-type')} {resp[:120]!r}" + (f" Allow {headers.get('allow')!r}" if allow else "")
        if leak:
            observed += f" (names {leak.group(0)!r})"
        report(ok, cat, f"{protocol} {name}", expected, observed)


NS = "urn:protobench:v1"


def soap_env(inner):
    return ('<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="' + SOAP_NS + '"><soap:Body>'
            + inner + "</soap:Body></soap:Envelope>").encode()


# (check, body): each gets a soap:Client fault (HTTP 500) naming no internals.
SOAP_FAULTS = [
    ("unknown body element", soap_env(f'<NopeRequest xmlns="{NS}"/>')),
    ("empty Body", soap_env("")),
    ("not an Envelope", f'<EchoRequest xmlns="{NS}"><payload>x</payload></EchoRequest>'.encode()),
    ("not XML", b'{"payload":"x"}'),
    ("truncated", soap_env(f'<EchoRequest xmlns="{NS}"><payload>x</payload></EchoRequest>')[:150]),
    ("DOCTYPE without entities", b'<?xml version="1.0"?><!DOCTYPE soap:Envelope SYSTEM "http://127.0.0.1:1/x.dtd">'
     + soap_env(f'<EchoRequest xmlns="{NS}"><payload>x</payload></EchoRequest>').split(b"?>", 1)[1]),
    ("undefined entity", soap_env(f'<EchoRequest xmlns="{NS}"><payload>&undefined;</payload></EchoRequest>')),
    ("unknown enum", soap_env(f'<SayHelloRequest xmlns="{NS}"><request><pets><name>a</name><color>PURPLE</color>'
                              "</pets></request></SayHelloRequest>")),
    ("clone times 100001", soap_env(f'<CloneTextRequest xmlns="{NS}"><text>a</text><times>100001</times></CloneTextRequest>')),
    ("clone times -1", soap_env(f'<CloneTextRequest xmlns="{NS}"><text>a</text><times>-1</times></CloneTextRequest>')),
    ("unknown file", soap_env(f'<GetFileRequest xmlns="{NS}"><name>nope</name></GetFileRequest>')),
]


def probe_soap_errors(t):
    cat = "errors"
    client = re.compile(r"^(?:[\w.-]+:)?Client$")
    xml_ct = "text/xml; charset=utf-8"
    for name, body in SOAP_FAULTS:
        status, head, resp, _, _ = h1_request(t, "POST", "/soap", body, xml_ct)
        code, string = soap_fault(resp)
        leak = INTERNALS.search(string or "")
        xml = re.search(r"(?im)^content-type:\s*text/xml", head) is not None
        ok = status == 500 and xml and bool(code and client.match(code)) and bool(string) and not leak
        report(ok, cat, f"soap {name}", "soap:Client fault (text/xml) naming no internals",
               f"{status}{'' if xml else ' not text/xml'} {code} {string!r}"[:300]
               + (f" (names {leak.group(0)!r})" if leak else ""))

    # The element bound: 4 elements (Envelope, Body, EchoRequest, payload) + siblings.
    def siblings(n):
        return soap_env(f'<EchoRequest xmlns="{NS}"><payload>x</payload>' + "<a/>" * n + "</EchoRequest>")
    status, _, resp, _, _ = h1_request(t, "POST", "/soap", siblings(10_000 - 4), xml_ct)
    code, string = soap_fault(resp)
    report("too many" not in (string or ""), cat, "soap 10,000 elements", "not refused for their number",
           f"{status} {code} {(string or '')[:120]!r}")
    status, _, resp, _, _ = h1_request(t, "POST", "/soap", siblings(10_001 - 4), xml_ct)
    code, string = soap_fault(resp)
    report(status == 500 and bool(code and client.match(code)) and string == "too many XML elements: more than 10000",
           cat, "soap 10,001 elements", "soap:Client 'too many XML elements: more than 10000'",
           f"{status} {code} {(string or '')[:120]!r}")

    echo = soap_env(f'<EchoRequest xmlns="{NS}"><payload>no action</payload></EchoRequest>')
    status, _, resp, _, _ = h1_request(t, "POST", "/soap", echo, xml_ct)
    report(status == 200 and b"no action" in resp, cat, "soap without SOAPAction", "200 echoing the payload",
           f"{status} {resp[:120]!r}")
    for name, method, path, ctype, body, want in [
            ("wrong content type", "POST", "/soap", JSON_CT, echo, 415),
            ("GET without ?wsdl", "GET", "/soap", None, b"", 405),
            ("PUT", "PUT", "/soap", "text/xml", b"<x/>", 405),
            ("other path", "POST", "/other", "text/xml", soap_env(""), 404)]:
        status = h1_request(t, method, path, body, ctype)[0]
        report(status == want, cat, f"soap {name}", f"HTTP {want}", f"HTTP {status}")
    status, _, resp, _, _ = h1_request(t, "GET", "/soap?wsdl")
    m = re.search(rb'<(?:\w+:)?address location="([^"]*)"', resp)
    want = f"http://{t[0]}:{t[1]}/soap"
    report(status == 200 and b"definitions" in resp and m is not None and m.group(1).decode() == want, cat,
           "soap WSDL address", f"200, the WSDL with location {want}", f"{status} location {m.group(1) if m else None!r}")


def pb_varint(v):
    out = b""
    while True:
        b, v = v & 0x7F, v >> 7
        out += bytes([b | (0x80 if v else 0)])
        if not v:
            return out


def pb_clone(text, times):
    """CloneRequest{text, times} (times as int32: a negative one is 10 bytes)."""
    return b"\x0a" + pb_varint(len(text)) + text + b"\x10" + pb_varint(times & ((1 << 64) - 1))


# (check, path, message, grpc-status): the contract's code for each bad call.
GRPC_ERRORS = [
    ("garbage", "/protobench.v1.Bench/Echo", b"\xff\xff\xff\xff", "3"),
    ("truncated message", "/protobench.v1.Bench/Echo", b"\x0a\x05hi", "3"),
    ("invalid UTF-8 string", "/protobench.v1.Bench/Echo", b"\x0a\x02\xc3\x28", "3"),
    ("unknown method", "/protobench.v1.Bench/Nope", b"", "12"),
    ("unknown service", "/nope.Service/Nope", b"", "12"),
    ("unknown file", "/protobench.v1.Bench/GetFile", b"\x0a\x04nope", "5"),
    ("clone times 100001", "/protobench.v1.Bench/CloneText", pb_clone(b"a", 100001), "3"),
    ("clone times -1", "/protobench.v1.Bench/CloneText", pb_clone(b"a", -1), "3"),
    ("clone over 64 MiB", "/protobench.v1.Bench/CloneText", pb_clone(b"x" * 1024, 65537), "3"),
]


def probe_grpc_errors(t):
    cat = "errors"
    for name, path, message, want in GRPC_ERRORS:
        c = H2(t)
        try:
            r = c.grpc(path, grpc_frame(message))
        finally:
            c.close()
        text = r["headers"].get("grpc-message", "")
        leak = INTERNALS.search(text)
        report(r["grpc-status"] == want and not leak, cat, f"grpc {name}", f"grpc-status {want}, message naming no internals",
               f"grpc-status {r['grpc-status']} {text[:160]!r}" + (f" (names {leak.group(0)!r})" if leak else ""))


# ---------------------------------------------------------------- request size limit

def echo_json(size):
    """A JSON Echo body of exactly `size` bytes."""
    return b'{"payload":"' + b"x" * (size - len(b'{"payload":""}')) + b'"}'


def echo_pb(size):
    """An EchoMessage of exactly `size` bytes (tag, length varint, payload)."""
    n = size - 2
    while 1 + len(pb_varint(n)) + n > size:
        n -= 1
    return b"\x0a" + pb_varint(n) + b"x" * n


def h1_streamed(t, path, ctype, body, chunked, within=30.0):
    """POST `body` on HTTP/1.1 (with Content-Length, or chunked) from a thread while
    reading the answer, so that an early 413 is read even if the server stops reading."""
    s = connect(t, within)
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: {ctype}\r\n"
    if chunked:
        head += "Transfer-Encoding: chunked\r\n\r\n"
        data = b"".join(b"%x\r\n" % len(body[i:i + 65536]) + body[i:i + 65536] + b"\r\n"
                        for i in range(0, len(body), 65536)) + b"0\r\n\r\n"
    else:
        head += f"Content-Length: {len(body)}\r\n\r\n"
        data = body
    start = time.monotonic()

    def send():
        try:
            s.sendall(head.encode() + data)
        except OSError:
            pass

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    resp, _ = read_h1(s, start, within)
    s.close()
    sender.join(5)
    head, _, rest = resp.partition(b"\r\n\r\n")
    ctype = re.search(rb"(?im)^content-type:\s*([^\r\n]*)", head)
    return status_line(resp), (ctype.group(1).decode("latin-1") if ctype else ""), rest


def json_error(body):
    """(code, message) of a JSON error body, or (None, None)."""
    try:
        doc = json.loads(body)
    except ValueError:
        return None, None
    return (doc.get("code"), doc.get("message")) if isinstance(doc, dict) else (None, None)


def probe_limit(targets, n):
    cat = "limit"
    for p in ("rest", "rest-h2"):
        if p not in targets:
            continue
        t = targets[p]
        status, _, resp = rest_ask(t, p, "POST", "/v1/echo", JSON_CT, echo_json(n))
        report(status == 200, cat, f"{p} body of exactly the limit ({n} bytes)", "200", f"{status}")
        cases = [("body one byte over the limit", echo_json(n + 1), True),
                 ("body over the limit without Content-Length", echo_json(n + 1), False)]
        for name, body, length in cases:
            if p == "rest":
                status, ctype, resp = h1_streamed(t, "/v1/echo", JSON_CT, body, chunked=not length)
            else:
                c = H2(t)
                try:
                    hdrs = [("content-type", JSON_CT)] + ([("content-length", str(len(body)))] if length else [])
                    r = c.request("POST", "/v1/echo", hdrs, body, within=30)
                    status, ctype, resp = r["status"], r["headers"].get("content-type", ""), r["data"]
                finally:
                    c.close()
            code, message = json_error(resp)
            leak = INTERNALS.search(message or "")
            report(status == 413 and ctype.startswith("application/json") and code == 413 and bool(message) and not leak,
                   cat, f"{p} {name}", "413 with a JSON {code, message} naming no internals",
                   f"{status} {ctype} {resp[:120]!r}" + (f" (names {leak.group(0)!r})" if leak else ""))
    if "soap" in targets:
        t = targets["soap"]
        empty = len(soap_env(f'<EchoRequest xmlns="{NS}"><payload></payload></EchoRequest>'))
        for name, size, want in [("body of exactly the limit", n, 200), ("body one byte over the limit", n + 1, 413)]:
            body = soap_env(f'<EchoRequest xmlns="{NS}"><payload>' + "x" * (size - empty) + "</payload></EchoRequest>")
            status, _, _ = h1_streamed(t, "/soap", "text/xml; charset=utf-8", body, chunked=False)
            report(status == want, cat, f"soap {name}", f"HTTP {want}", f"HTTP {status}")
    if "grpc" in targets:
        c = H2(targets["grpc"])
        try:
            r = c.grpc("/protobench.v1.Bench/Echo", grpc_frame(echo_pb(n)), within=30)
        finally:
            c.close()
        report(r["grpc-status"] == "0" and len(r["data"]) == n + 5, cat, "grpc message of exactly the limit",
               "grpc-status 0, echoed", f"grpc-status {r['grpc-status']}, {len(r['data'])} bytes")


def probe_h2(t, protocol, idle):
    cat = "h2flood"
    for name, send in [("preface-only connection", H2_PREFACE + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"),
                       ("silent connection", b"")]:
        s = connect(t)
        if send:
            s.sendall(send)
        _, secs, closed = read_until_closed(s, idle + 3)
        s.close()
        report(closed and secs >= idle / 2, cat, f"{protocol} {name}", f"closed {idle / 2:.0f}..{idle + 3:.0f} s after it opened",
               f"closed after {secs:.1f} s" if closed else f"still open after {secs:.1f} s")
    c = H2(t)
    value = c.settings().get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS)
    c.close()
    report(value == 1000, cat, f"{protocol} many streams", "SETTINGS_MAX_CONCURRENT_STREAMS 1000", f"{value}")
    # A client that made one call and then stays idle (answering PINGs): GOAWAY or close at the idle timeout.
    c = H2(t)
    c.settings()
    answered = ask_on(c, protocol)
    start = time.monotonic()
    while not c.closed and time.monotonic() - start < idle + 3:
        c.pump(idle + 3 - (time.monotonic() - start))
    secs = time.monotonic() - start
    c.close()
    report(answered and c.closed and secs >= idle / 2, cat, f"{protocol} idle after a finished stream",
           f"answered, then GOAWAY or closed {idle / 2:.0f}..{idle + 3:.0f} s later",
           f"{'answered' if answered else 'not answered'}, then "
           + (f"closed after {secs:.1f} s" if c.closed else f"still open after {secs:.1f} s"))
    # Rapid reset: open and cancel streams as fast as the socket takes them.
    c = H2(t)
    c.settings()
    path, headers = ("/v1/inventory/l", []) if protocol == "rest-h2" else (
        "/protobench.v1.Bench/GetInventoryL", [("content-type", "application/grpc"), ("te", "trailers")])
    start = time.monotonic()
    sent = 0
    try:
        for _ in range(2000):
            sid = c.conn.get_next_available_stream_id()
            c.conn.send_headers(sid, [(":method", "GET" if protocol == "rest-h2" else "POST"), (":path", path),
                                      (":scheme", "http"), (":authority", "x")] + headers,
                                end_stream=protocol == "rest-h2")
            c.conn.reset_stream(sid)
            c.flush()
            sent += 1
            if sent % 100 == 0:
                c.pump(0.001)
    except Exception as e:  # the server may end the connection (GOAWAY): fine if it still serves others
        stopped = f" (stopped: {type(e).__name__})"
    else:
        stopped = ""
    c.close()
    ok = health(t, protocol)
    report(ok, cat, f"{protocol} rapid reset", "the server still answers",
           f"{sent} HEADERS+RST_STREAM in {time.monotonic() - start:.1f} s{stopped}, then {'answered' if ok else 'not answered'}")


def probe_idle(t, protocol, idle, read):
    cat = "idle"
    s = connect(t)
    _, secs, closed = read_until_closed(s, idle + 3)
    s.close()
    report(closed and secs >= idle / 2, cat, f"{protocol} idle connection", f"closed {idle / 2:.0f}..{idle + 3:.0f} s after it opened",
           f"closed after {secs:.1f} s" if closed else f"still open after {secs:.1f} s")
    s = connect(t)
    answered = ask_on(s, protocol)
    _, secs, closed = read_until_closed(s, idle + 3)
    s.close()
    report(answered and closed and secs >= idle / 2, cat, f"{protocol} idle after a response",
           f"answered, then closed {idle / 2:.0f}..{idle + 3:.0f} s later",
           f"{'answered' if answered else 'not answered'}, then "
           + (f"closed after {secs:.1f} s" if closed else f"still open after {secs:.1f} s"))
    path, ctype = ("/soap", "text/xml; charset=utf-8") if protocol == "soap" else ("/v1/echo", "application/json")
    s = connect(t)
    s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {ctype}\r\nContent-Length: 1000\r\n\r\n".encode()
              + b'{"payload":"abc')
    data, secs, closed = read_until_closed(s, read + 3)
    s.close()
    status = status_line(data)
    report(closed, cat, f"{protocol} slow body (1000 announced, 15 sent)", f"closed within {read + 3:.0f} s (408 if answered)",
           (f"closed after {secs:.1f} s" if closed else f"still open after {secs:.1f} s") + (f", status {status}" if status else ""))


def ask_on(c, protocol):
    """Whether an open connection (H2 for rest-h2 and grpc, a socket otherwise) answers a small call within 2 s."""
    try:
        if protocol == "rest-h2":
            return c.request("GET", "/v1/inventory/xs", within=2)["status"] == 200
        if protocol == "grpc":
            return c.grpc("/protobench.v1.Bench/GetInventoryXs", grpc_frame(b""), within=2)["grpc-status"] == "0"
        path = "/soap?wsdl" if protocol == "soap" else "/v1/inventory/xs"
        c.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        return status_line(read_h1(c, time.monotonic(), 2)[0]) == 200
    except OSError:
        return False


# The flood's CPU is sampled in slices and judged by their median: a server
# that spins at the descriptor limit spins in every slice, while one-off work
# (a worker's garbage collection, the accept-and-close of the backlog) fills
# one slice at most. Each process is counted only over slices it lived
# through, so a process that starts or exits meanwhile is not charged with
# the CPU of its whole life (issue 35: a 91% reading that five reruns never
# showed again).
CPU_SLICES = 6
CPU_SLICE_S = 0.25
# Rounds of the descriptor check before it gives up: a round is void (and
# redone) when the probe itself was too slow to ask the connection it opened
# before the flood within the idle timeout, since the server may then rightly
# have closed it (issue 35: the go and rust flakes on a loaded machine).
FDS_ROUNDS = 3


def flood_cpu(pid, slices=CPU_SLICES, slice_s=CPU_SLICE_S):
    """Samples the tree's CPU in `slices` slices of `slice_s` seconds; returns
    (median share of a core, every slice's share, the busiest process)."""
    shares, busiest = [], {}
    prev, t_prev = proc_cpu_s(pid), time.monotonic()
    for _ in range(slices):
        time.sleep(slice_s)
        cur, t_cur = proc_cpu_s(pid), time.monotonic()
        wall = t_cur - t_prev
        used = 0.0
        for p, c in cur.items():
            if p in prev:  # lived through the whole slice
                used += c - prev[p]
                busiest[p] = busiest.get(p, 0.0) + c - prev[p]
        shares.append(used / wall)
        prev, t_prev = cur, t_cur
    top = max(busiest, key=busiest.get) if busiest else None
    return statistics.median(shares), shares, (proc_name(top) if top is not None else "none")


def settle(pid, quiet=0.1, within=20.0):
    """Waits until the tree has used less than `quiet` of a core in two
    consecutive slices (work left from an earlier phase must not be charged
    to the flood); returns a note: how long it took and which process was
    busy meanwhile."""
    start = time.monotonic()
    first = proc_cpu_s(pid)
    calm = 0
    while time.monotonic() - start < within:
        _, shares, _ = flood_cpu(pid, slices=1)
        calm = calm + 1 if shares[0] < quiet else 0
        if calm == 2:
            break
    waited = time.monotonic() - start
    last = proc_cpu_s(pid)
    used = {p: last[p] - first[p] for p in last if p in first}
    top = max(used, key=used.get) if used else None
    busy = f", busiest {proc_name(top)} with {used[top]:.1f} s of CPU" if top is not None and used[top] >= 0.1 else ""
    if calm < 2:
        return f"never below {quiet * 100:.0f}% for 0.5 s in {within:.0f} s before it{busy}"
    return f"settled in {waited:.1f} s{busy}"


def open_before(targets):
    """One connection per listener, each asked once; returns {protocol: (conn, time of its answer)}."""
    before = {}
    for protocol, t in targets.items():
        if protocol in ("rest-h2", "grpc"):
            c = H2(t)
            c.settings()
        else:
            c = connect(t)
        if not ask_on(c, protocol):
            report(False, "fds", f"{protocol} connection from before the flood", "answered before the flood",
                   "not answered before any descriptor was used up")
        before[protocol] = (c, time.monotonic())
    return before


def open_flood(targets, spare):
    """Connects (without blocking) spare + 32 sockets per listener; returns the accepted ones."""
    # The flood connects without blocking, so that it lasts milliseconds
    # whatever the listeners' backlogs: a blocking connect that waits for a
    # full backlog would let the server's idle timeout (which is short here)
    # close the connections opened before the flood, and the check below
    # would then test the timeout instead of the descriptor limit.
    pending = []
    for t in targets.values():
        for _ in range(spare + 32):
            s = socket.socket(socket.AF_INET6 if ":" in t[0] else socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            if s.connect_ex(t) not in (0, errno.EINPROGRESS):
                s.close()
                break
            pending.append(s)
    flood = []
    deadline = time.monotonic() + 0.5
    while pending and time.monotonic() < deadline:
        _, writable, _ = select.select([], pending, [], max(0.0, deadline - time.monotonic()))
        for s in writable:
            pending.remove(s)
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                flood.append(s)
            else:
                s.close()
    for s in pending:  # never completed (the backlog was full): not part of the flood
        s.close()
    return flood


def fds_round(targets, pid, idle, spare):
    """One flood; returns the checks' results [(ok, check, expected, observed)],
    or None when the round is void (see FDS_ROUNDS), with the reason."""
    results = []
    settled_note = settle(pid)
    before = open_before(targets)
    flood = open_flood(targets, spare)
    t_flood = time.monotonic()
    try:
        for protocol, (c, answered_at) in before.items():
            start = time.monotonic()
            ok = ask_on(c, protocol)
            gap = start - answered_at
            if not ok and gap >= 0.9 * idle:
                return None, f"{protocol}: the probe asked {gap:.1f} s after the last answer, past the idle timeout"
            results.append((ok, f"{protocol} connection from before the flood", "answered within 2 s",
                            f"{'answered' if ok else 'not answered'} after {time.monotonic() - start:.1f} s"
                            f" ({gap:.1f} s after its previous answer)"))
        median, shares, top = flood_cpu(pid)
        results.append((median < 0.5, "CPU during the flood", "< 50% of a core (median of "
                        f"{CPU_SLICES} slices of {CPU_SLICE_S} s)",
                        f"{median * 100:.0f}% (slices {', '.join(f'{x * 100:.0f}' for x in shares)}; busiest {top};"
                        f" {len(flood)} idle connections; the tree {settled_note})"))
        # The idle timeout closes the flood connections the server accepted.
        # Polled up to 3 idle timeouts + 2 s, not read once at idle + 1 s: a
        # server that backs off after EMFILE (hyper-util sleeps 1 s) and
        # first drains connections a previous flood left in its accept queue
        # accepts this flood's later, and its idle timer starts only then.
        deadline = t_flood + 3 * idle + 2
        closed = 0
        while True:
            for s in flood:
                s.setblocking(False)
                try:
                    closed += s.recv(1) == b""
                except BlockingIOError:
                    pass
                except OSError:
                    closed += 1
            if closed or time.monotonic() >= deadline:
                break
            time.sleep(0.25)
        results.append((closed > 0, "idle flood connections closed",
                        f"accepted ones closed by the idle timeout ({idle:.0f} s) within {3 * idle + 2:.0f} s of the flood",
                        f"{closed} of {len(flood)} closed, the first seen {time.monotonic() - t_flood:.1f} s after the flood"))
        return results, None
    finally:
        for s in flood:
            s.close()
        for c, _ in before.values():
            c.close()


def probe_fds(targets, pid, idle, spare):
    cat = "fds"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    limits = {}
    for p in tree_pids(pid):
        try:
            opened = len(os.listdir(f"/proc/{p}/fd"))
            resource.prlimit(p, resource.RLIMIT_NOFILE, (opened + spare, resource.prlimit(p, resource.RLIMIT_NOFILE)[1]))
            limits[p] = opened + spare
        except (OSError, ValueError) as e:
            skip(cat, "descriptor limit", f"cannot set the limit of pid {p}: {e}")
            return
    tree = set(limits)
    voids = []
    for _ in range(FDS_ROUNDS):
        results, void = fds_round(targets, pid, idle, spare)
        if results is not None:
            break
        voids.append(void)
        time.sleep(idle + 1)  # let the server close what the void round left
    if results is None:
        report(False, cat, "rounds", f"a round within {FDS_ROUNDS} attempts", "; ".join(voids))
    else:
        note = f" [after {len(voids)} void round(s): {'; '.join(voids)}]" if voids else ""
        for ok, check, expected, observed in results:
            report(ok, cat, check, expected, observed + note)
    print(f"     fds limits {sorted(limits.items())}", flush=True)
    for protocol, t in targets.items():
        deadline = time.monotonic() + idle + 3
        ok = False
        while not ok and time.monotonic() < deadline:
            ok = health(t, protocol)
        report(ok, cat, f"{protocol} served again", f"a new connection answered within {idle + 3:.0f} s",
               "answered" if ok else "not answered")
    gone = sorted(p for p in tree if not os.path.exists(f"/proc/{p}"))
    report(not gone, cat, "no process exited", f"the {len(tree)} processes of the server's tree all still running",
           f"exited: {gone}" if gone else "all running")
    for p, _ in limits.items():
        try:
            resource.prlimit(p, resource.RLIMIT_NOFILE, (soft, resource.prlimit(p, resource.RLIMIT_NOFILE)[1]))
        except OSError:
            pass


# ---------------------------------------------------------------- trickled requests

def trickle(t, start, data, within, ctx=None, every=0.4):
    """Sends `start`, then `data` one byte every `every` seconds (so that no
    inactivity timer fires, only a total one) until the server closes;
    returns (bytes received, seconds from the first byte, closed)."""
    s = connect(t, 10, ctx)
    stop = threading.Event()

    def dribble():
        for i in range(len(data)):
            if stop.wait(every):
                return
            try:
                s.sendall(data[i:i + 1])
            except OSError:
                return

    s.sendall(start)
    sender = threading.Thread(target=dribble, daemon=True)
    sender.start()
    try:
        return read_until_closed(s, within)
    finally:
        stop.set()
        sender.join(5)
        s.close()


def trickle_cases(protocol):
    """(what, first bytes, trickled bytes): headers, then a body, that never finish in time, trickled
    (defeating an inactivity timer) or stalled (no byte after the first ones)."""
    path, ctype, opening = (("/soap", "text/xml; charset=utf-8", b"<soap:Envelope") if protocol == "soap"
                            else ("/v1/echo", "application/json", b'{"payload":"'))
    headers = f"POST {path} HTTP/1.1\r\nHost: x\r\n".encode()
    body = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {ctype}\r\nContent-Length: 100\r\n\r\n".encode() + opening
    return [("trickled headers", headers, b"X-Slow: " + b"a" * 60), ("trickled body", body, b"a" * 60),
            ("stalled headers", headers, b""), ("stalled body", body, b"")]


def probe_trickle(cat, targets, read, ctx=None):
    """PROTOBENCH_READ_TIMEOUT on rest and soap (contract/README.md): headers or a
    body trickling in one byte every 0.4 s, or stopping, are cut at the read
    timeout (408 if answered, on rest with a JSON {code, message}); every case
    runs side by side."""
    results, threads = {}, []
    for p in ("rest", "soap"):
        if p not in targets:
            skip(cat, f"{p} trickled and stalled requests", f"the server does not serve {p}")
            continue
        for what, start, data in trickle_cases(p):
            results[(p, what)] = (b"no result: the thread did not end", 0.0, False)

            def run(p=p, what=what, start=start, data=data):
                try:
                    results[(p, what)] = trickle(targets[p], start, data, read + 3, ctx)
                except OSError as e:
                    results[(p, what)] = (f"{e}".encode(), 0.0, False)
            threads.append(threading.Thread(target=run, daemon=True))
    for th in threads:
        th.start()
    for th in threads:
        th.join(read + 15)
    for (p, what), (data, secs, closed) in sorted(results.items()):
        status = status_line(data)
        top, _, body = data.partition(b"\r\n\r\n")
        body = dechunk(body) if re.search(rb"(?im)^transfer-encoding:\s*chunked", top) else body
        code, message = json_error(body) if p == "rest" and status == 408 else (408, "-")
        leak = INTERNALS.search(message or "")
        # Headers cut mid-line: net/http answers a plain 400 or nothing, depending on where the timer hits.
        allowed = (None, 408, 400) if what.endswith("headers") else (None, 408)
        ok = closed and secs >= read / 2 and status in allowed and code == 408 and bool(message) and not leak
        report(ok, cat, f"{p} {what}", f"closed {read / 2:.0f}..{read + 3:.0f} s after the first byte "
               f"({' or '.join(map(str, allowed[1:]))} if answered)",
               (f"closed after {secs:.1f} s" if closed else f"still open after {secs:.1f} s")
               + (f", {data[:160]!r}" if data else ", nothing answered"))


# ---------------------------------------------------------------- variants: the server started again with other settings

class Variant:
    """The server started again (--start in --dir, `exec`uted so that it gets
    the signals) with PROTOBENCH_WORKERS=1, the probe's protocols on
    127.0.0.1:0 and `env`; `addrs` maps each protocol to its (host, port)."""

    def __init__(self, a, protocols, env):
        full = {k: v for k, v in os.environ.items() if not k.startswith("PROTOBENCH_")}
        full.update({f"PROTOBENCH_{p.upper().replace('-', '_')}_ADDR": "127.0.0.1:0" for p in protocols})
        full["PROTOBENCH_WORKERS"] = "1"
        full.update(env)
        self.err = tempfile.TemporaryFile()
        self.addrs, self.tls, self.extra, self.want = {}, {}, [], len(protocols)
        self.ready = threading.Event()
        self.proc = subprocess.Popen("exec " + a.start, shell=True, cwd=a.dir, env=full, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=self.err, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.ready.wait(a.start_timeout)
        self.stopped = False

    def _read(self):
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            m = re.fullmatch(r"listening protocol=(\S+) addr=(\S+) tls=(true|false)", line)
            if m and len(self.addrs) < self.want:
                self.addrs[m.group(1)] = addr(m.group(2))
                self.tls[m.group(1)] = m.group(3)
                if len(self.addrs) == self.want:
                    self.ready.set()
            else:
                self.extra.append(line)
        self.ready.set()

    def started(self):
        return len(self.addrs) == self.want

    def why(self):
        self.err.seek(0)
        return f"exit {self.proc.poll()}, stderr {self.err.read()[-300:]!r}, stdout {self.extra[-3:]!r}"

    def stop(self, cat):
        """SIGTERM: the server exits 0 within 15 s, having printed nothing but its listening lines."""
        self.stopped = True
        start = time.monotonic()
        try:
            self.proc.send_signal(signal.SIGTERM)
            rc = self.proc.wait(15)
        except subprocess.TimeoutExpired:
            rc = None
        secs = time.monotonic() - start
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # what is left of the group this probe started
        except OSError:
            pass
        self.proc.wait()
        self.reader.join(5)
        report(rc == 0, cat, "SIGTERM exits 0", "exit 0 within 15 s",
               f"exit {rc} after {secs:.1f} s" if rc is not None else "still running 15 s after SIGTERM")
        report(not self.extra, cat, "stdout holds only the listening lines", "nothing else on stdout", repr(self.extra[:3]))
        self.err.close()


def run_variant(cat, a, targets, env, body):
    """Starts a Variant serving the probe's protocols with `env`, runs body(variant), stops it (unless body did)."""
    if not a.start:
        skip(cat, "all", "no --start command given")
        return
    v = Variant(a, list(targets), env)
    try:
        report(v.started(), cat, "server starts", f"{v.want} listening lines within {a.start_timeout:.0f} s "
               f"with {' '.join(f'{k}={x}' for k, x in env.items())}",
               f"listening on {len(v.addrs)}" + ("" if v.started() else f": {v.why()}"))
        if v.started():
            body(v)
    except OSError as e:  # a connection the checks needed failed: the rest of the phase cannot run
        report(False, cat, "connections", "every connection of the phase made", f"{type(e).__name__}: {e}")
    finally:
        if not v.stopped:
            v.stop(cat)


# ---------------------------------------------------------------- the failure draw

FAILURE_RATE, FAILURE_SEED, FAILURE_CALLS = 0.2, 20240601, 200
U64 = (1 << 64) - 1


def splitmix64(x):
    z = (x + 0x9E3779B97F4A7C15) & U64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & U64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & U64
    return z ^ (z >> 31)


def injected(seed, k, rate):
    """contract/README.md "Failure draw": request k fails when (splitmix64(seed + k) >> 11) * 2^-53 < rate."""
    return (splitmix64((seed + k) & U64) >> 11) * 2.0 ** -53 < rate


class KeepAlive:
    """HTTP/1.1 requests one at a time on one connection, opened again when the server closed it."""

    def __init__(self, t, ctx=None):
        self.t, self.ctx, self.s = t, ctx, None

    def ask(self, method, path, body=b"", ctype=None):
        """Returns (status, body); a connection closed before any answer is opened again once
        (the request then never reached an operation, so no draw was spent on it)."""
        head = f"{method} {path} HTTP/1.1\r\nHost: x\r\n" + (f"Content-Type: {ctype}\r\n" if ctype else "")
        head += f"Content-Length: {len(body)}\r\n" if body or method == "POST" else ""
        for attempt in (0, 1):
            if self.s is None:
                self.s = connect(self.t, 10, self.ctx)
            try:
                self.s.sendall(head.encode() + b"\r\n" + body)
                data, closed = read_h1(self.s, time.monotonic(), 30)
            except OSError:
                data, closed = b"", True
            top, _, rest = data.partition(b"\r\n\r\n")
            if closed or re.search(rb"(?im)^connection:\s*close", top):
                self.close()
            if status_line(data) is not None or attempt:
                if re.search(rb"(?im)^transfer-encoding:\s*chunked", top):
                    rest = dechunk(rest)
                return status_line(data), rest

    def close(self):
        if self.s is not None:
            self.s.close()
            self.s = None


def draw_caller(protocol, t, tls):
    """(call, refused): one GetInteger call on `protocol` -> '0' (answered), '1' (the contract's injected
    failure) or a description of anything else; one unknown-file request -> whether refused as usual."""
    if protocol in ("rest-h2", "grpc"):
        c = H2(t, ctx=tls_ctx(["h2"]) if tls else None)

        def h2_call():
            if protocol == "grpc":
                r = c.grpc("/protobench.v1.Bench/GetInteger", grpc_frame(b""))
                msg = urllib.parse.unquote(r["headers"].get("grpc-message", ""))
                return {"0": "0"}.get(r["grpc-status"]) or ("1" if (r["grpc-status"], msg) == ("14", "injected failure")
                                                            else f"grpc-status {r['grpc-status']} {msg!r}")
            r = c.request("GET", "/v1/tasks/integer")
            return rest_draw(r["status"], r["data"])

        def h2_refused():
            if protocol == "grpc":
                return c.grpc("/protobench.v1.Bench/GetFile", grpc_frame(b"\x0a\x04nope"))["grpc-status"] == "5"
            return c.request("GET", "/v1/tasks/files/nope")["status"] == 404
        return h2_call, h2_refused
    k = KeepAlive(t, tls_ctx(["http/1.1"]) if tls else None)
    if protocol == "soap":
        get = soap_env(f'<GetIntegerRequest xmlns="{NS}"/>')
        nope = soap_env(f'<GetFileRequest xmlns="{NS}"><name>nope</name></GetFileRequest>')
        ctype = "text/xml; charset=utf-8"

        def soap_call():
            status, body = k.ask("POST", "/soap", get, ctype)
            code, string = soap_fault(body)
            if status == 200:
                return "0"
            if status == 500 and re.fullmatch(r"(?:[\w.-]+:)?Server", code or "") and string == "injected failure":
                return "1"
            return f"{status} {code} {string!r}"
        return soap_call, lambda: k.ask("POST", "/soap", nope, ctype)[0] == 500
    return (lambda: rest_draw(*k.ask("GET", "/v1/tasks/integer")),
            lambda: k.ask("GET", "/v1/tasks/files/nope")[0] == 404)


def rest_draw(status, body):
    if status == 200:
        return "0"
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    return "1" if status == 500 and doc == {"code": 500, "message": "injected failure"} else f"{status} {body[:100]!r}"


def probe_failures(v, tls, spin_s):
    """FAILURE_CALLS GetInteger calls per protocol, one at a time, with an unknown file asked after every
    tenth (refused before the draw: it must not advance the counter). Each protocol's failures must be
    exactly the contract's splitmix64 draw for k = o..o+n-1, o a multiple of n (a counter per protocol,
    or one shared with protocols asked before), and their number within the 99.9% binomial interval."""
    cat, n, rate = "failure", FAILURE_CALLS, FAILURE_RATE
    want = "".join("1" if injected(FAILURE_SEED, k, rate) else "0" for k in range(n * len(v.addrs)))
    half = 3.29 * (n * rate * (1 - rate)) ** 0.5
    lo, hi = n * rate - half, n * rate + half
    for i, (p, t) in enumerate(v.addrs.items()):
        call, refused = draw_caller(p, t, tls)
        seq, odd, refusals, fastest = [], [], 0, float("inf")
        for j in range(n):
            start = time.monotonic()
            got = call()
            fastest = min(fastest, time.monotonic() - start)
            seq.append(got if got in ("0", "1") else "?")
            odd += [] if got in ("0", "1") else [got]
            if j % 10 == 9:
                refusals += refused()
        seq = "".join(seq)
        report(not odd and refusals == n // 10, cat, f"{p} answers", "each call answered or failed as the contract says "
               "(500 {code, message: injected failure}, UNAVAILABLE or soap:Server 'injected failure'); each unknown file refused",
               f"{len(odd)} other answers {odd[:2]!r}; {refusals} of {n // 10} unknown files refused")
        report(fastest >= spin_s, "service", f"{p} spin", f"each of the {n} calls took >= {spin_s * 1000:.0f} ms "
               f"(spin:{spin_s * 1000:.0f}ms)", f"the fastest {fastest * 1000:.1f} ms")
        offset = next((o for o in range(0, n * (i + 1), n) if want[o:o + n] == seq), None)
        count = seq.count("1")
        report(offset is not None and lo <= count <= hi, cat, f"{p} draw",
               f"the splitmix64 draw of seed {FAILURE_SEED} rate {rate} for k = o..o+{n - 1} (o a multiple of {n}); "
               f"{lo:.0f}..{hi:.0f} failures",
               f"{count} failures, " + (f"k from {offset}" if offset is not None else f"{seq[:50]}... matches no o "
                                        f"(from 0: {want[:50]}...)"))


# ---------------------------------------------------------------- service time and draining

SLEEP_S = 1.0


def opened_call(protocol, t):
    """A connection opened now (HTTP/2: its SETTINGS exchanged) for one GetInteger call; returns
    call() -> (answered OK, seconds), which closes it."""
    if protocol in ("rest-h2", "grpc"):
        c = H2(t, timeout=30, graceful=True)
        c.settings()

        def ask():
            return (c.grpc("/protobench.v1.Bench/GetInteger", grpc_frame(b""), within=30)["grpc-status"] == "0"
                    if protocol == "grpc" else c.request("GET", "/v1/tasks/integer", within=30)["status"] == 200)
    else:
        c = KeepAlive(t)
        c.s = connect(t, 10)

        def ask():
            return (c.ask("POST", "/soap", soap_env(f'<GetIntegerRequest xmlns="{NS}"/>'), "text/xml; charset=utf-8")
                    if protocol == "soap" else c.ask("GET", "/v1/tasks/integer"))[0] == 200

    def call():
        start = time.monotonic()
        try:
            ok = ask()
        except OSError:
            ok = False
        finally:
            c.close()
        return ok, time.monotonic() - start
    return call


def one_call(protocol, t):
    """One GetInteger call on a new connection: (answered OK, seconds)."""
    try:
        return opened_call(protocol, t)()
    except OSError:
        return False, 0.0


def probe_service(v):
    """PROTOBENCH_SERVICE_TIME=sleep:1s with one worker: 8 calls side by side on each protocol each take
    >= 1 s and all end within 4 s (sleep blocks no other request: one at a time would take 8 s);
    then a call in flight when SIGTERM arrives is still answered."""
    cat, n = "service", 8
    for p, t in v.addrs.items():
        results = [None] * n
        threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, one_call(p, t)), daemon=True) for i in range(n)]
        start = time.monotonic()
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        total = time.monotonic() - start
        done = [r for r in results if r is not None]
        ok = len(done) == n and all(r[0] for r in done)
        report(ok and min(r[1] for r in done) >= SLEEP_S, cat, f"{p} sleep", f"{n} calls answered, each after >= {SLEEP_S:.0f} s",
               f"{sum(1 for r in done if r[0])} answered, " + ", ".join(f"{r[1]:.2f}" for r in done) + " s")
        report(ok and total < n * SLEEP_S / 2, cat, f"{p} sleep blocks no other request",
               f"{n} side by side done within {n * SLEEP_S / 2:.0f} s (one at a time: {n * SLEEP_S:.0f} s)", f"{total:.2f} s")
    p = "rest" if "rest" in v.addrs else next(iter(v.addrs))
    result, call = [], opened_call(p, v.addrs[p])  # connected before: SIGTERM may close the listener at once
    th = threading.Thread(target=lambda: result.append(call()), daemon=True)
    th.start()
    time.sleep(SLEEP_S / 2)  # the call is sleeping in the server
    v.stop(cat)
    th.join(30)
    report(bool(result) and result[0][0], cat, f"{p} call in flight at SIGTERM", "answered (SIGTERM finishes requests in flight)",
           f"answered after {result[0][1]:.1f} s" if result and result[0][0] else f"not answered {result!r}")


def phase_service(targets, a):
    run_variant("service", a, targets, {"PROTOBENCH_SERVICE_TIME": f"sleep:{SLEEP_S * 1000:.0f}ms"}, probe_service)


# ---------------------------------------------------------------- TLS

TLS_STREAMS = 7
# The tls variant's service time: every call of its failure draw spins this long (a call of a server that
# ignores it takes well under a millisecond on loopback).
SPIN_S = 0.005


def guarded(results, key, fn):
    """Runs fn (a thread's body); a connection error becomes the result (0, 'error: ...')."""
    results[key] = (0.0, "no result: the thread did not end")
    try:
        fn()
    except OSError as e:
        results[key] = (0.0, f"{type(e).__name__}: {e}")


def tls_idle(protocol, t, idle, answer):
    """A TLS connection (HTTP/2 with its SETTINGS for rest-h2 and grpc, answering PINGs) left idle, after
    one answer if `answer` (to a request no operation serves: no service time, no draw); (seconds, closed)."""
    if protocol in ("rest-h2", "grpc"):
        c = H2(t, ctx=tls_ctx(["h2"]))
        c.settings()
        if answer:
            r = (c.grpc("/protobench.v1.Bench/Nope", grpc_frame(b"")) if protocol == "grpc"
                 else c.request("GET", "/v1/nope"))
            if r["status"] is None:
                return 0.0, False
        start = time.monotonic()
        while not c.closed and time.monotonic() - start < idle + 3:
            c.pump(idle + 3 - (time.monotonic() - start))
        c.close()
        return time.monotonic() - start, c.closed
    s = connect(t, 10, tls_ctx(["http/1.1"]))
    if answer:
        s.sendall(f"GET {'/soap?wsdl' if protocol == 'soap' else '/v1/nope'} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        if status_line(read_h1(s, time.monotonic(), 10)[0]) is None:
            return 0.0, False
    _, secs, closed = read_until_closed(s, idle + 3)
    s.close()
    return secs, closed


def probe_tls(v, idle, read):
    """TLS on every listener (a throw-away self-signed certificate): ALPN as the contract says; handshakes
    that never start or stop after a partial ClientHello, connections silent after the handshake or idle
    after an answer, closed by the idle timeout; trickled requests cut by the read timeout;
    PROTOBENCH_MAX_STREAMS advertised. The waits run side by side."""
    cat = "tls"
    for p, t in v.addrs.items():
        want = "h2" if p in ("rest-h2", "grpc") else "http/1.1"
        try:
            s = connect(t, 10, tls_ctx())
            got = s.selected_alpn_protocol()
            s.close()
        except OSError as e:
            got = f"handshake failed: {e}"
        report(got == want and v.tls[p] == "true", cat, f"{p} ALPN", f"{want} selected of h2,http/1.1 (listening tls=true)",
               f"{got!r} (tls={v.tls[p]})")
    results, threads = {}, []
    for p, t in v.addrs.items():
        for name, send in [("handshake never started", b""),
                           ("handshake stopped after a partial ClientHello", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")]:
            def run(p=p, t=t, name=name, send=send):
                s = connect(t, 10)
                if send:
                    s.sendall(send)
                results[(p, name)] = read_until_closed(s, idle + 3)[1:]
                s.close()
            threads.append(threading.Thread(target=guarded, args=(results, (p, name), run), daemon=True))
        for name in ("silent after the handshake", "idle after an answer"):
            def run_idle(p=p, t=t, name=name):
                results[(p, name)] = tls_idle(p, t, idle, answer=name != "silent after the handshake")
            threads.append(threading.Thread(target=guarded, args=(results, (p, name), run_idle), daemon=True))
    tls_targets = dict(v.addrs)
    threads.append(threading.Thread(target=probe_trickle, args=(cat, {p: t for p, t in tls_targets.items()
                                                                      if p in ("rest", "soap")}, read, tls_ctx(["http/1.1"])),
                                    daemon=True))
    for th in threads:
        th.start()
    for p in ("rest-h2", "grpc"):
        if p in v.addrs:
            try:
                c = H2(v.addrs[p], ctx=tls_ctx(["h2"]))
                value = c.settings().get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS)
                c.close()
            except OSError as e:
                value = f"no TLS connection: {e}"
            report(value == TLS_STREAMS, cat, f"{p} PROTOBENCH_MAX_STREAMS={TLS_STREAMS}",
                   f"SETTINGS_MAX_CONCURRENT_STREAMS {TLS_STREAMS}", f"{value}")
    for th in threads:
        th.join(max(idle, read) + 20)
    for (p, name), (secs, closed) in sorted(results.items()):
        report(closed is True and secs >= idle / 2, cat, f"{p} {name}", f"closed {idle / 2:.0f}..{idle + 3:.0f} s after "
               "it opened (after the answer, if any)",
               f"closed after {secs:.1f} s" if closed is True else (closed or f"still open after {secs:.1f} s"))


def phase_tls(targets, a):
    """The server with TLS, the timeouts, PROTOBENCH_MAX_STREAMS and the failure draw set: probe_tls, then
    probe_failures over TLS."""
    certs = tempfile.mkdtemp(prefix="probe-tls-")
    cert, key = os.path.join(certs, "cert.pem"), os.path.join(certs, "key.pem")
    try:
        made = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                               "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                               "-keyout", key, "-out", cert], capture_output=True)
        if made.returncode != 0:
            report(False, "tls", "certificate", "openssl makes a self-signed certificate", made.stderr[-200:])
            return
        # One server for all (a start costs up to half a minute): the TLS checks never reach an operation, so
        # the draw's counter is still at 0 when the failure calls start; each of those spins SPIN_S.
        env = {"PROTOBENCH_TLS_CERT": cert, "PROTOBENCH_TLS_KEY": key, "PROTOBENCH_IDLE_TIMEOUT": f"{a.idle:.0f}s",
               "PROTOBENCH_READ_TIMEOUT": f"{a.read:.0f}s", "PROTOBENCH_MAX_STREAMS": str(TLS_STREAMS),
               "PROTOBENCH_FAILURE_RATE": str(FAILURE_RATE), "PROTOBENCH_FAILURE_SEED": str(FAILURE_SEED),
               "PROTOBENCH_SERVICE_TIME": f"spin:{SPIN_S * 1000:.0f}ms"}

        def both(v):
            probe_tls(v, a.idle, a.read)
            probe_failures(v, tls=True, spin_s=SPIN_S)
        run_variant("tls", a, targets, env, both)
    finally:
        for f in (cert, key):
            if os.path.exists(f):
                os.remove(f)
        os.rmdir(certs)


# ---------------------------------------------------------------- configuration

# (variable, value): each refused at start (contract/README.md: "an invalid
# value of any variable makes the server exit non-zero at start, naming the
# variable and what it accepts").
BAD_CONFIG = [
    ("PROTOBENCH_IDLE_TIMEOUT", "5"), ("PROTOBENCH_IDLE_TIMEOUT", "0s"), ("PROTOBENCH_READ_TIMEOUT", "soon"),
    ("PROTOBENCH_READ_TIMEOUT", "-1s"), ("PROTOBENCH_READ_TIMEOUT", "1m"), ("PROTOBENCH_READ_TIMEOUT", "0s"),
    ("PROTOBENCH_MAX_STREAMS", "0"), ("PROTOBENCH_MAX_STREAMS", "many"), ("PROTOBENCH_MAX_STREAMS", "4294967296"),
    ("PROTOBENCH_WORKERS", "0"), ("PROTOBENCH_WORKERS", "abc"), ("PROTOBENCH_FAILURE_RATE", "2"),
    ("PROTOBENCH_FAILURE_SEED", "-1"), ("PROTOBENCH_SERVICE_TIME", "nap:1ms"), ("PROTOBENCH_SERVICE_TIME", "sleep:5"),
    ("PROTOBENCH_MAX_REQUEST_BYTES", "x"),
]


def probe_config(start, cwd, protocol):
    """Starts the server (`start`, a shell command run in `cwd`) serving `protocol`
    once per bad value: each must exit non-zero, naming the variable, without
    listening and without naming internals."""
    cat = "config"
    addr_var = f"PROTOBENCH_{protocol.upper().replace('-', '_')}_ADDR"
    base = {k: v for k, v in os.environ.items() if not k.startswith("PROTOBENCH_")}
    base[addr_var] = "127.0.0.1:0"
    for var, value in BAD_CONFIG:
        env = dict(base, **{var: value})
        proc = subprocess.Popen(start, shell=True, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = (x.decode(errors="replace") for x in proc.communicate(timeout=60))
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)  # the server started: its whole process group goes
            proc.communicate()
            rc, out, err = None, "", "still running after 60 s"
        leak = INTERNALS.search(err)
        ok = rc not in (0, None) and var in err + out and "listening" not in out and not leak
        report(ok, cat, f"{var}={value}", "exit non-zero at start, naming the variable (no internals)",
               f"exit {rc}: {(err + out).strip()[-200:]!r}" + (f" (names {leak.group(0)!r})" if leak else ""))


def phase_http(targets, a):
    for p in ("rest", "soap"):
        if p in targets:
            probe_http(targets[p], p)
        else:
            skip("http", p, f"the server does not serve {p}")


def phase_json(targets, a):
    if "rest" in targets:
        probe_json(targets["rest"])
    else:
        skip("json", "all", "the server does not serve rest")


def phase_xml(targets, a):
    if "soap" in targets:
        probe_soap(targets["soap"], a.pid)
    else:
        skip("xml", "all", "the server does not serve soap")


def phase_grpc(targets, a):
    if "grpc" in targets:
        probe_grpc(targets["grpc"], a.max_request_bytes)
    else:
        skip("grpc", "all", "the server does not serve grpc")


def phase_errors(targets, a):
    for p in ("rest", "rest-h2"):
        if p in targets:
            probe_rest_errors(targets[p], p)
    if "soap" in targets:
        probe_soap_errors(targets["soap"])
    if "grpc" in targets:
        probe_grpc_errors(targets["grpc"])


def phase_limit(targets, a):
    probe_limit(targets, a.max_request_bytes)


def phase_h2flood(targets, a):
    for p in ("rest-h2", "grpc"):
        if p in targets:
            probe_h2(targets[p], p, a.idle)
        else:
            skip("h2flood", p, f"the server does not serve {p}")


def phase_idle(targets, a):
    for p in ("rest", "soap"):
        if p in targets:
            probe_idle(targets[p], p, a.idle, a.read)
        else:
            skip("idle", p, f"the server does not serve {p}")


def phase_fds(targets, a):
    probe_fds(targets, a.pid, a.idle, a.spare_fds)


def phase_trickle(targets, a):
    probe_trickle("trickle", targets, a.read)


def phase_config(targets, a):
    if a.start and targets:
        probe_config(a.start, a.dir, next(iter(targets)))
    else:
        skip("config", "all", "no --start command given")


# The probe's phases in the order they run (`--only` picks some of them).
PHASES = {
    "http": phase_http,
    "json": phase_json,
    "xml": phase_xml,
    "grpc": phase_grpc,
    "errors": phase_errors,
    "limit": phase_limit,
    "h2flood": phase_h2flood,
    "idle": phase_idle,
    "trickle": phase_trickle,
    "fds": phase_fds,
    "service": phase_service,
    "tls": phase_tls,
    "config": phase_config,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pid", type=int, required=True)
    for p in ("rest", "rest-h2", "grpc", "soap"):
        ap.add_argument(f"--{p}", type=addr)
    ap.add_argument("--idle", type=float, default=2.0)
    ap.add_argument("--read", type=float, default=2.0)
    ap.add_argument("--spare-fds", type=int, default=64)
    ap.add_argument("--max-request-bytes", type=int, default=8388608)
    ap.add_argument("--start", help="the server's start command (a shell command), for the config phase")
    ap.add_argument("--dir", default=".", help="the directory the start command runs in")
    ap.add_argument("--start-timeout", type=float, default=30.0, help="seconds a variant may take to print its listening lines")
    ap.add_argument("--only", metavar="PHASE,...", help=f"run only these phases (of: {', '.join(PHASES)})")
    ap.add_argument("--repeat", type=int, default=1, metavar="N", help="run the phases N times in a row (each check reported each time)")
    ap.add_argument(
        "--deviation",
        action="append",
        default=[],
        metavar="'CATEGORY CHECK=WHY'",
        help="a known deviation of the server's library (from its manifest's [probe] deviations)",
    )
    a = ap.parse_args()
    for d in a.deviation:
        key, _, why = d.partition("=")
        DEVIATIONS[key.strip()] = why.strip()
    targets = {p: getattr(a, p.replace("-", "_")) for p in ("rest", "rest-h2", "grpc", "soap")}
    targets = {p: t for p, t in targets.items() if t}
    LISTENERS.update({t[1]: p for p, t in targets.items()})
    only = set(a.only.split(",")) if a.only else None
    unknown = (only or set()) - set(PHASES)
    if unknown:
        ap.error(f"--only: unknown phase(s) {', '.join(sorted(unknown))}; expected some of {', '.join(PHASES)}")
    for _ in range(a.repeat):
        for name in PHASES:
            if only is None or name in only:
                PHASES[name](targets, a)
    try:
        os.kill(a.pid, 0)
        alive = True
    except OSError:
        alive = False
    report(alive, "server", "still running", "the server process alive after the probe", "alive" if alive else "gone")
    for key, why in DEVIATIONS.items():
        if key in DEVIATIONS_SEEN or only is not None:  # a phase left out may hold the check
            continue
        report(False, "manifest", "deviation", "a check named by each [probe] deviations entry", f"no check `{key}` ({why})")
    failed = sum(1 for r in REPORT if r is False)
    devs = sum(1 for r in REPORT if r == "dev")
    print(
        f"probe: {sum(1 for r in REPORT if r is True)} ok, {failed} failed, "
        f"{devs} known deviations, {sum(1 for r in REPORT if r is None)} skipped"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
