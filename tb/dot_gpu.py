"""Directed vectors of the dot units' GPU accumulation modes (``tcgen05.mxf8f6f4``,
``tcgen05.mxf4``): a block per rule that distinguishes them from the exact mode
(``docs/numerics.md`` section 8), for any format pair the mode takes.
:class:`tb.dot.DotModel` adds them to its directed batch in the mode, and their expected
results are golden's (``golden.dot_blocks(..., accumulation=...)``);
:mod:`tb.coverage.dot_gpu` bins what they reach.
"""

from __future__ import annotations

import numpy as np

import golden

__all__ = ["gpu_directed_blocks", "nvfp4_gpu_directed_blocks", "nvfp4_gpu_directed_runs",
           "code_of"]

#: fp32 bit patterns the vectors use.
_FLT_MAX, _NEG_ZERO, _INF, _NAN = 0x7F7FFFFF, 0x80000000, 0x7F800000, 0x7FC00000


def code_of(fmt, value: float) -> int:
    """The first code of ``fmt`` that decodes to ``value`` (ValueError if none does)."""
    table = golden.decode_table(golden.element_format(fmt))
    hits = np.flatnonzero(table == value)
    if not hits.size:
        raise ValueError(f"{golden.element_format(fmt).name} has no code for {value!r}")
    return int(hits[0])


def _fp32(x: float) -> int:
    return int(np.array([x], np.float32).view(np.uint32)[0])


#: Fraction bits kept below the largest exponent, per mode.
FRACTION_BITS = {"tcgen05.mxf8f6f4": 25, "tcgen05.mxf4": 35, "tcgen05.mxf4nvf4": 35}


def _directed_block(k: int, lanes, sa, sb, c, label) -> tuple:
    """One directed block ``(ca, sa, cb, sb, c, label)``: the code pairs ``lanes`` in its
    first lanes, code 0 in the other ``k - len(lanes)``."""
    ca, cb = np.zeros(k, np.uint8), np.zeros(k, np.uint8)
    for i, (x, y) in enumerate(lanes):
        ca[i], cb[i] = x, y
    return ca, sa, cb, sb, c, label


def gpu_directed_blocks(fmt_a, fmt_b, k: int = 32,
                        accumulation: str = "tcgen05.mxf8f6f4") -> list:
    """``(ca, sa, cb, sb, c_bits, label)`` per rule: a term truncated away; a negative term
    truncated toward zero (the result above ``c + T``); ``e_max`` at the floor -133 (c = +0,
    products below 2^-133); cancellation that wipes out ``c``; FLT_MAX where RNE overflows;
    Inf at ``2^128``; +0 for a negative sum truncated to nothing and for ``c = -0``; NaN
    0x7FFFFFFF from a NaN scale and from a NaN ``c``; the worked example of
    ``docs/numerics.md`` section 8 for fp8_e4m3 x fp8_e4m3.  The magnitudes follow the
    mode's fraction bits ``F`` (25, mxf4 35): ``c = 2^(F + 5)`` keeps multiples of 2^5."""
    f = FRACTION_BITS[accumulation]
    fa, fb = golden.element_format(fmt_a), golden.element_format(fmt_b)
    one_a, one_b = code_of(fa, 1.0), code_of(fb, 1.0)
    minus_a = code_of(fa, -1.0)
    three_halves = code_of(fa, 1.5)
    table_a, table_b = golden.decode_table(fa), golden.decode_table(fb)
    tiny_a = int(np.argmin(np.where(np.isfinite(table_a) & (table_a > 0), table_a, np.inf)))
    tiny_b = int(np.argmin(np.where(np.isfinite(table_b) & (table_b > 0), table_b, np.inf)))
    neg_tiny_a = tiny_a | (1 << (fa.bits - 1))
    out = []

    def block(lanes, sa, sb, c, label):
        out.append(_directed_block(k, lanes, sa, sb, c, label))

    # c = 2^(F+5): terms are kept to multiples of 2^5, so the product 1 is truncated away;
    # mxf8f6f4: 31 products -16 vanish too, 2^30 where c + T = 2^30 - 496 (RNE: 2^30 - 512)
    big = _fp32(2.0 ** (f + 5))
    block([(one_a, one_b)], 127, 127, big, "term truncated away")
    block([(minus_a, one_b)] * (k - 1), 127 + 4, 127, big, "negative terms truncated up")
    block([(minus_a, one_b), (one_a, one_b), (minus_a, one_b)], 127 + 4, 127,
          _fp32(2.0 ** (f + 5) + 2.0 ** (f - 18)), "mixed terms truncated")
    # c = +0, scales 2^-70 each: products at 2^-140 and the smallest ones far below the floor
    block([(one_a, one_b), (three_halves, one_b), (tiny_a, tiny_b)], 57, 57, 0,
          "e_max at the floor")
    block([(tiny_a, tiny_b), (neg_tiny_a, one_b)], 1, 2, 0, "floor, products below 2^-149")
    # +1 and -1 cancel at e_max 0; c = 2^-(F+5) lies below 2^-F: +0
    block([(one_a, one_b), (minus_a, one_b)], 127, 127, _fp32(2.0 ** -(f + 5)),
          "cancellation wipes out c")
    # FLT_MAX + 1.5 * 2^103 lies in [2^128 - 2^103, 2^128): RNE gives Inf, RZ FLT_MAX
    block([(three_halves, one_b)], 127 + 103, 127, _FLT_MAX, "FLT_MAX where RNE overflows")
    block([(one_a, one_b)], 127 + 104, 127, _FLT_MAX, "Inf at 2^128")
    block([(minus_a, one_b)], 127 + 104, 127, _FLT_MAX | (1 << 31), "-Inf at -2^128")
    block([(neg_tiny_a, tiny_b)], 0, 0, _NEG_ZERO, "negative sum truncated to +0")
    # +1 and -1 cancel at e_max 254 (mxf8f6f4; mxf4 x_s 254): +0, where the binade of the
    # zero sum lies beyond fp32's
    block([(one_a, one_b), (minus_a, one_b)], 254, 254, 0, "cancellation at the top scales")
    block([], 127, 127, _NEG_ZERO, "c = -0, no products: +0")
    block([(one_a, one_b)], 255, 127, _fp32(1.0), "NaN scale: 0x7FFFFFFF")
    block([(one_a, one_b)], 127, 127, _NAN, "NaN c: 0x7FFFFFFF")
    block([(one_a, one_b)], 127, 127, _INF, "+Inf c")
    if fa.name == fb.name == "fp8_e4m3":
        block([(0x78, 0x78)] + [(0x01, 0x30)] * (k - 1), 127, 127, 0,
              "docs/numerics.md worked example")
    return out


