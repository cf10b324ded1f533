"""The oracle's formats: element formats restated from the contract's definitions
(E, M, bias and the special-value convention, or a two's-complement width), and IEEE input
patterns decoded exactly."""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = [
    "TWO", "NAN", "INF", "pow2", "floor_log2", "ceil_log2", "Fmt", "spec", "int_spec",
    "FORMATS", "EXTRA", "fmt_of", "decode_code", "code_value", "value_table", "max_normal",
    "units_max", "significand", "encode_magnitude", "decode_float_bits", "decode_input",
]

TWO = Fraction(2)
NAN = "nan"  # marker for a NaN value
INF = "inf"  # marker for an infinite magnitude (the sign is carried separately)


def pow2(n: int) -> Fraction:
    return TWO ** n


def floor_log2(x: Fraction) -> int:
    """The integer t with 2^t <= x < 2^(t+1), found by exact comparisons (x > 0)."""
    t = x.numerator.bit_length() - x.denominator.bit_length()  # within one of the answer
    while pow2(t) > x:
        t -= 1
    while pow2(t + 1) <= x:
        t += 1
    return t


def ceil_log2(x: Fraction) -> int:
    """The smallest integer t with x <= 2^t (x > 0)."""
    t = floor_log2(x)
    return t if pow2(t) == x else t + 1


# ---------------------------------------------------------------------------------------------
# Formats, restated from the contract's definitions.
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fmt:
    """An element format as the contract defines it: a sign bit and E exponent, M mantissa bits
    with a bias and one of three special-value conventions, or a two's-complement integer.

    ``convention``: ``"finite"`` (every code a number), ``"fn"`` (the all-ones magnitude is NaN),
    ``"ieee"`` (all-ones exponent: mantissa 0 is Inf, else NaN) or ``"int"`` (``int_bits``-bit
    two's complement n, value ``n * 2^-(int_bits - 2)``; ebits, mbits and bias unused, 0).
    """

    name: str
    ebits: int
    mbits: int
    convention: str
    bias: int = 0
    int_bits: int = 0

    @property
    def is_int(self) -> bool:
        return self.convention == "int"

    @property
    def bits(self) -> int:
        return self.int_bits if self.is_int else 1 + self.ebits + self.mbits

    @property
    def nan_mags(self) -> tuple:
        """Magnitude codes (sign bit clear) that are NaN."""
        ones = (1 << (self.bits - 1)) - 1
        if self.convention == "fn":
            return (ones,)
        if self.convention == "ieee":
            return tuple(range((((1 << self.ebits) - 1) << self.mbits) + 1, ones + 1))
        return ()

    @property
    def inf_mags(self) -> tuple:
        """Magnitude codes that are Inf."""
        return (((1 << self.ebits) - 1) << self.mbits,) if self.convention == "ieee" else ()

    @property
    def lsb_exp(self) -> int:
        """Exponent of the last place of the smallest binade (every value is a multiple)."""
        return -(self.int_bits - 2) if self.is_int else 1 - self.bias - self.mbits

    @property
    def emax(self) -> int:
        """The exponent of the largest finite value's binade (OCP's emax)."""
        return floor_log2(max_normal(self))


def spec(ebits: int, mbits: int, convention: str = "finite", bias: int | None = None,
         name: str | None = None) -> Fmt:
    """A float format from its definition; the bias is 2^(E-1) - 1 unless given."""
    bias = (1 << (ebits - 1)) - 1 if bias is None else bias
    return Fmt(name or f"e{ebits}m{mbits}{'' if convention == 'finite' else convention}",
               ebits, mbits, convention, bias)


def int_spec(n: int) -> Fmt:
    return Fmt(f"int{n}", 0, 0, "int", 0, n)


FORMATS = {
    f.name: f
    for f in (
        spec(4, 3, "fn", name="fp8_e4m3"),
        spec(5, 2, "ieee", name="fp8_e5m2"),
        spec(3, 2, name="fp6_e3m2"),
        spec(2, 3, name="fp6_e2m3"),
        spec(2, 1, name="fp4_e2m1"),
        int_spec(8),
    )
}

#: Further members by the names golden takes: ml_dtypes' IEEE-like fp8 types and the intN.
EXTRA = {"float8_e4m3": spec(4, 3, "ieee", name="float8_e4m3"),
         "float8_e3m4": spec(3, 4, "ieee", name="float8_e3m4"),
         **{f"int{n}": int_spec(n) for n in range(2, 8)}}


def fmt_of(f) -> Fmt:
    """A Fmt, from itself, a name of FORMATS/EXTRA, or a generic ``e<E>m<M>`` (finite)."""
    if isinstance(f, Fmt):
        return f
    if f in FORMATS:
        return FORMATS[f]
    if f in EXTRA:
        return EXTRA[f]
    e, m = f[1:].split("m")  # "e3m3" -> 3, 3
    return spec(int(e), int(m))


def decode_code(fmt, code: int):
    """(neg, magnitude) of an element code: magnitude a Fraction, or NAN / INF."""
    fmt = fmt_of(fmt)
    code = int(code)
    if fmt.is_int:  # two's complement n, value n * 2^-(N-2)
        n = code - (1 << fmt.bits) if code >> (fmt.bits - 1) else code
        return n < 0, Fraction(abs(n)) * pow2(fmt.lsb_exp)
    neg = bool(code >> (fmt.bits - 1))
    mag = code & ((1 << (fmt.bits - 1)) - 1)
    if mag in fmt.nan_mags:
        return neg, NAN
    if mag in fmt.inf_mags:
        return neg, INF
    e, m = mag >> fmt.mbits, mag & ((1 << fmt.mbits) - 1)
    if e == 0:  # subnormal: 0.m * 2^(1 - bias)
        return neg, Fraction(m, 1 << fmt.mbits) * pow2(1 - fmt.bias)
    return neg, (1 + Fraction(m, 1 << fmt.mbits)) * pow2(e - fmt.bias)


def code_value(fmt, code: int):
    """Signed value of a code: a Fraction, NAN, or ('+inf' / '-inf')."""
    neg, mag = decode_code(fmt, code)
    if mag is NAN:
        return NAN
    if mag is INF:
        return "-inf" if neg else "+inf"
    return -mag if neg else mag


@functools.cache
def _value_table(fmt: Fmt):
    pairs = {}
    for code in range(1 << fmt.bits):
        neg, mag = decode_code(fmt, code)
        if neg or not isinstance(mag, Fraction):
            continue
        pairs[mag] = code
    mags = sorted(pairs)
    return tuple(mags), tuple(pairs[m] for m in mags)


def value_table(fmt):
    """Sorted finite non-negative magnitudes of a format and, parallel, their codes (sign
    clear; for intN the non-negative two's-complement codes)."""
    return _value_table(fmt_of(fmt))


def max_normal(fmt) -> Fraction:
    return value_table(fmt)[0][-1]


def units_max(fmt) -> int:
    """Largest finite element magnitude in units of the format's lsb (intN: -2.0 = -2^(N-1) *
    2^-(N-2) is the largest magnitude)."""
    spec_ = fmt_of(fmt)
    mags = [decode_code(spec_, c)[1] for c in range(1 << spec_.bits)]
    units = max(v for v in mags if isinstance(v, Fraction)) / pow2(spec_.lsb_exp)
    assert units.denominator == 1
    return int(units)


def significand(fmt, mag: Fraction) -> int:
    """The integer significand of a representable magnitude: the value in units of its last
    place (the place of its binade's lsb, or of the subnormal range; intN: of 2^-(N-2)).
    "Ties to even" means: to the neighbour whose significand is even."""
    f = fmt_of(fmt)
    if mag == 0:
        return 0
    last = f.lsb_exp if f.is_int else max(floor_log2(mag), 1 - f.bias) - f.mbits
    n = mag / pow2(last)
    assert n.denominator == 1
    return int(n)


def encode_magnitude(fmt, neg: bool, mag: Fraction) -> int:
    """The code of a representable value, found by searching the value table."""
    fmt = fmt_of(fmt)
    mags, codes = value_table(fmt)
    i = bisect.bisect_left(mags, mag)
    assert i < len(mags) and mags[i] == mag, f"{mag} is not a {fmt.name} value"
    c = codes[i]
    if fmt.is_int:
        return (-c) & ((1 << fmt.bits) - 1) if neg else c
    return c | (int(neg) << (fmt.bits - 1))


# ---------------------------------------------------------------------------------------------
# Inputs: IEEE bit patterns decoded exactly.
# ---------------------------------------------------------------------------------------------
_INPUTS = {  # dtype name -> (ebits, mbits, unsigned view)
    "float32": (8, 23, np.uint32),
    "float16": (5, 10, np.uint16),
    "bfloat16": (8, 7, np.uint16),
    "float64": (11, 52, np.uint64),
}


def decode_float_bits(bits: int, ebits: int, mbits: int):
    """(neg, magnitude) of an IEEE pattern: magnitude a Fraction, NAN or INF."""
    bits = int(bits)
    neg = bool(bits >> (ebits + mbits))
    e = (bits >> mbits) & ((1 << ebits) - 1)
    m = bits & ((1 << mbits) - 1)
    bias = (1 << (ebits - 1)) - 1
    if e == (1 << ebits) - 1:
        return neg, (NAN if m else INF)
    if e == 0:
        return neg, Fraction(m) * pow2(1 - bias - mbits)
    return neg, Fraction((1 << mbits) | m) * pow2(e - bias - mbits)


def decode_input(x: np.ndarray):
    """List of (neg, magnitude) for every element of a 1-d float array (any input dtype)."""
    ebits, mbits, u = _INPUTS[np.dtype(x.dtype).name]
    return [decode_float_bits(b, ebits, mbits) for b in np.ascontiguousarray(x).view(u).tolist()]
