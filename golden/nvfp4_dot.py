"""The NVFP4 dot product (docs/numerics.md, NVFP4): nvfp4 x nvfp4 along the block axis.

Per block the exact sum of the e2m1 products times the exact product of the two UE4M3 scales
(``T_j``, at most 20 significant bits: exact in float64) is added to the fp32 accumulator with
one RNE, blocks in K order, starting from ``acc`` (+0 when omitted), as in the MX dot; the
tensor scales ``f(Pa * Pb)`` then multiply the final sum once (the epilogue alpha of torchao's
and TransformerEngine's scaled matmul).
"""

from __future__ import annotations

import numpy as np

from .codec import decode_table
from .format_names import FP4_E2M1
from .mx import MXArray
from .scale_format import UE4M3

__all__ = ["dot_nvfp4", "rne_f32_sum"]


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


def _alpha(a: MXArray, b: MXArray):
    if a.tensor_scale is None and b.tensor_scale is None:
        return None
    pa = np.float32(1.0) if a.tensor_scale is None else a.tensor_scale
    pb = np.float32(1.0) if b.tensor_scale is None else b.tensor_scale
    with np.errstate(over="ignore", under="ignore"):
        return np.float32(pa * pb)


def dot_nvfp4(a: MXArray, b: MXArray, acc=None) -> np.ndarray:
    """nvfp4 x nvfp4 dot product along the block axis: float32 of the shape without it.

    ``acc`` (float32, broadcastable to that shape) is the accumulator's starting value, in
    the units of the block sums (before the tensor scales).
    """
    for name, m in (("a", a), ("b", b)):
        if not isinstance(m, MXArray) or m.scale_format != UE4M3:
            raise ValueError(f"the NVFP4 dot takes two nvfp4 MXArrays; {name} is "
                             f"{getattr(m, 'fmt', type(m).__name__)} with "
                             f"{getattr(m, 'scale_format', 'no')} scales")
    if a.shape != b.shape or a.block_size != b.block_size or a.axis != b.axis:
        raise ValueError(f"dot needs matching MX arrays: shapes {a.shape}/{b.shape}, block "
                         f"sizes {a.block_size}/{b.block_size}, axes {a.axis}/{b.axis}")
    (ac, asc), (bc, bsc) = a.blocks(), b.blocks()
    table = decode_table(FP4_E2M1)
    sums = np.sum(table[ac] * table[bc], axis=-1)  # exact: multiples of 2^-2, |sum| <= 576 k/16
    with np.errstate(invalid="ignore"):
        t = sums * (UE4M3.decode(asc) * UE4M3.decode(bsc))  # exact (8-bit x <= 12-bit)
    out = np.zeros(t.shape[:-1], np.float32)
    if acc is not None:
        c = np.asarray(acc)
        if c.dtype != np.float32:
            raise TypeError(f"acc must be float32, got dtype {c.dtype}")
        try:
            out = np.array(np.broadcast_to(c, out.shape), np.float32)
        except ValueError:
            raise ValueError(f"acc of shape {c.shape} does not broadcast to {out.shape}") \
                from None
    for j in range(t.shape[-1]):  # blocks in K order, one rounding each
        out = rne_f32_sum(out, t[..., j])
    alpha = _alpha(a, b)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        if alpha is not None:
            out = (out * alpha).astype(np.float32)
    out = np.array(out, np.float32)
    out[np.isnan(out)] = np.nan  # the canonical quiet NaN 0x7FC00000
    return out
