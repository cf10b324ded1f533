"""The dot units' GPU accumulation modes ``tcgen05.mxf8f6f4``, ``tcgen05.mxf4`` and
``tcgen05.mxf4nvf4`` at the Amaranth level: their parameters (golden's names and one-line
errors), module names, sidecar and sections, the command line and FuseSoC (the truncating
steps in Amaranth's simulator: tests/test_hw_dot_gpu_steps.py).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import golden
from golden.gpu_accumulation import check_accumulation
from hw.dot import MXDot, MXDotGeneral
from hw.dot.epilogue import epilogue_sections
from hw.dot.truncated_sections import ESTIMATES, truncated_sections, truncated_tree_levels
from hw.sidecar import sidecar
from tb.runner import ROOT

MODE = "tcgen05.mxf8f6f4"
F4 = "tcgen05.mxf4"


def _golden_error(*args) -> str:
    with pytest.raises(ValueError) as e:
        check_accumulation(*args)
    return str(e.value)


@pytest.mark.parametrize("fmt_a, fmt_b, k, accumulation", [
    ("int8", "fp8_e4m3", 32, MODE),
    ("fp8_e4m3", "e3m3", 32, MODE),
    ("fp8_e4m3", "fp8_e4m3", 16, MODE),
    ("fp4_e2m1", "fp4_e2m1", 32, "tcgen05.mxfp8"),
    ("fp8_e4m3", "fp4_e2m1", 32, F4),
    ("fp4_e2m1", "fp4_e2m1", 16, F4),
])
def test_bad_formats_and_block_sizes_raise_goldens_error(fmt_a, fmt_b, k, accumulation):
    expected = _golden_error(accumulation, golden.element_format(fmt_a),
                             golden.element_format(fmt_b), k)
    for cls in (MXDot, MXDotGeneral):
        with pytest.raises(ValueError) as e:
            cls(fmt_a, fmt_b, block_size=k, accumulation=accumulation)
        assert str(e.value) == expected


@pytest.mark.parametrize("cls, kwargs, message", [
    (MXDot, {"accumulation": MODE, "multipliers": "mult18x18d"}, "not 'mult18x18d'"),
    (MXDot, {"accumulation": F4, "multipliers": "mult18x18d"}, "not 'mult18x18d'"),
    (MXDotGeneral, {"accumulation": F4, "multipliers": "mult18x18d"}, "not 'mult18x18d'"),
])
def test_modes_not_built_raise(cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        cls("fp4_e2m1", "fp4_e2m1", block_size=32, **kwargs)


@pytest.mark.parametrize("cls, accumulation, k", [
    (MXDot, F4, 16), (MXDot, MODE, 16), (MXDot, "tcgen05.mxf4nvf4", 32),
    (MXDotGeneral, F4, 16), (MXDotGeneral, "tcgen05.mxf4nvf4", 32)])
def test_nvfp4_takes_mxf4nvf4_at_k16(cls, accumulation, k):
    """nvfp4 (UE4M3 scales) with a GPU mode: golden's one-line error for a kind or block size
    it does not take; MXDot's and MXDotGeneral's module names and sidecars in mxf4nvf4 (the
    chained UE4M3 sum one bit wider than one step's)."""
    with pytest.raises(ValueError) as e:
        cls("nvfp4", block_size=k, accumulation=accumulation)
    assert str(e.value) == _golden_error(accumulation, golden.element_format("fp4_e2m1"),
                                         golden.element_format("fp4_e2m1"), k, "ue4m3")
    dot = MXDot("nvfp4", stages=4, accumulation="tcgen05.mxf4nvf4")
    assert dot.module_name == "nvfp4_dot_k16_s4_tcgen05_mxf4nvf4"
    side = sidecar(dot, "dot")["parameters"]
    assert (side["accumulation"], side["scale_format"], side["sum_bits"]) == (
        "tcgen05.mxf4nvf4", "ue4m3", 48)
    # the E8M0 build's sections, and after decode the lanes' choice of sig_a * P
    e8m0 = list(MXDot("fp4_e2m1", block_size=16, accumulation="tcgen05.mxf4nvf4").sections)
    assert list(dot.sections) == [*e8m0[:1], "scale_lanes", *e8m0[1:]]
    gen = MXDotGeneral("nvfp4", contexts=2, stages=4, accumulation="tcgen05.mxf4nvf4")
    assert gen.module_name == "nvfp4_dot_general_l2_k16_c2_s4_tcgen05_mxf4nvf4"
    side = sidecar(gen, "dot-general")["parameters"]
    assert (side["accumulation"], side["levels"], side["sum_bits"]) == (
        "tcgen05.mxf4nvf4", 2, 49)
    assert "alpha" in gen.i.payload.shape().members
    assert MXDotGeneral("nvfp4", levels=1, accumulation="tcgen05.mxf4nvf4").module_name == (
        f"nvfp4_dot_general_l1_k16_c4_s{gen.max_stages - len(epilogue_sections())}"
        "_tcgen05_mxf4nvf4")


def test_module_names_sidecar_and_sections():
    dot = MXDot("fp8_e4m3", "fp6_e2m3", accumulation=MODE)
    assert dot.module_name == f"mx_dot_fp8_e4m3_fp6_e2m3_k32_s{dot.stages}_tcgen05_mxf8f6f4"
    gen = MXDotGeneral("fp8_e4m3", contexts=2, stages=5, accumulation=MODE)
    assert gen.module_name == "mx_dot_general_fp8_e4m3_fp8_e4m3_k32_c2_s5_tcgen05_mxf8f6f4"
    assert sidecar(dot, "dot")["parameters"]["accumulation"] == MODE
    assert "window_bits" not in dot.parameters and dot.parameters["sum_bits"] == 34
    assert sidecar(MXDot("fp8_e4m3"), "dot")["parameters"]["accumulation"] == "exact"
    exact = MXDot("fp8_e4m3")
    assert exact.module_name == f"mx_dot_fp8_e4m3_fp8_e4m3_k32_s{exact.stages}"
    # its own sections: one per tree level over 32 lanes, c and the count of negated terms
    names = list(dot.sections)
    assert truncated_tree_levels(32) == 6
    back = ["magnitude", "lzc", "lzc_select", "normalize", "position", "shift_hi", "shift",
            "round", "finish"]
    # the maximum tree's five radix-2 levels over 32 keys: the first in multiply
    assert names[:12] == ["decode", "multiply_lo", "multiply", "emax1", "emax2", "emax3",
                          "emax4", "frame", "gap", "distance", "align_hi", "align"]
    assert names[12:18] == [f"tree{j}" for j in range(6)]
    assert names[18:] == back
    assert dot.max_stages == len(names) and 1 <= dot.stages <= dot.max_stages
    assert all(e.provenance for e in ESTIMATES.values())
    forwarded = truncated_sections(dot.geometry, forwarded_c=True)
    assert forwarded["decode"] > dot.sections["decode"]
    assert gen.sections["decode"] == forwarded["decode"]
    f4 = MXDot("fp4_e2m1", accumulation=F4)
    assert f4.module_name == f"mx_dot_fp4_e2m1_fp4_e2m1_k32_s{f4.stages}_tcgen05_mxf4"
    assert list(f4.sections) == ["decode", "multiply_lo", "multiply", "group0", "group1",
                                 "group2", "group3", "align_hi", "align", "tree0", "tree1", *back]
    assert f4.parameters["sum_bits"] == 48 and f4.parameters["accumulation"] == F4


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "hw", *args], capture_output=True, text=True,
                          cwd=ROOT)


