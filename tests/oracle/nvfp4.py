"""The oracle's NVFP4: the torchao and TransformerEngine recipes, the dequantization, the
exact dot, and the tcgen05.mxf4nvf4 chain with the tensor scales."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .formats import (
    NAN,
    code_value,
    decode_code,
    decode_input,
    encode_magnitude,
    pow2,
    spec,
)
from .gpu import GPU_NAN, tcgen05_chain
from .mx import FP32_QNAN, fp32_bits_value, rne_fp32_bits, round_to_grid

__all__ = [
    "E2M1", "UE4M3_MAGS", "F32_INF", "FLT_MAX", "f32", "f32_div", "ue4m3_code", "ue4m3_value",
    "nvfp4_tensor_scale", "nvfp4_block", "nvfp4_quantize",
    "nvfp4_dequantize_value", "nvfp4_dot", "nvfp4_tcgen05_dot", "nvfp4_matmul",
]

# ---------------------------------------------------------------------------------------------
# NVFP4 (docs/numerics.md, NVFP4): the torchao and TransformerEngine recipes, restated on
# Fractions with every fp32 operation an explicit RNE (f32) and the scale cast an RNE search of
# the e4m3 value table.  Values are magnitudes; F32_INF (2^128) stands for an fp32 overflow.
# ---------------------------------------------------------------------------------------------
E2M1 = spec(2, 1, name="fp4_e2m1")
UE4M3_MAGS = spec(4, 3, "fn", name="ue4m3")  # the magnitudes of UE4M3: e4m3fn, sign bit clear
F32_INF = pow2(128)
FLT_MAX = (pow2(24) - 1) * pow2(104)


def f32(x: Fraction) -> Fraction:
    """One fp32 RNE of a magnitude ``x >= 0`` (overflow gives F32_INF)."""
    if x >= F32_INF:
        return F32_INF
    bits = rne_fp32_bits(x)
    return F32_INF if bits == 0x7F800000 else fp32_bits_value(bits)


def f32_div(a: Fraction, b: Fraction) -> Fraction:
    """fp32 ``a / b`` of magnitudes (``b = 0`` or ``a`` Inf gives F32_INF, as IEEE)."""
    if b == 0 or a >= F32_INF:
        return F32_INF
    return Fraction(0) if b >= F32_INF else f32(a / b)


def ue4m3_code(x: Fraction) -> int:
    """The UE4M3 byte of the RNE cast of a magnitude in [0, 448] (table search)."""
    assert 0 <= x <= 448
    return encode_magnitude(UE4M3_MAGS, False, round_to_grid(UE4M3_MAGS, x, "rne"))


def ue4m3_value(code: int):
    """Value of a UE4M3 byte: a Fraction, or NAN for 0x7F."""
    assert 0 <= code <= 0x7F
    return decode_code(UE4M3_MAGS, code)[1]


def nvfp4_tensor_scale(values, recipe: str):
    """The dynamic tensor scale of a list of (neg, magnitude): (P, S), S TE's encode scale
    (None for torchao).  The amax is over the finite values."""
    amax = max((m for _, m in values if isinstance(m, Fraction)), default=Fraction(0))
    if recipe == "torchao":
        return max(f32(amax / 2688), pow2(-120)), None
    s = min(f32_div(Fraction(2688), amax), FLT_MAX)
    s = Fraction(1) if s == 0 else s
    return f32_div(Fraction(1), s), s


def nvfp4_block(values, recipe: str = "torchao", p=None, te_s=None):
    """One NVFP4 block: ``values`` a list of (neg, magnitude).  Returns (scale byte, codes)."""
    k = len(values)
    if any(not isinstance(m, Fraction) for _, m in values):
        return 0x7F, [0] * k
    amax = max(m for _, m in values)
    if recipe == "torchao":
        b = f32(amax / 6)
        if p is not None:
            b = f32_div(b, p)
        sc = ue4m3_code(min(max(b, pow2(-6)), Fraction(448)))
        sv = ue4m3_value(sc)
        r = f32_div(Fraction(1) if p is None else f32_div(Fraction(1), p), sv)
    else:
        mult = f32(te_s * f32(Fraction(1, 6)))
        d = min(f32(amax * mult), FLT_MAX, Fraction(448))
        sc = ue4m3_code(d)
        sv = ue4m3_value(sc)
        r = min(f32_div(Fraction(1), f32(sv * p)), FLT_MAX)
    codes = []
    for neg, mag in values:
        y = min(f32(mag * r), Fraction(6))
        q = round_to_grid(E2M1, y, "rne")
        sign = neg if recipe == "torchao" else (neg and y != 0)  # TE: -0 gives code 0
        codes.append(encode_magnitude(E2M1, sign, q))
    return sc, codes


def nvfp4_quantize(x: np.ndarray, recipe="torchao", tensor_scale=None, block_size=16):
    """Quantize the rows of a 2-d float array (length a multiple of ``block_size``).

    Returns (scales (rows, n), codes (rows, n*k), P or None)."""
    rows = [decode_input(r) for r in x]
    p, te_s = None, None
    if tensor_scale == "dynamic":
        p, te_s = nvfp4_tensor_scale([v for r in rows for v in r], recipe)
    elif tensor_scale is not None:
        p = Fraction(tensor_scale)
    scales, codes = [], []
    for r in rows:
        blocks = [nvfp4_block(r[i:i + block_size], recipe, p, te_s)
                  for i in range(0, len(r), block_size)]
        scales.append([s for s, _ in blocks])
        codes.append([c for _, cs in blocks for c in cs])
    return np.array(scales, np.uint8), np.array(codes, np.uint8), p


def nvfp4_dequantize_value(code: int, scale: int, p=None):
    """Exact value of one NVFP4 element: ``e2m1(code) * f(P * s)`` (NAN for scale 0x7F)."""
    sv = ue4m3_value(scale)
    if sv is NAN:
        return NAN
    ps = sv if p is None else f32(Fraction(p) * sv)
    return code_value(E2M1, code) * ps


def nvfp4_dot(a_codes, a_scales, pa, b_codes, b_scales, pb, c_bits=0, block_size=16) -> int:
    """fp32 bits of one nvfp4 x nvfp4 dot product (one row): the accumulator starts at ``c``,
    blocks in order, one RNE each; then ``f(f(Pa*Pb) * sum)`` when either has a tensor scale."""
    if 0x7F in [int(s) for s in a_scales] + [int(s) for s in b_scales]:
        return FP32_QNAN
    acc = fp32_bits_value(c_bits)
    if acc is NAN:
        return FP32_QNAN
    if isinstance(acc, str):  # an Inf accumulator stays that Inf (T is finite, alpha > 0)
        return int(c_bits)
    for j, (sa, sb) in enumerate(zip(a_scales, b_scales, strict=True)):
        blk = slice(j * block_size, (j + 1) * block_size)
        s = sum((code_value(E2M1, x) * code_value(E2M1, y)
                 for x, y in zip(a_codes[blk], b_codes[blk], strict=True)), Fraction(0))
        acc = fp32_bits_value(rne_fp32_bits(acc + s * ue4m3_value(int(sa)) * ue4m3_value(int(sb))))
    if pa is None and pb is None:
        return rne_fp32_bits(acc)
    alpha = f32(Fraction(1 if pa is None else pa) * Fraction(1 if pb is None else pb))
    return rne_fp32_bits(alpha * acc)


# ---------------------------------------------------------------------------------------------
# NVFP4 in a GPU accumulation mode: the tcgen05.mxf4nvf4 chain on UE4M3 scales (the MMA's
# block scales only), then the tensor scales once on the final sum, f(f(Pa * Pb) * sum).
# ---------------------------------------------------------------------------------------------
def nvfp4_tcgen05_dot(a_codes, a_scales, pa, b_codes, b_scales, pb, c_bits=0,
                      block_size=16) -> int:
    """fp32 bits of one nvfp4 x nvfp4 dot product (one row) in tcgen05.mxf4nvf4 steps."""
    a_codes, b_codes = [int(x) for x in a_codes], [int(x) for x in b_codes]
    n = len(a_codes) // block_size
    blocks = [(a_codes[j * block_size:(j + 1) * block_size],
               b_codes[j * block_size:(j + 1) * block_size]) for j in range(n)]
    acc = tcgen05_chain("tcgen05.mxf4nvf4", "fp4_e2m1", [x for x, _ in blocks],
                        [int(s) for s in a_scales], "fp4_e2m1", [y for _, y in blocks],
                        [int(s) for s in b_scales], int(c_bits), "ue4m3")
    value = fp32_bits_value(acc)
    if value is NAN:
        return GPU_NAN
    if (pa is None and pb is None) or isinstance(value, str):
        return acc  # no tensor scale, or an Inf (alpha > 0 keeps it)
    alpha = f32(Fraction(1 if pa is None else pa) * Fraction(1 if pb is None else pb))
    return rne_fp32_bits(alpha * value)


def nvfp4_matmul(a_codes, a_scales, pa, b_codes, b_scales, pb, c_bits=None, block_size=16,
                 accumulation="exact"):
    """fp32 bits (uint32, (M, N)) of an nvfp4 x nvfp4 matrix product: every output the NVFP4
    dot (:func:`nvfp4_dot`, or :func:`nvfp4_tcgen05_dot`) of row m of A ``(M, K')`` with
    scales ``(M, n)`` and column n of B ``(K', N)`` with scales ``(n, N)``."""
    dot_fn = nvfp4_dot if accumulation == "exact" else nvfp4_tcgen05_dot
    a_codes, b_codes = np.asarray(a_codes), np.asarray(b_codes)
    a_scales, b_scales = np.asarray(a_scales), np.asarray(b_scales)
    m_rows, n_cols = a_codes.shape[0], b_codes.shape[1]
    c = np.zeros((m_rows, n_cols), np.uint32) if c_bits is None else c_bits
    out = np.zeros((m_rows, n_cols), np.uint32)
    for i in range(m_rows):
        for j in range(n_cols):
            out[i, j] = dot_fn(a_codes[i], a_scales[i], pa, b_codes[:, j], b_scales[:, j], pb,
                               int(c[i, j]), block_size)
    return out
