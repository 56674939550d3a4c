"""uvicorn's sans-I/O `websockets` protocol, taking one client frame at a time
when the application asks for the next message.

uvicorn hands every byte it reads to the `websockets` parser at once: the
frames of one read are all parsed and queued for the application, and a
close frame among them is answered (and the connection shut) before the
application has replied to the messages ahead of it. A client that sends
its echo messages and then its close would lose the last replies, and the
server would hold as many messages as one read brings. The contract wants
the reverse (contract/README.md, "Streaming"): the server reads the next
inbound message when the previous reply has been handed on, as tungstenite
does for the Rust server.

So the bytes read are kept here and fed to the parser one frame at a time,
and only while the application waits in `receive()` with nothing queued (or
once it has closed, so that the client's close reply is read). A frame's
header is read first (2 to 14 bytes) to find where it ends; the `websockets`
parser still checks everything (masking, opcodes, UTF-8, the size limit
from the frame's header, before its payload is buffered: close 1009).
Reading from the socket pauses while more than READ_AHEAD bytes wait here.
"""

from __future__ import annotations

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

READ_AHEAD = 256 * 1024


def frame_length(buf: bytearray) -> int | None:
    """The whole length (header and payload) of the frame that starts `buf`,
    or None while its header is incomplete (RFC 6455 section 5.2)."""
    if len(buf) < 2:
        return None
    size = buf[1] & 0x7F
    header = 2
    if size == 126:
        header = 4
    elif size == 127:
        header = 10
    if buf[1] & 0x80:
        header += 4
    if len(buf) < header:
        return None
    if size == 126:
        size = int.from_bytes(buf[2:4], "big")
    elif size == 127:
        size = int.from_bytes(buf[2:10], "big")
    return header + size


class OneFrameAtATime(WebSocketsSansIOProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._held = bytearray()
        self._frame_left = 0  # bytes of the current frame not yet fed
        self._wanting = False  # the application waits in receive()
        self._held_paused = False

    def data_received(self, data: bytes) -> None:
        if not self.handshake_initiated:  # the upgrade request itself
            super().data_received(data)
            return
        if self.transport.is_closing() or self.conn.parser_exc is not None:
            return
        self._held += data
        if len(self._held) > READ_AHEAD and not self._held_paused:
            self._held_paused = True
            self.transport.pause_reading()
        self._feed()

    def _feed(self) -> None:
        """Feeds the held bytes to the parser: the rest of the current frame
        at once, a new frame only when a message is wanted."""
        while self._held and not self.transport.is_closing() and self.conn.parser_exc is None:
            if self._frame_left == 0:
                if not (self.close_sent or (self._wanting and self.queue.empty())):
                    break
                n = frame_length(self._held)
                if n is None:
                    break
                self._frame_left = n
            chunk = bytes(self._held[:self._frame_left])
            del self._held[:len(chunk)]
            self._frame_left -= len(chunk)
            super().data_received(chunk)
        if self._held_paused and len(self._held) <= READ_AHEAD and not self.transport.is_closing():
            self._held_paused = False
            self.transport.resume_reading()

    async def receive(self):
        if self.queue.empty():
            self._wanting = True
            self._feed()
        try:
            return await super().receive()
        finally:
            self._wanting = False

    async def send(self, message) -> None:
        await super().send(message)
        if message["type"] == "websocket.close":
            self._feed()  # the client's close reply may be held here
