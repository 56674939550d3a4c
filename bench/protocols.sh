#!/usr/bin/env bash
# The engine's rate per protocol against the same server (issue 34): can
# `protobench load` drive graphql, connect, connect-json, grpc-web and
# grpc-web-text as fast as rest and grpc? And what each costs per call on
# the wire and in the generator's CPU.
#
#   bench/protocols.sh [--duration 5] [--rounds 3] [--concurrency 16] [--workloads "inventory.xs inventory.m"]
#
# The built-in server (all nine protocols, one worker) runs pinned to CPU 0,
# the engine pinned to CPU 1 (one thread), closed loop. The protocols run
# interleaved in each round (rest first, the order rotated per round) so
# that drift on a shared machine spreads over all of them. Printed per run
# and then per protocol and workload: the median calls/s over the rounds,
# the generator's CPU per call, bytes per call each way, and the rate
# relative to rest (and grpc) on the same workload.
#
# The server is the bottleneck on this machine's one core; the engine's
# own limit shows in its CPU per call (what it would take to saturate a
# faster server). Needs taskset and a release build of protobench. A
# benchmark, not a test: never run by `make test`.
set -euo pipefail

DURATION=5
ROUNDS=3
CONC=16
WORKLOADS="inventory.xs inventory.m"
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) DURATION="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --concurrency) CONC="$2"; shift 2 ;;
    --workloads) WORKLOADS="$2"; shift 2 ;;
    *) echo "usage: $0 [--duration S] [--rounds N] [--concurrency C] [--workloads \"W ...\"]" >&2; exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PB="${PROTOBENCH:-$ROOT/target/release/protobench}"
command -v taskset >/dev/null || { echo "missing taskset" >&2; exit 2; }
[ -x "$PB" ] || { echo "missing $PB: cargo build --release -p protobench" >&2; exit 2; }
PROTOCOLS=(rest rest-h2 grpc graphql connect connect-json grpc-web grpc-web-text)

WORK="$(mktemp -d /tmp/protobench-protocols-bench.XXXXXX)"
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

PROTOBENCH_WORKERS=1 taskset -c 0 "$PB" serve >"$WORK/serve.log" 2>&1 &
SERVER=$!
for _ in $(seq 1 100); do
  [ "$(grep -c '^listening' "$WORK/serve.log" || true)" -ge 9 ] && break
  sleep 0.1
done
addr() { grep "^listening protocol=$1 " "$WORK/serve.log" | sed 's/.*addr=\([^ ]*\).*/\1/'; }

echo "# bench/protocols.sh: $(date -u +%FT%TZ), $(nproc) CPUs, ${DURATION}s x ${ROUNDS} rounds, concurrency $CONC"
echo "round workload protocol calls_per_s gen_cpu_us_per_call bytes_sent_per_call bytes_received_per_call errors"
for round in $(seq 1 "$ROUNDS"); do
  n=${#PROTOCOLS[@]}
  for w in $WORKLOADS; do
    for i in $(seq 0 $((n - 1))); do
      p=${PROTOCOLS[$(((i + round - 1) % n))]}
      taskset -c 1 "$PB" load --protocol "$p" --target "$(addr "$p")" --workload "$w" \
        --concurrency "$CONC" --duration "${DURATION}s" --output json >"$WORK/r.json" 2>"$WORK/r.err" \
        || { echo "load $p $w failed: $(head -3 "$WORK/r.err")" >&2; continue; }
      python3 - "$round" "$w" "$p" "$WORK/r.json" <<'EOF' | tee -a "$WORK/runs.txt"
import json, sys
r = json.load(open(sys.argv[4]))
errors = sum(e["count"] for e in r["errors"])
print(sys.argv[1], sys.argv[2], sys.argv[3], round(r["rate"], 1),
      round(r["generator"]["cpu_ns_per_call"] / 1000, 2),
      round(r["bytes_sent_per_call"], 1), round(r["bytes_received_per_call"], 1), errors)
EOF
    done
  done
done
echo
echo "# medians over the rounds; rel = rate / rest's on the same workload"
python3 - "$WORK/runs.txt" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
by = {}
for _, w, p, rate, cpu, sent, recv, err in rows:
    by.setdefault((w, p), []).append((float(rate), float(cpu), float(sent), float(recv), int(err)))
print(f"{'workload':14} {'protocol':14} {'calls/s':>9} {'rel rest':>8} {'rel grpc':>8} {'gen us/call':>11} {'B sent':>8} {'B recv':>9} errors")
for (w, p), runs in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][1])):
    med = lambda i: statistics.median(r[i] for r in runs)
    rest = statistics.median(r[0] for r in by.get((w, "rest"), runs))
    grpc = statistics.median(r[0] for r in by.get((w, "grpc"), runs))
    print(f"{w:14} {p:14} {med(0):9.0f} {med(0)/rest:8.2f} {med(0)/grpc:8.2f} {med(1):11.2f} {med(2):8.0f} {med(3):9.0f} {sum(r[4] for r in runs)}")
EOF
