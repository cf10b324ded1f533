"""The MX matrix product: each output the chained MX dot over K (docs/numerics.md, "Matrix
product"), exact or in a GPU accumulation mode (:mod:`golden.gpu_accumulation`).

``golden.matmul(a, b)`` multiplies an MXArray ``a`` of shape ``(..., M, K)`` blocked along its
last axis by an MXArray ``b`` of shape ``(..., K, N)`` blocked along K (its axis -2), batch axes
broadcast as numpy's ``matmul`` does.  Output ``[..., m, n]`` is exactly
``golden.dot_blocks`` of row m of ``a`` and column n of ``b`` (one fp32 RNE per block pair, in
K order, ``acc`` the start), and optionally quantized along N.

Four paths compute the same numbers (:func:`matmul_path` says which a pair takes).  An
element's value is an integer ``u`` (its *units*) times ``2^lsb_exp``, so a block sum is an
integer times ``2^(lsb_a + lsb_b)``:

``"blas"``
    every block sum of the pair is an integer below 2^53 (``units_max_a * units_max_b *
    block_size <= 2^53``; below 2^24, float32): BLAS computes the sums of one K block for a
    tile of outputs exactly, and :func:`golden._matmul_kernels.chain_block` adds them to the
    accumulators.  The OCP fp8_e4m3 (float64), fp6_e3m2, fp6_e2m3, fp4_e2m1 and int8 (float32)
    and mixed pairs of them.
``"blas-split"``
    an operand's units split at a shift ``w`` into ``lo + 2^w * hi`` (codes below and above
    that binade), each part within the bound: two or four exact BLAS products per block, summed
    in the chain step.  fp8_e5m2 (2^64 of spread: halves of 2^17) and e5m1.
``"exact"``
    golden's dot step on every block of every output (compiled, no BLAS): pairs that two parts
    do not make exact but the two-limb step covers (e6m1 x fp8_e4m3 at block sizes 1024 to
    2^17, fp8_e5m2 from 2^20).
``"wide"``
    :func:`golden.dot_blocks` on row chunks: pairs too wide for the two-limb step (e6m1 x
    e6m1, fp8_e5m2 x e6m1 from block size 32, any pair with e7m0); Python-speed.

A GPU ``accumulation=`` (``"tcgen05.mxf8f6f4"``, ``"tcgen05.mxf4"``, ``"tcgen05.mxf4nvf4"``)
takes none of these: every output is :func:`golden.gpu_accumulation.accumulate_rows` of its
row and column (compiled tcgen05 steps, chunks of rows).  Two NVFP4 arrays (UE4M3 scales)
take the NVFP4 dot's numerics (:mod:`golden.nvfp4_dot`): BLAS block sums times the exact scale
products, one fp32 RNE per block, then the tensor scales once on every output.
"""

from __future__ import annotations

import functools

import numpy as np

from . import _matmul_kernels as MK
from .blas_threads import one_blas_thread
from .codec import decode_table, dot_tables
from .dot_product import accumulator, dot_blocks, limb_split
from .formats import FP4_E2M1, ElementFormat, ScaleMode, element_format
from .gpu_accumulation import accumulate_rows, check_accumulation
from .mx import DEFAULT_BLOCK_SIZE, MXArray, check_block_size, default_block_size, quantize
from .nvfp4 import NAME as NVFP4
from .nvfp4 import is_nvfp4
from .nvfp4_dot import epilogue, rne_f32_sum, tensor_alpha
from .scale_format import UE4M3

__all__ = ["matmul", "matmul_path"]

_FINITE = 0  # golden.codec.dot_tables' flag of a finite code
_ROUNDINGS = ("rne", "rna", "rtz")
_WIDE_CHUNK = 1 << 22  # codes per dot_blocks call on the wide path
_EXACT_F32, _EXACT_F64 = 1 << 24, 1 << 53  # integers exact in float32, float64
_QNAN, _GPU_NAN = 0x7FC00000, 0x7FFFFFFF  # golden's NaN; the NaN of every tcgen05 step
_BLAS_ROWS = 256  # output rows per tile on the BLAS path (a tile's block sums: 2 MB at N = 1024)


