#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine, idempotently:
# protoc (stub generation for the Go server), chromium (HTML report test),
# grpcurl and ghz (third-party gRPC clients; ghz is grpc_bench's), openssl/curl
# (server tests).
# Toolchains themselves (Rust, Go, Java+Maven, Python, Node) are prerequisites.
set -euo pipefail

need_apt=()
command -v protoc >/dev/null || need_apt+=(protobuf-compiler)
command -v chromium >/dev/null || need_apt+=(chromium)
command -v openssl >/dev/null || need_apt+=(openssl)
command -v curl >/dev/null || need_apt+=(curl)
command -v jq >/dev/null || need_apt+=(jq)
if ((${#need_apt[@]})); then
  echo "setup: apt-get install ${need_apt[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

GOBIN_DIR="$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin"
if ! command -v grpcurl >/dev/null && [ ! -x "$GOBIN_DIR/grpcurl" ] && command -v go >/dev/null; then
  echo "setup: go install grpcurl"
  go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3
fi
if ! command -v ghz >/dev/null && [ ! -x "$GOBIN_DIR/ghz" ] && command -v go >/dev/null; then
  echo "setup: go install ghz"
  go install github.com/bojand/ghz/cmd/ghz@v0.120.0
fi
echo "setup: ok"
