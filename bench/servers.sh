#!/usr/bin/env bash
# Server benchmark: the built-in Rust servers against minimal references on
# the same stack (not a test; run it by hand or with `make bench`).
#
#   rest  inventory.xs (GET /v1/inventory/xs)  vs  examples/bare_hyper.rs (hyper, empty 204)     with wrk
#   grpc  grpcbench.complex (Greeter/SayHello) vs  examples/minimal_greeter.rs (tonic, echo)     with h2load
#                                                                                              (and ghz if found)
#
# Every server runs with PROTOBENCH_WORKERS=1 pinned to CPU $SERVER_CPU, the
# load generator pinned to CPU $CLIENT_CPU (taskset). Rounds interleave the
# built-in server and its reference (the order alternates per round), each
# measurement preceded by a warm-up. Besides requests per second, the server's
# CPU time per call is read from /proc (user + system), which a busy shared
# machine disturbs less than throughput. The summary is the median per server
# and the ratios built-in / reference. Release builds only.
#
# Environment: ROUNDS (3), DURATION seconds (10), WARMUP seconds (2),
# SERVER_CPU (0), CLIENT_CPU (1), CONNECTIONS for wrk (50), H2_CONNECTIONS (10)
# and H2_STREAMS (10) for h2load and ghz, GHZ (auto|off).
set -euo pipefail
shopt -s inherit_errexit

cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
CONNECTIONS=${CONNECTIONS:-50}
H2_CONNECTIONS=${H2_CONNECTIONS:-10}
H2_STREAMS=${H2_STREAMS:-10}
GHZ=${GHZ:-auto}

need() {
  command -v "$1" >/dev/null || { echo "bench/servers.sh: $1 not found; install it with: apt-get install -y $2" >&2; exit 2; }
}
need taskset util-linux
need wrk wrk
need h2load nghttp2-client
need curl curl
GHZ_BIN=
if [ "$GHZ" != off ]; then
  for candidate in target/peers/bin/ghz "$(command -v ghz || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then GHZ_BIN=$candidate; break; fi
  done
  [ -n "$GHZ_BIN" ] || echo "ghz not found (GOBIN=\$PWD/target/peers/bin go install github.com/bojand/ghz/cmd/ghz@v0.120.0); h2load only" >&2
fi

echo "building (release)..." >&2
nice -n 5 cargo build --release -q -p protobench
nice -n 5 cargo build --release -q -p protobench-server --example bare_hyper --example minimal_greeter

TMP=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

# start NAME CMD...: a server on CPU $SERVER_CPU with one worker; once it
# listens, its address is in $TMP/NAME.addr and its pid in $TMP/NAME.pid.
start() {
  local name=$1
  shift
  PROTOBENCH_WORKERS=1 taskset -c "$SERVER_CPU" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
  PIDS+=($!)
  echo $! >"$TMP/$name.pid"
  for _ in $(seq 300); do
    grep -q '^listening' "$TMP/$name.out" && break
    sleep 0.1
  done
  sed -n 's/^listening .*addr=\([^ ]*\).*/\1/p' "$TMP/$name.out" | head -1 >"$TMP/$name.addr"
  [ -s "$TMP/$name.addr" ] || { echo "$name did not start:" >&2; cat "$TMP/$name.err" >&2; exit 3; }
}

# frame FILE: the gRPC frame (uncompressed flag, 4-byte big-endian length) of a bare message.
frame() {
  local n
  n=$(stat -c %s "$1")
  printf "\\x00\\x$(printf %02x $((n >> 24 & 255)))\\x$(printf %02x $((n >> 16 & 255)))\\x$(printf %02x $((n >> 8 & 255)))\\x$(printf %02x $((n & 255)))"
  cat "$1"
}

VEC=contract/vectors/grpcbench.complex
frame "$VEC/request.pb" >"$TMP/request.frame"
frame "$VEC/response.pb" >"$TMP/response.frame"

start builtin-rest env PROTOBENCH_REST_ADDR=127.0.0.1:0 target/release/protobench serve
start bare-hyper env PROTOBENCH_REST_ADDR=127.0.0.1:0 target/release/examples/bare_hyper
start builtin-grpc env PROTOBENCH_GRPC_ADDR=127.0.0.1:0 target/release/protobench serve
start minimal-greeter env PROTOBENCH_GRPC_ADDR=127.0.0.1:0 target/release/examples/minimal_greeter
BUILTIN_REST=$(cat "$TMP/builtin-rest.addr")
BARE_REST=$(cat "$TMP/bare-hyper.addr")
BUILTIN_GRPC=$(cat "$TMP/builtin-grpc.addr")
MINIMAL_GRPC=$(cat "$TMP/minimal-greeter.addr")

