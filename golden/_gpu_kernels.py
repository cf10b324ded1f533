"""Compiled (numba) kernels of the GPU accumulation modes (docs/numerics.md, "GPU accumulation
modes"): the Blackwell block-scaled MMA step, truncating and rounding toward zero.

Integer arithmetic only, like :mod:`golden._kernels`: every term is a signed int64 in units of
``2^(e_max - F)`` after its truncation, so the sum is exact and the one rounding (RZ to fp32) is
done on an integer.  The public wrapper is :mod:`golden.gpu_accumulation`; these functions
assume valid input (codes within the tables, block sizes the kind takes).
"""

from __future__ import annotations

import numpy as np

from ._fp32_window import bitlen
from .jitcache import njit

_JIT = dict(cache=True, nogil=True)
_INLINE = dict(cache=True, nogil=True, inline="always")

#: Element flags of golden.codec.dot_tables.
FINITE, NAN, INF = 0, 1, 2
#: The NaN every step returns, and +Inf.
GPU_NAN, FP32_INF = 0x7FFFFFFF, 0x7F800000
#: tcgen05.mxf8f6f4: fraction bits kept below the largest exponent; exponent of a zero term.
F_F8F6F4, E_ZERO_F8F6F4 = 25, -133
#: tcgen05.mxf4 / mxf4nvf4: group size, fraction bits, exponent of a zero group or zero C.
GROUP_F4, F_F4, E_ZERO_F4 = 16, 35, -139


@njit(**_INLINE)
def trunc_shift(v, d):
    """``trunc(v * 2^d)`` (toward zero) for an int64 ``v``."""
    if d >= 0:
        return v << d
    if d <= -63:
        return np.int64(0)
    if v >= 0:
        return v >> -d
    return -((-v) >> -d)


@njit(**_INLINE)
def rz_fp32(total, q):
    """fp32 bits of RZ(total * 2^q) for an int64 ``total``: subnormals kept, every zero +0,
    a magnitude >= 2^128 +-Inf."""
    if total == 0:
        return np.int64(0)
    sign = np.int64(0)
    mag = total
    if total < 0:
        sign = np.int64(1) << 31
        mag = -total
    top = bitlen(mag) - 1 + q  # exponent of the leading bit
    if top >= 128:
        return sign | FP32_INF
    last = max(top - 23, -149)  # exponent of the result's last place
    keep = trunc_shift(mag, q - last)
    if keep == 0:
        return np.int64(0)
    return sign | (((last + 149) << 23) + keep)


@njit(**_INLINE)
def acc_fields(acc):
    """(nan, inf sign or 0, signed significand, exponent) of fp32 bits: value ``sig * 2^(x-23)``
    with ``x`` the alignment exponent (-126 for subnormals); ``sig = 0`` for a zero."""
    neg = (acc >> 31) & 1
    ex = (acc >> 23) & 0xFF
    man = acc & 0x7FFFFF
    if ex == 0xFF:
        return man != 0, (1 - 2 * neg) * (man == 0), np.int64(0), np.int64(0)
    if ex == 0:
        sig, x = man, np.int64(-126)
    else:
        sig, x = man | (1 << 23), ex - 127
    return False, np.int64(0), (1 - 2 * neg) * sig, x


@njit(**_JIT)
def f8f6f4_step(ca, sa, cb, sb, acc, sig_a, sh_a, flag_a, off_a, m_a, sig_b, sh_b, flag_b,
                off_b, m_b):
    """One tcgen05.mxf8f6f4 step (32 products, two E8M0 scales, fp32 ``acc`` bits).

    An element is ``sig * 2^(sh + lsb)``; its alignment exponent is ``sh + off`` with
    ``off = lsb + mbits`` (``max(E, 1) - bias``), its significand ``sig / 2^mbits``."""
    nan, c_inf, c_sig, c_x = acc_fields(acc)
    nan = nan or sa == 255 or sb == 255
    pinf = c_inf > 0
    ninf = c_inf < 0
    x_base = (sa - 127) + (sb - 127) + off_a + off_b
    e_max = np.int64(E_ZERO_F8F6F4) if c_sig == 0 else c_x
    for i in range(ca.shape[0]):
        xa = ca[i]
        xb = cb[i]
        if flag_a[xa] != FINITE or flag_b[xb] != FINITE:
            if flag_a[xa] == NAN or flag_b[xb] == NAN or sig_a[xa] == 0 or sig_b[xb] == 0:
                nan = True  # NaN operand, or Inf * 0
            elif (sig_a[xa] < 0) != (sig_b[xb] < 0):
                ninf = True
            else:
                pinf = True
        elif sig_a[xa] != 0 and sig_b[xb] != 0:
            e_max = max(e_max, sh_a[xa] + sh_b[xb] + x_base)
    if nan or (pinf and ninf):
        return np.int64(GPU_NAN)
    if pinf:
        return np.int64(FP32_INF)
    if ninf:
        return np.int64(FP32_INF | (1 << 31))
    total = trunc_shift(c_sig, c_x - e_max + F_F8F6F4 - 23)
    d_base = x_base - e_max + F_F8F6F4 - m_a - m_b
    for i in range(ca.shape[0]):
        p = sig_a[ca[i]] * sig_b[cb[i]]
        if p != 0:
            total += trunc_shift(p, sh_a[ca[i]] + sh_b[cb[i]] + d_base)
    return rz_fp32(total, e_max - F_F8F6F4)


