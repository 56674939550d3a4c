#!/usr/bin/env bash
# Calibration of the drift flag and the steady-state warm-up (issue 29
# item 3): how often each rule fires on a server that is steady, and how
# early it fires on one that is still getting faster.
#
#   bench/drift.sh [--seconds 180] [--jvm-runs 2] [--out DIR] [--profile release|debug]
#   bench/drift.sh --judge DIR          # only judge timelines recorded before
#
# Records per-second timelines with `protobench load -O json` (generator on
# CPU 0, server on CPU 1 when the machine has two):
# - steady: the built-in rust server (no JIT), rest and grpc inventory.xs,
#   16 callers, SECONDS each, after a 3 s warm-up;
# - rising: java-spring grpc inventory.m, 16 callers, from a freshly
#   started JVM, no warm-up, SECONDS (JIT compilation makes it rise for a
#   minute or more), JVM_RUNS times with a new JVM each time;
# then crates/model/examples/drift_calibration.rs slides every candidate
# rule over them and prints false alarms on the steady timelines, and on
# the rising ones when each warm-up rule would have stopped and how much
# rate was still to come (docs/results.md, "Drift and steady state").
#
# A benchmark, not a test: never run by `make test`. About
# (2 + JVM_RUNS) x SECONDS plus the JVM's start-up (~10 min by default).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SECONDS_EACH=180
JVM_RUNS=2
OUT=
PROFILE=release
JUDGE=
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_EACH=$2; shift 2 ;;
    --jvm-runs) JVM_RUNS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --profile) PROFILE=$2; shift 2 ;;
    --judge) JUDGE=$2; shift 2 ;;
    *) bench_unknown bench/drift.sh "$1" "--seconds, --jvm-runs, --out, --profile, --judge" ;;
  esac
done
bench_profile bench/drift.sh "$PROFILE"
bench_build -p protobench-model --example drift_calibration
CAL=target/$PROFILE/examples/drift_calibration
if [ -n "$JUDGE" ]; then
  exec "$CAL" "$JUDGE"/steady-*.json -- "$JUDGE"/rising-*.json
fi
bench_build -p protobench
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
echo "timelines in $OUT" >&2

GEN=(); SRV=()
if [ "$(nproc)" -ge 2 ]; then GEN=(taskset -c 0); SRV=(taskset -c 1); fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# serve NAME PROTOCOL PORT: starts a server, waits for its port.
serve() {
  local name=$1 protocol=$2 port=$3
  local args=(serve "--$protocol" "127.0.0.1:$port")
  [ "$name" = rust ] || args+=(--server "$name")
  "${SRV[@]}" "$BIN" "${args[@]}" > "$OUT/server-$name.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 600); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null; then return 0; fi
    sleep 0.2
  done
  echo "bench/drift.sh: $name did not listen on $port within 120 s (log: $OUT/server-$name.log)" >&2
  exit 1
}
stop() { kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; }
trap stop EXIT

for protocol in rest grpc; do
  port=$(free_port)
  serve rust "$protocol" "$port"
  echo "steady: rust $protocol inventory.xs, ${SECONDS_EACH}s" >&2
  "${GEN[@]}" "$BIN" load --protocol "$protocol" --target "127.0.0.1:$port" --workload inventory.xs \
    -c 16 --warmup 3s -z "${SECONDS_EACH}s" -O json > "$OUT/steady-rust-$protocol.json"
  stop
done
for run in $(seq 1 "$JVM_RUNS"); do
  port=$(free_port)
  serve java-spring grpc "$port"
  echo "rising: java-spring grpc inventory.m from a fresh JVM, ${SECONDS_EACH}s (run $run)" >&2
  "${GEN[@]}" "$BIN" load --protocol grpc --target "127.0.0.1:$port" --workload inventory.m \
    -c 16 --warmup 0s -z "${SECONDS_EACH}s" -O json > "$OUT/rising-java-spring-$run.json"
  stop
done
"$CAL" "$OUT"/steady-*.json -- "$OUT"/rising-*.json
