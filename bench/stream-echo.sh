#!/usr/bin/env bash
# How many 64-byte echo messages per second one engine thread sustains
# against the built-in Rust server (issue 31: at least 100,000/s), and what
# each message costs the engine, over gRPC bidi streams and WebSocket.
#
#   bench/stream-echo.sh [--streams 64] [--connections 4] [--messages 20000]
#                        [--rounds 1] [--rate R]
#
# The server on CPU 0 (PROTOBENCH_WORKERS=1), the engine on CPU 1
# (taskset), one engine thread. Without --rate each stream runs ping-pong
# (one message in flight per stream, --streams in flight in all): the
# engine's ceiling, closed loop. With --rate R each stream sends R
# messages/s on its schedule (open loop): the engine's timer per message
# is then in the cost. Prints messages/s each way, CPU per message (the
# engine's threads over the run) and the per-message latency p50/p99.
#
# Needs a release build (cargo build --release -p protobench). A
# benchmark, not a test: never run by `make test`.
set -euo pipefail

STREAMS=64
CONNECTIONS=4
MESSAGES=20000
ROUNDS=1
RATE=""
while [ $# -gt 0 ]; do
  case "$1" in
    --streams) STREAMS="$2"; shift 2 ;;
    --connections) CONNECTIONS="$2"; shift 2 ;;
    --messages) MESSAGES="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --rate) RATE="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

cd "$(dirname "$0")/.."
BIN=target/release/protobench
[ -x "$BIN" ] || { echo "build first: cargo build --release -p protobench" >&2; exit 2; }
command -v jq >/dev/null || { echo "needs jq" >&2; exit 2; }

LOG=$(mktemp)
PROTOBENCH_WORKERS=1 taskset -c 0 "$BIN" serve --rest 127.0.0.1:0 --grpc 127.0.0.1:0 >"$LOG" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null; rm -f "$LOG"' EXIT
for _ in $(seq 50); do
  [ "$(grep -c '^listening' "$LOG")" -ge 2 ] && break
  sleep 0.1
done
addr() { grep "protocol=$1 " "$LOG" | sed 's/.*addr=\([^ ]*\).*/\1/'; }
GRPC=$(addr grpc)
REST=$(addr rest)

rate_args=()
[ -n "$RATE" ] && rate_args=(--rate "$RATE")

run() { # label, then load's arguments
  local label=$1
  shift
  taskset -c 1 "$BIN" load "$@" --workload stream.echo.64b --streams "$STREAMS" \
    --messages "$MESSAGES" --threads 1 "${rate_args[@]}" -O json |
    jq -r --arg l "$label" '"\($l)\t\(.received_per_second|floor)\t\(.sent_per_second|floor)\t\(.cpu_ns_per_message|floor)\t\(.cpu_utilization*100|floor)%\t\(.latency.p50_ns/1000|floor)\t\(.latency.p99_ns/1000|floor)\t\(.deferred_sends)\t\(.streams.failed)"'
}

echo "# $(date -u +%FT%TZ) $STREAMS streams x $MESSAGES messages of 64 B, one engine thread, ${RATE:-ping-pong}"
printf 'transport\treceived/s\tsent/s\tCPU ns/msg\tengine busy\tp50 us\tp99 us\tdeferred\tfailed streams\n'
for round in $(seq "$ROUNDS"); do
  run "grpc ($CONNECTIONS conn)" --protocol grpc "$GRPC" --connections "$CONNECTIONS"
  run "websocket binary" --protocol rest "$REST" --frames binary
  run "websocket text" --protocol rest "$REST" --frames text
done
