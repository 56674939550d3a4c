"""Third-party clients against any stack's streaming operations, each result
judged against the contract's stream vectors (contract/stream-vectors):

- grpcurl, from the .proto files (no server reflection needed), reads the
  server-streaming Subscribe at rate 0 and at 1,000 events/s, and a
  subscription over the limit must fail with InvalidArgument;
- buf curl reads Connect's server-streaming Subscribe the same way (HTTP/1.1,
  `application/connect+proto`), and refuses the subscription over the limit
  with invalid_argument;
- curl -N reads the SSE subscription (ids 1..N, every event, the end event);
- Python's websockets runs the echo stream in text and binary frames
  (ws_echo.py, beside this file).

Feed stamps (`scheduledNs`) are clock times: at a rate they must differ from
the first event's by the vector's offsets exactly, at rate 0 never decrease
(contract/README.md, "Checking a received stream"). Everything else is
compared by value with the vector's canonical JSON.

Usage: stream_check.py [--grpc HOST:PORT] [--connect HOST:PORT] [--sse HOST:PORT] [--websocket HOST:PORT] [--cacert CA.pem]
With --cacert the clients use TLS and name the server `localhost`. Prints one
`ok ...` line per check and exits 0; otherwise prints `FAIL ...` lines and
exits 1 (2 when a client is missing). Each client run is bounded (60 s).
"""

import argparse
import asyncio
import json
import os
import pathlib
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
CONTRACT = HERE.parent
VECTORS = CONTRACT / "stream-vectors"
sys.path.insert(0, str(HERE))


def norm(v):
    """Canonical JSON compared by value: numbers as floats, nulls dropped."""
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return v


def judge_feed(workload, events):
    """None if `events` (parsed JSON objects) are the vector's feed, else why not."""
    want = [json.loads(line) for line in (VECTORS / workload / "response.jsonl").read_text().splitlines() if line]
    rate = json.loads((VECTORS / workload / "request.jsonl").read_text().splitlines()[0]).get("rate", 0)
    if len(events) != len(want):
        return f"found {len(events)} events, expected {len(want)}"
    stamps = [int(e.get("scheduledNs", 0)) for e in events]
    for i, (found, expected) in enumerate(zip(events, want)):
        if rate:
            offset = stamps[i] - stamps[0]
            if offset != int(expected["scheduledNs"]):
                return f"event {i + 1}: stamp offset {offset} ns, expected {expected['scheduledNs']}"
        elif i and stamps[i] < stamps[i - 1]:
            return f"event {i + 1}: stamp {stamps[i]} before the previous {stamps[i - 1]}"
        f = {k: v for k, v in found.items() if k != "scheduledNs"}
        e = {k: v for k, v in expected.items() if k != "scheduledNs"}
        if norm(f) != norm(e):
            return f"event {i + 1}: found {json.dumps(f)[:120]}, expected {json.dumps(e)[:120]}"
    return None


def run(argv):
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def request_of(workload):
    return (VECTORS / workload / "request.jsonl").read_text().splitlines()[0]


