"""The streaming operations' checks (issue 31) for tests/check.py: what
`protobench verify --stream` does not send. Bad input (a message over the
size limit, out-of-range counts, undecodable frames and messages, unknown
query parameters) gets the contract's close code / status / HTTP error and
the server goes on serving; an echo's replies all come back when the client
closes right after its last message; a long stream outlives
PROTOBENCH_READ_TIMEOUT; an idle stream is closed with 1008; events never
arrive before their scheduledNs; SSE's Last-Event-ID; a poll's page limits;
the failure draw before the upgrade. WebSocket by the `websockets` client
(sync API), gRPC by grpcio, HTTP by http.client.

Each function takes check.py's `check`, the server and its Clients.
"""

from __future__ import annotations

import json
import ssl
import time

import grpc
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

import pbserver  # noqa: F401  (puts gen/ on sys.path)
from pbserver import protos

spb = protos.stream_pb2
WAIT = 30  # seconds: the longest any one exchange may take (a loaded machine)


def ws_url(server, path: str) -> str:
    host, port = server.addrs["rest"]
    return f"{'wss' if server.tls else 'ws'}://{host}:{port}{path}"


def ws(server, c, path: str):
    ctx = None
    if server.tls:
        ctx = ssl.create_default_context(cafile=c.cafile)
        ctx.check_hostname = False
    # max_queue=None: the client reads every reply even while it closes
    return connect(ws_url(server, path), ssl=ctx, open_timeout=WAIT, close_timeout=WAIT, max_size=None,
                   max_queue=None)


def closed_with(sock, sends=()) -> tuple[int | None, str, list]:
    """Sends `sends`, then reads until the server closes: (code, reason, messages)."""
    got = []
    try:
        for m in sends:
            sock.send(m)
        while True:
            got.append(sock.recv(timeout=WAIT))
    except ConnectionClosed as e:
        rcvd = e.rcvd
        return (rcvd.code if rcvd else None), (rcvd.reason if rcvd else ""), got
    except TimeoutError:
        return None, "no close within the wait", got


