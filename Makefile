# ocp-mx-hdl: one-command setup, test, simulation, lint, benchmark and synthesis.
# Every target bootstraps the project-local virtual environment (.venv) on first use.

PYTHON  ?= python3
VENV    ?= .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed-stamp
JOBS    ?= 2
SEED    ?=
BLOCKS  ?=
WAVES   ?=
SHARD   ?=
SEEDS   ?= 1
PYTEST  := $(VPY) -m pytest
export SEED BLOCKS WAVES

# make sim-full SHARD=i/N: shard i of N (pytest-split, balanced by the committed durations
# file); each shard writes its JUnit XML and session report under build/shards/ for sim-merge.
SIM_DURATIONS := tests/sim_durations.json
SHARD_DIR     := build/shards
ifneq ($(SHARD),)
SHARD_I   := $(word 1,$(subst /, ,$(SHARD)))
SHARD_N   := $(word 2,$(subst /, ,$(SHARD)))
SHARD_OUT := $(SHARD_DIR)/shard-$(SHARD_I)-of-$(SHARD_N)
SHARD_ARGS := --splits $(SHARD_N) --group $(SHARD_I) --splitting-algorithm least_duration \
	--durations-path $(SIM_DURATIONS) --junitxml $(SHARD_OUT)/junit.xml \
	--sim-report $(SHARD_OUT)/session.json
else
SHARD_ARGS := --junitxml build/sim-full/junit.xml --sim-report build/sim-full/session.json
endif

.DEFAULT_GOAL := help
.PHONY: help install test test-golden sim sim-full sim-merge sim-durations formal mutate lint \
	verilog bench synth clean

help:  ## List the targets
	@echo "ocp-mx-hdl targets (options: SEED=n  BLOCKS=n  WAVES=1  JOBS=n  SHARD=i/N):"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  make %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e '.[dev,synth,formal]'
	@touch $@

install: $(STAMP)  ## Create .venv and install the project with all tools (first use only)

test: $(STAMP)  ## The whole test suite: golden, RTL generation, lint, default simulation regression
	$(PYTEST) -n $(JOBS) -m "not slow" tests

test-golden: $(STAMP)  ## Only the golden-model tests (no simulation)
	$(PYTEST) -n $(JOBS) -m "not sim" tests

sim: $(STAMP)  ## Default bit-exact RTL regression (cocotb on Verilator) with a summary table
	$(PYTEST) -n $(JOBS) -m sim tests

sim-full: $(STAMP)  ## Whole parameter matrix of the RTL regression (hours; SHARD=i/N runs one shard)
	SIM_FULL=1 $(PYTEST) -n $(JOBS) -m "sim or slow" tests $(SHARD_ARGS)

sim-merge: $(STAMP)  ## Merge the shards' reports and JUnit XML under build/shards/ into build/shards/merged/
	$(VPY) -m tb.report merge $(SHARD_DIR)

sim-durations: $(STAMP)  ## Re-record tests/sim_durations.json (runs the whole sim-full matrix)
	SIM_FULL=1 $(PYTEST) -n $(JOBS) -m sim tests --store-durations --durations-path $(SIM_DURATIONS)

formal: $(STAMP)  ## proofs: stream rules, no loss/reorder, reset, depth equivalence (miters, register bypass) -> build/formal/
	$(VPY) -m formal --jobs $(JOBS)

mutate: $(STAMP)  ## Mutation campaign over hw/ vs the default sim regression -> build/mutate/ (SEED= SAMPLE= MINUTES=)
	$(VPY) -m mutate $(if $(SEED),--seed $(SEED)) $(if $(SAMPLE),--sample $(SAMPLE)) $(if $(MINUTES),--minutes $(MINUTES))

lint: $(STAMP)  ## ruff on the Python, verilator --lint-only -Wall on generated RTL (both in make test too)
	$(PYTEST) -q tests/test_lint.py

verilog: $(STAMP)  ## Write the default set of generated Verilog into build/verilog/
	$(VPY) -m hw defaults -o build/verilog

bench: $(STAMP)  ## Throughput of golden vs alternatives, testbench and Verilator speed -> docs/performance.md
	$(VPY) -m bench

synth: $(STAMP)  ## Yosys/nextpnr-ecp5 synthesis reports -> bench/results/synth/, docs/performance.md (SEEDS=3: median of nextpnr seeds 1-3)
	$(VPY) -m bench.synth --seeds $(SEEDS)

clean:  ## Remove build products (keeps .venv)
	rm -rf build sim_build .pytest_cache .hypothesis .ruff_cache
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +
