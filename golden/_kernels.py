"""Compiled (numba) kernels of the golden model, written at the bit level like the hardware lanes.

Everything here is integer arithmetic on IEEE fields: no floating-point multiply, divide or log
touches a value on its way to a code, so the model is exact by construction and says so in
its own code.  The public wrappers in :mod:`golden.mx` (``quantize``, ``dequantize``) and
:mod:`golden.dot_product` validate arguments and shape arrays; these functions assume valid input.

Conventions: every integer is ``int64`` (numba would silently promote mixed uint64/int64 to
float64).  A float input is ``sig * 2^x`` with an integer significand ``sig`` (hidden bit
included for normals) and exponent ``x``.
"""

from __future__ import annotations

import functools

import numpy as np

from . import _fp32_window as W
from ._fp32_window import bitlen
from .formats import FP32, ROUNDING_IDS, SCALE_MODE_IDS
from .jitcache import njit

# Rounding and scale mode ids as module constants (numba folds globals into the kernels).
RNE, RNA, RTZ, STOCHASTIC = (ROUNDING_IDS[r] for r in ("rne", "rna", "rtz", "stochastic"))
FLOOR, RCEIL = SCALE_MODE_IDS["floor"], SCALE_MODE_IDS["rceil"]
# Element flags in the dot-product decode tables.
FINITE, NAN, INF = 0, 1, 2

_JIT = dict(cache=True, nogil=True)
_INLINE = dict(cache=True, nogil=True, inline="always")


@njit(**_INLINE)
def split_float(mag, ebits, mbits):
    """IEEE magnitude bits -> (sig, x) with value ``sig * 2^x`` (finite, sign already removed)."""
    bias = (1 << (ebits - 1)) - 1
    e = mag >> mbits
    m = mag & ((1 << mbits) - 1)
    if e == 0:
        return m, 1 - bias - mbits
    return m | (1 << mbits), e - bias - mbits


@njit(**_JIT)
def shared_exponent(amax, in_ebits, in_mbits, emax, max_sig, mbits, scale_mode):
    """The block's unclamped shared exponent ``e`` from the magnitude bits of amax (> 0)."""
    sig, x = split_float(amax, in_ebits, in_mbits)
    # A normal amax's leading bit is its hidden bit: no bit count in the common case (which
    # took a tenth of the quantizer's time).
    width = in_mbits + 1 if amax >> in_mbits else bitlen(sig)
    e = width - 1 + x - emax  # floor(log2(amax)) - emax
    if scale_mode == RCEIL:
        # ceil(log2(amax / max_normal)): one more than floor mode exactly when amax's
        # significand (as 1.f) exceeds max_normal's (as 1.g); compared as integers.
        if (sig << mbits) > (max_sig << (width - 1)):
            e += 1
    return e


@njit(**_INLINE)
def round_element(mag, e, in_ebits, in_mbits, mbits, bias, max_code, rounding, random_bits, r):
    """Quantize one finite input magnitude (IEEE bits, sign removed) at shared exponent ``e``.

    Returns the element's magnitude code ``E.M`` in the sign-magnitude view, saturated.
    """
    sig, x = split_float(mag, in_ebits, in_mbits)
    x -= e  # q = |V| * 2^-e = sig * 2^x, exactly
    if mag >> in_mbits:  # normal input: the hidden bit is the leading bit
        top = in_mbits + x
    elif sig == 0:
        return 0
    else:  # subnormal input
        top = bitlen(sig) - 1 + x
    # The element grid's last place at q: q's own binade, or the subnormal range below emin.
    emin = 1 - bias
    qe = (top if top > emin else emin) - mbits
    drop = qe - x  # bits of sig below the last place
    if drop <= 0:
        n = sig << (-drop)  # exact (only subnormal inputs get here); n < 2^(mbits+1)
    else:
        d = drop if drop < 62 else 62  # sig < 2^53: beyond 62 bits everything is far below half
        n = sig >> d
        if rounding == STOCHASTIC:
            rest = sig - (n << d)  # f = rest / 2^drop; f_R = floor(f * 2^R)
            s = drop - random_bits
            f_r = (rest >> (s if s < 63 else 63)) if s >= 0 else rest << (-s)
            n += (f_r + r) >> random_bits  # 1 iff f_R + r >= 2^R (both below 2^R)
        elif rounding == RNE:  # + half - 1, plus 1 more when the kept lsb is odd (ties to even)
            n = (sig + (np.int64(1) << (d - 1)) - 1 + (n & 1)) >> d
        elif rounding == RNA:  # + half: ties away from zero
            n = (sig + (np.int64(1) << (d - 1))) >> d
    # Magnitude code: the binade index above the subnormal range, then the significand.  A
    # carry out of the significand (n = 2^(mbits+1)) lands on the next binade's code by itself.
    code = ((qe - emin + mbits) << mbits) + n
    return code if code < max_code else max_code


