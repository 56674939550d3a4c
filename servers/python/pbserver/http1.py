"""The contract's HTTP/1.1 timeouts for the uvicorn listeners (rest, soap).

uvicorn's own `timeout_keep_alive` closes a connection that stays silent after
a response; it is set to PROTOBENCH_IDLE_TIMEOUT. uvicorn has no timer for a
connection that never sends its first request, none for a request whose
headers or body arrive slowly, and none for a TLS handshake that never
finishes. This module adds them with uvicorn's and asyncio's own extension
points:

- `timed_protocol()` subclasses uvicorn's httptools protocol (uvicorn accepts
  a protocol class as `Config(http=...)`): the keep-alive timer is also armed
  when the connection is made, and a read timer runs from a request's first
  byte (httptools' `on_message_begin`) until its body is complete
  (`on_message_complete`), or until it is upgraded to a WebSocket. When it fires the request is answered 408 (unless
  a response has already started) and the connection is closed. This is a
  total deadline for headers and body, not an inactivity timeout.
- `loop_factory()` is uvloop's loop whose `create_server` passes asyncio's
  `ssl_handshake_timeout` (uvicorn does not; asyncio's default is 60 s).
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


def timed_protocol(read_timeout: float, content_type: bytes, body: bytes) -> type:
    """uvicorn's HttpToolsProtocol with the idle timer armed from the start and
    a read deadline per request; `content_type`/`body` make the 408 answer."""
    response_408 = b"".join([
        b"HTTP/1.1 408 Request Timeout\r\n",
        b"content-type: ", content_type, b"\r\n",
        b"content-length: ", str(len(body)).encode(), b"\r\n",
        b"connection: close\r\n\r\n",
        body,
    ])

    class TimedHttpToolsProtocol(HttpToolsProtocol):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._read_timer = None
            self._in_message = False
            self._headers_done = False
            self._upgraded = False
            self._arm_idle()

        def connection_lost(self, exc) -> None:
            self._cancel_read_timer()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            # Bytes that start no request (e.g. a bare CRLF) must not leave the
            # connection without any timer.
            if not self._upgraded and not self._in_message and not self.pipeline and (
                    self.cycle is None or self.cycle.response_complete):
                self._arm_idle()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._in_message = True
            self._headers_done = False
            self._cancel_read_timer()
            self._read_timer = self.loop.call_later(read_timeout, self._read_timed_out)

        def on_headers_complete(self) -> None:
            self._headers_done = True
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._in_message = False
            self._cancel_read_timer()
            super().on_message_complete()

        def handle_websocket_upgrade(self) -> None:
            # The connection is handed to the WebSocket protocol: this
            # request's read deadline (armed at its first byte, and never
            # ended by on_message_complete for an upgrade) must not close it
            # PROTOBENCH_READ_TIMEOUT later; the stream has its own idle timer.
            # Nor may the keep-alive timer, which data_received would arm
            # again once this request is over.
            self._upgraded = True
            self._cancel_read_timer()
            self._in_message = False
            super().handle_websocket_upgrade()
            if self.timeout_keep_alive_task is not None:
                self.timeout_keep_alive_task.cancel()
                self.timeout_keep_alive_task = None

        def _arm_idle(self) -> None:
            if self.timeout_keep_alive_task is None and not self.transport.is_closing():
                self.timeout_keep_alive_task = self.loop.call_later(
                    self.timeout_keep_alive, self.timeout_keep_alive_handler)

        def _cancel_read_timer(self) -> None:
            if self._read_timer is not None:
                self._read_timer.cancel()
                self._read_timer = None

        def _read_timed_out(self) -> None:
            self._read_timer = None
            if self.transport.is_closing():
                return
            cycle = self.cycle
            if self._headers_done:  # the app may be waiting for the body
                answer = cycle is not None and not cycle.response_started
            else:  # still in the headers: the previous response must be complete
                answer = cycle is None or cycle.response_complete
            if answer:
                self.transport.write(response_408)
            self.transport.close()

    return TimedHttpToolsProtocol


def loop_factory(handshake_timeout: float):
    """A uvloop event loop class whose TLS servers give up on a handshake
    that has not finished after `handshake_timeout` seconds."""
    import uvloop

    class HandshakeTimeoutLoop(uvloop.Loop):
        async def create_server(self, *args, **kwargs):
            if kwargs.get("ssl") is not None:
                kwargs.setdefault("ssl_handshake_timeout", handshake_timeout)
            return await super().create_server(*args, **kwargs)

    return HandshakeTimeoutLoop
