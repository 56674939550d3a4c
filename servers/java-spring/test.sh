#!/usr/bin/env bash
# Builds the java-spring server if needed, then checks it with tests/check.py: Spring's own
# error cases, grpc-java's idle handling, shutdown, the streaming operations' and GraphQL's bad
# input and limits, clear text and TLS (every workload on every protocol:
# scripts/verify-servers.sh java-spring; bad input, TLS, the failure draw, the service time and
# the other server limits: contract/tests/probe.sh java-spring). Ends with "N passed, M failed";
# exits non-zero on any failure.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

jar=target/protobench-java-spring.jar
newest_src=$(find pom.xml src ../../contract/proto ../../contract/wsdl -newer "$jar" -type f 2>/dev/null | head -1 || true)
if [[ ! -f "$jar" || -n "$newest_src" ]]; then
  echo "building ($jar missing or out of date)"
  nice -n 10 mvn -q -B package -DskipTests
fi

# test client: httpx+h2 (HTTP/1.1, h2c prior knowledge, h2), grpcio; pinned versions
if [[ ! -x .venv/bin/python ]] || ! cmp -s tests-requirements.txt .venv/.requirements; then
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r tests-requirements.txt
  cp tests-requirements.txt .venv/.requirements
fi

work="$here/.tmp"
rm -rf "$work"
mkdir -p "$work/gen"
.venv/bin/python -m grpc_tools.protoc -I ../../contract/proto --python_out="$work/gen" \
  protobench/v1/protobench.proto protobench/v1/stream.proto helloworld/helloworld.proto
touch "$work/gen/protobench/__init__.py" "$work/gen/protobench/v1/__init__.py" "$work/gen/helloworld/__init__.py"

exec .venv/bin/python tests/check.py "$here" "$work/gen" "$work"