@njit(**_INLINE)
def round_normal_element(mag, e, in_ebits, in_mbits, mbits, bias, max_code, rounding):
    """:func:`round_element` for a normal input or a zero, under RNE, RNA or RTZ.

    The same arithmetic, with the input's exponent field read directly: a normal input's top
    bit is its hidden bit, so ``top = E - in_bias - e`` needs no bit count, and nothing here
    branches (the block loop compiles to vector code).  With ``u = emin - top`` (places of
    ``q``'s binade below the element's lowest one):

    * ``drop = in_mbits - mbits + max(u, 0)``: the input's fraction bits beyond the element's,
      and the further places a subnormal element result loses;
    * ``code = (max(-u, 0) << mbits) + n``: the binade index above the subnormal range, then the
      rounded significand ``n`` (whose carry lands on the next binade by itself).
    """
    in_bias = (1 << (in_ebits - 1)) - 1
    u = (1 - bias) - ((mag >> in_mbits) - in_bias - e)
    drop = in_mbits - mbits + (u if u > 0 else 0)
    d = drop if drop < 62 else 62  # sig < 2^53: beyond 62 bits everything is far below half
    sig = (mag & ((np.int64(1) << in_mbits) - 1)) | (np.int64(1) << in_mbits)
    n = sig >> d
    if rounding == RNE:  # + half - 1, plus 1 more when the kept lsb is odd (ties to even)
        n = (sig + (np.int64(1) << (d - 1)) - 1 + (n & 1)) >> d
    elif rounding == RNA:  # + half: ties away from zero
        n = (sig + (np.int64(1) << (d - 1))) >> d
    code = ((-u if u < 0 else 0) << mbits) + n
    code = code if code < max_code else max_code
    return code if mag != 0 else 0


@njit(**_INLINE)
def apply_sign(neg, code, bits, twos_complement):
    if twos_complement:
        return ((-code) & ((1 << bits) - 1)) if neg else code
    return code | (neg << (bits - 1))


