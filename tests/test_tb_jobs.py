"""tb.bulk.run_jobs: the build / simulate / check pipeline of bulk batches."""

from __future__ import annotations

import asyncio
import logging
import threading

import numpy as np
import pytest

from tb.bulk import BulkJob, run_jobs


class FakeRunner:
    """Stands in for BulkRunner: 'simulates' by echoing the stimulus, corrupting chosen rows."""

    def __init__(self, corrupt=()):
        self.corrupt = set(corrupt)
        self.calls = []

    async def run(self, stim, *, seed, idle, stall, out_count, drain):
        assert out_count is None
        self.calls.append((stim.shape[0], seed, idle, stall, threading.current_thread().name))
        got = stim.copy()
        for row in self.corrupt:
            if row < got.shape[0]:
                got[row, 0] ^= 1
        await asyncio.sleep(0)
        return got, got.shape[0]


class EchoBatch:
    out_count = None  # one output per input row

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
