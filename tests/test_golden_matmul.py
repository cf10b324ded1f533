"""golden.matmul against the exact Fraction oracle (tests/oracle ``matmul``: every output a
``dot_chain`` of exact block sums, one fp32 RNE per block, in K order), against golden's
per-element dot on larger shapes, and its output quantization against ``golden.quantize`` of
the oracle's fp32 result.  Results are compared as fp32 bit patterns; random tests print their
seed (the ``rng`` fixture).
"""

from __future__ import annotations

import numpy as np
import oracle
import pytest

import golden
from golden.blas_threads import one_blas_thread, set_local_blas_threads

QNAN, PINF, NINF = 0x7FC00000, 0x7F800000, 0xFF800000
OCP = ["fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1", "int8"]
CUSTOM = ["e3m3", "int4", "float8_e4m3", "e5m1", "e5m0", "e6m1"]
MIXED = [("fp8_e4m3", "fp4_e2m1"), ("e3m3", "int4"), ("fp8_e5m2", "fp6_e2m3"),
         ("float8_e4m3", "int8"), ("e6m1", "fp4_e2m1")]
PAIRS = [(f, f) for f in OCP + CUSTOM] + MIXED


def bits(x) -> np.ndarray:
    return np.asarray(x, np.float32).view(np.uint32)


def mx(codes, scales, fmt, k, axis):
    """An MXArray from raw codes and scales (shape = the codes' shape)."""
    codes, scales = np.asarray(codes, np.uint8), np.asarray(scales, np.uint8)
    return golden.MXArray(scales, codes, golden.element_format(fmt), k, axis % codes.ndim,
                          codes.shape)


def oracle_bits(a, b, acc=None):
    c = None if acc is None else bits(acc)
    return oracle.matmul(a.fmt.name, a.codes, a.scales, b.fmt.name, b.codes, b.scales,
                         a.block_size, c)


def check(a, b, acc=None):
    """golden.matmul(a, b, acc=acc) bit for bit against the oracle; returns golden's bits."""
    got = golden.matmul(a, b, acc=acc)
    assert got.dtype == np.float32
    want = oracle_bits(a, b, acc)
    assert got.shape == want.shape
    g = got.view(np.uint32)
    bad = np.argwhere(g != want)
    assert bad.size == 0, (f"{a.fmt.name} x {b.fmt.name}: {len(bad)} outputs differ, first "
                           f"{tuple(bad[0])}: golden 0x{int(g[tuple(bad[0])]):08x}, oracle "
                           f"0x{int(want[tuple(bad[0])]):08x}")
    return g


def spread(rng, shape, lo=-12, hi=12):
    """Normal data with a random power-of-two factor per element: wide exponent spread."""
    return (rng.standard_normal(shape) * np.exp2(rng.integers(lo, hi, shape))).astype(np.float32)


def operands(rng, fa, fb, m, kdim, n, k=32, batch_a=(), batch_b=()):
    """Random MX operands.  float64 data (float32 values): golden quantizes float64 in one
    compiled kernel for every format (fp32 input compiles one per format)."""
    x = spread(rng, batch_a + (m, kdim)).astype(np.float64)
    y = spread(rng, batch_b + (kdim, n)).astype(np.float64)
    return (golden.quantize(x, fa, block_size=k),
            golden.quantize(y, fb, block_size=k, axis=-2))


