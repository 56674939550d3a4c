#!/usr/bin/env bash
# The load engine against peer load generators, same server, same CPUs.
#
#   bench/engine.sh [--duration 10] [--rounds 5] [--h1 64] [--h2 4x16] [--memory]
#
#   --h1 N   : HTTP/1.1 connections, one call in flight on each (default 64)
#   --h2 MxS : HTTP/2 connections x streams in flight on each (default 4x16)
#   The quick preset's settings: --h1 16 --h2 16x1; wrk's and h2load's
#   usual ones: --h1 50 --h2 50x10.
#
# Server pinned to CPU 0, generator to CPU 1 (taskset), one generator thread
# each. For each protocol, every tool runs once per round, rounds interleaved;
# the peers run first in odd rounds and the engine first in even ones, so
# neither side always follows the same run. Reports calls/s and generator CPU
# per call (user+sys of the generator process from /usr/bin/time), how busy
# the server's core was (from /proc/stat: near 100% means the server was the
# limit, and the calls/s ratio then measures the server's run-to-run spread,
# not the generators), our ratio to the best peer over the medians, and our
# CPU per call over the peer's round by round (issue #15's targets: at most
# 0.9x in the median of the rounds, never above 1.0x in any).
#
#   rest     : wrk on nginx `return 204`, wrk on our rest server, and beside
#              wrk the floor (`floor closed`, crates/load/examples/floor.rs:
#              a bare epoll loop with no parser, timing or histogram), whose
#              CPU per call is the least a closed loop pays on this machine;
#              and wrk on nginx once more after the floor: wrk against
#              itself in the same round (an A/A pair) shows how far a
#              CPU-per-call ratio moves on this machine's noise alone
#   rest-h2  : h2load -m on our rest-h2 server
#   grpc     : h2load with a pre-encoded gRPC frame, ghz, on our grpc server
#
# --memory: additionally a 10-minute open-loop run against our rest server,
# sampling the generator's RSS every 30 s; growth must stay under 10 MB.
#
# Needs: nginx wrk nghttp2-client (apt), ghz (go install
# github.com/bojand/ghz/cmd/ghz@v0.120.0), a release build of protobench.
# This is a benchmark, not a test: it is never run by `make test`.
set -euo pipefail

DURATION=10
ROUNDS=5
H1=64
H2=4x16
MEMORY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) DURATION="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --h1) H1="$2"; shift 2 ;;
    --h2) H2="$2"; shift 2 ;;
    --memory) MEMORY=1; shift ;;
    *) echo "usage: $0 [--duration SECONDS] [--rounds N] [--h1 N] [--h2 MxS] [--memory]" >&2; exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PB="${PROTOBENCH:-$ROOT/target/release/protobench}"
export PATH="$PATH:$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin"
for tool in nginx wrk h2load ghz taskset /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "missing $tool (see the header of $0)" >&2; exit 2; }
done
[ -x "$PB" ] || { echo "missing $PB: cargo build --release -p protobench" >&2; exit 2; }
(cd "$ROOT" && cargo build --release -q -p protobench-load --example floor)
FLOOR="$ROOT/target/release/examples/floor"

WORK="$(mktemp -d /tmp/protobench-engine-bench.XXXXXX)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# nginx `return 204` on CPU 0.
NGINX_PORT="$(free_port)"
mkdir -p "$WORK/nginx"
cat > "$WORK/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  client_body_temp_path $WORK/nginx;
  proxy_temp_path $WORK/nginx;
  fastcgi_temp_path $WORK/nginx;
  uwsgi_temp_path $WORK/nginx;
  scgi_temp_path $WORK/nginx;
  server { listen 127.0.0.1:$NGINX_PORT; location / { return 204; } }
}
EOF
taskset -c 0 nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" &
PIDS+=($!)

# Our servers on CPU 0, one worker.
PROTOBENCH_WORKERS=1 taskset -c 0 "$PB" serve > "$WORK/serve.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ "$(grep -c '^listening' "$WORK/serve.log" || true)" -ge 4 ] && break; sleep 0.2; done
addr() { grep "protocol=$1 " "$WORK/serve.log" | sed 's/.*addr=\([^ ]*\).*/\1/'; }
REST="$(addr rest)"; H2ADDR="$(addr rest-h2)"; GRPC="$(addr grpc)"
sleep 0.5

# A pre-encoded gRPC frame of GetInteger's empty request (flag 0, length 0).
printf '\x00\x00\x00\x00\x00' > "$WORK/grpc-empty.bin"

[[ "$H1" =~ ^[1-9][0-9]*$ && "$H2" =~ ^[1-9][0-9]*x[1-9][0-9]*$ ]] ||
  { echo "--h1 takes a number of connections, --h2 connections x streams (e.g. 4x16); got --h1 $H1 --h2 $H2" >&2; exit 2; }