def matmul_path(fmt_a, fmt_b, block_size: int) -> str:
    """``"blas"``, ``"blas-split"``, ``"exact"`` or ``"wide"``: how :func:`matmul` computes a
    pair's products (module docstring), from the formats' derived constants and the block
    size."""
    fa, fb = element_format(fmt_a), element_format(fmt_b)
    k = check_block_size(block_size)
    plan = _plan(fa, fb, k)
    if plan is not None:
        return "blas" if plan[1] is None and plan[2] is None else "blas-split"
    return "wide" if limb_split(fa, fb, k) is None else "exact"


@functools.cache
def _part_max(fmt: ElementFormat, w) -> int:
    """Largest units of a part of ``fmt``: the whole (``w`` None), else the larger of the part
    below shift ``w`` and the part at or above it divided by ``2^w`` (exact Python integers)."""
    sig, shift, flag = dot_tables(fmt)
    lo = hi = 0
    for g, h, f in zip(np.abs(sig).tolist(), shift.tolist(), flag.tolist(), strict=True):
        if f != _FINITE:
            continue
        if w is None or h < w:
            lo = max(lo, g << h)
        else:
            hi = max(hi, g << (h - w))
    return max(lo, hi)


@functools.cache
def _plan(fa: ElementFormat, fb: ElementFormat, k: int):
    """(BLAS dtype, split shift of a or None, of b or None) with the fewest BLAS products per
    block whose block sums are exact, or None if no split into at most two parts fits."""
    if fa.magnitude_units_max * fb.magnitude_units_max * k <= _EXACT_F32:
        return np.float32, None, None
    splits_a = [None] + list(range(1, int(dot_tables(fa)[1].max()) + 1))
    splits_b = [None] + list(range(1, int(dot_tables(fb)[1].max()) + 1))
    best = None
    for wa in splits_a:
        for wb in splits_b:
            bound = _part_max(fa, wa) * _part_max(fb, wb) * k
            cost = (1 if wa is None else 2) * (1 if wb is None else 2)
            if bound <= _EXACT_F64 and (best is None or (cost, bound) < best[:2]):
                best = (cost, bound, wa, wb)
    return None if best is None else (np.float64, best[2], best[3])


def _part_tables(fmt: ElementFormat, w, dtype):
    """[(units table of each part, its weight exponent)]: one part, or two split at ``w``.
    NaN and Inf codes count 0."""
    sig, shift, flag = dot_tables(fmt)
    finite = flag == _FINITE
    if w is None:
        return [(np.where(finite, sig << shift, 0).astype(dtype), 0)]
    lo = np.where(finite & (shift < w), sig << np.minimum(shift, w - 1), 0)
    hi = np.where(finite & (shift >= w), sig << np.maximum(shift - w, 0), 0)
    return [(lo.astype(dtype), 0), (hi.astype(dtype), w)]


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
    if a.scale_format != b.scale_format:
        raise ValueError(f"a and b must have the same scale format (nvfp4 x nvfp4, or two "
                         f"E8M0-scaled MX arrays), got {a.scale_format.name} and "
                         f"{b.scale_format.name}")
    if a.block_size != b.block_size:
        raise ValueError(f"a and b must have the same block size, got {a.block_size} and "
                         f"{b.block_size}")
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ValueError(f"batch axes {a.shape[:-2]} and {b.shape[:-2]} do not broadcast") \
            from None
    return batch, a.shape[-2], a.shape[-1], b.shape[-1]


