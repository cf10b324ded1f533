"""Shared pytest fixtures: reproducible seeds and the closing simulation summary table."""

from __future__ import annotations

import os
import random
import time
import zlib
from pathlib import Path

import numpy as np
import pytest


def pytest_configure(config):
    # Choose the session seed once, in the controller; xdist workers inherit it via the env.
    if not os.environ.get("SEED"):
        os.environ["SEED"] = str(random.SystemRandom().randrange(2**32))


def base_seed() -> int:
    return int(os.environ["SEED"])


def pytest_report_header(config):
    s = base_seed()
    return f"random seed: SEED={s} (rerun with `make test SEED={s}` or `SEED={s} pytest ...`)"


@pytest.fixture
def seed(request) -> int:
    """A per-test seed derived from SEED and the test's id; printed so a failure can be rerun."""
    s = (base_seed() + zlib.crc32(request.node.nodeid.encode())) % 2**32
    print(f"seed={s} (SEED={base_seed()})")
    return s


@pytest.fixture
def rng(seed) -> np.random.Generator:
    return np.random.default_rng(seed)


#: Set by pytest itself around each test phase.
_PYTEST_OWN = ("PYTEST_CURRENT_TEST",)


@pytest.fixture(autouse=True)
def _environment_left_as_found():
    """Every test leaves ``os.environ`` as it found it (a variable left behind would reach
    the tests that run after it on the same worker): the test errors, naming the variables,
    otherwise.  Use ``monkeypatch`` or :func:`tb.verilator.verilator_environ`."""
    before = {k: v for k, v in os.environ.items() if k not in _PYTEST_OWN}
    yield
    after = {k: v for k, v in os.environ.items() if k not in _PYTEST_OWN}
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if changed:
        pytest.fail(f"the test changed os.environ and left it changed: {', '.join(changed)}",
                    pytrace=False)


@pytest.fixture
def sim_record(request):
    """Call with keyword fields (config, blocks, elements, mismatches, seed, checked_per_s)
    to add a row to the closing simulation summary table (works under pytest-xdist)."""

    def add(**fields):
        request.node.user_properties.append(("sim_record", fields))

    return add


@pytest.fixture
def sim_coverage(request):
    """Call with a run's coverage database directory (:mod:`tb.coverage`) to merge it into
    the session's coverage table and ``build/coverage/`` (works under pytest-xdist)."""

    def add(directory):
        request.node.user_properties.append(("sim_coverage", str(directory)))

    return add


def pytest_addoption(parser):
    parser.addoption("--sim-report", default=None, metavar="PATH",
                     help="also write the simulation summary rows as a JSON session report "
                          "(merged across shards by `python -m tb.report merge`)")


def _shard(config) -> str | None:
    """``"i/N"`` when pytest-split runs one group of a split suite, else None."""
    splits = getattr(config.option, "splits", None)
    group = getattr(config.option, "group", None)
    return f"{group}/{splits}" if splits and group else None


def pytest_sessionstart(session):
    session.config._mx_t0 = time.monotonic()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from tb.coverage.report import format_coverage_table, merge_databases
    from tb.report import format_table, write_session_report
    from tb.runner import BUILD

    rows, failed, coverage_dirs = [], [], []
    for key in ("passed", "failed"):
        for rep in terminalreporter.stats.get(key, []):
            if getattr(rep, "when", "call") != "call":
                continue
            if key == "failed":
                failed.append(rep.nodeid)
            rows += [v for k, v in getattr(rep, "user_properties", []) if k == "sim_record"]
            coverage_dirs += [v for k, v in getattr(rep, "user_properties", [])
                              if k == "sim_coverage"]
    # The session's merged coverage: build/coverage/, and beside the session report (so
    # `make sim-merge` merges the shards' coverage too).
    merged_dir = BUILD.parent / "coverage"
    coverage = merge_databases(coverage_dirs, merged_dir)
    if coverage and config.option.sim_report:
        merge_databases([merged_dir], Path(config.option.sim_report).parent)
    if config.option.sim_report:
        write_session_report(config.option.sim_report, rows, seed=base_seed(), failed=failed,
                             shard=_shard(config),
                             duration_s=round(time.monotonic() - config._mx_t0, 1))
    if not rows:
        return
    terminalreporter.section("simulation summary")
    for line in format_table(rows):
        terminalreporter.write_line(line)
    terminalreporter.write_line(f"SEED={base_seed()}")
    if coverage:
        terminalreporter.section("functional coverage (build/coverage/)")
        for line in format_coverage_table(coverage):
            terminalreporter.write_line(line)
