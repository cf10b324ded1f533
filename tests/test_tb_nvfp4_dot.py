"""The NVFP4 dot testbench offline: its coverage classifiers on hand-worked cases
(:mod:`tb.coverage.nvfp4_dot`) and its stimulus (:mod:`tb.nvfp4_dot_stimulus`), each
checked against exact Fractions (``tests/oracle``), not against golden alone."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import oracle
import pytest

from tb import nvfp4_dot_stimulus as stim
from tb.coverage.gemm import gemm_model
from tb.coverage.nvfp4_dot import (
    BLOCK_BINS,
    EPILOGUE_BINS,
    classify_epilogue,
    classify_nvfp4_dot,
    nvfp4_dot_model,
    readable_scales,
)


def _directed():
    cases = stim.directed_cases(16)
    ca = np.array([x[0] for x in cases], np.uint8)
    cb = np.array([x[2] for x in cases], np.uint8)
    sa = np.array([x[1] for x in cases], np.uint8)
    sb = np.array([x[3] for x in cases], np.uint8)
    c = np.array([x[4] for x in cases], np.uint32)
    return cases, ca, sa, cb, sb, c


def test_directed_cases_against_fractions_and_their_bins():
    """Every directed case's golden result equals the Fraction oracle's (bit 7: NaN), and
    each labelled corner lands in its bin, one row at a time."""
    cases, ca, sa, cb, sb, c = _directed()
    res = stim.step_results(ca, sa, cb, sb, c)
    for i in range(len(cases)):
        s_a, s_b = int(readable_scales(sa[i:i + 1])[0]), int(readable_scales(sb[i:i + 1])[0])
        want = oracle.nvfp4_dot([int(x) for x in ca[i]], [s_a], None,
                                [int(x) for x in cb[i]], [s_b], None, int(c[i]))
        assert int(res[i]) == want, cases[i][5]
    expected = {"cancellation to exact zero: +0": "exact_zero",
                "2^24 + 1: tie to even (down)": "final_tie",
                "-2^24 - 1: tie": "final_tie", "bit 7 set: NaN": "invalid_scale",
                "zero scale: c passes": "t_zero", "NaN scale": "nan_scale",
                "subnormal scales 2^-9 x 2^-9": "subnormal_scale",
                "the largest T: 448 x 448 x 36 k": "max_scale",
                "T = 0, subnormal c passes": "subnormal_c", "c = -Inf": "inf_accumulator"}
    for i, (*_, label) in enumerate(cases):
        if label in expected:
            row = slice(i, i + 1)
            counts = classify_nvfp4_dot(ca[row], sa[row], cb[row], sb[row], c[row],
                                        res[row])["block"]
            assert counts[expected[label]] == 1, (label, counts)
    # a result that is not a tie: 2^24 + 2 is exact
    assert classify_nvfp4_dot(ca[:1] * 0 + stim.code_of(2.0), np.array([0x38], np.uint8),
                              np.array([[stim.code_of(1.0)] + [0] * 15], np.uint8),
                              np.array([0x38], np.uint8), np.array([0x4B800000], np.uint32),
                              np.array([0x4B800001], np.uint32))["block"]["final_tie"] == 0


def test_epilogue_bins_and_results_against_fractions():
    """f(alpha * sum) of hand-picked pairs: golden's epilogue equals the exact product
    rounded by the oracle (a zero product keeps the sign), and the bins are as worked out."""
    f32 = [(0x35800000, 0x00000100, "alpha_underflow"),  # 2^-20 * 2^-141 = 2^-161
           (0x35800000, 0x0A000000, "alpha_subnormal"),  # 2^-20 * 2^-107 = 2^-127
           (0x40400000, 0x3EAAAAAB, "alpha_rounded"),  # 3 * f(1/3)
           (0x7F000000, 0x7F000000, "alpha_overflow"),  # 2^127 * 2^127
           (0x00000000, 0x7F800000, "alpha_inf_times_zero"),
           (0x3F800000, 0xBF800000, "alpha_negative"), (0x3F800000, 0x7FC00001, "alpha_nan")]
    for x, a, want_bin in f32:
        total, res = stim.run_result(np.zeros((1, 16), np.uint8), np.array([0x38], np.uint8),
                                     np.zeros((1, 16), np.uint8), np.array([0x38], np.uint8),
                                     x, a)
        assert total == x
        xv, av = oracle.fp32_bits_value(x), oracle.fp32_bits_value(a)
        if isinstance(xv, Fraction) and isinstance(av, Fraction):
            exact = xv * av
            want = ((x ^ a) & 0x80000000) if exact == 0 else oracle.rne_fp32_bits(exact)
            assert res == want, (hex(x), hex(a), hex(res), hex(want))
        counts = classify_epilogue(np.array([x], np.uint32), np.array([a], np.uint32),
                                   np.array([res], np.uint32))["epilogue"]
        assert counts[want_bin] == 1, (hex(x), hex(a), counts)



#: The bin each directed epilogue run of :func:`tb.nvfp4_dot_stimulus.epilogue_runs` is for.
EPILOGUE_RUN_BINS = ["alpha_nan", "alpha_nan", "alpha_subnormal", "alpha_subnormal",
                     "alpha_underflow", "alpha_inf_times_zero", "alpha_overflow",
                     "alpha_rounded", "alpha_negative"]


@pytest.mark.parametrize("accumulation", ["exact", "tcgen05.mxf4nvf4"])
def test_epilogue_runs_against_the_oracle_and_their_bins(accumulation):
    """Each directed epilogue run: golden's sum is the oracle's chain (the exact steps, or
    the tcgen05.mxf4nvf4 ones), its result the oracle's RNE of ``alpha * sum`` (NaN: the
    mode's NaN), and it lands in its bin; together they hit every epilogue bin."""
    runs = stim.epilogue_runs(16)
    assert len(runs) == len(EPILOGUE_RUN_BINS)
    nan = oracle.GPU_NAN if accumulation != "exact" else oracle.FP32_QNAN
    chain = oracle.nvfp4_dot if accumulation == "exact" else oracle.nvfp4_tcgen05_dot
    results = []
    for (ca, sa, cb, sb, c0, alpha, label), want_bin in zip(runs, EPILOGUE_RUN_BINS,
                                                            strict=True):
        total, res = stim.run_result(ca, sa, cb, sb, c0, alpha, accumulation)
        assert total == chain([int(x) for x in ca[0]], [int(sa[0])], None,
                              [int(x) for x in cb[0]], [int(sb[0])], None, c0), label
        x, a = oracle.fp32_bits_value(total), oracle.fp32_bits_value(alpha)
        if a == oracle.NAN or (a == "+inf" and x == 0):
            want = nan
        elif a == "+inf":
            want = 0x7F800000 if x > 0 else 0xFF800000
        else:
            exact = x * a
            want = ((total ^ alpha) & 0x80000000) if exact == 0 else oracle.rne_fp32_bits(exact)
        assert res == want, (label, hex(res), hex(want))
        counts = classify_epilogue(np.array([total], np.uint32), np.array([alpha], np.uint32),
                                   np.array([res], np.uint32))["epilogue"]
        assert counts[want_bin] == 1, (label, counts)
        results.append(res)
    assert set(EPILOGUE_RUN_BINS) == set(EPILOGUE_BINS)
    # the truncated sum 2^20 - 2^-3 (RNE: 2^20 - 2^-4) times 5 * 2^-149: one subnormal ulp
    assert results[3] == (0x004FFFFF if accumulation != "exact" else 0x00500000)


