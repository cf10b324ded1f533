"""Compiled (numba) kernels of :func:`golden.matmul`: the chained block step over a matrix.

Both kernels end every block step in golden's own dot step (:func:`golden._kernels.dot_step`)
or in one IEEE rounding of an exactly known value, so a matrix product has exactly the
numerics of docs/numerics.md section 5, output by output:

* :func:`chain_block` takes the block sums ``S`` of one K block for a tile of outputs
  (computed exactly by BLAS, :mod:`golden.matrix_product`, possibly as a few partial sums),
  scales them by powers of two (exact) and adds the accumulator.  Where those float64 additions
  are exact (every TwoSum error is zero) the hardware conversion to float32 *is*
  ``RNE_fp32(acc + T)``; every other output (an inexact addition, a NaN or Inf code or NaN
  scale in either block, a non-finite accumulator) takes ``dot_step`` on its codes.
* :func:`chain_exact` is ``dot_step`` over every block of every output (no BLAS): the path of
  pairs whose block sums are not exact in float64.
"""

from __future__ import annotations

import numpy as np

from . import _kernels as K
from .jitcache import njit

_JIT = dict(cache=True, nogil=True)


@njit(**_JIT)
def _fast_pass_one(S, pf, rs, cs, row_sp, col_sp, acc, todo):
    """:func:`_fast_pass` for one part (P = 1): the same arithmetic, a loop numba vectorizes."""
    _, M, N = S.shape
    count = 0
    for m in range(M):
        r = rs[m] * pf[0]
        rsp = row_sp[m]
        for n in range(N):
            c = np.float64(acc[m, n])
            t = np.float64(S[0, m, n]) * r * cs[n]  # exact, as in _fast_pass
            s = c + t
            bp = s - c
            bad = (((c - (s - bp)) + (t - bp)) != 0) | rsp | col_sp[n]
            acc[m, n] = acc[m, n] if bad else np.float32(s + 0.0)
            todo[m, n] = bad
            count += bad
    return count


@njit(**_JIT)
def _fast_pass(S, pf, rs, cs, row_sp, col_sp, acc, todo):
    """acc <- RNE_fp32(acc + T), ``T = sum_p S[p] * pf[p] * rs * cs``, where that is decided by
    exact float64 sums; ``todo[m, n] = 1`` (and acc untouched) where it is not.  Returns the
    count of such outputs.  Row by row, one part at a time (loops numba vectorizes)."""
    P, M, N = S.shape
    count = 0
    t = np.empty(N, np.float64)
    bad = np.empty(N, np.bool_)
    for m in range(M):
        rsp = row_sp[m]
        for n in range(N):
            # exact: S is an integer below 2^53, pf, rs and cs powers of two
            t[n] = np.float64(S[0, m, n]) * (rs[m] * pf[0]) * cs[n]
            bad[n] = rsp | col_sp[n]
        for p in range(1, P):
            r = rs[m] * pf[p]
            for n in range(N):
                u = np.float64(S[p, m, n]) * r * cs[n]
                w = t[n] + u
                bp = w - t[n]
                bad[n] |= ((t[n] - (w - bp)) + (u - bp)) != 0  # TwoSum: t + u = w + err
                t[n] = w
        for n in range(N):
            c = np.float64(acc[m, n])
            s = c + t[n]
            bp = s - c
            # The same for c + T; err is NaN when c is Inf or NaN, so != 0.
            b = bad[n] | (((c - (s - bp)) + (t[n] - bp)) != 0)
            # s + 0.0: an exact zero is +0 (whatever BLAS's sign of a zero sum); a non-zero s
            # keeps its value and sign.
            acc[m, n] = acc[m, n] if b else np.float32(s + 0.0)
            todo[m, n] = b
            count += b
    return count


@njit(**_JIT)
def chain_block(S, pf, rs, cs, row_sp, col_sp, acc, acc_bits, todo, a_codes, sa, b_codes, sb,
                sig_a, sh_a, flag_a, lsb_a, sig_b, sh_b, flag_b, lsb_b, split):
    """One K block of a matrix product, in place on ``acc`` (float32, ``(M, N)``).

    Parameters
    ----------
    S : float64 or float32 (P, M, N)
        Exact partial block sums (integers) whose sum weighted by ``pf`` is the block sum in
        units of ``2^(lsb_a + lsb_b)``, NaN and Inf codes counted as 0 (P = 1 unless the
        operands are split into parts, :mod:`golden.matrix_product`).
    pf : float64 (P,)
        The parts' weights, powers of two.
    rs, cs : float64 (M,), (N,)
        ``2^(sa - 127 + lsb_a)`` and ``2^(sb - 127 + lsb_b)`` (any value where a scale is NaN).
    row_sp, col_sp : bool (M,), (N,)
        The row's (column's) block holds a NaN or Inf code or its scale is NaN.
    acc, acc_bits : float32 and uint32 views of one (M, N) array; todo : uint8 (M, N) scratch.
    a_codes, sa : uint8 (M, k), (M,)
        The block's codes and scales of A; ``b_codes``, ``sb`` likewise for B, (N, k), (N,).
    sig_*, sh_*, flag_*, lsb_*, split :
        :func:`golden.codec.dot_tables`, the formats' ``lsb_exp`` and the pair's limb split.
    """
    if S.shape[0] == 1:
        count = _fast_pass_one(S, pf, rs, cs, row_sp, col_sp, acc, todo)
    else:
        count = _fast_pass(S, pf, rs, cs, row_sp, col_sp, acc, todo)
    if count == 0:
        return
    M, N = acc.shape
    for m in range(M):
        for n in range(N):
            if todo[m, n]:
                acc_bits[m, n] = K.dot_step(a_codes[m], np.int64(sa[m]), b_codes[n],
                                            np.int64(sb[n]), np.int64(acc_bits[m, n]), sig_a,
                                            sh_a, flag_a, lsb_a, sig_b, sh_b, flag_b, lsb_b,
                                            split)


@njit(**_JIT)
def chain_exact(a_codes, a_scales, b_codes, b_scales, acc_bits, sig_a, sh_a, flag_a, lsb_a,
                sig_b, sh_b, flag_b, lsb_b, split):
    """``acc_bits[m, n]`` chained through every block: A ``(M, nb, k)`` codes and ``(M, nb)``
    scales, B ``(N, nb, k)`` and ``(N, nb)`` (its block axis last), fp32 bits in place."""
    M, nb, _ = a_codes.shape
    N = b_codes.shape[0]
    for m in range(M):
        for n in range(N):
            c = np.int64(acc_bits[m, n])
            for j in range(nb):
                c = K.dot_step(a_codes[m, j], np.int64(a_scales[m, j]), b_codes[n, j],
                               np.int64(b_scales[n, j]), c, sig_a, sh_a, flag_a, lsb_a,
                               sig_b, sh_b, flag_b, lsb_b, split)
            acc_bits[m, n] = c
