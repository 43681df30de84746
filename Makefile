# Clink: make targets a newcomer can guess.
GO      ?= go
BIN     := bin
CLINK   := $(BIN)/clink
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: build build-slim demo demo-kafka demo-cluster demo-tutorial test test-quick logic interop bench fuzz lint generate check-generated clean

# The test runner: gotestsum, built from its own module (.ci/tools, which
# pins its version) into the cache .ci/install-deps.sh fills. Output: a
# line per package, a failed test's output in full, then a summary that
# lists every skipped test with its reason and ends "DONE N tests, M
# skipped". The events go to bin/test-NAME.json, which .ci/tools/skips
# reads: it fails the run when a skip names a required component.
TOOLS     := $(or $(CLINK_TOOLS_CACHE),$(HOME)/.cache/clink-tools)
GOTESTSUM := $(TOOLS)/gotestsum-$(shell awk '$$1 == "gotest.tools/gotestsum" { print $$2 }' .ci/tools/go.mod)/gotestsum
GOTESTSUM_FLAGS := --format pkgname-and-test-fails --format-icons text --format-hide-empty-pkg
# $(call gotest,NAME,ARGS) runs go test -count=1 ARGS; $(call skips,NAME
# ...,FLAGS) judges the skips of the runs named.
gotest = $(GOTESTSUM) $(GOTESTSUM_FLAGS) --jsonfile $(abspath $(BIN))/test-$(1).json -- -count=1 $(2)
skips  = $(GO) build -C $(abspath .ci/tools) -o $(abspath $(BIN))/skips ./skips && $(abspath $(BIN))/skips $(2) $(foreach n,$(1),$(abspath $(BIN))/test-$(n).json)
# Under these a test whose server is missing fails instead of skipping.
REQUIRE := CLINK_REQUIRE_KCAT=1 CLINK_REQUIRE_CLICKHOUSE=1 CLINK_REQUIRE_POSTGRES=1 CLINK_REQUIRE_OBJECTSTORES=1 CLINK_REQUIRE_NPM=1 CLINK_REQUIRE_OTELCOL=1 CLINK_REQUIRE_CHROMIUM=1

# The whole product is one binary (every connector, both cluster roles,
# the state tools, the dev broker). `make build-slim` builds it without
# Iceberg, which saves every start iceberg-go's initialization
# (docs/performance.md#one-binary).
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(CLINK) ./cmd/clink

build-slim:
	$(GO) build -tags slim -ldflags "$(LDFLAGS)" -o $(BIN)/clink-slim ./cmd/clink

# The sensor pipeline, embedded: generate, run, verify (prints PASS).
demo: build
	CLINK=$(abspath $(CLINK)) examples/sensors/run.sh

# The sensor pipeline through Kafka: dev broker, produce, run, verify.
demo-kafka: build
	CLINK=$(abspath $(CLINK)) KAFKA_PORT=0 examples/sensors/kafka/run.sh

# Kafka to ClickHouse on a Coordinator and a Worker, the Worker SIGKILLed
# mid-stream; the windows read back from ClickHouse are verified (~1 min).
demo-cluster: build
	CLINK=$(abspath $(CLINK)) examples/kafka-to-clickhouse/run.sh

# Every test (docs/testing.md). First .ci/install-deps.sh installs what
# the tests need (kcat, ClickHouse, PostgreSQL with apt; MinIO,
# fake-gcs-server, Azurite and gotestsum into the cache), or stops naming
# what is missing. Then: lint; unit and logic tests (fuzz targets run their
# seed corpora); the race detector on the engine; the demos; interop; the
# tutorial walk-through (after interop, whose DuckDB build it reuses). The
# tests run with CLINK_REQUIRE_*=1, so a missing server fails them, and a
# skip whose reason names one fails the run too. Open-ended fuzzing is
# `make fuzz`: a time-boxed fuzz run can fail on its own deadline on a
# loaded machine, which CI must not. The race run also poisons recycled
# source buffers (CLINK_DEBUG_POOL, see vector.Pool), so code reading a
# batch after its release fails there.
test:
	./.ci/install-deps.sh
	$(MAKE) lint
	@mkdir -p $(BIN)
	$(REQUIRE) $(call gotest,unit,./...)
	$(call skips,unit)
	CLINK_DEBUG_POOL=poison $(REQUIRE) $(call gotest,race,-race ./engine/... ./kernels/... ./connectors/... ./checkpoint/... ./substrait/logictest/... ./flight/...)
	$(call skips,race)
	$(MAKE) demo
	$(MAKE) demo-kafka
	$(MAKE) demo-cluster
	$(REQUIRE) $(MAKE) interop
	$(MAKE) demo-tutorial
	@$(call skips,unit race interop tutorial,-title "make test: PASS (lint, unit, race, demos, interop, tutorial)")

