"""How golden's matrix product, GPU accumulation modes and NVFP4 combine (docs/numerics.md
sections 7-9).

* ``golden.matmul(a, b, accumulation=kind)``: every output bit for bit against the Fraction
  model of the tcgen05 steps in ``tests/oracle`` (``tcgen05_chain``) and against
  ``golden.dot(..., accumulation=kind)`` of its row and column, on small random shapes with any
  codes (NaN and Inf included), any scales and special accumulators.
* ``golden.dot`` / ``golden.dot_blocks`` with ``"tcgen05.mxf4nvf4"`` on NVFP4 (UE4M3 scales, the
  tensor scales on the final sum): against ``oracle.nvfp4_tcgen05_dot``.

Random tests print their seed (the ``rng`` fixture).
"""

from __future__ import annotations

import numpy as np
import oracle
import pytest

import golden

_M8, _M4, _NV = "tcgen05.mxf8f6f4", "tcgen05.mxf4", "tcgen05.mxf4nvf4"
F32 = np.float32
#: kind, fmt_a, fmt_b, block size, K (a partial last step for mxf4 / mxf4nvf4)
CASES = [
    (_M8, "fp8_e4m3", "fp8_e4m3", 32, 96),
    (_M8, "fp8_e5m2", "fp4_e2m1", 32, 64),
    (_M8, "fp6_e3m2", "fp6_e2m3", 32, 64),
    (_M4, "fp4_e2m1", "fp4_e2m1", 32, 96),
    (_NV, "fp4_e2m1", "fp4_e2m1", 16, 80),
    (_NV, "fp4_e2m1", "fp4_e2m1", 32, 96),
]


def _operands(rng, fa, fb, k, kdim, m=3, n=4, scale_lo=100, scale_hi=150):
    """MXArrays of random codes (any code) and scales: a (m, kdim) along K, b (kdim, n)."""
    fa, fb = golden.element_format(fa), golden.element_format(fb)
    nb = kdim // k
    ac = rng.integers(0, 1 << fa.bits, (m, kdim), dtype=np.uint8)
    bc = rng.integers(0, 1 << fb.bits, (kdim, n), dtype=np.uint8)
    sa = rng.integers(scale_lo, scale_hi, (m, nb), dtype=np.uint8)
    sb = rng.integers(scale_lo, scale_hi, (nb, n), dtype=np.uint8)
    return (golden.MXArray(sa, ac, fa, k, 1, (m, kdim)),
            golden.MXArray(sb, bc, fb, k, 0, (kdim, n)))


def _oracle(kind, a, b, acc=None, scale_format="e8m0"):
    """uint32 bits of every output from oracle.tcgen05_chain of its row and column."""
    k = a.block_size
    m, n = a.shape[0], b.shape[1]
    c = np.zeros((m, n), np.uint32) if acc is None else np.asarray(acc, F32).view(np.uint32)
    out = np.zeros((m, n), np.uint32)
    for i in range(m):
        row = a.codes[i].tolist()
        for j in range(n):
            col = b.codes[:, j].tolist()
            nb = len(row) // k
            out[i, j] = oracle.tcgen05_chain(
                kind, a.fmt.name, [row[t * k:(t + 1) * k] for t in range(nb)],
                a.scales[i].tolist(), b.fmt.name, [col[t * k:(t + 1) * k] for t in range(nb)],
                b.scales[:, j].tolist(), int(c[i, j]), scale_format)
    return out


def _per_output_dot(a, b, acc, kind):
    """golden.dot of every (row, column) pair as two (m, n, K) MXArrays along the last axis."""
    m, kdim, n = a.shape[0], a.shape[1], b.shape[1]
    shape = (m, n, kdim)

    def arr(codes, scales, src):
        return golden.MXArray(np.ascontiguousarray(scales), np.ascontiguousarray(codes), src.fmt,
                              src.block_size, 2, shape, src.scale_format, src.tensor_scale)

    ra = arr(np.broadcast_to(a.codes[:, None, :], shape),
             np.broadcast_to(a.scales[:, None, :], (m, n, a.scales.shape[1])), a)
    cb = arr(np.broadcast_to(b.codes.T[None], shape),
             np.broadcast_to(b.scales.T[None], (m, n, b.scales.shape[0])), b)
    return golden.dot(ra, cb, acc, accumulation=kind)


