#!/usr/bin/env bash
# What an open-loop call costs the engine against a closed-loop one at the
# same rate, beside oha's rate mode, and how late the engine sends across
# rates (issue #15).
#
#   bench/openloop.sh [--duration 5] [--rounds 3] [--rate 10000]
#                     [--sweep "100 1000 5000 10000 20000"] [--arrival uniform|poisson]
#   (--rounds 0: the sweep alone; --sweep "": no sweep; --arrival: the
#   engine's open-loop spacing in the sweep, uniform by default)
#
# Built-in rest server on CPU 0 (one worker), generator on CPU 1 (taskset),
# workload tasks.int. Each round, interleaved:
#   closed : the engine, closed loop, one caller, against a server that spins
#            before it answers (PROTOBENCH_SERVICE_TIME=spin:X), X calibrated
#            before the rounds so that one call after another runs at about
#            --rate (issue #15 compares the loops at 10,000 calls/s; bare
#            loopback runs 7,000-21,000 calls/s here, hour by hour). Its
#            measured rate, R, is the rate of the two open-loop runs that
#            follow, against the same server. --rate 0: no spin, R is
#            whatever bare loopback gives (the comparison before 2026-11-26).
#   open   : the engine, open loop at R, 16 callers.
#   oha    : oha's rate mode at R (`-q`, `--latency-correction`), 16
#            connections (skipped when oha is not installed).
# CPU per call = user + system time of the generator process
# (/usr/bin/time) / calls, the same for every tool. The target: open
# <= 1.2x closed. Then the sweep: the engine alone at each rate (one engine
# thread, 64 callers), schedule lag p50 / p99 (target p99 <= 100 us), and
# beside it the floor: `floor lag` (crates/load/examples/floor.rs) at the same rate
# right after, a thread that only waits for its send times the way the
# engine does (timerfd armed a start spin early, then the spin) and makes
# no calls: the lag this machine puts on any sender at that minute; and
# `floor spin`, the same send times from a thread that never sleeps: the
# least lag any sender can have on this machine at that minute.
#
# Needs: a release build of protobench; oha (`cargo install oha --locked`)
# for the oha column. A benchmark, not a test: never run by `make test`.
set -euo pipefail

DURATION=5
ROUNDS=3
RATE=10000
SWEEP="100 1000 5000 10000 20000"
ARRIVAL=uniform
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) DURATION="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --rate) RATE="$2"; shift 2 ;;
    --sweep) SWEEP="$2"; shift 2 ;;
    --arrival) ARRIVAL="$2"; shift 2 ;;
    *) echo "usage: $0 [--duration SECONDS] [--rounds N] [--rate CALLS_PER_S] [--sweep \"RATE...\"] [--arrival uniform|poisson]" >&2; exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PB="${PROTOBENCH:-$ROOT/target/release/protobench}"
export PATH="$PATH:$HOME/.cargo/bin"
for tool in taskset /usr/bin/time python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 2; }
done
[ -x "$PB" ] || { echo "missing $PB: cargo build --release -p protobench" >&2; exit 2; }
# The sweep's floor (`floor lag`, crates/load/examples/floor.rs).
if [ -n "$SWEEP" ]; then
  (cd "$ROOT" && cargo build --release -q -p protobench-load --example floor)
  LAG_FLOOR="$ROOT/target/release/examples/floor"
fi
OHA=1
command -v oha >/dev/null || { OHA=0; echo "oha not installed (cargo install oha --locked): its column is skipped" >&2; }

