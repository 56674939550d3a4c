#!/usr/bin/env bash
# Writes the manifests of a 3-agent load with the given protobench binary
# and validates them against the Kubernetes API types (main.go). The CLI's
# test (crates/cli/tests/kube_cli.rs) does the same and more (broken
# manifests must fail); this is the manual form.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-protobench}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$bin" kube manifests --agents 3 -o "$out" -- --protocol rest server.bench.svc:8080 --workload inventory.s -c 30 -z 10s
(cd "$here" && go run . "$out" 3)