def _specials(rng, shape):
    acc = (rng.standard_normal(shape) * np.exp2(rng.integers(-20, 20, shape))).astype(F32)
    acc.flat[:4] = [0.0, -0.0, np.inf, np.nan][: acc.size]
    return acc


@pytest.mark.parametrize("kind,fa,fb,k,kdim", CASES,
                         ids=[f"{c[0][8:]}-{c[1]}-{c[2]}-k{c[3]}" for c in CASES])
def test_gpu_matmul_against_oracle_and_dot(kind, fa, fb, k, kdim, rng):
    a, b = _operands(rng, fa, fb, k, kdim)
    for acc in (None, _specials(rng, (3, 4))):
        got = golden.matmul(a, b, acc=acc, accumulation=kind)
        assert got.dtype == F32 and got.shape == (3, 4)
        want = _oracle(kind, a, b, acc)
        assert np.array_equal(got.view(np.uint32), want), (got.view(np.uint32), want)
        assert np.array_equal(_per_output_dot(a, b, acc, kind).view(np.uint32), want)


def test_gpu_matmul_nan_scales_and_gpu_nan(rng):
    a, b = _operands(rng, "fp8_e4m3", "fp8_e4m3", 32, 64, scale_lo=254, scale_hi=256)
    got = golden.matmul(a, b, accumulation=_M8).view(np.uint32)
    assert np.array_equal(got, _oracle(_M8, a, b))
    assert oracle.GPU_NAN in got.ravel().tolist()  # a 255 scale gives the GPU NaN 0x7FFFFFFF


def test_gpu_matmul_differs_from_exact_and_batches(rng):
    # The docs' worked example (section 8) as a 1 x 1 product: exact 0x47800004, GPU 0x47800000.
    a_codes = np.array([[0x78] + [0x01] * 31], np.uint8)
    b_codes = np.array([[0x78] + [0x30] * 31], np.uint8).T.copy()
    one = np.full((1, 1), 127, np.uint8)
    a = golden.MXArray(one, a_codes, "fp8_e4m3", 32, 1, (1, 32))
    b = golden.MXArray(one, b_codes, "fp8_e4m3", 32, 0, (32, 1))
    assert golden.matmul(a, b).view(np.uint32)[0, 0] == 0x47800004
    assert golden.matmul(a, b, accumulation=_M8).view(np.uint32)[0, 0] == 0x47800000
    # Batch axes broadcast as in the exact mode, each batch its own product.
    x = rng.standard_normal((2, 1, 3, 64)).astype(F32).astype(np.float64)
    y = rng.standard_normal((4, 64, 5)).astype(F32).astype(np.float64)
    qa, qb = golden.quantize(x, "fp4_e2m1"), golden.quantize(y, "fp4_e2m1", axis=-2)
    got = golden.matmul(qa, qb, accumulation=_M4)
    assert got.shape == (2, 4, 3, 5)
    for i in range(2):
        for j in range(4):
            ai = golden.quantize(x[i, 0], "fp4_e2m1")
            bj = golden.quantize(y[j], "fp4_e2m1", axis=0)
            assert np.array_equal(got[i, j].view(np.uint32),
                                  golden.matmul(ai, bj, accumulation=_M4).view(np.uint32))


def test_gpu_matmul_out_format(rng):
    a, b = _operands(rng, "fp4_e2m1", "fp4_e2m1", 32, 64, n=32, scale_lo=120, scale_hi=130)
    res = golden.matmul(a, b, accumulation=_M4)
    q = golden.matmul(a, b, accumulation=_M4, out_format="fp8_e4m3")
    want = golden.quantize(res, "fp8_e4m3", axis=-1)
    assert np.array_equal(q.codes, want.codes) and np.array_equal(q.scales, want.scales)