def _check_out(out_format, out_block_size, scale_mode, rounding):
    """Validate the output quantization; returns (format or "nvfp4" or None, block size)."""
    if is_nvfp4(out_format):
        if (scale_mode, rounding) != ("floor", "rne"):
            raise ValueError("out_format='nvfp4' takes no scale_mode or rounding (its recipe "
                             "fixes both)")
        k = check_block_size(default_block_size(NVFP4) if out_block_size is None
                             else out_block_size)
        return NVFP4, k
    out_fmt = None if out_format is None else element_format(out_format)
    k = check_block_size(DEFAULT_BLOCK_SIZE if out_block_size is None else out_block_size)
    try:
        ScaleMode(scale_mode)
    except ValueError:
        raise ValueError(f"unknown scale_mode {scale_mode!r}; expected 'floor' or 'rceil'") \
            from None
    if rounding not in _ROUNDINGS:
        raise ValueError(f"matmul's output rounding must be one of {', '.join(_ROUNDINGS)}, "
                         f"got {rounding!r} (stochastic rounding: golden.quantize the fp32 "
                         "result with random=)")
    return out_fmt, k


def matmul(a: MXArray, b: MXArray, *, acc=None, out_format=None, out_block_size=None,
           scale_mode="floor", rounding="rne", accumulation="exact"):
    """Matrix product of two MX arrays, bit-exact to the chained MX dot product.

    Parameters
    ----------
    a : MXArray of shape (..., M, K)
        Blocked along its last axis (K).
    b : MXArray of shape (..., K, N)
        Blocked along K (axis -2), with ``a``'s block size and scale format; its element
        format may differ from ``a``'s.  Two NVFP4 arrays (UE4M3 scales) multiply as the NVFP4
        dot does: the tensor scales ``f(Pa * Pb)`` multiply each final sum once.
    acc : array_like of float32, optional
        The accumulator start of every output, broadcastable to ``(..., M, N)``; +0 when
        omitted (NVFP4: in the units of the block sums, before the tensor scales).
    out_format : str, dict or ElementFormat, optional
        Quantize the fp32 result to this format along N (:func:`golden.quantize`, ``axis=-1``);
        ``"nvfp4"`` gives single-level NVFP4 (UE4M3 scales, no tensor scale, torchao recipe).
    out_block_size : int, optional
        Block size of that output quantization; the format's default when omitted (32, and
        16 for nvfp4).
    scale_mode : {"floor", "rceil"}
        Scale rule of the output quantization (MX formats only).
    rounding : {"rne", "rna", "rtz"}
        Element rounding of the output quantization (MX formats only).
    accumulation : str
        ``"exact"`` (one RNE per block pair, docs/numerics.md section 5) or a GPU mode of
        :mod:`golden.gpu_accumulation` (``"tcgen05.mxf8f6f4"``, ``"tcgen05.mxf4"``,
        ``"tcgen05.mxf4nvf4"``), validated with the formats and block size exactly as
        :func:`golden.dot` validates it.

    Returns
    -------
    float32 ndarray of shape (..., M, N), or an MXArray of that shape (blocked along N) when
    ``out_format`` is given.  Batch axes broadcast like numpy's ``matmul``.
    """
    batch, M, _, N = _check_operands(a, b)
    check_accumulation(accumulation, a.fmt, b.fmt, a.block_size, a.scale_format.name)
    out_fmt, out_k = _check_out(out_format, out_block_size, scale_mode, rounding)
    out = accumulator(acc, batch + (M, N))
    a_codes = np.broadcast_to(a.codes, batch + a.codes.shape[-2:])
    a_scales = np.broadcast_to(a.scales, batch + a.scales.shape[-2:])
    b_codes = np.broadcast_to(b.codes, batch + b.codes.shape[-2:])
    b_scales = np.broadcast_to(b.scales, batch + b.scales.shape[-2:])
    nvfp4 = a.scale_format == UE4M3
    if accumulation == "exact":
        product = _product_nvfp4 if nvfp4 else _PATHS[matmul_path(a.fmt, b.fmt, a.block_size)]
    else:
        product = functools.partial(_product_gpu, accumulation, a.scale_format.name)
    with one_blas_thread():  # many small BLAS calls: golden.blas_threads
        for idx in np.ndindex(*batch):
            product(a_codes[idx], a_scales[idx], b_codes[idx], b_scales[idx], out[idx],
                    a.fmt, b.fmt, a.block_size)
    if nvfp4:
        out = epilogue(out, tensor_alpha(a, b), _QNAN if accumulation == "exact" else _GPU_NAN)
    if out_fmt is None:
        return out
    if out_fmt == NVFP4:
        return quantize(out, NVFP4, block_size=out_k, axis=-1)
    return quantize(out, out_fmt, block_size=out_k, axis=-1, scale_mode=scale_mode,
                    rounding=rounding)


