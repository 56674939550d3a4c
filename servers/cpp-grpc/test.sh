#!/usr/bin/env bash
# Tests the protobench C++ gRPC server end to end, on 127.0.0.1 only: builds
# it and its test tools, runs the unit tests (bin/unit_test), then starts it
# (clear text, then TLS with a throw-away CA and leaf certificate) and checks,
# with bin/check (a grpc++ client) and grpcurl when installed: edge inputs,
# spin holding the one handling thread, the idle timeout for a long call,
# draining on SIGTERM (a subscription, no new connection), the drain limit, a
# clear-text client refused by the TLS listener and refused configurations,
# and the streams (protobench.v1.Streams): refused requests and messages,
# poll pages, the upload's sums, the schedule, the injected failure per
# stream, an upload of 1000001 messages, a subscription cut at the drain
# limit. Every contract vector, clear and TLS, is scripts/verify-servers.sh
# cpp-grpc's (protobench verify, ghz). Bad input, HTTP/2 floods, idle
# connections, TLS (ALPN, handshake and idle timeouts), the stream limit,
# gRPC framing, the size limit, descriptor exhaustion, the failure draw, the
# service time and a call in flight at SIGTERM are the cross-stack probe's
# (contract/tests/probe.sh cpp-grpc). Prints `N passed, M failed` last and
# exits non-zero on any failure. Every wait is bounded.
set -euo pipefail
cd "$(dirname "$0")"

CONTRACT=../../contract
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

# run_counted LABEL COMMAND...: runs a command that prints `ok`/`FAIL` lines
# and `check: N passed, M failed`, and adds its counts.
run_counted() {
	local label=$1 out="$TMP/check.out" rc=0
	shift
	timeout 300 "$@" >"$out" 2>&1 || rc=$?
	grep -v "^check: " "$out" || true
	local line p f
	line=$(grep '^check: ' "$out" || true)
	if [ -z "$line" ]; then
		fail "$*: no result line (exit $rc): $(tail -c 300 "$out")"
		return
	fi
	p=$(sed -E 's/^check: ([0-9]+) passed, ([0-9]+) failed$/\1/' <<<"$line")
	f=$(sed -E 's/^check: ([0-9]+) passed, ([0-9]+) failed$/\2/' <<<"$line")
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	echo "     ($label: $p passed, $f failed)"
}

# ---------------------------------------------------------------- build
echo "# build"
start_build=$(date +%s)
nice -n 10 make -j2 test-bins >"$TMP/build.log" 2>&1 || { tail -30 "$TMP/build.log"; fail "make test-bins"; echo "$PASSED passed, $FAILED failed"; exit 1; }
pass "make test-bins ($(($(date +%s) - start_build)) s)"

echo "# unit tests"
run_counted "unit tests" bin/unit_test "$CONTRACT/data/dataset.json"

# ---------------------------------------------------------------- server control
TLS_ENV=()
CHECK_TLS=()

# start_server NAME VAR=VALUE...: starts bin/server on 127.0.0.1:0 (plus
# TLS_ENV and the given variables) and waits for its listening line.
start_server() {
	local name=$1 i; shift
	OUT="$TMP/$name.out"
	ERR="$TMP/$name.err"
	env PROTOBENCH_GRPC_ADDR=127.0.0.1:0 "${TLS_ENV[@]}" "$@" bin/server >"$OUT" 2>"$ERR" &
	SERVER_PID=$!
	for i in $(seq 1 100); do
		grep -q '^listening ' "$OUT" 2>/dev/null && break
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	ADDR=$(sed -nE 's/^listening protocol=grpc addr=([^ ]+) .*/\1/p' "$OUT")
	if [ -z "$ADDR" ]; then
		fail "$name: server did not start: $(cat "$OUT" "$ERR" | head -c 500)"
		return 1
	fi
	pass "$name: server started on $ADDR"
	return 0
}