@pytest.mark.parametrize("kind,fa,fb,k", [
    ("tcgen05", "fp8_e4m3", "fp8_e4m3", 32),
    (None, "fp8_e4m3", "fp8_e4m3", 32),
    (_M8, "int8", "fp8_e4m3", 32),
    (_M8, "fp8_e4m3", "e3m3", 32),
    (_M8, "fp8_e4m3", "fp8_e4m3", 16),
    (_M4, "fp8_e4m3", "fp4_e2m1", 32),
    (_M4, "fp4_e2m1", "fp4_e2m1", 16),
    (_NV, "fp4_e2m1", "fp4_e2m1", 64),
    (_NV, "fp6_e2m3", "fp4_e2m1", 16),
])
def test_matmul_validates_as_dot_does(kind, fa, fb, k):
    a, b = _operands(np.random.default_rng(0), fa, fb, k, 64, m=2, n=2)
    with pytest.raises(ValueError) as from_dot:
        _per_output_dot(a, b, None, kind)
    with pytest.raises(ValueError) as from_matmul:
        golden.matmul(a, b, accumulation=kind)
    assert str(from_matmul.value) == str(from_dot.value)
    assert "\n" not in str(from_matmul.value) and "accumulation" in str(from_matmul.value)


# --- tcgen05.mxf4nvf4 on NVFP4 arrays (UE4M3 scales, tensor scales in the epilogue) -----------
def _nvfp4(rng, rows, n, pa=None, k=16, nan_scale=False):
    codes = rng.integers(0, 16, (rows, n * k), dtype=np.uint8)
    scales = rng.integers(0, 0x7F, (rows, n), dtype=np.uint8)  # zero and subnormal included
    if nan_scale:
        scales[0, 1] = 0x7F
    return golden.MXArray(scales, codes, "fp4_e2m1", k, 1, (rows, n * k), "ue4m3", pa)


@pytest.mark.parametrize("pa,pb", [(None, None), (F32(0.75), None), (F32(3e-3), F32(7.0)),
                                   (None, F32(2.0**-100))])
def test_nvfp4_dot_in_mxf4nvf4_against_oracle(pa, pb, rng):
    a, b = _nvfp4(rng, 4, 5, pa), _nvfp4(rng, 4, 5, pb)  # 80 elements: a step and a short one
    acc = _specials(rng, 4)
    for c in (None, acc):
        got = golden.dot(a, b, c, accumulation=_NV).view(np.uint32)
        for r in range(4):
            cb = 0 if c is None else int(c[r:r + 1].view(np.uint32)[0])
            want = oracle.nvfp4_tcgen05_dot(a.codes[r], a.scales[r], None if pa is None
                                            else float(pa), b.codes[r], b.scales[r],
                                            None if pb is None else float(pb), cb)
            assert int(got[r]) == want, (r, hex(int(got[r])), hex(want))
    # exact stays the default, and is what accumulation="exact" gives
    assert np.array_equal(golden.dot(a, b).view(np.uint32),
                          golden.dot(a, b, accumulation="exact").view(np.uint32))


def test_nvfp4_dot_blocks_ue4m3_both_modes(rng):
    a, b = _nvfp4(rng, 3, 4, nan_scale=True), _nvfp4(rng, 3, 4)
    (ac, asc), (bc, bsc) = a.blocks(), b.blocks()
    for kind in ("exact", _NV):
        got = golden.dot_blocks(ac, asc, bc, bsc, "fp4_e2m1", accumulation=kind,
                                scale_format="ue4m3").view(np.uint32)
        assert np.array_equal(got, golden.dot(a, b, accumulation=kind).view(np.uint32))
        for r in range(3):
            fn = oracle.nvfp4_dot if kind == "exact" else oracle.nvfp4_tcgen05_dot
            want = fn(ac[r].ravel(), asc[r], None, bc[r].ravel(), bsc[r], None)
            assert int(got[r]) == want, (kind, r, hex(int(got[r])), hex(want))
    assert int(got[0]) == oracle.GPU_NAN  # the NaN scale 0x7F: the GPU NaN


