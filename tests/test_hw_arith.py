"""Gate-level arithmetic helpers of hw, exhaustively against Python's operators."""

from __future__ import annotations

import pytest


# -- gate-level comparisons of hw.common, exhaustively against Python's < and > ------------
def _run_comb(m, inputs, outputs, cases):
    """Drive every tuple of ``cases`` onto ``inputs``; return the outputs' values per case."""
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


@pytest.mark.parametrize("shape", ["unsigned", "signed"])
def test_less_than_const_exhaustive(shape):
    from amaranth.hdl import Module, Signal, signed, unsigned

    from hw.common import less_than_const

    w = 5
    m = Module()
    v = Signal(signed(w) if shape == "signed" else unsigned(w))
    lo, hi = (-16, 15) if shape == "signed" else (0, 31)
    consts = range(lo - 2, hi + 3)  # includes the always-false and always-true constants
    outs = [less_than_const(m, v, c, f"lt{i}") for i, c in enumerate(consts)]
    got = _run_comb(m, [v], outs, [(x,) for x in range(lo, hi + 1)])
    for x, row in zip(range(lo, hi + 1), got, strict=True):
        assert row == [int(x < c) for c in consts], x


@pytest.mark.parametrize("sa,sb", [("u4", "u4"), ("s4", "s4"), ("u3", "s4"), ("s5", "u2")])
def test_greater_than_exhaustive(sa, sb):
    from amaranth.hdl import Module, Signal, signed, unsigned

    from hw.common import greater_than

    def sig(spec):
        w = int(spec[1:])
        shape = signed(w) if spec[0] == "s" else unsigned(w)
        rng = range(-(1 << (w - 1)), 1 << (w - 1)) if spec[0] == "s" else range(1 << w)
        return Signal(shape), rng

    (a, ra), (b, rb) = sig(sa), sig(sb)
    m = Module()
    gt = greater_than(m, a, b, "gt")
    cases = [(x, y) for x in ra for y in rb]
    got = _run_comb(m, [a, b], [gt], cases)
    assert [row[0] for row in got] == [int(x > y) for x, y in cases]