def test_cli_takes_the_accumulation(tmp_path):
    out = tmp_path / "g.v"
    r = _cli("generate", "dot-general", "--format", "fp4_e2m1", "--block-size", "32",
             "--contexts", "2", "--stages", "3", "--accumulation", MODE, "-o", str(out))
    assert r.returncode == 0, r.stderr
    name = "mx_dot_general_fp4_e2m1_fp4_e2m1_k32_c2_s3_tcgen05_mxf8f6f4"
    assert f"module {name}" in out.read_text()
    side = json.loads(out.with_suffix(".json").read_text())
    assert side["parameters"]["accumulation"] == MODE


@pytest.mark.parametrize("args", [
    ["--format", "int8", "--accumulation", MODE],
    ["--format", "fp8_e4m3", "--block-size", "16", "--accumulation", MODE],
    ["--format", "fp4_e2m1", "--accumulation", "rz"],
    ["--format", "nvfp4", "--accumulation", F4],
    ["--format", "nvfp4", "--block-size", "32", "--accumulation", "tcgen05.mxf4nvf4"],
    ["dot-general", "--format", "nvfp4", "--block-size", "32", "--accumulation",
     "tcgen05.mxf4nvf4"],
    ["dot-general", "--format", "nvfp4", "--accumulation", F4],
])
def test_cli_bad_accumulation_one_line_exit_2(args, tmp_path):
    unit = args.pop(0) if args[0] == "dot-general" else "dot"
    r = _cli("generate", unit, *args, "-o", str(tmp_path / "x.v"))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "accumulation" in lines[0], r.stderr
    assert not (tmp_path / "x.v").exists()



def test_fusesoc_generator_takes_the_accumulation(tmp_path, monkeypatch):
    """The FuseSoC generator passes ``accumulation`` on as ``--accumulation``."""
    from hw.fusesoc import generator_main

    spec = tmp_path / "in.yml"
    spec.write_text(json.dumps({"vlnv": "::dot_gpu:0", "parameters": {
        "unit": "dot", "format": "fp4_e2m1", "block_size": 32, "stages": 2,
        "accumulation": MODE}}))
    monkeypatch.chdir(tmp_path)
    assert generator_main([str(spec)]) == 0
    name = "mx_dot_fp4_e2m1_fp4_e2m1_k32_s2_tcgen05_mxf8f6f4"
    assert f"module {name}" in (tmp_path / f"{name}.v").read_text()
