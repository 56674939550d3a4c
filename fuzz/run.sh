#!/usr/bin/env bash
# Builds every cargo-fuzz target and runs each for SECONDS (default 10) on
# its checked-in corpus (fuzz/corpus/<target>); exits non-zero if any target
# crashed, leaked past the RSS limit or timed out on an input (the input is
# kept under fuzz/artifacts/<target>/). See docs/fuzzing.md.
#
#   fuzz/run.sh [SECONDS] [TARGET...]
#
# New inputs a run finds go to a scratch directory ($FUZZ_WORK_DIR, default
# a temporary one), not into the checked-in corpus. Needs the nightly
# toolchain and cargo-fuzz (`cargo install cargo-fuzz`). $FUZZ_TARGET_DIR,
# when set, is the build directory (default fuzz/target): CI keeps it under
# ~/.cache so that a fresh clone does not rebuild the instrumented
# dependency tree every time (scripts/test.sh).
set -euo pipefail

cd "$(dirname "$0")"
seconds="${1:-10}"
shift || true
case "$seconds" in
    '' | *[!0-9]*) echo "usage: fuzz/run.sh [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz/run.sh: cargo-fuzz is missing (cargo install cargo-fuzz) or there is no nightly toolchain" >&2
    exit 2
fi

dir_args=()
[ -n "${FUZZ_TARGET_DIR:-}" ] && dir_args=(--target-dir "$FUZZ_TARGET_DIR")

start=$(date +%s)
cargo +nightly fuzz build -O "${dir_args[@]}"
built=$(( $(date +%s) - start ))

if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

work="${FUZZ_WORK_DIR:-}"
if [ -z "$work" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi

failed=()
printf '%-16s %12s %10s %8s %12s %8s  %s\n' target executions exec/s seconds corpus rss_mb result > "$work/summary.txt"
for t in "${targets[@]}"; do
    mkdir -p "$work/$t" "corpus/$t" "artifacts/$t"
    log="$work/$t.log"
    echo "== $t: ${seconds}s"
    t0=$(date +%s)
    # The first corpus directory takes what the run finds; the checked-in
    # one is only read.
    if cargo +nightly fuzz run -O "${dir_args[@]}" "$t" "$work/$t" "corpus/$t" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 \
        -print_final_stats=1 -artifact_prefix="artifacts/$t/" >"$log" 2>&1; then
        result=ok
    else
        result="FAILED (log: $log)"
        failed+=("$t")
        tail -n 40 "$log" >&2
    fi
    took=$(( $(date +%s) - t0 ))
    stat() { grep -m1 "^stat::$1:" "$log" | awk '{print $2}'; }
    # libFuzzer's own count of the corpus it ended with: units/size.
    corpus=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -n 1 | cut -d' ' -f2)
    printf '%-16s %12s %10s %8s %12s %8s  %s\n' "$t" "$(stat number_of_executed_units)" \
        "$(stat average_exec_per_sec)" "$took" "${corpus:--}" "$(stat peak_rss_mb)" "$result" >> "$work/summary.txt"
done

echo
echo "build: ${built}s; total: $(( $(date +%s) - start ))s"
cat "$work/summary.txt"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz/run.sh: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
    exit 1
fi
