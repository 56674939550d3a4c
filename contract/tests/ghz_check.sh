#!/usr/bin/env bash
# Third-party gRPC check, for any protobench server: grpc_bench's client.
# grpc_bench drives every server with ghz, given its helloworld.proto, a JSON
# payload file, and more concurrent calls than connections (streams
# multiplexed). This runs the same tool the same way, with our
# contract/proto/helloworld/helloworld.proto and the request of each
# grpc_bench workload from contract/vectors as the payload file, against a
# running `grpc` listener, and fails unless every call ends with status OK.
#
#   bash contract/tests/ghz_check.sh HOST:PORT [CA.pem]
#
# Bounded: 400 calls per payload, 8 in flight over 2 connections, 60 s limit
# per ghz run. ghz is looked up on PATH, then in $(go env GOPATH)/bin
# (scripts/setup.sh installs v0.120.0 there).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 HOST:PORT [CA.pem]" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
contract="$(cd "$here/.." && pwd)"
ghz="$(command -v ghz || echo "$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin/ghz")"
[ -x "$ghz" ] || { echo "ghz_check: ghz not found (go install github.com/bojand/ghz/cmd/ghz@v0.120.0)" >&2; exit 2; }
tls=(--insecure)
[ $# -ge 2 ] && tls=(--cacert "$2" --cname localhost)
total=400
failed=0
for workload in grpcbench.complex grpcbench.string-1k; do
  out="$(timeout 60 "$ghz" "${tls[@]}" --proto "$contract/proto/helloworld/helloworld.proto" \
    --call helloworld.Greeter.SayHello --data-file "$contract/vectors/$workload/request.json" \
    --total "$total" --concurrency 8 --connections 2 --timeout 10s --format json "$1" 2>&1)" || true
  # ghz exits 0 even when calls fail: judge its report, not its exit code.
  if verdict="$(python3 - "$total" "$out" <<'EOF'
import json, sys
total = int(sys.argv[1])
try:
    report = json.loads(sys.argv[2])
except ValueError:
    print("no JSON report from ghz: " + sys.argv[2][:300]); sys.exit(1)
codes = report.get("statusCodeDistribution") or {}
ok = codes.get("OK", 0)
if report.get("count") != total or ok != total:
    print(f"found count={report.get('count')} statuses={codes} errors={report.get('errorDistribution')}, expected {total} OK")
    sys.exit(1)
print(f"{ok}/{total} OK, {report.get('rps', 0):.0f} calls/s")
EOF
)"; then
    echo "ok   ghz $workload: $verdict"
  else
    echo "FAIL ghz $workload: $verdict"; failed=$((failed + 1))
  fi
done
[ $failed -eq 0 ]
