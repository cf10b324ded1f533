"""MX dot products (docs/numerics.md section 5): exact block sums, one fp32 rounding per block."""

from __future__ import annotations

import numpy as np

from . import _kernels as K
from .codec import dot_tables
from .dot_wide import dot_rows_wide
from .formats import FP4_E2M1, ElementFormat, element_format
from .gpu_accumulation import accumulate_rows, check_accumulation
from .mx import MXArray, check_block_size
from .scale_format import E8M0
from .scale_format import scale_format as scale_format_of

__all__ = ["dot", "dot_blocks", "limb_split", "accumulator"]


def limb_split(fmt_a: ElementFormat, fmt_b: ElementFormat, block_size: int) -> int | None:
    """The kernel's limb split for a pair of formats and a block size, derived from the
    formats' significand widths and largest shifts; None when the pair's block sum is too wide
    for the two-limb kernel (it then takes :mod:`golden.dot_wide`'s exact path)."""
    sa, ha, _ = dot_tables(element_format(fmt_a))
    sb, hb, _ = dot_tables(element_format(fmt_b))
    product_bits = int(np.abs(sa).max()).bit_length() + int(np.abs(sb).max()).bit_length()
    return K.dot_limb_split(product_bits, int(ha.max()) + int(hb.max()), block_size)


def accumulator(acc, shape) -> np.ndarray:
    """The accumulator input of a dot or matrix product as a new, writable float32 array of
    ``shape``: +0 everywhere when ``acc`` is None, else ``acc`` broadcast to ``shape``.

    Raises
    ------
    TypeError
        ``acc`` is not a real number array (bool, complex, object, ...).
    ValueError
        ``acc`` holds a value float32 cannot represent exactly (no silent rounding), or does
        not broadcast to ``shape``.
    """
    if acc is None:
        return np.zeros(shape, np.float32)
    c = np.asarray(acc)
    if c.dtype != np.float32:
        if c.dtype.kind not in "fiu":
            raise TypeError(f"acc must be float32, got dtype {c.dtype}")
        c32 = c.astype(np.float32)
        wide = c.astype(np.float64)
        if not np.all((c32.astype(np.float64) == wide) | np.isnan(wide)):
            raise ValueError("acc must be float32 (or values exactly representable in it); "
                             "cast it explicitly if rounding is intended")
        c = c32
    try:
        return np.broadcast_to(c, shape).copy()
    except ValueError:
        raise ValueError(f"acc of shape {np.shape(acc)} does not broadcast to {shape}") from None