def check_ws(check, server, c, tag: str, limit: int):
    # Echo in both frame types; the client closes right after its last message
    # and still gets every reply (the server reads one frame at a time).
    for binary in (False, True):
        kind = "binary" if binary else "text"
        msgs = [spb.StreamMessage(seq=i, payload=f"m{i}" * 3) for i in range(1, 21)]
        with ws(server, c, "/v1/stream/ws/echo") as s:
            for m in msgs:
                s.send(m.SerializeToString() if binary else json.dumps({"seq": m.seq, "payload": m.payload}))
            s.close()
            replies = []
            try:
                while True:
                    replies.append(s.recv(timeout=WAIT))
            except ConnectionClosed:
                pass
        want = [m.SerializeToString() if binary else json.dumps({"seq": m.seq, "payload": m.payload},
                                                                  separators=(",", ":")) for m in msgs]
        check(f"{tag} ws echo {kind}: every reply before the close", replies == want,
              f"{len(replies)} replies, first {replies[:1]!r}")
        check(f"{tag} ws echo {kind}: the client's close answered with 1000",
              s.close_code == 1000, repr(s.close_code))

    code, _, _ = closed_with(ws(server, c, "/v1/stream/ws/echo"), [b"x" * (limit + 1)])
    check(f"{tag} ws echo message over the limit: 1009", code == 1009, repr(code))
    code, reason, _ = closed_with(ws(server, c, "/v1/stream/ws/upload"),
                                  [json.dumps({"seq": 1, "payload": "y" * (limit + 1)})])
    check(f"{tag} ws upload message over the limit: 1009", code == 1009, f"{code} {reason!r}")
    for name, frame, word in (("text not JSON", "{not json", "JSON"),
                              ("unknown member", '{"seq":1,"x":2}', "StreamMessage"),
                              ("binary not protobuf", b"\xff\xff\xff", "protobuf")):
        code, reason, _ = closed_with(ws(server, c, "/v1/stream/ws/echo"), [frame])
        check(f"{tag} ws echo {name}: 1007 saying so", code == 1007 and word in reason, f"{code} {reason!r}")
    for query, want in (({"count": 0}, "count is 0, expected 1..=1000000"),
                        ({"count": 1_000_001}, "count is 1000001, expected 1..=1000000"),
                        ({"count": 1, "items": 1396}, "items is 1396, expected 0..=1395"),
                        ({"count": 1, "rate": 1_000_001}, "rate is 1000001")):
        code, reason, got = closed_with(ws(server, c, "/v1/stream/ws/subscribe"), [json.dumps(query)])
        check(f"{tag} ws subscribe {query}: 1007 naming the value", code == 1007 and reason.startswith(want)
              and not got, f"{code} {reason!r} after {len(got)} messages")
    code, reason, got = closed_with(ws(server, c, "/v1/stream/ws/subscribe"),
                                    [json.dumps({"count": 1000, "rate": 10}), "hello"])
    check(f"{tag} ws subscribe: a client message during the feed is 1007", code == 1007 and len(got) < 1000,
          f"{code} {reason!r}")

    # upload: FNV-1a 32 of "foobar" is 0xbf9cf968 (the published test vector)
    code, _, got = closed_with(ws(server, c, "/v1/stream/ws/upload"),
                               [json.dumps({"seq": 1, "payload": "foo"}),
                                spb.StreamMessage(seq=2, payload="bar").SerializeToString(), b""])
    summary = spb.UploadSummary.FromString(got[0]) if len(got) == 1 and isinstance(got[0], bytes) else None
    check(f"{tag} ws upload summary in the end frame's type, then 1000",
          code == 1000 and summary is not None and (summary.count, summary.bytes, summary.checksum)
          == (2, 6, 0xBF9CF968), f"{code} {got!r}")

    # the stamps: exact schedule, and nothing arrives before its stamp
    with ws(server, c, "/v1/stream/ws/subscribe") as s:
        s.send(json.dumps({"count": 5, "items": 2, "rate": 50}))
        events = []
        for _ in range(5):
            events.append((json.loads(s.recv(timeout=WAIT)), time.time_ns()))
    stamps = [int(e["scheduledNs"]) for e, _ in events]
    check(f"{tag} ws subscribe stamps on the schedule (20 ms apart)",
          [t - stamps[0] for t in stamps] == [0, 20_000_000, 40_000_000, 60_000_000, 80_000_000], repr(stamps))
    check(f"{tag} ws subscribe: no event before its stamp", all(arrival >= int(e["scheduledNs"])
                                                                 for e, arrival in events),
          repr([(arrival - int(e["scheduledNs"])) for e, arrival in events]))
    check(f"{tag} ws subscribe items ((seq-1)*items+j) mod 1395",
          [e["seq"] for e, _ in events] == [1, 2, 3, 4, 5] and len(events[4][0]["items"]) == 2, repr(events[4][0])[:200])

    status, hdrs, body = c.http("rest", "GET", "/v1/stream/ws/echo")
    check(f"{tag} ws path without an upgrade: 426 JSON error", status == 426
          and json.loads(body).get("code") == 426, f"{status} {body[:200]!r}")


def check_ws_timeouts(check, server, c, tag: str):
    """PROTOBENCH_IDLE_TIMEOUT=2s, PROTOBENCH_READ_TIMEOUT=1s."""
    t0 = time.monotonic()
    code, reason, _ = closed_with(ws(server, c, "/v1/stream/ws/echo"))
    check(f"{tag} ws idle echo stream closed with 1008", code == 1008 and time.monotonic() - t0 >= 1.5,
          f"{code} {reason!r}")
    # 12 events at 4/s: about 2.75 s, past the 1 s read timeout of the upgrade request
    code, _, got = closed_with(ws(server, c, "/v1/stream/ws/subscribe"), [json.dumps({"count": 12, "rate": 4})])
    check(f"{tag} ws subscription outlives the read timeout", code == 1000 and len(got) == 12,
          f"{code} after {len(got)} events")
    status, hdrs, body = c.http("rest", "GET", "/v1/stream/sse?count=12&rate=4")
    check(f"{tag} sse outlives the read timeout", status == 200 and body.count(b"event: feed") == 12
          and body.endswith(b'event: end\ndata: {"count":12}\n\n'), f"{status} {body[-80:]!r}")


def http_error(check, c, name: str, proto: str, path: str, status_want: int, words: str, headers=None):
    status, hdrs, body = c.http(proto, "GET", path, headers=headers)
    try:
        j = json.loads(body)
    except ValueError:
        j = {}
    check(f"{name}: {status_want} naming it", status == status_want and j.get("code") == status_want
          and words in j.get("message", ""), f"{status} {body[:200]!r}")


