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
# In the same rounds, under its own capture, a floor client
# (crates/load/examples/floor.rs: one thread, no runtime, no parser
# library, busy-polling its socket from send to reply) makes the same calls
# at the same rate; its overhead is what the kernel's path between a clock
# read and the wire costs any client on this machine at this hour, and
# "engine - floor" is what the engine itself adds. The two run in turn,
# the engine first in odd rounds.
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
# The floor: a client with no runtime or parser, busy-polling its socket
# (crates/load/examples/floor.rs).
(cd "$ROOT" && cargo build --release -q -p protobench-load --example floor)
FLOOR="$ROOT/target/release/examples/floor"

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

# One captured run: capture NAME COMMAND... (tshark on the server's port
# while the command runs; the capture's request-to-response times land in
# $WORK/NAME.wire).
capture() {
  local name="$1"; shift
  tshark -i lo -f "tcp port $PORT" -w "$WORK/$name.pcap" -q >"$WORK/$name.tshark" 2>&1 &
  local tpid=$!
  for _ in $(seq 100); do grep -q 'Capturing on' "$WORK/$name.tshark" && break; sleep 0.1; done
  "$@"
  sleep 0.5
  kill -INT "$tpid"; wait "$tpid" 2>/dev/null || true
  tshark -r "$WORK/$name.pcap" -Y "http.response && tcp.dstport != $PORT" -T fields -e http.time >"$WORK/$name.wire" 2>/dev/null
}
engine() {
  taskset -c 1 "$PB" load "http://$ADDR/v1/inventory/xs" -q "$RATE" -z "${DURATION}s" -c 1 --connections 1 \
    --format json >"$WORK/load$1.json" 2>/dev/null
}
floor() {
  taskset -c 1 "$FLOOR" wire "$ADDR" /v1/inventory/xs "$RATE" "$DURATION" >"$WORK/floor$1.txt"
}
# The engine first in odd rounds, the floor first in even ones.
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then
    capture "engine$r" engine "$r"; capture "floor$r" floor "$r"
  else
    capture "floor$r" floor "$r"; capture "engine$r" engine "$r"
  fi
done

python3 - "$WORK" "$ROUNDS" <<'EOF'
import json, re, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]

def wire(name):
    xs = [float(x) * 1e6 for x in open(f"{work}/{name}.wire").read().split() if x]
    if not xs:
        sys.exit(f"{name}: the capture holds no HTTP response (tshark could not decode the port's traffic)")
    return xs

rows = []
print(f"{'round':>5} {'calls':>6} {'wire p50':>9} {'service p50':>12} {'overhead p50':>13} {'lag p50':>8} {'lag p99':>8} {'latency p50':>12}"
      f" | {'floor wire':>10} {'floor svc':>10} {'floor ovh':>10} {'engine - floor':>15}")
for r in range(1, rounds + 1):
    w = wire(f"engine{r}")
    d = json.load(open(f"{work}/load{r}.json"))
    service = d["service_time"]["p50_ns"] / 1e3
    lag = d["generator"]["schedule_lag"]
    latency = d["latency"]["p50_ns"] / 1e3
    fw = wire(f"floor{r}")
    ftxt = open(f"{work}/floor{r}.txt").read()
    m = re.search(r"service_p50_us=([0-9.]+)", ftxt)
    if not m:
        sys.exit(f"round {r}: the floor client printed no service time: {ftxt!r}")
    fsvc = float(m.group(1))
    ovh, fovh = service - pct(w, 0.5), fsvc - pct(fw, 0.5)
    row = (len(w), pct(w, 0.5), service, ovh, lag["p50_ns"] / 1e3, lag["p99_ns"] / 1e3, latency,
           pct(fw, 0.5), fsvc, fovh, ovh - fovh)
    rows.append(row)
    print(f"{r:>5} {row[0]:>6} {row[1]:>7.0f}us {row[2]:>10.0f}us {row[3]:>11.0f}us {row[4]:>6.0f}us {row[5]:>6.0f}us {row[6]:>10.0f}us"
          f" | {row[7]:>8.0f}us {row[8]:>8.0f}us {row[9]:>8.0f}us {row[10]:>13.0f}us")
med = [statistics.median(c) for c in zip(*rows)]
print(f"{'median':>5} {med[0]:>6.0f} {med[1]:>7.0f}us {med[2]:>10.0f}us {med[3]:>11.0f}us {med[4]:>6.0f}us {med[5]:>6.0f}us {med[6]:>10.0f}us"
      f" | {med[7]:>8.0f}us {med[8]:>8.0f}us {med[9]:>8.0f}us {med[10]:>13.0f}us")
print(f"overhead over the wire, p50: {med[3]:.0f} us (target < 30 us: {'met' if med[3] < 30 else 'not met'}); "
      f"the floor client's: {med[9]:.0f} us, so the engine's own: {med[10]:.0f} us; "
      f"schedule lag p50: {med[4]:.0f} us (target < 20 us: {'met' if med[4] < 20 else 'not met'})")
EOF
