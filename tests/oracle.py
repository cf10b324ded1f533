"""An exact reference for the MX numerics contract, written from scratch on Fractions.

This module is the *independent* oracle the golden-model tests compare against.  It restates
the numerics contract (``docs/numerics.md``, sections 1-6) as literally as possible,
in plain Python:

* every value is a :class:`fractions.Fraction` (or one of the markers ``NAN``/``INF``); no
  floating-point operation touches a value on its way to a result;
* element formats are described here again from the contract's definitions (E, M, bias and
  the special-value convention, or a two's-complement width; not imported from ``golden``):
  every value, emax and max normal comes from decoding codes by those definitions, and an
  element is encoded by *searching the format's value table*;
* the final fp32 rounding of the dot product is this module's own RNE on Fractions.

It is deliberately slow and simple: per element a handful of exact operations, so a reviewer
can check it line by line against the contract.
"""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = [
    "FORMATS", "EXTRA", "Fmt", "spec", "int_spec", "fmt_of", "significand",
    "NAN", "INF", "decode_float_bits", "decode_input", "value_table",
    "decode_code", "encode_magnitude", "round_to_grid", "shared_exponent", "quantize_block",
    "quantize", "rne_fp32_bits", "fp32_bits_value", "dot_block", "dot_chain", "matmul",
]

TWO = Fraction(2)
NAN = "nan"  # marker for a NaN value
INF = "inf"  # marker for an infinite magnitude (the sign is carried separately)


def pow2(n: int) -> Fraction:
    return TWO ** n


# ---------------------------------------------------------------------------------------------
# Section 1: formats, restated from the contract's definitions.
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


# ---------------------------------------------------------------------------------------------
# Section 2: quantization.
# ---------------------------------------------------------------------------------------------
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


def shared_exponent(name, amax: Fraction, scale_mode: str) -> int:
    """Unclamped shared exponent of a block with largest magnitude ``amax`` > 0."""
    fmt = fmt_of(name)
    if scale_mode == "floor":
        return floor_log2(amax) - fmt.emax
    if scale_mode == "rceil":
        return ceil_log2(amax / max_normal(name))
    raise ValueError(scale_mode)


def round_to_grid(name, q: Fraction, rounding: str, r: int = 0, random_bits: int = 8):
    """Round a magnitude ``q >= 0`` onto the format's grid, then saturate.

    The grid is the table of finite magnitudes, extended by one point above max normal (one
    top-binade step further): values between max normal and that point round like any other
    pair of neighbours, and a result above max normal saturates.  Returns the magnitude.
    """
    mags = value_table(name)[0]
    top = mags[-1]
    if q >= top:  # at or beyond max normal: every mode gives max normal after saturation
        ext = top + (top - mags[-2])
        if q >= ext:
            return top
        lo, hi = top, ext
    else:
        i = bisect.bisect_right(mags, q) - 1  # mags[i] <= q < mags[i + 1]
        lo, hi = mags[i], mags[i + 1]
    if q == lo:
        return lo
    mid = (lo + hi) / 2
    if rounding == "rne":
        # Ties to the neighbour with the even significand: up exactly when the lower one's is
        # odd (with M >= 1 that is its code's parity; with M = 0 every normal is odd).
        up = q > mid or (q == mid and significand(name, lo) % 2 == 1)
    elif rounding == "rna":
        up = q >= mid
    elif rounding == "rtz":
        up = False
    elif rounding == "stochastic":
        f = (q - lo) / (hi - lo)  # in (0, 1): the part below the last place
        f_r = (f * (1 << random_bits)).numerator // (f * (1 << random_bits)).denominator
        up = f_r + r >= (1 << random_bits)
    else:
        raise ValueError(rounding)
    res = hi if up else lo
    return min(res, top)


def quantize_block(name, values, scale_mode="floor", rounding="rne", rand=None, random_bits=8):
    """One block: ``values`` is a list of (neg, magnitude) pairs.  Returns (s, [codes])."""
    fmt = fmt_of(name)
    k = len(values)
    if any(not isinstance(m, Fraction) for _, m in values):  # step 1: NaN or Inf present
        return 255, [0] * k
    amax = max(m for _, m in values)  # step 2
    if amax == 0:
        return 0, [encode_magnitude(fmt, neg, Fraction(0)) for neg, _ in values]
    e = shared_exponent(name, amax, scale_mode)  # step 3
    e = min(max(e, -127), 127)
    out = []
    for i, (neg, mag) in enumerate(values):  # step 4
        q = mag * pow2(-e)
        res = round_to_grid(name, q, rounding, 0 if rand is None else int(rand[i]), random_bits)
        out.append(encode_magnitude(fmt, neg, res))
    return e + 127, out


