#!/usr/bin/env bash
# Cross-stack hardening probe (issue 14): start servers/SERVER from its
# manifest (build steps first) with PROTOBENCH_WORKERS=1, every protocol it
# serves on 127.0.0.1:0, PROTOBENCH_IDLE_TIMEOUT=2s and
# PROTOBENCH_READ_TIMEOUT=2s, then run probe.py against its listeners and
# process tree (and, for the config phase, the same start command once per bad
# variable value, which must exit at once; for the service and tls phases,
# once each with their settings: a sleeping service time, TLS with the failure
# draw; at most start_timeout_s each). probe.py lowers the server's descriptor limit (prlimit) to
# what it has open once listening plus a spare of 64 before its descriptor
# checks, so the limit suits every stack. Prints one line per check; exit 1
# if any failed, 2 if the server could not be built or started.
#
# usage: contract/tests/probe.sh [--root REPO] SERVER [--only PHASE,...] [--repeat N]
#   --root REPO  probe REPO/servers/SERVER (another worktree) with this probe
#   --only, --repeat  passed to probe.py: some phases only, N times in a row
#                (`probe.sh rust --only fds --repeat 20`: the flakiness check)
#   $PROTOBENCH  the binary for {protobench} (default REPO/target/debug/protobench)
#   $PROBE_TIMEOUT_S  bound on probe.py's run (default 480: java-spring's three
#                starts take up to a minute each on a loaded 2-core machine)
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
if [ "${1:-}" = --root ]; then root="$(cd "$2" && pwd)"; shift 2; fi
[ $# -ge 1 ] || { echo "usage: probe.sh [--root REPO] SERVER [PROBE.PY ARGS: --only PHASE,... --repeat N]" >&2; exit 2; }
s="$1"; shift; dir="$root/servers/$s"
[ -f "$dir/manifest.toml" ] || { echo "probe: no $dir/manifest.toml" >&2; exit 2; }
pb="${PROTOBENCH:-$root/target/debug/protobench}"

# The h2 package (HTTP/2 framing, HPACK) in a venv outside the repository (pip, once).
venv="${XDG_CACHE_HOME:-$HOME/.cache}/protobench/probe-venv"
# Probes of several servers may start side by side (scripts/test.sh): one installs, the others wait.
mkdir -p "$(dirname "$venv")"; exec 8>"$venv.lock"; flock 8
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import h2' 2>/dev/null; then
  python3 -m venv "$venv" && "$venv/bin/pip" install -q "h2==4.3.0" >/dev/null 2>&1 \
    || { echo "probe: could not install h2 into $venv" >&2; exit 2; }
fi
exec 8>&-

work="$(mktemp -d)"; pid=""
trap '[ -n "$pid" ] && kill -TERM $pid 2>/dev/null && wait $pid 2>/dev/null; rm -rf "$work"' EXIT
manifest() { python3 -c "import sys,tomllib;m=tomllib.load(open(sys.argv[1],'rb'));print($2)" "$1"; }
while IFS= read -r step; do
  [ -n "$step" ] || continue
  (cd "$dir" && eval "$step" >"$work/build.log" 2>&1) || { echo "probe $s: build step failed: $step" >&2; tail -20 "$work/build.log" >&2; exit 2; }
done < <(manifest "$dir/manifest.toml" "'\n'.join(__import__('shlex').join(a) for a in m.get('build', []))")
start=$(manifest "$dir/manifest.toml" "__import__('shlex').join(m['start'])")
if [[ $start == *"{protobench}"* ]] && [ ! -x "$pb" ]; then echo "probe: $pb not built (cargo build -p protobench)" >&2; exit 2; fi
start=${start//\{protobench\}/$pb}
protos=$(manifest "$dir/manifest.toml" "' '.join(m['protocols'])")
timeout_s=$(manifest "$dir/manifest.toml" "m.get('start_timeout_s', 30)")
env_args=(PROTOBENCH_WORKERS=1 PROTOBENCH_IDLE_TIMEOUT=2s PROTOBENCH_READ_TIMEOUT=2s)
for p in $protos; do env_args+=("PROTOBENCH_$(echo "$p" | tr 'a-z-' 'A-Z_')_ADDR=127.0.0.1:0"); done
log="$work/server.log"
(cd "$dir" && eval "exec env ${env_args[*]} $start" >"$log" 2>&1) &
pid=$!
want=$(echo $protos | wc -w)
for _ in $(seq 1 "$timeout_s"); do
  [ "$(grep -c '^listening' "$log")" -ge "$want" ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 1
done
args=(--pid "$pid" --idle 2 --read 2 --start "$start" --dir "$dir" --start-timeout "$timeout_s")
# Known deviations of the stack's libraries, declared in its manifest:
#   [probe]
#   deviations = { "grpc no content-type" = "grpcio 1.85 has no hook below the handler" }
while IFS= read -r d; do
  [ -n "$d" ] && args+=(--deviation "$d")
done < <(manifest "$dir/manifest.toml" "'\n'.join(f'{k}={v}' for k,v in m.get('probe',{}).get('deviations',{}).items())")
for p in $protos; do
  addr=$(grep "^listening protocol=$p " "$log" | sed 's/.*addr=\([^ ]*\).*/\1/')
  [ -n "$addr" ] || { echo "probe $s: no listening line for $p" >&2; tail -20 "$log" >&2; exit 2; }
  # The probe's checks cover the four core protocols; graphql, connect and
  # grpc-web listeners are checked by the stack's own tests for now.
  case $p in rest|rest-h2|grpc|soap) args+=("--$p" "$addr") ;; esac
done
echo "probe $s ($root)"
timeout "${PROBE_TIMEOUT_S:-480}" "$venv/bin/python" "$here/probe.py" "${args[@]}" "$@"