WORK="$(mktemp -d /tmp/protobench-openloop.XXXXXX)"
SERVERS=()
cleanup() { for pid in "${SERVERS[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

# serve [SERVICE_TIME]: starts the rest server on CPU 0 (one worker) and, once
# it listens, sets ADDR to its address and SERVED to its pid.
serve() {
  local log="$WORK/serve-${#SERVERS[@]}.log"
  env PROTOBENCH_WORKERS=1 ${1:+PROTOBENCH_SERVICE_TIME=$1} taskset -c 0 "$PB" serve --rest 127.0.0.1:0 > "$log" 2>&1 &
  SERVED=$!
  SERVERS+=("$SERVED")
  for _ in $(seq 50); do grep -q '^listening' "$log" && break; sleep 0.2; done
  ADDR="$(sed -n 's/.*addr=\([^ ]*\).*/\1/p' "$log" | head -1)"
  [ -n "$ADDR" ] || { echo "the rest server did not start:" >&2; cat "$log" >&2; exit 1; }
}
serve
REST="$ADDR"

# timed NAME CMD...: runs CMD on CPU 1 under /usr/bin/time; output in $WORK/NAME.out.
timed() {
  local name="$1"; shift
  /usr/bin/time -f '%U %S' -o "$WORK/$name.time" taskset -c 1 "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" || {
    echo "$name failed:" >&2; tail -5 "$WORK/$name.err" >&2; return 1; }
}
# One line of results: tool rate cpu_us_per_call lag_p50 lag_p99 latency_p50 latency_p99 (us).
summarise() {
  python3 - "$1" "$WORK/$1.out" "$WORK/$1.time" <<'EOF'
import json, sys
name, out, timef = sys.argv[1:]
user, sys_ = map(float, open(timef).read().split()[-2:])
r = json.load(open(out))
nan = float("nan")
if name.startswith("oha"):
    s = r["summary"]
    calls = sum(r["statusCodeDistribution"].values()) + sum(r["errorDistribution"].values())
    rate = s["requestsPerSec"]
    pct = r["latencyPercentiles"]
    lat50, lat99 = pct["p50"] * 1e6, pct["p99"] * 1e6
    lag50 = lag99 = nan
else:
    calls, rate = r["calls"], r["rate"]
    lat = r["latency"]
    lat50, lat99 = lat["p50_ns"] / 1e3, lat["p99_ns"] / 1e3
    lag = r["generator"]["schedule_lag"]
    lag50, lag99 = lag["p50_ns"] / 1e3, lag["p99_ns"] / 1e3
cpu = (user + sys_) * 1e6 / calls if calls else nan
print(f"{name} {rate:.0f} {cpu:.2f} {lag50:.1f} {lag99:.1f} {lat50:.1f} {lat99:.1f}")
EOF
}
# No warm-up for any tool: CPU per call is the whole process over its calls.
OURS=("$PB" load --quiet --output json --protocol rest --workload tasks.int --threads 1)

if [ "$ROUNDS" -gt 0 ]; then
# The paced server: spin X us per call so that one caller's closed loop runs
# at about $RATE calls/s. X starts from a 1 s probe of bare loopback and is
# corrected from a probe of the paced server, at most three times.
PACED="$REST"
if [ "$RATE" != 0 ]; then
  timed probe "${OURS[@]}" --target "$REST" --concurrency 1 --duration 1s
  got="$(summarise probe | awk '{print $2}')"
  spin_us=0
  if awk -v want="$RATE" -v got="$got" 'BEGIN {exit !(got < 0.95 * want)}'; then
    echo "bare loopback runs one caller at $got calls/s, under --rate $RATE: the comparison runs at that rate, unpaced"
  else
    for _ in 1 2 3; do
      spin_us="$(awk -v s="$spin_us" -v want="$RATE" -v got="$got" \
        'BEGIN {x = s + 1e6 / want - 1e6 / got; printf "%.1f", (x > 0 ? x : 0)}')"
      if [ "$PACED" != "$REST" ]; then kill "$SERVED" 2>/dev/null || true; fi
      serve "spin:${spin_us}us"
      PACED="$ADDR"
      timed probe "${OURS[@]}" --target "$PACED" --concurrency 1 --duration 1s
      got="$(summarise probe | awk '{print $2}')"
      awk -v want="$RATE" -v got="$got" 'BEGIN {exit !(got > 0.95 * want && got < 1.05 * want)}' && break
    done
    echo "paced server: spin ${spin_us} us per call; one caller's closed loop at $got calls/s in its probe (wanted $RATE)"
  fi
fi
printf '%-8s %8s %10s %10s %10s %12s %12s\n' tool calls/s CPU/call "lag p50" "lag p99" "latency p50" "latency p99"
for round in $(seq "$ROUNDS"); do
  echo "== round $round (${DURATION}s each; us)"
  timed closed "${OURS[@]}" --target "$PACED" --duration "${DURATION}s" --concurrency 1
  line="$(summarise closed)"; echo "$line" | tee -a "$WORK/results"
  rate="$(echo "$line" | awk '{print $2}')"
  timed open "${OURS[@]}" --target "$PACED" --duration "${DURATION}s" --concurrency 16 --rate "$rate"
  summarise open | tee -a "$WORK/results"
  if [ "$OHA" = 1 ]; then
    timed oha oha --no-tui --output-format json -z "${DURATION}s" -c 16 -q "$rate" --latency-correction \
      "http://$PACED/v1/tasks/integer"
    summarise oha | tee -a "$WORK/results"
  fi
done

echo
echo "== medians over $ROUNDS rounds (us)"
python3 - "$WORK/results" <<'EOF'
import sys, statistics, collections, math
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, *v = line.split()
    rows[name].append([float(x) for x in v])
med = {k: [statistics.median(r[i] for r in v) for i in range(6)] for k, v in rows.items()}
for k, m in med.items():
    print(f"{k:<8} {m[0]:8.0f} {m[1]:10.2f} {m[2]:10.1f} {m[3]:10.1f} {m[4]:12.1f} {m[5]:12.1f}")
ratios = [o[1] / c[1] for o, c in zip(rows["open"], rows["closed"])]
print(f"open / closed CPU per call: median {statistics.median(ratios):.2f}x, rounds "
      + ", ".join(f"{r:.2f}" for r in ratios) + " (target <= 1.2x)")
if "oha" in rows:
    r = [o[1] / h[1] for o, h in zip(rows["open"], rows["oha"])]
    print(f"open / oha CPU per call: median {statistics.median(r):.2f}x, rounds " + ", ".join(f"{x:.2f}" for x in r))
EOF

fi

[ -n "$SWEEP" ] || exit 0
echo
echo "== schedule lag across rates: the engine alone, one thread, 64 callers, $ARRIVAL arrivals (us);"
echo "   floor: floor lag at the same rate right after (uniform sends, the engine's timer and spin, no calls);"
echo "   spin: floor spin, the same sends from a thread that never sleeps (the machine's own bound)"
printf '%-8s %8s %10s %10s %10s %12s %12s %12s %12s %10s\n' rate calls/s CPU/call "lag p50" "lag p99" "latency p50" "latency p99" \
  "floor p50" "floor p99" "spin p99"
# floor_lag MODE RATE: runs `floor MODE` (lag or spin) at RATE on CPU 1, prints its "p50 p99".
floor_lag() {
  taskset -c 1 "$LAG_FLOOR" "$1" "$2" "$DURATION" > "$WORK/floor-$1.out"
  local got
  got="$(sed -n 's/.*lag_p50_us=\([0-9.]*\) lag_p99_us=\([0-9.]*\).*/\1 \2/p' "$WORK/floor-$1.out")"
  [ -n "$got" ] || { echo "floor $1 printed no lag: $(cat "$WORK/floor-$1.out")" >&2; exit 1; }
  echo "$got"
}
for rate in $SWEEP; do
  timed "sweep" "${OURS[@]}" --target "$REST" --duration "${DURATION}s" --concurrency 64 --rate "$rate" --arrival "$ARRIVAL"
  floor="$(floor_lag lag "$rate")"
  spin="$(floor_lag spin "$rate")"
  # shellcheck disable=SC2086 # $floor: two numbers
  printf '%-8s %8.0f %10.2f %10.1f %10.1f %12.1f %12.1f %12.1f %12.1f %10.1f\n' $(summarise sweep | sed "s/^sweep/$rate/") $floor ${spin#* }
done
