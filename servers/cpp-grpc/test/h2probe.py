#!/usr/bin/env python3
"""Raw socket probes of a gRPC listener, standard library only (test.sh).

  h2probe.py settings HOST:PORT [CA.pem]
      sends the client preface and an empty SETTINGS frame, prints the
      server's SETTINGS_MAX_CONCURRENT_STREAMS (`max_streams N`, or
      `max_streams absent`).
  h2probe.py idle HOST:PORT MODE MAX_S [CA.pem]
      opens a connection and stays silent, then prints how long the server
      took to close it (`MODE closed S goaway=0|1`) or `MODE open` after MAX_S
      seconds.
      MODE: `nothing` (TCP connected, not a byte sent; with TLS: no
      handshake either), `preface` (TLS handshake if CA.pem, then the HTTP/2
      preface and SETTINGS, and the SETTINGS ACK; no stream).
"""
import socket
import ssl
import struct
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS, PING, GOAWAY = 0x4, 0x6, 0x7
ACK = 0x1
MAX_CONCURRENT_STREAMS = 0x3


def frame(ftype, flags=0, stream=0, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload


def connect(addr, ca, handshake=True):
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host.strip("[]"), int(port)), timeout=5)
    if ca and handshake:
        ctx = ssl.create_default_context(cafile=ca)
        ctx.set_alpn_protocols(["h2"])
        sock = ctx.wrap_socket(sock, server_hostname="localhost")
        if sock.selected_alpn_protocol() != "h2":
            sys.exit(f"ALPN gave {sock.selected_alpn_protocol()!r}, not h2")
    return sock


class Reader:
    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def frame(self):
        """The next frame as (type, flags, stream, payload); None at EOF."""
        while True:
            if len(self.buf) >= 9:
                n = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) >= 9 + n:
                    f = self.buf[3], self.buf[4], int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF, self.buf[9 : 9 + n]
                    self.buf = self.buf[9 + n :]
                    return f
            try:
                chunk = self.sock.recv(65536)
            except (ConnectionResetError, ssl.SSLError, OSError) as e:
                if isinstance(e, (socket.timeout, TimeoutError)):
                    raise
                return None
            if not chunk:
                return None
            self.buf += chunk


def settings(addr, ca):
    sock = connect(addr, ca)
    sock.sendall(PREFACE + frame(SETTINGS))
    r = Reader(sock)
    while True:
        f = r.frame()
        if f is None:
            sys.exit("connection closed before the server's SETTINGS")
        ftype, flags, _, payload = f
        if ftype == SETTINGS and not flags & ACK:
            for i in range(0, len(payload), 6):
                ident, value = struct.unpack(">HI", payload[i : i + 6])
                if ident == MAX_CONCURRENT_STREAMS:
                    print(f"max_streams {value}")
                    return
            print("max_streams absent")
            return


def idle(addr, mode, max_s, ca):
    start = time.monotonic()
    sock = connect(addr, ca, handshake=(mode == "preface"))
    r = Reader(sock)
    goaway = 0
    if mode == "preface":
        sock.sendall(PREFACE + frame(SETTINGS))
    while True:
        left = max_s - (time.monotonic() - start)
        if left <= 0:
            print(f"{mode} open")
            return
        sock.settimeout(left)
        try:
            f = r.frame()
        except (socket.timeout, TimeoutError):
            print(f"{mode} open")
            return
        if f is None:
            print(f"{mode} closed {time.monotonic() - start:.2f} goaway={goaway}")
            return
        ftype, flags, _, payload = f
        if mode == "nothing":  # read what comes, answer nothing
            pass
        elif ftype == SETTINGS and not flags & ACK:
            sock.sendall(frame(SETTINGS, ACK))
        elif ftype == PING and not flags & ACK:
            sock.sendall(frame(PING, ACK, 0, payload))
        if ftype == GOAWAY:
            goaway = 1


def main():
    args = sys.argv[1:]
    if len(args) >= 2 and args[0] == "settings":
        settings(args[1], args[2] if len(args) > 2 else None)
    elif len(args) >= 4 and args[0] == "idle" and args[2] in ("nothing", "preface"):
        idle(args[1], args[2], float(args[3]), args[4] if len(args) > 4 else None)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
