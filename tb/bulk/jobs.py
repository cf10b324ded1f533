"""The bulk job pipeline: a list of batches built, simulated and checked in order, with the
host work (stimulus, golden, comparison) overlapping the simulation."""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .runner import BulkRunner

__all__ = ["BulkBatch", "BulkJob", "BulkTally", "run_jobs"]


class BulkBatch(Protocol):
    """What a :class:`BulkJob` builds: stimulus rows and their check against golden
    (:class:`tb.batch.Batch` is the implementation every testbench uses)."""

    stim: np.ndarray
    #: outputs the batch must produce, or None for one output per input row
    out_count: int | None

    def __len__(self) -> int:
        """Blocks the batch checks (counted in the tally)."""

    def check(self, got_bits: np.ndarray, log) -> int:
        """Compare the unit's output rows with the expectations; return the mismatch count
        (and log decoded reports of the first ones)."""


@dataclass
class BulkJob:
    """One batch of a bulk run.

    ``make`` builds the batch (stimulus, golden expectations, packing); :func:`run_jobs` calls
    it on a worker thread while the previous batch simulates, so it must not share mutable
    state with the main thread (a random generator used only by the jobs, in order, is fine:
    the worker runs them one at a time, in list order).  ``idle``/``stall`` are the wrapper's
    0..255 gap and backpressure thresholds for this batch; ``drain`` is passed on to
    :meth:`BulkRunner.run` (cycles of ready after the last output: a larger value catches a late
    extra output).
    """

    what: str
    make: Callable[[], BulkBatch]
    idle: int = 0
    stall: int = 0
    drain: int = 16


@dataclass
class BulkTally:
    """Totals of :func:`run_jobs`: blocks checked, mismatching blocks, wall time (s), and the
    part of it the simulator spent waiting for the host to build the next batch (``waited``,
    s) and to finish the last checks (``finishing``, s): what the host work did not hide."""

    blocks: int = 0
    mismatches: int = 0
    seconds: float = 0.0
    waited: float = 0.0
    finishing: float = 0.0


async def run_jobs(runner: BulkRunner, jobs: list[BulkJob], *, seed: int, log) -> BulkTally:
    """Build, simulate and check ``jobs`` in order, overlapping host work with simulation.

    While batch ``i`` simulates, one worker thread is given batch ``i - 1`` to check and
    batch ``i + 1`` to build.  Measured (docs/verification.md, "Testbench overhead"): under
    Verilator the simulator waits about as long as the building takes in total
    (``BulkTally.waited``), so the worker does not in fact run during the simulation (the GIL
    is the likely cause).  Results are the same as a serial loop: each job's batch is built
    and checked exactly once, and the worker keeps the jobs' order.
    """
    tally = BulkTally()
    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(1, thread_name_prefix="bulk-host") as pool:
        pending = pool.submit(jobs[0].make) if jobs else None
        checks = []
        for i, job in enumerate(jobs):
            t_wait = time.perf_counter()
            batch = pending.result()
            tally.waited += time.perf_counter() - t_wait
            pending = pool.submit(jobs[i + 1].make) if i + 1 < len(jobs) else None
            got, _ = await runner.run(batch.stim, seed=seed + i, idle=job.idle, stall=job.stall,
                                      out_count=batch.out_count, drain=job.drain)
            checks.append((job, len(batch), pool.submit(batch.check, got, log)))
            del batch, got
        t_finish = time.perf_counter()
        for job, blocks, check in checks:
            bad = check.result()
            if bad:
                log.error("%s: %d mismatching blocks", job.what, bad)
            tally.blocks += blocks
            tally.mismatches += bad
        tally.finishing = time.perf_counter() - t_finish
    tally.seconds = time.perf_counter() - t0
    return tally
