"""The coverage model without a simulator: hand-worked blocks land in the bins the contract
says (golden supplies the results, exactly as in a run), random batches are classified like
an independent per-lane oracle on Fractions (``tests/oracle``), exclusions carry reasons,
and the database (cocotb-coverage YAML/XML plus exact counts) merges by summing."""

from __future__ import annotations

import json

import numpy as np
import oracle
import pytest
import yaml

import golden
from golden.formats import ROUNDING_IDS, SCALE_MODE_IDS
from golden.stimulus import quantizer_random_blocks
from tb.coverage.dequantizer import ELEMENT_BINS as DEQ_BINS
from tb.coverage.dequantizer import classify_dequantizer, dequantizer_model
from tb.coverage.dot import (
    BLOCK_BINS,
    RUN_BINS,
    classify_dot,
    classify_runs,
    dot_general_model,
    dot_model,
)
from tb.coverage.model import COUNTS_NAME, XML_NAME, YAML_NAME, Coverage, CoverageModel, Point
from tb.coverage.quantizer import (
    ELEMENT_BINS,
    INPUT_BINS,
    SCALE_BINS,
    classify_quantizer,
    quantizer_model,
)
from tb.coverage.report import class_summary, format_coverage_table, merge_databases

ROUNDINGS = tuple(sorted(ROUNDING_IDS, key=ROUNDING_IDS.get))
SCALE_MODES = tuple(sorted(SCALE_MODE_IDS, key=SCALE_MODE_IDS.get))


# -- quantizer -------------------------------------------------------------------------------
def _quantize(values, fmt, input_format, rounding, scale_mode, random=None, random_bits=8):
    """Raw bits, golden's scales and codes, and the classifier's counts of one mode pair."""
    ff = golden.float_format(input_format)
    x = np.asarray(values, np.float64).astype(ff.dtype).reshape(-1, len(values[0]))
    n, k = x.shape
    random = np.zeros((n, k), np.int64) if random is None else np.asarray(random).reshape(n, k)
    mx = golden.quantize(x, fmt, block_size=k, scale_mode=scale_mode, rounding=rounding,
                         random=random if rounding == "stochastic" else None,
                         random_bits=random_bits)
    counts = classify_quantizer(x.view(ff.uint), np.full(n, ROUNDING_IDS[rounding]),
                                np.full(n, SCALE_MODE_IDS[scale_mode]), random,
                                mx.scales[:, 0], mx.codes, fmt=fmt, input_format=ff,
                                random_bits=random_bits)
    prefix = f"{rounding}.{scale_mode}."
    return mx, {p.removeprefix(prefix): c for p, c in counts.items()}


def test_worked_example_floor_rne_lands_in_its_bins():
    # docs/numerics.md section 3: [1000, -pi, 0.01, -0] in fp8_e4m3, floor, rne:
    # q0 = 500 saturates, q1 and q2 round up (q2 to the subnormal 0x03), -0 is kept.
    mx, c = _quantize([[1000.0, -np.pi, 0.01, -0.0]], "fp8_e4m3", "fp32", "rne", "floor")
    assert int(mx.scales[0, 0]) == 128 and mx.codes[0].tolist() == [0x7E, 0xBD, 0x03, 0x80]
    assert c["scale"] == {"ordinary": 1}
    assert c["element"] == {"saturated": 1, "rounded_up": 2, "subnormal": 1,
                            "neg_zero_kept": 1}
    assert c["input"] == {"normal": 3, "neg_zero": 1}
    # rtz truncates the same lanes: [0x7E, 0xBC, 0x02, 0x80]
    mx, c = _quantize([[1000.0, -np.pi, 0.01, -0.0]], "fp8_e4m3", "fp32", "rtz", "floor")
    assert mx.codes[0].tolist() == [0x7E, 0xBC, 0x02, 0x80]
    assert c["element"] == {"saturated": 1, "rounded_down": 2, "subnormal": 1,
                            "neg_zero_kept": 1}


