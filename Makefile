# Clink: make targets a newcomer can guess.
GO      ?= go
BIN     := bin
CLINK   := $(BIN)/clink
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: build build-slim demo demo-kafka demo-cluster test test-race logic interop bench fuzz lint generate check-generated clean

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

# Every test: vet, unit and logic tests (fuzz targets run their seed
# corpora), the race detector on the engine, and the demos. Open-ended
# fuzzing is `make fuzz`: a time-boxed fuzz run can fail on its own
# deadline on a loaded machine, which CI must not. The race run also
# poisons recycled source buffers (CLINK_DEBUG_POOL, see vector.Pool), so
# code reading a batch after its release fails there.
test: lint
	$(GO) test -count=1 ./...
	CLINK_DEBUG_POOL=poison $(GO) test -count=1 -race ./engine/... ./kernels/... ./connectors/... ./checkpoint/... ./substrait/logictest/... ./flight/...
	$(MAKE) demo
	$(MAKE) demo-kafka
	$(MAKE) demo-cluster

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
interop:
	cd interop && $(GO) mod tidy && $(GO) vet ./... && $(GO) test -count=1 ./...

# The Go micro-benchmarks, then the Nexmark suite via Kafka (dev broker and
# producer in their own processes; engine and hand-written loops measured
# in the same run), which writes bench/results/ and renders its table into
# docs/performance.md: about 20 minutes on 2 cores in all.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./kernels/ ./engine/op/... ./connectors/formats/json/ ./connectors/nexmark/ ./bench/...
	$(GO) build -ldflags "$(LDFLAGS)" -o $(CLINK) ./cmd/clink
	$(CLINK) bench nexmark --query all --events 2M --via-kafka --runs 3 --state-events 1500k --results bench/results --doc docs/performance.md

fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=60s ./substrait/sql/
	$(GO) test -run='^$$' -fuzz=FuzzDecode -fuzztime=60s ./connectors/formats/json/
	$(GO) test -run='^$$' -fuzz=FuzzOpenPart -fuzztime=60s -fuzzminimizetime=2s ./checkpoint/

# gofmt, go vet, and the tree's hygiene: no tracked build output, go.mod
# tidy (.ci/check-tree.sh).
lint:
	./.ci/check-tree.sh
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...

generate:
	$(GO) test ./connectors/builtin/ -run TestConnectorDocs -update
	$(GO) test ./substrait/logictest/ -run TestLogic -rewrite

check-generated: generate
	git diff --exit-code

clean:
	rm -rf $(BIN) examples/sensors/data examples/sensors/out
