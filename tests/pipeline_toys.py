"""Toy pipelines for the tests of :class:`hw.pipeline.Pipeline` (``tests/test_hw_pipeline*.py``):
a four-section chain and a driver that streams blocks through a unit under random valid and
ready, recording what went in and what came out."""

from __future__ import annotations

import random

from amaranth.hdl import Elaboratable, Module, Signal

from hw.pipeline import Pipeline

__all__ = ["SECTIONS", "FLOWS", "Chain", "block_value", "chain_out", "simulate", "run_stream"]

SECTIONS = {"a": 1.0, "b": 2.0, "c": 1.0, "d": 3.0}
#: enable_load: one enable copy per stage, or the 16-bit stage registers loaded in four parts
#: of 4 bits
FLOWS = {"registered": None, "parts": 5}


class Chain(Elaboratable):
    """Adds 1, 2, 3, 4 in the four sections (so a skipped or repeated section shows)."""

    def __init__(self, stages, enable_load=None, extract_reset=True):
        self.stages, self.enable_load = stages, enable_load
        self.extract_reset = extract_reset
        self.i_valid, self.i_ready, self.i_data = Signal(), Signal(), Signal(16)
        self.o_valid, self.o_ready, self.o_data = Signal(), Signal(), Signal(16)

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, SECTIONS, self.stages, name="t", enable_load=self.enable_load,
                        extract_reset=self.extract_reset)
        x = self.i_data
        for j, name in enumerate(SECTIONS, start=1):
            x = pipe.boundary((x + j)[:16], name)
        m.d.comb += self.o_data.eq(x)
        pipe.connect(i_valid=self.i_valid, i_ready=self.i_ready, o_valid=self.o_valid,
                     o_ready=self.o_ready)
        return m


def block_value(n):
    """Block n's input: every one of the 16 bits (every part of a register) changes."""
    return (1000 + 40503 * n) & 0xFFFF


def chain_out(v):
    return (v + 10) & 0xFFFF


def simulate(dut, bench):
    """Run the testbench coroutine ``bench`` on ``dut`` with a clock."""
    from amaranth.sim import Simulator

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def run_stream(dut, p_valid, p_ready, blocks, seed):
    """Stream ``blocks`` blocks through ``dut`` (``i_*``/``o_*`` signals) with valid and ready
    high at the rates ``p_valid``/``p_ready`` (seeded): (cycle, value) sent, the values out,
    the cycles they came out in."""
    rnd = random.Random(seed)
    sent, got, first_out = [], [], []

    async def bench(ctx):
        nxt, cycle = 0, 0
        while len(got) < blocks and cycle < 50 * blocks:
            valid = nxt < blocks and rnd.random() < p_valid
            ctx.set(dut.i_valid, valid)
            ctx.set(dut.i_data, block_value(nxt))
            ctx.set(dut.o_ready, rnd.random() < p_ready)
            if valid and ctx.get(dut.i_ready):
                sent.append((cycle, block_value(nxt)))
                nxt += 1
            if ctx.get(dut.o_valid) and ctx.get(dut.o_ready):
                got.append(ctx.get(dut.o_data))
                first_out.append(cycle)
            await ctx.tick()
            cycle += 1

    simulate(dut, bench)
    return sent, got, first_out
