"""hw.pipeline.Pipeline's scopes: two steps in series on one pipeline and two side by side on
the same sections, in simulation under random valid/ready and in their netlists' names."""

from __future__ import annotations

import pytest
from amaranth.hdl import Elaboratable, Module, Signal
from pipeline_toys import SECTIONS, run_stream

from hw.pipeline import Pipeline

#: One toy step's sections; two steps of these names share a pipeline through scopes.
STEP = {"decode": 1.0, "round": 2.0}


def _toy_step(scope, x, add):
    """A toy datapath placed through ``scope``: ``decode`` adds ``add``, ``round`` doubles;
    one named signal of its own (``scope.name``)."""
    m = scope.module
    y = Signal(16, name=scope.name("sum"))
    m.d.comb += y.eq(x + add)
    y = scope.boundary(y, "decode")
    return scope.boundary((y << 1)[:16], "round")


class _TwoSteps(Elaboratable):
    """Two scoped toy steps, ``s0`` then ``s1``, in series on one Pipeline: out = ((x + 3) * 2
    + 5) * 2 (mod 2^16)."""

    def __init__(self, stages):
        from hw.pipeline import scoped_sections

        self.sections = {**scoped_sections("s0", STEP), **scoped_sections("s1", STEP)}
        self.stages = stages
        self.i_valid, self.i_ready, self.i_data = Signal(), Signal(), Signal(16)
        self.o_valid, self.o_ready, self.o_data = Signal(), Signal(), Signal(16)

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, self.sections, self.stages, name="t")
        s0, s1 = pipe.scope("s0"), pipe.scope("s1")
        x = _toy_step(s1, _toy_step(s0, self.i_data, 3), 5)
        m.d.comb += self.o_data.eq(x)
        pipe.connect(i_valid=self.i_valid, i_ready=self.i_ready, o_valid=self.o_valid,
                     o_ready=self.o_ready)
        return m


def _two_steps(v):
    return ((((v + 3) * 2) & 0xFFFF) + 5) * 2 & 0xFFFF


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_two_scoped_steps_share_a_pipeline(stages, seed):
    """Two steps with the same section names on one pipeline: every block comes out once, in
    order, through both; with valid and ready high, one per clock, ``stages`` cycles late."""
    dut = _TwoSteps(stages)
    sent, got, _ = run_stream(dut, 0.7, 0.6, 40, seed)
    assert got == [_two_steps(v) for _, v in sent][:len(got)] and len(got) == 40
    sent, got, out_cycles = run_stream(_TwoSteps(stages), 1.0, 1.0, 12, seed)
    assert got == [_two_steps(v) for _, v in sent][:12]
    assert out_cycles == [c + stages for c in range(12)]


def test_scopes_name_sections_and_signals():
    """A scope's boundaries and signals carry its prefix (both steps' ``decode`` registers
    and named signals are there, apart); without a scope a second step's ``decode`` is
    rejected, and the scope without a prefix names everything as the pipeline does."""
    from amaranth.back import rtlil

    text = rtlil.convert(_TwoSteps(4), ports=[])
    for scope in ("s0", "s1"):
        assert f"wire width 16 \\t_{scope}_decode\n" in text
        assert f"wire width 16 \\t_{scope}_round\n" in text
        assert f"wire width 16 \\{scope}_sum\n" in text
    pipe = Pipeline(Module(), {**STEP, "output": 1.0}, 3, name="t")
    pipe.boundary(Signal(4), "decode")
    pipe.boundary(Signal(4), "round")
    with pytest.raises(ValueError, match="boundary 'decode' crossed where 'output'"):
        pipe.boundary(Signal(4), "decode")
    plain = Pipeline(Module(), SECTIONS, 4, name="t").scope()
    assert plain.section("a") == "a" and plain.name("x") == "x"
    assert plain.signal_name("a") == "t_a" and plain.names == tuple(SECTIONS)
    inner = Pipeline(Module(), {"q0_x_a": 1.0}, 1, name="t").scope("q0").scope("x")
    assert inner.section("a") == "q0_x_a" and inner.names == ("a",)
    for bad in ("", "a-b", "q 0", 3):
        with pytest.raises((ValueError, TypeError), match="scope prefix"):
            Pipeline(Module(), SECTIONS, 4, name="t").scope(bad)


