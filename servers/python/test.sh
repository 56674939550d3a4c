#!/usr/bin/env bash
# Builds the Python server if needed, then runs tests/check.py: what only
# this stack is checked on (lxml/spyne's faults, edge values, error texts,
# reflection, the draw with two workers, SIGTERM, its own variables, the
# streaming operations' bad input, limits and timeouts, graphql's bad input and
# graphql-get's persisted queries), the Flask variant and
# Berg's variants, uvicorn-workers and grpcio-sync. Every workload on every
# protocol and variant is scripts/verify-servers.sh's (protobench verify,
# zeep, ghz, schemathesis); bad input, the server limits, TLS, the failure
# draw and the service time are contract/tests/probe.sh python's. Ends with
# `N passed, M failed`.
set -euo pipefail
cd "$(dirname "$0")"

if [[ ! -x .venv/bin/python || ! -d gen/protobench ]] \
   || [[ ! -f gen/protobench/v1/stream_pb2.py ]] \
   || ! .venv/bin/python -c 'import fastapi, uvicorn, hypercorn, grpc, spyne, lxml, flask, gunicorn, orjson, websockets, strawberry' 2>/dev/null; then
  echo "building (python3 -m venv .venv; pip install -r requirements.txt; tools/gen_stubs.py)"
  python3 -m venv .venv
  nice -n 10 .venv/bin/python -m pip install --disable-pip-version-check --no-input --quiet -r requirements.txt
  .venv/bin/python tools/gen_stubs.py
fi
command -v openssl >/dev/null || { echo "openssl is needed for the TLS checks"; echo "0 passed, 1 failed"; exit 1; }

exec .venv/bin/python tests/check.py "$@"
