#!/usr/bin/env bash
# Instructions per call, counted by valgrind's callgrind, for the load engine
# and for the built-in Rust servers: a figure that does not move with the
# machine's load, unlike calls/s (see docs/dev/callgrind.md).
#
#   bench/callgrind.sh [--n1 1000] [--n2 5000] [--rate 200] [--workload tasks.int]
#                      [--protocols rest,rest-h2,grpc,soap,graphql,graphql-get,connect,connect-json,grpc-web,grpc-web-text] [--no-server]
#                      [--concurrency 1] [--connections M] [--tls] [--profile] [--peers]
#                      [--keep DIR] [--no-build]
#
# Method. Every figure is a difference of two runs that differ only in their
# number of calls: instructions per call = (I(N2) - I(N1)) / (N2 - N1), so
# start-up, connecting and shutting down cancel out (the engine's warm-up is
# time-based, hence --warmup 0s). What does not cancel is work that grows with
# the run's duration rather than its calls: the coordinator's per-second
# timeline (one latency histogram encoded a second). A protocol whose server
# answers slowly runs longer for the same calls and shows more of it per call
# (GraphQL on inventory.m: about 1,500 of its 8,700), so the table gives it
# apart (per-s) and the instructions without it (calls). Engine: `protobench load` runs under
# callgrind, closed loop, one engine thread, --concurrency callers (default
# one, on one connection), against a server running natively; then the same
# open loop at --rate calls/s (rest only). Server: one `protobench serve --workers 1` runs under
# callgrind; the engine, natively, makes N1 then N2 calls on each protocol and
# `callgrind_control --dump` closes a profile part after each run. --peers:
# the peer generators under callgrind against the same native server, same
# workload, one connection and one call in flight (clear text, GET workloads
# for rest and rest-h2): wrk on rest (it has no call count, so its two runs
# differ in duration and the difference uses the calls it reports), h2load on
# rest-h2 and h2load with the pre-encoded gRPC frame on grpc. Counts are
# user-space instructions (Ir) of the whole process (every thread); the
# kernel's work is not in them, so the number of system calls per call
# (callgrind's sysCount, --collect-systime) is printed beside them, with
# clock_gettime apart: under valgrind it is a system call, natively a vDSO
# read that is in neither column. --tls: the same over TLS (the server's
# self-signed certificate, the engine with --insecure). Repeated runs agree
# within 0.5%.
#
# Build configuration. callgrind cannot run the normal release build: rustix
# 1.x's linux_raw backend reads the aux vector with prctl(PR_GET_AUXV), which
# valgrind 3.19 hands to the kernel, so rustix gets the kernel's aux vector
# instead of the guest's, and its AT_SYSINFO_EHDR points at a vDSO that is not
# mapped in the guest
# (SIGSEGV in rustix::backend::param::auxv::check_elf_base on the engine's
# first clock_gettime; rustix issue #1559). The fix used here:
#
#   RUSTFLAGS="--cfg rustix_use_libc" CARGO_TARGET_DIR=target/callgrind \
#     cargo build --release --locked -p protobench
#
# `rustix_use_libc` (read by rustix 1.1's build.rs, CARGO_CFG_RUSTIX_USE_LIBC)
# switches rustix to its libc backend for every crate that uses it, so time,
# timerfd and I/O calls go through glibc, which valgrind supports. It is a
# rustc flag, not a Cargo feature, so the workspace manifest and the normal
# release build (target/release) are untouched; the separate target dir keeps
# the two builds from invalidating each other. Same profile (release:
# codegen-units 4) except that this build keeps its symbols and line-tables-only
# debug info (CARGO_PROFILE_RELEASE_STRIP/DEBUG below; the normal release build
# is stripped), which callgrind_annotate uses for names and files. The only code that differs is rustix's few calls on
# the engine's path (clock_gettime(CLOCK_THREAD_CPUTIME_ID), timerfd_settime,
# read on the timerfd), which become glibc calls: rustix is 0 instructions per
# call in the closed loop and 52 in the open loop (measured). A cargo profile alone cannot do it (profile rustflags are
# unstable), and rustix's `use-libc-auxv` feature would change the release
# build's dependency graph through the workspace manifest.
#
# --profile: for the engine on rest, grpc and rest open loop (and the server
# on rest and grpc), the top functions per call
# (self and inclusive, from the same N2 - N1 difference) and the self cost per
# call grouped by crate (ours, hyper, h2, tokio, std, libc's allocator, ...).
#
# Needs: valgrind (apt), python3, cargo; wrk and h2load (apt: wrk,
# nghttp2-client) for --peers. A benchmark, never run by `make test`;
# each callgrind run takes well under 2 minutes at the defaults.
set -euo pipefail