def test_models_name_every_bin():
    assert [p.name for p in nvfp4_dot_model().points] == ["block"]
    assert nvfp4_dot_model().points[0].bins == BLOCK_BINS
    general = nvfp4_dot_model(general=True, epilogue=True)
    assert general.points[-1].name == "epilogue" and general.points[-1].bins == EPILOGUE_BINS
    assert "epilogue" not in [p.name for p in nvfp4_dot_model(general=True).points]
    # the GEMM tile's nvfp4 classes: the same epilogue point with levels 2 alone
    tile = gemm_model("fp4_e2m1", "fp4_e2m1", 2, nvfp4_levels=2)
    assert tile.points[-1].name == "epilogue" and tile.points[-1].bins == EPILOGUE_BINS
    assert "epilogue" not in [p.name for p in gemm_model("fp4_e2m1", "fp4_e2m1", 2,
                                                         nvfp4_levels=1).points]


def test_gemm_classes_name_the_accumulation_mode():
    # a GPU mode's runs round differently from the exact mode's: their bins are counted apart
    exact = gemm_model("fp4_e2m1", "fp4_e2m1", 2, nvfp4_levels=2)
    gpu = gemm_model("fp4_e2m1", "fp4_e2m1", 2, nvfp4_levels=2,
                     accumulation="tcgen05.mxf4nvf4")
    assert exact.config_class == "nvfp4_l2-multi_ctx"
    assert gpu.config_class == "nvfp4_l2-multi_ctx-tcgen05_mxf4nvf4"
    mx = gemm_model("fp8_e4m3", "fp8_e4m3", 1, "fp8_e4m3", accumulation="tcgen05.mxf8f6f4")
    assert mx.config_class == "fp8_e4m3-x-fp8_e4m3-one_ctx-mx_fp8_e4m3-tcgen05_mxf8f6f4"


def test_random_scales_cover_every_kind(rng):
    s = stim.random_scales(rng, 4000)
    for kind in (s == 0, (s >= 1) & (s <= 7), s == 0x7E, s == 0x7F, s >= 0x80,
                 (s >= 0x28) & (s < 0x50)):
        assert kind.any()
