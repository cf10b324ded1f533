"""Source and sink drivers for ``amaranth.lib.stream`` ports.

Port naming follows Amaranth's Verilog flattening: a stream member ``i`` becomes
``i__payload``, ``i__valid`` and ``i__ready``.  A payload is driven and sampled as one wide
integer per cycle (one VPI write, never one per lane).

Timing discipline (same for both drivers): after a rising edge a driver writes its outputs
for the new cycle, then waits for :class:`~cocotb.triggers.ReadOnly` and samples the settled
handshake; a transfer happened at the next rising edge iff ``valid & ready`` was sampled
high.  This is independent of whether the simulator shows pre- or post-edge values right at
the edge.  Each driver runs forever as a background task, one clock edge per iteration.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from .patterns import never

__all__ = ["StreamSource", "StreamSink"]


class _StreamPort:
    """Handles of one stream port ``{prefix}__payload/valid/ready`` (``ready`` optional)."""

    def __init__(self, dut, prefix: str, clock):
        self.clock = clock
        self.valid = getattr(dut, f"{prefix}__valid")
        self.payload = getattr(dut, f"{prefix}__payload")
        self.ready = getattr(dut, f"{prefix}__ready", None)
        self.log = logging.getLogger(f"cocotb.{prefix}")


class StreamSource(_StreamPort):
    """Drives a stream input of the DUT from a queue of integer payloads.

    Parameters
    ----------
    dut, prefix, clock
        The port is ``{prefix}__payload/valid/ready``.
    idle : iterator of bool, optional
        Consulted once per cycle in which a new item could start: True inserts an idle cycle.

    Once ``valid`` is raised, it and the payload hold until the transfer (stream rules).
    ``bubbles`` counts the cycles the idle pattern held queued data back, ``back_to_back``
    the transfers on the edge right after another transfer (stream coverage).
    """

    def __init__(self, dut, prefix: str, clock, *, idle: Iterator[bool] | None = None):
        super().__init__(dut, prefix, clock)
        self.idle = idle or never()
        self.queue: deque[int] = deque()
        self.sent = 0
        self.bubbles = 0
        self.back_to_back = 0
        self.paused = False
        self._valid = 0
        self._ready = 0
        self._drop_current = False
        self.valid.value = 0
        self._task = None

    def start(self):
        import cocotb

        self._task = cocotb.start_soon(self._run())
        return self

    def send(self, items: Iterable[int]):
        """Queue payloads (ints) for transfer, in order."""
        self.queue.extend(items)

    def clear(self):
        """Drop everything not yet transferred and lower ``valid`` at the next edge."""
        self.queue.clear()
        self._drop_current = True

    @property
    def idle_now(self) -> bool:
        """Nothing queued and nothing being offered."""
        return not self.queue and not self._valid

    async def _run(self):
        from cocotb.triggers import ReadOnly, RisingEdge

        transferred = False
        while True:
            await RisingEdge(self.clock)
            if self._valid and self._ready:  # transferred at this edge
                if self.queue:  # (clear() may have emptied it meanwhile)
                    self.queue.popleft()
                self.sent += 1
                self.back_to_back += transferred
                self._valid = 0
                transferred = True
            else:
                transferred = False
            if self._drop_current:
                self._valid = 0
                self._drop_current = False
            if not self._valid and self.queue and not self.paused:
                if next(self.idle):
                    self.bubbles += 1
                else:
                    self.payload.value = self.queue[0]
                    self._valid = 1
            self.valid.value = self._valid
            await ReadOnly()
            self._ready = 1 if self.ready is None else int(self.ready.value)


class StreamSink(_StreamPort):
    """Accepts a stream output of the DUT, with a backpressure pattern.

    Parameters
    ----------
    backpressure : iterator of bool, optional
        One value per cycle: True holds ``ready`` low in that cycle.
    callback : callable(int), optional
        Called with each received payload; otherwise payloads accumulate in :attr:`items`.
    """

    def __init__(self, dut, prefix: str, clock, *, backpressure: Iterator[bool] | None = None,
                 callback: Callable[[int], None] | None = None):
        super().__init__(dut, prefix, clock)
        self.backpressure = backpressure or never()
        self.callback = callback
        self.items: list[int] = []
        self.received = 0
        self.cycles_valid = 0
        self.stalls = 0  # cycles with valid high and ready low (stream coverage)
        if self.ready is not None:
            self.ready.value = 0

    def start(self):
        import cocotb

        cocotb.start_soon(self._run())
        return self

    async def _run(self):
        from cocotb.triggers import ReadOnly, RisingEdge

        while True:
            await RisingEdge(self.clock)
            ready = 0 if next(self.backpressure) else 1
            if self.ready is not None:
                self.ready.value = ready
            await ReadOnly()
            valid = int(self.valid.value)
            if valid and not ready:
                self.stalls += 1
            if ready and valid:
                self.received += 1
                value = int(self.payload.value)
                if self.callback is not None:
                    self.callback(value)
                else:
                    self.items.append(value)


