#!/usr/bin/env bash
# Builds the Python server if needed, then runs tests/check.py: every workload
# in contract/vectors on rest, rest-h2, grpc and soap (clear text, then TLS
# with a throw-away certificate), the errors only this stack is checked on,
# the failure draw, the service time, SIGTERM, zeep against the served WSDL,
# gRPC reflection (grpcurl too when it is on PATH), the Flask variant and
# Berg's variants, uvicorn-workers and grpcio-sync (bad input and the server
# limits: contract/tests/probe.sh python). Ends with `N passed, M failed`.
set -euo pipefail
cd "$(dirname "$0")"

if [[ ! -x .venv/bin/python || ! -d gen/protobench ]] \
   || ! .venv/bin/python -c 'import fastapi, uvicorn, hypercorn, grpc, spyne, lxml, flask, gunicorn, orjson' 2>/dev/null; then
  echo "building (python3 -m venv .venv; pip install -r requirements.txt; tools/gen_stubs.py)"
  python3 -m venv .venv
  nice -n 10 .venv/bin/python -m pip install --disable-pip-version-check --no-input --quiet -r requirements.txt
  .venv/bin/python tools/gen_stubs.py
fi
if ! .venv/bin/python -c 'import zeep' 2>/dev/null; then
  echo "installing the test client (zeep) from requirements-test.txt"
  nice -n 10 .venv/bin/python -m pip install --disable-pip-version-check --no-input --quiet -r requirements-test.txt
fi
command -v curl >/dev/null || { echo "curl is needed for the rest-h2 checks"; echo "0 passed, 1 failed"; exit 1; }
command -v openssl >/dev/null || { echo "openssl is needed for the TLS checks"; echo "0 passed, 1 failed"; exit 1; }

exec .venv/bin/python tests/check.py "$@"