def nvfp4_gpu_directed_blocks(k: int = 16) -> list:
    """``tcgen05.mxf4nvf4`` with UE4M3 scales (MXDot nvfp4): ``(ca, sa, cb, sb, c_bits,
    label)`` per rule, with scale bytes 0x38 (1.0) unless stated: a group truncated away
    below ``c = 2^40``; negative groups truncated up; cancellation that wipes out ``c``
    (positive, and negative: +0); ``c = -0``; a sign-bit byte read as its low seven bits;
    NaN 0x7FFFFFFF from 0x7F (also with bit 7 set, 0xFF) and from a NaN ``c``; a zero scale
    (the group at the floor, ``c`` kept); subnormal scales; ``P = 225``."""
    one, minus, half = (code_of("fp4_e2m1", v) for v in (1.0, -1.0, 0.5))
    out = []

    def block(lanes, sa, sb, c, label):
        out.append(_directed_block(k, lanes, sa, sb, c, label))

    big = _fp32(2.0 ** 40)  # terms kept to multiples of 2^5
    block([(one, one)], 0x38, 0x38, big, "group truncated away")
    block([(minus, one)] * 3, 0x48, 0x38, big, "negative group truncated up")  # -3 * 4
    block([(one, one), (minus, one)], 0x38, 0x38, _fp32(2.0 ** -40),
          "cancellation wipes out c")
    block([(one, one), (minus, one)], 0x38, 0x38, _fp32(-2.0 ** -40),
          "negative sum truncated to +0")
    block([], 0x38, 0x38, _NEG_ZERO, "c = -0, no products: +0")
    block([(one, one)], 0xB8, 0x38, _fp32(1.0), "sign-bit byte 0xB8 reads as 1.0")
    block([(one, one)], 0x7F, 0x38, _fp32(1.0), "NaN scale 0x7F")
    block([(one, one)], 0x38, 0xFF, 0, "NaN scale 0xFF (sign bit ignored)")
    block([(one, one)], 0x38, 0x38, _NAN, "NaN c")
    block([(one, one)] * k, 0x00, 0x38, _fp32(-2.5), "zero scale: the group at the floor")
    block([(half, half)] * k, 0x07, 0x01, _fp32(1e-3), "subnormal scales with c")
    block([(one, one)] * k, 0x3F, 0xBF, _fp32(3.0), "P = 225")
    return out


def nvfp4_gpu_directed_runs(k: int = 16) -> list:
    """``tcgen05.mxf4nvf4`` with UE4M3 scales over a run (MXDotGeneral nvfp4): ``(ca, sa, cb,
    sb, c0_bits, label)`` (arrays of two blocks) whose chained result differs from a step per
    block: ``2^10 - 2^-19 + 2^-19`` in one step is ``2^10`` (a step per block truncates
    ``2^10 - 2^-19`` to ``2^10 - 2^-14``); a group cancelling at ``448^2`` keeps its exponent,
    so the next block's ``2^-20`` is truncated away (+0; a step per block keeps it)."""
    one, minus, half = (code_of("fp4_e2m1", v) for v in (1.0, -1.0, 0.5))

    def run(lanes, scales, c0, label):
        blocks = [_directed_block(k, pairs, s, s, 0, label) for pairs, s in zip(
            lanes, scales, strict=True)]
        ca, cb = (np.array([b[i] for b in blocks], np.uint8) for i in (0, 2))
        sc = np.array(scales, np.uint8)
        return ca, sc, cb, sc.copy(), c0, label

    return [run([[(minus, half)], [(one, half)]], [0x01, 0x01], _fp32(2.0 ** 10),
                "2^10 - 2^-19 + 2^-19 in one step"),
            run([[(one, one), (minus, one)], [(half, half)]], [0x7E, 0x01], 0,
                "a cancelled group at 448^2 truncates the next block's 2^-20")]
