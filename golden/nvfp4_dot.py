"""The NVFP4 dot product (docs/numerics.md, NVFP4): nvfp4 x nvfp4 along the block axis.

Per block the exact sum of the e2m1 products times the exact product of the two UE4M3 scales
(``T_j``, at most 20 significant bits: exact in float64) is added to the fp32 accumulator with
one RNE, blocks in K order, starting from ``acc`` (+0 when omitted), as in the MX dot; the
tensor scales ``f(Pa * Pb)`` then multiply the final sum once (the epilogue alpha of torchao's
and TransformerEngine's scaled matmul).  With ``accumulation="tcgen05.mxf4nvf4"`` the block
steps are the Blackwell MMA's (:mod:`golden.gpu_accumulation`) and the same epilogue follows:
``tcgen05.mma`` computes ``(A * scale_A) * (B * scale_B) + D`` with the block scales only, so
the tensor scales are applied after it, one fp32 multiply (RNE) of the final sum.
"""

from __future__ import annotations

import numpy as np

from .codec import decode_table
from .dot_product import accumulator
from .format_names import FP4_E2M1
from .gpu_accumulation import accumulate_rows, check_accumulation
from .mx import MXArray
from .scale_format import UE4M3

__all__ = ["dot_nvfp4", "rne_f32_sum", "block_terms", "chain_terms", "epilogue", "tensor_alpha"]

_QNAN, _GPU_NAN = 0x7FC00000, 0x7FFFFFFF  # golden's NaN; the NaN of every tcgen05 step


def rne_f32_sum(a32: np.ndarray, t64: np.ndarray) -> np.ndarray:
    """fp32 RNE of the exact sum ``a + t`` (``a`` fp32, ``t`` exact in float64): the float64
    sum rounded to odd (TwoSum gives its exact error), then once to fp32, which has 29 fewer
    bits, so there is no double rounding.  An exact zero is +0; NaN stays NaN."""
    with np.errstate(invalid="ignore"):
        a = a32.astype(np.float64)
        s = a + t64
        bb = s - a
        err = (a - (s - bb)) + (t64 - bb)
    fix = np.isfinite(s) & (err != 0) & (s.view(np.uint64) & 1 == 0)
    toward = np.where(err > 0, np.inf, -np.inf)
    s = np.where(fix, np.nextafter(s, toward), s)
    s = np.where((s == 0) & (err == 0), 0.0, s)
    with np.errstate(over="ignore"):
        return s.astype(np.float32)


def tensor_alpha(a: MXArray, b: MXArray):
    """``f(Pa * Pb)`` (a missing P is 1), or None when neither array has a tensor scale."""
    if a.tensor_scale is None and b.tensor_scale is None:
        return None
    pa = np.float32(1.0) if a.tensor_scale is None else a.tensor_scale
    pb = np.float32(1.0) if b.tensor_scale is None else b.tensor_scale
    with np.errstate(over="ignore", under="ignore"):
        return np.float32(pa * pb)


def block_terms(a_codes, a_scales, b_codes, b_scales) -> np.ndarray:
    """The exact block terms ``T_j = (sum_i a_i * b_i) * sa_j * sb_j`` (float64, NaN for a
    NaN scale) of e2m1 codes ``(..., n, k)`` and UE4M3 scale bytes ``(..., n)``."""
    table = decode_table(FP4_E2M1)
    sums = np.sum(table[a_codes] * table[b_codes], axis=-1)  # exact: multiples of 2^-2
    with np.errstate(invalid="ignore"):
        return sums * (UE4M3.decode(a_scales) * UE4M3.decode(b_scales))  # exact (<= 20 bits)


def chain_terms(acc32: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``acc32`` (float32, the shape of ``t`` without its last axis) chained through the block
    terms ``t[..., j]`` in order, one fp32 RNE each."""
    out = acc32
    for j in range(t.shape[-1]):
        out = rne_f32_sum(out, t[..., j])
    return out


def epilogue(out: np.ndarray, alpha, nan_bits: int = _QNAN) -> np.ndarray:
    """``f(alpha * out)`` (one fp32 RNE; nothing when ``alpha`` is None), every NaN written
    as ``nan_bits`` (0x7FC00000 exact, 0x7FFFFFFF for a tcgen05 result)."""
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        if alpha is not None:
            out = (out * alpha).astype(np.float32)
    out = np.array(out, np.float32)
    out.view(np.uint32)[np.isnan(out)] = nan_bits
    return out


def dot_nvfp4(a: MXArray, b: MXArray, acc=None, accumulation="exact") -> np.ndarray:
    """nvfp4 x nvfp4 dot product along the block axis: float32 of the shape without it.

    ``acc`` (float32, broadcastable to that shape; checked by
    :func:`golden.dot_product.accumulator`) is the accumulator's starting value, in the units
    of the block sums (before the tensor scales).  ``accumulation`` is ``"exact"``
    (one RNE per block) or ``"tcgen05.mxf4nvf4"`` (the Blackwell MMA steps,
    :mod:`golden.gpu_accumulation`, UE4M3 scales, blocks of 16); the tensor scales multiply
    the final sum once in both.
    """
    for name, m in (("a", a), ("b", b)):
        if not isinstance(m, MXArray) or m.scale_format != UE4M3:
            raise ValueError(f"the NVFP4 dot takes two nvfp4 MXArrays; {name} is "
                             f"{getattr(m, 'fmt', type(m).__name__)} with "
                             f"{getattr(m, 'scale_format', 'no')} scales")
    if a.shape != b.shape or a.block_size != b.block_size or a.axis != b.axis:
        raise ValueError(f"dot needs matching MX arrays: shapes {a.shape}/{b.shape}, block "
                         f"sizes {a.block_size}/{b.block_size}, axes {a.axis}/{b.axis}")
    check_accumulation(accumulation, a.fmt, b.fmt, a.block_size, UE4M3.name)
    (ac, asc), (bc, bsc) = a.blocks(), b.blocks()
    lead = asc.shape[:-1]
    out = accumulator(acc, lead)
    alpha = tensor_alpha(a, b)
    if accumulation == "exact":
        return epilogue(chain_terms(out, block_terms(ac, asc, bc, bsc)), alpha)
    n, k = ac.shape[-2:]
    rows = int(np.prod(lead))
    bits = accumulate_rows(accumulation, ac.reshape(rows, n, k), asc.reshape(rows, n),
                           bc.reshape(rows, n, k), bsc.reshape(rows, n),
                           out.view(np.uint32).astype(np.int64).reshape(rows), a.fmt, b.fmt,
                           UE4M3.name)
    return epilogue(bits.astype(np.uint32).view(np.float32).reshape(lead), alpha, _GPU_NAN)
