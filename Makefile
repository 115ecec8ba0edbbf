# The single entry points for building, testing and checking goxpdl.
# "make help" lists the targets.

GOLANGCI_LINT_VERSION := v2.15.0
FUZZTIME ?= 30s
# Minimising a new input may take up to a minute by default, longer than a
# short FUZZTIME: the run then ends with "context deadline exceeded".
FUZZMINIMIZETIME ?= 2s

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z/-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

.PHONY: build
build: ## build bin/goxpdl
	go build -o bin/goxpdl ./cmd/goxpdl

# The corpus run needs the XPDL corpus next to the repository (CORPUS).
CORPUS ?= ../shared/xpdl-corpus

.PHONY: corpus-run
corpus-run: ## run every corpus process with goxpdl run; write docs/corpus-run.md
	go build -o bin/goxpdl ./cmd/goxpdl
	go run ./internal/corpusrun -goxpdl bin/goxpdl -corpus '$(CORPUS)' -out docs/corpus-run.md

.PHONY: test
test: ## run every test with the race detector
	go test -race -count=1 -timeout 30m ./...

.PHONY: test/race
test/race: test ## the same as test: tests always run with -race

# bench/peers is a module of its own, so "go test ./..." above does not
# enter it: its tests run each peer-benchmark workload tiny on SQLite.
.PHONY: test-peers
test-peers: ## the peer benchmarks' tests (bench/peers: every workload, 5 instances, SQLite)
	cd bench/peers && go test -race -count=1 -timeout 10m ./...

.PHONY: lint
lint: ## run golangci-lint (installed into ./bin at the pinned version)
	@if ! ./bin/golangci-lint version 2>/dev/null | grep -q 'has version $(GOLANGCI_LINT_VERSION:v%=%) '; then \
		echo "installing golangci-lint $(GOLANGCI_LINT_VERSION) into ./bin"; \
		GOBIN='$(CURDIR)/bin' go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION); \
	fi
	./bin/golangci-lint run ./...
	cd bench/peers && ../../bin/golangci-lint run ./...

.PHONY: generate
generate: ## run go generate
	go generate ./...