@njit(**_JIT)
def f4_step(ca, sa, cb, sb, acc, sig_a, sh_a, lsb_a, sig_b, sh_b, lsb_b, ssig, sexp, snan, sm,
            gval, gexp):
    """One tcgen05.mxf4 / mxf4nvf4 step over the blocks ``ca[j, :]`` (``k`` a multiple of 16)
    with scale codes ``sa[j]``, ``sb[j]``; fp32 ``acc`` bits.

    A scale code is ``ssig * 2^(sexp - sm)`` (``snan`` marks its NaN codes); ``gval`` and
    ``gexp`` are scratch of at least ``blocks * k / 16`` entries."""
    nan, c_inf, c_sig, c_x = acc_fields(acc)
    for j in range(ca.shape[0]):
        nan = nan or snan[sa[j]] != 0 or snan[sb[j]] != 0
    if nan:
        return np.int64(GPU_NAN)
    if c_inf != 0:
        return np.int64(FP32_INF | ((c_inf < 0) << 31))
    e_max = np.int64(E_ZERO_F4) if c_sig == 0 else c_x
    n_groups = ca.shape[1] // GROUP_F4
    g = 0
    for j in range(ca.shape[0]):
        s_scale = ssig[sa[j]] * ssig[sb[j]]
        x = sexp[sa[j]] + sexp[sb[j]]
        for h in range(n_groups):
            s = np.int64(0)
            nonzero = False
            for i in range(h * GROUP_F4, (h + 1) * GROUP_F4):
                p = sig_a[ca[j, i]] * sig_b[cb[j, i]]
                if p != 0:
                    nonzero = True
                    s += p << (sh_a[ca[j, i]] + sh_b[cb[j, i]])
            gval[g] = s * s_scale
            gexp[g] = x
            if nonzero and s_scale != 0:
                e_max = max(e_max, x)  # an all-zero group, or a zero scale, sits at E_ZERO_F4
            g += 1
    total = trunc_shift(c_sig, c_x - e_max + F_F4 - 23)
    d_base = lsb_a + lsb_b - 2 * sm - e_max + F_F4
    for i in range(g):
        if gval[i] != 0:
            total += trunc_shift(gval[i], gexp[i] + d_base)
    return rz_fp32(total, e_max - F_F4)


@njit(**_JIT)
def f8f6f4_rows(a_codes, a_scales, b_codes, b_scales, acc, sig_a, sh_a, flag_a, off_a, m_a,
                sig_b, sh_b, flag_b, off_b, m_b, out):
    """``out[r]`` = ``acc[r]`` chained through the blocks of row r, one step per 32-block."""
    n_rows, n_blocks, _ = a_codes.shape
    for r in range(n_rows):
        c = np.int64(acc[r])
        for j in range(n_blocks):
            c = f8f6f4_step(a_codes[r, j], np.int64(a_scales[r, j]), b_codes[r, j],
                            np.int64(b_scales[r, j]), c, sig_a, sh_a, flag_a, off_a, m_a,
                            sig_b, sh_b, flag_b, off_b, m_b)
        out[r] = c


@njit(**_JIT)
def f4_rows(a_codes, a_scales, b_codes, b_scales, acc, sig_a, sh_a, lsb_a, sig_b, sh_b, lsb_b,
            ssig, sexp, snan, sm, step_blocks, out):
    """``out[r]`` = ``acc[r]`` chained through row r, ``step_blocks`` blocks per step (a last
    step may hold fewer)."""
    n_rows, n_blocks, k = a_codes.shape
    gval = np.empty(step_blocks * k // GROUP_F4, np.int64)
    gexp = np.empty(step_blocks * k // GROUP_F4, np.int64)
    for r in range(n_rows):
        c = np.int64(acc[r])
        for j in range(0, n_blocks, step_blocks):
            e = min(j + step_blocks, n_blocks)
            c = f4_step(a_codes[r, j:e], a_scales[r, j:e], b_codes[r, j:e], b_scales[r, j:e],
                        c, sig_a, sh_a, lsb_a, sig_b, sh_b, lsb_b, ssig, sexp, snan, sm, gval,
                        gexp)
        out[r] = c