C="$H1"                 # HTTP/1.1: connections = calls in flight
M="${H2%x*}"            # HTTP/2 connections
S="${H2#*x}"            # streams in flight on each
CH2=$((M * S))          # HTTP/2 calls in flight
# Busy and total jiffies of CPU 0 (the server's core), from /proc/stat.
cpu0() { awk '$1 == "cpu0" {print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
# gen NAME CMD...: runs CMD on CPU 1 and appends "NAME calls/s cpu_us_per_call server_busy%"
# to $WORK/results. Server busy near 100% means the server, not the generator, was the limit.
gen() {
  local name="$1"; shift
  local before; before="$(cpu0)"
  /usr/bin/time -f '%U %S' -o "$WORK/time" taskset -c 1 "$@" > "$WORK/out" 2>&1 || true
  local after; after="$(cpu0)"
  local busy; busy="$(python3 -c "b0,t0='$before'.split(); b1,t1='$after'.split(); print(f'{100*(int(b1)-int(b0))/max(1,int(t1)-int(t0)):.0f}')")"
  local rate
  case "$name" in
    wrk*) rate="$(awk '/Requests\/sec/ {print $2}' "$WORK/out")" ;;
    h2load*) rate="$(awk '/^finished in/ {gsub(",","",$4); print $4}' "$WORK/out")" ;;
    ghz*) rate="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rps"])' "$WORK/out" 2>/dev/null || echo 0)" ;;
    ours*) rate="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rate"])' "$WORK/out" 2>/dev/null || echo 0)" ;;
    floor*) rate="$(sed -n 's/.*rate=\([0-9.]*\).*/\1/p' "$WORK/out")" ;;
  esac
  local cpu; cpu="$(tail -n1 "$WORK/time" | awk '{print $1+$2}')"; cpu="${cpu:-0}"
  local per; per="$(python3 -c "r=float('${rate:-0}' or 0); print(f'{(${cpu}*1e6/(r*${DURATION})) if r>0 else 0:.2f}')")"
  echo "$ROUND $name ${rate:-0} $per $busy" >> "$WORK/results"
  printf '%-22s %12.0f calls/s %8s us CPU/call  server core %3s%% busy\n' "$name" "${rate:-0}" "$per" "$busy"
}

OURS=("$PB" load --quiet --output json --duration "${DURATION}s" --threads 1)

# One function per side and protocol: `peer_P` runs the peers, `ours_P` the engine.
peer_nginx() {
  gen wrk-nginx wrk -t1 -c"$C" -d"${DURATION}s" "http://127.0.0.1:$NGINX_PORT/"
  gen floor-nginx "$FLOOR" closed "127.0.0.1:$NGINX_PORT" / "$C" "$DURATION"
  gen wrk-nginx-again wrk -t1 -c"$C" -d"${DURATION}s" "http://127.0.0.1:$NGINX_PORT/"
}
ours_nginx() { gen ours-nginx "${OURS[@]}" --protocol rest --target "http://127.0.0.1:$NGINX_PORT/" --concurrency "$C"; }
peer_rest() {
  gen wrk-rest wrk -t1 -c"$C" -d"${DURATION}s" "http://$REST/v1/tasks/integer"
  gen floor-rest "$FLOOR" closed "$REST" /v1/tasks/integer "$C" "$DURATION"
}
ours_rest() { gen ours-rest "${OURS[@]}" --protocol rest --target "$REST" --workload tasks.int --concurrency "$C"; }
peer_rest_h2() { gen h2load-rest-h2 h2load -t1 -c"$M" -m"$S" -D "$DURATION" "http://$H2ADDR/v1/tasks/integer"; }
ours_rest_h2() {
  gen ours-rest-h2 "${OURS[@]}" --protocol rest-h2 --target "$H2ADDR" --workload tasks.int --concurrency "$CH2" --connections "$M"
}
peer_grpc() {
  gen h2load-grpc h2load -t1 -c"$M" -m"$S" -D "$DURATION" -d "$WORK/grpc-empty.bin" \
    -H 'content-type: application/grpc' -H 'te: trailers' "http://$GRPC/protobench.v1.Bench/GetInteger"
  gen ghz-grpc env GOMAXPROCS=1 ghz --insecure --format json --cpus 1 -c "$CH2" --connections "$M" -z "${DURATION}s" \
    --proto "$ROOT/contract/proto/protobench/v1/protobench.proto" --import-paths "$ROOT/contract/proto" \
    --call protobench.v1.Bench/GetInteger -d '{}' "$GRPC"
}
ours_grpc() {
  gen ours-grpc "${OURS[@]}" --protocol grpc --target "$GRPC" --workload tasks.int --concurrency "$CH2" --connections "$M"
}

