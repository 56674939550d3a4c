#!/usr/bin/env bash
# Third-party Connect and gRPC-Web check, for any protobench server: `buf
# curl` (Buf's client, which speaks Connect, gRPC and gRPC-Web from the
# .proto files) calls a running listener with the request of a few
# workloads from contract/vectors (request.json, which buf turns into
# protobuf) and prints the response as JSON with every field
# (--emit-defaults); each must equal the vector's response.json (numbers by
# value). A third-party client on the server's wire, not ours.
#
#   bash contract/tests/buf_check.sh connect|grpcweb|grpc HOST:PORT [CA.pem]
#
# connect: the `connect` listener (buf sends application/proto over
# HTTP/1.1); grpcweb: the `grpc-web` listener (binary, HTTP/1.1); grpc: the
# `grpc` listener (HTTP/2). Bounded: one call per workload, 60 s each. buf is
# looked up on PATH, then in $(go env GOPATH)/bin (scripts/setup.sh:
# go install github.com/bufbuild/buf/cmd/buf@v1.75.0).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 connect|grpcweb|grpc HOST:PORT [CA.pem]" >&2; exit 2; }
protocol=$1; addr=$2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
contract="$(cd "$here/.." && pwd)"
buf="$(command -v buf || echo "$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin/buf")"
[ -x "$buf" ] || { echo "buf_check: buf not found (go install github.com/bufbuild/buf/cmd/buf@v1.75.0)" >&2; exit 2; }
args=(--protocol "$protocol" --schema "$contract/proto" --emit-defaults)
scheme=http
if [ $# -ge 3 ]; then
  args+=(--cacert "$3"); scheme=https
  host="localhost:${addr##*:}"
else
  host=$addr
fi
[ "$protocol" = grpc ] && [ $scheme = http ] && args+=(--http2-prior-knowledge)
tmp="$(mktemp)"; trap 'rm -f "$tmp"' EXIT
failed=0; passed=0
for workload in tasks.int inventory.s tasks.objects product.typical grpcbench.complex echo.1k tasks.file-455k; do
  method=$(python3 -c 'import json,sys; w=[w for w in json.load(open(sys.argv[1])) if w["name"]==sys.argv[2]][0]; print(w["grpcPath"])' \
    "$contract/workloads.json" "$workload")
  if ! timeout 60 "$buf" curl "${args[@]}" -d @"$contract/vectors/$workload/request.json" "$scheme://$host$method" >"$tmp" 2>&1; then
    echo "FAIL buf curl --protocol $protocol $workload: $(head -c 300 "$tmp")"; failed=$((failed + 1)); continue
  fi
  if verdict="$(python3 - "$contract/vectors/$workload/response.json" "$tmp" <<'EOF'
import json, sys
def norm(v):
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return v
try:
    found = norm(json.load(open(sys.argv[2])))
except ValueError:
    print("not JSON: " + open(sys.argv[2]).read()[:200]); sys.exit(1)
expected = norm(json.load(open(sys.argv[1])))
if found != expected:
    print("differs from response.json: " + json.dumps(found)[:200]); sys.exit(1)
print("equals response.json")
EOF
)"; then
    echo "ok   buf curl --protocol $protocol $workload: $verdict"; passed=$((passed + 1))
  else
    echo "FAIL buf curl --protocol $protocol $workload: $verdict"; failed=$((failed + 1))
  fi
done
echo "check: $passed passed, $failed failed"
[ $failed -eq 0 ]
