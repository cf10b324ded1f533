"""Fast checks of the dot-product units without a simulator: parameters, widths, CLI, sidecar."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from fractions import Fraction

import oracle
import pytest

import golden
from hw.dot import DotGeometry, MXDot, MXDotGeneral, units_max
from hw.dot.geometry import GUARD
from hw.pipeline import critical_stage, registered_boundaries
from hw.sidecar import sidecar
from tb.runner import ROOT

FMTS = list(golden.FORMATS)

# Components built here only to inspect their attributes are never elaborated, by design.
pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")


@pytest.mark.parametrize("fmt_a", FMTS)
@pytest.mark.parametrize("fmt_b", FMTS)
def test_sum_width_holds_the_largest_block_sum(fmt_a, fmt_b):
    """W is the exact bit count of k * max|a| * max|b| in units of 2^(lsb_a + lsb_b), from
    the spec values (so the RTL sum can neither overflow nor be wider than needed)."""
    units = [oracle.units_max(fmt_a), oracle.units_max(fmt_b)]
    for k in (2, 32, 64):
        g = DotGeometry(golden.element_format(fmt_a), golden.element_format(fmt_b), k)
        assert [units_max(g.fmt_a), units_max(g.fmt_b)] == units
        assert g.sum_bits == (k * units[0] * units[1]).bit_length()


@pytest.mark.parametrize("fmt_a", FMTS)
@pytest.mark.parametrize("fmt_b", FMTS)
def test_window_is_exact(fmt_a, fmt_b):
    """The N-bit window of c + T meets the conditions of the exactness argument of
    docs/dot.md ("The exact c + T"), with exact Fractions for the largest operands."""
    for k in (2, 32, 64):
        g = DotGeometry(golden.element_format(fmt_a), golden.element_format(fmt_b), k)
        n = g.window_bits
        s_max = k * oracle.units_max(fmt_a) * oracle.units_max(fmt_b)
        # T anchoring (its lowest bit at window bit G+1): the largest |T| stays below the
        # carry bit N-1, so the window sum cannot overflow.
        assert Fraction(s_max) * 2 ** (GUARD + 1) < Fraction(2) ** (n - 1)
        # c anchors and T loses bits, c normal: the result's leading bit p >= F + N - 4 must
        # put every fp32 rounding boundary near it on a multiple of 2^F (p - 24 >= F).
        assert n - 4 >= 24
        # ... c subnormal or zero: the frame F = -126 - (N - 3) lies on the subnormal grid.
        assert -126 - (n - 3) <= -150
        # T anchors and c loses bits: |c| < 2^(eT-3) leaves p >= eT - 1 = F + G - 1 >= F + 24.
        assert GUARD - 1 >= 24


MAX_STAGES = MXDot("fp8_e4m3", block_size=32).max_stages


@pytest.mark.parametrize("fa", FMTS)
def test_every_configuration_has_a_usable_pipeline_and_the_fewest_stages_by_default(fa):
    """For every format pair, block size and multipliers, of both dot units: the sections
    (name -> estimated delay) give the depths 1..max_stages, each registering the output
    boundary and rejected beyond; the default depth is the fewest stages whose critical
    stage is the longest section (docs/dot.md), as module name and parameters say.  Which
    boundaries a depth registers is the balancer's business (test_hw_pipeline_placement holds it
    to the minimax); that any placement computes the same function is the formal proofs' and the
    simulation's (which also measures the latency, tb.standard_tests.back_to_back)."""
    for fb, k, multipliers in itertools.product(FMTS, (2, 32, 64), ("lut", "dsp", "mult18x18d")):
        dot = MXDot(fa, fb, block_size=k, multipliers=multipliers)
        general = MXDotGeneral(fa, fb, block_size=k, multipliers=multipliers)
        for unit in (dot, general):
            where = (type(unit).__name__, fa, fb, k, multipliers)
            delays = list(unit.sections.values())
            assert delays and all(d > 0 for d in delays), where
            assert unit.max_stages == len(delays), where
            assert 1 <= unit.stages == unit.latency <= unit.max_stages, where
            assert unit.parameters["stages"] == unit.stages, where
            assert f"_s{unit.stages}" in unit.module_name, where
            assert critical_stage(delays, unit.stages) == max(delays), where
            if unit.stages > 1:
                assert critical_stage(delays, unit.stages - 1) > max(delays), where
            for stages in (1, unit.max_stages):
                registered = registered_boundaries(unit.sections, stages)
                assert len(registered) == stages and registered[-1] == list(unit.sections)[-1]
        # MXDotGeneral's c comes through the accumulator's forwarding mux: the same sections,
        # none estimated shorter, one longer
        assert list(general.sections) == list(dot.sections), (fa, fb, k, multipliers)
        longer = [n for n in dot.sections if general.sections[n] > dot.sections[n]]
        assert len(longer) == 1 and all(general.sections[n] >= dot.sections[n]
                                        for n in dot.sections), (fa, fb, k, multipliers)
    unit = MXDot("fp8_e5m2", block_size=32)
    assert MXDot("fp8_e5m2", block_size=32, stages=unit.max_stages).latency == unit.max_stages
    with pytest.raises(ValueError, match=f"stages must be in 1..{unit.max_stages}"):
        MXDot("fp8_e5m2", block_size=32, stages=unit.max_stages + 1)
    assert MXDot("fp8_e5m2", block_size=32, stages=17).module_name.endswith("_s17")


