"""NVFP4 dot coverage: the cases of ``docs/numerics.md`` section 7 ("Dot product") per
MXDot nvfp4 block step ``f(c + T)``, classified from the stimulus and golden's results.

Cover point ``block`` (configuration class ``nvfp4``), bins:

``exact_zero``        ``c + T`` cancels exactly with ``T != 0`` (result +0);
``t_zero``            ``T = 0`` with a non-zero finite ``c`` (c passes unchanged);
``final_tie``         finite ``c + T`` exactly halfway between two fp32 values;
``cancellation``      ``c`` and ``T`` of opposite signs whose non-zero sum has its leading
                      bit at least 8 places below the larger's;
``subnormal_c``       a subnormal ``c`` with a finite ``T`` (a subnormal or rounded result);
``nan_scale``         a scale byte 0x7F;
``invalid_scale``     a scale byte with bit 7 set (read as NaN);
``zero_scale``        a scale byte 0x00 (``T = 0``);
``subnormal_scale``   a scale byte 0x01..0x07;
``max_scale``         both scale bytes 0x7E (448 * 448);
``nan_accumulator``, ``inf_accumulator``  c is NaN, +-Inf;
``c_pos_zero``, ``c_neg_zero``  c = +0 or -0.

No bin for an overflowing or a subnormal result of ``c + T``: ``|T| <= k * 36 * 448^2 <
2^29`` stays far below half an ulp of the largest fp32 (``2^103``), and a non-zero ``T`` is
a multiple of ``2^-20``, so ``c + T`` is either zero or above ``2^-44`` (the epilogue of
MXDotGeneral has both: :func:`classify_epilogue`).

MXDotGeneral nvfp4 with the epilogue, cover point ``epilogue``: ``alpha_rounded`` (``alpha *
sum`` inexact), ``alpha_subnormal`` (a non-zero subnormal result), ``alpha_underflow`` (a
non-zero product that rounds to zero), ``alpha_overflow`` (finite operands, result Inf),
``alpha_nan`` (alpha NaN), ``alpha_inf_times_zero``, ``alpha_negative``.
"""

from __future__ import annotations

import numpy as np

from golden.nvfp4_dot import block_terms
from golden.scale_format import UE4M3

from .model import CoverageModel, point

__all__ = ["BLOCK_BINS", "EPILOGUE_BINS", "nvfp4_dot_model", "classify_nvfp4_dot",
           "classify_epilogue", "readable_scales"]

BLOCK_BINS = ("exact_zero", "t_zero", "final_tie", "cancellation", "subnormal_c",
              "nan_scale", "invalid_scale", "zero_scale", "subnormal_scale", "max_scale",
              "nan_accumulator", "inf_accumulator", "c_pos_zero", "c_neg_zero")
EPILOGUE_BINS = ("alpha_rounded", "alpha_subnormal", "alpha_underflow", "alpha_overflow",
                 "alpha_nan", "alpha_inf_times_zero", "alpha_negative")
#: Leading bits that must cancel for the ``cancellation`` bin.
CANCELLED_BITS = 8


def nvfp4_dot_model(general: bool = False, epilogue: bool = False) -> CoverageModel:
    """MXDot nvfp4's cover point ``block``; MXDotGeneral nvfp4's ``epilogue`` (with the
    epilogue) beside the run shapes of :func:`tb.coverage.dot.dot_general_model`."""
    if general:
        from .dot import dot_general_model

        runs = dot_general_model("fp4_e2m1", "fp4_e2m1", 2).points
        points = (*runs, point("epilogue", EPILOGUE_BINS, {})) if epilogue else runs
        return CoverageModel("dot-general", "nvfp4" + ("-l2" if epilogue else "-l1"), points)
    return CoverageModel("dot", "nvfp4", (point("block", BLOCK_BINS, {}),))


