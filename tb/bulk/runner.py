"""cocotb side of bulk mode: write a batch as the wrapper's stimulus image, run it through
``<dut>_bulk`` self-clocked, read the outputs back and check the transfer counts."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from ..stream.payload import BitLayout
from .wrapper import DEPTH

__all__ = ["BulkRunner", "pass_through"]

#: :meth:`BulkRunner.run` fails if a batch is not done within this many times the cycles it
#: may take: every input one latency at worst (MXDotGeneral takes the next block of a run
#: only when the previous one's sum is back) and every output one cycle, both stretched by
#: the idle and the stall probability (a cycle idles or stalls when a byte of the wrapper's
#: generator is below the 0..255 threshold); plus the drain and :data:`MAX_CYCLES_MIN`.
CYCLES_MARGIN = 4
MAX_CYCLES_MIN = 10_000


def pass_through(dut) -> None:
    """Drive the wrapper's bulk-engine inputs idle, so that its stream ports pass straight
    through to the unit (``bulk = 0``) and the unit runs on ``clk`` (``osc_en = 0``): the
    setting for cocotb's stream drivers."""
    dut.osc_en.value = 0
    dut.bulk.value = 0
    dut.start.value = 0
    dut.count.value = 0
    dut.seed.value = 1
    dut.idle_thresh.value = 0
    dut.stall_thresh.value = 0