N1=1000
N2=5000
RATE=200
WORKLOAD=tasks.int
CONCURRENCY=1
CONNECTIONS=""
PROTOCOLS=rest,rest-h2,grpc,soap
SERVER=1
PROFILE=0
PEERS=0
KEEP=""
BUILD=1
TLS_SERVE=()
TLS_LOAD=()
usage() {
  echo "usage: $0 [--n1 N] [--n2 N] [--rate R] [--workload NAME] [--concurrency C] [--connections M] [--protocols LIST] [--no-server] [--tls] [--profile] [--peers] [--keep DIR] [--no-build]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --n1) N1="$2"; shift 2 ;;
    --n2) N2="$2"; shift 2 ;;
    --rate) RATE="$2"; shift 2 ;;
    --workload) WORKLOAD="$2"; shift 2 ;;
    --concurrency) CONCURRENCY="$2"; shift 2 ;;
    --connections) CONNECTIONS="$2"; shift 2 ;;
    --protocols) PROTOCOLS="$2"; shift 2 ;;
    --no-server) SERVER=0; shift ;;
    --tls) TLS_SERVE=(--tls); TLS_LOAD=(--insecure); shift ;;
    --profile) PROFILE=1; shift ;;
    --peers) PEERS=1; shift ;;
    --keep) KEEP="$2"; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    *) usage ;;
  esac
done
[ "$N2" -gt "$N1" ] && [ "$N1" -gt 0 ] || { echo "need 0 < --n1 < --n2" >&2; exit 2; }

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TARGET_DIR="${PROTOBENCH_CALLGRIND_TARGET:-$ROOT/target/callgrind}"
PB="$TARGET_DIR/release/protobench"
for tool in valgrind callgrind_annotate callgrind_control python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool (apt install valgrind python3)" >&2; exit 2; }
done

if [ "$BUILD" = 1 ]; then
  echo "== building $PB (release, --cfg rustix_use_libc)" >&2
  (cd "$ROOT" && env -u CARGO_ENCODED_RUSTFLAGS RUSTFLAGS="${RUSTFLAGS:-} --cfg rustix_use_libc" \
    CARGO_PROFILE_RELEASE_STRIP=false CARGO_PROFILE_RELEASE_DEBUG=line-tables-only \
    CARGO_TARGET_DIR="$TARGET_DIR" cargo build --release --locked -p protobench >&2)
fi
[ -x "$PB" ] || { echo "missing $PB: run without --no-build" >&2; exit 2; }

if [ -n "$KEEP" ]; then WORK="$KEEP"; mkdir -p "$WORK"; else WORK="$(mktemp -d /tmp/protobench-callgrind.XXXXXX)"; fi
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "$KEEP" ] || rm -rf "$WORK"
}
trap cleanup EXIT

CG=(valgrind --tool=callgrind --collect-systime=yes)

# wait_listening LOG COUNT SECONDS: until LOG has COUNT "listening" lines.
wait_listening() {
  for _ in $(seq $(($3 * 5))); do
    [ "$(grep -c '^listening' "$1" || true)" -ge "$2" ] && return 0
    sleep 0.2
  done
  echo "server did not start; its log:" >&2; cat "$1" >&2; exit 1
}
addr() { grep "protocol=$2 " "$1" | sed 's/.*addr=\([^ ]*\).*/\1/'; }

# check_json FILE N: the run made N calls, all successful.
check_json() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
if r["successes"] != n or r["calls"] != n:
    sys.exit(f"{sys.argv[1]}: expected {n} successful calls, got {r['successes']} of {r['calls']}: {r.get('errors')}")
EOF
}

# One engine thread; with --concurrency above 1, the engine's default connections
# (rest, soap: one per caller; rest-h2, grpc: min(callers, CPUs)) unless
# --connections M says how many (h2load's -c M -m C/M on HTTP/2).
LOAD_COMMON=(load --quiet --output json --warmup 0s --threads 1 --concurrency "$CONCURRENCY" --workload "$WORKLOAD"
  ${TLS_LOAD[@]+"${TLS_LOAD[@]}"})
if [ -n "$CONNECTIONS" ]; then
  LOAD_COMMON+=(--connections "$CONNECTIONS")
elif [ "$CONCURRENCY" = 1 ]; then
  LOAD_COMMON+=(--connections 1)