# --- random shapes, every pair, against the oracle -------------------------------------------
@pytest.mark.parametrize("fa,fb", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_random_against_oracle(fa, fb, rng):
    a, b = operands(rng, fa, fb, 3, 70, 4)  # three blocks, the last one partial
    check(a, b)
    acc = spread(rng, (3, 4), -30, 30)
    acc[0, :2] = [0.0, -0.0]
    check(a, b, acc)


@pytest.mark.parametrize("k", [2, 8, 64])
@pytest.mark.parametrize("fa,fb", [("fp8_e4m3", "fp8_e4m3"), ("fp8_e5m2", "fp4_e2m1")])
def test_block_sizes(fa, fb, k, rng):
    a, b = operands(rng, fa, fb, 3, 2 * k + 1, 3, k=k)
    check(a, b, spread(rng, (3, 3)))


def test_paths_follow_the_exactness_bound():
    """The BLAS path exactly where every block sum is below 2^53 units (the bound computed from
    the oracle's own decoding), the wide path where the two-limb step has no split."""
    for fa, fb in PAIRS + [(f, g) for f in OCP for g in OCP]:
        for k in (2, 32, 64, 1 << 12):
            fits = oracle.units_max(fa) * oracle.units_max(fb) * k <= 1 << 53
            path = golden.matmul_path(fa, fb, k)
            assert (path == "blas") == fits, (fa, fb, k, path)
    for f in ["fp8_e4m3", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1", "int8", "float8_e4m3", "e3m3",
              "int4"]:
        assert golden.matmul_path(f, f, 32) == "blas"
    assert golden.matmul_path("fp8_e5m2", "fp8_e5m2", 32) == "blas-split"
    assert golden.matmul_path("e5m1", "e5m1", 32) == "blas-split"
    assert golden.matmul_path("e6m1", "fp8_e4m3", 1024) == "exact"
    assert golden.matmul_path("e6m1", "e6m1", 32) == "wide"


@pytest.mark.parametrize("fa,fb,k", [("e6m1", "fp8_e4m3", 1024), ("fp8_e5m2", "e6m1", 32)])
def test_exact_and_wide_paths(fa, fb, k, rng):
    a, b = operands(rng, fa, fb, 2, k + 5, 3, k=k)
    check(a, b, spread(rng, (2, 3)))


# --- directed corner cases --------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2"])
def test_one_block_and_exact_zero(fmt):
    x = np.array([[1.0, 1.0, 0.5, 0.0], [1.0, 2.0, 0.0, 0.0]], np.float32)
    y = np.array([[-1.0, 1.0], [1.0, -0.5], [0.0, 0.0], [4.0, 0.0]], np.float32)
    a, b = golden.quantize(x, fmt, block_size=4), golden.quantize(y, fmt, block_size=4, axis=0)
    g = check(a, b)
    assert g[0, 0] == 0 and g[1, 1] == 0  # 1*-1 + 1*1 and 1*1 + 2*-0.5 cancel: +0
    acc = np.array([[-0.0, -0.0], [-0.0, -3.0]], np.float32)
    g = check(a, b, acc)
    assert g[0, 0] == 0  # -0 + exact zero is +0
    assert g[1, 1] == bits(-3.0)
    acc = np.array([[0.0, -0.5], [-1.0, 0.0]], np.float32)
    g = check(a, b, acc)  # [0, 1]: 1 - 0.5 + -0.5 -> +0; [1, 0]: -1 + 1 -> +0
    assert g[0, 1] == 0 and g[1, 0] == 0


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "float8_e4m3", "fp8_e5m2"])
def test_nan_inf_inputs(fmt):
    f = golden.element_format(fmt)
    k, sign = 4, 1 << (f.bits - 1)
    one = int(golden.encode(np.float32([1.0]), f)[0])
    codes_a = np.full((5, 8), one, np.uint8)  # row 4: no special value of its own
    codes_b = np.full((8, 5), one, np.uint8)
    scales_a = np.full((5, 2), 127, np.uint8)
    scales_b = np.full((2, 5), 127, np.uint8)
    codes_a[0, 1] = f.nan_codes[0] if f.nan_codes else 0  # NaN code in row 0, block 0
    scales_a[1, 1] = 255  # NaN scale in row 1, block 1
    scales_b[0, 3] = 255  # NaN scale in column 3, block 0
    codes_b[1, 4] = f.nan_codes[0] if f.nan_codes else 0  # NaN code in column 4, block 0
    if f.inf_codes:
        codes_a[2, 5] = f.inf_codes[0]  # +Inf in row 2, block 1
        codes_b[5, 1] = 0  # column 1 meets it with +0: Inf * 0
        codes_b[6, 2] = f.inf_codes[0] | sign  # column 2: -Inf beside row 2's +Inf -> NaN
        codes_a[3, 6] = f.inf_codes[0] | sign  # row 3: -Inf, times column 2's -Inf: +Inf
    a, b = mx(codes_a, scales_a, f, k, -1), mx(codes_b, scales_b, f, k, 0)
    acc = np.zeros((5, 5), np.float32)
    acc[3, 3], acc[3, 4], acc[2, 3] = np.nan, np.inf, -np.inf
    for c in (None, acc):
        g = check(a, b, c)
        assert np.all(g[1] == QNAN) and np.all(g[:, 3] == QNAN)
        if f.nan_codes:
            assert np.all(g[0] == QNAN) and np.all(g[:, 4] == QNAN)
        if f.inf_codes:
            assert g[2, 0] == PINF and g[2, 1] == QNAN and g[2, 2] == QNAN
            assert g[3, 2] == PINF and g[3, 0] == NINF and g[4, 2] == NINF
        assert g[4, 0] == bits(8.0)


