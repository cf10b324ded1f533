"""Driving a stream unit in Amaranth's simulator: one block per clock with ``o.ready`` held
high, the outputs collected in order.  The quantizer's and dequantizer's Amaranth-simulator
tests (``tests/test_hw_quantizer.py``, ``tests/test_hw_quantize_formats.py``) share it; the
tests of bare pipeline sections (no stream ports) share :func:`simulate_pipeline`, and those
of combinational blocks :func:`simulate_comb`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = ["simulate_comb", "simulate_stream", "dot_beat", "simulate_pipeline",
           "simulate_quantizer"]


def simulate_comb(m, inputs: Sequence, outputs: Sequence, cases: Sequence) -> list:
    """Drive every tuple of ``cases`` onto ``inputs`` of the combinational logic in ``m``;
    return the outputs' values per case."""
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


def simulate_stream(dut, rows: Sequence, read: Callable, *, cycles: int | None = None,
                    count: int | None = None) -> list:
    """Run ``rows`` through the stream unit ``dut``, one per clock.

    Parameters
    ----------
    dut : amaranth component
        With ``i`` and ``o`` streams and ``latency`` (cycles from input to output).
    rows : sequence
        Per block, the (signal, value) pairs to set while it is offered.
    read : callable
        ``read(ctx)`` -> the value recorded for an output block (``o.valid`` high).
    cycles : int, optional
        The run's length; by default ``len(rows)`` + ``latency`` + 2 (a block a clock).
    count : int, optional
        Output blocks expected; by default one per row (MXDotGeneral: one per run).

    Returns
    -------
    list
        ``read(ctx)`` of each output block, in order.  The run stops after ``cycles``: a unit
        that loses a block, or stalls where the default expects none, fails the ``count``
        assertion instead of hanging.
    """
    from amaranth.sim import Simulator

    out = []
    count = len(rows) if count is None else count

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        pending = list(rows)
        for _ in range(len(rows) + dut.latency + 2 if cycles is None else cycles):
            if len(out) == count:
                break
            ctx.set(dut.i.valid, bool(pending))
            for signal, value in pending[0] if pending else ():
                ctx.set(signal, int(value))
            taken = pending and ctx.get(dut.i.ready)
            if ctx.get(dut.o.valid):
                out.append(read(ctx))
            await ctx.tick()
            if taken:
                pending.pop(0)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert len(out) == count, f"{len(out)} of {count} blocks came out"
    return out


def dot_beat(dut, a, sa, b, sb, c, first=None, last=None, alpha=None) -> list:
    """One beat of a dot unit as :func:`simulate_stream`'s ``(signal, value)`` pairs: the two
    blocks' codes and scales and MXDot's ``c`` or, with ``first`` and ``last``,
    MXDotGeneral's ``c0`` (one context), and nvfp4's ``alpha`` (``levels=2``)."""
    p = dut.i.payload
    pairs = [(p.a.scale, sa), (p.b.scale, sb)]
    pairs += [(p.a.codes[j], a[j]) for j in range(dut.block_size)]
    pairs += [(p.b.codes[j], b[j]) for j in range(dut.block_size)]
    pairs += [(p.c, c)] if first is None else [(p.c0, c), (p.first, first), (p.last, last)]
    return pairs + ([] if alpha is None else [(p.alpha, alpha)])


def simulate_pipeline(m, rows: Sequence, read: Callable, latency: int) -> list:
    """Run ``rows`` through the free-running pipeline in ``m`` (its valid and ready held
    high), one a clock: per row the (signal, value) pairs to set, and ``read(ctx)`` of each
    row ``latency`` clocks after it was set, in order (``len(rows)`` results)."""
    from amaranth.sim import Simulator

    out = []

    async def bench(ctx):
        for cycle in range(len(rows) + latency - 1):
            for signal, value in rows[cycle] if cycle < len(rows) else ():
                ctx.set(signal, value)
            await ctx.tick()
            if cycle + 1 >= latency:
                out.append(read(ctx))

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return out


def simulate_quantizer(q, raw, rounding=None, scale_mode=None, random=None) -> list:
    """Run the blocks ``raw`` (rows of ``block_size`` raw input patterns) through the
    quantizer ``q`` (:class:`hw.quantizer.MXQuantizer`), with per block the rounding and
    scale-mode ids (runtime-mode builds) and a row of random values (stochastic or runtime
    rounding); None leaves a field out (a build without it).

    Returns
    -------
    list of (int, list of int)
        Per block, the output scale and the codes.
    """
    p = q.i.payload
    rows = []
    for b, lanes in enumerate(raw):
        row = list(zip(p.data, lanes, strict=True))
        if random is not None:
            row += zip(p.random, random[b], strict=True)
        if rounding is not None:
            row.append((p.rounding, rounding[b]))
        if scale_mode is not None:
            row.append((p.scale_mode, scale_mode[b]))
        rows.append(row)
    return simulate_stream(q, rows, lambda ctx: (ctx.get(q.o.payload.scale),
                                                 [ctx.get(c) for c in q.o.payload.codes]))
