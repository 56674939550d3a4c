#!/usr/bin/env bash
# Builds the protobench Go server: installs the pinned protoc plugins and
# gqlgen (the `tool` lines of go.mod) into .tools/bin, generates the stubs
# from ../../contract/proto into internal/gen and the GraphQL executor from
# ../../contract/graphql/schema.graphql into internal/graphql/exec, and
# builds bin/server.
# Idempotent; every output is gitignored.
set -euo pipefail
cd "$(dirname "$0")"

TOOLS="$PWD/.tools/bin"
mkdir -p "$TOOLS"
GOBIN="$TOOLS" go install tool

PROTO_DIR=../../contract/proto
MOD=protobench.dev/servers/go
GEN=internal/gen
MAP="Mprotobench/v1/protobench.proto=$MOD/$GEN/protobenchv1,Mprotobench/v1/stream.proto=$MOD/$GEN/protobenchv1,Mhelloworld/helloworld.proto=$MOD/$GEN/helloworld"

rm -rf "$GEN"
mkdir -p "$GEN"
protoc -I "$PROTO_DIR" \
  --plugin=protoc-gen-go="$TOOLS/protoc-gen-go" \
  --plugin=protoc-gen-go-grpc="$TOOLS/protoc-gen-go-grpc" \
  --go_out=. --go_opt="module=$MOD,$MAP" \
  --go-grpc_out=. --go-grpc_opt="module=$MOD,$MAP" \
  protobench/v1/protobench.proto protobench/v1/stream.proto helloworld/helloworld.proto

# The GraphQL executor, from ../../contract/graphql/schema.graphql
# (internal/graphql/gqlgen.yml; gqlgen pinned by go.mod's `tool` line).
go tool gqlgen generate --config internal/graphql/gqlgen.yml

go build -trimpath -o bin/server ./cmd/server