# Every fuzz target (func FuzzXxx in a _test.go file) runs for FUZZTIME.
# The targets are found by name, so a new one needs no change here.
# A target fails when it writes a failing input to testdata/fuzz/NAME/. A
# failure that writes none is Go's fuzz coordinator racing its own
# -fuzztime deadline ("context deadline exceeded", go.dev/issue/75804,
# fixed in Go 1.27): that target runs once more, and if it fails again
# without an input it is reported and not counted.
.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME each (default 30s)
	@hits=$$(grep -r --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]*' . | sed 's/:func /:/' | sort); \
	if [ -z "$$hits" ]; then echo "no fuzz targets found"; exit 0; fi; \
	for hit in $$hits; do \
		dir=$${hit%/*}; name=$${hit##*:}; corpus="$$dir/testdata/fuzz/$$name"; \
		for try in 1 2; do \
			before=$$(ls "$$corpus" 2>/dev/null | wc -l); \
			echo "go test $$dir -run='^\$$' -fuzz='^$$name\$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMINIMIZETIME)"; \
			out=$$(mktemp); \
			go test "$$dir" -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMINIMIZETIME) >"$$out" 2>&1; status=$$?; cat "$$out"; \
			if [ $$status -eq 0 ]; then rm -f "$$out"; break; fi; \
			if [ "$$(ls "$$corpus" 2>/dev/null | wc -l)" -gt "$$before" ] || ! grep -q '^    context deadline exceeded$$' "$$out"; then rm -f "$$out"; echo "$$name failed"; exit 1; fi; \
			rm -f "$$out"; \
			echo "$$name failed without a failing input (go.dev/issue/75804, the fuzz coordinator's deadline race); try $$try of 2"; \
		done; \
	done

# The adversarial suite, long: the randomised run with ADVERSARY_SEEDS seeds
# of ADVERSARY_OPS operations on SQLite (a quarter of the seeds on
# MySQL/MariaDB when GOXPDL_MYSQL_DSN is set, and on PostgreSQL when
# GOXPDL_POSTGRES_DSN is), and the named scenarios
# (docs/testing.md). A failure prints its seed and how to run it again.
ADVERSARY_SEEDS ?= 200
ADVERSARY_OPS ?= 1000
.PHONY: adversary
adversary: ## the adversarial suite, long (ADVERSARY_SEEDS, ADVERSARY_OPS)
	GOXPDL_ADVERSARY_SEEDS=$(ADVERSARY_SEEDS) GOXPDL_ADVERSARY_OPS=$(ADVERSARY_OPS) go test -race -count=1 -timeout 4h -run 'TestRandomised' -v ./internal/adversary | grep -v '^=== '
	go test -race -count=1 -run 'TestAdversarial' ./engine

# The randomised run over a faulty database (faultdb), long:
# ADVERSARY_FAULT_SEEDS seeds of ADVERSARY_FAULT_OPS operations on SQLite
# and, when GOXPDL_MYSQL_DSN is set, on MySQL/MariaDB. A failure prints its
# seed and the go test command that runs it again.
ADVERSARY_FAULT_SEEDS ?= 100
ADVERSARY_FAULT_OPS ?= 300
.PHONY: adversary-faults
adversary-faults: ## the randomised adversary over faultdb, long (ADVERSARY_FAULT_SEEDS, ADVERSARY_FAULT_OPS)
	GOXPDL_ADVERSARY_FAULT_SEEDS=$(ADVERSARY_FAULT_SEEDS) GOXPDL_ADVERSARY_FAULT_OPS=$(ADVERSARY_FAULT_OPS) go test -race -count=1 -timeout 4h -run 'TestOverFaultDB' -v ./internal/adversary | grep -v -e '^=== ' -e ' operations, [0-9]* with an unknown outcome'

# One seed of the randomised run again, as a failure names it (on SQLite;
# ADVERSARY_DB=MySQL for MySQL/MariaDB).
SEED ?= 1
ADVERSARY_DB ?= SQLite
.PHONY: adversary-seed
adversary-seed: ## one seed of the randomised adversary again (SEED, ADVERSARY_DB)
	go test -count=1 -run 'TestRandomised/$(ADVERSARY_DB)' -v ./internal/adversary -adversary.seed=$(SEED) -adversary.ops=$(ADVERSARY_OPS)

.PHONY: bench
bench: ## run the benchmarks
	GOXPDL_WORKLIST_ITEMS=$${GOXPDL_WORKLIST_ITEMS:-20000} go test -run='^$$' -bench=. -benchmem ./...

.PHONY: bench-smoke
bench-smoke: ## run every benchmark once, small, so that none of them rots (CI)
	GOXPDL_WORKLIST_ITEMS=20000 GOXPDL_BENCH_TIMERS=200 go test -run='^$$' -bench=. -benchtime=1x ./...

# Terminate and Suspend latency, idle and while slow applications (200 ms
# each) saturate the normal pool; on SQLite, and on MySQL/MariaDB when
# GOXPDL_MYSQL_DSN is set (paper §2.2: critical work is never delayed).
.PHONY: bench-critical
bench-critical: ## process-control latency, idle and under slow applications
	GOXPDL_BENCH_CRITICAL=$${GOXPDL_BENCH_CRITICAL:-40} go test -run '^$$' -bench BenchmarkCriticalLatency -benchtime 1x -v ./engine/ | grep -E 'critical_bench|Benchmark|ok|FAIL'

.PHONY: bench-timers
bench-timers: ## 10,000 deadlines due at the same instant (GOXPDL_BENCH_TIMERS changes the count)
	go test -run '^$$' -bench BenchmarkTimersDueAtOnce -benchtime 1x -timeout 30m ./engine/

.PHONY: bench-pool
bench-pool: ## the adaptive normal pool against a fixed pool of 8, I/O- and CPU-bound handlers
	go test -run '^$$' -bench BenchmarkPoolAdapt -benchtime 1x -count 3 ./scheduler/

# One million open work items on SQLite, and on MySQL/MariaDB when
# GOXPDL_MYSQL_DSN is set (GOXPDL_WORKLIST_ITEMS changes the count).
.PHONY: bench-console
bench-console: ## the console's reads over a million process instances, SQLite and (with GOXPDL_MYSQL_DSN) MySQL
	GOXPDL_BENCH_MILLION=1 go test -run '^$$' -bench BenchmarkConsoleReads -benchtime 1x -timeout 2h -v ./engine/ | grep -vE '^=== '

# goxpdl beside go-workflows v1.2.0 (bench/peers, a Go module of its own
# so that goxpdl's module does not depend on its peers): the workloads W1-W6
# on SQLite and on MariaDB at 127.0.0.1:3306, each engine three times,
# alternating; writes docs/benchmarks.md, .svg and .json. PEERS_QUICK=1
# runs small sizes (a smoke run of a few minutes); PEERS_ONLY, PEERS_DBS
# and PEERS_SIZE choose workloads, databases and sizes (W1,W2; sqlite;
# W5=2000,W6=100000), PEERS_FLAGS adds any flag of "peers suite".
PEERS_QUICK ?=
PEERS_ONLY ?=
PEERS_DBS ?=
PEERS_SIZE ?=
PEERS_FLAGS ?=
.PHONY: bench-peers
bench-peers: ## goxpdl beside go-workflows (W1-W6, SQLite and MariaDB); writes docs/benchmarks.md (PEERS_QUICK=1: small)
	cd bench/peers && go build -o ../../bin/peers . && ../../bin/peers suite \
		$(if $(PEERS_QUICK),-quick) $(if $(PEERS_ONLY),-only $(PEERS_ONLY)) \
		$(if $(PEERS_DBS),-dbs $(PEERS_DBS)) $(if $(PEERS_SIZE),-size $(PEERS_SIZE)) $(PEERS_FLAGS)

# goxpdl alone at scale (issue #23): "goxpdl bench --nodes M" for 1, 2
# and 3 nodes on one MariaDB (127.0.0.1:3306, root), 2,000 seq10 instances
# and 8 clients, three runs of each interleaved on fresh databases; and
# BenchmarkConsoleReads at a million instances on SQLite and MariaDB.
# Writes docs/scale.json and docs/benchmarks.md (its "Scale" section)
# without rerunning bench-peers. SCALE_ONLY=nodes or console runs one
# part (the other keeps its figures); SCALE_FLAGS adds any flag of
# "peers scale" (-reps=5, -nodes=1,2,4, -n=..., -console-n=..., -mysql-...).
SCALE_ONLY ?=
SCALE_FLAGS ?=
.PHONY: bench-scale
bench-scale: ## goxpdl at scale: 1-3 engine nodes on one MariaDB, the console's reads at a million instances; writes docs/scale.json, docs/benchmarks.md
	go build -o bin/goxpdl ./cmd/goxpdl
	cd bench/peers && go build -o ../../bin/peers . && ../../bin/peers scale \
		$(if $(SCALE_ONLY),-only $(SCALE_ONLY)) $(SCALE_FLAGS)

.PHONY: bench-worklist
bench-worklist: ## benchmark worklist pages over a million work items
	go test -run '^$$' -bench BenchmarkWorklist -benchtime 200x ./store/gormstore/

.PHONY: tidy-check
tidy-check: ## fail if go mod tidy would change go.mod or go.sum (here and in bench/peers)
	go mod tidy -diff
	cd bench/peers && go mod tidy -diff

.PHONY: fmt-check
fmt-check: ## fail if gofmt would change a file
	@files=$$(gofmt -l .); \
	if [ -n "$$files" ]; then echo "gofmt would change:"; echo "$$files"; exit 1; fi; \
	echo "gofmt: every file is formatted"

# The crash test (internal/crashtest, issue #6) kills engine nodes with
# SIGKILL under load and verifies that nothing was lost or done twice.
# The MySQL scenarios run when GOXPDL_MYSQL_DSN is set, the PostgreSQL
# ones when GOXPDL_POSTGRES_DSN is; each gets a fresh database named after
# the DSN's. CRASH_FLAGS adds flags to every run
# (e.g. CRASH_FLAGS='-seed 42 -json'). Every scenario runs, and the
# target fails if one of them did.
CRASH_FLAGS ?=

.PHONY: crash-test
crash-test: ## crash test by hand: 1,000 instances, 20 kills; SQLite, then MySQL, three nodes and a MariaDB restart, then PostgreSQL and three nodes on it
	go build -o bin/crashtest ./internal/crashtest
	@status=0; \
	./bin/crashtest -scenario sqlite -instances 1000 -kills 20 $(CRASH_FLAGS) || status=1; \
	if [ -n "$$GOXPDL_MYSQL_DSN" ]; then \
		./bin/crashtest -scenario mysql -instances 1000 -kills 20 $(CRASH_FLAGS) || status=1; \
		./bin/crashtest -scenario multi -instances 1000 -kills 5 $(CRASH_FLAGS) || status=1; \
		./bin/crashtest -scenario mysql-restart -instances 1000 -db-restarts 2 $(CRASH_FLAGS) || status=1; \
	else \
		echo "GOXPDL_MYSQL_DSN is not set: the mysql, multi and mysql-restart scenarios are skipped"; \
	fi; \
	if [ -n "$$GOXPDL_POSTGRES_DSN" ]; then \
		./bin/crashtest -scenario postgres -instances 1000 -kills 20 $(CRASH_FLAGS) || status=1; \
		./bin/crashtest -scenario postgres-multi -instances 1000 -kills 5 $(CRASH_FLAGS) || status=1; \
	else \
		echo "GOXPDL_POSTGRES_DSN is not set: the postgres and postgres-multi scenarios are skipped"; \
	fi; \
	exit $$status

# Bounded for CI: no database restart; each scenario takes 10-20 s on 2
# cores, and at most its kills (5 x 2 s) plus a final run of 80 s (40 s
# without any state change counts as a hang, and the hung node's
# goroutines are summarised in the report).
# The fault suite (docs/recovery.md): FAULTS faults of each kind per
# spec script (a number, or "all" for every statement, BEGIN and COMMIT:
# hours). make test runs it with two faults per script, of kinds drawn
# at random.
FAULTS ?= 5

.PHONY: fault-test
fault-test: ## the fault suite over the spec and host transactions, FAULTS of each kind per script (FAULTS=all: every place)
	GOXPDL_FAULTS=$(FAULTS) go test -race -count=1 -timeout 0 -run 'TestSpecFaults|TestHostTxFaults|TestAmbiguousCommit' -v ./engine | grep -E '^(---|ok|FAIL|PASS)|faults injected|statements in the host'

.PHONY: crash-test-short
crash-test-short: ## crash test for CI: 200 instances, 5 kills on SQLite, on MySQL when GOXPDL_MYSQL_DSN is set, on PostgreSQL when GOXPDL_POSTGRES_DSN is
	go build -o bin/crashtest ./internal/crashtest
	@status=0; \
	./bin/crashtest -scenario sqlite -instances 200 -kills 5 -kill-max 2s -final-timeout 80s -stall-timeout 40s $(CRASH_FLAGS) || status=1; \
	if [ -n "$$GOXPDL_MYSQL_DSN" ]; then \
		./bin/crashtest -scenario mysql -instances 200 -kills 5 -kill-max 2s -final-timeout 80s -stall-timeout 40s $(CRASH_FLAGS) || status=1; \
	else \
		echo "GOXPDL_MYSQL_DSN is not set: the mysql scenario is skipped"; \
	fi; \
	if [ -n "$$GOXPDL_POSTGRES_DSN" ]; then \
		./bin/crashtest -scenario postgres -instances 200 -kills 5 -kill-max 2s -final-timeout 80s -stall-timeout 40s $(CRASH_FLAGS) || status=1; \
	else \
		echo "GOXPDL_POSTGRES_DSN is not set: the postgres scenario is skipped"; \
	fi; \
	exit $$status
