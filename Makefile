# cachetune: make targets for everything. `make help` lists them.
GO        ?= go
# Two API servers at most run at once (one per test package in flight).
TESTFLAGS ?= -race -count=1 -timeout 60m
# golangci-lint, pinned: `make lint` installs this version into bin/ with
# go install when bin/ does not hold it (CI starts from a clean checkout with
# Go and the module proxy only).
GOLANGCI_VERSION := v2.15.0
GOLANGCI         := $(CURDIR)/bin/golangci-lint-$(GOLANGCI_VERSION)

# The Kubernetes version, pinned here and nowhere else: every go.mod requires
# k8s.io/kubernetes at v$(KUBE_VERSION) and the staging modules (k8s.io/api,
# apimachinery, client-go, apiextensions-apiserver, ...) at v0.MINOR.PATCH of
# it. `make kube-version-check` (part of lint) fails on any other version, so a
# bump is this line plus `go get` in each module. The one exception is
# KUBE_VERSION_EXCEPTIONS: modules not published at this patch.
KUBE_VERSION := 1.37.2
KUBE_STAGING := v0.$(word 2,$(subst ., ,$(KUBE_VERSION))).$(word 3,$(subst ., ,$(KUBE_VERSION)))
KUBE_MINOR   := v[01]\.$(word 2,$(subst ., ,$(KUBE_VERSION)))\.
# k8s.io/sample-controller (the copied upstream example's module) is not
# published at v0.37.2.
KUBE_VERSION_EXCEPTIONS := k8s.io/sample-controller v0.37.1
GO_MODULES = . tools/kubeapiserver internal/upstream/samplecontroller $(CR_DIR)

# The version the next release tags (docs/releasing.md), chosen here and
# nowhere else: the nested modules require the root module at it (`make
# release-version` writes it into their go.mod), README's go get lines name it,
# and `make release-check` publishes this checkout's modules at it. Both are
# checked: `make release-version-check` (part of lint) and the release check.
RELEASE_VERSION := v0.1.0
# The nested modules that require the root module. Each keeps a
# `replace => ../` for development in this checkout, which Go ignores when the
# module is a dependency.
NESTED_REQUIRING_ROOT := $(CR_DIR) internal/upstream/samplecontroller

# The controller-runtime integration is a nested module, so that the library
# module never requires controller-runtime; its tests run on envtest started
# from kube-apiserver and etcd binaries built here (nothing is downloaded).
CR_DIR         := controllerruntime
ENVTEST_ASSETS := $(CURDIR)/bin/envtest

.PHONY: help test test-short bench bench-scale bench-cr bench-events bench-sync conformance mutants resilience listcost golden apiserver envtest-assets example example-cr lint tidy-check golangci kube-version-check release-check release-version release-version-check clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

test: apiserver envtest-assets ## unit and integration tests on a real kube-apiserver, with -race; then the controller-runtime module's on envtest; every planted defect of internal/mutants still plants and builds
	$(GO) test $(TESTFLAGS) ./...
	$(GO) run ./internal/mutants/cmd/mutants -check
	cd internal/upstream/samplecontroller && $(GO) test $(TESTFLAGS) ./...
	cd $(CR_DIR) && KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) test $(TESTFLAGS) ./...

test-short: ## unit tests only: nothing that needs the API server
	$(GO) test -short -race -count=1 -run '^(Test|Fuzz)' ./...

bench: apiserver ## the main job: cachebench run on the local kube-apiserver with the standard dataset (report in out/)
	$(GO) run ./cmd/cachebench run

# The modes of bench-scale: the library pairs that fit in memory at 100,000
# Pods (client-go's unstripped typed cache would need about 10 GiB at its re-list
# peak there), and leanstore's lean modes. The local server runs without its
# watch cache here: with it, it holds about two decoded copies of every Pod
# (its store and its event history, about 90 KB per Pod in its heap profile at
# 40,000 Pods), which at 100,000 Pods outgrows a 24 GiB machine beside the
# client; lists and streaming lists are then served from etcd. It also runs
# with GOGC=100 (300 otherwise), set in its environment alone: the measured
# children run with GOGC unset in both targets, so that leanstore's heap bound,
# which yields to a GOGC the user set, applies as it does by default.
BENCH_SCALE_MODES  ?= client-go/typed-strip-mf-la/stream,leanstore/typed-strip-mf-la/stream,client-go/metadata-strip-mf/stream,leanstore/typed-lean/stream,leanstore/metadata-lean/stream
BENCH_SCALE_SIZES  ?= 1000,10000,30000,100000
BENCH_SCALE_SERVER ?= --watch-cache=false

