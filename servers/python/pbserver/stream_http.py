"""The streaming operations on the REST listeners (uvicorn for `rest`,
hypercorn for `rest-h2`), as Starlette routes added to the FastAPI app:
WebSocket (`/v1/stream/ws/{echo,subscribe,upload}`), Server-Sent Events
(`GET /v1/stream/sse`) and polling (`GET /v1/stream/poll`).

A text frame carries a message's canonical JSON, a binary frame its
protobuf; a reply goes in the frame type of the message it answers. A call
is admitted before the WebSocket handshake is accepted (an injected failure
is the contract's HTTP 500 JSON error, sent as the ASGI "websocket.http.response"
denial). Close codes: 1000 the clean end, 1007 a message that does not decode
or is invalid, 1008 more than 1,000,000 messages or no message for
PROTOBENCH_IDLE_TIMEOUT while one is awaited, 1009 a message over
PROTOBENCH_MAX_REQUEST_BYTES (sent by the WebSocket library: uvicorn's
`ws_max_size`, hypercorn's `websocket_max_message_size`). The server takes
one message from the connection at a time (uvicorn pauses reading while one
is queued) and awaits each send (the servers' write flow control).
"""

from __future__ import annotations

import asyncio
import time

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from . import streams
from .common import INJECTED_FAILURE, Gate, InvalidInput
from .config import Config


def _error(status: int, message: str, headers=None) -> JSONResponse:
    return JSONResponse({"code": status, "message": message}, status_code=status, headers=headers)


class _Fail(Exception):
    """Ends a WebSocket stream with a close code and reason."""

    def __init__(self, code: int, reason: str):
        super().__init__(reason)
        self.code = code
        self.reason = reason


class _Gone(Exception):
    """The client closed or the connection ended."""


def _reason(text: str) -> str:
    """A close reason fits in 123 bytes of UTF-8 (a control frame's 125 less the code)."""
    data = text.encode("utf-8")[:123]
    return data.decode("utf-8", errors="ignore")