def test_overflow_and_saturation():
    fmt = golden.FP8_E4M3
    big = np.full((2, 64), 448.0, np.float32)
    big[1, 32:] = -448.0  # row 1: +Inf after block 0; a finite (huge) T does not change it
    a = golden.quantize(big * np.float32(2.0**100), fmt)
    b = golden.quantize(np.full((64, 3), 448.0 * 2.0**20, np.float32), fmt, axis=0)
    g = check(a, b)
    assert np.all(g[0] == PINF)
    acc = np.array([[3e38, -3e38, np.inf], [-np.inf, 0.0, 1.0]], np.float32)
    check(a, b, acc)
    # acc + T overflows with finite operands: 3e38 + 1.0 * 2^127-ish
    a1 = golden.quantize(np.array([[1.5, 0.0]], np.float32) * np.float32(2.0**126), fmt,
                         block_size=2)
    b1 = golden.quantize(np.array([[1.5], [0.0]], np.float32), fmt, block_size=2, axis=0)
    g = check(a1, b1, np.array([[3.0e38]], np.float32))
    assert g[0, 0] == PINF


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_no_double_rounding(sign):
    """c + T = 2^40 + 2^16 + 2^-18: an fp32 tie plus a part below float64's last place there.
    RNE_fp32 of the exact sum rounds up; rounding to float64 first would make it a tie."""
    fmt = "fp8_e4m3"
    a = golden.quantize(np.array([[2.0**8, 2.0**-9]], np.float32), fmt, block_size=2)
    b = golden.quantize(np.array([[2.0**8], [sign * 2.0**-9]], np.float32), fmt, block_size=2,
                        axis=0)
    g = check(a, b, np.float32([[2.0**40]]))
    assert g[0, 0] == bits(2.0**40 + (2.0**17 if sign > 0 else 0.0))
    # The same inside one block sum of the split path: 2^30 + 2^6 (a tie) +- 2^-32.
    x = np.array([[2.0**15, 2.0**3, 2.0**-16, 0.0]], np.float32)
    a = golden.quantize(x, "fp8_e5m2", block_size=4)
    b = golden.quantize((x * np.float32([1, 1, sign, 1])).T.copy(), "fp8_e5m2", block_size=4,
                        axis=0)
    g = check(a, b)
    assert g[0, 0] == bits(2.0**30 + (2.0**7 if sign > 0 else 0.0))


def test_subnormal_results(rng):
    fmt = "fp8_e4m3"
    x = spread(rng, (4, 64), -4, 4)
    a = golden.quantize(x * np.float32(2.0**-70), fmt)
    b = golden.quantize(spread(rng, (64, 5), -4, 4) * np.float32(2.0**-70), fmt, axis=0)
    g = check(a, b)
    mag = g & 0x7FFFFFFF
    assert np.any((mag > 0) & (mag < 0x00800000))  # some results are fp32 subnormals
    check(a, b, np.full((4, 5), 2.0**-140, np.float32))


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "int8", "fp8_e5m2"])
def test_one_huge_among_tiny(fmt, rng):
    x = spread(rng, (3, 96), -3, 3)
    x[:, 5] = 2.0**40  # block 0: one huge value sets the scale, the rest flush or round
    x[:, 40] = 2.0**30
    y = spread(rng, (96, 4), -3, 3)
    a, b = golden.quantize(x, fmt), golden.quantize(y, fmt, axis=0)
    check(a, b)
    # A huge accumulator with tiny block sums: c + T inexact in float64 for many outputs.
    check(a, b, np.full((3, 4), 1.0e30, np.float32))
    check(a, b, spread(rng, (3, 4), 20, 40))


def test_batch_broadcasting(rng):
    a, b = operands(rng, "fp8_e4m3", "fp6_e3m2", 2, 40, 3, batch_a=(2, 1), batch_b=(3,))
    g = check(a, b)
    assert g.shape == (2, 3, 2, 3)
    acc = spread(rng, (3, 1, 3))
    g2 = check(a, b, acc)
    # Each batch element equals the 2-d product of its operands.
    for i in range(2):
        for j in range(3):
            ai = mx(a.codes[i, 0], a.scales[i, 0], a.fmt, 32, -1)
            bj = mx(b.codes[j], b.scales[j], b.fmt, 32, 0)
            assert np.array_equal(golden.matmul(ai, bj).view(np.uint32), g[i, j])
            assert np.array_equal(golden.matmul(ai, bj, acc=acc[j]).view(np.uint32), g2[i, j])