bench-scale: apiserver ## scale curves: BENCH_SCALE_MODES at 1,000 to 100,000 Pods, the dataset grown from one size to the next (about an hour; report in out/scale/)
	$(GO) run ./cmd/cachebench run --apiserver-gogc 100 --sizes $(BENCH_SCALE_SIZES) --modes '$(BENCH_SCALE_MODES)' --apiserver-args '$(BENCH_SCALE_SERVER)' --out-dir out/scale

# The modes of bench-cr: controller-runtime's Manager cache in each of its
# configurations, beside the client-go and leanstore modes it compares with.
BENCH_CR_MODES ?= client-go/typed/stream,client-go/typed-strip-mf/stream,client-go/typed-strip-mf-la/stream,leanstore/typed-strip-mf-la/stream,leanstore/typed-lean/stream,controller-runtime/*

bench-cr: apiserver ## the controller-runtime modes beside client-go and leanstore on the standard dataset (builds bin/cachebench-cr; about 10 minutes; report in out/cr/)
	$(GO) run ./cmd/cachebench run --modes '$(BENCH_CR_MODES)' --out-dir out/cr

# The modes of bench-events: client-go's typed and metadata-only caches and
# every leanstore mode, streaming (the list path does not change how events
# are handled). Each mode syncs the standard dataset, then a writer of its own
# changes Pods at each rate for BENCH_EVENTS_STEP. The rates are ones the
# local server keeps up with on 2 CPUs beside the writer and the measured
# process (asked 1,000 and 5,000 writes/s, it achieved 161 to 436: such steps
# measure the server's queue, not the caches). CPU per event moves between
# runs of the same mode by as much as the modes differ, so every mode runs
# BENCH_EVENTS_ROUNDS times, the modes in turns (the order reversed every
# other round), and the summary gives each step's medians and their ratios to
# client-go's cache of the same kind. In the order given here, each client-go
# cache sits between the leanstore caches of its kind.
BENCH_EVENTS_MODES ?= leanstore/typed-strip-mf-la/stream,client-go/typed-strip-mf-la/stream,leanstore/typed-lean/stream,leanstore/metadata-strip-mf-la/stream,client-go/metadata-strip-mf/stream,leanstore/metadata-lean/stream,leanstore/typed-strip-mf/stream,client-go/typed/stream,leanstore/typed-encoded/stream,leanstore/metadata-strip-mf/stream,client-go/metadata/stream,leanstore/metadata-encoded/stream,leanstore/typed-strip-mf-la-nointern/stream,leanstore/typed-strip-mf-la-nobound/stream
BENCH_EVENTS_RATES ?= 100,200
BENCH_EVENTS_STEP ?= 20s
BENCH_EVENTS_ROUNDS ?= 3

bench-events: apiserver ## the steady state: what a watch event costs each mode at BENCH_EVENTS_RATES writes/s, BENCH_EVENTS_ROUNDS rounds (about 40 minutes; report in out/events/, table in out/events.txt)
	@mkdir -p out/events
	$(GO) run ./cmd/cachebench run --relists 0 --events $(BENCH_EVENTS_RATES) --event-step $(BENCH_EVENTS_STEP) --rounds $(BENCH_EVENTS_ROUNDS) --mode-order given --modes '$(BENCH_EVENTS_MODES)' --out-dir out/events > out/events.txt; \
		rc=$$?; cat out/events.txt; exit $$rc

# The modes of bench-sync: leanstore's caches that issue 24's sync CPU
# targets name (the typed defaults, the typed and metadata-only lean caches,
# both list paths) and client-go's typed and metadata-only caches they are
# compared with, each in the middle of the leanstore caches of its kind. Each
# syncs the standard dataset once per round (no re-list); BENCH_SYNC_ROUNDS
# rounds in turns, every other one in reverse (--rounds), and the summary
# gives each mode's median and its ratios to client-go's cache of its kind.
BENCH_SYNC_MODES  ?= leanstore/typed-strip-mf-la/stream,leanstore/typed-lean/stream,client-go/typed/stream,leanstore/typed-lean/list,leanstore/typed-strip-mf-la/list,leanstore/metadata-lean/stream,client-go/metadata/stream,leanstore/metadata-strip-mf-la/stream,leanstore/metadata-lean/list
BENCH_SYNC_ROUNDS ?= 3

bench-sync: apiserver ## sync CPU in rounds: BENCH_SYNC_MODES synced BENCH_SYNC_ROUNDS times each, in turns; medians, and the ratio to client-go's cache of the same kind per round (a few minutes; report in out/sync/, table in out/sync.txt)
	@mkdir -p out/sync
	$(GO) run ./cmd/cachebench run --relists 0 --rounds $(BENCH_SYNC_ROUNDS) --mode-order given --modes '$(BENCH_SYNC_MODES)' --out-dir out/sync > out/sync.txt; \
		rc=$$?; cat out/sync.txt; exit $$rc

listcost: apiserver ## what an initial list of 10,000 Pods costs the server: resourceVersion=0, consistent paged and streaming, watch cache on and off (about 10 minutes; bench/results/initial-list-cost.txt)
	@mkdir -p out
	$(GO) test -count=1 -timeout 60m -run '^$$' -bench '^BenchmarkInitialList$$' -benchtime 5x ./internal/bench/ > out/initial-list-cost.txt
	cp out/initial-list-cost.txt bench/results/initial-list-cost.txt
	cat bench/results/initial-list-cost.txt

golden: ## regenerate the golden files of cachebench's table and HTML report, and of the doctor's table and markdown
	$(GO) test -count=1 ./internal/bench/report/ -run Golden -update
	$(GO) test -short -count=1 ./internal/doctor/ -run Golden -update

conformance: apiserver ## the differential harness with many seeds: SEEDS programs (default 200) from FIRST (default 1000), FAULTS (comma-separated, default all), against client-go and every leanstore mode
	CACHETUNE_CONFORMANCE_SEEDS=$(or $(SEEDS),200) CACHETUNE_CONFORMANCE_FIRST=$(or $(FIRST),1000) CACHETUNE_CONFORMANCE_FAULTS=$(FAULTS) \
		$(GO) test -count=1 -timeout 12h -run '^TestConformance$$' -v ./internal/conformance/

# Planted defects (internal/mutants): each mutant is planted alone through go
# test's -overlay, so the working tree is never changed, and the command that
# should catch it runs (each command first runs once without any mutant, and
# must pass). The table lands in bench/results only from a run of the whole
# catalog; MUTANTS (comma-separated names) runs some, its table in out/ only.
mutants: apiserver ## planted defects: each mutant of internal/mutants planted alone in the code it names (pkg/leanstore and the internal packages under it) and the tests that should catch it run; MUTANTS=name1,name2 runs some (about 30 minutes; out/mutants.md, and bench/results/mutants.md when every mutant ran)
	$(GO) run ./internal/mutants/cmd/mutants -out out/mutants.md -logs out/mutants -results bench/results/mutants.md $(if $(MUTANTS),-only '$(MUTANTS)')

# The table lands in bench/results only from a run whose every check passed:
# the test writes it to out/resilience.md when it passes and to
# out/resilience-failed.md when it fails, and only a passing run's is copied.
# RESILIENCE_FAULT shortens the faults for a trial run (its table stays in out/).
RESILIENCE_FAULT ?= 30s

resilience: apiserver ## docs/errors-and-backoff.md's table: client-go and leanstore under each fault for 30 s (about 40 minutes; bench/results/resilience.md when every check passes, log and a failing run's table in out/)
	@mkdir -p out
	@rm -f out/resilience.md out/resilience-failed.md
	{ CACHETUNE_RESILIENCE_FAULT=$(RESILIENCE_FAULT) CACHETUNE_RESILIENCE_OUT=$(CURDIR)/out/resilience.md \
		CACHETUNE_RESILIENCE_FAILED_OUT=$(CURDIR)/out/resilience-failed.md \
		$(GO) test -count=1 -timeout 90m -run '^TestTable$$' -v ./internal/resilience/; echo $$? > out/resilience.rc; } 2>&1 | tee out/resilience.log
	@rc=$$(cat out/resilience.rc); \
	if [ "$$rc" = 0 ] && [ "$(RESILIENCE_FAULT)" = 30s ] && [ -s out/resilience.md ]; then \
		cp out/resilience.md bench/results/resilience.md; echo "table written to bench/results/resilience.md"; \
	else echo "bench/results/resilience.md left as it was (exit $$rc, faults of $(RESILIENCE_FAULT)); tables in out/"; fi; \
	exit $$rc

apiserver: ## build the local kube-apiserver into bin/ (about 8 minutes the first time, then cached)
	$(GO) run ./cmd/cachebench apiserver --build-only

envtest-assets: ## build controller-runtime envtest's kube-apiserver and etcd into bin/envtest (for KUBEBUILDER_ASSETS; cached)
	$(GO) run ./cmd/cachebench apiserver --envtest-assets $(ENVTEST_ASSETS)

example: apiserver ## run the example Widget controller on a local kube-apiserver (Ctrl-C stops it)
	$(GO) run ./examples/widget-controller --local

example-cr: apiserver ## run the example controller-runtime operator (leancache) on a local kube-apiserver (Ctrl-C stops it)
	cd $(CR_DIR) && $(GO) run ./examples/appconfig-operator --local

release-check: apiserver ## publish this checkout's modules at RELEASE_VERSION on a local module proxy; go get and run them from modules outside the checkout, no replace directive (3 minutes on 2 busy cores once make apiserver has filled the build cache)
	$(GO) run ./internal/releasecheck -version $(RELEASE_VERSION)

release-version: ## make every nested module require the root module at RELEASE_VERSION (after changing it; see docs/releasing.md)
	@for d in $(NESTED_REQUIRING_ROOT); do \
		(cd $$d && $(GO) mod edit -require=github.com/cachetune/cachetune@$(RELEASE_VERSION)) || exit 1; \
	done

release-version-check: ## fail when a nested module requires the root module, or a doc's go get line names a cachetune module, at another version than RELEASE_VERSION
	@bad=$$(for d in $(NESTED_REQUIRING_ROOT); do \
		grep -HE 'github\.com/cachetune/cachetune v' $$d/go.mod | grep -v 'cachetune $(RELEASE_VERSION)$$' || \
		grep -qE 'github\.com/cachetune/cachetune $(RELEASE_VERSION)$$' $$d/go.mod || echo "$$d/go.mod does not require github.com/cachetune/cachetune"; \
	done; grep -HoE 'github\.com/cachetune/cachetune[^ @`]*@v[0-9][^ `)]*' README.md docs/*.md | grep -v '@$(RELEASE_VERSION)$$'); \
	if [ -n "$$bad" ]; then echo "not at the Makefile's RELEASE_VERSION $(RELEASE_VERSION) (make release-version):"; echo "$$bad"; exit 1; fi

lint: tidy-check kube-version-check release-version-check ## gofmt, go vet, go mod tidy and Kubernetes version checks (all modules), golangci-lint
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd tools/kubeapiserver && $(GO) vet ./...
	cd $(CR_DIR) && $(GO) vet ./...
	$(MAKE) golangci

golangci: $(GOLANGCI) ## golangci-lint (.golangci.yml) over the library and the controller-runtime module
	$(GOLANGCI) run ./...
	cd $(CR_DIR) && $(GOLANGCI) run --config $(CURDIR)/.golangci.yml ./...

$(GOLANGCI):
	@mkdir -p $(CURDIR)/bin
	GOBIN=$(CURDIR)/bin/golangci-$(GOLANGCI_VERSION).tmp $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)
	mv $(CURDIR)/bin/golangci-$(GOLANGCI_VERSION).tmp/golangci-lint $@
	rmdir $(CURDIR)/bin/golangci-$(GOLANGCI_VERSION).tmp

kube-version-check: ## fail when a go.mod requires a Kubernetes module at another version than KUBE_VERSION
	@bad=$$(for d in $(GO_MODULES); do \
		grep -HE '^[[:space:]]*(require[[:space:]]+)?k8s\.io/[a-z-]+ $(KUBE_MINOR)|=> k8s\.io/[a-z-]+ $(KUBE_MINOR)' $$d/go.mod; \
	done | grep -vE 'k8s\.io/kubernetes v$(KUBE_VERSION)([[:space:]]|$$)|k8s\.io/[a-z-]+ $(KUBE_STAGING)([[:space:]]|$$)' \
	     | grep -vF '$(KUBE_VERSION_EXCEPTIONS)'); \
	if [ -n "$$bad" ]; then echo "Kubernetes modules not at v$(KUBE_VERSION) ($(KUBE_STAGING) for staging), the Makefile's KUBE_VERSION:"; echo "$$bad"; exit 1; fi

tidy-check: ## fail when go mod tidy would change go.mod or go.sum (all modules), or the library module requires controller-runtime
	@if $(GO) mod graph | grep -q 'sigs.k8s.io/controller-runtime'; then \
		echo "the root module's go mod graph has sigs.k8s.io/controller-runtime: it belongs in $(CR_DIR)/ only"; exit 1; fi
	@for d in $(GO_MODULES); do \
		(cd $$d && bak=$$(mktemp -d) && cp go.mod go.sum $$bak/ && \
		 $(GO) mod tidy && \
		 if ! cmp -s go.mod $$bak/go.mod || ! cmp -s go.sum $$bak/go.sum; then \
			cp $$bak/go.mod $$bak/go.sum .; rm -rf $$bak; \
			echo "go mod tidy changes $$d/go.mod or go.sum: run it and commit"; exit 1; fi; \
		 rm -rf $$bak) || exit 1; \
	done

clean: ## remove local builds and reports
	rm -rf bin out
