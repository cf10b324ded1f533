"""The oracle's GPU accumulation modes: one tcgen05 step of a Blackwell block-scaled MMA and
its chaining over K, on Fractions."""

from __future__ import annotations

from fractions import Fraction

from .formats import NAN, code_value, floor_log2, fmt_of, pow2
from .mx import fp32_bits_value, product_specials

__all__ = [
    "GPU_NAN", "GPU_KINDS", "rz_fp32_bits", "tcgen05_f8f6f4_step", "tcgen05_f4_step",
    "tcgen05_chain",
]

# ---------------------------------------------------------------------------------------------
# GPU accumulation modes (docs/numerics.md, "GPU accumulation modes"): one tcgen05 step of a
# Blackwell block-scaled MMA, restated on Fractions.  Every term is a value with an alignment
# exponent; each is truncated toward zero to a multiple of 2^(e_max - F), the truncated terms
# are added exactly, and the sum is rounded toward zero to binary32.
# ---------------------------------------------------------------------------------------------
GPU_NAN = 0x7FFFFFFF  # the NaN every tcgen05 step returns
GPU_KINDS = {  # kind -> (fraction bits F, exponent of a zero term, elements per step)
    "tcgen05.mxf8f6f4": (25, -133, 32),
    "tcgen05.mxf4": (35, -139, 64),
    "tcgen05.mxf4nvf4": (35, -139, 64),
}


def rz_fp32_bits(x: Fraction) -> int:
    """binary32 rounding toward zero: subnormals kept, |x| >= 2^128 is +-Inf, every zero
    (exact, or a magnitude below 2^-149) is +0."""
    if x == 0:
        return 0
    neg = x < 0
    a = -x if neg else x
    if a >= pow2(128):
        return 0x7F800000 | (int(neg) << 31)
    p = floor_log2(a)
    quantum = pow2(max(p, -126) - 23)
    n = int(a / quantum)  # int() of a positive Fraction truncates
    if n == 0:
        return 0
    mag = n if p < -126 else ((p + 127) << 23) | (n - (1 << 23))
    return mag | (int(neg) << 31)


def _alignment_exponent(value: Fraction, floor: int) -> int:
    """floor(log2 |value|), but not below ``floor`` (the binade of the smallest normal)."""
    return max(floor_log2(abs(value)), floor)


def _truncated_sum_rz(terms, frac_bits: int) -> int:
    """RZ_fp32 of the sum of (value, exponent) terms, each truncated toward zero to a multiple
    of 2^(e_max - frac_bits)."""
    unit = pow2(max(e for _, e in terms) - frac_bits)
    return rz_fp32_bits(sum(int(v / unit) for v, _ in terms) * unit)


def tcgen05_f8f6f4_step(fa, a_codes, sa, fb, b_codes, sb, c_bits=0) -> int:
    """One tcgen05.mxf8f6f4 step (a 32-block pair): fp32 bits."""
    fa, fb = fmt_of(fa), fmt_of(fb)
    c = fp32_bits_value(c_bits)
    a = [code_value(fa, x) for x in a_codes]
    b = [code_value(fb, x) for x in b_codes]
    special = product_specials(zip(a, b, strict=True), c, sa == 255 or sb == 255, GPU_NAN)
    if special is not None:
        return special
    f, e_zero, _ = GPU_KINDS["tcgen05.mxf8f6f4"]
    terms = [(c, e_zero if c == 0 else _alignment_exponent(c, -126))]
    for x, y in zip(a, b, strict=True):
        if x == 0 or y == 0:
            terms.append((Fraction(0), e_zero))
        else:
            e = (_alignment_exponent(x, 1 - fa.bias) + _alignment_exponent(y, 1 - fb.bias)
                 + (sa - 127) + (sb - 127))
            terms.append((x * y * pow2(sa - 127) * pow2(sb - 127), e))
    return _truncated_sum_rz(terms, f)


def _block_scale(code: int, scale_format: str):
    """(value, alignment exponent) of a block-scale code, or NAN.  E8M0: 2^(code - 127), NaN
    0xFF.  UE4M3: the e4m3 value of the code with its sign bit ignored (NaN 0x7F), exponent
    max(floor(log2 v), -6)."""
    if scale_format == "e8m0":
        return NAN if code == 255 else (pow2(code - 127), code - 127)
    v = code_value("fp8_e4m3", code & 0x7F)
    if v is NAN:
        return NAN
    return v, (-6 if v == 0 else _alignment_exponent(v, -6))


def tcgen05_f4_step(a_blocks, a_scales, b_blocks, b_scales, c_bits=0, scale_format="e8m0"):
    """One tcgen05.mxf4 / mxf4nvf4 step: 64 fp4_e2m1 elements in blocks (or fewer, a last
    step), one scale per block; fp32 bits.  Each group of 16 products is summed exactly; its
    exponent is the two scales' alone (the floor for an all-zero group or a zero scale)."""
    c = fp32_bits_value(c_bits)
    scales = [_block_scale(int(s), scale_format) for s in list(a_scales) + list(b_scales)]
    if c is NAN or any(s is NAN for s in scales):
        return GPU_NAN
    if isinstance(c, str):
        return 0xFF800000 if c == "-inf" else 0x7F800000
    f, e_zero, _ = GPU_KINDS["tcgen05.mxf4"]
    terms = [(c, e_zero if c == 0 else _alignment_exponent(c, -126))]
    for ab, sa, bb, sb in zip(a_blocks, a_scales, b_blocks, b_scales, strict=True):
        (va, ea), (vb, eb) = _block_scale(int(sa), scale_format), _block_scale(int(sb),
                                                                               scale_format)
        for g in range(0, len(ab), 16):
            prods = [code_value("fp4_e2m1", x) * code_value("fp4_e2m1", y)
                     for x, y in zip(ab[g:g + 16], bb[g:g + 16], strict=True)]
            zero = all(p == 0 for p in prods) or va * vb == 0
            terms.append((sum(prods, Fraction(0)) * va * vb, e_zero if zero else ea + eb))
    return _truncated_sum_rz(terms, f)


def tcgen05_chain(kind, fa, a_blocks, a_scales, fb, b_blocks, b_scales, c_bits=0,
                  scale_format="e8m0") -> int:
    """A GPU-mode dot product over n blocks: one step per 32 elements (mxf8f6f4) or per 64
    (mxf4, mxf4nvf4; a last shorter run of blocks is a step of its own), the accumulator
    chained."""
    acc = int(c_bits)
    step = GPU_KINDS[kind][2] // len(a_blocks[0])
    for j in range(0, len(a_blocks), step):
        sl = slice(j, j + step)
        if kind == "tcgen05.mxf8f6f4":
            acc = tcgen05_f8f6f4_step(fa, a_blocks[j], int(a_scales[j]), fb, b_blocks[j],
                                      int(b_scales[j]), acc)
        else:
            acc = tcgen05_f4_step(a_blocks[sl], [int(s) for s in a_scales[sl]], b_blocks[sl],
                                  [int(s) for s in b_scales[sl]], acc, scale_format)
    return acc
