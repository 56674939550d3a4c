#!/usr/bin/env bash
# How the rate's noise on this machine depends on the time scale (issue 29,
# item 4): the Allan deviation of one point's per-second rate.
#
#   bench/noise.sh [--seconds 60] [--workload inventory.xs] [--protocols rest,grpc]
#                  [--concurrency 16] [--profile release|debug]
#
# For each protocol: the built-in Rust server on CPU 0, one `protobench
# load` run of SECONDS on CPU 1 (closed loop), its per-second timeline, and
# bench/noise.py's Allan deviation of the log rate at tau = 1, 2, 4, 8 and
# 16 s. The Allan deviation is what a ratio of two back-to-back windows of
# length tau sees: (the variance of the difference of two adjacent tau-means)
# / 2. White noise falls as tau^-1/2 (sigma x sqrt(tau) stays constant), so
# alternating two protocols at a finer grain than 1 s gains nothing beyond
# the t quantile's degrees of freedom; drift (flicker, random walk) makes it
# fall slower or rise, and then a finer grain pays.
#
# A benchmark, not a test: never run by `make test`.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SECONDS_EACH=60
WORKLOAD=inventory.xs
PROTOCOLS=rest,grpc
CONCURRENCY=16
PROFILE=release
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_EACH=$2; shift 2 ;;
    --workload) WORKLOAD=$2; shift 2 ;;
    --protocols) PROTOCOLS=$2; shift 2 ;;
    --concurrency) CONCURRENCY=$2; shift 2 ;;
    --profile) PROFILE=$2; shift 2 ;;
    *) bench_unknown bench/noise.sh "$1" "--seconds, --workload, --protocols, --concurrency, --profile" ;;
  esac
done
bench_profile bench/noise.sh "$PROFILE"
bench_build -p protobench

TMP=${NOISE_OUT:-$(mktemp -d)}
SERVER=
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$TMP"' EXIT
PORT_REST=$((20000 + RANDOM % 20000))
PORT_GRPC=$((PORT_REST + 1))
PORT_H2=$((PORT_REST + 2))
PORT_SOAP=$((PORT_REST + 3))
taskset -c 0 "$BIN" serve --rest "127.0.0.1:$PORT_REST" --grpc "127.0.0.1:$PORT_GRPC" \
  --rest-h2 "127.0.0.1:$PORT_H2" --soap "127.0.0.1:$PORT_SOAP" > "$TMP/server.log" 2>&1 &
SERVER=$!
sleep 1
echo "load: $(uptime | sed 's/.*load average: //')" >&2
IFS=, read -r -a PROTOS <<< "$PROTOCOLS"
for p in "${PROTOS[@]}"; do
  case "$p" in
    rest) port=$PORT_REST ;; grpc) port=$PORT_GRPC ;; rest-h2) port=$PORT_H2 ;; soap) port=$PORT_SOAP ;;
    *) echo "bench/noise.sh: unknown protocol $p (rest, rest-h2, grpc, soap)" >&2; exit 2 ;;
  esac
  taskset -c 1 "$BIN" load --protocol "$p" --target "127.0.0.1:$port" --workload "$WORKLOAD" \
    -c "$CONCURRENCY" -z "${SECONDS_EACH}s" --warmup 2s -O json > "$TMP/$p.json"
done
python3 "$(dirname "$0")/noise.py" "$TMP"/*.json