def test_nvfp4_gpu_mode_differs_from_exact():
    # c = 256 and one term 0.5 * -0.5 at scales 2^-9 * 2^-9: -2^-20.  Exact: RNE(256 - 2^-20)
    # = 256.  tcgen05.mxf4nvf4: the term survives truncation at 2^(8 - 35), and the sum is
    # rounded toward zero: 256 - 2^-16 (0x437FFFFF).  Tensor scale 2 then doubles both.
    a_codes, b_codes = np.zeros((1, 16), np.uint8), np.zeros((1, 16), np.uint8)
    a_codes[0, 0], b_codes[0, 0] = 0x1, 0x9
    s = np.array([[0x01]], np.uint8)
    a = golden.MXArray(s, a_codes, "fp4_e2m1", 16, 1, (1, 16), "ue4m3")
    b = golden.MXArray(s, b_codes, "fp4_e2m1", 16, 1, (1, 16), "ue4m3", F32(2.0))
    c = np.array([256.0], F32)
    assert golden.dot(a, b, c).view(np.uint32)[0] == 0x44000000  # 512
    assert golden.dot(a, b, c, accumulation=_NV).view(np.uint32)[0] == 0x43FFFFFF  # 2 * that
    assert oracle.nvfp4_tcgen05_dot(a_codes[0], s[0], None, b_codes[0], s[0], 2.0,
                                    0x43800000) == 0x43FFFFFF


@pytest.mark.parametrize("kind,k,match", [
    (_M8, 16, "takes scale formats e8m0, got 'ue4m3'"),
    (_M4, 16, "takes scale formats e8m0, got 'ue4m3'"),
    (_NV, 32, "takes blocks of 16 elements with ue4m3 scales, got block size 32"),
    ("gpu", 16, "accumulation must be one of"),
])
def test_nvfp4_modes_are_checked(kind, k, match):
    a = _nvfp4(np.random.default_rng(0), 1, 2, k=k)
    with pytest.raises(ValueError, match=match):
        golden.dot(a, a, accumulation=kind)
    (ac, asc) = a.blocks()
    with pytest.raises(ValueError, match=match):
        golden.dot_blocks(ac, asc, ac, asc, "fp4_e2m1", accumulation=kind, scale_format="ue4m3")


def test_dot_blocks_scale_format_errors():
    c, s = np.zeros((1, 16), np.uint8), np.zeros(1, np.uint8)
    with pytest.raises(ValueError, match="ue4m3 scales go with fp4_e2m1 codes"):
        golden.dot_blocks(c, s, c, s, "fp8_e4m3", scale_format="ue4m3")
    with pytest.raises(ValueError, match="bit 7 is never set"):
        golden.dot_blocks(c, s | 0x80, c, s, "fp4_e2m1", scale_format="ue4m3")
    with pytest.raises(ValueError, match="scale"):
        golden.dot_blocks(c, s, c, s, "fp4_e2m1", scale_format="e5m3")


# --- nvfp4 x nvfp4 matrix products --------------------------------------------------------
def _nvfp4_operands(rng, m=3, kdim=80, n=4, pa=None, pb=None):
    """Random nvfp4 operands (any code, scales 0..0x7E and one NaN scale): a (m, kdim) along K,
    b (kdim, n) along K, with tensor scales pa, pb."""
    nb = kdim // 16
    ac = rng.integers(0, 16, (m, kdim), dtype=np.uint8)
    bc = rng.integers(0, 16, (kdim, n), dtype=np.uint8)
    sa = rng.integers(0, 0x7F, (m, nb), dtype=np.uint8)
    sb = rng.integers(0, 0x7F, (nb, n), dtype=np.uint8)
    sa[-1, -1] = 0x7F
    return (golden.MXArray(sa, ac, "fp4_e2m1", 16, 1, (m, kdim), "ue4m3", pa),
            golden.MXArray(sb, bc, "fp4_e2m1", 16, 0, (kdim, n), "ue4m3", pb))


@pytest.mark.parametrize("kind", ["exact", _NV])
@pytest.mark.parametrize("pa,pb", [(None, None), (F32(0.375), F32(3e-3)), (None, F32(7.0))])
def test_nvfp4_matmul_against_oracle_and_dot(kind, pa, pb, rng):
    a, b = _nvfp4_operands(rng, pa=pa, pb=pb)
    for acc in (None, _specials(rng, (3, 4))):
        got = golden.matmul(a, b, acc=acc, accumulation=kind)
        c = None if acc is None else acc.view(np.uint32)
        want = oracle.nvfp4_matmul(a.codes, a.scales, None if pa is None else float(pa),
                                   b.codes, b.scales, None if pb is None else float(pb), c,
                                   accumulation=kind)
        assert np.array_equal(got.view(np.uint32), want), (got.view(np.uint32), want)
        assert np.array_equal(_per_output_dot(a, b, acc, kind).view(np.uint32), want)
    nan = oracle.FP32_QNAN if kind == "exact" else oracle.GPU_NAN
    assert (got.view(np.uint32)[-1] == nan).all()  # the row with the NaN scale


