"""hw.delay_line: a value kept in a memory ring presents, every cycle, what the stage
registers it replaces would, under random valid, ready and reset."""

from __future__ import annotations

import random

import pytest
from amaranth.hdl import Cat, Elaboratable, Module, ResetInserter, Signal
from pipeline_toys import simulate

from hw.delay_line import RING_MIN, delay_line
from hw.pipeline import Pipeline

SECTIONS = {f"s{j}": 1.0 for j in range(9)}


class Waiting(Elaboratable):
    """The input carried over the first eight boundaries in the stage registers (``o_regs``)
    and in a delay line (``o_ring``), then over the last boundary."""

    def __init__(self, stages, width=24):
        self.stages = stages
        self.i_valid, self.i_ready, self.i_data = Signal(), Signal(), Signal(width)
        self.o_valid, self.o_ready = Signal(), Signal()
        self.o_regs, self.o_ring = Signal(width), Signal(width)
        self.rst = Signal()

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, SECTIONS, self.stages, name="t")
        names = list(SECTIONS)
        x = self.i_data
        for name in names[:-1]:
            x = pipe.boundary(x, name)
        ring = delay_line(pipe, self.i_data, names[:-1], "w")
        width = len(self.i_data)
        both = pipe.boundary(Cat(x, ring), names[-1])
        m.d.comb += [self.o_regs.eq(both[:width]), self.o_ring.eq(both[width:])]
        pipe.connect(i_valid=self.i_valid, i_ready=self.i_ready, o_valid=self.o_valid,
                     o_ready=self.o_ready)
        return ResetInserter(self.rst)(m)


def _run(dut, seed, cycles=400, p_reset=0.02):
    rnd = random.Random(seed)
    seen = []

    async def bench(ctx):
        for _ in range(cycles):
            ctx.set(dut.i_valid, rnd.random() < 0.8)
            ctx.set(dut.i_data, rnd.getrandbits(len(dut.i_data)))
            ctx.set(dut.o_ready, rnd.random() < 0.6)
            ctx.set(dut.rst, rnd.random() < p_reset)
            seen.append((ctx.get(dut.o_regs), ctx.get(dut.o_ring)))
            await ctx.tick()

    simulate(dut, bench)
    return seen


@pytest.mark.parametrize("stages", [9, 7, 5, 4, 2])
@pytest.mark.parametrize("seed", [1, 2])
def test_ring_presents_the_registers_values(stages, seed):
    print(f"seed={seed}")
    seen = _run(Waiting(stages), seed)
    assert len(seen) == 400
    assert all(regs == ring for regs, ring in seen), \
        next(c for c, (r, q) in enumerate(seen) if r != q)
    assert len({regs for regs, _ in seen}) > 100  # the values move


def _rtlil(dut) -> str:
    from amaranth.back import rtlil

    return rtlil.convert(dut, ports=[dut.i_valid, dut.i_ready, dut.i_data, dut.o_valid,
                                     dut.o_ready, dut.o_regs, dut.o_ring])


def test_short_runs_stay_registers():
    # RING_MIN stages: RING_MIN - 1 registers before the last boundary, too few for a ring
    assert "memory" not in _rtlil(Waiting(RING_MIN))
    assert "t_w_p0_ring" in _rtlil(Waiting(9))
