"""hw.pipeline.Pipeline in simulation: every block comes out once, in order, transformed by
every section, under random valid/ready; the latency is ``stages``; both flow controls, the
registered one also with its enable copied per slice of each stage."""

from __future__ import annotations

import random
import re

import pytest
from amaranth.hdl import Elaboratable, Module, Signal

from hw.pipeline import Pipeline, place_registers

SECTIONS = {"a": 1.0, "b": 2.0, "c": 1.0, "d": 3.0}
# Pipeline keyword arguments of each flow control; "sliced": four enable copies per stage of
# the 16-bit chain (slices of 4 bits).
FLOW = {"default": {}, "registered": {"registered_stall": True},
        "sliced": {"registered_stall": True, "enable_fanout": 5}}


class _Chain(Elaboratable):
    """Adds 1, 2, 3, 4 in the four sections (so a skipped or repeated section shows)."""

    def __init__(self, stages, flow):
        self.stages, self.flow = stages, FLOW[flow]
        self.i_valid, self.i_ready, self.i_data = Signal(), Signal(), Signal(16)
        self.o_valid, self.o_ready, self.o_data = Signal(), Signal(), Signal(16)

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, SECTIONS, self.stages, name="t", **self.flow)
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


@pytest.mark.parametrize("flow", list(FLOW))
@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_pipeline_lossless_in_order(stages, flow, seed):
    sent, got, _ = _run(_Chain(stages, flow), 0.7, 0.6, 60, seed)
    assert got == [v + 10 for _, v in sent][:len(got)] and len(got) == 60


@pytest.mark.parametrize("flow", list(FLOW))
@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_pipeline_latency_and_throughput(stages, flow, seed):
    """With valid and ready always high: one block per clock, each ``stages`` cycles late."""
    sent, got, out_cycles = _run(_Chain(stages, flow), 1.0, 1.0, 20, seed)
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


def test_enable_copies_per_slice():
    """enable_fanout=5 on the 16-bit chain: four enable registers per stage (slices of 4 bits),
    none merged; only with registered_stall, and a positive integer."""
    from amaranth.back import verilog

    dut = _Chain(2, "sliced")
    text = verilog.convert(dut, ports=[dut.i_valid, dut.i_ready, dut.i_data, dut.o_valid,
                                       dut.o_ready, dut.o_data])
    # each copy is a register (reset 1: a stage may advance), named after the enable it is
    enables = set(re.findall(r"reg (t_\w+_en\d*) = 1'h1;", text))
    stages = [name for name, reg in zip(SECTIONS, place_registers(list(SECTIONS.values()), 2),
                                        strict=True) if reg]
    assert enables == {f"t_{b}_en{j}" if j else f"t_{b}_en" for b in stages for j in range(4)}
    for bad in (0, -1, 2.5, "4"):
        with pytest.raises(ValueError, match="enable_fanout must be a positive integer"):
            Pipeline(Module(), SECTIONS, 2, registered_stall=True, enable_fanout=bad)
    with pytest.raises(ValueError, match="enable_fanout needs registered_stall"):
        Pipeline(Module(), SECTIONS, 2, enable_fanout=8)