# Sanity: each server answers what it should before it is measured.
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://$BARE_REST/v1/inventory/xs")" = 204 ]
[ "$(curl -s "http://$BUILTIN_REST/v1/inventory/xs")" = "$(cat contract/vectors/inventory.xs/response.json)" ]
for addr in "$BUILTIN_GRPC" "$MINIMAL_GRPC"; do
  curl -s --http2-prior-knowledge -H 'content-type: application/grpc' -H 'te: trailers' \
    --data-binary @"$TMP/request.frame" -o "$TMP/got.frame" "http://$addr/helloworld.Greeter/SayHello"
  cmp -s "$TMP/got.frame" "$TMP/response.frame" || { echo "grpc server at $addr answered wrongly" >&2; exit 3; }
done

# Load generators; each prints "REQUESTS_PER_SECOND REQUESTS". ghz cancels the
# calls still in flight when its duration ends and counts them as errors, so
# only its successful calls are counted (and more than 1% errors fail the run).
run_wrk() { # ADDR SECONDS
  taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNECTIONS" -d"$2"s "http://$1/v1/inventory/xs" |
    awk '/requests in/ {n = $1} /^Requests\/sec:/ {r = $2} /Non-2xx/ {bad = 1}
         END {if (bad) {print "non-2xx responses" > "/dev/stderr"; exit 1} print r, n}'
}
run_h2load() { # ADDR SECONDS
  local out
  out=$(taskset -c "$CLIENT_CPU" h2load -t1 -c"$H2_CONNECTIONS" -m"$H2_STREAMS" -D"$2" \
    -d "$TMP/request.frame" -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://$1/helloworld.Greeter/SayHello")
  grep -q ' 0 failed, 0 errored' <<<"$out" || { echo "h2load saw failures: $out" >&2; exit 3; }
  awk '/^finished in/ {r = $4} /^requests:/ {n = $8} END {print r, n}' <<<"$out"
}
run_ghz() { # ADDR SECONDS
  taskset -c "$CLIENT_CPU" "$GHZ_BIN" --insecure --cpus 1 --proto contract/proto/helloworld/helloworld.proto \
    --call helloworld.Greeter.SayHello -B "$VEC/request.pb" -c $((H2_CONNECTIONS * H2_STREAMS)) \
    --connections "$H2_CONNECTIONS" -z "$2s" "$1" |
    awk '/^ *Count:/ {n = $2} /^ *Total:/ {t = $2} /\[OK\]/ {ok = $2}
         END {if (ok < 0.99 * n) {print "ghz saw errors" > "/dev/stderr"; exit 1} print ok / t, ok}'
}

# CPU time (user + system) of a process so far, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICKS=$(getconf CLK_TCK)

measure() { # TOOL NAME: prints "REQUESTS_PER_SECOND SERVER_CPU_US_PER_REQUEST"
  local addr pid before after out rate requests
  addr=$(cat "$TMP/$2.addr")
  pid=$(cat "$TMP/$2.pid")
  "run_$1" "$addr" "$WARMUP" >/dev/null
  before=$(cpu_ticks "$pid")
  out=$("run_$1" "$addr" "$DURATION")
  after=$(cpu_ticks "$pid")
  read -r rate requests <<<"$out"
  awk -v r="$rate" -v n="$requests" -v a="$before" -v b="$after" -v t="$TICKS" \
    'BEGIN {printf "%s %.2f\n", r, (b - a) / t * 1e6 / n}'
}

SCENARIOS=("rest wrk builtin-rest bare-hyper" "grpc h2load builtin-grpc minimal-greeter")
[ -n "$GHZ_BIN" ] && SCENARIOS+=("grpc ghz builtin-grpc minimal-greeter")

echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "setup: server 1 worker on CPU $SERVER_CPU, generator on CPU $CLIENT_CPU, $ROUNDS rounds x ${DURATION}s (+${WARMUP}s warm-up)"
echo "       wrk -t1 -c$CONNECTIONS; h2load -t1 -c$H2_CONNECTIONS -m$H2_STREAMS; ghz -c$((H2_CONNECTIONS * H2_STREAMS)) --connections $H2_CONNECTIONS"
echo
printf '%-5s %-7s %-5s %12s %12s %14s %14s\n' round tool proto "built-in/s" "reference/s" "built-in cpu" "reference cpu"
declare -A RATES CPUS
for round in $(seq "$ROUNDS"); do
  for scenario in "${SCENARIOS[@]}"; do
    read -r proto tool builtin reference <<<"$scenario"
    if ((round % 2)); then
      bout=$(measure "$tool" "$builtin")
      rout=$(measure "$tool" "$reference")
    else
      rout=$(measure "$tool" "$reference")
      bout=$(measure "$tool" "$builtin")
    fi
    read -r b bc <<<"$bout"
    read -r r rc <<<"$rout"
    RATES["$proto $tool b"]+="$b "
    RATES["$proto $tool r"]+="$r "
    CPUS["$proto $tool b"]+="$bc "
    CPUS["$proto $tool r"]+="$rc "
    printf '%-5s %-7s %-5s %12.0f %12.0f %11.2f us %11.2f us\n' "$round" "$tool" "$proto" "$b" "$r" "$bc" "$rc"
  done
done

median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo
echo "Medians. Throughput ratio = built-in / reference; CPU ratio = reference CPU per call / built-in CPU per call (1.00 = as cheap)."
echo
echo "| protocol | workload (built-in) vs reference | generator | built-in req/s | reference req/s | throughput ratio | built-in CPU/call | reference CPU/call | CPU ratio | target |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|---|"
for scenario in "${SCENARIOS[@]}"; do
  read -r proto tool _ _ <<<"$scenario"
  b=$(median "${RATES["$proto $tool b"]}")
  r=$(median "${RATES["$proto $tool r"]}")
  bc=$(median "${CPUS["$proto $tool b"]}")
  rc=$(median "${CPUS["$proto $tool r"]}")
  if [ "$proto" = rest ]; then
    workload="inventory.xs vs bare hyper 204"
    target=">= 0.80"
  else
    workload="grpcbench.complex vs minimal tonic greeter"
    target=">= 1.00"
  fi
  awk -v p="$proto" -v w="$workload" -v t="$tool" -v b="$b" -v r="$r" -v bc="$bc" -v rc="$rc" -v g="$target" \
    'BEGIN {printf "| %s | %s | %s | %.0f | %.0f | %.2f | %.2f us | %.2f us | %.2f | %s |\n", p, w, t, b, r, b / r, bc, rc, rc / bc, g}'
done
