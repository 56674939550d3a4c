#!/usr/bin/env bash
# The engine beside third-party clients on the same echo stream (issue 31):
# CPU per message, measured the same way for every client (the process's
# user + system CPU over its run, from its rusage, divided by the messages
# sent and received), and messages per second, against the built-in Rust
# server.
#
#   bench/stream-peers.sh [--streams 16] [--messages 2000] [--rounds 3]
#
# - gRPC bidi echo (stream.echo.64b): protobench's engine against ghz
#   (grpc_bench's client; it sends each call's messages from -d and reads
#   the replies, and reports whole calls, not messages);
# - WebSocket binary echo: protobench's engine against Python `websockets`
#   (bench/ws_peer.py). k6 is not used (AGPL: the registry notes say not
#   to), tcpkali is not packaged here; a Python client is a weak peer, and
#   is shown as what it is.
#
# The server on CPU 0 with one worker; each client on CPU 1, one thread
# (ghz --cpus 1), one at a time, rounds interleaved. A benchmark, not a
# test: never run by `make test`. Needs target/release/protobench.
set -euo pipefail
STREAMS=16
MESSAGES=2000
ROUNDS=3
while [ $# -gt 0 ]; do
  case "$1" in
    --streams) STREAMS="$2"; shift 2 ;;
    --messages) MESSAGES="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    *) echo "stream-peers: unknown argument $1" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
BIN=target/release/protobench
[ -x "$BIN" ] || { echo "stream-peers: build first: cargo build --release -p protobench" >&2; exit 2; }
GHZ="$(command -v ghz || echo "$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin/ghz")"
[ -x "$GHZ" ] || { echo "stream-peers: ghz not found (scripts/setup.sh installs it)" >&2; exit 2; }
python3 -c 'import websockets' 2>/dev/null || { echo "stream-peers: needs Python websockets" >&2; exit 2; }

LOG=$(mktemp)
PROTOBENCH_WORKERS=1 taskset -c 0 "$BIN" serve --rest 127.0.0.1:0 --grpc 127.0.0.1:0 >"$LOG" 2>&1 &
SERVER=$!
WORK=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null; rm -rf "$LOG" "$WORK"' EXIT
for _ in $(seq 50); do [ "$(grep -c '^listening' "$LOG")" -ge 2 ] && break; sleep 0.1; done
addr() { grep "protocol=$1 " "$LOG" | sed 's/.*addr=\([^ ]*\).*/\1/'; }
GRPC=$(addr grpc)
REST=$(addr rest)

# ghz's request: 100 echo messages per call, STREAMS x MESSAGES / 100 calls
# on STREAMS workers. ghz sends a call's messages without waiting for the
# replies; with 2,000 a call, 16 calls pipelined over 16,000 unread small
# DATA frames on the one connection, and h2 0.4.20 under the Rust server
# (its small-frame budget: half the connection window, 256 B charged per
# frame less its payload) closed the connection with GOAWAY
# ENHANCE_YOUR_CALM "too_many_data_frames" (docs/streaming.md). 100 a call
# keeps the same messages within it.
PER_CALL=100
CALLS=$((STREAMS * MESSAGES / PER_CALL))
python3 - "$PER_CALL" >"$WORK/ghz.json" <<'PY'
import json, sys
n = int(sys.argv[1])
print(json.dumps([{"seq": i, "payload": ("%064d" % i)[-64:]} for i in range(1, n + 1)]))
PY

# cpu CMD...: runs CMD and prints its standard output, then a line
# "CPU<TAB>cpu ns<TAB>wall ns" of its process (and its children).
cpu() {
  python3 - "$@" <<'PY'
import os, resource, subprocess, sys, time
t0 = time.perf_counter_ns()
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, check=True)
wall = time.perf_counter_ns() - t0
r = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = int((r.ru_utime + r.ru_stime) * 1e9)
out = p.stdout.decode()
sys.stdout.write(out if out.endswith("\n") else out + "\n")
print(f"CPU\t{cpu}\t{wall}")
PY
}

row() { # label messages(both ways) cpu_ns wall_ns rate_source_rate
  python3 -c 'import sys
label, msgs, cpu, wall = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
print(f"{label}\t{msgs}\t{msgs / (wall / 1e9):,.0f}\t{cpu / msgs:,.0f}")' "$@"
}

echo "# $(date -u +%FT%TZ) echo 64 B, $STREAMS streams x $MESSAGES messages, ping-pong, server on CPU 0 (1 worker), client on CPU 1"
printf 'client\tmessages (both ways)\tmessages/s (both ways, over the process wall time)\tclient CPU ns per message\n'
for round in $(seq "$ROUNDS"); do
  out=$(cpu taskset -c 1 "$BIN" load --protocol grpc "$GRPC" --workload stream.echo.64b \
    --streams "$STREAMS" --connections 1 --messages "$MESSAGES" --threads 1 -O json)
  read -r _ c w <<<"$(echo "$out" | grep '^CPU')"
  n=$(echo "$out" | grep -v '^CPU' | jq '.messages_sent + .messages_received')
  row "protobench grpc (round $round)" "$n" "$c" "$w"
  out=$(cpu taskset -c 1 "$GHZ" --insecure --cpus 1 --connections 1 -c "$STREAMS" -n "$CALLS" \
    --import-paths contract/proto --proto contract/proto/protobench/v1/stream.proto \
    --call protobench.v1.Streams/EchoStream -D "$WORK/ghz.json" -O json "$GRPC")
  read -r _ c w <<<"$(echo "$out" | grep '^CPU')"
  ok=$(echo "$out" | grep -v '^CPU' | jq '[.statusCodeDistribution.OK // 0] | add')
  [ "$ok" = "$CALLS" ] || { echo "stream-peers: ghz: $ok of $CALLS calls OK" >&2; exit 1; }
  row "ghz grpc (round $round)" $((CALLS * PER_CALL * 2)) "$c" "$w"
  out=$(cpu taskset -c 1 "$BIN" load --protocol rest "$REST" --workload stream.echo.64b --frames binary \
    --streams "$STREAMS" --messages "$MESSAGES" --threads 1 -O json)
  read -r _ c w <<<"$(echo "$out" | grep '^CPU')"
  n=$(echo "$out" | grep -v '^CPU' | jq '.messages_sent + .messages_received')
  row "protobench websocket (round $round)" "$n" "$c" "$w"
  out=$(cpu taskset -c 1 python3 bench/ws_peer.py "ws://$REST/v1/stream/ws/echo" "$STREAMS" "$MESSAGES")
  read -r _ c w <<<"$(echo "$out" | grep '^CPU')"
  n=$(echo "$out" | grep -v '^CPU' | jq '.sent + .received')
  row "python websockets (round $round)" "$n" "$c" "$w"
done
