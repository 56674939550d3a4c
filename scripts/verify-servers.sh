#!/usr/bin/env bash
# Cross-check: start every reference server from its manifest (build first),
# and run `protobench verify` on every protocol it serves, in clear text and
# with TLS (a throw-away self-signed certificate). Exit 1 if any check fails.
#
# usage: scripts/verify-servers.sh [SERVER...]   (default: every servers/*/manifest.toml)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
pb="${PROTOBENCH:-$root/target/debug/protobench}"
[ -x "$pb" ] || { echo "verify-servers: $pb not built (cargo build -p protobench)" >&2; exit 2; }
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
# A throw-away CA and a leaf certificate for localhost/127.0.0.1 signed by it.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=protobench-test-ca \
  -keyout "$work/ca-key.pem" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout "$work/key.pem" -out "$work/leaf.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$work/ext.cnf"
openssl x509 -req -in "$work/leaf.csr" -CA "$work/ca.pem" -CAkey "$work/ca-key.pem" -CAcreateserial \
  -days 2 -extfile "$work/ext.cnf" -out "$work/cert.pem" 2>/dev/null

# zeep, a stock SOAP client, in a venv outside the repository (pip, once).
zeep_venv="${XDG_CACHE_HOME:-$HOME/.cache}/protobench/zeep-venv"
# Lanes of scripts/test.sh run this script side by side: one installs, the others wait.
mkdir -p "$(dirname "$zeep_venv")"; exec 8>"$zeep_venv.lock"; flock 8
if [ ! -x "$zeep_venv/bin/python" ] || ! "$zeep_venv/bin/python" -c 'import zeep' 2>/dev/null; then
  python3 -m venv "$zeep_venv" && "$zeep_venv/bin/pip" install -q "zeep==4.3.1" >/dev/null 2>&1 \
    || echo "verify-servers: could not install zeep" >&2
fi
exec 8>&-
zeep_py="$zeep_venv/bin/python"
if [ -n "${PROTOBENCH_REQUIRE_PEERS:-}" ] && ! "$zeep_py" -c 'import zeep' 2>/dev/null; then
  echo "verify-servers: zeep is required (PROTOBENCH_REQUIRE_PEERS) but not installed" >&2; exit 2
fi

# gql, a stock GraphQL client (Python, with graphql-core), the same way (once).
gql_venv="${XDG_CACHE_HOME:-$HOME/.cache}/protobench/gql-venv"
exec 8>"$gql_venv.lock"; flock 8
if [ ! -x "$gql_venv/bin/python" ] || ! "$gql_venv/bin/python" -c 'import gql.transport.requests' 2>/dev/null; then
  python3 -m venv "$gql_venv" && "$gql_venv/bin/pip" install -q "gql[requests]==4.4.0" >/dev/null 2>&1 \
    || echo "verify-servers: could not install gql" >&2
fi
exec 8>&-
gql_py="$gql_venv/bin/python"
if [ -n "${PROTOBENCH_REQUIRE_PEERS:-}" ] && ! "$gql_py" -c 'import gql.transport.requests' 2>/dev/null; then
  echo "verify-servers: gql is required (PROTOBENCH_REQUIRE_PEERS) but not installed" >&2; exit 2
fi