fi
SERVE_ALL=(serve --workers 1 --rest 127.0.0.1:0 --rest-h2 127.0.0.1:0 --grpc 127.0.0.1:0 --soap 127.0.0.1:0
  ${TLS_SERVE[@]+"${TLS_SERVE[@]}"})
# The other protocols' listeners only when asked for (graphql, graphql-get, connect,
# connect-json, grpc-web, grpc-web-text): the default figures stay those
# of a server with the four.
LISTENERS=4
for p in ${PROTOCOLS//,/ }; do
  case "$p" in
    rest | rest-h2 | grpc | soap) ;;
    graphql | graphql-get | connect | connect-json | grpc-web | grpc-web-text) SERVE_ALL+=("--$p" 127.0.0.1:0); LISTENERS=$((LISTENERS + 1)) ;;
    *) echo "unknown protocol $p" >&2; exit 2 ;;
  esac
done

# engine NAME N PROTOCOL TARGET [ARGS...]: engine under callgrind, N calls.
engine() {
  local name="$1" n="$2" proto="$3" target="$4"; shift 4
  local out="$WORK/engine-$name-$n"
  if ! "${CG[@]}" --callgrind-out-file="$out.cg" --log-file="$out.vg" \
    "$PB" "${LOAD_COMMON[@]}" --protocol "$proto" --target "$target" --requests "$n" "$@" > "$out.json"; then
    echo "callgrind run $name N=$n failed; valgrind's log:" >&2; tail -n 30 "$out.vg" >&2
    if grep -q 'rustix::backend::param::auxv' "$out.vg"; then
      echo "$PB was built without --cfg rustix_use_libc (see the header of $0)" >&2
    fi
    exit 1
  fi
  check_json "$out.json" "$n"
}

# per_call A.cg B.cg: "Ir/call syscalls/call clock-reads/call coordinator-Ir/call" from runs
# of N1 and N2 calls (the last: the engine's per-second timeline work, see callgrind.py).
per_call() { python3 "$ROOT/bench/callgrind.py" per-call "$1" "$2" "$N1" "$N2"; }

IFS=, read -r -a PROTOS <<< "$PROTOCOLS"

# 1. The engine, against a native server.
echo "== engine under callgrind: N1=$N1, N2=$N2 calls, $WORKLOAD, closed loop c=$CONCURRENCY$([ "$RATE" = 0 ] || echo ", open loop $RATE/s on rest")" >&2
"$PB" "${SERVE_ALL[@]}" > "$WORK/native-serve.log" 2>&1 &
NATIVE=$!
PIDS+=("$NATIVE")
wait_listening "$WORK/native-serve.log" "$LISTENERS" 30
declare -A ENG SRV
for p in "${PROTOS[@]}"; do
  a="$(addr "$WORK/native-serve.log" "$p")"
  for n in "$N1" "$N2"; do engine "$p" "$n" "$p" "$a"; done
  ENG[$p]="$(per_call "$WORK/engine-$p-$N1.cg" "$WORK/engine-$p-$N2.cg")"
  read -r -a e <<< "${ENG[$p]}"
  echo "   $p: ${e[0]} instructions/call, ${e[3]} of them the coordinator's per-second timeline" >&2
done
if [ "$RATE" != 0 ]; then
  a="$(addr "$WORK/native-serve.log" rest)"
  for n in "$N1" "$N2"; do engine rest-open "$n" rest "$a" --rate "$RATE"; done
  ENG[rest-open]="$(per_call "$WORK/engine-rest-open-$N1.cg" "$WORK/engine-rest-open-$N2.cg")"
  echo "   rest open loop: ${ENG[rest-open]%% *} instructions/call" >&2
fi