class StreamRoutes:
    def __init__(self, cfg: Config, gate: Gate):
        self.gate = gate
        self.idle = cfg.idle_timeout
        self.data = streams.FeedData(cfg.dataset)
        self.data.pb_items  # noqa: B018  (both forms loaded now, not on the first stream)
        self.data.model_items  # noqa: B018

    def install(self, app) -> None:
        """Adds the routes to a Starlette (FastAPI) application."""
        for path, handler in ((streams.WS_ECHO_PATH, self.ws_echo),
                              (streams.WS_SUBSCRIBE_PATH, self.ws_subscribe),
                              (streams.WS_UPLOAD_PATH, self.ws_upload)):
            app.router.add_websocket_route(path, handler)
            app.router.add_route(path, self.not_upgrade, methods=["GET"])
        app.router.add_route(streams.SSE_PATH, self.sse, methods=["GET"])
        app.router.add_route(streams.POLL_PATH, self.poll, methods=["GET"])

    # ------------------------------------------------------------ WebSocket

    async def not_upgrade(self, request: Request) -> Response:
        return _error(426, "this path takes a WebSocket upgrade (Connection: upgrade, Upgrade: websocket)",
                      headers={"upgrade": "websocket", "connection": "upgrade"})

    async def _accept(self, ws: WebSocket) -> bool:
        """Admission (service time, failure draw), then the handshake."""
        if not await self.gate.apass():
            await ws.send_denial_response(_error(500, INJECTED_FAILURE))
            return False
        await ws.accept()
        return True

    async def _next(self, ws: WebSocket) -> tuple[bool, bytes | str]:
        """The client's next data message (binary?, data), waiting at most
        the idle timeout; raises _Gone or _Fail."""
        try:
            message = await asyncio.wait_for(ws.receive(), self.idle)
        except asyncio.TimeoutError:
            raise _Fail(streams.CLOSE_POLICY, f"no message for {self.idle:g}s") from None
        return _data(message)

    async def _run(self, ws: WebSocket, body) -> None:
        """Accepts, runs `body(ws)` and ends the stream as it says."""
        if not await self._accept(ws):
            return
        try:
            await body(ws)
            await ws.close(streams.CLOSE_NORMAL)
        except _Fail as e:
            try:
                await ws.close(e.code, _reason(e.reason))
            except Exception:  # the connection is already gone
                pass
        except _Gone:
            pass
        except (OSError, WebSocketDisconnect):  # a send on a connection that is gone
            pass

    async def ws_echo(self, ws: WebSocket) -> None:
        await self._run(ws, self._echo)

    async def _echo(self, ws: WebSocket) -> None:
        n = 0
        while True:
            binary, data = await self._next(ws)
            if n >= streams.MAX_STREAM_MESSAGES:
                raise _Fail(streams.CLOSE_POLICY, streams.TOO_MANY)
            n += 1
            m = _decode("StreamMessage", data, binary)
            if binary:
                await ws.send_bytes(streams.message_pb(m.seq, m.payload))
            else:
                await ws.send_text(streams.message_json(m.seq, m.payload).decode("utf-8"))

    async def ws_upload(self, ws: WebSocket) -> None:
        await self._run(ws, self._upload)

    async def _upload(self, ws: WebSocket) -> None:
        tally = streams.Tally()
        while True:
            binary, data = await self._next(ws)
            if not data:  # the end (no message encodes to nothing: seq >= 1)
                if binary:
                    await ws.send_bytes(tally.summary_pb().SerializeToString())
                else:
                    await ws.send_text(tally.summary_json().decode("utf-8"))
                return
            m = _decode("StreamMessage", data, binary)
            if not tally.add(m.payload):
                raise _Fail(streams.CLOSE_POLICY, streams.TOO_MANY)

    async def ws_subscribe(self, ws: WebSocket) -> None:
        await self._run(ws, self._subscribe)

    async def _subscribe(self, ws: WebSocket) -> None:
        binary, data = await self._next(ws)
        r = _decode("SubscribeRequest", data, binary)
        try:
            streams.validate_subscribe(r)
        except InvalidInput as e:
            raise _Fail(streams.CLOSE_INVALID, str(e)) from None
        feed = streams.Feed(r.count, r.items, r.rate)
        # The client may only close (or go away) while the feed runs: its
        # next message is awaited beside the feed's schedule.
        client = asyncio.ensure_future(ws.receive())
        try:
            while True:
                wait = feed.wait_ns()
                if wait > 0:
                    await asyncio.wait((client,), timeout=-(-wait // 1_000_000) / 1000)
                if client.done():
                    _data(client.result())  # raises _Gone or _Fail for a close or a data frame
                    raise _Fail(streams.CLOSE_INVALID, "no message is expected during a subscription")
                if wait > 0 and feed.wait_ns() > 0:
                    continue
                event = feed.take()
                if event is None:
                    return
                if binary:
                    await ws.send_bytes(self.data.event_pb(event[0], r.items, event[1]).SerializeToString())
                else:
                    await ws.send_text(self.data.event_json(event[0], r.items, event[1]).decode("utf-8"))
        finally:
            client.cancel()

    # ------------------------------------------------------------ SSE and polling

    async def sse(self, request: Request) -> Response:
        try:
            r = streams.subscribe_from_query(request.scope["query_string"].decode("latin-1"))
        except InvalidInput as e:
            return _error(400, str(e))
        after = 0
        last = request.headers.get("last-event-id")
        if last is not None:
            v = last.strip()
            if not (v.isascii() and v.isdigit() and int(v) <= r.count):
                return _error(400, f"Last-Event-ID is not an event of this feed; expected 0..={r.count}")
            after = int(v)
        if not await self.gate.apass():
            return _error(500, INJECTED_FAILURE)
        feed = streams.Feed(r.count, r.items, r.rate, after)
        data = self.data

        async def events():
            while (event := await feed.next_event()) is not None:
                seq, stamp = event
                yield b"".join((b"id: ", str(seq).encode(), b"\nevent: feed\ndata: ",
                                data.event_json(seq, r.items, stamp), b"\n\n"))
            yield b'event: end\ndata: {"count":%d}\n\n' % r.count

        return StreamingResponse(events(), headers={"content-type": "text/event-stream",
                                                    "cache-control": "no-cache"})

    async def poll(self, request: Request) -> Response:
        try:
            r = streams.poll_from_query(request.scope["query_string"].decode("latin-1"))
        except InvalidInput as e:
            return _error(400, str(e))
        if not await self.gate.apass():
            return _error(500, INJECTED_FAILURE)
        return Response(self.data.page_json(r, time.time_ns()), media_type="application/json")


def _data(message: dict) -> tuple[bool, bytes | str]:
    """An ASGI WebSocket event as (binary?, data); raises _Gone for a
    disconnect (the server has answered the client's close frame, or sent its
    own 1009/1007 when the library refused a frame)."""
    if message["type"] == "websocket.disconnect":
        raise _Gone()
    data = message.get("bytes")
    if data is not None:
        return True, data
    return False, message.get("text") or ""


def _decode(kind: str, data: bytes | str, binary: bool) -> streams.Decoded:
    try:
        return streams.decode(kind, data, binary)
    except InvalidInput as e:
        raise _Fail(streams.CLOSE_INVALID, str(e)) from None
