"""The MX matrix product: each output the chained MX dot over K (docs/numerics.md, "Matrix
product").

``golden.matmul(a, b)`` multiplies an MXArray ``a`` of shape ``(..., M, K)`` blocked along its
last axis by an MXArray ``b`` of shape ``(..., K, N)`` blocked along K (its axis -2), batch axes
broadcast as numpy's ``matmul`` does.  Output ``[..., m, n]`` is exactly
``golden.dot_blocks`` of row m of ``a`` and column n of ``b`` (one fp32 RNE per block pair, in
K order, ``acc`` the start), and optionally quantized along N.

Three paths compute the same numbers (:func:`matmul_path` says which a pair takes):

``"blas"``
    Every block sum of the pair is an integer below 2^53 in units of ``2^(lsb_a + lsb_b)``
    (``units_max_a * units_max_b * block_size <= 2^53``): BLAS computes the sums of one K block
    for all outputs at once in float64, exactly, and :func:`golden._matmul_kernels.chain_block`
    adds them to the accumulators.  Of the OCP formats: fp8_e4m3, fp6_e3m2, fp6_e2m3, fp4_e2m1
    and int8 (and mixed pairs of them) at block sizes up to 2^17 or more.
``"exact"``
    golden's dot step on every block of every output (compiled, no BLAS): fp8_e5m2, whose
    products span 2^64, and any pair beyond the bound above that the two-limb step covers.
``"wide"``
    :func:`golden.dot_blocks` on row chunks: pairs too wide for the two-limb step (e6m1 and
    wider exponents); Python-speed.
"""

from __future__ import annotations

import numpy as np

from . import _matmul_kernels as MK
from .codec import dot_tables
from .dot_product import dot_blocks, limb_split
from .formats import ElementFormat, ScaleMode, element_format
from .mx import MXArray, check_block_size, quantize

__all__ = ["matmul", "matmul_path"]

_FINITE = 0  # golden.codec.dot_tables' flag of a finite code
_ROUNDINGS = ("rne", "rna", "rtz")
_WIDE_CHUNK = 1 << 22  # codes per dot_blocks call on the wide path
_BLAS_ROWS = 256  # output rows per tile on the BLAS path (a tile's block sums: 2 MB at N = 1024)


def matmul_path(fmt_a, fmt_b, block_size: int) -> str:
    """``"blas"``, ``"exact"`` or ``"wide"``: how :func:`matmul` computes a pair's products
    (module docstring), from the formats' derived constants and the block size."""
    fa, fb = element_format(fmt_a), element_format(fmt_b)
    k = check_block_size(block_size)
    if fa.magnitude_units_max * fb.magnitude_units_max * k <= 1 << 53:
        return "blas"
    return "wide" if limb_split(fa, fb, k) is None else "exact"


def _units_table(fmt: ElementFormat):
    """float64 value of every code in units of ``2^lsb_exp`` (0 for NaN and Inf codes), and
    whether the code is a NaN or Inf."""
    sig, shift, flag = dot_tables(fmt)
    special = flag != _FINITE
    units = np.where(special, 0, sig << shift).astype(np.float64)
    return units, special


def _check_operands(a, b):
    """Validate the operands; returns (batch shape, M, K, N)."""
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, MXArray):
            raise TypeError(f"matmul takes two MXArrays (see golden.quantize); {name} is a "
                            f"{type(x).__name__}")
        if len(x.shape) < 2:
            raise ValueError(f"matmul needs matrices (at least 2-d); {name} has shape {x.shape}")
    if a.axis != len(a.shape) - 1:
        raise ValueError(f"a must be blocked along its last axis (K), got axis {a.axis} of "
                         f"shape {a.shape}: quantize it with axis=-1")
    if b.axis != len(b.shape) - 2:
        raise ValueError(f"b must be blocked along K (its axis -2), got axis {b.axis} of shape "
                         f"{b.shape}: quantize it with axis=-2")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"K mismatch: a is {a.shape} and b is {b.shape} "
                         f"({a.shape[-1]} != {b.shape[-2]})")
    if a.block_size != b.block_size:
        raise ValueError(f"a and b must have the same block size, got {a.block_size} and "
                         f"{b.block_size}")
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ValueError(f"batch axes {a.shape[:-2]} and {b.shape[:-2]} do not broadcast") \
            from None
    return batch, a.shape[-2], a.shape[-1], b.shape[-1]


