"""The bulk job pipeline: a list of batches built, simulated and checked in order, the host work
(stimulus, golden, packing, comparison) done by a forked host process while the simulator runs.

Why a process: under cocotb the simulator runs with the GIL held, so a worker *thread* gets no
time while the simulation runs.  Measured on the dot unit (16 loads of 65,536 blocks): with a
thread, the simulator waits 1.66 s for stimulus against 4.75 s of simulation, about the whole
time the building takes (docs/verification.md, "Testbench overhead").  The host process runs
:attr:`BulkJob.make` and the comparison of every job in list order, :data:`LOOKAHEAD` batches
ahead of the simulation, and hands stimulus and outputs over as the wrapper's image files; the
cocotb side only renames files and runs the wrapper.
"""

from __future__ import annotations

import multiprocessing
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from .runner import BulkRunner

__all__ = ["BulkBatch", "BulkJob", "BulkTally", "HOST_WAIT_S", "LOOKAHEAD", "run_jobs"]

#: Batches the host process builds ahead of the one simulating (each is held in memory, with
#: its stimulus image on disk, until its outputs are checked).
LOOKAHEAD = 2
#: Seconds the simulator side waits for any message from the host process before it fails
#: the run as hung (building or checking one batch takes well under a minute, the exhaustive
#: bisections included, even on a loaded machine).
HOST_WAIT_S = 600.0


class BulkBatch(Protocol):
    """What a :class:`BulkJob` builds: stimulus rows and their check against golden
    (:class:`tb.batch.Batch` is the implementation every testbench uses)."""

    stim: np.ndarray
    #: outputs the batch must produce, or None for one output per input row
    out_count: int | None

    def __len__(self) -> int:
        """Blocks the batch checks (counted in the tally)."""

    def verdict(self, got_bits: np.ndarray):
        """Compare the unit's output rows with the expectations: a :class:`tb.batch.Verdict`
        (mismatch count, decoded reports, coverage counts), plain data."""


@dataclass
class BulkJob:
    """One batch of a bulk run.

    ``make`` builds the batch (stimulus, golden expectations); :func:`run_jobs` calls it in the
    host process, one job after the other in list order, so jobs may share a random generator
    and get exactly what a serial loop would give them.  Whatever state ``make`` changes is
    the host process's copy: the caller's generator is *not* advanced by the jobs.
    ``idle``/``stall`` are the wrapper's 0..255 gap and backpressure thresholds for this batch;
    ``drain`` is passed on to :meth:`BulkRunner.run_loaded` (cycles of ready after the last
    output: a larger value catches a late extra output).
    """

    what: str
    make: Callable[[], BulkBatch]
    idle: int = 0
    stall: int = 0
    drain: int = 16


@dataclass
class BulkTally:
    """Totals of :func:`run_jobs`: blocks checked, mismatching blocks, wall time (s), and the
    part of it the simulator spent waiting for the host process to build the next batch
    (``waited``, s) and to finish the last checks (``finishing``, s): what the host work did
    not hide."""

    blocks: int = 0
    mismatches: int = 0
    seconds: float = 0.0
    waited: float = 0.0
    finishing: float = 0.0


@dataclass
class _Built:
    """Host -> simulator: job ``index`` is built; its loads are ``(image file, first row,
    rows)`` (:meth:`BulkRunner.loads`)."""

    index: int
    loads: list
    out_count: int | None
    blocks: int


@dataclass
class _Checked:
    """Host -> simulator: job ``index``'s outputs compared (``verdict``)."""

    index: int
    verdict: object


@dataclass
class _Failed:
    """Host -> simulator: building or checking raised; ``text`` is the traceback."""

    text: str


def _host(jobs: list[BulkJob], runner: BulkRunner, directory: Path, conn, other_end) -> None:
    """The host process: build every job in order, :data:`LOOKAHEAD` ahead of the simulation,
    and compare each batch's outputs (``(index, output image files)`` received) when they
    come."""
    other_end.close()  # so that the simulator side closing its end reads here as EOF
    batches = {}

    def build(i: int) -> None:
        batch = jobs[i].make()
        loads = []
        for n, load in enumerate(runner.loads(batch.stim.shape[0], batch.out_count)):
            chunk = batch.stim[load]
            path = directory / f"stim-{i}-{n}.bin"
            path.write_bytes(runner.in_layout.to_bin(chunk))
            loads.append((str(path), load.start, chunk.shape[0]))
        batches[i] = batch
        conn.send(_Built(i, loads, batch.out_count, len(batch)))

    try:
        for i in range(min(LOOKAHEAD, len(jobs))):
            build(i)
        for i in range(len(jobs)):
            try:
                index, out_files = conn.recv()
            except EOFError:  # the simulator side stopped early (it failed): nothing to report
                return
            if index != i:
                raise RuntimeError(f"host process: outputs of job {index} while expecting {i}")
            got = np.concatenate([runner.out_layout.from_bin(Path(f).read_bytes())
                                  for f in out_files])
            for f in out_files:
                os.unlink(f)
            conn.send(_Checked(i, batches.pop(i).verdict(got)))
            if i + LOOKAHEAD < len(jobs):
                build(i + LOOKAHEAD)
    except BaseException:  # noqa: BLE001 - every failure goes back to the caller
        conn.send(_Failed(traceback.format_exc()))
    finally:
        conn.close()


