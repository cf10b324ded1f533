"""Decoding for humans: the bit patterns of a mismatch report as fields and values."""

from __future__ import annotations

import numpy as np

import golden
from golden.formats import SCALE_BIAS, SCALE_NAN, ElementFormat, FloatFormat

__all__ = ["describe_float", "describe_code", "describe_scale", "describe_lanes",
           "nan_differs_only", "MAX_LANES"]

#: Wrong lanes of a mismatching block reported in full (the rest are counted).
MAX_LANES = 4


def describe_float(bits: int, float_format: FloatFormat) -> str:
    """``0x3f800000 = 1.0 (s0 e0x7f m0x0)`` for an IEEE pattern of ``float_format``."""
    bits = int(bits)
    s = bits >> (float_format.bits - 1)
    e = (bits >> float_format.mbits) & ((1 << float_format.ebits) - 1)
    m = bits & ((1 << float_format.mbits) - 1)
    v = np.array([bits], float_format.uint).view(float_format.dtype)[0]
    return f"{bits:#0{float_format.bits // 4 + 2}x} = {float(v)!r} (s{s} e{e:#x} m{m:#x})"


def is_nan_bits(bits, float_format: FloatFormat) -> np.ndarray:
    """Whether each IEEE pattern of ``float_format`` in ``bits`` is a NaN (any sign and
    payload): exponent field all ones, fraction not zero."""
    bits = np.asarray(bits).astype(np.uint64)
    magnitude = bits & np.uint64(float_format.sign_mask - 1)
    return magnitude > np.uint64(float_format.inf_bits)


def nan_differs_only(expected, actual, float_format: FloatFormat) -> bool:
    """True when ``expected`` and ``actual`` (IEEE patterns of ``float_format``) differ, and
    only in lanes where both are NaNs (another sign or payload)."""
    expected, actual = (np.asarray(x).astype(np.uint64) for x in (expected, actual))
    wrong = expected != actual
    return bool(wrong.any()) and bool(
        (is_nan_bits(expected[wrong], float_format)
         & is_nan_bits(actual[wrong], float_format)).all())


def describe_scale(scale: int) -> str:
    """``130 (2^3)`` or ``255 (NaN)`` for an E8M0 scale code."""
    scale = int(scale)
    return f"{scale} (NaN)" if scale == SCALE_NAN else f"{scale} (2^{scale - SCALE_BIAS})"


def describe_code(code: int, fmt: ElementFormat, scale: int | None = None) -> str:
    """``0x38 = s0 e0111 m000 = 1.0 [x 2^-3 = 0.125]`` (int8: two's complement)."""
    code = int(code)
    v = float(golden.decode(np.array([code], np.uint8), fmt)[0])
    if fmt.twos_complement:
        n = code - (1 << fmt.bits) if code >> (fmt.bits - 1) else code
        head = f"{code:#04x} = int {n} = {v!r}"
    else:
        s = code >> (fmt.bits - 1)
        e = (code >> fmt.mbits) & ((1 << fmt.ebits) - 1)
        m = code & ((1 << fmt.mbits) - 1)
        head = f"{code:#04x} = s{s} e{e:0{fmt.ebits}b} m{m:0{fmt.mbits}b} = {v!r}"
    if scale is not None and scale != SCALE_NAN:
        head += f" x 2^{scale - SCALE_BIAS} = {v * 2.0 ** (scale - SCALE_BIAS)!r}"
    return head


def describe_lanes(bad_lanes, describe_lane) -> list[str]:
    """Report lines for the wrong lanes of one block: ``describe_lane(lane)`` for the first
    :data:`MAX_LANES` of ``bad_lanes``, then a count of the rest."""
    lines = [describe_lane(int(lane)) for lane in bad_lanes[:MAX_LANES]]
    if len(bad_lanes) > MAX_LANES:
        lines.append(f"  ... {len(bad_lanes) - MAX_LANES} more lanes")
    return lines