class BulkRunner:
    """cocotb side of bulk mode: write a batch, run it through the wrapper, read it back.

    Parameters
    ----------
    dut
        Handle of the ``<unit>_bulk`` wrapper (the cocotb toplevel).
    in_layout, out_layout : BitLayout
        Payload layouts of the unit (from its sidecar).
    workdir : Path
        Where the stimulus and output images go (the simulator's working directory by default).
    latency : int
        The unit's latency in cycles (bounds the wait for a batch).
    """

    def __init__(self, dut, in_layout: BitLayout, out_layout: BitLayout, workdir=None, *,
                 latency: int = 0):
        self.dut = dut
        self.latency = latency
        self.in_layout = in_layout
        self.out_layout = out_layout
        self.workdir = Path(workdir or os.getcwd())
        self.depth = DEPTH
        self.sim_seconds = 0.0
        self.period_steps = None  # measured by reset()

    async def reset(self, cycles: int = 3):
        """Switch to the internal oscillator and reset the unit."""
        from cocotb.triggers import ClockCycles
        from cocotb.utils import get_sim_time

        dut = self.dut
        dut.bulk.value = 0
        dut.start.value = 0
        dut.osc_en.value = 1
        dut.rst.value = 1
        await ClockCycles(dut.uclk, 1)
        t0 = get_sim_time()
        await ClockCycles(dut.uclk, cycles)
        # the oscillator's period, to bound the wait for `done` in simulation time
        self.period_steps = (get_sim_time() - t0) // cycles
        dut.rst.value = 0

    def cycle_limit(self, n_in: int, n_out: int, idle: int, stall: int, drain: int) -> int:
        """Cycles :meth:`run` waits for a batch of ``n_in`` inputs and ``n_out`` outputs."""
        worst = n_in * max(1, self.latency) + n_out
        expected = worst * 256 / (256 - idle) * 256 / (256 - stall)
        return int(CYCLES_MARGIN * expected) + drain + MAX_CYCLES_MIN

    @property
    def stim_path(self) -> Path:
        """The stimulus image the wrapper loads on ``start`` (its ``+stim`` default)."""
        return self.workdir / "bulk_stim.bin"

    @property
    def out_path(self) -> Path:
        """The output image the wrapper writes when a load is done (its ``+out`` default)."""
        return self.workdir / "bulk_out.bin"

    async def run(self, in_bits: np.ndarray, *, seed: int = 1, idle: int = 0, stall: int = 0,
                  out_count: int | None = None, drain: int = 16):
        """Stream ``in_bits`` (payload byte matrix) through the unit (after :meth:`reset`).

        Returns ``(out_bits, cycles)``; ``idle``/``stall`` are the 0..255 thresholds.  Units
        with one output per input need no ``out_count``; others (e.g. a dot unit that answers
        once per run of blocks) give the number of outputs the batch must produce, and the
        batch then has to fit in one memory load.  After the last expected output the wrapper
        keeps accepting for ``drain`` cycles; an extra output or an input left untaken fails
        the run.
        """
        outs, total_cycles = [], 0
        for load in self.loads(in_bits.shape[0], out_count):
            chunk = in_bits[load]
            self.stim_path.write_bytes(self.in_layout.to_bin(chunk))
            total_cycles += await self.run_loaded(chunk.shape[0], out_count,
                                                  seed=seed + load.start, idle=idle,
                                                  stall=stall, drain=drain)
            outs.append(self.out_layout.from_bin(self.out_path.read_bytes()))
        return np.concatenate(outs), total_cycles

    def loads(self, rows: int, out_count: int | None = None) -> list[slice]:
        """The wrapper loads a batch of ``rows`` payloads takes: slices of at most
        :attr:`depth` rows (load ``l`` runs with wrapper seed ``seed + l.start``).  A batch
        with ``out_count`` must fit in one load (its outputs are counted per load)."""
        if out_count is not None and rows > self.depth:
            raise ValueError(f"a batch with out_count holds at most {self.depth} payloads")
        return [slice(lo, min(rows, lo + self.depth)) for lo in range(0, rows, self.depth)]

    async def run_loaded(self, rows: int, out_count: int | None = None, *, seed: int = 1,
                         idle: int = 0, stall: int = 0, drain: int = 16) -> int:
        """Run the ``rows`` payloads already written to :attr:`stim_path` (at most
        :attr:`depth`; :meth:`tb.stream.BitLayout.to_bin` image) and leave the unit's outputs in
        :attr:`out_path` (``from_bin`` image); returns the load's clock cycles.  Arguments as
        for :meth:`run`, whose one load this is."""
        from cocotb.triggers import RisingEdge, SimTimeoutError, with_timeout

        dut = self.dut
        if self.period_steps is None:
            raise RuntimeError("BulkRunner.run before BulkRunner.reset")
        if not 0 < rows <= self.depth:
            raise ValueError(f"a load holds 1 to {self.depth} payloads, got {rows}")
        n_out = rows if out_count is None else out_count
        self.out_path.unlink(missing_ok=True)
        t0 = time.perf_counter()
        dut.bulk.value = 1
        dut.count.value = rows
        dut.out_count.value = n_out
        dut.drain.value = drain
        dut.seed.value = seed & 0xFFFFFFFF
        dut.idle_thresh.value = idle
        dut.stall_thresh.value = stall
        dut.start.value = 1
        await RisingEdge(dut.uclk)
        dut.start.value = 0
        await RisingEdge(dut.uclk)
        # Bounded by what the batch should take, so a hung unit fails instead of hanging.
        limit = self.cycle_limit(rows, n_out, idle, stall, drain)
        try:
            while not int(dut.done.value):
                await with_timeout(RisingEdge(dut.done), limit * self.period_steps, "step")
        except SimTimeoutError:
            raise AssertionError(
                f"bulk: no `done` within {limit} cycles (latency {self.latency}, idle "
                f"{idle}/256, stall {stall}/256): {int(dut.sent.value)} of "
                f"{rows} blocks sent, {int(dut.received.value)} of {n_out} "
                "outputs received") from None
        self.sim_seconds += time.perf_counter() - t0
        if int(dut.load_error.value):
            raise AssertionError(f"bulk: the wrapper could not load {rows} "
                                 f"payloads from {self.stim_path}")
        cycles = int(dut.cycles.value)
        sent, received = int(dut.sent.value), int(dut.received.value)
        if sent != rows or received != n_out:
            raise AssertionError(f"bulk: the unit took {sent} of {rows} payloads "
                                 f"and gave {received} outputs, expected {n_out}")
        dut.bulk.value = 0
        return cycles