for ROUND in $(seq "$ROUNDS"); do
  if [ $((ROUND % 2)) = 1 ]; then order=(peer ours); else order=(ours peer); fi
  echo "== round $ROUND (server: CPU 0, generator: CPU 1, ${DURATION}s each; HTTP/1.1: $C connections, HTTP/2: $M x $S streams; $([ "${order[0]}" = peer ] && echo "peers" || echo "engine") first)"
  for proto in nginx rest rest_h2 grpc; do
    for side in "${order[@]}"; do "${side}_$proto"; done
  done
done

echo
echo "== medians over $ROUNDS rounds"
python3 - "$WORK/results" <<'EOF'
import sys, statistics, collections
rows = collections.defaultdict(list)
per_round = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    rnd, name, rate, per, busy = line.split()
    rows[name].append((float(rate), float(per), float(busy)))
    per_round[int(rnd)][name] = float(per)
med = {k: tuple(statistics.median(x[i] for x in v) for i in range(3)) for k, v in rows.items()}
for k, (r, p, b) in med.items():
    print(f"{k:<22} {r:>12.0f} calls/s {p:>8.2f} us CPU/call  server core {b:3.0f}% busy")
print()
def ratio(ours, peers):
    best = max(peers, key=lambda k: med[k][0])
    print(f"{ours:<16} / {best:<16} = {med[ours][0] / med[best][0]:.2f} (calls/s), CPU/call {med[ours][1] / med[best][1]:.2f}x")
ratio("ours-nginx", ["wrk-nginx"])
ratio("ours-rest", ["wrk-rest"])
ratio("ours-rest-h2", ["h2load-rest-h2"])
ratio("ours-grpc", ["h2load-grpc", "ghz-grpc"])
print(f"ours-grpc        / ghz-grpc         = {med['ours-grpc'][0] / med['ghz-grpc'][0]:.2f} (calls/s)")
print()
print("CPU per call, ours / peer, round by round (target: median <= 0.90, every round <= 1.00)")
for ours, peer, note in [("ours-nginx", "wrk-nginx", ""), ("ours-rest", "wrk-rest", ""),
                         ("ours-rest-h2", "h2load-rest-h2", ""), ("ours-grpc", "h2load-grpc", ""),
                         ("wrk-nginx-again", "wrk-nginx", " (A/A: the same tool twice, noise alone)")]:
    r = [per_round[k][ours] / per_round[k][peer] for k in sorted(per_round)
         if per_round[k].get(peer, 0) > 0 and ours in per_round[k]]
    if not r:
        continue
    above = sum(1 for x in r if x > 1.0)
    print(f"{ours:<16} / {peer:<16} {', '.join(f'{x:.2f}' for x in r)}   median {statistics.median(r):.2f}, "
          f"{above} of {len(r)} rounds above 1.00{note}")
print()
print("The floor (a bare epoll loop: the least a closed loop pays here), CPU per call round by round")
for a, b in [("floor-nginx", "wrk-nginx"), ("ours-nginx", "floor-nginx"),
             ("floor-rest", "wrk-rest"), ("ours-rest", "floor-rest")]:
    r = [per_round[k][a] / per_round[k][b] for k in sorted(per_round)
         if per_round[k].get(b, 0) > 0 and per_round[k].get(a, 0) > 0]
    if r:
        print(f"{a:<16} / {b:<16} {', '.join(f'{x:.2f}' for x in r)}   median {statistics.median(r):.2f}")
EOF

if [ "$MEMORY" = 1 ]; then
  echo
  echo "== memory flatness: 10 min open loop at 2000 calls/s against our rest server"
  taskset -c 1 "$PB" load --quiet --output json --protocol rest --target "$REST" --workload tasks.int \
    --concurrency 16 --rate 2000 --duration 600s --threads 1 > "$WORK/memory.json" &
  GEN=$!
  sleep 30
  first="$(awk '/VmRSS/ {print $2}' /proc/$GEN/status)"
  peak="$first"
  for _ in $(seq 18); do
    sleep 30
    now="$(awk '/VmRSS/ {print $2}' /proc/$GEN/status 2>/dev/null || echo "$peak")"
    [ "$now" -gt "$peak" ] && peak="$now"
    echo "rss ${now} kB"
  done
  wait "$GEN" || true
  growth=$(( (peak - first) ))
  echo "RSS at 30 s: ${first} kB, peak after: ${peak} kB, growth ${growth} kB (limit 10240 kB)"
  [ "$growth" -lt 10240 ] && echo "memory: flat" || { echo "memory: GREW"; exit 1; }
fi
