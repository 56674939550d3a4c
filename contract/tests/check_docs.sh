#!/usr/bin/env bash
# Checks contract/openapi.yaml, contract/wsdl/protobench.xsd and
# contract/wsdl/protobench.wsdl against the .proto files and the README
# (see check_docs.py for the list of checks).
#
#   bash contract/tests/check_docs.sh
#
# The Python tools (openapi-spec-validator, zeep, lxml, PyYAML) are installed
# with pip into a venv outside the repository, by default
# ${XDG_CACHE_HOME:-$HOME/.cache}/protobench/docs-venv (override with
# PROTOBENCH_DOCS_VENV), once; later runs need no network. Nothing else is
# fetched. Ends with `N passed, M failed`; exits non-zero on a failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${PROTOBENCH_DOCS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/protobench/docs-venv}"
requirements=(
  "openapi-spec-validator>=0.7,<0.10"
  "zeep>=4.2,<5"
  "lxml>=5,<7"
  "PyYAML>=6,<7"
)

have_tools() {
  [[ -x "$venv/bin/python" ]] &&
    "$venv/bin/python" -c 'import openapi_spec_validator, openapi_schema_validator, zeep, lxml, yaml' 2>/dev/null
}

if ! have_tools; then
  echo "setting up $venv (pip: ${requirements[*]})"
  if ! { python3 -m venv "$venv" &&
         nice -n 10 "$venv/bin/pip" install --quiet --disable-pip-version-check "${requirements[@]}"; } ||
     ! have_tools; then
    echo "FAIL setup: could not install the checking tools into $venv"
    echo "0 passed, 1 failed"
    exit 1
  fi
fi

exec "$venv/bin/python" "$here/check_docs.py" "$@"