# A quick check while working, NOT the full test: lint and go test ./...
# without installing anything and without CLINK_REQUIRE_*, so the tests
# of a missing server skip (each listed with its reason). Its last line
# says it is not the full test and counts the skips. It builds only
# gotestsum into the cache when missing. PKGS=./connectors/... narrows it.
PKGS ?= ./...
test-quick: lint | $(GOTESTSUM)
	@mkdir -p $(BIN)
	@$(call gotest,quick,$(PKGS)); rc=$$?; $(call skips,quick,-quick); exit $$rc

$(GOTESTSUM):
	cd .ci/tools && $(GO) build -o $@ gotest.tools/gotestsum

# The by-hand tutorial (examples/kafka-to-clickhouse/README.md): its sh
# blocks run as written, in order, on the tutorial's fixed ports, and each
# block's output is checked against the text block after it (~2 min).
demo-tutorial: | $(GOTESTSUM)
	@mkdir -p $(BIN)
	CLINK_TUTORIAL=1 $(call gotest,tutorial,-timeout 10m -run TestREADME ./examples/kafka-to-clickhouse/)

# The SQL logic files, each query straight (batch sizes 1, 7, 1024, a
# random one; parallelism 1, 2, 3), crashed at a checkpoint and restored at
# the same parallelism, and restored at another; -v logs, per file, which
# ways its queries ran and the restores a plan does not support.
logic:
	$(GO) test -count=1 ./substrait/logictest/ -run TestLogic -v

# Interop with other engines (DuckDB reads exported state). A module of its
# own (interop/go.mod): DuckDB is cgo with large prebuilt libraries, kept
# out of the main module; a cold build takes about 3 minutes on 2 cores.
# It uses the main module through a replace directive, so tidy first: a
# dependency the main module raised is raised there too.
interop: | $(GOTESTSUM)
	@mkdir -p $(BIN)
	cd interop && $(GO) mod tidy && $(GO) vet ./... && $(call gotest,interop,./...)
	$(call skips,interop)

# The Go micro-benchmarks, then the Nexmark suite via Kafka (dev broker and
# producer in their own processes; engine and hand-written loops measured
# in the same run), which writes bench/results/ and renders its table into
# docs/performance.md, and the checkpoint benchmark (overhead, pauses,
# delta size, restore: docs/performance.md#checkpoints): about 25 minutes
# on 2 cores in all.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./kernels/ ./engine/op/... ./connectors/formats/... ./connectors/nexmark/ ./bench/...
	$(GO) build -ldflags "$(LDFLAGS)" -o $(CLINK) ./cmd/clink
	$(CLINK) bench checkpoint
	$(CLINK) bench formats
	$(CLINK) bench nexmark --query all --events 2M --via-kafka --runs 3 --state-events 1500k --results bench/results --doc docs/performance.md

fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=60s ./substrait/sql/
	$(GO) test -run='^$$' -fuzz=FuzzDecode -fuzztime=60s ./connectors/formats/json/
	$(GO) test -run='^$$' -fuzz=FuzzDecode -fuzztime=60s ./connectors/formats/avro/
	$(GO) test -run='^$$' -fuzz=FuzzDecode -fuzztime=60s ./connectors/formats/protobuf/
	$(GO) test -run='^$$' -fuzz=FuzzOpenPart -fuzztime=60s -fuzzminimizetime=2s ./checkpoint/

# gofmt, go vet, the test tools' vet and tests (.ci/tools), and the
# tree's hygiene: no tracked build output, go.mod tidy (.ci/check-tree.sh).
lint:
	./.ci/check-tree.sh
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	cd .ci/tools && $(GO) vet ./... && $(GO) test -count=1 ./...

generate:
	$(GO) test ./connectors/builtin/ -run TestConnectorDocs -update
	$(GO) test ./substrait/logictest/ -run TestLogic -rewrite

check-generated: generate
	git diff --exit-code

clean:
	rm -rf $(BIN) examples/sensors/data examples/sensors/out