def test_worked_example_rceil_sets_the_flag_and_does_not_saturate():
    mx, c = _quantize([[1000.0, -np.pi, 0.01, -0.0]], "fp8_e4m3", "fp32", "rne", "rceil")
    assert int(mx.scales[0, 0]) == 129 and mx.codes[0].tolist() == [0x78, 0xB5, 0x01, 0x80]
    assert c["rceil"] == {"set": 1}
    # q0 = 250 and q1 round up; q2 = 1.28 * 2^-9 rounds down to one unit (0x01)
    assert c["element"] == {"rounded_up": 2, "rounded_down": 1, "subnormal": 1,
                            "neg_zero_kept": 1}


@pytest.mark.parametrize("lane, rounding, expected_bin, code", [
    (2.5, "rne", "tie_even_down", 0x4),  # between 2 (code 4, even) and 3: stays at 2
    (3.5, "rne", "tie_even_up", 0x6),    # between 3 (code 5, odd) and 4: up to 4
    (2.5, "rna", "tie_away", 0x5),       # ties away: 3
    (2.5, "rtz", "rounded_down", 0x4),
])
def test_fp4_ties_at_scale_one(lane, rounding, expected_bin, code):
    # amax 6 = max normal of fp4_e2m1 gives e = 0, so q = V; between 2 and 4 the grid is 1.
    mx, c = _quantize([[6.0, lane]], "fp4_e2m1", "bf16", rounding, "floor")
    assert int(mx.scales[0, 0]) == 127 and int(mx.codes[0, 1]) == code
    assert c["element"] == {"exact": 1, expected_bin: 1}


def test_scale_outcomes_clamps_nan_and_zero_blocks():
    tiny = np.float32(2.0 ** -149)  # fp32's smallest subnormal: e = -149 - 8 < -127
    mx, c = _quantize([[tiny, 0.0]], "fp8_e4m3", "fp32", "rne", "floor")
    assert int(mx.scales[0, 0]) == 0
    assert c["scale"] == {"clamped_0": 1}
    # q = 2^-22 is below half of 2^-9: rounds down, to zero
    assert c["element"] == {"rounded_down": 1, "underflow_zero": 1}
    assert c["input"] == {"subnormal": 1, "pos_zero": 1}
    mx, c = _quantize([[np.nan, 1.0], [0.0, -0.0], [-np.inf, 2.0]], "fp6_e3m2", "fp32",
                      "rna", "floor")
    assert mx.scales[:, 0].tolist() == [255, 0, 255]
    assert c["scale"] == {"nan_block": 2, "zero_block": 1}
    assert c["element"] == {"lane_nan_inf": 2}
    assert c["input"] == {"nan": 1, "normal": 2, "pos_zero": 1, "neg_zero": 1, "inf": 1}
    # int8 in rceil mode: FLT_MAX needs e = 128, clamped to 127 (s = 254), and saturates
    flt_max = float(np.finfo(np.float32).max)
    mx, c = _quantize([[flt_max, 1.0]], "int8", "fp32", "rne", "rceil")
    assert int(mx.scales[0, 0]) == 254 and int(mx.codes[0, 0]) == 0x7F
    assert c["scale"] == {"clamped_254": 1} and c["element"]["saturated"] == 1


def test_stochastic_threshold_of_the_worked_example():
    # section 3: element 1 (-pi at e = 1) has f_R = 144: r = 112 rounds up, r = 111 does not.
    block = [1000.0, -np.pi, 0.01, -0.0]
    random = [[0, 112, 0, 0], [0, 111, 0, 0], [0, 0, 0, 0], [0, 255, 0, 0]]
    mx, c = _quantize([block] * 4, "fp8_e4m3", "fp32", "stochastic", "floor", random=random)
    assert mx.codes[:, 1].tolist() == [0xBD, 0xBC, 0xBC, 0xBD]
    assert c["random"]["at_threshold"] == 1 and c["random"]["below_threshold"] == 1
    # r = 0 on the two inexact lanes of blocks 0..3 (lane 2 always, lane 1 in block 2)
    assert c["random"]["zero"] == 5 and c["random"]["all_ones"] == 1