class _SideBySide(Elaboratable):
    """Two toy steps side by side on the sections ``st`` (scopes ``p0`` and ``p1``, the first
    adding 3, the second 5), then, with ``series``, a third step after them on sections of
    its own adding 7 to their sum: out = (2(x + 3) + 2(x + 5)) (* 2 after + 7 with series)."""

    def __init__(self, stages, series=False):
        from hw.pipeline import scoped_sections

        self.series = series
        self.sections = {**scoped_sections("st", STEP),
                         **(scoped_sections("s2", STEP) if series else {})}
        self.stages = stages
        self.i_valid, self.i_ready, self.i_data = Signal(), Signal(), Signal(16)
        self.o_valid, self.o_ready, self.o_data = Signal(), Signal(), Signal(16)

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, self.sections, self.stages, name="t", enable_load=5)
        a = _toy_step(pipe.scope("p0", sections="st"), self.i_data, 3)
        b = _toy_step(pipe.scope("p1", sections="st"), self.i_data, 5)
        x = (a + b)[:16]
        if self.series:
            x = _toy_step(pipe.scope("s2"), x, 7)
        m.d.comb += self.o_data.eq(x)
        pipe.connect(i_valid=self.i_valid, i_ready=self.i_ready, o_valid=self.o_valid,
                     o_ready=self.o_ready)
        return m


def _side_by_side(v, series):
    x = (((v + 3) * 2 & 0xFFFF) + ((v + 5) * 2 & 0xFFFF)) & 0xFFFF
    return ((x + 7) * 2) & 0xFFFF if series else x


@pytest.mark.parametrize("stages,series", [(1, False), (2, False)]
                         + [(s, True) for s in range(1, 5)])
def test_steps_side_by_side_share_their_stages(stages, series, seed):
    """Two steps on the same sections, the second's registers beside the first's (and its
    own skid register at the last boundary), loaded in 5-bit parts: under random valid/ready
    every block comes out once, in order, the sum of both; with valid and ready high, one
    per clock, ``stages`` cycles late."""
    sent, got, _ = run_stream(_SideBySide(stages, series), 0.7, 0.6, 40, seed)
    assert got == [_side_by_side(v, series) for _, v in sent][:len(got)] and len(got) == 40
    sent, got, out_cycles = run_stream(_SideBySide(stages, series), 1.0, 1.0, 12, seed)
    assert got == [_side_by_side(v, series) for _, v in sent][:12]
    assert out_cycles == [c + stages for c in range(12)]


def test_a_step_beside_another_has_registers_of_its_own():
    """The first step's registers carry the sections' names, the second's its prefix, each
    on enable copies of its own; a scope crosses its boundaries once and in order."""
    from amaranth.back import rtlil

    text = rtlil.convert(_SideBySide(2), ports=[])
    for reg in ("t_st_decode", "t_st_round", "t_p1_decode", "t_p1_round", "t_p1_round_skid"):
        assert f"wire width 16 \\{reg}\n" in text
    for copy in range(4, 8):  # the second step's four 4-bit parts, after the first's 0..3
        assert f"wire width 1 \\t_st_decode_en{copy}_advance\n" in text
    pipe = Pipeline(Module(), {**_scoped("st"), **_scoped("s2")}, 4, name="t")
    first, second = pipe.scope("p0", sections="st"), pipe.scope("p1", sections="st")
    with pytest.raises(ValueError, match="boundary 'st_decode' is not crossed yet"):
        pipe.beside(Signal(4), "st_decode", "p1_decode")
    first.boundary(Signal(4), "decode")
    second.boundary(Signal(4), "decode")
    with pytest.raises(ValueError, match="boundary 'decode' crossed out of order in scope"):
        second.boundary(Signal(4), "decode")


def _scoped(prefix):
    from hw.pipeline import scoped_sections

    return scoped_sections(prefix, STEP)