def parse_json_seq(text):
    """The JSON values printed one after another (grpcurl's and buf's stream output)."""
    decoder, values, i = json.JSONDecoder(), [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return values
        value, i = decoder.raw_decode(text, i)
        values.append(value)


def subscribe_checks(name, call, invalid):
    """Subscribe at rate 0 and at 1,000 events/s, each judged against its
    vector, and one over the limit refused. `call(request_json)` is the
    client's command line for one subscription; `invalid` is what it prints
    on stderr for the InvalidArgument refusal."""
    failures = []
    for workload in ["stream.sub.1k", "stream.sub.1k.r1000"]:
        out = run(call(request_of(workload)))
        if out.returncode != 0:
            failures.append(f"{name} {workload}: exit {out.returncode}: {out.stderr.strip()[:300]}")
            continue
        events = parse_json_seq(out.stdout)
        why = judge_feed(workload, events)
        if why:
            failures.append(f"{name} {workload}: {why}")
        else:
            print(f"ok   {name} Subscribe {workload} ({len(events)} events)")
    out = run(call('{"count":2000000}'))
    if out.returncode == 0 or invalid not in out.stderr:
        failures.append(f"{name} count 2000000: expected {invalid}, got exit {out.returncode}: {out.stderr.strip()[:200]}")
    else:
        print(f"ok   {name} Subscribe count 2000000: {invalid}")
    return failures


def grpcurl_checks(grpcurl, addr, ca):
    host = f"localhost:{addr.rsplit(':', 1)[1]}" if ca else addr
    base = [grpcurl, "-import-path", str(CONTRACT / "proto"), "-proto", "protobench/v1/stream.proto", "-emit-defaults"]
    base += ["-cacert", ca] if ca else ["-plaintext"]
    return subscribe_checks("grpcurl", lambda request: base + ["-d", request, host, "protobench.v1.Streams/Subscribe"], "InvalidArgument")


def buf_checks(buf, addr, ca):
    """Connect's server streaming (HTTP/1.1, application/connect+proto) by buf curl."""
    url = f"https://localhost:{addr.rsplit(':', 1)[1]}" if ca else f"http://{addr}"
    base = [buf, "curl", "--protocol", "connect", "--schema", str(CONTRACT / "proto"), "--emit-defaults"]
    base += ["--cacert", ca] if ca else []
    return subscribe_checks(
        "buf curl --protocol connect",
        lambda request: base + ["-d", request, f"{url}/protobench.v1.Streams/Subscribe"],
        "invalid_argument",
    )


def parse_sse(body):
    """(events, ids, end data) of an SSE body; raises on an unexpected event."""
    events, ids, end = [], [], None
    for block in body.replace("\r\n", "\n").split("\n\n"):
        fields = {}
        for line in block.splitlines():
            if line.startswith(":") or ":" not in line:
                continue
            name, value = line.split(":", 1)
            fields[name] = value[1:] if value.startswith(" ") else value
        kind = fields.get("event")
        if kind is None and not fields:
            continue
        if kind == "feed":
            events.append(json.loads(fields["data"]))
            ids.append(fields.get("id"))
        elif kind == "end":
            end = fields.get("data")
        else:
            raise ValueError(f"unexpected event {kind!r} in {block[:120]!r}")
    return events, ids, end


def curl_checks(curl, addr, ca):
    scheme = "https" if ca else "http"
    host = f"localhost:{addr.rsplit(':', 1)[1]}" if ca else addr
    failures = []
    for workload in ["stream.sub.8k", "stream.sub.1k.r1000"]:
        req = json.loads(request_of(workload))
        query = "&".join(f"{k}={v}" for k, v in req.items())
        argv = [curl, "-sS", "-N", "--fail", "--http1.1", "-D", "-", f"{scheme}://{host}/v1/stream/sse?{query}"]
        if ca:
            argv[1:1] = ["--cacert", ca]
        out = run(argv)
        if out.returncode != 0:
            failures.append(f"curl SSE {workload}: exit {out.returncode}: {out.stderr.strip()[:200]}")
            continue
        head, _, body = out.stdout.replace("\r\n", "\n").partition("\n\n")
        if "content-type: text/event-stream" not in head.lower():
            failures.append(f"curl SSE {workload}: no text/event-stream content type in {head[:200]!r}")
            continue
        try:
            events, ids, end = parse_sse(body)
        except (ValueError, KeyError) as e:
            failures.append(f"curl SSE {workload}: {e}")
            continue
        count = req["count"]
        why = judge_feed(workload, events)
        if not why and ids != [str(s) for s in range(1, count + 1)]:
            why = f"ids {ids[:5]}..., expected 1..{count}"
        if not why and (end is None or json.loads(end) != {"count": count}):
            why = f"end event {end!r}, expected {{\"count\":{count}}}"
        if why:
            failures.append(f"curl SSE {workload}: {why}")
        else:
            print(f"ok   curl -N SSE {workload} ({len(events)} events, the end event)")
    return failures


def websocket_checks(addr, ca):
    import ws_echo  # beside this file; needs the websockets package

    scheme = "wss" if ca else "ws"
    host = f"localhost:{addr.rsplit(':', 1)[1]}" if ca else addr
    failures = []
    for workload in ["stream.echo.64b", "stream.echo.64k"]:
        try:
            asyncio.run(asyncio.wait_for(ws_echo.main(f"{scheme}://{host}/v1/stream/ws/echo", VECTORS / workload, ca), 60))
        except Exception as e:  # noqa: BLE001 - any failure is the check's verdict
            failures.append(f"websockets echo {workload}: {type(e).__name__}: {str(e)[:200]}")
    return failures


def go_tool(name):
    """A client `go install` put on PATH or in GOPATH/bin; exits 2 if missing."""
    gopath = subprocess.run(["go", "env", "GOPATH"], capture_output=True, text=True, check=False).stdout.strip()
    path = shutil.which(name) or os.path.join(gopath or os.path.expanduser("~/go"), "bin", name)
    if not os.access(path, os.X_OK):
        print(f"stream_check: {name} not found (scripts/setup.sh installs it)", file=sys.stderr)
        sys.exit(2)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grpc", help="HOST:PORT of the grpc listener")
    parser.add_argument("--connect", help="HOST:PORT of the connect listener (Connect's server streaming)")
    parser.add_argument("--sse", help="HOST:PORT of the listener serving SSE (rest)")
    parser.add_argument("--websocket", help="HOST:PORT of the listener serving WebSocket (rest)")
    parser.add_argument("--cacert", help="CA of the server's certificate (TLS)")
    args = parser.parse_args()
    failures = []
    if args.grpc:
        failures += grpcurl_checks(go_tool("grpcurl"), args.grpc, args.cacert)
    if args.connect:
        failures += buf_checks(go_tool("buf"), args.connect, args.cacert)
    if args.sse:
        curl = shutil.which("curl")
        if not curl:
            print("stream_check: curl not found", file=sys.stderr)
            sys.exit(2)
        failures += curl_checks(curl, args.sse, args.cacert)
    if args.websocket:
        try:
            import websockets  # noqa: F401
        except ImportError:
            print("stream_check: websockets not found (python3 -m pip install websockets==17.4)", file=sys.stderr)
            sys.exit(2)
        failures += websocket_checks(args.websocket, args.cacert)
        if not [f for f in failures if f.startswith("websockets")]:
            print("ok   websockets echo stream.echo.64b, stream.echo.64k (text and binary frames)")
    for f in failures:
        print(f"FAIL {f}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
