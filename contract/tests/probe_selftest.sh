#!/usr/bin/env bash
# The probe's own test (issue 30): its trickle, service and tls phases must
# fail on a server that breaks the rules they check. Starts servers/go (built
# if needed) with 60 s timeouts for the trickle phase, and gives the service
# and tls phases start commands that override their settings on purpose
# (env after the probe's variables wins); each case names the checks that
# must come out FAIL. Prints one line per case; exits 1 if a check that
# should have failed did not. About a minute.
#
# usage: contract/tests/probe_selftest.sh
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
go="$root/servers/go"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/protobench/probe-venv"
[ -x "$venv/bin/python" ] || { echo "selftest: run contract/tests/probe.sh once first (it installs $venv)" >&2; exit 2; }
[ -x "$go/bin/server" ] || (cd "$go" && bash build.sh >/dev/null) || { echo "selftest: servers/go does not build" >&2; exit 2; }
work="$(mktemp -d)"; pid=""
trap '[ -n "$pid" ] && kill -TERM $pid 2>/dev/null; rm -rf "$work"' EXIT

cd "$go"
(exec env PROTOBENCH_WORKERS=1 PROTOBENCH_IDLE_TIMEOUT=60s PROTOBENCH_READ_TIMEOUT=60s \
  PROTOBENCH_REST_ADDR=127.0.0.1:0 PROTOBENCH_SOAP_ADDR=127.0.0.1:0 PROTOBENCH_GRPC_ADDR=127.0.0.1:0 \
  bin/server >"$work/server.out" 2>&1) &
pid=$!
for _ in $(seq 1 100); do [ "$(grep -c '^listening' "$work/server.out")" -ge 3 ] && break; sleep 0.1; done
args=(--pid "$pid" --dir . --start-timeout 30)
for p in rest grpc soap; do
  args+=("--$p" "$(sed -n "s/^listening protocol=$p addr=\([^ ]*\).*/\1/p" "$work/server.out")")
done

failed=0
# expect NAME PHASE START CHECK...: probe.py --only PHASE (START: the variants' start command) must FAIL each CHECK.
expect() {
  local name=$1 phase=$2 start=$3 out missing=()
  shift 3
  out=$("$venv/bin/python" "$root/contract/tests/probe.py" "${args[@]}" --only "$phase" --start "$start" 2>&1)
  for check in "$@"; do
    grep -q "^FAIL $check:" <<<"$out" || missing+=("$check")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "ok   $name: $# checks failed as they must"
  else
    echo "FAIL $name: passed or absent: ${missing[*]}"; failed=$((failed + 1))
  fi
}

expect "read timeout 60 s" trickle bin/server \
  "trickle rest trickled headers" "trickle rest trickled body" "trickle soap stalled headers" "trickle soap stalled body"
expect "tls settings overridden" tls \
  "env -u PROTOBENCH_SERVICE_TIME PROTOBENCH_FAILURE_SEED=1 PROTOBENCH_MAX_STREAMS=1000 PROTOBENCH_IDLE_TIMEOUT=60s PROTOBENCH_READ_TIMEOUT=60s bin/server" \
  "tls grpc PROTOBENCH_MAX_STREAMS=7" "tls rest handshake never started" "tls grpc handshake stopped after a partial ClientHello" \
  "tls soap silent after the handshake" "tls grpc idle after an answer" "tls rest trickled body" \
  "failure rest draw" "failure grpc draw" "service soap spin"
expect "no TLS" tls "env -u PROTOBENCH_TLS_CERT -u PROTOBENCH_TLS_KEY bin/server" "tls rest ALPN" "tls grpc ALPN"
expect "sleep 10 ms" service "env PROTOBENCH_SERVICE_TIME=sleep:10ms bin/server" "service rest sleep" "service grpc sleep"
expect "no drain, stdout, exit 3" service "sh -c 'echo hello; bin/server & trap \"kill \$!; exit 3\" TERM; wait'" \
  "service SIGTERM exits 0" "service stdout holds only the listening lines" "service rest call in flight at SIGTERM"
echo "selftest: $failed failed"
[ "$failed" = 0 ]
