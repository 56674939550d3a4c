#!/usr/bin/env bash
# Calibration of the drift flag and the steady-state warm-up (issue 29
# item 3): how often each rule fires on a server that is steady, and how
# early it fires on one that is still getting faster.
#
#   bench/drift.sh [--seconds 180] [--jvm-runs 2] [--out DIR] [--profile release|debug]
#   bench/drift.sh --judge DIR          # only judge timelines recorded before
#
# Records per-second timelines, and the server's CPU per second, with one
# `protobench run` per set (server on CPU 0, generator on CPU 1 when the
# machine has two):
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

# One `protobench run` per set, so that the runner samples the server's CPU
# each second (the drift flag's second signal) exactly as in a study; it
# pins the server to CPU 0 and the generator to CPU 1 on two cores.
# record NAME SERVER PROTOCOLS WORKLOAD WARMUP REPETITIONS
record() {
  local name=$1 server=$2 protocols=$3 workload=$4 warmup=$5 reps=$6
  cat > "$OUT/$name.toml" <<TOML
name = "drift-$name"
description = "bench/drift.sh: $server, $SECONDS_EACH s windows"
kind = "fixed"
servers = ["$server"]
protocols = [$protocols]
workloads = ["$workload"]
repetitions = $reps
warmup = "$warmup"
duration = "${SECONDS_EACH}s"
[load]
mode = "closed"
concurrency = 16
TOML
  echo "$name: $server [$protocols] $workload, warm-up $warmup, ${SECONDS_EACH}s x $reps" >&2
  "$BIN" run "$OUT/$name.toml" --db "$OUT/drift.db" --no-report > "$OUT/$name.log" 2>&1 || {
    echo "bench/drift.sh: the $name run failed (log: $OUT/$name.log)" >&2
    exit 1
  }
  "$BIN" report latest --db "$OUT/drift.db" -O json > "$OUT/$name-run.json"
}
# steady: the built-in rust server (no JIT), already warm
record steady rust '"rest", "grpc"' inventory.xs 3s 1
# rising: a fresh JVM each repetition (the runner starts the server anew),
# no warm-up: JIT compilation makes it rise for a minute or more
record rising java-spring '"grpc"' inventory.m 0s "$JVM_RUNS"
"$CAL" "$OUT"/steady-*.json -- "$OUT"/rising-*.json
