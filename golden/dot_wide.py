"""The exact dot-product step for format pairs too wide for the two-limb kernel.

A block sum of two wide-exponent formats (e6m1 x e6m1 spans about 2^134 lsb units; e7m0 x
e7m0 about 2^260) does not fit the kernel's 124-bit window (:func:`golden._kernels.
dot_limb_split` returns None for such a pair).  Here the block sum and ``c + T`` are Python
integers, exact at any width, and the one rounding to fp32 is RNE on the integer.  The
arithmetic is the same statement of docs/numerics.md section 5 as the kernel's, at a Python
loop's speed (tens of microseconds per block).
"""

from __future__ import annotations

import numpy as np

__all__ = ["dot_rows_wide"]

_FINITE, _NAN, _INF = 0, 1, 2  # the flags of golden.codec.dot_tables
_QNAN, _INF_BITS = 0x7FC00000, 0x7F800000


def _round_fp32(neg: bool, mag: int, exp: int) -> int:
    """fp32 bits of RNE(+-mag * 2^exp) for an integer ``mag > 0``: subnormals, overflow to Inf."""
    top = mag.bit_length() - 1 + exp  # exponent of the leading bit
    last = max(top - 23, -149)  # exponent of the result's last place
    drop = last - exp
    if drop <= 0:
        keep = mag << -drop
    else:
        keep, rest = mag >> drop, mag & ((1 << drop) - 1)
        half = 1 << (drop - 1)
        if rest > half or (rest == half and keep & 1):
            keep += 1
    bits = min(((last + 149) << 23) + keep, _INF_BITS)  # a carry lands on the next binade
    return bits | (int(neg) << 31)


def _step(ca, sa, cb, sb, acc, ta, tb, lsb_a, lsb_b) -> int:
    """One block step: fp32 bits of RNE(acc + T), with the contract's NaN and Inf rules."""
    sig_a, sh_a, flag_a = ta
    sig_b, sh_b, flag_b = tb
    fa, fb = flag_a[ca], flag_b[cb]
    pa, pb = sig_a[ca], sig_b[cb]
    special = (fa != _FINITE) | (fb != _FINITE)
    nan = bool(np.any(special & ((fa == _NAN) | (fb == _NAN) | (pa == 0) | (pb == 0))))
    signs = ((pa < 0) != (pb < 0))[special & ~((fa == _NAN) | (fb == _NAN) | (pa == 0) | (pb == 0))]
    ninf, pinf = bool(np.any(signs)), bool(np.any(~signs))
    c_neg, c_exp, c_man = (acc >> 31) & 1, (acc >> 23) & 0xFF, acc & 0x7FFFFF
    if c_exp == 0xFF:
        nan |= c_man != 0
        ninf |= c_man == 0 and c_neg == 1
        pinf |= c_man == 0 and c_neg == 0
    if sa == 255 or sb == 255 or nan or (pinf and ninf):
        return _QNAN
    if pinf or ninf:
        return _INF_BITS | (int(ninf) << 31)
    fin = ~special
    total = 0
    for p, s in zip((pa[fin] * pb[fin]).tolist(), (sh_a[ca[fin]] + sh_b[cb[fin]]).tolist(),
                    strict=True):
        total += p << s
    tx = (sa - 127) + (sb - 127) + lsb_a + lsb_b
    c_sig, cx = (c_man, -149) if c_exp == 0 else (c_man | 1 << 23, c_exp - 150)
    c_val = -c_sig if c_neg else c_sig
    low = min(tx, cx)
    exact = (total << (tx - low)) + (c_val << (cx - low))
    if exact == 0:
        return 0  # an exact zero is +0
    return _round_fp32(exact < 0, abs(exact), low)


def dot_rows_wide(a_codes, a_scales, b_codes, b_scales, acc, tables_a, lsb_a, tables_b,
                  lsb_b) -> np.ndarray:
    """``golden._kernels.dot_rows`` for any pair: rows ``(rows, n, k)`` of codes, scales
    ``(rows, n)``, fp32 accumulator bits ``(rows,)``; returns the fp32 bits as int64."""
    rows, n, _ = a_codes.shape
    out = np.empty(rows, np.int64)
    ac, bc = a_codes.astype(np.intp), b_codes.astype(np.intp)
    for r in range(rows):
        c = int(acc[r])
        for j in range(n):
            c = _step(ac[r, j], int(a_scales[r, j]), bc[r, j], int(b_scales[r, j]), c,
                      tables_a, tables_b, lsb_a, lsb_b)
        out[r] = c
    return out