def _oracle_element_bins(value_bits, e, code, fmt_name, rounding, input_format):
    """The element bins of one lane of a finite non-zero block, from tests/oracle's value
    table (neighbours searched by value, not computed from exponents)."""
    ff = golden.float_format(input_format)
    neg, mag = oracle.decode_float_bits(int(value_bits), ff.ebits, ff.mbits)
    fmt = oracle.FORMATS[fmt_name]
    q = mag * oracle.pow2(-e)
    got_neg, got = oracle.decode_code(fmt, int(code))
    mags, _ = oracle.value_table(fmt_name)
    bins = set()
    if got == 0 and (not fmt.is_int and got_neg):
        if mag == 0 and neg:
            bins.add("neg_zero_kept")
    if got != 0 and got < mags[1 << fmt.mbits if not fmt.is_int else 64]:
        bins.add("subnormal")
    if q == 0:
        return bins
    if got == 0:
        bins.add("underflow_zero")
    if q > mags[-1]:
        return bins | {"saturated"}
    lo = max(m for m in mags if m <= q)
    hi = min(m for m in mags if m >= q)
    if lo == q:
        return bins | {"exact"}
    up = got == hi
    if q == (lo + hi) / 2 and rounding in ("rne", "rna"):
        return bins | {("tie_even_up" if up else "tie_even_down") if rounding == "rne"
                       else "tie_away"}
    return bins | {"rounded_up" if up else "rounded_down"}


@pytest.mark.parametrize("fmt", list(golden.FORMATS))
def test_random_blocks_match_the_fraction_oracle_lane_by_lane(fmt, seed):
    rng = np.random.default_rng(seed)
    ff = golden.FP32 if fmt in ("fp8_e4m3", "int8") else golden.BF16
    raw = quantizer_random_blocks(rng, 24, 4, ff).astype(ff.uint)
    for rounding in ("rne", "rna", "rtz"):
        for scale_mode in SCALE_MODES:
            x = raw.view(ff.dtype)
            mx = golden.quantize(x, fmt, block_size=4, scale_mode=scale_mode,
                                 rounding=rounding)
            counts = classify_quantizer(raw, np.full(24, ROUNDING_IDS[rounding]),
                                        np.full(24, SCALE_MODE_IDS[scale_mode]),
                                        np.zeros(raw.shape, np.int64), mx.scales[:, 0],
                                        mx.codes, fmt=fmt, input_format=ff, random_bits=8)
            got = counts.get(f"{rounding}.{scale_mode}.element", {})
            expected: dict[str, int] = {}
            for i in range(24):
                s = int(mx.scales[i, 0])
                with np.errstate(invalid="ignore"):  # bf16 NaN to float64
                    values = x[i].astype(np.float64)
                if s == 255:
                    expected["lane_nan_inf"] = (expected.get("lane_nan_inf", 0)
                                                + int((~np.isfinite(values)).sum()))
                    continue
                if not np.any(values):
                    continue
                for j in range(4):
                    for b in _oracle_element_bins(raw[i, j], s - 127, mx.codes[i, j], fmt,
                                                  rounding, ff):
                        expected[b] = expected.get(b, 0) + 1
            assert got == {b: n for b, n in expected.items() if n}, (rounding, scale_mode)


def test_quantizer_model_excludes_with_reasons():
    model = quantizer_model("int8", "fp16", ROUNDINGS, SCALE_MODES)
    points = {p.name: p for p in model.points}
    assert set(points) >= {"rne.floor.scale", "rtz.rceil.element", "stochastic.floor.random",
                           "rna.rceil.rceil"}
    assert "rne.floor.rceil" not in points and "rne.floor.random" not in points
    for name, p in points.items():
        bins = {"scale": SCALE_BINS, "element": ELEMENT_BINS, "input": INPUT_BINS}.get(
            name.rsplit(".", 1)[1])
        if bins:
            assert set(p.bins) | set(p.excluded) == set(bins)
        assert all(isinstance(r, str) and len(r) > 10 for r in p.excluded.values())
    assert "fp16" in points["rne.floor.scale"].excluded["clamped_0"]
    assert "int8" in points["rne.floor.element"].excluded["neg_zero_kept"]
    assert "rtz" in points["rtz.floor.element"].excluded["rounded_up"]
    assert "saturated" in points["rne.rceil.element"].excluded  # fp16 never clamps at 127
    assert "saturated" in quantizer_model("int8", "fp32", ["rne"], ["rceil"]).points[1].bins