@njit(**_INLINE)
def quantize_blocks(raw, in_ebits, in_mbits, ebits, mbits, bias, emax, max_code, bits,
                    twos_complement, scale_mode, rounding, random_bits, rand, scales, codes):
    """Quantize blocks ``raw[b, :]`` (IEEE bit patterns, any unsigned dtype) in place.

    ``rand`` is ``(nb, k)`` (stochastic) or ignored.  Writes ``scales[b]`` and ``codes[b, :]``.
    Called through :func:`block_quantizer`, which binds the formats' parameters.  A block
    with no subnormal input is encoded by :func:`round_normal_element` (no bit count, no
    branch: vector code), any other block or stochastic rounding by :func:`round_element`;
    tests/test_golden_quantize.py checks each path against the exact oracle.
    """
    nb, k = raw.shape
    sign_shift = in_ebits + in_mbits
    mag_mask = (np.int64(1) << sign_shift) - 1
    inf_mag = ((np.int64(1) << in_ebits) - 1) << in_mbits
    max_sig = (np.int64(1) << mbits) | (max_code & ((1 << mbits) - 1))
    min_normal = np.int64(1) << in_mbits
    for b in range(nb):
        amax = np.int64(0)
        subnormal = False
        for i in range(k):
            m = np.int64(raw[b, i]) & mag_mask  # IEEE magnitudes order like the values
            if m > amax:
                amax = m
            subnormal |= (m != 0) & (m < min_normal)
        if amax >= inf_mag:  # a NaN or an Inf in the block
            scales[b] = 255
            for i in range(k):
                codes[b, i] = 0
            continue
        if amax == 0:
            e = 0
            scales[b] = 0
        else:
            e = shared_exponent(amax, in_ebits, in_mbits, emax, max_sig, mbits, scale_mode)
            e = min(max(e, -127), 127)
            scales[b] = e + 127
        # One loop per rounding mode, so the mode is a constant inside each (speed only);
        # blocks of normal inputs and zeros take the branch-free element path.
        if not subnormal and rounding != STOCHASTIC:
            if rounding == RNE:
                _encode_normal_block(raw[b], e, in_ebits, in_mbits, mbits, bias, max_code, bits,
                                     twos_complement, RNE, codes[b])
            elif rounding == RNA:
                _encode_normal_block(raw[b], e, in_ebits, in_mbits, mbits, bias, max_code, bits,
                                     twos_complement, RNA, codes[b])
            else:
                _encode_normal_block(raw[b], e, in_ebits, in_mbits, mbits, bias, max_code, bits,
                                     twos_complement, RTZ, codes[b])
        elif rounding == RNE:
            _encode_block(raw[b], e, in_ebits, in_mbits, mbits, bias, max_code, bits,
                          twos_complement, RNE, random_bits, rand[0], codes[b])
        elif rounding == RNA:
            _encode_block(raw[b], e, in_ebits, in_mbits, mbits, bias, max_code, bits,
                          twos_complement, RNA, random_bits, rand[0], codes[b])
        elif rounding == RTZ:
            _encode_block(raw[b], e, in_ebits, in_mbits, mbits, bias, max_code, bits,
                          twos_complement, RTZ, random_bits, rand[0], codes[b])
        else:
            _encode_block(raw[b], e, in_ebits, in_mbits, mbits, bias, max_code, bits,
                          twos_complement, STOCHASTIC, random_bits, rand[b], codes[b])


@njit(**_JIT)
def _quantize_blocks_any_format(raw, in_ebits, in_mbits, ebits, mbits, bias, emax, max_code,
                                bits, twos_complement, scale_mode, rounding, random_bits, rand,
                                scales, codes):
    """:func:`quantize_blocks` with every format parameter a run-time argument."""
    quantize_blocks(raw, in_ebits, in_mbits, ebits, mbits, bias, emax, max_code, bits,
                    twos_complement, scale_mode, rounding, random_bits, rand, scales, codes)


@functools.cache
def block_quantizer(in_ebits, in_mbits, ebits, mbits, bias, emax, max_code, bits,
                    twos_complement, constants=True):
    """:func:`quantize_blocks` for one input format and one element format: returns
    ``kernel(raw, scale_mode, rounding, random_bits, rand, scales, codes)``.

    With ``constants`` and fp32 input the formats' parameters are bound as compile-time
    constants (closure variables, which numba folds into the shifts and masks of the
    per-element code): about twice the throughput of passing them as arguments
    (docs/performance.md), for a compilation of its own, about 13 s the first time (cached on
    disk afterwards).  The caller asks for it for the six OCP formats only.  Everything else
    shares one kernel with run-time parameters, compiled once: a family member's first
    quantize would otherwise cost that compilation each, and other inputs times six element
    formats would cost a fresh checkout's test run it 24 times.
    """
    if not constants or (in_ebits, in_mbits) != (FP32.ebits, FP32.mbits):
        def kernel(raw, scale_mode, rounding, random_bits, rand, scales, codes):
            _quantize_blocks_any_format(raw, in_ebits, in_mbits, ebits, mbits, bias, emax,
                                        max_code, bits, twos_complement, scale_mode, rounding,
                                        random_bits, rand, scales, codes)
        return kernel

    @njit(**_JIT)
    def fp32_kernel(raw, scale_mode, rounding, random_bits, rand, scales, codes):
        quantize_blocks(raw, in_ebits, in_mbits, ebits, mbits, bias, emax, max_code, bits,
                        twos_complement, scale_mode, rounding, random_bits, rand, scales, codes)

    return fp32_kernel


