#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine, idempotently:
# protoc (stub generation for the Go server), Debian's grpc++/protobuf C++
# development packages and build tools (servers/cpp-grpc), iproute2, nftables
# and toxiproxy (emulated networks, docs/network.md), chromium (HTML report test),
# grpcurl and ghz (third-party gRPC clients; ghz is grpc_bench's), buf (Connect
# and gRPC-Web), openssl/curl
# (server tests), Python's websockets (a stock WebSocket client), cargo-fuzz
# with a nightly toolchain (fuzz/).
# Toolchains themselves (Rust, Go, Java+Maven, Python, Node) are prerequisites.
set -euo pipefail

need_apt=()
command -v protoc >/dev/null || need_apt+=(protobuf-compiler)
command -v grpc_cpp_plugin >/dev/null || need_apt+=(protobuf-compiler-grpc)
command -v g++ >/dev/null || need_apt+=(g++)
command -v make >/dev/null || need_apt+=(make)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
pkg-config --exists grpc++ 2>/dev/null || need_apt+=(libgrpc++-dev)
pkg-config --exists protobuf 2>/dev/null || need_apt+=(libprotobuf-dev)
command -v ip >/dev/null || need_apt+=(iproute2)
command -v nft >/dev/null || need_apt+=(nftables)
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
# buf curl: the third-party Connect and gRPC-Web client (contract/tests/buf_check.sh)
if ! command -v buf >/dev/null && [ ! -x "$GOBIN_DIR/buf" ] && command -v go >/dev/null; then
  echo "setup: go install buf"
  go install github.com/bufbuild/buf/cmd/buf@v1.75.0
fi
# toxiproxy (delay and jitter where the kernel has no netem): its commands are
# cmd/server and cmd/cli, installed under the names the runner looks for.
if ! command -v toxiproxy-server >/dev/null && [ ! -x "$GOBIN_DIR/toxiproxy-server" ] && command -v go >/dev/null; then
  echo "setup: go install toxiproxy"
  tmp="$(mktemp -d)"
  GOBIN="$tmp" go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0 github.com/Shopify/toxiproxy/v2/cmd/cli@v2.5.0
  mkdir -p "$GOBIN_DIR"
  mv "$tmp/server" "$GOBIN_DIR/toxiproxy-server"
  mv "$tmp/cli" "$GOBIN_DIR/toxiproxy-cli"
  rmdir "$tmp"
fi
# Python's websockets: the stock WebSocket client of servers/rust/tests/stream_peers.rs.
if command -v python3 >/dev/null && ! python3 -c 'import websockets' 2>/dev/null; then
  echo "setup: pip install websockets"
  python3 -m pip install --quiet 'websockets==17.4'
fi
# cargo-fuzz and a nightly toolchain: the fuzz targets (fuzz/, docs/fuzzing.md),
# which `make test` builds and runs briefly.
if command -v rustup >/dev/null && ! rustup toolchain list | grep -q '^nightly'; then
  echo "setup: rustup toolchain install nightly"
  rustup toolchain install nightly --profile minimal
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "setup: cargo install cargo-fuzz"
  cargo install --locked cargo-fuzz@0.13.2
fi
echo "setup: ok"
