# Sluice build, test and benchmark entry points. Every target installs what it
# needs (Go tools into .tools/, Kafka jars into ~/.cache/sluice) so a fresh
# machine with Go, Java 17+ and Maven runs them as they are.

GO        ?= go
# COMMIT is the revision GET / reports (empty outside a git checkout).
COMMIT    ?= $(shell r=$$(git rev-parse HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null || r=$$r-dirty; echo $$r; })
BIN       := $(CURDIR)/bin
TOOLS     := $(CURDIR)/.tools/bin
export PATH := $(TOOLS):$(PATH)

.PHONY: all build plugins proto test test-unit test-integration bench dev fmt vet lint clean

all: build

## build: the worker at bin/sluice and every bundled plugin under bin/plugins/
build:
	@mkdir -p $(BIN)/plugins
	$(GO) build -ldflags "-X main.Commit=$(COMMIT)" -o $(BIN)/sluice ./host/cmd/sluice
	@for m in $(wildcard plugins/*/main.go); do d=$$(dirname $$m); n=$$(basename $$d); \
	  echo "$(GO) build -o $(BIN)/plugins/sluice-$$n ./$$d"; \
	  $(GO) build -o $(BIN)/plugins/sluice-$$n ./$$d || exit 1; done

## proto: regenerate proto/ Go code offline (protoc from apt, Go plugins pinned)
proto: $(TOOLS)/protoc-gen-go $(TOOLS)/protoc-gen-go-grpc
	@command -v protoc >/dev/null || (apt-get update -qq && apt-get install -y -qq protobuf-compiler)
	protoc -I proto --go_out=proto --go_opt=paths=source_relative \
	  --go-grpc_out=proto --go-grpc_opt=paths=source_relative \
	  proto/sluice/plugin/v1/*.proto

$(TOOLS)/protoc-gen-go:
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
$(TOOLS)/protoc-gen-go-grpc:
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

fmt:
	gofmt -l -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...
	$(GO) vet -tags integration ./...

## test: unit tests (-race) and then the integration suite on a real Kafka broker
test: vet test-unit test-integration

## test-unit: fast tests only; kfake where Kafka is needed
test-unit: build
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) test -race -count=1 -timeout 15m ./...

## test-integration: end-to-end tests on real Apache Kafka (KRaft), real sluice and plugin processes
test-integration: build
	$(GO) test -tags integration -count=1 -timeout 25m -p 1 ./integration/...

## bench: raw franz-go baselines, Sluice's pipelines and Kafka Connect's on real Kafka; BENCH_OUT=file.json for JSON
# Kafka Connect's reference connectors are compiled with javac: a machine
# with only a JRE gets the JDK first, as .ci/run installs what tests need.
bench: build
	@command -v javac >/dev/null || [ -x "$$JAVA_HOME/bin/javac" ] || (apt-get update -qq && apt-get install -y -qq openjdk-17-jdk-headless)
	$(GO) run -tags integration ./integration/cmd/bench

## dev: a pipeline with no Kafka installed (embedded broker, datagen -> topic -> file sink)
dev: build
	$(BIN)/sluice dev --plugin-path $(BIN)/plugins

clean:
	rm -rf $(BIN)