# -- dequantizer -----------------------------------------------------------------------------
def _dequantize(scales, codes, fmt, output_format):
    ff = golden.float_format(output_format)
    codes = np.asarray(codes, np.uint8)
    k = 1 << max(1, (codes.shape[1] - 1).bit_length())  # a block size golden takes; +0 padding
    padded = np.pad(codes, [(0, 0), (0, k - codes.shape[1])])
    mx = golden.MXArray(np.asarray(scales, np.uint8)[:, None], padded, golden.element_format(fmt),
                        k, 1, codes.shape)
    with np.errstate(over="ignore"):
        values = golden.dequantize(mx, ff.dtype).view(ff.uint)
    return classify_dequantizer(scales, codes, values, fmt=fmt, output_format=ff)["element"]


def test_dequantizer_cases():
    # fp8_e4m3: NaN code, -0, 1.0 at s = 127; the same block at the NaN scale
    assert _dequantize([127, 255], [[0x7F, 0x80, 0x38]] * 2, "fp8_e4m3", "fp32") == {
        "nan_code": 1, "zero_code": 1, "neg_zero_code": 1, "normal": 1, "nan_scale": 3}
    # fp8_e5m2 57344 * 2 overflows fp16 (max 65504); the Inf code; a normal 1.0
    assert _dequantize([128], [[0x7B, 0x7C, 0x3C - 4]], "fp8_e5m2", "fp16") == {
        "overflow": 1, "inf_code": 1, "normal": 1}
    # fp8_e4m3 in fp16 at s = 111 (2^-16): 2^-9 * 2^-16 = 2^-25 (a tie: to 0),
    # 3 * 2^-25 (rounds to 2^-23), 8 * 2^-25 = 2^-22 (exact subnormal)
    assert _dequantize([111], [[0x01, 0x03, 0x08]], "fp8_e4m3", "fp16") == {
        "subnormal_rounding": 2, "subnormal_result": 2}
    # int8 -2.0 at s = 254 is -2^128: -Inf in fp32
    assert _dequantize([254], [[0x80, 0x40]], "int8", "fp32") == {
        "overflow": 1, "int_min_code": 1, "normal": 1}


def test_dequantizer_model_excludes_with_reasons():
    p = dequantizer_model("fp4_e2m1", "fp32").points[0]
    assert set(p.bins) | set(p.excluded) == set(DEQ_BINS)
    assert set(p.excluded) == {"nan_code", "inf_code", "int_min_code", "subnormal_rounding"}
    assert "subnormal_rounding" in dequantizer_model("fp8_e4m3", "bf16").points[0].bins
    assert "subnormal_rounding" in dequantizer_model("fp6_e3m2", "bf16").points[0].excluded


# -- dot -------------------------------------------------------------------------------------
def _fp32_bits(x) -> int:
    return int(np.array([x], np.float32).view(np.uint32)[0])


def _dot(rows, fa, fb):
    """rows: (a codes, sa, b codes, sb, c bits); golden's results and the classification."""
    ca = np.array([r[0] for r in rows], np.uint8)
    cb = np.array([r[2] for r in rows], np.uint8)
    sa = np.array([r[1] for r in rows], np.uint8)
    sb = np.array([r[3] for r in rows], np.uint8)
    c = np.array([r[4] for r in rows], np.uint32)
    res = golden.dot_blocks(ca[:, None], sa[:, None], cb[:, None], sb[:, None], fa, fb,
                            acc=c.view(np.float32)).view(np.uint32)
    return res, classify_dot(ca, sa, cb, sb, c, res, fmt_a=fa, fmt_b=fb).get("block", {})


