#!/usr/bin/env bash
# Tests the protobench Go server end to end, on 127.0.0.1 only: builds it,
# runs the unit tests, then starts it (clear text, then TLS with a throw-away
# self-signed certificate) and checks edge input only this stack is checked
# on, the size limit's DOCTYPE case and SIGTERM, with bin/check (Go), curl
# and grpcurl (a third-party gRPC client that works from server reflection),
# a persisted GraphQL query over GET (graphql-get) with curl,
# and the streaming operations, GraphQL, Connect and gRPC-Web with curl and
# grpcurl (their bad input and limits are in go test). Every workload on
# every protocol is scripts/verify-servers.sh go's (protobench verify, zeep,
# ghz); bad input, the server limits, TLS (ALPN, handshake and idle
# timeouts), the failure draw, the service time and draining are
# contract/tests/probe.sh go's. Prints `N passed, M failed` last and exits
# non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")"

CONTRACT=../../contract
TOOLS="$PWD/.tools/bin"
GRPCURL_VERSION=v1.9.3
PASSED=0
FAILED=0
SERVER_PID=
TMP=$(mktemp -d)

cleanup() {
	if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -KILL "$SERVER_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

pass() { PASSED=$((PASSED + 1)); echo "ok   $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL $*"; }
expect() { # name, command...: passes when the command succeeds
	local name=$1; shift
	if "$@" >"$TMP/expect.out" 2>&1; then pass "$name"; else fail "$name: $(head -c 300 "$TMP/expect.out")"; fi
}

# Runs bin/check and adds its counts.
run_check() {
	run_counted bin/check "$@"
}

# Runs a command that prints check lines and `check: N passed, M failed`.
run_counted() {
	local out="$TMP/check.out" rc=0
	"$@" >"$out" 2>&1 || rc=$?
	grep -v '^check: ' "$out" || true
	local line
	line=$(grep '^check: ' "$out" || true)
	if [ -z "$line" ]; then
		fail "$*: no result line (exit $rc): $(tail -c 300 "$out")"
		return
	fi
	local p f
	p=$(sed -E 's/^check: ([0-9]+) passed, ([0-9]+) failed$/\1/' <<<"$line")
	f=$(sed -E 's/^check: ([0-9]+) passed, ([0-9]+) failed$/\2/' <<<"$line")
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
}

# ---------------------------------------------------------------- build
echo "# build"
nice -n 10 bash build.sh
nice -n 10 go build -o bin/check ./cmd/check
if [ ! -x "$TOOLS/grpcurl" ]; then
	GOBIN="$TOOLS" nice -n 10 go install "github.com/fullstorydev/grpcurl/cmd/grpcurl@$GRPCURL_VERSION" || true
fi
GRPCURL="$TOOLS/grpcurl"
[ -x "$GRPCURL" ] && pass "grpcurl $GRPCURL_VERSION installed" || fail "grpcurl could not be installed"

echo "# unit tests"
if go test ./... >"$TMP/unit.out" 2>&1; then pass "go test ./..."; else cat "$TMP/unit.out"; fail "go test ./..."; fi

# ---------------------------------------------------------------- server control
ALL_ADDRS=(PROTOBENCH_REST_ADDR=127.0.0.1:0 PROTOBENCH_REST_H2_ADDR=127.0.0.1:0
	PROTOBENCH_GRPC_ADDR=127.0.0.1:0 PROTOBENCH_SOAP_ADDR=127.0.0.1:0
	PROTOBENCH_GRAPHQL_ADDR=127.0.0.1:0 PROTOBENCH_GRAPHQL_GET_ADDR=127.0.0.1:0 PROTOBENCH_CONNECT_ADDR=127.0.0.1:0
	PROTOBENCH_CONNECT_JSON_ADDR=127.0.0.1:0 PROTOBENCH_GRPC_WEB_ADDR=127.0.0.1:0)
LISTENERS=9
TLS_ENV=()

# start_server NAME VAR=VALUE...: starts bin/server with every protocol
# (plus TLS_ENV and the given variables) and waits for its listening lines.
start_server() {
	local name=$1; shift
	OUT="$TMP/$name.out"
	env "${ALL_ADDRS[@]}" "${TLS_ENV[@]}" "$@" bin/server >"$OUT" 2>"$TMP/$name.err" &
	SERVER_PID=$!
	local i n
	for i in $(seq 1 300); do
		n=$(grep -c '^listening ' "$OUT" 2>/dev/null || true)
		[ "${n:-0}" -ge "$LISTENERS" ] && break
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	REST=$(sed -nE 's/^listening protocol=rest addr=([^ ]+) .*/\1/p' "$OUT")
	REST_H2=$(sed -nE 's/^listening protocol=rest-h2 addr=([^ ]+) .*/\1/p' "$OUT")
	GRPC=$(sed -nE 's/^listening protocol=grpc addr=([^ ]+) .*/\1/p' "$OUT")
	SOAP=$(sed -nE 's/^listening protocol=soap addr=([^ ]+) .*/\1/p' "$OUT")
	GRAPHQL=$(sed -nE 's/^listening protocol=graphql addr=([^ ]+) .*/\1/p' "$OUT")
	GRAPHQL_GET=$(sed -nE 's/^listening protocol=graphql-get addr=([^ ]+) .*/\1/p' "$OUT")
	CONNECT=$(sed -nE 's/^listening protocol=connect addr=([^ ]+) .*/\1/p' "$OUT")
	CONNECT_JSON=$(sed -nE 's/^listening protocol=connect-json addr=([^ ]+) .*/\1/p' "$OUT")
	GRPC_WEB=$(sed -nE 's/^listening protocol=grpc-web addr=([^ ]+) .*/\1/p' "$OUT")
	if [ -n "$REST" ] && [ -n "$REST_H2" ] && [ -n "$GRPC" ] && [ -n "$SOAP" ] && [ -n "$GRAPHQL" ] && [ -n "$GRAPHQL_GET" ] &&
		[ -n "$CONNECT" ] && [ -n "$CONNECT_JSON" ] && [ -n "$GRPC_WEB" ]; then
		pass "$name: server started ($REST $REST_H2 $GRPC $SOAP $GRAPHQL $GRAPHQL_GET $CONNECT $CONNECT_JSON $GRPC_WEB)"
	else
		fail "$name: server did not start: $(cat "$OUT" "$TMP/$name.err" | head -c 500)"
		return 1
	fi
	CHECK_ARGS=(-rest "$REST" -rest-h2 "$REST_H2" -grpc "$GRPC" -soap "$SOAP")
	[ ${#TLS_ENV[@]} -gt 0 ] && CHECK_ARGS+=(-tls)
	return 0
}

# stop_server NAME: SIGTERM, then expects exit 0 within 15 s.
stop_server() {
	local name=$1 i rc=0
	kill -TERM "$SERVER_PID"
	for i in $(seq 1 150); do
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -KILL "$SERVER_PID"
		wait "$SERVER_PID" 2>/dev/null || true
		fail "$name: still running 15 s after SIGTERM"
	else
		wait "$SERVER_PID" || rc=$?
		[ "$rc" = 0 ] && pass "$name: SIGTERM exits 0" || fail "$name: SIGTERM exit status $rc"
	fi
	SERVER_PID=
	# Nothing but the listening lines on stdout.
	local lines
	lines=$(grep -cvE '^listening protocol=(rest|rest-h2|grpc|soap|graphql|graphql-get|connect|connect-json|grpc-web) addr=127\.0\.0\.1:[0-9]+ tls=(true|false)$' "$OUT" || true)
	[ "$lines" = 0 ] && pass "$name: stdout holds only well-formed listening lines" || fail "$name: unexpected stdout: $(cat "$OUT")"
}

# ---------------------------------------------------------------- curl / grpcurl
curl_checks() {
	local s=$1 tlsflag=() h2flag=(--http2-prior-knowledge) out
	if [ "$s" = https ]; then tlsflag=(-k); h2flag=(--http2); fi
	out=$(curl -sS "${tlsflag[@]}" --http1.1 "$s://$REST/v1/tasks/integer")
	[ "$out" = '{"value":2147483647}' ] && pass "curl rest GetInteger" || fail "curl rest GetInteger: $out"
	out=$(curl -sS "${tlsflag[@]}" "${h2flag[@]}" -o /dev/null -w '%{http_version} %{http_code}' "$s://$REST_H2/v1/inventory/xs")
	[ "$out" = "2 200" ] && pass "curl rest-h2 over HTTP/2" || fail "curl rest-h2 over HTTP/2: $out"
	out=$(curl -sS "${tlsflag[@]}" --http1.1 -o /dev/null -w '%{http_code}' "$s://$REST_H2/v1/inventory/xs" 2>&1 || true)
	[ "$out" != 200 ] && pass "rest-h2 refuses HTTP/1.1" || fail "rest-h2 answered HTTP/1.1"
	out=$(curl -sS "${tlsflag[@]}" -o /dev/null -w '%{http_version}' "$s://$REST/v1/inventory/xs")
	[ "$out" = "1.1" ] && pass "rest speaks HTTP/1.1" || fail "rest speaks HTTP/$out"
	out=$(curl -sS "${tlsflag[@]}" -w ' %{http_code}' -X POST -H 'Content-Type: application/json' --data-binary @"$CONTRACT/vectors/echo.128b/request.json" "$s://$REST/v1/echo")
	[ "${out##* }" = 200 ] && [ "$(tr -d '\n' <<<"${out% *}")" = "$(cat "$CONTRACT/vectors/echo.128b/response.json")" ] && pass "curl rest Echo" || fail "curl rest Echo: $out"
	out=$(curl -sS "${tlsflag[@]}" -o /dev/null -w '%{http_code}' -X POST --data-binary '{"payload":"x"}' "$s://$REST/v1/echo")
	[ "$out" = 415 ] && pass "curl rest form-encoded body -> 415" || fail "curl rest form-encoded body: $out"
	out=$(curl -sS "${tlsflag[@]}" -o /dev/null -w '%{http_code}' -X PUT "$s://$REST/v1/tasks/objects")
	[ "$out" = 405 ] && pass "curl rest PUT -> 405" || fail "curl rest PUT: $out"
	out=$(curl -sS "${tlsflag[@]}" "$s://$REST/nothing/here")
	[ "$out" = '{"code":404,"message":"no such path: /nothing/here"}' ] && pass "curl rest unknown path -> 404 JSON" || fail "curl rest unknown path: $out"
	out=$(curl -sS "${tlsflag[@]}" "$s://$SOAP/soap?wsdl" | grep -c "<soap:address location=\"$s://$SOAP/soap\"/>" || true)
	[ "$out" = 1 ] && pass "curl soap WSDL with this address" || fail "curl soap WSDL location"
	out=$(curl -sS "${tlsflag[@]}" -H 'Content-Type: text/xml; charset=utf-8' -H 'SOAPAction: "urn:protobench:v1#GetInteger"' \
		--data-binary @"$CONTRACT/vectors/tasks.int/request.xml" "$s://$SOAP/soap")
	grep -q '<value>2147483647</value>' <<<"$out" && pass "curl soap GetInteger" || fail "curl soap GetInteger: $out"

	# grpcurl, from reflection only (no proto files given).
	local g=(-max-msg-sz 67108864)
	if [ "$s" = https ]; then g+=(-insecure); else g+=(-plaintext); fi
	out=$("$GRPCURL" "${g[@]}" "$GRPC" list 2>&1 || true)
	grep -qx protobench.v1.Bench <<<"$out" && grep -qx helloworld.Greeter <<<"$out" && pass "grpcurl list (reflection)" || fail "grpcurl list: $out"
	out=$("$GRPCURL" "${g[@]}" "$GRPC" describe protobench.v1.Bench.GetFile 2>&1 || true)
	grep -q 'rpc GetFile ( .protobench.v1.FileRequest ) returns ( .protobench.v1.FileContent )' <<<"$out" && pass "grpcurl describe" || fail "grpcurl describe: $out"
	out=$("$GRPCURL" "${g[@]}" -d @ "$GRPC" protobench.v1.Bench/ModifyProduct <"$CONTRACT/vectors/product.typical/request.json" 2>&1 || true)
	python3 - "$out" "$CONTRACT/vectors/product.typical/response.json" <<'EOF' && pass "grpcurl ModifyProduct" || fail "grpcurl ModifyProduct: ${out:0:300}"
import json, sys
got = json.loads(sys.argv[1]); want = json.load(open(sys.argv[2]))
# grpcurl omits default values; compare what it prints.
sys.exit(0 if all(want.get(k) == v for k, v in got.items()) and got.get("description") == want["description"] else 1)
EOF
	out=$("$GRPCURL" "${g[@]}" -d @ "$GRPC" helloworld.Greeter/SayHello <"$CONTRACT/vectors/grpcbench.complex/request.json" 2>&1 || true)
	grep -q '"l": "444325235223"' <<<"$out" && grep -q '"c1": "of course"' <<<"$out" && pass "grpcurl SayHello" || fail "grpcurl SayHello: ${out:0:300}"
	out=$("$GRPCURL" "${g[@]}" -d '{"name":"file-3m4"}' "$GRPC" protobench.v1.Bench/GetFile 2>&1 | grep -c '"content"' || true)
	[ "$out" = 1 ] && pass "grpcurl GetFile 3.4 MB" || fail "grpcurl GetFile 3.4 MB"
	out=$("$GRPCURL" "${g[@]}" -d '{"name":"nope"}' "$GRPC" protobench.v1.Bench/GetFile 2>&1 || true)
	grep -q 'Code: NotFound' <<<"$out" && pass "grpcurl unknown file -> NotFound" || fail "grpcurl unknown file: $out"
	out=$("$GRPCURL" "${g[@]}" -d '{"text":"a","times":100001}' "$GRPC" protobench.v1.Bench/CloneText 2>&1 || true)
	grep -q 'Code: InvalidArgument' <<<"$out" && pass "grpcurl clone 100001 -> InvalidArgument" || fail "grpcurl clone: $out"

	stream_checks "$s"

	if [ "$s" = https ]; then # the probe's tls phase checks rest, rest-h2, grpc and soap
		local p a
		for p in "GRAPHQL http/1.1" "GRAPHQL_GET http/1.1" "CONNECT http/1.1" "CONNECT_JSON http/1.1" "GRPC_WEB http/1.1"; do
			set -- $p
			a=$(echo | openssl s_client -connect "${!1}" -alpn h2,http/1.1 2>/dev/null | sed -nE 's/^ALPN protocol: (.*)/\1/p')
			[ "$a" = "$2" ] && pass "TLS ALPN $1 = $2" || fail "TLS ALPN $1 = '$a', want $2"
		done
	fi
}

# The streaming operations and the newer protocols, by third-party clients:
# curl -N for SSE (HTTP/1.1 and HTTP/2), grpcurl (from reflection) for the
# gRPC streams, Python's websockets (where installed) for WebSocket, curl for a GraphQL query, a Connect call and the gRPC-Web
# text form this stack does not serve. Every workload of them is
# scripts/verify-servers.sh go's (protobench verify, gql, buf curl); bad
# input and limits are go test's (internal/rest, internal/grpcsrv).
stream_checks() {
	local s=$1 tlsflag=() h2flag=(--http2-prior-knowledge) out
	if [ "$s" = https ]; then tlsflag=(-k); h2flag=(--http2); fi
	out=$(curl -sSN "${tlsflag[@]}" --max-time 30 "$s://$REST/v1/stream/sse?count=3&items=1&rate=100")
	[ "$(grep -c '^event: feed$' <<<"$out")" = 3 ] && grep -q '^data: {"seq":3,"scheduledNs":"[0-9]*","items":\[{"id":' <<<"$out" &&
		[ "$(tail -n 2 <<<"$out")" = $'event: end\ndata: {"count":3}' ] && pass "curl -N SSE" || fail "curl -N SSE: ${out:0:300}"
	out=$(curl -sSN "${tlsflag[@]}" "${h2flag[@]}" --max-time 30 -w '%{http_version}' "$s://$REST_H2/v1/stream/sse?count=2")
	[ "$(grep -c '^event: feed$' <<<"$out")" = 2 ] && [ "${out: -1}" = 2 ] && pass "curl -N SSE over HTTP/2" || fail "curl -N SSE over HTTP/2: ${out:0:300}"
	out=$(curl -sS "${tlsflag[@]}" -w '%{http_code}' "$s://$REST/v1/stream/sse?count=1000001")
	[ "$out" = $'{"code":400,"message":"count is 1000001, expected 1..=1000000"}\n400' ] && pass "curl SSE count out of range -> 400" || fail "curl SSE count: $out"

	local g=()
	if [ "$s" = https ]; then g+=(-insecure); else g+=(-plaintext); fi
	out=$("$GRPCURL" "${g[@]}" -d '{"count":3,"items":2,"rate":1000}' "$GRPC" protobench.v1.Streams/Subscribe 2>&1 || true)
	[ "$(grep -c '"scheduledNs"' <<<"$out")" = 3 ] && grep -q '"seq": 3' <<<"$out" && pass "grpcurl Subscribe" || fail "grpcurl Subscribe: ${out:0:300}"
	out=$(printf '{"seq":1,"payload":"abc"}\n{"seq":2,"payload":"d"}\n' | "$GRPCURL" "${g[@]}" -d @ "$GRPC" protobench.v1.Streams/Upload 2>&1 || true)
	# FNV-1a of "abcd" is 0xce3479bd.
	grep -q '"count": 2' <<<"$out" && grep -q '"bytes": "4"' <<<"$out" && grep -q '"checksum": 3459545533' <<<"$out" &&
		pass "grpcurl Upload" || fail "grpcurl Upload: $out"
	out=$(printf '{"seq":1,"payload":"x"}\n{"seq":2,"payload":"y"}\n' | "$GRPCURL" "${g[@]}" -d @ "$GRPC" protobench.v1.Streams/EchoStream 2>&1 || true)
	[ "$(grep -c '"payload"' <<<"$out")" = 2 ] && grep -q '"payload": "y"' <<<"$out" && pass "grpcurl EchoStream" || fail "grpcurl EchoStream: $out"
	out=$("$GRPCURL" "${g[@]}" -d '{"count":0}' "$GRPC" protobench.v1.Streams/Subscribe 2>&1 || true)
	grep -q 'Code: InvalidArgument' <<<"$out" && pass "grpcurl Subscribe count 0 -> InvalidArgument" || fail "grpcurl Subscribe count 0: $out"

	# Python's websockets (a WebSocket client not written here), where installed.
	if python3 -c 'import websockets' 2>/dev/null; then
		out=$(timeout 60 python3 - "$s" "$REST" <<'EOF' 2>&1 || true
import asyncio, json, ssl, sys
import websockets
scheme, addr = sys.argv[1], sys.argv[2]
ctx = None
if scheme == "https":
    ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
base = ("wss" if ctx else "ws") + "://" + addr
async def main():
    async with websockets.connect(base + "/v1/stream/ws/echo", ssl=ctx) as ws:
        await ws.send('{"seq":1,"payload":"hé"}')
        print("echo", await ws.recv())
    async with websockets.connect(base + "/v1/stream/ws/subscribe", ssl=ctx, max_size=None) as ws:
        await ws.send(json.dumps({"count": 3, "items": 1, "rate": 100}))
        seqs = [json.loads(await ws.recv())["seq"] for _ in range(3)]
        try:
            await ws.recv()
        except websockets.ConnectionClosed as e:
            print("subscribe", seqs, e.rcvd.code)
    async with websockets.connect(base + "/v1/stream/ws/subscribe", ssl=ctx) as ws:
        await ws.send(json.dumps({"count": 0}))
        try:
            await ws.recv()
        except websockets.ConnectionClosed as e:
            print("bad", e.rcvd.code, e.rcvd.reason)
asyncio.run(main())
EOF
)
		grep -qx 'echo {"seq":1,"payload":"hé"}' <<<"$out" && grep -qx 'subscribe \[1, 2, 3\] 1000' <<<"$out" &&
			grep -qx 'bad 1007 count is 0, expected 1..=1000000' <<<"$out" && pass "python websockets" || fail "python websockets: $out"
	else
		echo "skip python websockets (not installed)"
	fi

	out=$(curl -sS "${tlsflag[@]}" -H 'Content-Type: application/json' -d '{"query":"{ integer { value } }"}' "$s://$GRAPHQL/graphql")
	[ "$out" = '{"data":{"integer":{"value":2147483647}}}' ] && pass "curl GraphQL query" || fail "curl GraphQL query: $out"
	graphql_get_checks "$s"
	out=$(curl -sS "${tlsflag[@]}" -H 'Content-Type: application/json' -d '{}' "$s://$CONNECT_JSON/protobench.v1.Bench/GetInteger")
	[ "$out" = '{"value":2147483647}' ] && pass "curl Connect JSON" || fail "curl Connect JSON: $out"
	out=$(curl -sS "${tlsflag[@]}" -o /dev/null -w '%{http_code}' -H 'Content-Type: application/grpc-web-text' -d 'AAAAAAA=' "$s://$GRPC_WEB/protobench.v1.Bench/GetInteger")
	[ "$out" = 415 ] && pass "gRPC-Web text (not served) -> 415" || fail "gRPC-Web text: $out"
}

# A persisted query with curl (graphql-get): unknown by its hash, registered
# by POST on the graphql listener (one store for both), then found by GET;
# a mutation by GET is 405. The rest is go test's (internal/graphql).
graphql_get_checks() {
	local s=$1 tlsflag=() out
	[ "$s" = https ] && tlsflag=(-k)
	local doc='query GetInteger { integer { value } }'
	local ext="{\"persistedQuery\":{\"version\":1,\"sha256Hash\":\"$(printf '%s' "$doc" | sha256sum | cut -d' ' -f1)\"}}"
	local get=(curl -sS "${tlsflag[@]}" -G --data-urlencode operationName=GetInteger --data-urlencode "extensions=$ext" "$s://$GRAPHQL_GET/graphql")
	out=$("${get[@]}")
	[ "$out" = '{"errors":[{"message":"PersistedQueryNotFound","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}]}' ] &&
		pass "curl graphql-get unknown hash" || fail "curl graphql-get unknown hash: $out"
	out=$(curl -sS "${tlsflag[@]}" -H 'Content-Type: application/json' -d "{\"query\":\"$doc\",\"extensions\":$ext}" "$s://$GRAPHQL/graphql")
	[ "$out" = '{"data":{"integer":{"value":2147483647}}}' ] && pass "curl graphql POST registration" || fail "curl graphql POST registration: $out"
	out=$("${get[@]}" -w ' %{http_code} %{content_type}' | tr -d '\n')
	[ "$out" = '{"data":{"integer":{"value":2147483647}}} 200 application/json' ] &&
		pass "curl graphql-get persisted query" || fail "curl graphql-get persisted query: $out"
	out=$(curl -sS "${tlsflag[@]}" -G --data-urlencode 'query=mutation { echo(input: {payload: "x"}) { payload } }' -w ' %{http_code} %header{allow}' "$s://$GRAPHQL_GET/graphql" | tr -d '\n')
	[ "$out" = '{"errors":[{"message":"a mutation is not run by GET; send it by POST"}]} 405 POST' ] &&
		pass "curl graphql-get mutation -> 405" || fail "curl graphql-get mutation: $out"
}

# ---------------------------------------------------------------- runs
for mode in clear tls; do
	if [ "$mode" = tls ]; then
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
			-subj /CN=localhost -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
			-keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>/dev/null
		TLS_ENV=(PROTOBENCH_TLS_CERT="$TMP/cert.pem" PROTOBENCH_TLS_KEY="$TMP/key.pem")
		scheme=https
	else
		TLS_ENV=()
		scheme=http
	fi

	echo "# $mode: edge input, third-party clients"
	if start_server "$mode" PROTOBENCH_WORKERS=2; then
		grep -q "tls=$([ "$mode" = tls ] && echo true || echo false)$" "$OUT" && pass "$mode: tls= in listening lines" || fail "$mode: tls= in listening lines"
		run_check "${CHECK_ARGS[@]}" -mode bad
		curl_checks "$scheme"
		stop_server "$mode"
	fi

	echo "# $mode: size limit"
	if start_server "$mode-limit" PROTOBENCH_MAX_REQUEST_BYTES=4096; then
		run_check "${CHECK_ARGS[@]}" -mode limit -limit 4096
		stop_server "$mode-limit"
	fi
done

echo "# configuration errors"
# (the probe's config phase refuses the timeouts, stream limit, workers, failure
# draw, service time and size limit)
for bad in PROTOBENCH_TLS_CERT=/nonexistent; do
	rc=0
	timeout 10 env PROTOBENCH_REST_ADDR=127.0.0.1:0 "$bad" bin/server >"$TMP/bad.out" 2>&1 || rc=$?
	[ "$rc" != 0 ] && [ "$rc" != 124 ] && pass "refuses $bad (exit $rc)" || fail "$bad: exit $rc"
done
rc=0
timeout 10 env PROTOBENCH_REST_ADDR=127.0.0.1:0 PROTOBENCH_DATASET=/nonexistent bin/server >"$TMP/bad.out" 2>&1 || rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] && pass "refuses a missing dataset (exit $rc)" || fail "missing dataset: exit $rc"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
