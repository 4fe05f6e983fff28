# Run `make help` for the targets.
SHELL := /usr/bin/env bash
GO ?= go
BIN := bin
BINARIES := variant-controller variantctl porchsim-apiserver
GO_PACKAGES := ./...

.PHONY: all build test bench example generate verify verify-codegen verify-gofmt verify-make-help verify-deps verify-layout verify-sizes vet help

all: build

help: ## Show the targets.
	@grep -E '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

build: ## Build the binaries into bin/.
	@mkdir -p $(BIN)
	@for b in $(BINARIES); do \
		echo "go build -o $(BIN)/$$b ./cmd/$$b"; \
		CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/$$b ./cmd/$$b || exit 1; \
	done

example: ## Render the example fleet offline into out/ (the README's first command).
	$(GO) run ./cmd/variantctl render -f examples/fleet --package blueprints/app=examples/packages/app --out out/

test: ## Run every test with the race detector.
	$(GO) test -race $(GO_PACKAGES)

bench: ## Run the fleet benchmark: 100, 1,000 and 10,000 variants, each phase once (BENCHMARKS.md); minutes, not part of test.
	$(GO) test -run '^$$' -bench BenchmarkFleet -benchtime=1x -timeout 60m ./pkg/offline/...

generate: ## Regenerate deepcopy, clients, listers, informers and CRDs from pkg/apis.
	hack/update-codegen.sh

verify: verify-codegen verify-gofmt verify-make-help verify-deps verify-layout verify-sizes vet ## Generated code current, gofmt clean, go vet clean, make help lists what the README mentions, the controller binary links no kpt, the README's Layout names every directory, no hand-written Go file over 500 lines or function over 80.

verify-codegen:
	hack/verify-codegen.sh

verify-gofmt:
	@out="$$(gofmt -l $$(git ls-files '*.go'; git ls-files --others --exclude-standard '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt: these files need 'gofmt -w':"; echo "$$out"; exit 1; fi

verify-make-help:
	@hack/verify-make-help.sh

verify-deps:
	@hack/verify-deps.sh

verify-layout:
	@hack/verify-layout.sh

verify-sizes:
	@$(GO) run ./hack/sizes

vet:
	$(GO) vet $(GO_PACKAGES)

.PHONY: cluster-up cluster-down

cluster-up: ## Start a local control plane on 127.0.0.1; `hack/local-cluster.sh env` prints how to use it.
	hack/local-cluster.sh up

cluster-down: ## Stop the local control plane and remove its state.
	hack/local-cluster.sh down

.PHONY: soak

SOAK_SEEDS ?= 30
SOAK_DURATION ?= 20s
soak: ## Chaos soak: both controllers on porchsim under faults, restarts and people acting, SOAK_SEEDS seeds of SOAK_DURATION (~11 min); prints the totals (soak-report.md).
	$(GO) test -race -count=1 -timeout 90m -run '^TestSoak$$' ./test/soak -soak.seeds $(SOAK_SEEDS) -soak.duration $(SOAK_DURATION) -soak.report $(CURDIR)/soak-report.md
	@cat soak-report.md

.PHONY: fuzz

FUZZTIME ?= 1m
fuzz: ## Run every fuzz target (Go's native fuzzing) for FUZZTIME each (1m); a failure leaves its input in the package's testdata/fuzz/.
	FUZZTIME=$(FUZZTIME) GO=$(GO) hack/fuzz.sh

.PHONY: sbom

sbom: ## SBOM of the variant-controller binary from the modules it links, as the image builds it: CycloneDX JSON in sbom/ (cyclonedx-gomod v1.10.0 from the Go module proxy).
	hack/sbom.sh

.PHONY: e2e dev-up dev-down

e2e: ## End-to-end tests on a fresh local control plane against porchsim; PORCH_BIN=... PORCH_MANIFESTS=... adds your Porch (builds Kubernetes once, ~15 min cold).
	hack/e2e.sh

dev-up: ## A local cluster with Porch's API, the controller and the example fleet, to try with kubectl.
	hack/dev.sh up

dev-down: ## Stop what dev-up started.
	hack/dev.sh down