# 1b. The peer generators, against the same native server.
declare -A PEER PEER_NAME
if [ "$PEERS" = 1 ]; then
  [ "${#TLS_SERVE[@]}" = 0 ] || { echo "--peers measures clear text only" >&2; exit 2; }
  [ "$CONCURRENCY" = 1 ] || echo "   peers run one call in flight on one connection, not --concurrency $CONCURRENCY" >&2
  for tool in wrk h2load; do command -v "$tool" >/dev/null || { echo "--peers needs $tool (apt install wrk nghttp2-client)" >&2; exit 2; }; done
  read -r METHOD REST_PATH GRPC_PATH < <(python3 - "$ROOT/contract/workloads.json" "$WORKLOAD" <<'EOF2'
import json, sys
w = next(w for w in json.load(open(sys.argv[1])) if w["name"] == sys.argv[2])
print(w["restMethod"], w["restPath"], w["grpcPath"])
EOF2
)
  # peer NAME FILE.cg CMD...: CMD under callgrind, its output in FILE.out.
  peer() {
    local name="$1" out="$2"; shift 2
    if ! "${CG[@]}" --callgrind-out-file="$out" --log-file="$out.vg" "$@" > "$out.out" 2>&1; then
      echo "callgrind run of $name failed:" >&2; tail -n 20 "$out.out" "$out.vg" >&2; exit 1
    fi
  }
  # h2load_calls FILE: the calls h2load made, all successful, or fail.
  h2load_calls() {
    grep -q ' 0 failed, 0 errored, 0 timeout' "$1" || { echo "h2load saw failures:" >&2; cat "$1" >&2; exit 1; }
    awk '/^requests:/ {print $8}' "$1"
  }
  for p in "${PROTOS[@]}"; do
    a="$(addr "$WORK/native-serve.log" "$p")"
    case "$p" in
      rest)
        [ "$METHOD" = GET ] || { echo "   wrk: $WORKLOAD is not a GET; skipped" >&2; continue; }
        # Under callgrind a call takes about 100 us: 3 s and 9 s give some 25,000 and 75,000 calls.
        for d in 3 9; do peer wrk "$WORK/peer-rest-$d.cg" wrk -t1 -c1 -d"${d}s" "http://$a$REST_PATH"; done
        grep -q 'Non-2xx' "$WORK/peer-rest-3.cg.out" "$WORK/peer-rest-9.cg.out" && { echo "wrk saw non-2xx responses" >&2; exit 1; }
        c1=$(awk '/requests in/ {print $1}' "$WORK/peer-rest-3.cg.out")
        c2=$(awk '/requests in/ {print $1}' "$WORK/peer-rest-9.cg.out")
        PEER[$p]="$(python3 "$ROOT/bench/callgrind.py" per-call "$WORK/peer-rest-3.cg" "$WORK/peer-rest-9.cg" "$c1" "$c2")"
        PEER_NAME[$p]="wrk -t1 -c1" ;;
      rest-h2)
        [ "$METHOD" = GET ] || { echo "   h2load: $WORKLOAD is not a GET; skipped" >&2; continue; }
        for n in "$N1" "$N2"; do peer h2load "$WORK/peer-$p-$n.cg" h2load -t1 -c1 -m1 -n"$n" "http://$a$REST_PATH"; done
        PEER[$p]="$(python3 "$ROOT/bench/callgrind.py" per-call "$WORK/peer-$p-$N1.cg" "$WORK/peer-$p-$N2.cg" \
          "$(h2load_calls "$WORK/peer-$p-$N1.cg.out")" "$(h2load_calls "$WORK/peer-$p-$N2.cg.out")")"
        PEER_NAME[$p]="h2load -c1 -m1" ;;
      grpc)
        python3 - "$ROOT/contract/vectors/$WORKLOAD/request.pb" "$WORK/request.frame" <<'EOF2'
import struct, sys
body = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(b"\0" + struct.pack(">I", len(body)) + body)
EOF2
        for n in "$N1" "$N2"; do
          peer h2load "$WORK/peer-$p-$n.cg" h2load -t1 -c1 -m1 -n"$n" -d "$WORK/request.frame" \
            -H 'content-type: application/grpc' -H 'te: trailers' "http://$a$GRPC_PATH"
        done
        PEER[$p]="$(python3 "$ROOT/bench/callgrind.py" per-call "$WORK/peer-$p-$N1.cg" "$WORK/peer-$p-$N2.cg" \
          "$(h2load_calls "$WORK/peer-$p-$N1.cg.out")" "$(h2load_calls "$WORK/peer-$p-$N2.cg.out")")"
        PEER_NAME[$p]="h2load -c1 -m1" ;;
      *) continue ;;
    esac
    echo "   ${PEER_NAME[$p]} on $p: ${PEER[$p]%% *} instructions/call" >&2
  done
fi
kill "$NATIVE" 2>/dev/null || true
wait "$NATIVE" 2>/dev/null || true

