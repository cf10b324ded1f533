"""Shared pytest fixtures: reproducible seeds and the closing simulation summary table."""

from __future__ import annotations

import os
import random
import zlib

import numpy as np
import pytest

from tb.report import summary_table


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


@pytest.fixture
def sim_record(request):
    """Call with keyword fields (config, blocks, elements, mismatches, seed, checked_per_s)
    to add a row to the closing simulation summary table (works under pytest-xdist)."""

    def add(**fields):
        request.node.user_properties.append(("sim_record", fields))

    return add



def pytest_terminal_summary(terminalreporter, exitstatus, config):
    rows = []
    for key in ("passed", "failed"):
        for rep in terminalreporter.stats.get(key, []):
            if getattr(rep, "when", "call") != "call":
                continue
            rows += [v for k, v in getattr(rep, "user_properties", []) if k == "sim_record"]
    if not rows:
        return
    tr = terminalreporter
    tr.section("simulation summary")
    *lines, total = summary_table(rows)
    for line in lines:
        tr.write_line(line)
    tr.write_line(f"{total}, SEED={base_seed()}")