def quantize(x, name, *, block_size=32, axis=-1, scale_mode="floor", rounding="rne",
             random=None, random_bits=8):
    """The whole-array quantizer: (scales, codes) laid out like golden's MXArray."""
    x = np.asarray(x)
    xm = np.moveaxis(x, axis, -1)
    rm = None if random is None else np.moveaxis(np.asarray(random), axis, -1)
    n = xm.shape[-1]
    nb = -(-n // block_size)
    lead = xm.shape[:-1]
    scales = np.zeros(lead + (nb,), np.uint8)
    codes = np.zeros(lead + (nb * block_size,), np.uint8)
    for idx in np.ndindex(*lead):
        vals = decode_input(xm[idx])
        vals += [(False, Fraction(0))] * (nb * block_size - n)  # pad with +0
        rr = None
        if rm is not None:
            rr = list(rm[idx].tolist()) + [0] * (nb * block_size - n)
        for b in range(nb):
            sl = slice(b * block_size, (b + 1) * block_size)
            s, c = quantize_block(name, vals[sl], scale_mode, rounding,
                                  None if rr is None else rr[sl], random_bits)
            scales[idx + (b,)] = s
            codes[idx + (sl,)] = c
    return np.moveaxis(scales, -1, axis), np.moveaxis(codes, -1, axis)


# ---------------------------------------------------------------------------------------------
# Section 4: dot product, with this module's own RNE to binary32.
# ---------------------------------------------------------------------------------------------
FP32_QNAN = 0x7FC00000


def rne_fp32_bits(x: Fraction) -> int:
    """IEEE binary32 RNE of an exact value: subnormals kept, overflow to Inf.

    A non-zero value that rounds to zero keeps its sign (IEEE); an exact zero is +0.
    """
    if x == 0:
        return 0
    neg = x < 0
    a = -x if neg else x
    p = floor_log2(a)
    quantum = pow2(max(p, -126) - 23)  # the last place at a (subnormal range: 2^-149)
    n_exact = a / quantum
    n = n_exact.numerator // n_exact.denominator
    rem = n_exact - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    val = n * quantum
    if val >= pow2(128):
        mag = 0x7F800000
    elif val < pow2(-126):  # subnormal (or zero): mantissa counts 2^-149 units
        mag = int(val / pow2(-149))
    else:
        e = floor_log2(val)
        mag = ((e + 127) << 23) | (int(val / pow2(e - 23)) - (1 << 23))
    return mag | (int(neg) << 31)


def fp32_bits_value(bits: int):
    """Signed value of fp32 bits: a Fraction, NAN, '+inf' or '-inf'."""
    neg, mag = decode_float_bits(bits, 8, 23)
    if mag is NAN:
        return NAN
    if mag is INF:
        return "-inf" if neg else "+inf"
    return -mag if neg else mag


def dot_block(fa, a_codes, sa, fb, b_codes, sb, c_bits=0) -> int:
    """One block pair of docs/numerics.md section 5: fp32 bits of the result."""
    fa, fb = fmt_of(fa), fmt_of(fb)
    c = fp32_bits_value(c_bits)
    a = [code_value(fa, x) for x in a_codes]
    b = [code_value(fb, x) for x in b_codes]
    # Step 1: NaN.
    nan = sa == 255 or sb == 255 or c is NAN or any(v is NAN for v in a + b)
    infs = set()
    if isinstance(c, str) and c != NAN:
        infs.add(c)
    for x, y in zip(a, b, strict=True):
        if x is NAN or y is NAN:
            continue
        xi, yi = isinstance(x, str), isinstance(y, str)
        if xi or yi:
            other = y if xi else x
            if not (xi and yi) and other == 0:
                nan = True  # Inf * 0
                continue
            sx = x.startswith("-") if xi else x < 0
            sy = y.startswith("-") if yi else y < 0
            infs.add("-inf" if sx != sy else "+inf")
    if nan or len(infs) == 2:
        return FP32_QNAN
    # Step 2: Inf.
    if infs:
        return 0xFF800000 if infs == {"-inf"} else 0x7F800000
    # Step 3: exact T, one rounding.
    products = sum((x * y for x, y in zip(a, b, strict=True)), Fraction(0))
    t = products * pow2(sa - 127) * pow2(sb - 127)
    return rne_fp32_bits(c + t)


def dot_chain(fa, a_blocks, a_scales, fb, b_blocks, b_scales, c_bits=0) -> int:
    """A dot product over n blocks: the accumulator chained block by block."""
    acc = int(c_bits)
    blocks = zip(a_blocks, a_scales, b_blocks, b_scales, strict=True)
    for ac, sa, bc, sb in blocks:
        acc = dot_block(fa, ac, int(sa), fb, bc, int(sb), acc)
    return acc


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


def _gpu_specials(pairs, c, nan_scale: bool):
    """GPU_NAN, an Inf's bits, or None (all finite) for the products' factor pairs and c."""
    nan = nan_scale or c is NAN
    infs = {c} if isinstance(c, str) and c != NAN else set()
    for x, y in pairs:
        if x is NAN or y is NAN:
            nan = True
            continue
        xi, yi = isinstance(x, str), isinstance(y, str)
        if xi or yi:
            if (not xi and x == 0) or (not yi and y == 0):
                nan = True  # Inf * 0
                continue
            sx = x.startswith("-") if xi else x < 0
            sy = y.startswith("-") if yi else y < 0
            infs.add("-inf" if sx != sy else "+inf")
    if nan or len(infs) == 2:
        return GPU_NAN
    if infs:
        return 0xFF800000 if infs == {"-inf"} else 0x7F800000
    return None


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
    special = _gpu_specials(zip(a, b, strict=True), c, sa == 255 or sb == 255)
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


def rne_float_bits(x: Fraction, ebits: int, mbits: int) -> int:
    """IEEE RNE of an exact value into a binary format with ``ebits``/``mbits`` (subnormals kept,
    overflow to Inf, a non-zero value that rounds to zero keeps its sign; exact zero +0)."""
    if x == 0:
        return 0
    neg, a = x < 0, abs(x)
    bias = (1 << (ebits - 1)) - 1
    emin = 1 - bias
    quantum = pow2(max(floor_log2(a), emin) - mbits)
    n_exact = a / quantum
    n = n_exact.numerator // n_exact.denominator
    rem = n_exact - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    val = n * quantum
    if val >= pow2(bias + 1):
        mag = ((1 << ebits) - 1) << mbits
    elif val < pow2(emin):
        mag = int(val / pow2(emin - mbits))
    else:
        e = floor_log2(val)
        mag = ((e + bias) << mbits) | (int(val / pow2(e - mbits)) - (1 << mbits))
    return mag | (int(neg) << (ebits + mbits))


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
# The matrix product: every output a dot_chain over K (docs/numerics.md, "Matrix product").
# ---------------------------------------------------------------------------------------------
def matmul(fa, a_codes, a_scales, fb, b_codes, b_scales, block_size, c_bits=None):
    """fp32 bits (uint32) of ``A @ B``, output by output.

    ``a_codes`` (..., M, K') and ``a_scales`` (..., M, K'/k) hold A with its blocks along the
    last axis, ``b_codes`` (..., K', N) and ``b_scales`` (..., K'/k, N) hold B with its blocks
    down the columns (K' = n_blocks * block_size); batch axes broadcast.  Output [..., m, n] is
    :func:`dot_chain` of row m of A and column n of B from ``c_bits`` (fp32 bits, +0 if None).
    """
    a_codes, b_codes = np.asarray(a_codes), np.asarray(b_codes)
    a_scales, b_scales = np.asarray(a_scales), np.asarray(b_scales)
    k = block_size
    batch = np.broadcast_shapes(a_codes.shape[:-2], b_codes.shape[:-2])
    m_rows, n_cols = a_codes.shape[-2], b_codes.shape[-1]
    shape = batch + (m_rows, n_cols)
    c = np.zeros(shape, np.uint32) if c_bits is None else np.broadcast_to(c_bits, shape)
    a_codes = np.broadcast_to(a_codes, batch + a_codes.shape[-2:])
    a_scales = np.broadcast_to(a_scales, batch + a_scales.shape[-2:])
    b_codes = np.broadcast_to(b_codes, batch + b_codes.shape[-2:])
    b_scales = np.broadcast_to(b_scales, batch + b_scales.shape[-2:])
    out = np.zeros(shape, np.uint32)
    for idx in np.ndindex(*shape):
        bi, m, n = idx[:-2], idx[-2], idx[-1]
        row, col = a_codes[bi + (m,)].tolist(), b_codes[bi + (slice(None), n)].tolist()
        nb = len(row) // k
        out[idx] = dot_chain(fa, [row[j * k:(j + 1) * k] for j in range(nb)],
                             a_scales[bi + (m,)].tolist(),
                             fb, [col[j * k:(j + 1) * k] for j in range(nb)],
                             b_scales[bi + (slice(None), n)].tolist(), int(c[idx]))
    return out


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
