"""The oracle's MX numerics: quantization of a block, the block dot product with this
package's own RNE to binary32, its chaining over K, and the matrix product."""

from __future__ import annotations

import bisect
from fractions import Fraction

import numpy as np

from .formats import (
    INF,
    NAN,
    ceil_log2,
    code_value,
    decode_float_bits,
    decode_input,
    encode_magnitude,
    floor_log2,
    fmt_of,
    max_normal,
    pow2,
    significand,
    value_table,
)

__all__ = [
    "shared_exponent", "round_to_grid", "quantize_block", "quantize", "FP32_QNAN",
    "rne_float_bits", "rne_fp32_bits", "fp32_bits_value", "product_specials", "dot_block",
    "dot_chain", "matmul",
]


# ---------------------------------------------------------------------------------------------
# Quantization.
# ---------------------------------------------------------------------------------------------
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
# Dot product, with this module's own RNE to binary32.
# ---------------------------------------------------------------------------------------------
FP32_QNAN = 0x7FC00000


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


def rne_fp32_bits(x: Fraction) -> int:
    """IEEE binary32 RNE of an exact value (:func:`rne_float_bits` with 8 and 23 bits)."""
    return rne_float_bits(x, 8, 23)


def fp32_bits_value(bits: int):
    """Signed value of fp32 bits: a Fraction, NAN, '+inf' or '-inf'."""
    neg, mag = decode_float_bits(bits, 8, 23)
    if mag is NAN:
        return NAN
    if mag is INF:
        return "-inf" if neg else "+inf"
    return -mag if neg else mag


def product_specials(pairs, c, nan_scale: bool, nan_bits: int):
    """Steps 1 and 2 of docs/numerics.md section 5 for the products' factor pairs (values,
    NAN or '+inf'/'-inf') and c: ``nan_bits`` for a NaN (a NaN factor, scale or c, Inf * 0,
    or Infs of both signs), an Inf's fp32 bits, or None (every term finite)."""
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
        return nan_bits
    if infs:
        return 0xFF800000 if infs == {"-inf"} else 0x7F800000
    return None


def dot_block(fa, a_codes, sa, fb, b_codes, sb, c_bits=0) -> int:
    """One block pair of docs/numerics.md section 5: fp32 bits of the result."""
    fa, fb = fmt_of(fa), fmt_of(fb)
    c = fp32_bits_value(c_bits)
    a = [code_value(fa, x) for x in a_codes]
    b = [code_value(fb, x) for x in b_codes]
    # Steps 1 and 2: NaN, then Inf.
    special = product_specials(zip(a, b, strict=True), c, sa == 255 or sb == 255, FP32_QNAN)
    if special is not None:
        return special
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