@pytest.mark.parametrize("kwargs,exc", [
    ({"fmt_a": "fp9"}, ValueError),
    ({"fmt_a": 3}, TypeError),
    ({"block_size": 48}, ValueError),
    ({"block_size": 1}, ValueError),
    ({"block_size": 128}, ValueError),
    ({"block_size": 32.0}, TypeError),
    ({"stages": 0}, ValueError),
    ({"stages": MAX_STAGES + 1}, ValueError),
    ({"multipliers": "dsp48"}, ValueError),
    ({"multipliers": 1}, TypeError),
])
def test_bad_parameters_raise(kwargs, exc):
    args = {"fmt_a": "fp8_e4m3", "block_size": 32, "stages": 4, **kwargs}
    fa = args.pop("fmt_a")
    with pytest.raises(exc):
        MXDot(fa, **args)


@pytest.mark.parametrize("contexts", [0, 3, 128])
def test_bad_contexts_raise(contexts):
    with pytest.raises(ValueError):
        MXDotGeneral("fp8_e4m3", contexts=contexts)


def test_attributes_and_ports():
    d = MXDot("int8", "fp6_e2m3", block_size=16, stages=3)
    assert d.latency == 3 and d.module_name == "mx_dot_int8_fp6_e2m3_k16_s3"
    assert d.parameters["format_a"] == "int8" and d.parameters["block_size"] == 16
    assert d.signature.members["i"].signature.members["payload"].shape.size \
        == 2 * 8 + 16 * 8 + 16 * 6 + 32
    g = MXDotGeneral("fp8_e4m3", block_size=8, contexts=8, stages=5)
    assert g.latency == 5 and g.ctx_bits == 3
    # the run markers and the context id are as wide as docs/dot.md says (the testbench
    # builds its layout from the sidecar, so it would follow a wider field such as
    # `first: unsigned(2)`)
    fields = g.signature.members["i"].signature.members["payload"].shape
    assert {name: fields[name].width for name in ("c0", "first", "last", "ctx")} \
        == {"c0": 32, "first": 1, "last": 1, "ctx": 3}
    assert g.signature.members["o"].signature.members["payload"].shape.size == 32 + 3
    assert MXDotGeneral("fp4_e2m1", contexts=1).ctx_bits == 0