# stop_server NAME: SIGTERM, then expects exit 0 within 15 s, stdout holding
# only the listening line and stderr nothing.
stop_server() {
	local name=$1 i rc=0
	kill -TERM "$SERVER_PID" 2>/dev/null || true # may have exited already (drain tests)
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
	local want_tls=false
	[ ${#TLS_ENV[@]} -gt 0 ] && want_tls=true
	if [ "$(wc -l <"$OUT")" = 1 ] && grep -qE "^listening protocol=grpc addr=127\.0\.0\.1:[1-9][0-9]* tls=$want_tls$" "$OUT"; then
		pass "$name: stdout is one listening line"
	else
		fail "$name: unexpected stdout: $(head -c 300 "$OUT")"
	fi
	[ ! -s "$ERR" ] && pass "$name: nothing logged" || fail "$name: stderr: $(head -c 300 "$ERR")"
}

check() { run_counted "check $1" bin/check --target "$ADDR" "${CHECK_TLS[@]}" "$@"; }

# A third-party client: grpcurl (from the .proto files; this server has no
# reflection), when installed.
third_party() {
	local mode=$1 grpcurl out
	grpcurl=$(command -v grpcurl || echo "$HOME/go/bin/grpcurl")
	if [ -x "$grpcurl" ]; then
		local g=(-import-path "$CONTRACT/proto" -proto protobench/v1/protobench.proto -proto helloworld/helloworld.proto -max-msg-sz 67108864)
		if [ "$mode" = tls ]; then g+=(-cacert "$TMP/ca.pem" -servername localhost); else g+=(-plaintext); fi
		out=$(timeout 30 "$grpcurl" "${g[@]}" -d @ "$ADDR" helloworld.Greeter/SayHello <"$CONTRACT/vectors/grpcbench.complex/request.json" 2>&1 || true)
		grep -q '"l": "444325235223"' <<<"$out" && grep -q '"c1": "of course"' <<<"$out" && pass "grpcurl SayHello" || fail "grpcurl SayHello: ${out:0:300}"
		out=$(timeout 30 "$grpcurl" "${g[@]}" -d '{"name":"file-3m4"}' "$ADDR" protobench.v1.Bench/GetFile 2>&1 | grep -c '"content"' || true)
		[ "$out" = 1 ] && pass "grpcurl GetFile 3.4 MB" || fail "grpcurl GetFile 3.4 MB"
		out=$(timeout 30 "$grpcurl" "${g[@]}" -d '{"name":"nope"}' "$ADDR" protobench.v1.Bench/GetFile 2>&1 || true)
		grep -q 'Code: NotFound' <<<"$out" && pass "grpcurl unknown file -> NotFound" || fail "grpcurl unknown file: $out"
		# The streams, from stream.proto.
		g+=(-proto protobench/v1/stream.proto)
		out=$(printf '{"seq":1,"payload":"a"}\n{"seq":2,"payload":"b"}\n' | timeout 30 "$grpcurl" "${g[@]}" -d @ "$ADDR" protobench.v1.Streams/EchoStream 2>&1 || true)
		[ "$(tr -d ' \n' <<<"$out")" = '{"seq":1,"payload":"a"}{"seq":2,"payload":"b"}' ] && pass "grpcurl EchoStream" || fail "grpcurl EchoStream: ${out:0:300}"
		out=$(timeout 30 "$grpcurl" "${g[@]}" -d '{"count":3,"items":1,"rate":100}' "$ADDR" protobench.v1.Streams/Subscribe 2>&1 || true)
		[ "$(grep -c '"scheduledNs"' <<<"$out")" = 3 ] && grep -q '"seq": 3' <<<"$out" && pass "grpcurl Subscribe 3 events" || fail "grpcurl Subscribe: ${out:0:300}"
		out=$(printf '{"seq":1,"payload":"foo"}\n{"seq":2,"payload":"bar"}\n' | timeout 30 "$grpcurl" "${g[@]}" -d @ "$ADDR" protobench.v1.Streams/Upload 2>&1 || true)
		# FNV-1a("foobar") = 0xbf9cf968 = 3214735720.
		[ "$(tr -d ' \n' <<<"$out")" = '{"count":2,"bytes":"6","checksum":3214735720}' ] && pass "grpcurl Upload" || fail "grpcurl Upload: ${out:0:300}"
		out=$(timeout 30 "$grpcurl" "${g[@]}" -d '{"count":1000001}' "$ADDR" protobench.v1.Streams/Subscribe 2>&1 || true)
		grep -q 'Code: InvalidArgument' <<<"$out" && grep -q 'count is 1000001, expected 1..=1000000' <<<"$out" \
			&& pass "grpcurl Subscribe count 1000001 -> InvalidArgument" || fail "grpcurl Subscribe count 1000001: $out"
	else
		echo "skip grpcurl (not installed)"
	fi
}

# ---------------------------------------------------------------- runs
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=cpp-grpc-test-ca \
	-keyout "$TMP/ca-key.pem" -out "$TMP/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout "$TMP/key.pem" -out "$TMP/leaf.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$TMP/ext.cnf"
openssl x509 -req -in "$TMP/leaf.csr" -CA "$TMP/ca.pem" -CAkey "$TMP/ca-key.pem" -CAcreateserial \
	-days 1 -extfile "$TMP/ext.cnf" -out "$TMP/cert.pem" 2>/dev/null

for mode in clear tls; do
	if [ "$mode" = tls ]; then
		TLS_ENV=(PROTOBENCH_TLS_CERT="$TMP/cert.pem" PROTOBENCH_TLS_KEY="$TMP/key.pem")
		CHECK_TLS=(--ca "$TMP/ca.pem")
	fi

	echo "# $mode: edge input, streams, grpcurl"
	if start_server "$mode" PROTOBENCH_WORKERS=2; then
		check bad
		check streams 8388608
		if [ "$mode" = clear ]; then # ~5 s: once (the exact boundary is the unit tests')
			out=$(timeout 120 bin/check --target "$ADDR" upload-many 1000001 2>&1 || true)
			[ "$out" = 'status RESOURCE_EXHAUSTED "more than 1000000 messages on one stream" count 0' ] \
				&& pass "clear: the 1000001st message of an upload -> RESOURCE_EXHAUSTED" || fail "clear: upload of 1000001 messages: $out"
		fi
		third_party "$mode"
		if [ "$mode" = tls ]; then # ALPN and the stream limit over TLS: the probe's tls phase
			out=$(timeout 10 bin/check --target "$ADDR" call 2>&1 || true)
			grep -q '^status OK' <<<"$out" && fail "tls: a clear-text client was answered" || pass "tls: a clear-text client gets no answer"
		fi
		stop_server "$mode"
	fi

	echo "# $mode: failure per stream"
	if start_server "$mode-failure-all" PROTOBENCH_FAILURE_RATE=1; then
		check streams-failure
		stop_server "$mode-failure-all"
	fi

	echo "# $mode: spin holds the handling thread"
	if start_server "$mode-spin" PROTOBENCH_SERVICE_TIME=spin:20ms PROTOBENCH_WORKERS=1; then
		check spin 20 4
		stop_server "$mode-spin"
	fi

	echo "# $mode: idle timeout"
	# A call sleeping 3 s is a request in progress: its connection stays open
	# and it completes (idle connections: the probe's h2flood and tls phases).
	if start_server "$mode-idle" PROTOBENCH_IDLE_TIMEOUT=2s PROTOBENCH_SERVICE_TIME=sleep:3s; then
		out=$(timeout 20 bin/check --target "$ADDR" "${CHECK_TLS[@]}" call 2>&1 || true)
		grep -q '^status OK' <<<"$out" && pass "$mode: a call in progress longer than the idle timeout completes" || fail "$mode: long call: $out"
		stop_server "$mode-idle"
	fi

	echo "# $mode: draining"
	# A subscription (30 events at 10/s after a 1.5 s sleep) in flight when
	# SIGTERM arrives runs to its end; meanwhile the listener is closed (a
	# call in flight: the probe's service phase).
	if start_server "$mode-drain" PROTOBENCH_SERVICE_TIME=sleep:1500ms; then
		timeout 30 bin/check --target "$ADDR" "${CHECK_TLS[@]}" subscribe 30 10 >"$TMP/drain.sub" 2>&1 &
		sp=$!
		sleep 0.5
		kill -TERM "$SERVER_PID"
		sleep 0.3
		if python3 -c "import socket,sys; h,p=sys.argv[1].rsplit(':',1); socket.create_connection((h,int(p)),timeout=2)" "$ADDR" 2>/dev/null; then
			fail "$mode: a new connection was accepted after SIGTERM"
		else
			pass "$mode: no new connection accepted after SIGTERM"
		fi
		wait $sp || true
		grep -qE '^status OK .* events 30$' "$TMP/drain.sub" && pass "$mode: the subscription in flight at SIGTERM completed" || fail "$mode: subscription in flight at SIGTERM: $(cat "$TMP/drain.sub")"
		stop_server "$mode-drain"
	fi
done

echo "# drain deadline"
# A call that would sleep 15 s when SIGTERM arrives: the server stops within
# the 10 s drain limit (exit 0) and the call is not answered OK. So does a
# subscription of 1000 events at 10/s (a grpc::Alarm between events), which
# ends then with an error status.
TLS_ENV=()
if start_server drain-limit PROTOBENCH_SERVICE_TIME=sleep:15s; then
	timeout 30 bin/check --target "$ADDR" call >"$TMP/drain.call" 2>&1 &
	cp=$!
	timeout 60 bin/check --target "$ADDR" subscribe 1000 10 >"$TMP/drain.sub" 2>&1 &
	sp=$!
	sleep 0.5
	t0=$(date +%s.%N)
	stop_server drain-limit
	secs=$(python3 -c "import time,sys; print(round(time.time() - float(sys.argv[1]), 1))" "$t0")
	python3 -c "import sys; sys.exit(0 if 9 <= $secs <= 12 else 1)" && pass "drain: stopped after $secs s (10 s limit)" || fail "drain: stopped after $secs s"
	wait $cp || true
	grep -q '^status OK' "$TMP/drain.call" && fail "drain: the 15 s call was answered OK" || pass "drain: the call past the limit ended: $(cat "$TMP/drain.call")"
	wait $sp || true
	# Service time comes before the first event (15 s), so the stream holds none.
	grep -qE '^status (UNAVAILABLE|CANCELLED) .* events 0$' "$TMP/drain.sub" && pass "drain: the subscription ended: $(cat "$TMP/drain.sub")" \
		|| fail "drain: subscription: $(cat "$TMP/drain.sub")"
fi

echo "# configuration errors"
refused() { # VAR=VALUE...: the server must exit non-zero at once, naming the first variable
	local rc=0 name=${1%%=*}
	timeout 10 env PROTOBENCH_GRPC_ADDR=127.0.0.1:0 "$@" bin/server >"$TMP/bad.out" 2>"$TMP/bad.err" || rc=$?
	if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "$name" "$TMP/bad.err" && [ ! -s "$TMP/bad.out" ]; then
		pass "refuses $* (exit $rc)"
	else
		fail "$*: exit $rc, stderr: $(head -c 200 "$TMP/bad.err")"
	fi
}
# The probe's config phase refuses WORKERS=0, FAILURE_RATE=2, FAILURE_SEED=-1,
# SERVICE_TIME=nap:1ms and sleep:5, MAX_REQUEST_BYTES=x, IDLE_TIMEOUT=0s,
# READ_TIMEOUT=soon, MAX_STREAMS=0 and more; these are the others.
for bad in PROTOBENCH_WORKERS=x PROTOBENCH_FAILURE_RATE=nan PROTOBENCH_MAX_REQUEST_BYTES=0 \
	PROTOBENCH_IDLE_TIMEOUT=60 PROTOBENCH_MAX_STREAMS=x PROTOBENCH_GRPC_ADDR=nowhere \
	PROTOBENCH_REST_ADDR=127.0.0.1:0 PROTOBENCH_DATASET=/nonexistent PROTOBENCH_TLS_CERT=/nonexistent; do
	if [ "$bad" = PROTOBENCH_TLS_CERT=/nonexistent ]; then
		refused "$bad" PROTOBENCH_TLS_KEY=/nonexistent
	else
		refused "$bad"
	fi
done
printf 'not a certificate\n' >"$TMP/bad.pem"
refused PROTOBENCH_TLS_CERT="$TMP/bad.pem" PROTOBENCH_TLS_KEY="$TMP/bad.pem"
# An address already in use.
if start_server busy; then
	refused PROTOBENCH_GRPC_ADDR="$ADDR"
	stop_server busy
fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