def _blocked(a_codes, a_scales, b_codes, b_scales, k):
    """A as (M, nb, k) codes and (M, nb) scales; B with its block axis last, (N, nb, k) and
    (N, nb); all C-contiguous."""
    M, N, nb = a_codes.shape[0], b_codes.shape[1], a_scales.shape[1]
    return (np.ascontiguousarray(a_codes).reshape(M, nb, k), np.ascontiguousarray(a_scales),
            np.ascontiguousarray(b_codes.T).reshape(N, nb, k),
            np.ascontiguousarray(b_scales.T))


def _product_blas(a_codes, a_scales, b_codes, b_scales, out, fa, fb, k):
    """One (M, K) x (K, N) product on a BLAS path, accumulated into ``out`` in place."""
    dtype, wa, wb = _plan(fa, fb, k)
    pa, pb = _part_tables(fa, wa, dtype), _part_tables(fb, wb, dtype)
    av = [tab[a_codes] for tab, _ in pa]  # (M, Kp) integers, one array per part
    bv = [tab[b_codes] for tab, _ in pb]  # (Kp, N)
    pairs = [(x, y) for x in range(len(pa)) for y in range(len(pb))]
    pf = np.array([np.ldexp(1.0, pa[x][1] + pb[y][1]) for x, y in pairs])
    ab, asc, bb, bsc = _blocked(a_codes, a_scales, b_codes, b_scales, k)
    # Per block: (nb, M) / (nb, N) contiguous rows, one per K block.
    spa, spb = dot_tables(fa)[2] != _FINITE, dot_tables(fb)[2] != _FINITE
    row_sp = np.ascontiguousarray((spa[ab].any(axis=-1) | (asc == 255)).T)
    col_sp = np.ascontiguousarray((spb[bb].any(axis=-1) | (bsc == 255)).T)
    rs = np.ascontiguousarray(np.ldexp(1.0, asc.astype(np.int64) - 127 + fa.lsb_exp).T)
    cs = np.ascontiguousarray(np.ldexp(1.0, bsc.astype(np.int64) - 127 + fb.lsb_exp).T)
    M, N = out.shape
    acc = np.ascontiguousarray(out)
    bits = acc.view(np.uint32)
    ta, tb = (*dot_tables(fa), fa.lsb_exp), (*dot_tables(fb), fb.lsb_exp)
    split = limb_split(fa, fb, k)
    # Row tiles, so that one K block's sums are still in cache when the chain step reads them.
    for r in range(0, M, _BLAS_ROWS):
        t = slice(r, min(M, r + _BLAS_ROWS))
        s = np.empty((len(pairs), t.stop - t.start, N), dtype)
        todo = np.empty(s.shape[1:], np.uint8)
        for j in range(asc.shape[1]):
            blk = slice(j * k, (j + 1) * k)
            for p, (x, y) in enumerate(pairs):
                np.matmul(av[x][t, blk], bv[y][blk], out=s[p])
            MK.chain_block(s, pf, rs[j, t], cs[j], row_sp[j, t], col_sp[j], acc[t], bits[t],
                           todo, ab[t, j], asc[t, j], bb[:, j], bsc[:, j], *ta, *tb, split)
    out[...] = acc


