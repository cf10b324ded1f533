"""The stream testbench base class: clock, synchronous reset, one source, one sink and a
scoreboard around a unit with the project's port convention (``clk``, ``rst``, stream ``i``
in, stream ``o`` out).

Stimulus goes in as batches (:class:`tb.batch.Batch`: input rows, expected output rows and a
``describe`` for mismatch reports); every wait here is bounded by a cycle count, so a hung
unit fails the test instead of hanging the simulation.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from .drivers import StreamSink, StreamSource
from .payload import BitLayout
from .scoreboard import Scoreboard

__all__ = ["StreamTB", "DRAIN_CYCLES_PER_OUTPUT", "DRAIN_CYCLES_MIN", "IN_FLIGHT_WAIT_CYCLES"]

#: :meth:`StreamTB.run_batch` waits at most this many cycles per payload, plus
#: :data:`DRAIN_CYCLES_MIN`, for a batch to come out (generous for any idle and backpressure
#: pattern of :mod:`tb.stream.patterns`; a unit that stops answering fails well before).
DRAIN_CYCLES_PER_OUTPUT = 200
DRAIN_CYCLES_MIN = 1000
#: :meth:`StreamTB.reset_with_data_in_flight` waits at most this many cycles for blocks to be
#: inside the unit before it resets anyway.
IN_FLIGHT_WAIT_CYCLES = 200


class StreamTB:
    """Clock, synchronous reset, one stream source (``i``), one sink (``o``), a scoreboard.

    Parameters
    ----------
    dut
        cocotb handle with ``clk``, ``rst`` and stream ports ``i``/``o``.
    in_layout, out_layout : BitLayout
        Payload layouts of the unit's input and output (from its sidecar).
    idle, backpressure : iterator of bool, optional
        Initial patterns (changed per batch by :meth:`run_batch`).
    period_ns : int
        Clock period.
    """

    def __init__(self, dut, in_layout: BitLayout, out_layout: BitLayout, *,
                 idle: Iterator[bool] | None = None,
                 backpressure: Iterator[bool] | None = None, period_ns: int = 10):
        import cocotb
        from cocotb.clock import Clock

        self.dut = dut
        self.in_layout = in_layout
        self.out_layout = out_layout
        self.log = logging.getLogger("cocotb.tb")
        self.clock = dut.clk
        dut.rst.value = 1
        cocotb.start_soon(Clock(dut.clk, period_ns, unit="ns").start())
        self.scoreboard = Scoreboard(self._describe)
        self.resets_in_flight = 0  # resets with blocks inside the unit (stream coverage)
        self.source = StreamSource(dut, "i", dut.clk, idle=idle).start()
        self.sink = StreamSink(dut, "o", dut.clk, backpressure=backpressure,
                               callback=self.scoreboard.receive).start()

    def _describe(self, index, expected, actual, context) -> str:
        batch, row = context
        return batch.describe(row, self.out_layout.from_ints([actual])[0])

    def stream_coverage(self) -> dict:
        """Stream cover point hit counts so far (:mod:`tb.coverage.stream`)."""
        return {"stream": {"stall_while_valid": self.sink.stalls, "bubble": self.source.bubbles,
                           "back_to_back": self.source.back_to_back,
                           "reset_with_data_in_flight": self.resets_in_flight}}

    async def cycles(self, n: int):
        from cocotb.triggers import ClockCycles

        await ClockCycles(self.clock, n)

    async def reset(self, cycles: int = 2):
        """Hold ``rst`` high for ``cycles`` edges with the source paused."""
        from cocotb.triggers import RisingEdge

        self.source.paused = True
        await RisingEdge(self.clock)
        self.dut.rst.value = 1
        await self.cycles(cycles)
        self.dut.rst.value = 0
        self.source.paused = False

    def send(self, batch):
        """Queue a batch's input payloads and the outputs they must produce."""
        outs = self.out_layout.to_ints(batch.exp)
        self.scoreboard.expect((e, (batch, j)) for j, e in enumerate(outs))
        self.source.send(self.in_layout.to_ints(batch.stim))

    async def drain(self, timeout_cycles: int):
        """Wait until every expected output arrived (or fail after ``timeout_cycles``)."""
        from cocotb.triggers import RisingEdge

        for _ in range(timeout_cycles):
            if self.scoreboard.done and self.source.idle_now:
                return
            await RisingEdge(self.clock)
        raise AssertionError(f"timeout: {len(self.scoreboard.expected)} outputs outstanding, "
                             f"{len(self.source.queue)} inputs not accepted")

    async def run_batch(self, batch, *, idle: Iterator[bool], backpressure: Iterator[bool]):
        """Stream one batch under the given patterns and wait (bounded) until it is out."""
        self.source.idle, self.sink.backpressure = idle, backpressure
        self.send(batch)
        rows = max(batch.stim.shape[0], batch.exp.shape[0])
        await self.drain(DRAIN_CYCLES_PER_OUTPUT * rows + DRAIN_CYCLES_MIN)

    async def reset_with_data_in_flight(self, before, after, *, quiet_cycles: int = 30) -> int:
        """Reset with a batch in flight; the unit must come back empty and work again.

        ``before`` is sent and cut off by a reset 12 cycles in, or as soon after as blocks are
        inside the unit (within :data:`IN_FLIGHT_WAIT_CYCLES`; its outputs are gone, by
        design); then no output may appear for ``quiet_cycles`` cycles without new input, and
        every output of ``after`` must come out right.  Returns the number of outputs checked
        after the reset.
        """
        from cocotb.triggers import ReadOnly, RisingEdge

        self.send(before)
        await self.cycles(12)
        for _ in range(IN_FLIGHT_WAIT_CYCLES):  # inside the unit: transferred in, not yet out
            await ReadOnly()
            if self.source.sent > self.sink.received:
                break
            await RisingEdge(self.clock)
        self.resets_in_flight += self.source.sent > self.sink.received
        self.source.clear()
        self.source.paused = True
        await RisingEdge(self.clock)
        self.dut.rst.value = 1
        await self.cycles(2)
        self.dut.rst.value = 0
        assert self.scoreboard.mismatches == 0, self.scoreboard.reports
        self.scoreboard.clear()
        for _ in range(quiet_cycles):
            await RisingEdge(self.clock)
            await ReadOnly()
            assert not int(self.dut.o__valid.value), "output after reset without new input"
        self.source.paused = False
        checked = self.scoreboard.checked
        self.send(after)
        rows = max(after.stim.shape[0], after.exp.shape[0])
        await self.drain(DRAIN_CYCLES_PER_OUTPUT * rows + DRAIN_CYCLES_MIN)
        self.scoreboard.assert_clean()
        checked = self.scoreboard.checked - checked
        expected = after.exp.shape[0]
        assert checked == expected, f"{checked} outputs after the reset, expected {expected}"
        return checked