# 2. The server under callgrind, loaded by the native engine; one profile
# part per load run (callgrind_control --dump), so every part is one run.
if [ "$SERVER" = 1 ]; then
  echo "== server under callgrind (--workers 1)" >&2
  "${CG[@]}" --callgrind-out-file="$WORK/server.cg" --log-file="$WORK/server.vg" \
    "$PB" "${SERVE_ALL[@]}" > "$WORK/cg-serve.log" 2>&1 &
  SPID=$!
  PIDS+=("$SPID")
  wait_listening "$WORK/cg-serve.log" "$LISTENERS" 120
  callgrind_control --dump=startup "$SPID" >> "$WORK/control.log" 2>&1
  part=1
  for p in "${PROTOS[@]}"; do
    a="$(addr "$WORK/cg-serve.log" "$p")"
    for n in "$N1" "$N2"; do
      "$PB" "${LOAD_COMMON[@]}" --protocol "$p" --target "$a" --requests "$n" > "$WORK/server-$p-$n.json"
      check_json "$WORK/server-$p-$n.json" "$n"
      callgrind_control --dump="$p-$n" "$SPID" >> "$WORK/control.log" 2>&1
      part=$((part + 1))
      ln -sf "server.cg.$part" "$WORK/server-$p-$n.cg"
    done
    SRV[$p]="$(per_call "$WORK/server-$p-$N1.cg" "$WORK/server-$p-$N2.cg")"
    echo "   $p: ${SRV[$p]%% *} instructions/call" >&2
  done
  kill -TERM "$SPID" 2>/dev/null || true
  wait "$SPID" 2>/dev/null || true
fi

# 3. The table.
echo
echo "per call, $WORKLOAD${TLS_SERVE[@]+ over TLS}, (I(N2=$N2) - I(N1=$N1)) / $((N2 - N1)); Ir = user-space instructions of the whole process"
printf '%-20s %10s %8s %8s %6s %6s   %10s %6s %6s\n' "" engine "" "" "" "" server "" ""
printf '%-20s %10s %8s %8s %6s %6s   %10s %6s %6s\n' protocol Ir per-s calls sys clock Ir sys clock
row() {
  local label="$1" e s
  read -r -a e <<< "$2"
  read -r -a s <<< "$3"
  local calls=$((e[0] - e[3]))
  printf '%-20s %10s %8s %8s %6s %6s   %10s %6s %6s\n' "$label" "${e[0]}" "${e[3]}" "$calls" "${e[1]}" "${e[2]}" "${s[0]}" "${s[1]}" "${s[2]}"
}
for p in "${PROTOS[@]}"; do row "$p closed c=$CONCURRENCY" "${ENG[$p]}" "${SRV[$p]:-- - -}"; done
[ "$RATE" = 0 ] || row "rest open $RATE/s" "${ENG[rest-open]}" "- - -"
echo "per-s: the coordinator's per-second timeline (one histogram encoded a second), which grows"
echo "with the run's duration, not its calls; calls: Ir without it, the engine's cost of the calls."
echo "sys: system calls other than clock reads; clock: clock reads (clock_gettime, gettimeofday,"
echo "time), system calls under valgrind but vDSO reads natively (their instructions are in neither Ir nor sys)."
if [ "$PEERS" = 1 ]; then
  echo
  echo "peers, one call in flight on one connection (engine: --concurrency 1 --connections 1 above)"
  printf '%-20s %-16s %10s %6s %6s   %12s
' protocol peer Ir sys clock "engine/peer"
  for p in "${PROTOS[@]}"; do
    [ -n "${PEER[$p]:-}" ] || continue
    read -r -a q <<< "${PEER[$p]}"
    read -r -a e <<< "${ENG[$p]}"
    printf '%-20s %-16s %10s %6s %6s   %11.2fx\n' "$p" "${PEER_NAME[$p]}" "${q[0]}" "${q[1]}" "${q[2]}" "$(python3 -c "print(${e[0]} / ${q[0]})")"
  done
fi

# 4. The profile: top functions per call and self cost by crate.
if [ "$PROFILE" = 1 ]; then
  for p in "${PROTOS[@]}" rest-open; do
    [ -f "$WORK/engine-$p-$N2.cg" ] || continue
    echo
    echo "== engine profile, $p, $WORKLOAD: per call, (N2 - N1) difference"
    python3 "$ROOT/bench/callgrind.py" profile "$WORK/engine-$p-$N1.cg" "$WORK/engine-$p-$N2.cg" "$N1" "$N2" 15
    if [ "$SERVER" = 1 ] && [ -f "$WORK/server-$p-$N2.cg" ]; then
      echo
      echo "== server profile, $p"
      python3 "$ROOT/bench/callgrind.py" profile "$WORK/server-$p-$N1.cg" "$WORK/server-$p-$N2.cg" "$N1" "$N2" 15
    fi
  done
fi
[ -z "$KEEP" ] || echo "callgrind outputs kept in $WORK (callgrind_annotate FILE.cg)" >&2
