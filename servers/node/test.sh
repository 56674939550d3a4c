#!/usr/bin/env bash
# Builds if needed, then checks the server against contract/vectors and the
# contract's error, failure-injection, service-time and shutdown rules, in
# clear text and with TLS (node's built-in test runner, test/server.test.js),
# then with third-party clients where available (grpcurl via reflection,
# python zeep via the served WSDL). Prints "N passed, M failed" last.
set -euo pipefail
cd "$(dirname "$0")"

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "== build: npm ci"
  npm ci --no-audit --no-fund
fi
# connect-es descriptors (gen/, not committed): protoc + protoc-gen-es
if [ ! -f gen/protobench/v1/protobench_pb.js ] || [ -n "$(find ../../contract/proto -name '*.proto' -newer gen/protobench/v1/protobench_pb.js)" ]; then
  echo "== build: npm run generate"
  npm run --silent generate
fi

TMP=$(mktemp -d)
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then kill -TERM "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

# Throw-away self-signed certificate for localhost / 127.0.0.1.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
  -keyout "$TMP/key.pem" -out "$TMP/cert.pem" >/dev/null 2>&1

passed=0
failed=0

run_node_tests() { # label [env...]
  local label=$1; shift
  echo "== node --test ($label)"
  local tap="$TMP/$label.tap" rc=0
  env "$@" node --test --test-concurrency=1 --test-timeout=600000 \
    --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$tap" test/ || rc=$?
  local p f
  p=$(grep -E '^# pass [0-9]+' "$tap" | tail -1 | awk '{print $3}')
  f=$(grep -E '^# fail [0-9]+' "$tap" | tail -1 | awk '{print $3}')
  if [ -z "$p" ] || [ -z "$f" ]; then p=${p:-0}; f=$(( ${f:-0} + 1 )); echo "test runner summary missing"; fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "test runner exited $rc"; fi
  passed=$((passed + p)); failed=$((failed + f))
}

run_node_tests clear
run_node_tests tls PB_TEST_TLS_CERT="$TMP/cert.pem" PB_TEST_TLS_KEY="$TMP/key.pem"

# ---------------------------------------------------------------- third party
ok()   { echo "ok $*"; passed=$((passed + 1)); }
bad()  { echo "FAIL $*"; failed=$((failed + 1)); }

start_server() { # tls(true|false)
  local out="$TMP/server.out"
  : > "$out"
  local tlsenv=()
  if [ "$1" = true ]; then tlsenv=(PROTOBENCH_TLS_CERT="$TMP/cert.pem" PROTOBENCH_TLS_KEY="$TMP/key.pem"); fi
  env -u PROTOBENCH_TLS_CERT -u PROTOBENCH_TLS_KEY "${tlsenv[@]}" PROTOBENCH_WORKERS=1 \
    PROTOBENCH_GRPC_ADDR=127.0.0.1:0 PROTOBENCH_SOAP_ADDR=127.0.0.1:0 PROTOBENCH_REST_ADDR=127.0.0.1:0 \
    node src/server.js > "$out" 2>"$TMP/server.err" &
  SERVER_PID=$!
  for _ in $(seq 1 300); do
    [ "$(grep -c '^listening ' "$out" || true)" -ge 3 ] && break
    sleep 0.1
  done
  GRPC_ADDR=$(sed -n 's/^listening protocol=grpc addr=\([^ ]*\) .*/\1/p' "$out")
  SOAP_ADDR=$(sed -n 's/^listening protocol=soap addr=\([^ ]*\) .*/\1/p' "$out")
  REST_ADDR=$(sed -n 's/^listening protocol=rest addr=\([^ ]*\) .*/\1/p' "$out")
  [ -n "$GRPC_ADDR" ] && [ -n "$SOAP_ADDR" ] && [ -n "$REST_ADDR" ]
}

stop_server() {
  kill -TERM "$SERVER_PID"
  local rc=0
  wait "$SERVER_PID" || rc=$?
  SERVER_PID=""
  return $rc
}

GRPCURL=$(command -v grpcurl || true)
[ -z "$GRPCURL" ] && [ -x "$HOME/go/bin/grpcurl" ] && GRPCURL="$HOME/go/bin/grpcurl"

ZEEP_PY=""
if [ -x .venv/bin/python ] && .venv/bin/python -c 'import zeep' 2>/dev/null; then
  ZEEP_PY=.venv/bin/python
elif [ "${PB_SKIP_ZEEP_INSTALL:-0}" != 1 ] && command -v python3 >/dev/null; then
  echo "== installing python zeep into .venv (bounded to 180 s; PB_SKIP_ZEEP_INSTALL=1 skips)"
  if timeout 180 bash -c 'python3 -m venv .venv && .venv/bin/pip install -q --disable-pip-version-check "zeep==4.3.3"' \
      && .venv/bin/python -c 'import zeep' 2>/dev/null; then
    ZEEP_PY=.venv/bin/python
  fi
fi