def _acc_array(acc, shape) -> np.ndarray:
    """The accumulator start as a writable float32 array of ``shape`` (+0 when None)."""
    if acc is None:
        return np.zeros(shape, np.float32)
    c = np.asarray(acc)
    if c.dtype.kind not in "fiu":
        raise TypeError(f"acc must be float32, got dtype {c.dtype}")
    if c.dtype != np.float32:
        c32 = c.astype(np.float32)
        wide = c.astype(np.float64)
        if not np.all((c32.astype(np.float64) == wide) | np.isnan(wide)):
            raise ValueError("acc must be float32 (or values exactly representable in it); "
                             "cast it explicitly if rounding is intended")
        c = c32
    try:
        return np.broadcast_to(c, shape).copy()
    except ValueError:
        raise ValueError(f"acc of shape {c.shape} does not broadcast to {shape}") from None


def _check_out(out_format, out_block_size, scale_mode, rounding):
    out_fmt = None if out_format is None else element_format(out_format)
    check_block_size(out_block_size)
    try:
        ScaleMode(scale_mode)
    except ValueError:
        raise ValueError(f"unknown scale_mode {scale_mode!r}; expected 'floor' or 'rceil'") \
            from None
    if rounding not in _ROUNDINGS:
        raise ValueError(f"matmul's output rounding must be one of {', '.join(_ROUNDINGS)}, "
                         f"got {rounding!r} (stochastic rounding: golden.quantize the fp32 "
                         "result with random=)")
    return out_fmt


def matmul(a: MXArray, b: MXArray, *, acc=None, out_format=None, out_block_size=32,
           scale_mode="floor", rounding="rne"):
    """Matrix product of two MX arrays, bit-exact to the chained MX dot product.

    Parameters
    ----------
    a : MXArray of shape (..., M, K)
        Blocked along its last axis (K).
    b : MXArray of shape (..., K, N)
        Blocked along K (axis -2), with ``a``'s block size; its format may differ from ``a``'s.
    acc : array_like of float32, optional
        The accumulator start of every output, broadcastable to ``(..., M, N)``; +0 when
        omitted.
    out_format : str, dict or ElementFormat, optional
        Quantize the fp32 result to this format along N (:func:`golden.quantize`, ``axis=-1``).
    out_block_size : int
        Block size of that output quantization.
    scale_mode : {"floor", "rceil"}
        Scale rule of the output quantization.
    rounding : {"rne", "rna", "rtz"}
        Element rounding of the output quantization.

    Returns
    -------
    float32 ndarray of shape (..., M, N), or an MXArray of that shape (blocked along N) when
    ``out_format`` is given.  Batch axes broadcast like numpy's ``matmul``.
    """
    batch, M, _, N = _check_operands(a, b)
    out_fmt = _check_out(out_format, out_block_size, scale_mode, rounding)
    out = _acc_array(acc, batch + (M, N))
    a_codes = np.broadcast_to(a.codes, batch + a.codes.shape[-2:])
    a_scales = np.broadcast_to(a.scales, batch + a.scales.shape[-2:])
    b_codes = np.broadcast_to(b.codes, batch + b.codes.shape[-2:])
    b_scales = np.broadcast_to(b.scales, batch + b.scales.shape[-2:])
    product = _PATHS[matmul_path(a.fmt, b.fmt, a.block_size)]
    for idx in np.ndindex(*batch):
        product(a_codes[idx], a_scales[idx], b_codes[idx], b_scales[idx], out[idx],
                a.fmt, b.fmt, a.block_size)
    if out_fmt is None:
        return out
    return quantize(out, out_fmt, block_size=out_block_size, axis=-1, scale_mode=scale_mode,
                    rounding=rounding)