def _is_tie_by_oracle(fa, a, sa, fb, b, sb, c_bits) -> bool:
    """c + T exactly halfway between two fp32 values: its reflection about the rounded result
    is also an fp32 value (tests/oracle's Fraction arithmetic and fp32 RNE)."""
    fa_, fb_ = oracle.FORMATS[fa], oracle.FORMATS[fb]
    t = sum(oracle.code_value(fa_, x) * oracle.code_value(fb_, y)
            for x, y in zip(a, b, strict=True))
    s = oracle.fp32_bits_value(c_bits) + t * oracle.pow2(sa + sb - 254)
    r = oracle.fp32_bits_value(oracle.rne_fp32_bits(s))
    other = 2 * s - r
    return other != r and oracle.fp32_bits_value(oracle.rne_fp32_bits(other)) == other


def test_dot_cases():
    one, minus_one = 0x38, 0xB8  # fp8_e4m3
    rows = [
        ([one, 0], 127, [one, 0], 127, _fp32_bits(-1.0)),                 # exact zero
        ([one, 0], 127, [one, 0], 103, _fp32_bits(1.0)),                  # 1 + 2^-24: tie
        ([one, one], 127, [one, 0x30], 103, _fp32_bits(1.0)),             # 1 + 2^-24 + 2^-25
        ([minus_one, 0], 127, [one, 0], 127, _fp32_bits(1 + 2.0 ** -20)),  # cancellation
        ([one, 0], 62, [one, 0], 62, 0),                                  # 2^-130 subnormal
        ([0x7E, 0x7E], 254, [0x7E, 0x7E], 254, 0),                        # overflow
        ([one, 0], 0, [one, 0], 1, 0x80000000),                           # sum 1, c = -0
        ([one, 0], 255, [one, 0], 254, _fp32_bits(np.inf)),               # NaN scale, c Inf
        ([one, 0], 52, [one, 0], 52, 0),  # a single product 2^-150: a tie, to +0
    ]
    res, c = _dot(rows, "fp8_e4m3", "fp8_e4m3")
    assert res[0] == 0 and res[5] == 0x7F800000 and res[8] == 0
    assert c == {"exact_zero": 1, "final_tie": 2, "cancellation": 1, "subnormal_result": 1,
                 "overflow": 1, "scale_sum_near_0": 1, "scale_sum_near_508": 1,
                 "c_pos_zero": 3, "c_neg_zero": 1, "nan_scale": 1, "inf_accumulator": 1}
    assert [_is_tie_by_oracle("fp8_e4m3", r[0], r[1], "fp8_e4m3", r[2], r[3], r[4])
            for r in rows[:4] + rows[8:]] == [False, True, False, False, True]
    inf, neg_inf, one5 = 0x7C, 0xFC, 0x3C  # fp8_e5m2
    res, c = _dot([([inf, 0], 127, [0, one5], 127, 0),           # Inf * 0: NaN
                   ([inf, neg_inf], 127, [one5, one5], 127, 0),  # +Inf and -Inf: NaN
                   ([0x7F, 0], 127, [0, 0], 127, _fp32_bits(np.nan))], "fp8_e5m2", "fp8_e5m2")
    assert res.tolist() == [0x7FC00000] * 3
    assert c == {"inf_times_zero": 1, "opposite_infs": 1, "nan_code": 1,
                 "nan_accumulator": 1, "c_pos_zero": 2}


@pytest.mark.parametrize("pair", [("fp8_e4m3", "fp8_e4m3"), ("fp8_e5m2", "int8"),
                                  ("fp4_e2m1", "fp6_e2m3")])