for tls in false true; do
  echo "== third-party clients (tls=$tls)"
  if ! start_server "$tls"; then bad "server start for third-party checks (tls=$tls)"; cat "$TMP/server.err"; continue; fi
  if [ -n "$GRPCURL" ]; then
    if [ "$tls" = true ]; then gflags=(-cacert "$TMP/cert.pem" -servername localhost); else gflags=(-plaintext); fi
    if "$GRPCURL" "${gflags[@]}" "$GRPC_ADDR" list > "$TMP/g.out" 2>&1 \
        && grep -qx 'protobench.v1.Bench' "$TMP/g.out" && grep -qx 'helloworld.Greeter' "$TMP/g.out"; then
      ok "grpcurl list via reflection (tls=$tls)"
    else bad "grpcurl list via reflection (tls=$tls)"; cat "$TMP/g.out"; fi
    if "$GRPCURL" "${gflags[@]}" -d '{"text":"hi","times":3}' "$GRPC_ADDR" protobench.v1.Bench/CloneText > "$TMP/g.out" 2>&1 \
        && [ "$(grep -c '"hi"' "$TMP/g.out")" -eq 3 ]; then
      ok "grpcurl CloneText via reflection (tls=$tls)"
    else bad "grpcurl CloneText via reflection (tls=$tls)"; cat "$TMP/g.out"; fi
    if "$GRPCURL" "${gflags[@]}" -d '{"request":{"name":"g","l":"444325235223","c1":"x","pets":[{"name":"p","color":"RED"}]}}' \
        "$GRPC_ADDR" helloworld.Greeter/SayHello > "$TMP/g.out" 2>&1 \
        && grep -q '"l": "444325235223"' "$TMP/g.out" && grep -q '"color": "RED"' "$TMP/g.out"; then
      ok "grpcurl SayHello via reflection (tls=$tls)"
    else bad "grpcurl SayHello via reflection (tls=$tls)"; cat "$TMP/g.out"; fi
    # the streams through reflection: a subscription's 3 events, an echo
    # stream's 2 replies, an upload's summary
    if timeout 60 "$GRPCURL" "${gflags[@]}" -d '{"count":3,"items":1}' "$GRPC_ADDR" protobench.v1.Streams/Subscribe > "$TMP/g.out" 2>&1 \
        && [ "$(grep -c '"scheduledNs"' "$TMP/g.out")" -eq 3 ] && grep -q '"seq": 3' "$TMP/g.out"; then
      ok "grpcurl Subscribe stream via reflection (tls=$tls)"
    else bad "grpcurl Subscribe stream via reflection (tls=$tls)"; cat "$TMP/g.out"; fi
    if timeout 60 "$GRPCURL" "${gflags[@]}" -d '{"seq":1,"payload":"a"} {"seq":2,"payload":"b"}' "$GRPC_ADDR" protobench.v1.Streams/EchoStream > "$TMP/g.out" 2>&1 \
        && [ "$(grep -c '"payload"' "$TMP/g.out")" -eq 2 ] && grep -q '"payload": "b"' "$TMP/g.out"; then
      ok "grpcurl EchoStream via reflection (tls=$tls)"
    else bad "grpcurl EchoStream via reflection (tls=$tls)"; cat "$TMP/g.out"; fi
    # FNV-1a of "ab": 0x4d2505ca = 1294271946
    if timeout 60 "$GRPCURL" "${gflags[@]}" -d '{"seq":1,"payload":"a"} {"seq":2,"payload":"b"}' "$GRPC_ADDR" protobench.v1.Streams/Upload > "$TMP/g.out" 2>&1 \
        && grep -q '"count": 2' "$TMP/g.out" && grep -q '"checksum": 1294271946' "$TMP/g.out"; then
      ok "grpcurl Upload via reflection (tls=$tls)"
    else bad "grpcurl Upload via reflection (tls=$tls)"; cat "$TMP/g.out"; fi
  else
    echo "SKIP grpcurl not found (go install github.com/fullstorydev/grpcurl/cmd/grpcurl@latest)"
  fi
  # SSE with curl -N: 3 events, then the end event
  if [ "$tls" = true ]; then curlflags=(--cacert "$TMP/cert.pem" --resolve "localhost:${REST_ADDR##*:}:127.0.0.1"); sse_url="https://localhost:${REST_ADDR##*:}"
  else curlflags=(); sse_url="http://$REST_ADDR"; fi
  if curl -sN --max-time 60 "${curlflags[@]}" "$sse_url/v1/stream/sse?count=3&items=1&rate=100" > "$TMP/sse.out" 2>&1 \
      && [ "$(grep -c '^event: feed' "$TMP/sse.out")" -eq 3 ] && grep -q '^id: 3' "$TMP/sse.out" \
      && grep -q '^data: {"count":3}' "$TMP/sse.out"; then
    ok "curl -N SSE subscription (tls=$tls)"
  else bad "curl -N SSE subscription (tls=$tls)"; cat "$TMP/sse.out"; fi
  if [ -n "$ZEEP_PY" ]; then
    # The shared check (contract/tests): zeep calls the address the served WSDL names.
    # The certificate is issued to localhost; the server listens on 127.0.0.1.
    if [ "$tls" = true ]; then zargs=("https://localhost:${SOAP_ADDR##*:}/soap?wsdl" "$TMP/cert.pem")
    else zargs=("http://$SOAP_ADDR/soap?wsdl"); fi
    zrc=0
    "$ZEEP_PY" ../../contract/tests/zeep_check.py "${zargs[@]}" > "$TMP/z.out" 2>&1 || zrc=$?
    cat "$TMP/z.out"
    zp=$(grep -c '^ok ' "$TMP/z.out" || true)
    zf=$(grep -c '^FAIL ' "$TMP/z.out" || true)
    passed=$((passed + zp)); failed=$((failed + zf))
    if [ "$zrc" -ne 0 ] && [ "$zf" -eq 0 ]; then bad "zeep check crashed (tls=$tls)"; fi
  else
    echo "SKIP python zeep not available"
  fi
  if stop_server; then ok "third-party server exits 0 on SIGTERM (tls=$tls)"; else bad "third-party server exit code (tls=$tls)"; fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