def dot_blocks(a_codes, a_scales, b_codes, b_scales, fmt_a, fmt_b=None, acc=None,
               accumulation="exact", scale_format="e8m0") -> np.ndarray:
    """Dot products of raw block arrays: the interface of the RTL dot units.

    Parameters
    ----------
    a_codes, b_codes : uint8 arrays of shape (..., n, k)
        Element codes of n blocks of k elements per row.
    a_scales, b_scales : uint8 arrays of shape (..., n)
        Scale codes of ``scale_format``.
    fmt_a, fmt_b : element formats (``fmt_b`` defaults to ``fmt_a``).
    acc : float32 array broadcastable to (...), optional
        The accumulator input c (``+0`` when omitted).
    accumulation : str
        ``"exact"`` (docs/numerics.md section 5), or a GPU mode of
        :mod:`golden.gpu_accumulation` (``"tcgen05.mxf8f6f4"``, ``"tcgen05.mxf4"``,
        ``"tcgen05.mxf4nvf4"``) that reproduces a Blackwell tensor core's truncating steps.
    scale_format : {"e8m0", "ue4m3"}
        What a scale byte means: E8M0, or UE4M3 (NVFP4's block scale, fp4_e2m1 codes only;
        the NVFP4 dot's block steps without its tensor scales).

    Returns
    -------
    float32 array of shape (...): ``acc`` chained through the n blocks, one rounding per block
    (per tcgen05 step in a GPU mode).
    """
    fa = element_format(fmt_a)
    fb = element_format(fmt_b if fmt_b is not None else fmt_a)
    ac, bc = np.asarray(a_codes), np.asarray(b_codes)
    asc, bsc = np.asarray(a_scales), np.asarray(b_scales)
    if ac.shape != bc.shape or ac.ndim < 2:
        raise ValueError(f"a_codes {ac.shape} and b_codes {bc.shape} must have the same shape "
                         "(..., n_blocks, block_size)")
    check_block_size(ac.shape[-1])
    sf = scale_format_of(scale_format)
    check_accumulation(accumulation, fa, fb, ac.shape[-1], sf.name)
    if asc.shape != ac.shape[:-1] or bsc.shape != ac.shape[:-1]:
        raise ValueError(f"scales must have shape {ac.shape[:-1]}, got {asc.shape} and {bsc.shape}")
    if sf != E8M0:
        if fa != FP4_E2M1 or fb != FP4_E2M1:
            raise ValueError(f"{sf.name} scales go with fp4_e2m1 codes (NVFP4), not "
                             f"{fa.name} x {fb.name}")
        sf.check(asc), sf.check(bsc)
    for name, arr, f in (("a", ac, fa), ("b", bc, fb)):
        if arr.size and int(arr.max()) >= 1 << f.bits:
            raise ValueError(f"{name}_codes hold values outside {f.name}'s {f.bits}-bit codes")
    lead = ac.shape[:-2]
    rows = int(np.prod(lead))
    n, k = ac.shape[-2:]
    c = accumulator(acc, lead).view(np.uint32).astype(np.int64).reshape(rows)
    out = np.empty(rows, np.int64)
    ta, tb = dot_tables(fa), dot_tables(fb)
    args = (np.ascontiguousarray(ac, np.uint8).reshape(rows, n, k),
            np.ascontiguousarray(asc, np.uint8).reshape(rows, n),
            np.ascontiguousarray(bc, np.uint8).reshape(rows, n, k),
            np.ascontiguousarray(bsc, np.uint8).reshape(rows, n), c)
    split = limb_split(fa, fb, k)
    if accumulation != "exact":
        out = accumulate_rows(accumulation, *args, fa, fb, sf.name)
    elif sf != E8M0:
        from .nvfp4_dot import block_terms, chain_terms, epilogue  # the NVFP4 dot's steps

        res = chain_terms(c.astype(np.uint32).view(np.float32), block_terms(*args[:4]))
        out = epilogue(res, None).view(np.uint32).astype(np.int64)
    elif split is None:
        out = dot_rows_wide(*args, ta, fa.lsb_exp, tb, fb.lsb_exp)
    else:
        K.dot_rows(*args, *ta, fa.lsb_exp, *tb, fb.lsb_exp, split, out)
    return out.astype(np.uint32).view(np.float32).reshape(lead)


def dot(a: MXArray, b: MXArray, acc=None, accumulation="exact") -> np.ndarray:
    """Dot product of two MX arrays along their block axis (the OCP DotGeneral).

    ``a`` and ``b`` must have the same shape, block size and block axis; their formats may
    differ.  Returns float32 of the shape with the block axis removed.  ``acc`` (float32,
    broadcastable to that shape) is the initial accumulator, ``+0`` when omitted.
    ``accumulation`` is ``"exact"`` or a GPU mode, as in :func:`dot_blocks`.  Two NVFP4 arrays
    (UE4M3 scales) take the NVFP4 dot (:func:`golden.nvfp4_dot.dot_nvfp4`: exact or
    ``"tcgen05.mxf4nvf4"``, the tensor scales once on the final sum).
    """
    if not isinstance(a, MXArray) or not isinstance(b, MXArray):
        raise TypeError("dot takes two MXArrays (see golden.quantize)")
    if a.scale_format.name != "e8m0" or b.scale_format.name != "e8m0":
        from .nvfp4_dot import dot_nvfp4  # nvfp4 x nvfp4 (docs/numerics.md, NVFP4)

        return dot_nvfp4(a, b, acc, accumulation)
    if a.shape != b.shape or a.block_size != b.block_size or a.axis != b.axis:
        raise ValueError(f"dot needs matching MX arrays: shapes {a.shape}/{b.shape}, block "
                         f"sizes {a.block_size}/{b.block_size}, axes {a.axis}/{b.axis}")
    ac, asc = a.blocks()
    bc, bsc = b.blocks()
    return dot_blocks(ac, asc, bc, bsc, a.fmt, b.fmt, acc, accumulation)
