"""Reusable cocotb pieces for ``amaranth.lib.stream`` ports: payload codec, source, sink,
idle/backpressure patterns, a scoreboard and a small testbench base class.

Port naming follows Amaranth's Verilog flattening: a stream member ``i`` becomes
``i__payload``, ``i__valid`` and ``i__ready``.  A payload is driven and sampled as one wide
integer per cycle (one VPI write, never one per lane).

Timing discipline (same for every driver here): after a rising edge a driver writes its
outputs for the new cycle, then waits for :class:`~cocotb.triggers.ReadOnly` and samples the
settled handshake; a transfer happened at the next rising edge iff ``valid & ready`` was
sampled high.  This is independent of whether the simulator shows pre- or post-edge values
right at the edge.

Payload codec: :class:`BitLayout` maps named fields (from the unit's JSON sidecar, see
``hw/cli.py``) to payload byte matrices with vectorized numpy, and converts them to Python
integers (cocotb) or ``$readmemh`` text (bulk mode).
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator

import numpy as np

__all__ = ["BitLayout", "StreamSource", "StreamSink", "Scoreboard", "StreamTB",
           "random_pattern", "bursty_pattern", "never", "always"]


# ----------------------------------------------------------------------------------------------
# Payload codec
# ----------------------------------------------------------------------------------------------
class BitLayout:
    """Named bit fields of a wide payload, packed LSB-first, converted in bulk with numpy.

    Payload batches are ``(n, nbytes)`` uint8 matrices: row ``j`` is payload ``j`` as
    little-endian bytes (unused top bits zero).  Byte-aligned fields (the common case: fp32,
    bf16, fp16 lanes, 8-bit codes) are copied as bytes; others go through bit matrices.

    Parameters
    ----------
    width : int
        Total payload width in bits.
    fields : list of dict
        ``{"name", "lsb", "width"}`` and, for an array of lanes, ``"array": {"length",
        "elem_width"}`` -- the format of the ``fields`` entries of a sidecar port.
    """

    def __init__(self, width: int, fields: list[dict]):
        self.width = int(width)
        self.nbytes = (self.width + 7) // 8
        self.fields = {f["name"]: f for f in fields}

    @classmethod
    def from_sidecar(cls, sidecar: dict, port: str) -> BitLayout:
        """Layout of port ``port`` (e.g. ``"i__payload"``) of a unit's sidecar dict."""
        for p in sidecar["ports"]:
            if p["name"] == port:
                return cls(p["width"], p.get("fields") or [{"name": "value", "lsb": 0,
                                                             "width": p["width"]}])
        raise KeyError(f"no port {port!r} in sidecar of {sidecar.get('module')}")

    def _geometry(self, name):
        f = self.fields[name]
        arr = f.get("array")
        return f, (arr["length"] if arr else 1), (arr["elem_width"] if arr else f["width"])

    # -- numpy field arrays <-> payload byte matrices ------------------------------------------
    def pack(self, n: int, **values) -> np.ndarray:
        """Payload byte matrix ``(n, nbytes)`` from field arrays (shape ``(n,)`` or
        ``(n, length)``); missing fields are zero."""
        out = np.zeros((n, self.nbytes), np.uint8)
        for name, v in values.items():
            f, length, w = self._geometry(name)
            if w > 64:
                raise ValueError(f"field {name}: elements wider than 64 bits")
            v = np.ascontiguousarray(np.asarray(v).astype("<u8")).reshape(n, -1)
            if v.shape[1] != length:
                raise ValueError(f"field {name}: expected {length} lanes, got {v.shape[1]}")
            lo = f["lsb"]
            if lo % 8 == 0 and w % 8 == 0:  # whole bytes: copy
                b = v.view(np.uint8).reshape(n, length, 8)[:, :, :w // 8]
                out[:, lo // 8:lo // 8 + length * w // 8] = b.reshape(n, -1)
                continue
            bits = np.unpackbits(v.view(np.uint8).reshape(n, -1, 8), axis=2, bitorder="little")
            span = np.zeros((n, lo % 8 + f["width"]), np.uint8)
            span[:, lo % 8:] = bits[:, :, :w].reshape(n, -1)
            b = np.packbits(span, axis=1, bitorder="little")
            out[:, lo // 8:lo // 8 + b.shape[1]] |= b
        return out

    def unpack(self, rows: np.ndarray) -> dict:
        """Field arrays (uint64; arrays as ``(n, length)``) from a payload byte matrix."""
        out = {}
        n = rows.shape[0]
        for name in self.fields:
            f, length, w = self._geometry(name)
            lo = f["lsb"]
            if lo % 8 == 0 and w in (8, 16, 32, 64):
                b = np.ascontiguousarray(rows[:, lo // 8:lo // 8 + length * w // 8])
                v = b.view(f"<u{w // 8}").reshape(n, length).astype(np.uint64)
            else:
                bits = np.unpackbits(rows, axis=1, bitorder="little")[:, lo:lo + f["width"]]
                b64 = np.zeros((n, length, 64), np.uint8)
                b64[:, :, :w] = bits.reshape(n, length, w)
                v = np.packbits(b64, axis=2, bitorder="little").view("<u8")[:, :, 0]
                v = v.astype(np.uint64)
            out[name] = v if f.get("array") else v[:, 0]
        return out

    # -- byte matrices <-> Python ints (cocotb) -----------------------------------------------
    def to_ints(self, rows: np.ndarray) -> list[int]:
        return [int.from_bytes(row.tobytes(), "little") for row in rows]

    def from_ints(self, ints: Iterable[int]) -> np.ndarray:
        raw = b"".join(int(x).to_bytes(self.nbytes, "little") for x in ints)
        return np.frombuffer(raw, np.uint8).reshape(-1, self.nbytes).copy()

    # -- byte matrices <-> $readmemh / $writememh text ----------------------------------------
    @property
    def hex_digits(self) -> int:
        return (self.width + 3) // 4

    def to_hex(self, rows: np.ndarray) -> bytes:
        """One line of ``hex_digits`` hex digits per row, most significant digit first."""
        n, d = rows.shape[0], self.hex_digits
        text = np.ascontiguousarray(rows[:, ::-1]).tobytes().hex().encode()
        chars = np.frombuffer(text, np.uint8).reshape(n, -1)[:, 2 * self.nbytes - d:]
        return np.concatenate([chars, np.full((n, 1), ord("\n"), np.uint8)], axis=1).tobytes()

    def from_hex(self, text: bytes | str) -> np.ndarray:
        """Inverse of :meth:`to_hex`; tolerates ``//`` comments, blank lines and short words."""
        return np.ascontiguousarray(_hex_words(text, self.hex_digits)[:, ::-1])

    def to_bin(self, rows: np.ndarray) -> bytes:
        """Binary ``$fread`` image: ``nbytes`` bytes per row, most significant byte first."""
        return np.ascontiguousarray(rows[:, ::-1]).tobytes()

    def from_bin(self, data: bytes) -> np.ndarray:
        """Rows from a Verilator ``$fwrite("%u")`` image: ``4 * ceil(width / 32)`` bytes per
        payload, least significant byte first."""
        step = 4 * ((self.width + 31) // 32)
        if len(data) % step:
            raise ValueError(f"{len(data)} bytes is not a whole number of {step}-byte payloads")
        rows = np.frombuffer(data, np.uint8).reshape(-1, step)
        return np.ascontiguousarray(rows[:, :self.nbytes])


def _hex_words(text: bytes | str, d: int) -> np.ndarray:
    """Words of ``d`` hex digits from memory-file text, as big-endian byte rows."""
    if isinstance(text, str):
        text = text.encode()
    nbytes = (d + 1) // 2
    raw = np.frombuffer(text, np.uint8)
    if raw.size % (d + 1) == 0 and raw.size and np.all(raw[d::d + 1] == ord("\n")):
        c = raw.reshape(-1, d + 1)[:, :d]  # the common case: fixed-width lines
    else:
        words = [w for line in text.splitlines() for w in line.split(b"//")[0].split()
                 if not w.startswith(b"@")]
        if not words:
            return np.zeros((0, nbytes), np.uint8)
        words = [w.rjust(d, b"0")[-d:] for w in words]
        c = np.frombuffer(b"".join(words), np.uint8).reshape(len(words), d)
    if d % 2:
        c = np.concatenate([np.full((c.shape[0], 1), ord("0"), np.uint8), c], axis=1)
    try:
        b = bytes.fromhex(np.ascontiguousarray(c).tobytes().decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        raise ValueError("non-hex digit (x/z?) in memory file") from None
    return np.frombuffer(b, np.uint8).reshape(c.shape[0], nbytes)


# ----------------------------------------------------------------------------------------------
# Idle and backpressure patterns: infinite generators of bool, True = "hold off this cycle"
# ----------------------------------------------------------------------------------------------
def never() -> Iterator[bool]:
    """Never idle / never stall."""
    return itertools.repeat(False)


def always() -> Iterator[bool]:
    return itertools.repeat(True)


def random_pattern(rng: np.random.Generator, p: float, chunk: int = 4096) -> Iterator[bool]:
    """Independent cycles, each idle with probability ``p``."""
    while True:
        yield from (rng.random(chunk) < p).tolist()


def bursty_pattern(rng: np.random.Generator, max_run: int = 16) -> Iterator[bool]:
    """Alternating runs of busy and idle cycles of random length 1..max_run."""
    state = False
    while True:
        yield from itertools.repeat(state, int(rng.integers(1, max_run + 1)))
        state = not state


# ----------------------------------------------------------------------------------------------
# Drivers
# ----------------------------------------------------------------------------------------------
class _StreamPort:
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
    """

    def __init__(self, dut, prefix: str, clock, *, idle: Iterator[bool] | None = None):
        super().__init__(dut, prefix, clock)
        self.idle = idle or never()
        self.queue: deque[int] = deque()
        self.sent = 0
        self.paused = False
        self._valid = 0
        self._ready = 0
        self.valid.value = 0
        self._task = None

    def start(self):
        import cocotb

        self._task = cocotb.start_soon(self._run())
        return self

    def send(self, items: Iterable[int]):
        self.queue.extend(items)

    def clear(self):
        """Drop everything not yet transferred and lower ``valid`` at the next edge."""
        self.queue.clear()
        self._drop_current = True

    @property
    def idle_now(self) -> bool:
        return not self.queue and not self._valid

    async def _run(self):
        from cocotb.triggers import ReadOnly, RisingEdge

        self._drop_current = False
        while True:
            await RisingEdge(self.clock)
            if self._valid and self._ready:  # transferred at this edge
                if self.queue:  # (clear() may have emptied it meanwhile)
                    self.queue.popleft()
                self.sent += 1
                self._valid = 0
            if self._drop_current:
                self._valid = 0
                self._drop_current = False
            if not self._valid and self.queue and not self.paused and not next(self.idle):
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
            if ready and int(self.valid.value):
                self.received += 1
                value = int(self.payload.value)
                if self.callback is not None:
                    self.callback(value)
                else:
                    self.items.append(value)


# ----------------------------------------------------------------------------------------------
# Scoreboard
# ----------------------------------------------------------------------------------------------
class Scoreboard:
    """In-order comparison of received payloads against expected ones.

    Parameters
    ----------
    describe : callable(index, expected, actual, context) -> str
        Builds a human-readable mismatch report (decoded fields).
    max_reports : int
        Mismatch reports logged in full; the rest are only counted.
    """

    def __init__(self, describe: Callable | None = None, *, max_reports: int = 10, log=None):
        self.expected: deque = deque()
        self.describe = describe
        self.max_reports = max_reports
        self.log = log or logging.getLogger("cocotb.scoreboard")
        self.checked = 0
        self.mismatches = 0
        self.unexpected = 0
        self.reports: list[str] = []

    def expect(self, items: Iterable[tuple[int, object]]):
        """Queue ``(expected_payload, context)`` pairs, in output order."""
        self.expected.extend(items)

    def clear(self):
        self.expected.clear()

    def receive(self, actual: int):
        if not self.expected:
            self.unexpected += 1
            self.log.error("unexpected output %#x (nothing expected)", actual)
            return
        exp, ctx = self.expected.popleft()
        index = self.checked
        self.checked += 1
        if actual != exp:
            self.mismatches += 1
            if self.mismatches <= self.max_reports:
                msg = (self.describe(index, exp, actual, ctx) if self.describe
                       else f"output {index}: expected {exp:#x}, got {actual:#x}")
                self.reports.append(msg)
                self.log.error("MISMATCH %s", msg)

    @property
    def done(self) -> bool:
        return not self.expected

    def assert_clean(self):
        assert self.unexpected == 0, f"{self.unexpected} unexpected outputs"
        assert not self.expected, f"{len(self.expected)} expected outputs never arrived"
        assert self.mismatches == 0, (f"{self.mismatches} of {self.checked} outputs mismatched; "
                                      f"first: {self.reports[:1]}")


# ----------------------------------------------------------------------------------------------
# Testbench base class
# ----------------------------------------------------------------------------------------------
class StreamTB:
    """Clock, synchronous reset, one stream source (``i``), one sink (``o``), a scoreboard.

    Parameters
    ----------
    dut
        cocotb handle with ``clk``, ``rst`` and stream ports ``i``/``o``.
    idle, backpressure : iterator of bool, optional
        Initial patterns (changeable later through ``source.idle``/``sink.backpressure``).
    describe : callable, optional
        Mismatch report builder for the scoreboard.
    """

    def __init__(self, dut, *, idle=None, backpressure=None, describe=None, period_ns=10,
                 in_port="i", out_port="o"):
        import cocotb
        from cocotb.clock import Clock

        self.dut = dut
        self.log = logging.getLogger("cocotb.tb")
        self.clock = dut.clk
        dut.rst.value = 1
        cocotb.start_soon(Clock(dut.clk, period_ns, unit="ns").start())
        self.scoreboard = Scoreboard(describe)
        self.source = StreamSource(dut, in_port, dut.clk, idle=idle).start()
        self.sink = StreamSink(dut, out_port, dut.clk, backpressure=backpressure,
                               callback=self.scoreboard.receive).start()

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

    def send(self, payloads: Iterable[int], expected: Iterable[tuple[int, object]]):
        """Queue input payloads and the outputs they must produce (with report context)."""
        self.scoreboard.expect(expected)
        self.source.send(payloads)

    def finish_stream_run(self, config: str, k: int, seed: int, seconds: float) -> None:
        """Record the stream run's summary row (blocks, elements, rate), then fail on any
        mismatch, so a failing run still shows up in the closing table."""
        from .report import write_summary

        sb = self.scoreboard
        write_summary(config=config, blocks=sb.checked, elements=sb.checked * k,
                      mismatches=sb.mismatches, seed=seed,
                      checked_per_s=round(sb.checked * k / seconds))
        sb.assert_clean()

    async def check_reset_in_traffic(self, before, after, *, describe_after=None,
                                     quiet_cycles: int = 30) -> int:
        """Reset with blocks in flight; the unit must come back empty and work again.

        ``before`` and ``after`` are ``(payload ints, expected ints)``.  ``before`` is sent and
        cut off by a reset 12 cycles in (its blocks are gone, by design); then no output may
        appear for ``quiet_cycles`` cycles without new input, and every block of ``after``
        must come out right.  Returns the number of blocks checked after the reset.
        """
        from cocotb.triggers import ReadOnly, RisingEdge

        stim, exp = before
        self.send(stim, zip(exp, range(len(exp)), strict=True))
        await self.cycles(12)
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
        if describe_after is not None:
            self.scoreboard.describe = describe_after
        stim, exp = after
        checked = self.scoreboard.checked
        self.send(stim, zip(exp, range(len(exp)), strict=True))
        await self.drain(2000)
        self.scoreboard.assert_clean()
        checked = self.scoreboard.checked - checked
        assert checked == len(exp), f"{checked} blocks after the reset, expected {len(exp)}"
        return checked

    async def drain(self, timeout_cycles: int):
        """Wait until every expected output arrived (or fail after ``timeout_cycles``)."""
        from cocotb.triggers import RisingEdge

        for _ in range(timeout_cycles):
            if self.scoreboard.done and self.source.idle_now:
                return
            await RisingEdge(self.clock)
        raise AssertionError(f"timeout: {len(self.scoreboard.expected)} outputs outstanding, "
                             f"{len(self.source.queue)} inputs not accepted")