# --- the BLAS path against golden's per-element dot on larger shapes ----------------------------
def per_element(a, b, acc=None):
    """golden.dot_blocks on every (row, column) pair: golden's per-element dot path."""
    ac, asc = a.blocks()  # (M, nb, k), (M, nb)
    bc, bsc = b.blocks()  # (N, nb, k), (N, nb)
    m, n = ac.shape[0], bc.shape[0]
    return golden.dot_blocks(np.broadcast_to(ac[:, None], (m, n) + ac.shape[1:]),
                             np.broadcast_to(asc[:, None], (m, n) + asc.shape[1:]),
                             np.broadcast_to(bc[None], (m,) + bc.shape),
                             np.broadcast_to(bsc[None], (m,) + bsc.shape), a.fmt, b.fmt, acc)


@pytest.mark.parametrize("fa,fb", [("fp8_e4m3", "fp8_e4m3"), ("fp4_e2m1", "fp6_e2m3"),
                                   ("int8", "fp8_e4m3"), ("fp8_e5m2", "fp8_e5m2")])
def test_fast_path_against_per_element(fa, fb, rng):
    a, b = operands(rng, fa, fb, 300, 200, 24)  # more rows than one BLAS-path tile (256)
    acc = spread(rng, (300, 24), -20, 20)
    for c in (None, acc):
        got = golden.matmul(a, b, acc=c).view(np.uint32)
        assert np.array_equal(got, per_element(a, b, c).view(np.uint32))


@pytest.mark.parametrize("fa,fb", [("fp8_e4m3", "fp8_e5m2"), ("float8_e4m3", "int4"),
                                   ("fp4_e2m1", "fp6_e3m2"), ("e5m1", "fp8_e4m3")])
def test_any_codes_scales_and_acc_against_per_element(fa, fb, rng):
    """Every code (NaN and Inf included), any E8M0 scale (255 included), accumulators across
    fp32's range with NaN, Inf, -0 and subnormals."""
    fa, fb = golden.element_format(fa), golden.element_format(fb)
    for _ in range(20):
        k = int(rng.choice([2, 8, 32]))
        m, n, nb = (int(v) for v in rng.integers(1, 12, 3))
        codes_a = rng.integers(0, 1 << fa.bits, (m, nb * k)).astype(np.uint8)
        codes_b = rng.integers(0, 1 << fb.bits, (nb * k, n)).astype(np.uint8)
        a = mx(codes_a, rng.integers(0, 256, (m, nb)), fa, k, -1)
        b = mx(codes_b, rng.integers(0, 256, (nb, n)), fb, k, 0)
        acc = spread(rng, (m, n), -140, 120)
        pick = rng.random((m, n)) < 0.3
        acc[pick] = rng.choice(np.float32([np.nan, np.inf, -np.inf, -0.0, 1e-45, 3.4e38]),
                               int(pick.sum()))
        got = golden.matmul(a, b, acc=acc).view(np.uint32)
        assert np.array_equal(got, per_element(a, b, acc).view(np.uint32))


@pytest.mark.slow
@pytest.mark.parametrize("fmt", OCP)
def test_fast_path_against_per_element_large(fmt, rng):
    a, b = operands(rng, fmt, fmt, 128, 2048, 96)
    got = golden.matmul(a, b).view(np.uint32)
    assert np.array_equal(got, per_element(a, b).view(np.uint32))


# --- the output quantization --------------------------------------------------------------------
@pytest.mark.parametrize("out,ob,mode,rounding", [
    ("fp8_e4m3", 32, "floor", "rne"), ("fp4_e2m1", 16, "rceil", "rna"),
    ("int8", 8, "floor", "rtz"), ("fp8_e5m2", 4, "floor", "rne"), ("e3m3", 2, "rceil", "rne")])
def test_out_format_against_quantize_of_oracle(out, ob, mode, rounding, rng):
    a, b = operands(rng, "fp8_e4m3", "fp8_e4m3", 3, 64, 37)  # N = 37: a partial output block
    acc = spread(rng, (3, 37))
    got = golden.matmul(a, b, acc=acc, out_format=out, out_block_size=ob, scale_mode=mode,
                        rounding=rounding)
    ref32 = oracle_bits(a, b, acc).view(np.float32)
    want = golden.quantize(ref32, out, block_size=ob, axis=-1, scale_mode=mode,
                           rounding=rounding)
    assert isinstance(got, golden.MXArray)
    assert (got.fmt, got.block_size, got.axis, got.shape) == (want.fmt, ob, 1, (3, 37))
    assert np.array_equal(got.scales, want.scales) and np.array_equal(got.codes, want.codes)


