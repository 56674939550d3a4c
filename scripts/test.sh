#!/usr/bin/env bash
# Every test (`make test`, which CI runs), in four lanes side by side.
#
# Most of the suite waits rather than computes: servers start, idle and read
# timeouts expire, floods are held open. Run one after the other, on 2 cores,
# it took 41 minutes (issue 35); the lanes overlap those waits with builds and
# with each other, and drop no check:
#
#   rust     cargo test --no-run (builds the binary every other lane verifies
#            with), then fmt, import cycles (scripts/import_cycles.sh),
#            function lengths (scripts/long_functions.py),
#            cargo test --workspace, contract check
#   servers  each reference server's own test.sh, all of them first (they
#            need no protobench binary, so they run while the rust lane
#            builds it), then scripts/verify-servers.sh on each (protobench
#            verify clear and TLS, zeep, schemathesis, ghz, the hardening
#            probe); the stacks are split into two lanes of about equal length;
#            servers-a ends with the probe's self-test
#            (contract/tests/probe_selftest.sh: its phases fail on a server
#            set up to break their rules)
#   fuzz     every cargo-fuzz target built and run 5 s on its checked-in
#            corpus (fuzz/run.sh), from a copy at a fixed path with its
#            build kept in ~/.cache/protobench between runs, like the venvs;
#            then clippy, once the rust lane has built (clippy reuses its
#            build scripts and proc-macros; cargo holds the target
#            directory's lock only while it compiles, not while tests run)
#
# Why this order (the green CI run of 2026-11-28 06:45 UTC, 1,583 s): the
# rust lane was build 650 s + clippy 351 s + cargo test 458 s, and a server
# lane ran its first stack's tests, waited for the build, then the rest one
# after the other (servers-b 1,570 s). Tests before verifies, and clippy
# beside cargo test (which mostly waits on servers and timeouts) instead of
# before it, take about 350 s off the longest lane.
#
# Each lane writes its log to $PROTOBENCH_TEST_LOGS (default: a temporary
# directory) and is printed whole when it ends, headed by its name and time;
# the rust lane stops at its first failure, a server lane goes on to its
# other stacks; the exit status is 1 if any lane failed. `make lint unit contract-check servers-test verify-servers`
# still runs the same steps one after the other.
#
# usage: scripts/test.sh            (after scripts/setup.sh)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
CARGO="${CARGO:-cargo}"
logs="${PROTOBENCH_TEST_LOGS:-$(mktemp -d)}"
mkdir -p "$logs"
built="$logs/protobench.built"
rm -f "$built" "$logs"/*.status "$logs/cargo-test.started"

# Stacks per server lane: java-spring and python (with its flask variant)
# take the longest, so they go to different lanes.
lane_a=(python cpp-grpc rust)
lane_b=(java-spring go node)

step() { # NAME COMMAND...: runs one step of a lane, timed
  local name=$1 t0=$SECONDS rc=0
  shift
  echo "---- $name"
  "$@" || rc=$?
  echo "---- $name: $([ $rc = 0 ] && echo ok || echo "FAILED (exit $rc)") in $((SECONDS - t0)) s"
  return $rc
}

# One build serves every step: `cargo test --workspace --no-run` builds the
# binary with the workspace's unified features, as `cargo test` needs it; a
# `cargo build -p protobench` or `cargo run -p protobench` would resolve
# other features, build the dependencies a second time and overwrite the
# binary while the server lanes run it.
rust_lane() {
  step "build protobench and the tests" "$CARGO" test -q --workspace --no-run || { touch "$built.failed"; return 1; }
  touch "$built"
  step fmt "$CARGO" fmt --all -- --check &&
    step "import cycles" bash scripts/import_cycles.sh &&
    step "function lengths" python3 scripts/long_functions.py &&
    touch "$logs/cargo-test.started" &&
    step "cargo test" "$CARGO" test --workspace &&
    step "contract check" target/debug/protobench contract check &&
    step "contract docs" bash contract/tests/check_docs.sh
}

wait_built() { # true once the rust lane has built protobench, false if it failed to
  while [ ! -e "$built" ] && [ ! -e "$built.failed" ]; do sleep 2; done
  [ -e "$built" ]
}

stack_tests() { # STACK: its own test.sh
  [ -x "servers/$1/test.sh" ] || return 0
  step "servers/$1/test.sh" bash "servers/$1/test.sh"
}

verify_stack() { # STACK: verify-servers on it and its variants
  local s=$1 targets=("$1")
  wait_built || { echo "---- verify $s: not run, protobench did not build (see the rust lane)"; return 1; }
  if [ -f "servers/$s/manifest.toml" ]; then
    for v in $(python3 -c "import sys,tomllib;print(' '.join(tomllib.load(open(sys.argv[1],'rb')).get('variants',{})))" "servers/$s/manifest.toml"); do
      targets+=("$s:$v")
    done
  fi
  step "verify $s" bash scripts/verify-servers.sh "${targets[@]}"
}

servers_lane() { # every stack's tests, then every stack's verify, even after a failure: the log shows them all
  local s rc=0
  for s in "$@"; do stack_tests "$s" || rc=1; done
  for s in "$@"; do verify_stack "$s" || rc=1; done
  return $rc
}

servers_lane_with_selftest() { # the stacks, then the probe's own test (it
  # starts servers/go, built by servers-b's tests by the time this lane's
  # verifies end, and the probe's venv, installed by the verifies)
  local rc=0
  servers_lane "$@" || rc=1
  step "probe self-test" bash contract/tests/probe_selftest.sh || rc=1
  return $rc
}

lane() { # NAME FUNCTION ARGS...: runs in the background, status in $logs/NAME.status
  local name=$1
  shift
  (
    t0=$SECONDS
    "$@" >"$logs/$name.log" 2>&1
    rc=$?
    echo "$rc $((SECONDS - t0))" >"$logs/$name.status"
    echo "lane $name: $([ $rc = 0 ] && echo ok || echo FAILED) in $((SECONDS - t0)) s" >&2
  ) &
}

# The fuzz targets build from a copy of the tracked files at a fixed path
# (~/.cache/protobench/fuzz-src), with the build kept beside it: cargo's
# hash of a path dependency includes its path and a fresh clone gives every
# file a new mtime, so built in the clone the instrumented protobench crates
# rebuilt on every CI run (1,371 s at load 7 on 2026-11-27). Only files
# whose content changed are copied, so only what changed rebuilds.
fuzz_lane() {
  local cache="${XDG_CACHE_HOME:-$HOME/.cache}/protobench"
  local src="$cache/fuzz-src"
  step "copy the tracked files to $src" python3 - "$src" <<'EOF' || return 1
import filecmp, os, shutil, subprocess, sys
dst = sys.argv[1]
tracked = [f for f in subprocess.run(["git", "ls-files", "-z"], capture_output=True, check=True)
           .stdout.decode().split("\0") if f]
for f in tracked:
    d = os.path.join(dst, f)
    if os.path.isfile(d) and filecmp.cmp(f, d, shallow=False):
        continue  # same content: its mtime stays, cargo keeps what it built
    os.makedirs(os.path.dirname(d), exist_ok=True)
    shutil.copyfile(f, d)
keep = set(tracked)
for root, _, names in os.walk(dst):
    for n in names:
        if os.path.relpath(os.path.join(root, n), dst) not in keep:
            os.remove(os.path.join(root, n))
print(f"{len(tracked)} files in {dst}")
EOF
  local rc=0
  FUZZ_TARGET_DIR="${FUZZ_TARGET_DIR:-$cache/fuzz-target}" nice -n 5 bash "$src/fuzz/run.sh" 5 || rc=1
  wait_built || { echo "---- clippy: not run, the rust lane's build failed"; return 1; }
  # After cargo test has checked its build (it takes the target directory's
  # lock for a few seconds, then runs the tests without it): clippy holding
  # the lock first would hold cargo test back for the whole of clippy.
  while [ ! -e "$logs/cargo-test.started" ] && [ ! -e "$logs/rust.status" ]; do sleep 2; done
  sleep 15
  step clippy "$CARGO" clippy --workspace --all-targets -- -D warnings || rc=1
  return $rc
}

lanes=(rust servers-a servers-b fuzz)
echo "test: lanes rust, servers-a (${lane_a[*]}), servers-b (${lane_b[*]}), fuzz (and clippy); logs in $logs"
t0=$SECONDS
lane rust rust_lane
lane servers-a servers_lane_with_selftest "${lane_a[@]}"
lane servers-b servers_lane "${lane_b[@]}"
lane fuzz fuzz_lane
wait

failed=0
for name in "${lanes[@]}"; do
  read -r rc secs <"$logs/$name.status" || { rc=1; secs='?'; }
  echo
  echo "==== lane $name: $([ "$rc" = 0 ] && echo ok || echo FAILED) in $secs s"
  cat "$logs/$name.log"
  [ "$rc" = 0 ] || failed=1
done
echo
for name in "${lanes[@]}"; do
  read -r rc secs <"$logs/$name.status" || { rc=1; secs='?'; }
  echo "test: lane $name $([ "$rc" = 0 ] && echo ok || echo FAILED) in $secs s"
done
echo "test: $([ $failed = 0 ] && echo ok || echo FAILED) in $((SECONDS - t0)) s (wall)"
exit $failed
