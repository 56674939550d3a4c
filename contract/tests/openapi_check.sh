#!/usr/bin/env bash
# Third-party REST check, for any protobench server: schemathesis (an
# OpenAPI-driven test generator) reads contract/openapi.yaml and sends
# generated requests to a running `rest` listener, checking every response
# against the document: no 5xx, documented status codes and content types,
# response bodies valid against their schemas, schema-valid requests
# accepted, undocumented methods refused.
#
#   bash contract/tests/openapi_check.sh http://127.0.0.1:8080 [CA.pem]
#
# Excluded: `negative_data_rejection`. The OpenAPI `required` lists describe
# responses; requests follow proto3 JSON parsing, where an omitted member
# takes its default (contract/README.md, "JSON (REST)"), so every server
# accepts `{}` where schemathesis expects a 4xx. Everything else it calls
# schema-violating (wrong types, unknown members, bad enums) is refused.
#
# Deterministic: a fixed seed and a bounded number of examples per operation
# (about 600 requests, a few seconds). schemathesis is pip-installed once into
# ${XDG_CACHE_HOME:-$HOME/.cache}/protobench/schemathesis-venv.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BASE_URL [CA.pem]" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/protobench/schemathesis-venv"
version="4.32.5"
# Checks of several servers may run side by side (scripts/test.sh): one installs, the others wait.
mkdir -p "$(dirname "$venv")"; exec 8>"$venv.lock"; flock 8
if ! "$venv/bin/st" --version 2>/dev/null | grep -q "$version"; then
  python3 -m venv "$venv" && "$venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$version" >/dev/null \
    || { echo "openapi_check: could not install schemathesis $version" >&2; exit 2; }
fi
exec 8>&-
tls=()
[ $# -ge 2 ] && tls=(--tls-verify "$2")
spec="$(cd "$here/.." && pwd)/openapi.yaml"
# schemathesis writes a .schemathesis/ directory into its working directory.
scratch="$(mktemp -d)"; trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
"$venv/bin/st" run "$spec" --url "$1" "${tls[@]}" \
  --checks all --exclude-checks negative_data_rejection \
  --phases examples,coverage,fuzzing --max-examples 50 --seed 1 --workers 2 \
  --request-timeout 30 --generation-database none --no-color
