"""The dot's fused step through a pipeline scope: two steps side by side on one pipeline
(:meth:`hw.pipeline.Pipeline.scope`, :meth:`hw.pipeline.Pipeline.beside`), each under its own
names, elaborate, lint clean and give golden's results (Amaranth simulation, checked against
``golden.dot_blocks``)."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest
from amaranth.hdl import Module, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

import golden
from hw.dot.fused_step import build_fused_step, dot_sections
from hw.dot.geometry import DotGeometry
from hw.elements import block_layout
from hw.pipeline import Pipeline
from hw.verilog import to_verilog
from tb.verilator import verilator_environ, verilator_executable

#: The two steps' scopes, side by side on the pipeline's own sections.
PREFIXES = ("l0", "l1")


class _TwoDots(wiring.Component):
    """Two fused dot steps side by side on one pipeline (scopes ``l0``, ``l1`` on the
    unprefixed sections): lane j computes ``RNE(c + a_j . b_j)``; the first carries ``tag``
    along (its ``side``)."""

    module_name = "two_dots"

    def __init__(self, fmt: str, k: int, stages: int | None = None):
        self.geometry = DotGeometry(golden.element_format(fmt), golden.element_format(fmt), k)
        self.sections = dot_sections(self.geometry)
        self.stages = len(self.sections) if stages is None else stages
        blk = block_layout(self.geometry.fmt_a, k)
        super().__init__({
            "i_valid": In(1), "i_ready": Out(1),
            "i": In(data.StructLayout({"a0": blk, "b0": blk, "a1": blk, "b1": blk,
                                       "c": unsigned(32), "tag": unsigned(4)})),
            "o_valid": Out(1), "o_ready": In(1),
            "o": Out(data.StructLayout({"r0": unsigned(32), "r1": unsigned(32),
                                        "tag": unsigned(4)})),
        })

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, self.sections, self.stages, name="dot")
        p = self.i
        out0 = build_fused_step(pipe.scope(PREFIXES[0], sections=None), self.geometry,
                                p.a0, p.b0, p.c, {"tag": p.tag})
        out1 = build_fused_step(pipe.scope(PREFIXES[1], sections=None), self.geometry,
                                p.a1, p.b1, p.c)
        m.d.comb += [self.o.r0.eq(out0.result), self.o.r1.eq(out1.result),
                     self.o.tag.eq(out0.side.tag)]
        pipe.connect(i_valid=self.i_valid, i_ready=self.i_ready, o_valid=self.o_valid,
                     o_ready=self.o_ready)
        return m


def _blocks(rng, fmt, k, n):
    """``n`` random blocks of ``fmt``: codes (n, k) and scales near 127 (n,)."""
    bits = golden.element_format(fmt).bits
    codes = rng.integers(0, 1 << bits, size=(n, k), dtype=np.uint8)
    scales = rng.integers(120, 135, size=n, dtype=np.uint8)
    return codes, scales


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "int8"])
def test_two_dot_steps_side_by_side_have_names_of_their_own(fmt):
    """Every named signal of a step carries its prefix (``l0_``, ``l1_``), every register
    the pipeline's (``dot_``; the second step's beside the first's, ``dot_l1_<section>``),
    and the two steps name the same signals: no name of one is in the other's namespace."""
    from amaranth.back import rtlil

    dut = _TwoDots(fmt, 4)
    text = rtlil.convert(dut, ports=None)
    wires = set(re.findall(r"^\s*wire .*\\(\S+)$", text, flags=re.M))
    ports = re.compile(r"(i|o)(\.|$)|(i|o)_(valid|ready)$|clk$|rst$")
    owner = {w: w.split("_", 1)[0] for w in wires if not w.startswith("$")
             and not ports.match(w)}
    assert set(owner.values()) == {"l0", "l1", "dot"}, sorted(
        w for w, o in owner.items() if o not in ("l0", "l1", "dot"))
    lanes = [{re.sub(r"\$\d+$", "", w[3:]) for w, o in owner.items()
              if o == p and ".side" not in w} for p in PREFIXES]  # l0 alone carries tag
    assert lanes[0] == lanes[1] and {"decode", "t_neg", "win_total", "result"} <= lanes[0]
    for section in dut.sections:
        assert f"dot_{section}" in wires and f"dot_l1_{section}" in wires, section


def test_two_dot_steps_side_by_side_lint_clean(tmp_path):
    """The Verilog of two steps side by side passes ``verilator --lint-only -Wall`` with the
    project's waivers (as every unit's, tests/test_lint.py)."""
    from tb.runner import ROOT

    dut = _TwoDots("fp8_e4m3", 4, stages=None)
    v = tmp_path / "two_dots.v"
    v.write_text(to_verilog(dut, name="two_dots"))
    env = verilator_environ()
    cmd = [verilator_executable(env), str(ROOT / "hw" / "lint_waivers.vlt"), "--lint-only",
           "-Wall", "--top-module", "two_dots", str(v)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "%Warning" not in r.stderr, r.stderr


@pytest.mark.parametrize("fmt,stages", [("fp8_e4m3", None), ("fp4_e2m1", 5)])
def test_two_dot_steps_side_by_side_give_goldens_results(fmt, stages, seed):
    """Random blocks through both steps under random valid/ready: every block pair comes out
    once, in order, each lane bit for bit ``golden.dot_blocks`` of its own operands."""
    from amaranth.sim import Simulator

    k, n = 4, 24
    rng = np.random.default_rng(seed)
    ca0, sa0 = _blocks(rng, fmt, k, n)
    cb0, sb0 = _blocks(rng, fmt, k, n)
    ca1, sa1 = _blocks(rng, fmt, k, n)
    cb1, sb1 = _blocks(rng, fmt, k, n)
    c = rng.normal(size=n).astype(np.float32)
    c[::5] = 0

    def expect(ca, sa, cb, sb):
        return golden.dot_blocks(ca[:, None], sa[:, None], cb[:, None], sb[:, None], fmt,
                                 acc=c).view(np.uint32)

    exp0, exp1 = expect(ca0, sa0, cb0, sb0), expect(ca1, sa1, cb1, sb1)
    dut = _TwoDots(fmt, k, stages)
    got = []

    def set_block(ctx, view, codes, scale):
        ctx.set(view.scale, int(scale))
        for i in range(k):
            ctx.set(view.codes[i], int(codes[i]))

    async def bench(ctx):
        sent = 0
        for _ in range(20 * n + 40):
            valid = sent < n and rng.random() < 0.7
            ready = rng.random() < 0.6
            if sent < n:
                set_block(ctx, dut.i.a0, ca0[sent], sa0[sent])
                set_block(ctx, dut.i.b0, cb0[sent], sb0[sent])
                set_block(ctx, dut.i.a1, ca1[sent], sa1[sent])
                set_block(ctx, dut.i.b1, cb1[sent], sb1[sent])
                ctx.set(dut.i.c, int(c.view(np.uint32)[sent]))
                ctx.set(dut.i.tag, sent % 16)
            ctx.set(dut.i_valid, valid)
            ctx.set(dut.o_ready, ready)
            await ctx.delay(1e-8)
            if ctx.get(dut.o_valid) and ready:
                got.append((ctx.get(dut.o.r0), ctx.get(dut.o.r1), ctx.get(dut.o.tag)))
            if valid and ctx.get(dut.i_ready):
                sent += 1
            await ctx.tick()
            if len(got) == n:
                break

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert len(got) == n
    assert [g[2] for g in got] == [j % 16 for j in range(n)]
    assert [g[0] for g in got] == [int(x) for x in exp0]
    assert [g[1] for g in got] == [int(x) for x in exp1]
