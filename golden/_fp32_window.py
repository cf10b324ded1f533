"""Exact integer arithmetic in a 124-bit window of two 62-bit limbs, and the one rounding of
such a value to fp32 (RNE, subnormals kept, overflow to Inf): the end of the dot-product step
in :mod:`golden._kernels`.  Numba kernels on int64 limbs ``(h, l)``, value ``h * 2^62 + l``.
"""

from __future__ import annotations

import numpy as np

from .formats import FP32
from .jitcache import njit

_JIT = dict(cache=True, nogil=True)
_INLINE = dict(cache=True, nogil=True, inline="always")

#: Limb width and mask.
L = 62
LMASK = (1 << L) - 1


@njit(**_INLINE)
def bitlen(x):
    """Number of bits of a non-negative int64 (0 for 0): ``floor(log2(x)) + 1``."""
    n = 0
    if x >> 32:
        x >>= 32
        n += 32
    if x >> 16:
        x >>= 16
        n += 16
    if x >> 8:
        x >>= 8
        n += 8
    if x >> 4:
        x >>= 4
        n += 4
    if x >> 2:
        x >>= 2
        n += 2
    if x >> 1:
        x >>= 1
        n += 1
    return n + x


@njit(**_JIT)
def w_bitlen(h, l):
    return L + bitlen(h) if h else bitlen(l)


@njit(**_JIT)
def w_shl(h, l, s):
    """(h, l) << s; the caller guarantees the result fits in 124 bits."""
    if s == 0:
        return h, l
    if s >= L:
        return l << (s - L), np.int64(0)
    return (h << s) | (l >> (L - s)), (l << s) & LMASK


@njit(**_JIT)
def w_shr_sticky(h, l, s):
    """(h, l) >> s, and whether any 1 bit was shifted out."""
    if s == 0:
        return h, l, False
    if s >= 2 * L:
        return np.int64(0), np.int64(0), (h | l) != 0
    if s >= L:
        t = s - L
        lost = l != 0 or (h & ((np.int64(1) << t) - 1)) != 0
        return np.int64(0), h >> t, lost
    lost = (l & ((np.int64(1) << s) - 1)) != 0
    return h >> s, (l >> s) | ((h << (L - s)) & LMASK), lost


@njit(**_JIT)
def w_add(ah, al, bh, bl):
    l = al + bl
    return ah + bh + (l >> L), l & LMASK


@njit(**_JIT)
def w_sub(ah, al, bh, bl):
    """a - b for a >= b."""
    l = al - bl
    if l < 0:
        return ah - bh - 1, l + (np.int64(1) << L)
    return ah - bh, l


@njit(**_JIT)
def w_ge(ah, al, bh, bl):
    return ah > bh or (ah == bh and al >= bl)


FP32_QNAN = FP32.qnan_bits
FP32_INF = FP32.inf_bits


@njit(**_JIT)
def round_fp32(neg, h, l, f):
    """RNE of ``h:l * 2^f`` (non-zero) to fp32 bits, subnormals and overflow kept."""
    p = w_bitlen(h, l) - 1 + f  # exponent of the leading bit
    rp = p - 23 if p - 23 > -149 else -149  # exponent of the result's last place
    r = rp - f
    if r <= 0:
        keep = l << (-r)  # exact (fits in 24 bits, so h == 0)
    else:
        qh, ql, lost = w_shr_sticky(h, l, r - 1)
        guard = ql & 1
        keep = ql >> 1
        if guard and (lost or (keep & 1)):
            keep += 1
    # keep * 2^rp: the same formula covers subnormals, normals and a carry into the next binade.
    mag = ((rp + 149) << 23) + keep
    if mag >= FP32_INF:
        mag = FP32_INF
    return mag | (neg << 31)


@njit(**_JIT)
def add_round_fp32(t_neg, th, tl, tx, c_neg, ch, cl, cx):
    """``RNE_fp32(T + c)`` for exact operands ``(-1)^neg * (h:l) * 2^x`` of at most 100 bits."""
    t_len = w_bitlen(th, tl)
    c_len = w_bitlen(ch, cl)
    if t_len == 0 and c_len == 0:
        return np.int64(0)  # an exact zero is +0
    if c_len == 0:
        return round_fp32(t_neg, th, tl, tx)
    if t_len == 0:
        return round_fp32(c_neg, ch, cl, cx)
    # U has the higher leading bit.  Frame: 101 bits below U's top; U fits exactly.  V's bits
    # below the frame are far below U (at most one bit of cancellation), so a sticky suffices.
    if t_len - 1 + tx >= c_len - 1 + cx:
        u_neg, uh, ul, ux, u_len, v_neg, vh, vl, vx = t_neg, th, tl, tx, t_len, c_neg, ch, cl, cx
    else:
        u_neg, uh, ul, ux, u_len, v_neg, vh, vl, vx = c_neg, ch, cl, cx, c_len, t_neg, th, tl, tx
    f = u_len - 1 + ux - 100
    uh, ul = w_shl(uh, ul, ux - f + 1)  # one extra bit below the frame for the sticky
    if vx >= f:
        vh, vl = w_shl(vh, vl, vx - f + 1)
    else:
        vh, vl, lost = w_shr_sticky(vh, vl, f - vx)
        vh, vl = w_shl(vh, vl, 1)
        vl |= np.int64(1) if lost else np.int64(0)
    f -= 1
    if u_neg == v_neg:
        sh, sl = w_add(uh, ul, vh, vl)
        s_neg = u_neg
    elif w_ge(uh, ul, vh, vl):
        sh, sl = w_sub(uh, ul, vh, vl)
        s_neg = u_neg
    else:
        sh, sl = w_sub(vh, vl, uh, ul)
        s_neg = v_neg
    if sh == 0 and sl == 0:
        return np.int64(0)
    return round_fp32(s_neg, sh, sl, f)