def test_dot_ties_match_the_fraction_oracle(pair, seed):
    rng = np.random.default_rng(seed)
    fa, fb = pair
    k, n = 4, 300
    ba, bb = golden.element_format(fa).bits, golden.element_format(fb).bits
    ca = rng.integers(0, 1 << ba, (n, k))
    cb = rng.integers(0, 1 << bb, (n, k))
    fin_a = np.isfinite(golden.decode(ca, fa)).all(axis=1)
    fin_b = np.isfinite(golden.decode(cb, fb)).all(axis=1)
    keep = np.flatnonzero(fin_a & fin_b)[:120]
    sa = rng.integers(110, 140, n)
    sb = rng.integers(110, 140, n)
    # c: a product sum rounded to fp32 plus a few ulps, so some sums land on midpoints
    rows = []
    for i in keep:
        t = float(np.dot(golden.decode(ca[i], fa), golden.decode(cb[i], fb))) * 2.0 ** (
            int(sa[i]) + int(sb[i]) - 254)
        c_bits = _fp32_bits(-t) + int(rng.integers(-2, 3)) if t else 0
        rows.append((ca[i].tolist(), int(sa[i]), cb[i].tolist(), int(sb[i]),
                     c_bits & 0xFFFFFFFF))
    # and one known tie: 1.0 + 1.0 * 1.0 * 2^-24
    one_a, one_b = (int(golden.encode(np.array([1.0]), f)[0]) for f in (fa, fb))
    rows.append(([one_a] + [0] * (k - 1), 127, [one_b] + [0] * (k - 1), 103, _fp32_bits(1.0)))
    _, c = _dot(rows, fa, fb)
    ties = sum(_is_tie_by_oracle(fa, *r[:2], fb, *r[2:]) for r in rows)
    assert ties >= 1 and c.get("final_tie", 0) == ties


def test_dot_models_exclude_with_reasons():
    p = dot_model("fp4_e2m1", "fp6_e3m2").points[0]
    assert set(p.bins) | set(p.excluded) == set(BLOCK_BINS)
    assert set(p.excluded) == {"nan_code", "inf_times_zero", "opposite_infs"}
    assert not dot_model("fp8_e5m2", "int8").points[0].excluded
    assert dot_model("fp8_e4m3", "int8").points[0].excluded.keys() == {"inf_times_zero",
                                                                       "opposite_infs"}
    g1, g16 = dot_general_model("int8", "int8", 1), dot_general_model("int8", "int8", 16)
    assert "interleaved_contexts" in g1.points[0].excluded
    assert set(g16.points[0].bins) == set(RUN_BINS) and g1.config_class != g16.config_class


def test_run_shapes():
    # ctx 0: a run of 2 with ctx 1's single block between its blocks, then a single block;
    # then a run of 300 blocks in ctx 1 alone.
    first = [1, 1, 0, 1] + [1] + [0] * 299
    last = [0, 1, 1, 1] + [0] * 299 + [1]
    ctx = [0, 1, 0, 0] + [1] * 300
    assert classify_runs(first, last, ctx) == {"runs": {
        "single_block_run": 2, "multi_block_run": 1, "long_run": 1, "interleaved_contexts": 1,
        "single_context_run": 1}}
    with pytest.raises(ValueError, match="first flags"):
        classify_runs([1, 1], [0, 1], [0, 0])


# -- the database ----------------------------------------------------------------------------
def test_points_must_be_well_formed():
    with pytest.raises(ValueError, match="both defined and excluded"):
        Point("a.b", ("x",), {"x": "why"})
    with pytest.raises(ValueError, match="at least one"):
        Point("a", ())