@njit(**_INLINE)
def _encode_block(raw, e, in_ebits, in_mbits, mbits, bias, max_code, bits, twos_complement,
                  rounding, random_bits, rand, codes):
    """codes[i] = signed code of raw[i] at shared exponent e (finite inputs)."""
    sign_shift = in_ebits + in_mbits
    mag_mask = (np.int64(1) << sign_shift) - 1
    for i in range(raw.shape[0]):
        w = np.int64(raw[i])
        neg = (w >> sign_shift) & 1
        r = np.int64(rand[i]) if rounding == STOCHASTIC else np.int64(0)
        code = round_element(w & mag_mask, e, in_ebits, in_mbits, mbits, bias, max_code,
                             rounding, random_bits, r)
        codes[i] = apply_sign(neg, code, bits, twos_complement)


@njit(**_INLINE)
def _encode_normal_block(raw, e, in_ebits, in_mbits, mbits, bias, max_code, bits,
                         twos_complement, rounding, codes):
    """:func:`_encode_block` for a block of normal inputs and zeros (RNE, RNA or RTZ)."""
    sign_shift = in_ebits + in_mbits
    mag_mask = (np.int64(1) << sign_shift) - 1
    for i in range(raw.shape[0]):
        w = np.int64(raw[i])
        code = round_normal_element(w & mag_mask, e, in_ebits, in_mbits, mbits, bias, max_code,
                                    rounding)
        codes[i] = apply_sign((w >> sign_shift) & 1, code, bits, twos_complement)


@njit(**_JIT)
def encode_elements(raw, in_ebits, in_mbits, mbits, bias, max_code, bits, twos_complement,
                    rounding, random_bits, rand, codes):
    """Element cast at scale 2^0 (no shared exponent): ``codes[i] = Q(raw[i])``; finite input."""
    _encode_block(raw, 0, in_ebits, in_mbits, mbits, bias, max_code, bits, twos_complement,
                  rounding, random_bits, rand, codes)


# --------------------------------------------------------------------------------------------
# Dot product.  Block sums are exact two-limb fixed point, ``hi * 2^split + lo``, with the limb
# split derived from the formats (:func:`dot_limb_split`); the final c + T is exact in a
# 124-bit window (two 62-bit limbs, :mod:`golden._fp32_window`) before the single rounding to
# fp32.  A pair whose block sum does not fit that window takes golden.dot_wide's exact path.
# --------------------------------------------------------------------------------------------
#: Widest exact operand of :func:`golden._fp32_window.add_round_fp32`, in bits.
T_BITS_MAX = 100


def dot_limb_split(product_bits: int, shift_max: int, block_size: int) -> int | None:
    """The limb split of :func:`_block_dot` for one pair of formats, or None if none fits.

    Parameters
    ----------
    product_bits : int
        Bits of the largest product magnitude of two significands (``|sig_a * sig_b| <
        2^product_bits``).
    shift_max : int
        Largest ``shift_a + shift_b`` (a product sits at ``2^shift`` in lsb units).
    block_size : int
        Elements per block (k terms in one sum).

    The constraints, all in int64 with a bit of headroom: ``p << shift`` below the split, and
    k of them, fit (``product_bits + split <= 62``, ``split + kb <= 62``); the high limb's k
    terms fit (``product_bits + shift_max - split + kb <= 61``); the whole sum is at most
    :data:`T_BITS_MAX` bits for ``add_round_fp32``.  ``kb`` is the bit length of k.
    """
    kb = int(block_size).bit_length()
    if product_bits + shift_max + kb > T_BITS_MAX:
        return None
    hi = min(62 - product_bits, 62 - kb)
    lo = max(product_bits + shift_max + kb - 61, 0)
    return hi if lo <= hi else None


