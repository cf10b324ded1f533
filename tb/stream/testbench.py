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

__all__ = ["StreamTB", "DRAIN_CYCLES_PER_OUTPUT", "DRAIN_CYCLES_MIN", "STALL_CYCLES_MAX",
           "IN_FLIGHT_WAIT_CYCLES"]

#: :meth:`StreamTB.run_batch` waits at most this many cycles plus the latency per payload,
#: plus :data:`DRAIN_CYCLES_MIN`, for a batch to come out (generous for any idle and
#: backpressure pattern of :mod:`tb.stream.patterns`, also when each block waits for the
#: previous one's result, as a run in MXDotGeneral does) ...
DRAIN_CYCLES_PER_OUTPUT = 200
DRAIN_CYCLES_MIN = 1000
#: ... and fails sooner, after the latency plus this many cycles without a transfer on
#: either port (a deadlock: the longest idle or stall run of the random and bursty patterns
#: is 16 cycles; 500 in a row at p = 0.3 has probability 0.3^500).
STALL_CYCLES_MAX = 500
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
    latency : int
        The unit's latency in cycles (bounds the waits of :meth:`drain`).
    """

    def __init__(self, dut, in_layout: BitLayout, out_layout: BitLayout, *,
                 idle: Iterator[bool] | None = None,
                 backpressure: Iterator[bool] | None = None, period_ns: int = 10,
                 latency: int = 0):
        import cocotb
        from cocotb.clock import Clock

        self.dut = dut
        self.latency = latency
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

    async def drain(self, rows: int):
        """Wait until every expected output arrived; fail after the latency plus
        :data:`STALL_CYCLES_MAX` cycles without a transfer, or after
        ``(DRAIN_CYCLES_PER_OUTPUT + latency) * rows + DRAIN_CYCLES_MIN`` cycles in all
        (``rows``: the batch's payloads)."""
        from cocotb.triggers import RisingEdge

        limit = (DRAIN_CYCLES_PER_OUTPUT + self.latency) * rows + DRAIN_CYCLES_MIN
        stall_limit = self.latency + STALL_CYCLES_MAX
        sent, received = self.source.sent, self.sink.received
        queued, expected = len(self.source.queue), len(self.scoreboard.expected)
        last_progress, progress = 0, (sent, received)
        for cycle in range(limit):
            if self.scoreboard.done and self.source.idle_now:
                return
            if (self.source.sent, self.sink.received) != progress:
                last_progress, progress = cycle, (self.source.sent, self.sink.received)
            elif cycle - last_progress >= stall_limit:
                self._timeout(f"no transfer for {cycle - last_progress} cycles (latency "
                              f"{self.latency})", cycle, sent, received, queued, expected)
            await RisingEdge(self.clock)
        self._timeout(f"{limit} cycles", limit, sent, received, queued, expected)

    def _timeout(self, why, cycles, sent, received, queued, expected):
        ports = " ".join(f"{name}={int(getattr(self.dut, name).value)}"
                         for name in ("i__valid", "i__ready", "o__valid", "o__ready")
                         if hasattr(self.dut, name))
        raise AssertionError(
            f"timeout waiting for a batch to drain: {why}, after {cycles} cycles: "
            f"{self.source.sent - sent} of {queued} blocks sent, "
            f"{self.sink.received - received} of {expected} outputs received ({ports})")

    async def run_batch(self, batch, *, idle: Iterator[bool], backpressure: Iterator[bool]):
        """Stream one batch under the given patterns and wait (bounded) until it is out."""
        self.source.idle, self.sink.backpressure = idle, backpressure
        self.send(batch)
        await self.drain(max(batch.stim.shape[0], batch.exp.shape[0]))

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
        await self.drain(max(after.stim.shape[0], after.exp.shape[0]))
        self.scoreboard.assert_clean()
        checked = self.scoreboard.checked - checked
        expected = after.exp.shape[0]
        assert checked == expected, f"{checked} outputs after the reset, expected {expected}"
        return checked
