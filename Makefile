# One task runner; CI calls `make test` verbatim (.ci/run).
# Every target installs what it needs (scripts/setup.sh is idempotent).

CARGO ?= cargo
SERVERS := go python node java-spring cpp-grpc
export PATH := $(shell go env GOPATH 2>/dev/null || echo $(HOME)/go)/bin:$(PATH)

.PHONY: run test setup lint unit contract-check servers-test verify-servers fuzz bench bench-callgrind clean

## The main job: build, run the quick preset on the built-in servers, write the DB and report.
run:
	$(CARGO) run --release -p protobench -- run

## Every test: lint, unit + integration tests, contract drift, each reference
## server, the fuzz targets; in four lanes side by side (scripts/test.sh).
## The same steps one after the other:
## make lint unit contract-check servers-test verify-servers fuzz
test: setup
	bash scripts/test.sh

## Every fuzz target built and run 5 s on its corpus (docs/fuzzing.md).
fuzz:
	bash fuzz/run.sh 5

setup:
	bash scripts/setup.sh

lint:
	$(CARGO) fmt --all -- --check
	bash scripts/import_cycles.sh
	python3 scripts/long_functions.py
	$(CARGO) clippy --workspace --all-targets -- -D warnings

unit:
	$(CARGO) test --workspace

contract-check:
	$(CARGO) run -q -p protobench -- contract check
	bash contract/tests/check_docs.sh

servers-test:
	@set -e; for s in $(SERVERS); do \
	  if [ -x servers/$$s/test.sh ]; then echo "== servers/$$s"; bash servers/$$s/test.sh; fi; \
	done

## protobench verify against every server in servers/, clear and TLS.
verify-servers:
	$(CARGO) build -q -p protobench
	bash scripts/verify-servers.sh

bench:
	bash bench/servers.sh
	bash bench/engine.sh
	bash bench/wire.sh
	bash bench/openloop.sh
	bash bench/aa.sh

## Instructions per call of the engine and the built-in server (valgrind),
## with wrk's and h2load's beside the engine's.
bench-callgrind:
	bash bench/callgrind.sh --profile --peers

clean:
	$(CARGO) clean