def test_database_counts_exactly_and_merges_by_summing(tmp_path, seed):
    tag = f"merge{seed}"
    model = CoverageModel("unit_test", tag, (Point("p", ("a", "b", "c"), {"d": "never"}),))
    cov = Coverage(model)
    cov.add({"p": {"a": 5, "b": 0}})
    first = cov.write(tmp_path / "one")
    cov.add({"p": {"a": 2, "c": 7, "d": 1}})  # d is excluded: recorded as a violation
    second = cov.write(tmp_path / "two")
    with pytest.raises(KeyError):
        cov.add({"p": {"zz": 1}})
    merged = merge_databases([first, second, tmp_path / "missing"], tmp_path / "merged")
    name = f"unit_test.{tag}.p"
    assert merged["points"][name]["hits"] == {"a": 12, "b": 0, "c": 7}
    assert merged["points"][name]["excluded_hits"] == {"d": 1}
    assert json.loads((tmp_path / "merged" / COUNTS_NAME).read_text()) == merged
    # cocotb-coverage's YAML: one sample per batch and bin (a: 1 + 2 batches, c: 1)
    db = yaml.safe_load((tmp_path / "merged" / YAML_NAME).read_text())
    assert db[name]["bins:_hits"] == {"a": 3, "b": 0, "c": 1}
    assert db[name]["size"] == 3 and db[name]["coverage"] == 2
    xml = (tmp_path / "merged" / XML_NAME).read_text()
    assert f'abs_name="top.{name}.bin0"' in xml or f'abs_name="{name}.bin0"' in xml
    (row,) = [r for r in class_summary(merged) if r["config_class"] == tag]
    assert (row["hit"], row["defined"], row["never_hit"], row["excluded_hit"]) == (
        2, 3, ["p:b"], ["p:d"])
    lines = format_coverage_table({"format": 1, "points": {name: merged["points"][name]}})
    assert lines[1].split()[:5] == ["unit_test", tag, "2/3", "66.7", "1"]
    assert f"never hit: unit_test {tag}: p:b" in lines
    assert any(line.startswith("EXCLUDED BIN HIT") for line in lines)


# The special codes of the custom formats, by hand from their definitions (ml_dtypes' value
# sets): ieee e4m3 / e3m4 take the all-ones exponent for Inf (mantissa 0) and NaN; fn only the
# all-ones magnitude for NaN; finite ExMy and intN have neither.
SPECIALS = {  # format: (has NaN, has Inf)
    "e3m3": (False, False), "e2m2": (False, False), "e4m2": (False, False),
    "e5m1": (False, False), "float8_e3m4": (True, True), "float8_e4m3": (True, True),
    "float8_e4m3fn": (True, False), "int4": (False, False),
}


@pytest.mark.parametrize("fmt", list(SPECIALS))
def test_custom_format_bins_follow_its_special_codes(fmt):
    has_nan, has_inf = SPECIALS[fmt]
    p = dequantizer_model(fmt, "fp32").points[0]
    assert ("nan_code" in p.bins, "inf_code" in p.bins) == (has_nan, has_inf)
    assert ("nan_code" in p.excluded, "inf_code" in p.excluded) == (not has_nan, not has_inf)
    assert ("int_min_code" in p.bins) == fmt.startswith("int")
    dot = dot_model(fmt, "int4").points[0]
    assert ("nan_code" in dot.bins, "inf_times_zero" in dot.bins) == (has_nan, has_inf)


def test_custom_format_special_codes_land_in_their_bins():
    # float8_e4m3 (ieee, bias 7): 0x78 = +Inf, 0x79 NaN, 0x38 = 1.0
    assert _dequantize([127], [[0x78, 0x79, 0x38]], "float8_e4m3", "fp32") == {
        "inf_code": 1, "nan_code": 1, "normal": 1}
    # float8_e3m4 (ieee, bias 3): 0xF0 = -Inf, 0x7F NaN, 0x30 = 1.0
    assert _dequantize([127], [[0xF0, 0x7F, 0x30]], "float8_e3m4", "fp32") == {
        "inf_code": 1, "nan_code": 1, "normal": 1}
    # e3m3 (finite, bias 3): the all-ones codes 0x3F / 0x7F are +-max normal 15.0
    assert _dequantize([127], [[0x3F, 0x7F]], "e3m3", "fp32") == {"normal": 2}
    # int4: 0x8 is -2.0 (never written by a quantizer), 0x1 is 0.25, 0x0 is +0
    assert _dequantize([127], [[0x8, 0x1, 0x0]], "int4", "fp32") == {
        "int_min_code": 1, "normal": 2, "zero_code": 1}
