"""A stock WebSocket client as the engine's peer (bench/stream-peers.sh):
Python's `websockets` (asyncio) running the echo stream ping-pong on N
connections, M binary (protobuf) messages of 64 bytes each, every reply
checked against what was sent. Prints one JSON line: messages each way, wall
time; the caller measures this process's CPU.

Usage: python3 ws_peer.py ws://HOST:PORT/v1/stream/ws/echo STREAMS MESSAGES
"""

import asyncio
import json
import sys
import time

import websockets


def message(seq):
    """StreamMessage{seq, payload: 64 ASCII bytes} as protobuf."""
    payload = (b"%064d" % seq)[-64:]
    out = bytearray(b"\x08")
    v = seq
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            break
    out += b"\x12" + bytes([len(payload)]) + payload
    return bytes(out)


async def one(url, messages):
    async with websockets.connect(url, max_size=None, compression=None) as ws:
        for seq in range(1, messages + 1):
            sent = message(seq)
            await ws.send(sent)
            if await ws.recv() != sent:
                raise AssertionError(f"message {seq}: the echo differs")
    return messages


async def main(url, streams, messages):
    t0 = time.perf_counter()
    done = await asyncio.gather(*(one(url, messages) for _ in range(streams)))
    wall = time.perf_counter() - t0
    print(json.dumps({"sent": sum(done), "received": sum(done), "wall_s": wall}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
