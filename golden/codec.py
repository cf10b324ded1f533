"""Element- and scale-level codec: codes <-> values for one element format and for E8M0.

These are the building blocks of :func:`golden.quantize` and :func:`golden.dequantize`, and the
reference that the RTL element paths are checked against.
"""

from __future__ import annotations

import functools

import numpy as np

from . import _kernels as K
from .formats import (
    SCALE_BIAS,
    SCALE_NAN,
    ElementFormat,
    Rounding,
    element_format,
)

__all__ = ["decode", "encode", "decode_scale", "encode_scale", "decode_table", "as_float_bits",
           "rounding_mode", "check_random"]


def _code_fields(fmt: ElementFormat):
    """Every code ``0 .. 2^bits - 1`` split into its sign (bool), magnitude, exponent field and
    mantissa field in the shared sign-magnitude view (an intN code ``n`` by ``|n|``)."""
    codes = np.arange(1 << fmt.bits, dtype=np.int64)
    if fmt.twos_complement:
        signed = np.where(codes >= 1 << (fmt.bits - 1), codes - (1 << fmt.bits), codes)
        neg, mag = signed < 0, np.abs(signed)
    else:
        neg, mag = (codes >> fmt.sign_bit) & 1 == 1, codes & ((1 << fmt.sign_bit) - 1)
    return neg, mag, mag >> fmt.mbits, mag & ((1 << fmt.mbits) - 1)


@functools.cache
def decode_table(fmt: ElementFormat) -> np.ndarray:
    """float64 value of every code ``0 .. 2^bits - 1`` (NaN/Inf codes decode to NaN/Inf)."""
    fmt = element_format(fmt)
    neg, mag, e, m = _code_fields(fmt)
    sig = np.where(e == 0, m, m | (1 << fmt.mbits)).astype(np.float64)
    x = np.where(e == 0, fmt.lsb_exp, e - fmt.bias - fmt.mbits)
    val = np.ldexp(sig, x)
    if not fmt.twos_complement:
        val[np.isin(mag, fmt.inf_codes)] = np.inf
        val[np.isin(mag, fmt.nan_codes)] = np.nan
    val = np.where(neg, -val, val)
    val.flags.writeable = False
    return val


@functools.cache
def dot_tables(fmt: ElementFormat):
    """Per-code (signed significand, shift, flag) with value ``sig * 2^(shift + lsb_exp)``.

    The integer view the dot-product kernel (and the RTL multiplier lanes) work in, read from
    the code's fields: a subnormal magnitude ``0.M`` is ``sig = M``, shift 0; a normal one
    ``1.M`` with exponent field ``e`` is ``sig = 2^mbits + M``, shift ``e - 1``.  An intN code
    ``n`` is its magnitude ``|n|`` in the same view (``-2^(N-1)`` is ``2^mbits`` shifted by 1).
    An Inf code has ``sig = +-1``; a NaN code ``sig = 0``.
    """
    fmt = element_format(fmt)
    neg, mag, e, m = _code_fields(fmt)
    sig = np.where(e == 0, m, m | (1 << fmt.mbits))
    shift = np.where(e == 0, 0, e - 1)
    inf, nan = np.isin(mag, fmt.inf_codes), np.isin(mag, fmt.nan_codes)
    if fmt.twos_complement:
        inf = nan = np.zeros(mag.shape, bool)
    flag = np.where(nan, K.NAN, np.where(inf, K.INF, K.FINITE)).astype(np.int64)
    sig = np.where(inf, 1, np.where(nan, 0, sig))
    shift = np.where(inf | nan, 0, shift)
    sig = np.where(neg, -sig, sig).astype(np.int64)
    shift = shift.astype(np.int64)
    for a in (sig, shift, flag):
        a.flags.writeable = False
    return sig, shift, flag


def decode(codes, fmt) -> np.ndarray:
    """Decode element codes to float64 values (exact), NaN/Inf codes to NaN/Inf."""
    fmt = element_format(fmt)
    codes = np.asarray(codes)
    _check_codes(codes, fmt)
    return decode_table(fmt)[codes.astype(np.intp)]


def _check_codes(codes, fmt):
    if not np.issubdtype(codes.dtype, np.integer):
        raise TypeError(f"codes must be integers, got dtype {codes.dtype}")
    if codes.size and (codes.min() < 0 or codes.max() >= 1 << fmt.bits):
        raise ValueError(f"{fmt.name} codes must be in 0..{(1 << fmt.bits) - 1}")


def as_float_bits(x):
    """Return (raw unsigned bits, FloatFormat) of a float array, validating its dtype."""
    from .formats import INPUT_FORMATS

    x = np.asarray(x)
    for ff in INPUT_FORMATS.values():
        if x.dtype == ff.dtype:
            return np.ascontiguousarray(x).view(ff.uint), ff
    raise TypeError(
        f"expected a float32, float16, bfloat16 or float64 array, got dtype {x.dtype}")