def test_nvfp4_matmul_of_quantized_data_and_nvfp4_output(rng):
    x = rng.standard_normal((2, 5, 64)).astype(F32)
    y = rng.standard_normal((64, 48)).astype(F32)
    a = golden.quantize(x, "nvfp4", tensor_scale="dynamic")
    b = golden.quantize(y, "nvfp4", axis=0, tensor_scale="dynamic")
    res = golden.matmul(a, b)
    assert res.shape == (2, 5, 48)
    for i in range(2):
        ai = golden.MXArray(a.scales[i], a.codes[i], a.fmt, 16, 1, (5, 64), a.scale_format,
                            a.tensor_scale)
        want = oracle.nvfp4_matmul(ai.codes, ai.scales, float(a.tensor_scale), b.codes,
                                   b.scales, float(b.tensor_scale))
        assert np.array_equal(res[i].view(np.uint32), want)
    ref = x @ y  # a sanity bound, not the check: 0.12-0.15 measured over 30 seeds
    assert np.linalg.norm(res - ref) < 0.3 * np.linalg.norm(ref)
    q = golden.matmul(a, b, out_format="nvfp4")
    want = golden.quantize(res, "nvfp4", axis=-1)
    assert q.scale_format == golden.UE4M3 and q.block_size == 16 and q.tensor_scale is None
    assert np.array_equal(q.codes, want.codes) and np.array_equal(q.scales, want.scales)
    q8 = golden.matmul(a, b, out_format="fp8_e4m3")  # an MX output: blocks of 32
    assert q8.block_size == 32 and np.array_equal(
        q8.codes, golden.quantize(res, "fp8_e4m3", axis=-1).codes)


def test_nvfp4_matmul_errors():
    a, b = _nvfp4_operands(np.random.default_rng(0), kdim=32)
    mx = golden.quantize(np.ones((32, 4), np.float64), "fp4_e2m1", axis=0, block_size=16)
    with pytest.raises(ValueError, match="same scale format .* got ue4m3 and e8m0"):
        golden.matmul(a, mx)
    with pytest.raises(ValueError, match="takes scale formats e8m0, got 'ue4m3'"):
        golden.matmul(a, b, accumulation=_M4)
    with pytest.raises(ValueError, match="out_format='nvfp4' takes no scale_mode or rounding"):
        golden.matmul(a, b, out_format="nvfp4", rounding="rtz")
    with pytest.raises(ValueError, match="power of two"):
        golden.matmul(a, b, out_format="nvfp4", out_block_size=12)


# --- one accumulator check for dot, dot_blocks, the NVFP4 dot and matmul -------------------
@pytest.mark.parametrize("acc,exc", [(np.zeros((2, 2), bool), TypeError),
                                     (np.full((2, 2), 0.1), ValueError),
                                     (np.zeros((3, 2), F32), ValueError)])
def test_accumulator_is_checked_alike(acc, exc):
    from golden.dot_product import accumulator

    with pytest.raises(exc) as want:
        accumulator(acc, (2, 2))
    assert "\n" not in str(want.value)
    mx_a, mx_b = _operands(np.random.default_rng(0), "fp8_e4m3", "fp8_e4m3", 32, 32, 2, 2)
    nv_a, nv_b = _nvfp4_operands(np.random.default_rng(0), 2, 32, 2)
    for call in (lambda: golden.matmul(mx_a, mx_b, acc=acc),
                 lambda: golden.matmul(nv_a, nv_b, acc=acc),
                 lambda: _per_output_dot(mx_a, mx_b, acc, "exact"),
                 lambda: _per_output_dot(nv_a, nv_b, acc, "exact")):
        with pytest.raises(exc) as got:
            call()
        assert str(got.value) == str(want.value)
    assert accumulator(np.float64(0.5), (2, 2)).tolist() == [[0.5, 0.5], [0.5, 0.5]]
    assert accumulator(None, (1,)).view(np.uint32).tolist() == [0]  # +0