class _HostProcess:
    """The simulator's end of :func:`_host`: its process, pipe and the messages received
    ahead of the one waited for."""

    def __init__(self, jobs: list[BulkJob], runner: BulkRunner, directory: Path):
        # fork: the jobs' closures (models, generators) are not picklable, and the child
        # needs nothing of the simulator but the layouts it copies with the process.
        ctx = multiprocessing.get_context("fork")
        self.conn, child_conn = ctx.Pipe()
        self.process = ctx.Process(target=_host, name="bulk-host", daemon=True,
                                   args=(jobs, runner, directory, child_conn, self.conn))
        self.process.start()
        child_conn.close()
        self.pending = {}

    def receive(self, kind: type, index: int):
        """The message ``kind`` about job ``index`` (earlier messages of other kinds are kept;
        a failure in the host process, or :data:`HOST_WAIT_S` without a message, is raised
        here)."""
        key = (kind, index)
        while key not in self.pending:
            if not self.conn.poll(HOST_WAIT_S):  # a hang fails instead of waiting for ever
                raise RuntimeError(f"bulk host process: nothing received for {HOST_WAIT_S:g} s "
                                   f"while waiting for {kind.__name__[1:]} job {index}")
            try:
                self._read_one()
            except EOFError:
                raise RuntimeError(f"bulk host process ended (exit code "
                                   f"{self.process.exitcode}) before {kind.__name__[1:]} "
                                   f"job {index}") from None
        return self.pending.pop(key)

    def ready(self, kind: type, index: int) -> bool:
        """Whether the message ``kind`` about job ``index`` has arrived (reads what is waiting
        in the pipe, never blocks)."""
        while (kind, index) not in self.pending and self.conn.poll():
            self._read_one()
        return (kind, index) in self.pending

    def _read_one(self) -> None:
        """Read one message into :attr:`pending`; a failure in the host process raises."""
        msg = self.conn.recv()
        if isinstance(msg, _Failed):
            raise RuntimeError(f"bulk host process failed:\n{msg.text}")
        self.pending[(type(msg), msg.index)] = msg

    def close(self) -> None:
        self.conn.close()
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


async def run_jobs(runner: BulkRunner, jobs: list[BulkJob], *, seed: int, log) -> BulkTally:
    """Build, simulate and check ``jobs`` in order; the building and checking run in a host
    process (see the module docstring) while the simulator runs.

    Results are those of a serial loop: each job's batch is built and checked exactly once, in
    list order; mismatch reports are logged and coverage counts sampled here, in job order.
    Job ``i``'s loads get wrapper seeds ``seed + i + row offset``.
    """
    tally = BulkTally()
    if not jobs:
        return tally
    t0 = time.perf_counter()
    directory = runner.workdir / f"bulk-host-{os.getpid()}"
    directory.mkdir(parents=True, exist_ok=True)
    host = _HostProcess(jobs, runner, directory)
    checked = 0  # jobs whose verdicts are recorded

    def record(i: int) -> None:
        bad = host.receive(_Checked, i).verdict.record(log)
        if bad:
            log.error("%s: %d mismatching blocks", jobs[i].what, bad)
        tally.mismatches += bad

    try:
        for i, job in enumerate(jobs):
            t_wait = time.perf_counter()
            built = host.receive(_Built, i)
            tally.waited += time.perf_counter() - t_wait
            out_files = []
            for n, (path, first, rows) in enumerate(built.loads):
                os.replace(path, runner.stim_path)
                await runner.run_loaded(rows, built.out_count, seed=seed + i + first,
                                        idle=job.idle, stall=job.stall, drain=job.drain)
                out_files.append(str(directory / f"out-{i}-{n}.bin"))
                os.replace(runner.out_path, out_files[-1])
            host.conn.send((i, out_files))
            tally.blocks += built.blocks
            while checked <= i and host.ready(_Checked, checked):  # reports as they come
                record(checked)
                checked += 1
        t_finish = time.perf_counter()
        for i in range(checked, len(jobs)):
            record(i)
        tally.finishing = time.perf_counter() - t_finish
    finally:
        host.close()
        for f in directory.iterdir():
            f.unlink()
        directory.rmdir()
    tally.seconds = time.perf_counter() - t0
    return tally