def _blocked(a_codes, a_scales, b_codes, b_scales, k):
    """A as (M, nb, k) codes and (M, nb) scales; B with its block axis last, (N, nb, k) and
    (N, nb); all C-contiguous."""
    M, N, nb = a_codes.shape[0], b_codes.shape[1], a_scales.shape[1]
    return (np.ascontiguousarray(a_codes).reshape(M, nb, k), np.ascontiguousarray(a_scales),
            np.ascontiguousarray(b_codes.T).reshape(N, nb, k),
            np.ascontiguousarray(b_scales.T))


def _product_blas(a_codes, a_scales, b_codes, b_scales, out, fa, fb, k):
    """One (M, K) x (K, N) product on the BLAS path, accumulated into ``out`` in place."""
    ua, spa = _units_table(fa)
    ub, spb = _units_table(fb)
    av = ua[a_codes]  # (M, Kp) float64 integers
    bv = ub[b_codes]  # (Kp, N)
    ab, asc, bb, bsc = _blocked(a_codes, a_scales, b_codes, b_scales, k)
    # Per block: (nb, M) / (nb, N) contiguous rows, one per K block.
    row_sp = np.ascontiguousarray((spa[ab].any(axis=-1) | (asc == 255)).T)
    col_sp = np.ascontiguousarray((spb[bb].any(axis=-1) | (bsc == 255)).T)
    rs = np.ascontiguousarray(np.ldexp(1.0, asc.astype(np.int64) - 127 + fa.lsb_exp).T)
    cs = np.ascontiguousarray(np.ldexp(1.0, bsc.astype(np.int64) - 127 + fb.lsb_exp).T)
    M, N = out.shape
    acc = np.ascontiguousarray(out)
    bits = acc.view(np.uint32)
    rows = min(M, _BLAS_ROWS)
    s = np.empty((rows, N), np.float64)
    todo = np.empty((rows, N), np.uint8)
    ta, tb = dot_tables(fa), dot_tables(fb)
    split = limb_split(fa, fb, k)
    # Row tiles, so that one K block's sums are still in cache when the chain step reads them.
    for r in range(0, M, rows):
        t = slice(r, min(M, r + rows))
        n = t.stop - t.start
        for j in range(asc.shape[1]):
            np.matmul(av[t, j * k:(j + 1) * k], bv[j * k:(j + 1) * k], out=s[:n])
            MK.chain_block(s[:n], rs[j, t], cs[j], row_sp[j, t], col_sp[j], acc[t], bits[t],
                           todo[:n], ab[t, j], asc[t, j], bb[:, j], bsc[:, j], *ta, fa.lsb_exp,
                           *tb, fb.lsb_exp, split)
    out[...] = acc


def _product_exact(a_codes, a_scales, b_codes, b_scales, out, fa, fb, k):
    """One product on the exact path (golden's dot step on every block)."""
    ab, asc, bb, bsc = _blocked(a_codes, a_scales, b_codes, b_scales, k)
    bits = np.ascontiguousarray(out).view(np.uint32)
    MK.chain_exact(ab, asc, bb, bsc, bits, *dot_tables(fa), fa.lsb_exp, *dot_tables(fb),
                   fb.lsb_exp, limb_split(fa, fb, k))
    out[...] = bits.view(np.float32)


def _product_wide(a_codes, a_scales, b_codes, b_scales, out, fa, fb, k):
    """One product on the wide path: :func:`golden.dot_blocks` on chunks of rows."""
    ab, asc, bb, bsc = _blocked(a_codes, a_scales, b_codes, b_scales, k)
    M, N = out.shape
    rows = max(1, _WIDE_CHUNK // max(1, N * ab.shape[1] * k))
    for r in range(0, M, rows):
        sl = slice(r, min(M, r + rows))
        m = sl.stop - sl.start
        out[sl] = dot_blocks(np.broadcast_to(ab[sl, None], (m,) + bb.shape),
                             np.broadcast_to(asc[sl, None], (m,) + bsc.shape),
                             np.broadcast_to(bb, (m,) + bb.shape),
                             np.broadcast_to(bsc, (m,) + bsc.shape), fa, fb, out[sl])


_PATHS = {"blas": _product_blas, "exact": _product_exact, "wide": _product_wide}