def readable_scales(scales) -> np.ndarray:
    """Scale bytes with bit 7 set replaced by 0x7F: the unit reads them as NaN, as golden's
    :meth:`golden.scale_format.ScaleFormat.table` does (golden's checked decode refuses
    them)."""
    s = np.asarray(scales).astype(np.uint8)
    return np.where(s & 0x80, UE4M3.nan_code, s).astype(np.uint8)


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def classify_nvfp4_dot(ca, sa, cb, sb, c_bits, results) -> dict:
    """Bin hit counts ``{"block": {bin: count}}`` of MXDot nvfp4 blocks (codes ``(n, k)``,
    scale bytes ``(n,)``, ``c`` and golden's results as fp32 bits)."""
    sa, sb = np.asarray(sa).astype(np.uint8), np.asarray(sb).astype(np.uint8)
    with np.errstate(invalid="ignore"):
        t = block_terms(ca, readable_scales(sa), cb, readable_scales(sb))
    c = np.asarray(c_bits, np.uint32).view(np.float32).astype(np.float64)
    r = np.asarray(results, np.uint32).view(np.float32)
    finite = np.isfinite(t) & np.isfinite(c)
    with np.errstate(invalid="ignore", over="ignore"):
        s, err = _two_sum(np.where(finite, c, 0.0), np.where(finite, t, 0.0))
        r64 = r.astype(np.float64)
        other = np.nextafter(r, np.where(s > r64, np.inf, -np.inf).astype(np.float32))
        mid = (r64 + other.astype(np.float64)) / 2
    big = np.maximum(np.abs(c), np.abs(t))

    def either(test):
        return test(sa) | test(sb)
    counts = {
        "exact_zero": finite & (t != 0) & (s == 0) & (err == 0),
        "t_zero": finite & (t == 0) & (c != 0),
        "final_tie": finite & (err == 0) & np.isfinite(r) & (s != r64) & (s == mid),
        "cancellation": finite & (t != 0) & (c != 0) & (np.sign(t) != np.sign(c))
        & (s != 0) & (np.abs(s) < big * 2.0 ** -CANCELLED_BITS),
        "subnormal_c": finite & (c != 0) & (np.abs(c) < 2.0 ** -126),
        "nan_scale": either(lambda x: x == UE4M3.nan_code),
        "invalid_scale": either(lambda x: x >= 0x80),
        "zero_scale": either(lambda x: x == 0),
        "subnormal_scale": either(lambda x: (x >= 1) & (x <= 7)),
        "max_scale": (sa == 0x7E) & (sb == 0x7E),
        "nan_accumulator": np.isnan(c),
        "inf_accumulator": np.isinf(c),
        "c_pos_zero": np.asarray(c_bits, np.uint32) == 0,
        "c_neg_zero": np.asarray(c_bits, np.uint32) == 0x80000000,
    }
    return {"block": {b: int(np.count_nonzero(v)) for b, v in counts.items()}}


def classify_epilogue(sums, alpha_bits, results) -> dict:
    """Bin hit counts ``{"epilogue": {bin: count}}`` of MXDotGeneral runs: ``sums`` (the
    chained fp32 sums before the epilogue), ``alpha`` and golden's results, as fp32 bits."""
    x = np.asarray(sums, np.uint32).view(np.float32).astype(np.float64)
    a = np.asarray(alpha_bits, np.uint32).view(np.float32).astype(np.float64)
    r = np.asarray(results, np.uint32).view(np.float32).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        exact = x * a  # exact in float64 (two 24-bit significands), may underflow below 2^-1074
    finite = np.isfinite(x) & np.isfinite(a)
    live = finite & (x != 0) & (a != 0)
    counts = {
        "alpha_rounded": live & np.isfinite(r) & (r != exact),
        "alpha_subnormal": live & (r != 0) & (np.abs(r) < 2.0 ** -126),
        "alpha_underflow": live & (r == 0),
        "alpha_overflow": live & np.isinf(r),
        "alpha_nan": np.isnan(a),
        "alpha_inf_times_zero": (np.isinf(a) & (x == 0)) | (np.isinf(x) & (a == 0)),
        "alpha_negative": (np.asarray(alpha_bits, np.uint32) >> 31).astype(bool) & ~np.isnan(a),
    }
    return {"epilogue": {b: int(np.count_nonzero(v)) for b, v in counts.items()}}
