"""hw.pipeline.Pipeline in simulation: every block comes out once, in order, transformed by
every section, under random valid/ready; the latency is ``stages``; both flow controls."""

from __future__ import annotations

import random

import pytest
from amaranth.hdl import Elaboratable, Module, Signal

from hw.pipeline import Pipeline, critical_stage, default_stages

SECTIONS = {"a": 1.0, "b": 2.0, "c": 1.0, "d": 3.0}


class _Chain(Elaboratable):
    """Adds 1, 2, 3, 4 in the four sections (so a skipped or repeated section shows)."""

    def __init__(self, stages, registered_stall):
        self.stages, self.registered_stall = stages, registered_stall
        self.i_valid, self.i_ready, self.i_data = Signal(), Signal(), Signal(16)
        self.o_valid, self.o_ready, self.o_data = Signal(), Signal(), Signal(16)

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, SECTIONS, self.stages, name="t",
                        registered_stall=self.registered_stall)
        x = self.i_data
        for j, name in enumerate(SECTIONS, start=1):
            x = pipe.boundary((x + j)[:16], name)
        m.d.comb += self.o_data.eq(x)
        pipe.connect(i_valid=self.i_valid, i_ready=self.i_ready, o_valid=self.o_valid,
                     o_ready=self.o_ready)
        return m


def _run(dut, p_valid, p_ready, blocks, seed):
    from amaranth.sim import Simulator

    rnd = random.Random(seed)
    sent, got, first_out = [], [], []

    async def bench(ctx):
        nxt, cycle = 0, 0
        while len(got) < blocks and cycle < 50 * blocks:
            valid = nxt < blocks and rnd.random() < p_valid
            ctx.set(dut.i_valid, valid)
            ctx.set(dut.i_data, 1000 + nxt)
            ctx.set(dut.o_ready, rnd.random() < p_ready)
            if valid and ctx.get(dut.i_ready):
                sent.append((cycle, 1000 + nxt))
                nxt += 1
            if ctx.get(dut.o_valid) and ctx.get(dut.o_ready):
                got.append(ctx.get(dut.o_data))
                first_out.append(cycle)
            await ctx.tick()
            cycle += 1

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return sent, got, first_out


@pytest.mark.parametrize("registered_stall", [False, True])
@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_pipeline_lossless_in_order(stages, registered_stall, seed):
    sent, got, _ = _run(_Chain(stages, registered_stall), 0.7, 0.6, 60, seed)
    assert got == [v + 10 for _, v in sent][:len(got)] and len(got) == 60


@pytest.mark.parametrize("registered_stall", [False, True])
@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_pipeline_latency_and_throughput(stages, registered_stall, seed):
    """With valid and ready always high: one block per clock, each ``stages`` cycles late."""
    sent, got, out_cycles = _run(_Chain(stages, registered_stall), 1.0, 1.0, 20, seed)
    assert got == [v + 10 for _, v in sent][:20]
    assert [c for c, _ in sent][:20] == list(range(20))
    assert out_cycles == [c + stages for c in range(20)]


def test_pipeline_checks_its_boundaries():
    m = Module()
    pipe = Pipeline(m, SECTIONS, 2, name="t")
    with pytest.raises(ValueError, match="'b' crossed where 'a' is declared"):
        pipe.boundary(Signal(4), "b")
    with pytest.raises(ValueError, match="stages must be in 1..4"):
        Pipeline(Module(), SECTIONS, 5)
    with pytest.raises(ValueError, match="registered_stall"):
        Pipeline(Module(), SECTIONS, 2, registered_stall=True).hold_when(Signal())


def test_pipeline_names_which_boundaries_hold_registers():
    pipe = Pipeline(Module(), SECTIONS, 2, name="t")
    assert pipe.names == ("a", "b", "c", "d")
    assert [pipe.registers(name) for name in pipe.names] == list(pipe.registered)
    assert sum(pipe.registered) == 2 and pipe.registers("d")  # the last one always
    with pytest.raises(ValueError, match="no boundary 'e'; declared: a, b, c, d"):
        pipe.registers("e")


@pytest.mark.parametrize("registered_stall", [False, True])
def test_pipeline_gives_a_registered_boundarys_enable_once_crossed(registered_stall):
    """A register built outside the pipeline (a DSP block's) loads with its boundary's
    enable: the one that loads the pipeline's own register there."""
    m = Module()
    pipe = Pipeline(m, SECTIONS, 2, name="t", registered_stall=registered_stall)
    first = next(name for name in pipe.names if pipe.registers(name))
    unregistered = next(name for name in pipe.names if not pipe.registers(name))
    with pytest.raises(ValueError, match=f"boundary '{first}' is not crossed yet"):
        pipe.enable(first)
    with pytest.raises(ValueError, match=f"boundary '{unregistered}' holds no register"):
        pipe.enable(unregistered)
    value = Signal(4)
    for name in pipe.names:
        value = pipe.boundary(value, name)
        if name == first:
            assert pipe.enable(name).name == f"t_{first}_en"
    assert [pipe.enable(n).name for n in pipe.names if pipe.registers(n)] \
        == [f"t_{n}_en" for n in pipe.names if pipe.registers(n)]


@pytest.mark.parametrize("delays,expected", [
    ([3.0], 1),
    ([1.0, 1.0, 1.0, 1.0], 4),  # no two sections fit in one stage
    ([3.0, 1.0, 2.0, 3.0], 3),  # 1 + 2 <= 3: one merge; 3 + 1 > 3, so not two
    ([0.2, 1.5, 3.5, 2.0, 1.5], 3),  # input + decode, norm, exp + scale (the quantizer's)
    ([2.0, 4.0, 3.0, 3.5, 3.5, 2.5], 6),  # the dequantizer's: no pair within 4.0
    ([0.1, 0.2, 0.3], 2),  # 0.1 + 0.2 is 0.30000000000000004 in floating point: fits
])
def test_default_stages_is_the_fewest_with_the_longest_section_as_critical(delays, expected):
    assert default_stages(delays) == expected


@pytest.mark.parametrize("delays,stages,expected", [
    ([3.0, 1.0, 2.0, 3.0], 4, 3.0),  # every boundary: the longest section
    ([3.0, 1.0, 2.0, 3.0], 3, 3.0),  # 1 + 2 share a stage
    ([3.0, 1.0, 2.0, 3.0], 2, 5.0),  # 3 + 1 | 2 + 3 (or 3 | 1 + 2 + 3 = 6: worse)
    ([3.0, 1.0, 2.0, 3.0], 1, 9.0),  # all in one stage
])
def test_critical_stage_is_the_longest_stage_of_the_placement(delays, stages, expected):
    assert critical_stage(delays, stages) == expected
