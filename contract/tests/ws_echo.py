"""A stock WebSocket client (the Python `websockets` library) against the
echo stream: sends a workload's vector messages and compares every reply
with the vector's expected response, in text frames (canonical JSON, compared
by value) and in binary frames (protobuf, compared byte for byte), then
closes with 1000 and expects the server's 1000.

Usage: python3 ws_echo.py ws://HOST:PORT/v1/stream/ws/echo VECTOR_DIR [CA.pem]
(a wss:// URL with the CA that signed the server's certificate for TLS)
Prints one line, `ok: N text and N binary messages echoed`, and exits 0;
any difference is an exception (exit 1).
"""

import asyncio
import json
import pathlib
import ssl
import sys

import websockets


def delimited(data):
    """Splits a length-delimited protobuf sequence (varint length prefixes)."""
    out, i = [], 0
    while i < len(data):
        length, shift = 0, 0
        while True:
            byte = data[i]
            i += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        out.append(data[i : i + length])
        i += length
    return out


async def main(url, vector, ca=None):
    sent_json = vector.joinpath("request.jsonl").read_text().splitlines()
    want_json = vector.joinpath("response.jsonl").read_text().splitlines()
    sent_pb = delimited(vector.joinpath("request.pb").read_bytes())
    want_pb = delimited(vector.joinpath("response.pb").read_bytes())
    tls = ssl.create_default_context(cafile=ca) if ca else None
    async with websockets.connect(url, max_size=None, ssl=tls) as ws:
        for i, (message, want) in enumerate(zip(sent_json, want_json)):
            await ws.send(message)
            reply = await ws.recv()
            if not isinstance(reply, str):
                raise AssertionError(f"text message {i}: the reply is a binary frame")
            if json.loads(reply) != json.loads(want):
                raise AssertionError(f"text message {i}: found {reply[:80]!r}, expected {want[:80]!r}")
        for i, (message, want) in enumerate(zip(sent_pb, want_pb)):
            await ws.send(message)
            reply = await ws.recv()
            if reply != want:
                raise AssertionError(f"binary message {i}: the reply differs ({len(reply)} bytes, expected {len(want)})")
        await ws.close(code=1000)
    if ws.close_code != 1000:
        raise AssertionError(f"the server closed with {ws.close_code}, expected 1000")
    print(f"ok: {len(sent_json)} text and {len(sent_pb)} binary messages echoed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None))