def rounding_mode(rounding) -> int:
    try:
        r = Rounding(rounding)
    except ValueError:
        raise ValueError(f"unknown rounding {rounding!r}; expected one of "
                         f"{', '.join(m.value for m in Rounding)}") from None
    return r.id


def check_random(rounding_id, random, shape, random_bits):
    """Validate the stochastic-rounding inputs; returns an int64 array of ``shape``.

    ``random`` holds the random values (one per element), ``random_bits`` is their width R:
    the same meaning as the RTL's ``random`` payload field and ``random_bits`` parameter.
    """
    if np.ndim(random_bits) != 0:  # the values passed where the count belongs (pre-0.2 API)
        raise TypeError("random_bits is R, the number of random bits per element (an int); "
                        "pass the random values as random=")
    if rounding_id != K.STOCHASTIC:
        if random is not None:
            raise ValueError("random is only used with rounding='stochastic'")
        return np.zeros((1,) * len(shape), np.int64)
    if not isinstance(random_bits, (int, np.integer)) or not 1 <= random_bits <= 24:
        raise ValueError(f"random_bits must be an integer in 1..24, got {random_bits!r}")
    if random is None:
        raise ValueError("rounding='stochastic' needs random: an integer array of "
                         f"the input's shape with values in [0, 2^{random_bits})")
    r = np.asarray(random)
    if not np.issubdtype(r.dtype, np.integer):
        raise TypeError(f"random must be integers, got dtype {r.dtype}")
    if r.shape != tuple(shape):
        raise ValueError(f"random has shape {r.shape}, expected {tuple(shape)}")
    if r.size and (r.min() < 0 or r.max() >= 1 << random_bits):
        raise ValueError(f"random must be in [0, 2^{random_bits})")
    return r.astype(np.int64)


def encode(values, fmt, *, rounding="rne", random=None, random_bits=8) -> np.ndarray:
    """Cast finite float values to element codes at scale 2^0: round, then saturate.

    This is the per-element step of quantization with the shared exponent fixed at 0.
    Accepts float32/float16/bfloat16/float64 arrays (float64 exactly).  Non-finite values
    raise ``ValueError``.
    """
    fmt = element_format(fmt)
    x = np.asarray(values)
    if x.dtype.kind in "iub" or x.dtype == object or x.dtype.kind == "c":
        raise TypeError(f"encode takes float arrays, got dtype {x.dtype}")
    raw, ff = as_float_bits(x)
    if not np.all(np.isfinite(x.astype(np.float64))):
        raise ValueError("encode takes finite values only (NaN/Inf have no element code "
                         "in general; quantize() handles non-finite blocks)")
    rid = rounding_mode(rounding)
    r = check_random(rid, random, x.shape, random_bits)
    out = np.empty(x.size, np.uint8)
    K.encode_elements(raw.reshape(-1), ff.ebits, ff.mbits, fmt.mbits, fmt.bias,
                      fmt.max_code, fmt.bits, fmt.twos_complement, rid, random_bits,
                      np.broadcast_to(r, x.shape).reshape(-1), out)
    return out.reshape(x.shape)


def decode_scale(scales) -> np.ndarray:
    """E8M0 codes to float64 ``2^(s-127)``; 255 to NaN."""
    s = np.asarray(scales)
    if not np.issubdtype(s.dtype, np.integer):
        raise TypeError(f"scale codes must be integers, got dtype {s.dtype}")
    if s.size and (s.min() < 0 or s.max() > 255):
        raise ValueError("E8M0 scale codes must be in 0..255")
    s = s.astype(np.int64)
    return np.where(s == SCALE_NAN, np.nan, np.ldexp(1.0, s - SCALE_BIAS))


def encode_scale(values) -> np.ndarray:
    """Exact powers of two ``2^-127 .. 2^127`` (and NaN) to E8M0 codes.

    Anything else is not representable and raises ``ValueError`` (E8M0 has no rounding rule).
    """
    v = np.asarray(values, dtype=np.float64)
    nan = np.isnan(v)
    m, e = np.frexp(np.where(nan, 1.0, v))
    ok = nan | ((m == 0.5) & (e - 1 >= -127) & (e - 1 <= 127))
    if not np.all(ok):
        bad = v[~ok].ravel()[0]
        raise ValueError(f"{bad!r} is not an E8M0 value (a power of two 2^-127 .. 2^127, or NaN)")
    return np.where(nan, SCALE_NAN, e - 1 + SCALE_BIAS).astype(np.uint8)