def test_out_format_saturates_and_marks_nan_blocks():
    fmt = golden.FP8_E4M3
    a = golden.quantize(np.array([[1.0, 1.0]], np.float32), fmt, block_size=2)
    b = golden.quantize(np.array([[1.0, 1.0], [0.875, 0.0]], np.float32), fmt, block_size=2,
                        axis=0)
    got = golden.matmul(a, b, out_format="fp8_e4m3", out_block_size=2)  # [1.875, 1.0]
    want = golden.quantize(oracle_bits(a, b).view(np.float32), "fp8_e4m3", block_size=2)
    assert np.array_equal(got.codes, want.codes) and np.array_equal(got.scales, want.scales)
    assert int(got.codes[0, 0]) == fmt.max_code  # floor scale: 1.875 * 2^8 saturates to 448
    nan = golden.matmul(a, b, acc=np.float32(np.nan), out_format="fp4_e2m1", out_block_size=2)
    assert int(nan.scales[0, 0]) == 255


def test_one_blas_thread_restores_the_callers_setting():
    previous = set_local_blas_threads(3)
    if previous is None:
        pytest.skip("numpy's BLAS has no per-thread thread count (not OpenBLAS >= 0.3.27)")
    try:
        with one_blas_thread():
            assert set_local_blas_threads(1) == 1
        assert set_local_blas_threads(3) == 3
    finally:
        set_local_blas_threads(previous)


# --- validation ---------------------------------------------------------------------------------
def _ops():
    x = np.ones((4, 64), np.float32)
    return golden.quantize(x, "fp8_e4m3"), golden.quantize(x.T.copy(), "fp8_e4m3", axis=0)


@pytest.mark.parametrize("call,exc,match", [
    (lambda a, b: golden.matmul(np.ones((4, 64)), b), TypeError, "two MXArrays"),
    (lambda a, b: golden.matmul(a, "b"), TypeError, "b is a str"),
    (lambda a, b: golden.matmul(golden.quantize(np.ones(64, np.float32), "int8"), b),
     ValueError, "at least 2-d"),
    (lambda a, b: golden.matmul(golden.quantize(np.ones((64, 4), np.float32), "int8", axis=0),
                                b), ValueError, "last axis"),
    (lambda a, b: golden.matmul(a, golden.quantize(np.ones((64, 4), np.float32), "int8")),
     ValueError, "axis -2"),
    (lambda a, b: golden.matmul(a, golden.quantize(np.ones((32, 4), np.float32), "int8",
                                                   axis=0)), ValueError, "K mismatch"),
    (lambda a, b: golden.matmul(a, golden.quantize(np.ones((64, 4), np.float32), "int8",
                                                   axis=0, block_size=16)),
     ValueError, "same block size"),
    (lambda a, b: golden.matmul(golden.quantize(np.ones((2, 4, 64), np.float32), "int8"),
                                golden.quantize(np.ones((3, 64, 4), np.float32), "int8",
                                                axis=1)), ValueError, "do not broadcast"),
    (lambda a, b: golden.matmul(a, b, acc=np.zeros((4, 4), bool)), TypeError, "acc must be"),
    (lambda a, b: golden.matmul(a, b, acc=np.full((4, 4), 0.1)), ValueError, "representable"),
    (lambda a, b: golden.matmul(a, b, acc=np.zeros((3, 4), np.float32)), ValueError,
     "does not broadcast"),
    (lambda a, b: golden.matmul(a, b, out_format="fp7"), ValueError, "fp7"),
    (lambda a, b: golden.matmul(a, b, out_format=3), TypeError, "element format"),
    (lambda a, b: golden.matmul(a, b, out_block_size=24), ValueError, "power of two"),
    (lambda a, b: golden.matmul(a, b, out_block_size=2.0), TypeError, "block_size"),
    (lambda a, b: golden.matmul(a, b, scale_mode="ceil"), ValueError, "scale_mode"),
    (lambda a, b: golden.matmul(a, b, rounding="stochastic"), ValueError, "rne, rna, rtz"),
    (lambda a, b: golden.matmul_path("fp8_e4m3", "int8", 3), ValueError, "power of two"),
])
def test_validation(call, exc, match):
    a, b = _ops()
    with pytest.raises(exc, match=match) as info:
        call(a, b)
    assert "\n" not in str(info.value)