def test_dsp_multipliers_use_the_multiply_operator(tmp_path):
    """``multipliers="dsp"`` builds the lane products with ``*`` (one multiply per lane, for
    the synthesis tool's DSPs), the default builds none; the name and sidecar say which.
    (Same function: the int8 x int8 dsp configuration of ``make sim`` checks every code pair.)"""
    out = tmp_path / "d.v"
    r = _cli("generate", "dot", "--format", "int8", "--block-size", "4", "--stages", "2",
             "--multipliers", "dsp", "-o", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "module mx_dot_int8_int8_k4_s2_dsp" in text
    assert text.count(" * ") == 4
    assert json.loads(out.with_suffix(".json").read_text())["parameters"]["multipliers"] == "dsp"
    r = _cli("generate", "dot", "--format", "int8", "--block-size", "4", "--stages", "2",
             "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert " * " not in out.read_text()
    g = MXDotGeneral("int8", block_size=4, multipliers="dsp")
    assert g.module_name.endswith("_dsp") and g.parameters["multipliers"] == "dsp"


@pytest.mark.parametrize("stages", [2, 6, 7, 10, 18])
def test_mult18x18d_registers_follow_the_boundaries(tmp_path, stages):
    """``multipliers="mult18x18d"`` instantiates one MULT18X18D per lane whose input
    registers are used where the boundary ``operands`` holds a register and its output
    register where ``multiply`` does, each loading with that boundary's enable; the sidecar
    names the primitive and ``generate`` says which model simulation needs.  (Same function:
    make sim checks every int8 code pair through the model, sim-full at four more depths.)"""
    out = tmp_path / "d.v"
    r = _cli("generate", "dot", "--format", "int8", "--block-size", "4", "--stages",
             str(stages), "--multipliers", "mult18x18d", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "simulation needs" in r.stdout and "MULT18X18D.v" in r.stdout
    text = out.read_text()
    unit = MXDot("int8", block_size=4, stages=stages, multipliers="mult18x18d")
    assert f"module {unit.module_name}" in text and unit.module_name.endswith("_mult18x18d")
    registered = registered_boundaries(unit.sections, stages)
    blocks = re.findall(r"MULT18X18D #\((.*?)\) \S+ \((.*?)\);", text, re.S)
    assert len(blocks) == 4 and " * " not in text
    for params, ports in blocks:
        reg_in = '"CLK0"' if "operands" in registered else '"NONE"'
        reg_out = '"CLK0"' if "multiply" in registered else '"NONE"'
        assert f".REG_INPUTA_CLK({reg_in})" in params
        assert f".REG_INPUTB_CLK({reg_in})" in params
        assert f".REG_OUTPUT_CLK({reg_out})" in params
        for enable, boundary in (("CE0", "operands"), ("CE1", "multiply")):
            # a stage enable where the boundary holds a register, else tied off (which net
            # is the enable is the pipeline's naming; that it loads when the stage advances
            # is checked in simulation through the model)
            wired = re.search(rf"\.{enable}\(([^)]*)\)", ports).group(1).strip()
            assert (wired != "1'h0") == (boundary in registered), (enable, wired)
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["primitives"] == ["MULT18X18D"] and unit.primitives == ("MULT18X18D",)
    assert meta["parameters"]["multipliers"] == "mult18x18d"
    assert "primitives" not in sidecar(MXDot("int8", block_size=4, stages=2), "dot")
    assert MXDotGeneral("int8", block_size=4, multipliers="mult18x18d").primitives \
        == ("MULT18X18D",)


def test_mult18x18d_checks_its_factors_and_names_its_model():
    from amaranth.hdl import Module, Signal, signed

    from hw.dsp import MULT18X18D_MODEL, mult18x18d, simulation_models

    m = Module()
    with pytest.raises(ValueError, match="signed value of at most 18 bits"):
        mult18x18d(m, Signal(4), Signal(signed(4)), "x")
    with pytest.raises(ValueError, match="signed value of at most 18 bits"):
        mult18x18d(m, Signal(signed(4)), Signal(signed(19)), "x")
    assert simulation_models(["MULT18X18D"]) == [MULT18X18D_MODEL]
    assert MULT18X18D_MODEL.is_file() and simulation_models([]) == []
    with pytest.raises(ValueError, match="no simulation model for DSP48E1"):
        simulation_models(["DSP48E1"])


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "hw", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT)


def test_cli_generates_verilog_and_sidecar(tmp_path):
    out = tmp_path / "d.v"
    r = _cli("generate", "dot", "--format-a", "fp8_e4m3", "--format-b", "fp4_e2m1",
             "--block-size", "8", "--stages", "2", "-o", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "module mx_dot_fp8_e4m3_fp4_e2m1_k8_s2" in text
    side = json.loads(out.with_suffix(".json").read_text())
    assert side["unit"] == "dot" and side["latency"] == 2
    ports = {p["name"]: p for p in side["ports"]}
    fields = {f["name"]: f for f in ports["i__payload"]["fields"]}
    a_fields = {f["name"]: f for f in fields["a"]["fields"]}
    b_fields = {f["name"]: f for f in fields["b"]["fields"]}
    assert a_fields["codes"]["array"] == {"length": 8, "elem_width": 8}
    assert b_fields["codes"]["array"] == {"length": 8, "elem_width": 4}
    assert fields["c"]["width"] == 32
    assert ports["o__payload"]["fields"] == [{"name": "result", "lsb": 0, "width": 32}]


def test_cli_dot_general(tmp_path):
    out = tmp_path / "g.v"
    r = _cli("generate", "dot-general", "--format", "int8", "--block-size", "4",
             "--contexts", "2", "--stages", "1", "-o", str(out))
    assert r.returncode == 0, r.stderr
    side = json.loads(out.with_suffix(".json").read_text())
    assert side["parameters"]["contexts"] == 2
    names = {f["name"] for p in side["ports"] if p["name"] == "i__payload" for f in p["fields"]}
    assert {"c0", "first", "last", "ctx"} <= names


@pytest.mark.parametrize("args", [
    ["generate", "dot", "--format", "fp7"],
    ["generate", "dot", "--format-a", "fp8_e4m3"],
    ["generate", "dot", "--format", "fp8_e4m3", "--block-size", "24"],
    ["generate", "dot", "--format", "fp8_e4m3", "--stages", str(MAX_STAGES + 1)],
    ["generate", "dot", "--format", "fp8_e4m3", "--format-a", "int8"],
    ["generate", "dot-general", "--format", "fp8_e4m3", "--contexts", "3"],
])
def test_cli_bad_parameters_one_line_exit_2(args, tmp_path):
    r = _cli(*args, "-o", str(tmp_path / "x.v"))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "error" in lines[0], r.stderr
    assert not (tmp_path / "x.v").exists()


def test_docs_width_table_is_generated_from_the_code():
    from hw.dot import width_table

    text = (ROOT / "docs" / "dot.md").read_text()
    table = text.split("<!-- width-table:begin -->\n")[1].split("\n<!-- width-table:end -->")[0]
    assert table == width_table(32)