def _product_exact(a_codes, a_scales, b_codes, b_scales, out, fa, fb, k):
    """One product on the exact path (golden's dot step on every block)."""
    ab, asc, bb, bsc = _blocked(a_codes, a_scales, b_codes, b_scales, k)
    bits = np.ascontiguousarray(out).view(np.uint32)
    MK.chain_exact(ab, asc, bb, bsc, bits, *dot_tables(fa), fa.lsb_exp, *dot_tables(fb),
                   fb.lsb_exp, limb_split(fa, fb, k))
    out[...] = bits.view(np.float32)


def _row_chunks(shape, k_padded):
    """Slices of the ``M`` output rows of an ``M x N`` product over ``k_padded`` elements of K,
    each row chunk's broadcast blocks about :data:`_WIDE_CHUNK` elements."""
    M, N = shape
    rows = max(1, _WIDE_CHUNK // max(1, N * k_padded))
    for r in range(0, M, rows):
        yield slice(r, min(M, r + rows))


def _product_wide(a_codes, a_scales, b_codes, b_scales, out, fa, fb, k):
    """One product on the wide path: :func:`golden.dot_blocks` on chunks of rows."""
    ab, asc, bb, bsc = _blocked(a_codes, a_scales, b_codes, b_scales, k)
    for sl in _row_chunks(out.shape, ab.shape[1] * k):
        m = sl.stop - sl.start
        out[sl] = dot_blocks(np.broadcast_to(ab[sl, None], (m,) + bb.shape),
                             np.broadcast_to(asc[sl, None], (m,) + bsc.shape),
                             np.broadcast_to(bb, (m,) + bb.shape),
                             np.broadcast_to(bsc, (m,) + bsc.shape), fa, fb, out[sl])


def _product_nvfp4(a_codes, a_scales, b_codes, b_scales, out, fa, fb, k):
    """One nvfp4 x nvfp4 product, exact: per K block the exact sums (BLAS on e2m1 values,
    multiples of 2^-2 far below 2^53) times the exact UE4M3 scale products, then one fp32 RNE
    into each accumulator (:func:`golden.nvfp4_dot.rne_f32_sum`), blocks in K order."""
    table = decode_table(FP4_E2M1)
    av, bv = table[a_codes], table[b_codes]
    sa, sb = UE4M3.decode(a_scales), UE4M3.decode(b_scales)
    acc = np.ascontiguousarray(out)
    for j in range(sa.shape[1]):
        blk = slice(j * k, (j + 1) * k)
        with np.errstate(invalid="ignore"):
            t = (av[:, blk] @ bv[blk]) * (sa[:, j, None] * sb[None, j, :])
        acc = rne_f32_sum(acc, t)
    out[...] = acc


def _product_gpu(kind, scale_format, a_codes, a_scales, b_codes, b_scales, out, fa, fb, k):
    """One product in a GPU accumulation mode: :func:`accumulate_rows` on chunks of rows,
    every (row, column) pair one chain."""
    ab, asc, bb, bsc = _blocked(a_codes, a_scales, b_codes, b_scales, k)
    N = out.shape[1]
    for sl in _row_chunks(out.shape, ab.shape[1] * k):
        m = sl.stop - sl.start
        c = np.ascontiguousarray(out[sl]).view(np.uint32).astype(np.int64).reshape(-1)
        res = accumulate_rows(kind, np.repeat(ab[sl], N, axis=0), np.repeat(asc[sl], N, axis=0),
                              np.tile(bb, (m, 1, 1)), np.tile(bsc, (m, 1)), c, fa, fb,
                              scale_format)
        out[sl] = res.astype(np.uint32).view(np.float32).reshape(m, N)


_PATHS = {"blas": _product_blas, "blas-split": _product_blas, "exact": _product_exact,
          "wide": _product_wide}
