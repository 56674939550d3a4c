#!/usr/bin/env bash
# How far protobench's clock is from the wire: the engine's service time
# against a packet capture of the same calls (issue #15's accuracy check).
#
#   bench/wire.sh [--rate 200] [--duration 10] [--rounds 3]
#
# The built-in rest server runs pinned to CPU 0 with one worker, the engine
# pinned to CPU 1 sends inventory.xs at a fixed rate over one connection,
# and tshark captures the loopback traffic of that port. For each call the
# capture gives the time from the request's packet to the response's first
# packet (tshark's `http.time`); the engine gives its service time (from
# the moment it wrote the request to the moment it had the response),
# its latency from the intended send time (service time + schedule lag),
# and the schedule lag itself. Printed per round, then the medians:
#
#   overhead p50 = engine service time p50 - wire time p50
#                  (what the engine adds around a call; target < 30 us)
#   lag p50      = how late the engine sent against its schedule
#                  (an idle core's wake-up; target < 20 us at low rates)
#
# Needs: tshark (apt), taskset, a release build of protobench. A benchmark,
# not a test: never run by `make test`.
set -euo pipefail

RATE=200
DURATION=10
ROUNDS=3
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) RATE="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    *) echo "usage: $0 [--rate CALLS_PER_S] [--duration SECONDS] [--rounds N]" >&2; exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PB="${PROTOBENCH:-$ROOT/target/release/protobench}"
for tool in tshark taskset python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool (apt install tshark)" >&2; exit 2; }
done
[ -x "$PB" ] || { echo "missing $PB: cargo build --release -p protobench" >&2; exit 2; }

WORK="$(mktemp -d /tmp/protobench-wire-bench.XXXXXX)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

taskset -c 0 "$PB" serve --rest 127.0.0.1:0 --workers 1 >"$WORK/server.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do grep -q '^listening protocol=rest ' "$WORK/server.log" && break; sleep 0.1; done
ADDR=$(sed -n 's/^listening protocol=rest addr=\([^ ]*\).*/\1/p' "$WORK/server.log")
[ -n "$ADDR" ] || { echo "the rest server did not start:" >&2; cat "$WORK/server.log" >&2; exit 1; }
PORT=${ADDR##*:}
echo "rest server on $ADDR (CPU 0), engine on CPU 1, $RATE calls/s over one connection, ${DURATION} s x $ROUNDS rounds"
# Warm the server and the page cache once, uncaptured.
taskset -c 1 "$PB" load "http://$ADDR/v1/inventory/xs" -q "$RATE" -z 2s -c 1 --connections 1 >/dev/null 2>&1

for r in $(seq "$ROUNDS"); do
  pcap="$WORK/round$r.pcap"
  tshark -i lo -f "tcp port $PORT" -w "$pcap" -q >"$WORK/tshark$r.log" 2>&1 &
  tpid=$!
  for _ in $(seq 100); do grep -q 'Capturing on' "$WORK/tshark$r.log" && break; sleep 0.1; done
  taskset -c 1 "$PB" load "http://$ADDR/v1/inventory/xs" -q "$RATE" -z "${DURATION}s" -c 1 --connections 1 \
    --format json >"$WORK/load$r.json" 2>/dev/null
  sleep 0.5
  kill -INT "$tpid"; wait "$tpid" 2>/dev/null || true
  tshark -r "$pcap" -Y "http.response && tcp.dstport != $PORT" -T fields -e http.time >"$WORK/wire$r.txt" 2>/dev/null
done

python3 - "$WORK" "$ROUNDS" <<'EOF'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]

rows = []
print(f"{'round':>5} {'calls':>6} {'wire p50':>9} {'wire p99':>9} {'service p50':>12} {'overhead p50':>13} {'lag p50':>8} {'lag p99':>8} {'latency p50':>12}")
for r in range(1, rounds + 1):
    wire = [float(x) * 1e6 for x in open(f"{work}/wire{r}.txt").read().split() if x]
    d = json.load(open(f"{work}/load{r}.json"))
    service = d["service_time"]["p50_ns"] / 1e3
    lag = d["generator"]["schedule_lag"]
    latency = d["latency"]["p50_ns"] / 1e3
    if not wire:
        sys.exit(f"round {r}: the capture holds no HTTP response (tshark could not decode port traffic)")
    row = (len(wire), pct(wire, 0.5), pct(wire, 0.99), service, service - pct(wire, 0.5),
           lag["p50_ns"] / 1e3, lag["p99_ns"] / 1e3, latency)
    rows.append(row)
    print(f"{r:>5} {row[0]:>6} {row[1]:>7.0f}us {row[2]:>7.0f}us {row[3]:>10.0f}us {row[4]:>11.0f}us {row[5]:>6.0f}us {row[6]:>6.0f}us {row[7]:>10.0f}us")
med = [statistics.median(c) for c in zip(*rows)]
print(f"{'median':>5} {med[0]:>6.0f} {med[1]:>7.0f}us {med[2]:>7.0f}us {med[3]:>10.0f}us {med[4]:>11.0f}us {med[5]:>6.0f}us {med[6]:>6.0f}us {med[7]:>10.0f}us")
print(f"overhead over the wire, p50: {med[4]:.0f} us (target < 30 us: {'met' if med[4] < 30 else 'not met'}); "
      f"schedule lag p50: {med[5]:.0f} us (target < 20 us: {'met' if med[5] < 20 else 'not met'})")
EOF
