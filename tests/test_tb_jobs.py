"""tb.bulk.run_jobs: the build / simulate / check pipeline of bulk batches, its host process."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import numpy as np
import pytest

from tb import coverage
from tb.batch import Batch
from tb.bulk import BulkJob, BulkRunner, run_jobs


class ByteLayout:
    """Stands in for BitLayout: the image of a byte matrix is its bytes."""

    def __init__(self, width):
        self.width = width

    def to_bin(self, rows):
        return np.ascontiguousarray(rows, dtype=np.uint8).tobytes()

    def from_bin(self, data):
        return np.frombuffer(data, dtype=np.uint8).reshape(-1, self.width)


class FakeRunner:
    """Stands in for BulkRunner: 'simulates' a load by echoing its stimulus image, with the
    first byte of chosen rows (counted over the whole run) flipped."""

    def __init__(self, workdir: Path, corrupt=(), depth=4):
        self.workdir = workdir
        self.depth = depth
        self.in_layout = self.out_layout = ByteLayout(2)
        self.corrupt = set(corrupt)
        self.calls = []
        self.rows_seen = 0
        self.seen = []  # the stimulus rows of every load, in order

    loads = BulkRunner.loads  # the real split of a batch into loads

    @property
    def stim_path(self):
        return self.workdir / "bulk_stim.bin"

    @property
    def out_path(self):
        return self.workdir / "bulk_out.bin"

    async def run_loaded(self, rows, out_count=None, *, seed, idle, stall, drain):
        assert out_count is None
        got = self.in_layout.from_bin(self.stim_path.read_bytes()).copy()
        assert got.shape[0] == rows <= self.depth
        self.seen.append(got.copy())
        for r in range(rows):
            if self.rows_seen + r in self.corrupt:
                got[r, 0] ^= 1
        self.rows_seen += rows
        self.calls.append((rows, seed, idle, stall))
        self.out_path.write_bytes(self.out_layout.to_bin(got))
        await asyncio.sleep(0)
        return rows


def _jobs(sizes, rng, pid_file=None):
    """Jobs drawing their rows from one shared generator (as the testbenches' jobs do)."""
    def make(rows):
        if pid_file is not None:
            with open(pid_file, "a") as f:
                f.write(f"{os.getpid()}\n")
        stim = rng.integers(0, 256, size=(rows, 2), dtype=np.uint8)
        return Batch(stim, stim.copy())
    return [BulkJob(f"job{i}", lambda r=r: make(r), idle=i, stall=2 * i)
            for i, r in enumerate(sizes)]


def _run(runner, jobs, seed=10, log=None):
    return asyncio.run(run_jobs(runner, jobs, seed=seed, log=log or logging.getLogger("test")))


def test_run_jobs_builds_in_the_host_process_what_a_serial_loop_builds(tmp_path):
    pid_file = tmp_path / "pids"
    runner = FakeRunner(tmp_path)
    tally = _run(runner, _jobs([3, 5, 7], np.random.default_rng(1), pid_file))
    assert (tally.blocks, tally.mismatches) == (15, 0)
    # one make per job, all in one process that is not this one
    pids = pid_file.read_text().split()
    assert len(pids) == 3 and len(set(pids)) == 1 and int(pids[0]) != os.getpid()
    # loads of at most `depth` rows; seeds: job index + row offset; the job's idle/stall
    assert runner.calls == [(3, 10, 0, 0), (4, 11, 1, 2), (1, 15, 1, 2), (4, 12, 2, 4),
                            (3, 16, 2, 4)]
    # the stimulus the runner saw is what the same jobs give when run serially
    serial = [job.make().stim for job in _jobs([3, 5, 7], np.random.default_rng(1))]
    assert np.array_equal(np.concatenate(runner.seen), np.concatenate(serial))
    # nothing is left behind in the working directory but the last stimulus image
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bulk_stim.bin", "pids"]


def test_run_jobs_counts_and_reports_mismatches(tmp_path, caplog):
    runner = FakeRunner(tmp_path, corrupt={0, 4})
    with caplog.at_level(logging.ERROR):
        tally = _run(runner, _jobs([3, 5], np.random.default_rng(2)))
    assert (tally.blocks, tally.mismatches) == (8, 2)  # row 0 of the first, row 1 of the second
    mismatches = [r.getMessage() for r in caplog.records if "MISMATCH" in r.getMessage()]
    assert len(mismatches) == 2 and mismatches[0].startswith("MISMATCH output 0:")
    assert mismatches[1].startswith("MISMATCH output 1:")
    assert any("job1: 1 mismatching blocks" in r.getMessage() for r in caplog.records)


def test_run_jobs_samples_coverage_in_the_simulator_process(tmp_path, monkeypatch):
    sampled = []

    class Counted(Batch):
        def coverage_counts(self):
            return {"rows": {"n": self.stim.shape[0]}}

    monkeypatch.setattr(coverage, "active", lambda: object())
    monkeypatch.setattr(coverage, "sample", sampled.append)
    stim = np.zeros((3, 2), np.uint8)
    _run(FakeRunner(tmp_path), [BulkJob("c", lambda: Counted(stim, stim))] * 2)
    assert sampled == [{"rows": {"n": 3}}, {"rows": {"n": 3}}]


def test_run_jobs_refuses_a_counted_batch_larger_than_one_load(tmp_path):
    """A batch with ``out_count`` has its outputs counted per load, so it must fit in one
    (as :meth:`BulkRunner.run` requires)."""
    stim = np.zeros((5, 2), np.uint8)  # depth 4
    with pytest.raises(RuntimeError, match="ValueError: a batch with out_count holds at most 4"):
        _run(FakeRunner(tmp_path), [BulkJob("runs", lambda: Batch(stim, stim[:2]))])


def test_run_jobs_reports_a_failing_build(tmp_path):
    def boom():
        raise ValueError("no stimulus")

    with pytest.raises(RuntimeError, match="ValueError: no stimulus"):
        _run(FakeRunner(tmp_path), [BulkJob("bad", boom)])


def test_run_jobs_stops_the_host_process_when_the_simulation_fails(tmp_path):
    class Failing(FakeRunner):
        async def run_loaded(self, *args, **kwargs):
            raise AssertionError("bulk: no `done`")

    with pytest.raises(AssertionError, match="no `done`"):
        _run(Failing(tmp_path), _jobs([3, 5, 7], np.random.default_rng(3)))
    assert not any(p.name.startswith("bulk-host") for p in tmp_path.iterdir())


def test_run_jobs_fails_when_the_host_process_hangs(tmp_path, monkeypatch):
    import time

    import tb.bulk.jobs as jobs_module

    monkeypatch.setattr(jobs_module, "HOST_WAIT_S", 0.5)

    def stuck():
        time.sleep(30)

    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="nothing received for 0.5 s while waiting for Built "
                                           "job 0"):
        _run(FakeRunner(tmp_path), [BulkJob("stuck", stuck)])
    assert time.monotonic() - t0 < 10  # the stuck process is killed, not waited for


def test_run_jobs_with_no_jobs(tmp_path):
    tally = _run(FakeRunner(tmp_path), [])
    assert (tally.blocks, tally.mismatches) == (0, 0)
