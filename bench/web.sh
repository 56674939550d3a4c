#!/usr/bin/env bash
# What the live page costs a run (issue 33): the quick preset with and
# without `--web` and a page following it, interleaved.
#
#   bench/web.sh [--rounds 2] [--profile release|debug]
#
# Each round runs the quick preset twice into one database: once plain,
# once with `--web` and a client following `/events` for the whole run and
# fetching the report so far every 5 s (as an open page and its frame do;
# curl, so no browser's own CPU is counted against the run), the order
# alternating by round. Then `protobench compare`
# judges every point of the page runs against the plain runs of the same
# round (rate, latency, server CPU per call; intervals from the 6
# repetitions of each side). The claim to check: no difference beyond the
# noise, i.e. at most about 1 in 20 comparisons "significant", in both
# directions alike.
#
# A benchmark, not a test: never run by `make test`. About 2 x 2 minutes
# per round.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ROUNDS=2
PROFILE=release
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --profile) PROFILE=$2; shift 2 ;;
    *) bench_unknown bench/web.sh "$1" "--rounds, --profile" ;;
  esac
done
bench_profile bench/web.sh "$PROFILE"
bench_build -p protobench
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
DB=$TMP/web.db

plain() { "$BIN" run quick --db "$DB" --no-report > "$TMP/plain.log" 2>&1; }
with_page() {
  local out=$TMP/web.out
  "$BIN" run quick --db "$DB" --no-report --web > "$out" 2>&1 &
  local run=$!
  local url=
  for _ in $(seq 1 100); do
    url=$(sed -n 's/^live view: \(http[^ ]*\)$/\1/p' "$out" | head -1)
    [ -n "$url" ] && break
    sleep 0.1
  done
  [ -n "$url" ] || { echo "bench/web.sh: no live view line" >&2; kill "$run"; exit 1; }
  curl -sN "${url}events" > "$TMP/events.txt" &
  local page=$!
  # the page's frame: the report so far, at most every 5 s, as live.js asks
  ( while sleep 5; do curl -s -o /dev/null -w '%{http_code}\n' "${url}report" >> "$TMP/frames.txt" || true; done ) &
  local frame=$!
  # the run ends, then serves its report until SIGINT
  until grep -q "the run has ended" "$out"; do sleep 0.5; done
  kill "$page" "$frame" 2>/dev/null || true
  kill -INT "$run"
  wait "$run" || true
  echo "  the page got $(grep -c '^data: ' "$TMP/events.txt") states and $(grep -c '^200' "$TMP/frames.txt" 2>/dev/null || echo 0) reports so far" >&2
  rm -f "$TMP/frames.txt"
}

started=$(date -u +%H:%M)
pairs=()
id=0
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then
    echo "round $round: plain, then with the page" >&2
    plain; with_page
    pairs+=("$((id + 1)) $((id + 2))")
  else
    echo "round $round: with the page, then plain" >&2
    with_page; plain
    pairs+=("$((id + 2)) $((id + 1))")
  fi
  id=$((id + 2))
done
echo "$(date -u +%F) $started-$(date -u +%H:%M) UTC, $PROFILE build, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
total=0; significant=0; faster=0; slower=0
for pair in "${pairs[@]}"; do
  set -- $pair
  "$BIN" compare "$1" "$2" --db "$DB" -O json > "$TMP/cmp.json"
  read -r n s up down nrate rslower < <(python3 - "$TMP/cmp.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
rows = rows["rows"] if isinstance(rows, dict) else rows
sig = [r for r in rows if r["ratio"]["significant"]]
up = sum(1 for r in sig if r["ratio"]["ratio"] > 1)
rates = [r for r in sig if r["metric"] == "rate"]
slower = sum(1 for r in rates if r["ratio"]["ratio"] < 1)
print(len(rows), len(sig), up, len(sig) - up, len(rates), slower)
PY
)
  echo "plain run $1 against page run $2: $s of $n comparisons significant ($up higher with the page, $down lower); of them $nrate rates, $rslower lower with the page"
  total=$((total + n)); significant=$((significant + s)); faster=$((faster + up)); slower=$((slower + down))
done
for run in $(seq 1 "$id"); do
  echo "run $run: $("$BIN" show "$run" --db "$DB" | grep 'rate ratios known' || echo 'no relative table')"
done
echo "all rounds: $significant of $total significant ($faster higher with the page, $slower lower); about 5% is the noise's own rate"