@njit(**_JIT)
def _block_dot(ca, cb, sig_a, sh_a, flag_a, sig_b, sh_b, flag_b, split):
    """Exact sum of a[i]*b[i] in units of 2^(lsb_a + lsb_b), with the special-value summary.

    Returns (hi, lo, nan, pos_inf, neg_inf): sum = hi * 2^split + lo, 0 <= lo < 2^split.
    """
    smask = (np.int64(1) << split) - 1
    hi = np.int64(0)
    lo = np.int64(0)
    nan = False
    pinf = False
    ninf = False
    for i in range(ca.shape[0]):
        xa = ca[i]
        xb = cb[i]
        fa = flag_a[xa]
        fb = flag_b[xb]
        if fa != FINITE or fb != FINITE:
            if fa == NAN or fb == NAN or sig_a[xa] == 0 or sig_b[xb] == 0:
                nan = True  # NaN operand, or Inf * 0
            elif (sig_a[xa] < 0) != (sig_b[xb] < 0):
                ninf = True
            else:
                pinf = True
            continue
        p = sig_a[xa] * sig_b[xb]
        s = sh_a[xa] + sh_b[xb]
        if s >= split:
            hi += p << (s - split)
        else:
            full = p << s
            hi += full >> split
            lo += full & smask
    hi += lo >> split
    lo &= smask
    return hi, lo, nan, pinf, ninf


@njit(**_JIT)
def dot_step(ca, sa, cb, sb, acc, sig_a, sh_a, flag_a, lsb_a, sig_b, sh_b, flag_b, lsb_b,
             split):
    """One fused block step of the contract (section 4): fp32 bits of RNE(acc + T).

    ``split`` is the limb split :func:`dot_limb_split` derived for the pair."""
    hi, lo, nan, pinf, ninf = _block_dot(ca, cb, sig_a, sh_a, flag_a, sig_b, sh_b, flag_b,
                                         split)
    c_neg = (acc >> 31) & 1
    c_exp = (acc >> 23) & 0xFF
    c_man = acc & 0x7FFFFF
    if c_exp == 0xFF:
        if c_man != 0:
            nan = True
        elif c_neg:
            ninf = True
        else:
            pinf = True
    if sa == 255 or sb == 255 or nan or (pinf and ninf):
        return np.int64(W.FP32_QNAN)
    if pinf:
        return np.int64(W.FP32_INF)
    if ninf:
        return np.int64(W.FP32_INF | (1 << 31))
    # T = (hi * 2^split + lo) * 2^tx as sign and two-limb magnitude
    tx = (sa - 127) + (sb - 127) + lsb_a + lsb_b
    t_neg = 0
    if hi < 0:
        t_neg = 1
        hi = -hi
        lo = -lo
        if lo < 0:
            lo += np.int64(1) << split
            hi -= 1
    th = hi >> (W.L - split)
    tl = ((hi & ((np.int64(1) << (W.L - split)) - 1)) << split) | lo
    if c_exp == 0:
        c_sig, cx = c_man, np.int64(-149)
    else:
        c_sig, cx = c_man | (1 << 23), c_exp - 150
    return W.add_round_fp32(t_neg, th, tl, tx, c_neg, np.int64(0), c_sig, cx)


@njit(**_JIT)
def dot_rows(a_codes, a_scales, b_codes, b_scales, acc, sig_a, sh_a, flag_a, lsb_a,
             sig_b, sh_b, flag_b, lsb_b, split, out):
    """``out[r] = acc chained over blocks j of row r`` (fp32 bits as int64 in/out)."""
    n_rows, n_blocks, _ = a_codes.shape
    for r in range(n_rows):
        c = np.int64(acc[r])
        for j in range(n_blocks):
            c = dot_step(a_codes[r, j], np.int64(a_scales[r, j]), b_codes[r, j],
                         np.int64(b_scales[r, j]), c, sig_a, sh_a, flag_a, lsb_a,
                         sig_b, sh_b, flag_b, lsb_b, split)
        out[r] = c