manifest() { python3 -c "import sys,tomllib;m=tomllib.load(open(sys.argv[1],'rb'));print($2)" "$1"; }
servers=("$@")
if [ ${#servers[@]} -eq 0 ]; then
  for m in "$root"/servers/*/manifest.toml; do
    name="$(basename "$(dirname "$m")")"; servers+=("$name")
    # Variants ([variants.X] in the manifest) are verified as NAME:X.
    for v in $(manifest "$m" "' '.join(m.get('variants', {}))"); do servers+=("$name:$v"); done
  done
fi
# listener_addr PROTOCOL: the address the server announced for it in $log.
listener_addr() { grep "^listening protocol=$1 " "$log" | sed 's/.*addr=\([^ ]*\).*/\1/'; }
passed=0; failed=0
for s in "${servers[@]}"; do
  s_start=$SECONDS
  base="${s%%:*}"; variant=""; [ "$base" != "$s" ] && variant="${s#*:}"
  dir="$root/servers/$base"
  variant_env=()
  if [ -n "$variant" ]; then
    protos=$(manifest "$dir/manifest.toml" "' '.join(m['variants']['$variant']['protocols'])")
    while IFS= read -r kv; do [ -n "$kv" ] && variant_env+=("$kv"); done \
      < <(manifest "$dir/manifest.toml" "'\n'.join(f'{k}={v}' for k,v in m['variants']['$variant'].get('env',{}).items())")
  else
    protos=$(manifest "$dir/manifest.toml" "' '.join(m['protocols'])")
  fi
  # The streaming transports it serves (manifest `streaming`; a variant serves
  # only those it lists itself): grpc on the grpc listener, websocket, sse and
  # poll on the rest listener (contract/README.md, "Streaming").
  streaming=$(manifest "$dir/manifest.toml" "' '.join(m.get('variants', {}).get('$variant', {}).get('streaming', []) if '$variant' else m.get('streaming', []))")
  timeout_s=$(manifest "$dir/manifest.toml" "m.get('start_timeout_s', 30)")
  # Build with the manifest's own steps (the built-in server has none).
  while IFS= read -r step; do
    [ -n "$step" ] || continue
    (cd "$dir" && eval "$step" >"$work/$s-build.log" 2>&1) || { echo "FAIL $s: build step failed: $step"; tail -20 "$work/$s-build.log"; failed=$((failed+1)); continue 2; }
  done < <(manifest "$dir/manifest.toml" "'\n'.join(__import__('shlex').join(a) for a in m.get('build', []))")
  # A variant may have a start command of its own (e.g. other JVM heap settings).
  start=$(manifest "$dir/manifest.toml" "__import__('shlex').join(m.get('variants', {}).get('$variant', {}).get('start') or m['start'])")
  start=${start//\{protobench\}/$pb}
  for mode in clear tls; do
    log="$work/$s-$mode.log"
    env_args=(PROTOBENCH_WORKERS=1 "${variant_env[@]}")
    for p in $protos; do env_args+=("PROTOBENCH_$(echo "$p" | tr 'a-z-' 'A-Z_')_ADDR=127.0.0.1:0"); done
    tls_args=(); scheme=http; ca=()   # ca: the CA file for the stock clients
    if [ $mode = tls ]; then
      env_args+=(PROTOBENCH_TLS_CERT="$work/cert.pem" PROTOBENCH_TLS_KEY="$work/key.pem")
      tls_args=(--cacert "$work/ca.pem" --server-name localhost)
      scheme=https; ca=("$work/ca.pem")
    fi
    (cd "$dir" && eval "exec env ${env_args[*]} $start" >"$log" 2>&1) &
    pid=$!
    want=$(echo $protos | wc -w)
    for _ in $(seq 1 "$timeout_s"); do
      [ "$(grep -c '^listening' "$log")" -ge "$want" ] && break
      kill -0 $pid 2>/dev/null || break
      sleep 1
    done
    for p in $protos; do
      addr=$(listener_addr $p)
      if [ -z "$addr" ]; then echo "FAIL $s $p $mode: no listening line"; tail -20 "$log"; failed=$((failed+1)); continue; fi
      stream_args=(); carried=""
      for t in $streaming; do
        case "$p:$t" in grpc:grpc | rest:websocket | rest:sse | rest:poll | connect:connect) carried="${carried:+$carried,}$t" ;; esac
      done
      [ -n "$carried" ] && stream_args=(--stream "$carried")
      if out=$(timeout 300 "$pb" verify --protocol "$p" --target "$addr" "${tls_args[@]}" "${stream_args[@]}" 2>&1); then
        echo "ok   $s $p $mode${carried:+ (and the streams over $carried)}"; passed=$((passed+1))
      else
        echo "FAIL $s $p $mode"; echo "$out" | grep -v ' ok$' | head -20; failed=$((failed+1))
      fi
    done
    # A stock SOAP client (zeep, from the served WSDL) against every soap listener.
    soap_addr=$(listener_addr soap)
    if [ -n "$soap_addr" ] && [ -x "$zeep_py" ]; then
      if out=$("$zeep_py" "$root/contract/tests/zeep_check.py" "$scheme://localhost:${soap_addr##*:}/soap?wsdl" "${ca[@]}" 2>&1); then
        echo "ok   $s soap $mode (zeep)"; passed=$((passed+1))
      else
        echo "FAIL $s soap $mode (zeep)"; echo "$out" | grep -v '^ok' | head -10; failed=$((failed+1))
      fi
    fi
    # grpc_bench's client (ghz, from contract/proto, grpc_bench-style payload files) against every grpc listener.
    grpc_addr=$(listener_addr grpc)
    if [ -n "$grpc_addr" ]; then
      if out=$(bash "$root/contract/tests/ghz_check.sh" "localhost:${grpc_addr##*:}" "${ca[@]}" 2>&1); then
        echo "ok   $s grpc $mode (ghz: $(echo "$out" | grep -c '^ok') payloads, every call OK)"; passed=$((passed+1))
      elif [ -z "${PROTOBENCH_REQUIRE_PEERS:-}" ] && echo "$out" | grep -q 'ghz not found'; then
        echo "skip $s grpc $mode (ghz not installed)"
      else
        echo "FAIL $s grpc $mode (ghz)"; echo "$out" | grep -v '^ok' | head -10; failed=$((failed+1))
      fi
    fi
    # A stock GraphQL client (Python gql: introspection checked against
    # contract/graphql/schema.graphql, every workload's document) against every graphql listener.
    gql_addr=$(listener_addr graphql)
    if [ -n "$gql_addr" ] && [ -x "$gql_py" ]; then
      if out=$(timeout 300 "$gql_py" "$root/contract/tests/gql_check.py" "$scheme://localhost:${gql_addr##*:}/graphql" "${ca[@]}" 2>&1); then
        echo "ok   $s graphql $mode (gql: $(echo "$out" | tail -1))"; passed=$((passed+1))
      else
        echo "FAIL $s graphql $mode (gql)"; echo "$out" | grep -v '^ok' | head -10; failed=$((failed+1))
      fi
    fi
    # Buf's client (buf curl, from contract/proto) against every connect and grpc-web listener.
    for pair in connect:connect grpc-web:grpcweb; do
      web_addr=$(listener_addr "${pair%%:*}")
      [ -n "$web_addr" ] || continue
      if out=$(bash "$root/contract/tests/buf_check.sh" "${pair#*:}" "127.0.0.1:${web_addr##*:}" "${ca[@]}" 2>&1); then
        echo "ok   $s ${pair%%:*} $mode (buf curl: $(echo "$out" | tail -1))"; passed=$((passed+1))
      elif [ -z "${PROTOBENCH_REQUIRE_PEERS:-}" ] && echo "$out" | grep -q 'buf not found'; then
        echo "skip $s ${pair%%:*} $mode (buf not installed)"
      else
        echo "FAIL $s ${pair%%:*} $mode (buf curl)"; echo "$out" | grep -v '^ok' | head -10; failed=$((failed+1))
      fi
    done
    # Stock clients on the streams (contract/tests/stream_check.py: grpcurl,
    # buf curl, curl -N, Python websockets), judged against contract/stream-vectors.
    sc_args=()
    for t in $streaming; do
      case $t in
        grpc) [ -n "$grpc_addr" ] && sc_args+=(--grpc "$grpc_addr") ;;
        sse | websocket) a=$(listener_addr rest); [ -n "$a" ] && sc_args+=("--$t" "$a") ;;
        connect) a=$(listener_addr connect); [ -n "$a" ] && sc_args+=(--connect "$a") ;;
      esac
    done
    if [ ${#sc_args[@]} -gt 0 ]; then
      if out=$(timeout 300 python3 "$root/contract/tests/stream_check.py" "${sc_args[@]}" ${ca:+--cacert "${ca[0]}"} 2>&1); then
        echo "ok   $s streams $mode (grpcurl, buf curl, curl -N, websockets: $(echo "$out" | grep -c '^ok') checks)"; passed=$((passed+1))
      else
        echo "FAIL $s streams $mode (stock clients)"; echo "$out" | grep -v '^ok' | head -10; failed=$((failed+1))
      fi
    fi
    # An OpenAPI-driven tool (schemathesis, from contract/openapi.yaml) against every rest listener.
    rest_addr=$(listener_addr rest)
    if [ -n "$rest_addr" ]; then
      # One retry, shown: this check failed once in CI on 2026-11-23 (python,
      # TLS) without printing why, then passed 11 reruns, loaded and idle. A
      # failed attempt's output (last 80 lines) is printed so the next one can
      # be diagnosed, and a pass on retry is marked FLAKY.
      st_ok=0; st_note=""
      for attempt in 1 2; do
        if out=$(timeout 600 bash "$root/contract/tests/openapi_check.sh" "$scheme://localhost:${rest_addr##*:}" "${ca[@]}" 2>&1); then
          st_ok=1; break
        fi
        echo "---- $s rest $mode: schemathesis attempt $attempt failed; its output:"
        echo "$out" | tail -80
        echo "----"
        st_note=", passed on retry: FLAKY, see above"
      done
      if [ $st_ok = 1 ]; then
        echo "ok   $s rest $mode (schemathesis: $(echo "$out" | grep -o '[0-9]* generated, [0-9]* passed' | tail -1)$st_note)"; passed=$((passed+1))
      else
        echo "FAIL $s rest $mode (schemathesis, twice)"; failed=$((failed+1))
      fi
    fi
    kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null
  done
  # The hardening probe (issue 14): limits, timeouts and hostile input, its own server start.
  if [ -n "$variant" ]; then   # the probe starts the stack's default implementation
    echo "== $s: $((SECONDS - s_start)) s"; continue
  fi
  if out=$(PROTOBENCH="$pb" bash "$root/contract/tests/probe.sh" --root "$root" "$s" 2>&1); then
    echo "ok   $s probe ($(echo "$out" | tail -1 | sed 's/^probe: //'))"; passed=$((passed+1))
  else
    echo "FAIL $s probe"; echo "$out" | grep -v '^ok' | head -30; failed=$((failed+1))
  fi
  echo "== $s: $((SECONDS - s_start)) s"
done
echo "verify-servers: $passed passed, $failed failed"
[ $failed -eq 0 ]
