"""The streaming operations' bad input and edges on the java-spring server (contract/README.md,
"Streaming"): over-size and fragmented WebSocket messages, out-of-range requests, malformed
frames and bodies, the idle timeout, SSE's format and Last-Event-ID, polling's parameters, the
gRPC statuses, the upload checksum, and an injected failure before a stream begins. Every
workload's content, clear and TLS, is protobench verify's (scripts/verify-servers.sh).

Imported by check.py, which passes its `check` function and the Server it started.
"""
import json
import time

import grpc
import httpx
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from protobench.v1 import stream_pb2


def fnv1a32(data):
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def ws_url(server, path):
    return f"ws://{server.addrs['rest']}{path}"


def closed_with(ws, timeout=20):
    """(code, reason) of the server's close, reading (and dropping) messages until it comes."""
    deadline = time.time() + timeout
    try:
        while time.time() < deadline:
            ws.recv(timeout=max(0.1, deadline - time.time()))
    except ConnectionClosed as e:
        return (e.rcvd.code, e.rcvd.reason) if e.rcvd else (None, "no close frame")
    except TimeoutError:
        return (None, f"no close within {timeout}s")
    return (None, "no close")


def check_websocket(check, server, limit, idle_s):
    """WebSocket on the rest listener; `limit` is PROTOBENCH_MAX_REQUEST_BYTES, `idle_s` the idle timeout."""
    # echo: a text (JSON) and a binary (protobuf) message come back in their own frame types
    with connect(ws_url(server, "/v1/stream/ws/echo"), max_size=None) as ws:
        ws.send('{"seq":1,"payload":"héllo"}')
        text = ws.recv(timeout=20)
        msg = stream_pb2.StreamMessage(seq=2, payload="x" * 100)
        ws.send(msg.SerializeToString())
        binary = ws.recv(timeout=20)
        check("ws echo: a text message comes back as JSON text",
              isinstance(text, str) and json.loads(text) == {"seq": 1, "payload": "héllo"}, repr(text))
        check("ws echo: a binary message comes back as protobuf",
              isinstance(binary, bytes) and stream_pb2.StreamMessage.FromString(binary) == msg, repr(binary[:40]))
        # a message in 4 fragments, under the limit, is echoed whole
        payload = "f" * (limit // 2)
        whole = json.dumps({"seq": 3, "payload": payload}, separators=(",", ":"))
        ws.send([whole[i:i + len(whole) // 4 + 1] for i in range(0, len(whole), len(whole) // 4 + 1)])
        back = ws.recv(timeout=20)
        check("ws echo: a fragmented message is echoed whole", json.loads(back) == {"seq": 3, "payload": payload},
              repr(back[:80]))
        ws.close()
        check("ws echo: the client's close is answered with 1000", ws.close_code == 1000,
              repr(ws.close_code))

    # one message over the size limit: 1009, in one frame and in fragments; just under it is echoed
    under = stream_pb2.StreamMessage(seq=1, payload="u" * (limit - 8)).SerializeToString()
    with connect(ws_url(server, "/v1/stream/ws/echo"), max_size=None) as ws:
        ws.send(under)
        check(f"ws echo: a {len(under)}-byte message (limit {limit}) is echoed", ws.recv(timeout=20) == under)
    over = stream_pb2.StreamMessage(seq=1, payload="o" * limit).SerializeToString()
    for label, frames in (("one frame", over), ("fragments", [over[i:i + limit // 3] for i in range(0, len(over), limit // 3)])):
        # compression offered, as a browser would: the server must refuse it (frames carry the message as it is)
        with connect(ws_url(server, "/v1/stream/ws/echo"), max_size=None, compression="deflate") as ws:
            check("ws: permessage-deflate is not negotiated", ws.response.headers.get("Sec-WebSocket-Extensions") is None,
                  str(ws.response.headers.get("Sec-WebSocket-Extensions")))
            try:
                ws.send(frames)
            except ConnectionClosed:
                pass
            code, reason = closed_with(ws)
            check(f"ws echo: a message over {limit} bytes ({label}) is closed with 1009", code == 1009,
                  f"{code} {reason!r}")

    # malformed messages: 1007 naming the problem
    for label, frame in (("JSON with an unknown member", '{"seq":1,"payload":"a","extra":1}'),
                         ("text that is not JSON", "{not json"),
                         ("bytes that are not protobuf", b"\xff\xff\xff")):
        with connect(ws_url(server, "/v1/stream/ws/echo"), max_size=None) as ws:
            ws.send(frame)
            code, reason = closed_with(ws)
            check(f"ws echo: {label} is closed with 1007", code == 1007, f"{code} {reason!r}")

    # subscribe: out-of-range requests are 1007 with the value and the range
    for request, needle in (({"count": 0}, "count is 0, expected 1..=1000000"),
                            ({"count": 1000001}, "count is 1000001"),
                            ({"count": 1, "items": 1396}, "items is 1396, expected 0..=1395"),
                            ({"count": 1, "rate": 1000001}, "rate is 1000001")):
        with connect(ws_url(server, "/v1/stream/ws/subscribe"), max_size=None) as ws:
            ws.send(json.dumps(request))
            code, reason = closed_with(ws)
            check(f"ws subscribe {request}: 1007 naming it", code == 1007 and needle in reason, f"{code} {reason!r}")
    with connect(ws_url(server, "/v1/stream/ws/subscribe"), max_size=None) as ws:
        ws.send(stream_pb2.SubscribeRequest(count=3, items=2).SerializeToString())
        events = [stream_pb2.FeedEvent.FromString(ws.recv(timeout=20)) for _ in range(3)]
        code, reason = closed_with(ws)
        check("ws subscribe (binary): 3 events of 2 items, then 1000",
              [e.seq for e in events] == [1, 2, 3] and all(len(e.items) == 2 for e in events) and code == 1000,
              f"{[e.seq for e in events]} {code} {reason!r}")
    with connect(ws_url(server, "/v1/stream/ws/subscribe"), max_size=None) as ws:
        ws.send('{"count":1000,"rate":10}')
        ws.recv(timeout=20)
        ws.send('{"count":1}')
        code, reason = closed_with(ws)
        check("ws subscribe: a message during the subscription is closed with 1007", code == 1007,
              f"{code} {reason!r}")

    # upload: summary in the empty frame's type, FNV-1a over the payloads, then 1000
    payloads = ["abc", "é" * 10, "z" * 1000]
    with connect(ws_url(server, "/v1/stream/ws/upload"), max_size=None) as ws:
        for i, p in enumerate(payloads):
            ws.send(json.dumps({"seq": i + 1, "payload": p}))
        ws.send("")
        summary = json.loads(ws.recv(timeout=20))
        code, _ = closed_with(ws)
        data = "".join(payloads).encode()
        want = {"count": 3, "bytes": str(len(data)), "checksum": fnv1a32(data)}
        check("ws upload: the summary counts bytes and FNV-1a, then 1000", summary == want and code == 1000,
              f"{summary} != {want} ({code})")

    # no message for the idle timeout while one is awaited: 1008
    with connect(ws_url(server, "/v1/stream/ws/upload"), max_size=None) as ws:
        t0 = time.time()
        code, reason = closed_with(ws, timeout=idle_s + 30)
        took = time.time() - t0
        check(f"ws upload: silent for the idle timeout ({idle_s}s) is closed with 1008",
              code == 1008 and took >= idle_s - 0.5, f"{code} {reason!r} after {took:.1f}s")

    # a GET without the upgrade: the contract's JSON error
    r = httpx.get(f"http://{server.addrs['rest']}/v1/stream/ws/echo", timeout=20)
    body = r.json() if r.headers.get("content-type", "").startswith("application/json") else None
    check("ws path without an upgrade: JSON 4xx", 400 <= r.status_code < 500 and body and body["code"] == r.status_code,
          f"{r.status_code} {r.text[:200]!r}")


def sse_events(text):
    """The events of an SSE body as dicts of field -> value (a space after the colon is dropped)."""
    events = []
    for block in text.split("\n\n"):
        fields = {}
        for line in block.split("\n"):
            if line and not line.startswith(":") and ":" in line:
                name, _, value = line.partition(":")
                fields[name] = value[1:] if value.startswith(" ") else value
        if fields:
            events.append(fields)
    return events


def check_sse_and_poll(check, server):
    base = f"http://{server.addrs['rest']}"
    with httpx.Client(timeout=20) as c:
        r = c.get(f"{base}/v1/stream/sse?count=5&items=1")
        events = sse_events(r.text)
        check("sse: text/event-stream, 5 feed events with ids, then end",
              r.headers.get("content-type", "").startswith("text/event-stream")
              and [e.get("id") for e in events[:5]] == ["1", "2", "3", "4", "5"]
              and all(e.get("event") == "feed" for e in events[:5])
              and events[5] == {"event": "end", "data": '{"count":5}'} and len(events) == 6,
              f"{r.headers.get('content-type')} {events}")
        check("sse: events written as the contract shows them (`id: 1`, `event: feed`, `data: {...}`)",
              r.text.startswith('id: 1\nevent: feed\ndata: {"seq":1,') and r.text.endswith('event: end\ndata: {"count":5}\n\n'),
              repr(r.text[:80]) + " ... " + repr(r.text[-40:]))
        first = json.loads(events[0]["data"])
        check("sse: data is the FeedEvent's JSON (int64 stamp as a string)",
              first["seq"] == 1 and isinstance(first["scheduledNs"], str) and len(first["items"]) == 1, str(first))
        r = c.get(f"{base}/v1/stream/sse?count=5", headers={"Last-Event-ID": "3"})
        ids = [e.get("id") for e in sse_events(r.text)]
        check("sse: Last-Event-ID 3 resumes at 4", ids == ["4", "5", None], str(ids))
        for query, needle in (("count=0", "count is 0"), ("count=5&items=1396", "items is 1396"),
                              ("count=5&bogus=1", "unknown query parameter"), ("count=5&count=6", "given twice"),
                              ("count=abc", "count is")):
            r = c.get(f"{base}/v1/stream/sse?{query}")
            check(f"sse ?{query}: 400 naming it",
                  r.status_code == 400 and needle in r.json().get("message", ""), f"{r.status_code} {r.text[:200]}")
        r = c.get(f"{base}/v1/stream/sse?count=5", headers={"Last-Event-ID": "6"})
        check("sse: a Last-Event-ID past the feed is 400", r.status_code == 400, f"{r.status_code} {r.text[:200]}")

        r = c.get(f"{base}/v1/stream/poll?count=25&items=1&after=20&max=10")
        page = r.json()
        check("poll: the last page holds 21..25 and says done",
              [e["seq"] for e in page["events"]] == [21, 22, 23, 24, 25] and page["done"] is True, str(page)[:300])
        r = c.get(f"{base}/v1/stream/poll?count=20&items=1395&max=1000")
        check("poll: a page stops at 16,384 items (11 events of 1,395)",
              len(r.json()["events"]) == 11 and r.json()["done"] is False, str(len(r.json()["events"])))
        now = time.time_ns()
        r = c.get(f"{base}/v1/stream/poll?count=100&rate=10&startNs={now + 10_000_000_000}&max=10")
        check("poll: nothing is due before the feed's start", r.json() == {"events": [], "done": False}, r.text[:200])
        for query, needle in (("count=5&max=0", "max is 0, expected 1..=1000"),
                              ("count=5&max=5&rate=10", "startNs is 0"),
                              ("count=5&max=5&after=6", "after is 6"),
                              ("count=5&max=5&startNs=99999999999999999999", "startNs")):
            r = c.get(f"{base}/v1/stream/poll?{query}")
            check(f"poll ?{query}: 400 naming it",
                  r.status_code == 400 and needle in r.json().get("message", ""), f"{r.status_code} {r.text[:200]}")


def check_grpc(check, server, channel, limit):
    subscribe = channel.unary_stream("/protobench.v1.Streams/Subscribe",
                                     request_serializer=stream_pb2.SubscribeRequest.SerializeToString,
                                     response_deserializer=stream_pb2.FeedEvent.FromString)
    try:
        list(subscribe(stream_pb2.SubscribeRequest(count=0), timeout=20))
        check("grpc Subscribe count=0: INVALID_ARGUMENT", False, "no error")
    except grpc.RpcError as e:
        check("grpc Subscribe count=0: INVALID_ARGUMENT naming count",
              e.code() == grpc.StatusCode.INVALID_ARGUMENT and "count is 0" in e.details(), f"{e.code()} {e.details()}")
    events = list(subscribe(stream_pb2.SubscribeRequest(count=5, items=3, rate=1000), timeout=20))
    stamps = [e.scheduled_ns for e in events]
    check("grpc Subscribe at 1,000/s: 5 events stamped 1 ms apart",
          [e.seq for e in events] == [1, 2, 3, 4, 5] and [b - a for a, b in zip(stamps, stamps[1:])] == [1_000_000] * 4,
          str(stamps))

    echo = channel.stream_stream("/protobench.v1.Streams/EchoStream", request_serializer=lambda b: b,
                                 response_deserializer=lambda b: b)
    upload_raw = channel.stream_unary("/protobench.v1.Streams/Upload", request_serializer=lambda b: b,
                                      response_deserializer=lambda b: b)
    over = stream_pb2.StreamMessage(seq=1, payload="a" * limit).SerializeToString()
    # grpc-java ends a call whose response headers are out (an echo stream sends them at once)
    # with RST_STREAM CANCEL, not RESOURCE_EXHAUSTED, when a message passes the limit (README)
    for label, call, code in (("Upload: a message over the size limit", upload_raw, grpc.StatusCode.RESOURCE_EXHAUSTED),
                              ("EchoStream: a message over the size limit", echo, grpc.StatusCode.CANCELLED),
                              ("EchoStream: a message that is not protobuf", echo, grpc.StatusCode.INVALID_ARGUMENT),
                              ("Upload: a message that is not protobuf", upload_raw, grpc.StatusCode.INVALID_ARGUMENT)):
        frames = [over] if "size" in label else [b"\xff\xff\xff"]
        try:
            got = call(iter(frames), timeout=20)
            check(f"grpc {label}: {code.name}", False, f"no error: {list(got) if label.startswith('Echo') else got}")
        except grpc.RpcError as e:
            check(f"grpc {label}: {code.name}", e.code() == code, f"{e.code()} {e.details()}")

    upload = channel.stream_unary("/protobench.v1.Streams/Upload",
                                  request_serializer=stream_pb2.StreamMessage.SerializeToString,
                                  response_deserializer=stream_pb2.UploadSummary.FromString)
    payloads = ["x" * n for n in (1, 10, 100)]
    summary = upload(iter(stream_pb2.StreamMessage(seq=i + 1, payload=p) for i, p in enumerate(payloads)), timeout=20)
    data = "".join(payloads).encode()
    check("grpc Upload: count, bytes and FNV-1a",
          (summary.count, summary.bytes, summary.checksum) == (3, len(data), fnv1a32(data)), str(summary))

    poll = channel.unary_unary("/protobench.v1.Streams/Poll", request_serializer=stream_pb2.PollRequest.SerializeToString,
                               response_deserializer=stream_pb2.FeedPage.FromString)
    page = poll(stream_pb2.PollRequest(count=3, items=1, max=10), timeout=20)
    check("grpc Poll: the whole feed of 3 and done", [e.seq for e in page.events] == [1, 2, 3] and page.done, str(page))
    try:
        poll(stream_pb2.PollRequest(count=3, max=1001), timeout=20)
        check("grpc Poll max=1001: INVALID_ARGUMENT", False, "no error")
    except grpc.RpcError as e:
        check("grpc Poll max=1001: INVALID_ARGUMENT", e.code() == grpc.StatusCode.INVALID_ARGUMENT, str(e.code()))


def check_injected_failure(check, server, channel):
    """PROTOBENCH_FAILURE_RATE=1: every stream fails before its first message."""
    r = httpx.get(f"http://{server.addrs['rest']}/v1/stream/sse?count=5", timeout=20)
    check("injected failure: SSE is the contract's 500", r.status_code == 500 and r.json()["message"] == "injected failure",
          f"{r.status_code} {r.text[:200]}")
    try:
        with connect(ws_url(server, "/v1/stream/ws/echo")):
            pass
        check("injected failure: no WebSocket upgrade", False, "upgraded")
    except Exception as e:  # websockets.exceptions.InvalidStatus
        status = getattr(getattr(e, "response", None), "status_code", None)
        check("injected failure: the WebSocket upgrade is refused with 500", status == 500, repr(e))
    subscribe = channel.unary_stream("/protobench.v1.Streams/Subscribe",
                                     request_serializer=stream_pb2.SubscribeRequest.SerializeToString,
                                     response_deserializer=stream_pb2.FeedEvent.FromString)
    try:
        got = list(subscribe(stream_pb2.SubscribeRequest(count=5), timeout=20))
        check("injected failure: gRPC Subscribe UNAVAILABLE", False, f"{len(got)} events")
    except grpc.RpcError as e:
        check("injected failure: gRPC Subscribe UNAVAILABLE before any event",
              e.code() == grpc.StatusCode.UNAVAILABLE and e.details() == "injected failure", f"{e.code()} {e.details()}")
