"""Fast checks of the dot-product units without a simulator: parameters, widths, CLI, sidecar."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import pytest

import golden
from hw.dot import (
    DEFAULT_STAGES,
    GUARD,
    MAX_STAGES,
    SECTION_DELAY,
    SECTIONS,
    DotGeometry,
    MXDot,
    MXDotGeneral,
    registered_sections,
    units_max,
)
from tb.runner import ROOT

FMTS = list(golden.FORMATS)

# Components built here only to inspect their attributes are never elaborated, by design.
pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")


@pytest.mark.parametrize("fa", FMTS)
@pytest.mark.parametrize("fb", FMTS)
def test_sum_width_holds_the_largest_block_sum(fa, fb):
    """W is the exact bit count of k * max|a| * max|b| in units of 2^(lsb_a + lsb_b), from
    the decode tables (so the RTL sum can neither overflow nor be wider than needed)."""
    for k in (2, 32, 64):
        g = DotGeometry(golden.element_format(fa), golden.element_format(fb), k)
        amax = [max(abs(Fraction(v)) for v in golden.decode_table(f) if abs(v) != float("inf")
                    and v == v) for f in (g.fmt_a, g.fmt_b)]
        units = [a / Fraction(2) ** f.lsb_exp
                 for a, f in zip(amax, (g.fmt_a, g.fmt_b), strict=True)]
        assert [units_max(g.fmt_a), units_max(g.fmt_b)] == units
        assert g.sum_bits == (k * units[0] * units[1]).numerator.bit_length()
        assert g.window_bits == g.sum_bits + GUARD + 2


def test_registered_sections_spread_and_end_registered():
    for s in range(1, MAX_STAGES + 1):
        r = registered_sections(s)
        assert len(r) == len(SECTIONS) and sum(r) == s and r[-1]
    assert all(registered_sections(MAX_STAGES))
    assert set(SECTION_DELAY) == set(SECTIONS)
    assert 1 <= DEFAULT_STAGES <= MAX_STAGES


def test_registered_sections_balance_the_estimated_delays():
    """The placement minimizes the largest estimated stage delay (checked by brute force)."""
    from itertools import combinations

    wts = [SECTION_DELAY[x] for x in SECTIONS]
    n = len(wts)

    def worst(cuts):
        bounds = [0, *cuts]
        return max(sum(wts[a:b]) for a, b in zip(bounds, bounds[1:], strict=False))

    for s in (2, 3, 5, 8):
        r = registered_sections(s)
        got = [i + 1 for i in range(n) if r[i]]
        best = min(worst([*c, n]) for c in combinations(range(1, n), s - 1))
        assert worst(got) == best
    with pytest.raises(ValueError):
        registered_sections(0)
    with pytest.raises(ValueError):
        registered_sections(MAX_STAGES + 1)


@pytest.mark.parametrize("kwargs,exc", [
    ({"fmt_a": "fp9"}, ValueError),
    ({"fmt_a": 3}, TypeError),
    ({"block_size": 48}, ValueError),
    ({"block_size": 1}, ValueError),
    ({"block_size": 128}, ValueError),
    ({"block_size": 32.0}, TypeError),
    ({"stages": 0}, ValueError),
    ({"stages": MAX_STAGES + 1}, ValueError),
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
    assert g.signature.members["o"].signature.members["payload"].shape.size == 32 + 3
    assert MXDotGeneral("fp4_e2m1", contexts=1).ctx_bits == 0


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
    assert fields["a.codes"]["array"] == {"length": 8, "elem_width": 8}
    assert fields["b.codes"]["array"] == {"length": 8, "elem_width": 4}
    assert fields["c"]["width"] == 32 and ports["o__payload"]["width"] == 32


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