def check_sse_poll(check, server, c, tag: str):
    for proto in ("rest", "rest-h2") if "rest-h2" in server.addrs and not server.tls else ("rest",):
        # (http.client speaks HTTP/1.1: hypercorn serves it on the clear rest-h2 listener too)
        t = f"{tag} {proto}"
        for q, words in (("count=0", "count is 0, expected 1..=1000000"),
                         ("count=5&foo=1", "unknown query parameter 'foo'"),
                         ("count=5&count=6", "count is given twice"),
                         ("count=5&items=-1", "items is '-1', expected a non-negative decimal integer"),
                         ("count=5&rate=99999999999", "rate is 99999999999, too large")):
            http_error(check, c, f"{t} sse ?{q}", proto, f"/v1/stream/sse?{q}", 400, words)
        http_error(check, c, f"{t} sse Last-Event-ID past the count", proto, "/v1/stream/sse?count=5", 400,
                   "Last-Event-ID", {"Last-Event-ID": "6"})
        status, hdrs, body = c.http(proto, "GET", "/v1/stream/sse?count=5&items=1", headers={"Last-Event-ID": "3"})
        ids = [int(line[4:]) for line in body.decode().splitlines() if line.startswith("id: ")]
        check(f"{t} sse Last-Event-ID 3 resumes with 4, 5", status == 200 and ids == [4, 5]
              and hdrs.get("content-type", "").startswith("text/event-stream"), f"{status} {ids} {hdrs}")
        for q, words in (("count=5&max=0", "max is 0, expected 1..=1000"),
                         ("count=5&max=1&rate=10", "startNs is 0"),
                         ("count=5&max=1&after=6", "after is 6, beyond the feed's count 5")):
            http_error(check, c, f"{t} poll ?{q}", proto, f"/v1/stream/poll?{q}", 400, words)
        status, _, body = c.http(proto, "GET", "/v1/stream/poll?count=5&items=1&after=3&max=1")
        page = json.loads(body) if status == 200 else {}
        check(f"{t} poll page after 3, max 1", [e["seq"] for e in page.get("events", [])] == [4]
              and page.get("done") is False, f"{status} {body[:200]!r}")
        status, _, body = c.http(proto, "GET", "/v1/stream/poll?count=500&items=1395&max=1000")
        page = json.loads(body) if status == 200 else {}
        check(f"{t} poll page stops at 16384 items (11 events of 1395)", len(page.get("events", [])) == 11,
              f"{status} {len(page.get('events', []))} events")
        # at rate 1/s from a start 2.5 s ago, events 1..3 are due, not 4
        start = time.time_ns() - 2_500_000_000
        status, _, body = c.http(proto, "GET", f"/v1/stream/poll?count=9&rate=1&startNs={start}&max=100")
        page = json.loads(body) if status == 200 else {}
        check(f"{t} poll at rate 1: only the due events, stamped on the schedule",
              [(e["seq"], int(e["scheduledNs"]) - start) for e in page.get("events", [])]
              == [(1, 0), (2, 1_000_000_000), (3, 2_000_000_000)], f"{status} {body[:300]!r}")


def grpc_code(fn):
    try:
        return grpc.StatusCode.OK, fn()
    except grpc.RpcError as e:
        return e.code(), e.details()


def check_grpc(check, server, c, tag: str, limit: int):
    ch = c.channel()
    sub = ch.unary_stream("/protobench.v1.Streams/Subscribe", request_serializer=spb.SubscribeRequest.SerializeToString,
                          response_deserializer=spb.FeedEvent.FromString)
    code, out = grpc_code(lambda: list(sub(spb.SubscribeRequest(count=0), timeout=WAIT)))
    check(f"{tag} grpc Subscribe count 0: INVALID_ARGUMENT naming it",
          code == grpc.StatusCode.INVALID_ARGUMENT and "count is 0" in out, f"{code} {out!r}")
    code, out = grpc_code(lambda: list(sub(spb.SubscribeRequest(count=3, items=1395), timeout=WAIT)))
    check(f"{tag} grpc Subscribe 3 events of 1395 items", code == grpc.StatusCode.OK
          and [len(e.items) for e in out] == [1395] * 3 and out[1].items[0].id == out[0].items[0].id,
          f"{code}")
    poll = ch.unary_unary("/protobench.v1.Streams/Poll", request_serializer=spb.PollRequest.SerializeToString,
                          response_deserializer=spb.FeedPage.FromString)
    code, out = grpc_code(lambda: poll(spb.PollRequest(count=5, max=0), timeout=WAIT))
    check(f"{tag} grpc Poll max 0: INVALID_ARGUMENT", code == grpc.StatusCode.INVALID_ARGUMENT
          and "max is 0" in out, f"{code} {out!r}")
    code, out = grpc_code(lambda: poll(spb.PollRequest(count=5, items=3, after=2, max=10), timeout=WAIT))
    check(f"{tag} grpc Poll page", code == grpc.StatusCode.OK and [e.seq for e in out.events] == [3, 4, 5]
          and out.done and len(out.events[0].items) == 3, f"{code} {out!r}"[:300])

    echo = ch.stream_stream("/protobench.v1.Streams/EchoStream", request_serializer=None, response_deserializer=None)
    code, out = grpc_code(lambda: list(echo(iter([spb.StreamMessage(seq=1, payload="x" * limit)
                                                   .SerializeToString()]), timeout=WAIT)))
    check(f"{tag} grpc EchoStream message over the limit: RESOURCE_EXHAUSTED",
          code == grpc.StatusCode.RESOURCE_EXHAUSTED, f"{code} {out!r}")
    code, out = grpc_code(lambda: list(echo(iter([b"\xff\xff\xff"]), timeout=WAIT)))
    check(f"{tag} grpc EchoStream undecodable message: INVALID_ARGUMENT",
          code == grpc.StatusCode.INVALID_ARGUMENT, f"{code} {out!r}")
    upload = ch.stream_unary("/protobench.v1.Streams/Upload", request_serializer=spb.StreamMessage.SerializeToString,
                             response_deserializer=spb.UploadSummary.FromString)
    code, out = grpc_code(lambda: upload(iter([spb.StreamMessage(seq=1, payload="foo"),
                                               spb.StreamMessage(seq=2, payload="bar")]), timeout=WAIT))
    check(f"{tag} grpc Upload summary (FNV-1a of foobar)", code == grpc.StatusCode.OK
          and (out.count, out.bytes, out.checksum) == (2, 6, 0xBF9CF968), f"{code} {out!r}")
    # still serving after all that
    code, out = grpc_code(lambda: list(sub(spb.SubscribeRequest(count=2), timeout=WAIT)))
    check(f"{tag} grpc still serves after bad input", code == grpc.StatusCode.OK and len(out) == 2, f"{code}")


def check_failure(check, server, c, tag: str):
    """PROTOBENCH_FAILURE_RATE=1: every stream fails before it starts."""
    http_error(check, c, f"{tag} ws upgrade: injected failure", "rest", "/v1/stream/sse?count=1", 500,
               "injected failure")
    from websockets.exceptions import InvalidStatus
    try:
        ws(server, c, "/v1/stream/ws/echo").close()
        status, body = 101, b""
    except InvalidStatus as e:
        status, body = e.response.status_code, e.response.body
    check(f"{tag} ws echo: HTTP 500 JSON before the upgrade", status == 500
          and json.loads(body or b"{}").get("message") == "injected failure", f"{status} {body!r}")
    sub = c.channel().unary_stream("/protobench.v1.Streams/Subscribe",
                                   request_serializer=spb.SubscribeRequest.SerializeToString,
                                   response_deserializer=spb.FeedEvent.FromString)
    code, out = grpc_code(lambda: list(sub(spb.SubscribeRequest(count=2), timeout=WAIT)))
    check(f"{tag} grpc Subscribe: UNAVAILABLE", code == grpc.StatusCode.UNAVAILABLE
          and "injected failure" in out, f"{code} {out!r}")
    code, out = grpc_code(lambda: list(sub(spb.SubscribeRequest(count=0), timeout=WAIT)))
    check(f"{tag} grpc Subscribe: validated before the draw", code == grpc.StatusCode.INVALID_ARGUMENT,
          f"{code} {out!r}")


def check_service_time(check, server, c, tag: str):
    """PROTOBENCH_SERVICE_TIME=sleep:500ms: once per stream, not per message."""
    echo = c.channel().stream_stream("/protobench.v1.Streams/EchoStream",
                                     request_serializer=spb.StreamMessage.SerializeToString,
                                     response_deserializer=spb.StreamMessage.FromString)
    t0 = time.monotonic()
    out = list(echo(iter([spb.StreamMessage(seq=i, payload="p") for i in range(1, 31)]), timeout=WAIT))
    dt = time.monotonic() - t0
    # per message it would be 15 s; a loaded machine is far below that
    check(f"{tag} grpc echo of 30: one service time (>= 0.5 s, < 10 s)", len(out) == 30 and 0.5 <= dt < 10,
          f"{len(out)} replies in {dt:.2f} s")
    t0 = time.monotonic()
    code, _, got = closed_with(ws(server, c, "/v1/stream/ws/subscribe"), [json.dumps({"count": 30})])
    dt = time.monotonic() - t0
    check(f"{tag} ws subscription of 30: one service time (>= 0.5 s, < 10 s)", code == 1000 and len(got) == 30
          and 0.5 <= dt < 10, f"{code} {len(got)} events in {dt:.2f} s")
