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
PYTEST  := $(VPY) -m pytest
export SEED BLOCKS WAVES

.DEFAULT_GOAL := help
.PHONY: help install test test-golden sim sim-full lint verilog bench synth clean

help:  ## List the targets
	@echo "ocp-mx-hdl targets (options: SEED=n  BLOCKS=n  WAVES=1  JOBS=n):"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  make %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e '.[dev,synth,formal]'
	@touch $@

install: $(STAMP)  ## Create .venv and install the project with all tools (first use only)

test: $(STAMP)  ## The whole test suite: golden, RTL generation, lint, default simulation regression
	$(PYTEST) -n $(JOBS) tests

test-golden: $(STAMP)  ## Only the golden-model tests (no simulation)
	$(PYTEST) -n $(JOBS) -m "not sim" tests

sim: $(STAMP)  ## Default bit-exact RTL regression (cocotb on Verilator) with a summary table
	$(PYTEST) -n $(JOBS) -m sim tests

sim-full: $(STAMP)  ## Whole parameter matrix of the RTL regression (long; parallel)
	SIM_FULL=1 $(PYTEST) -n $(JOBS) -m sim tests

lint: $(STAMP)  ## ruff on the Python, verilator --lint-only -Wall on generated RTL
	$(VPY) -m ruff check golden hw tb tests bench
	$(PYTEST) -q tests/test_lint.py

verilog: $(STAMP)  ## Write the default set of generated Verilog into build/verilog/
	$(VPY) -m hw defaults -o build/verilog

bench: $(STAMP)  ## Throughput of golden vs alternatives, testbench and Verilator speed -> docs/performance.md
	$(VPY) -m bench

synth: $(STAMP)  ## Yosys/nextpnr-ecp5 synthesis reports -> build/synth/, docs/performance.md
	$(VPY) -m bench.synth

clean:  ## Remove build products (keeps .venv)
	rm -rf build sim_build .pytest_cache .hypothesis .ruff_cache
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +
