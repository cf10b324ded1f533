"""GEMM-tile coverage: the run shapes of :class:`hw.gemm.MXGemm` (K blocks per output) and
the kinds of its outputs, classified from the stimulus and golden's results.

Cover point ``runs`` (MXDotGeneral's bins, :func:`tb.coverage.dot.classify_runs`): a run is
one tile job, K blocks of R rows of A and C columns of B; ``single_block_run`` is K of one
block, ``long_run`` K of :data:`tb.coverage.dot.LONG_RUN` blocks or more.

Cover point ``outputs``, one count per fp32 output of a tile:

``cancelled_to_zero``  +0 from products that are not all zero (the accumulated terms cancel
                       exactly);
``nan``                a NaN result;
``inf``                +-Inf (an Inf code, or overflow of finite operands);
``finite``             a finite non-zero result.

With nvfp4 operands and the epilogue (``levels`` 2), cover point ``epilogue``: the bins of
MXDotGeneral nvfp4's (:func:`tb.coverage.nvfp4_dot.classify_epilogue`), one count per output
(its sum, its run's ``alpha``, its result).

With an MX output, the quantizer's cover points of its blocks (:mod:`tb.coverage.quantizer`:
``scale``, ``element``, ``input`` for RNE and the floor scale), named ``mx.rne.floor.*``: each
row's C fp32 results are one block.

Configuration class: the format pair (or nvfp4 and its levels), single or multiple contexts,
the MX output format, and the accumulation mode when it is not ``exact`` (a GPU mode's runs
are counted apart from the exact mode's).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import golden
from golden.formats import ROUNDING_IDS, SCALE_MODE_IDS

from .dot import RUN_BINS
from .model import CoverageModel, point
from .nvfp4_dot import EPILOGUE_BINS
from .quantizer import classify_quantizer, quantizer_model

__all__ = ["OUTPUT_BINS", "MX_PREFIX", "gemm_model", "classify_outputs", "classify_mx_blocks"]

#: The prefix of the MX output's cover points (the quantizer's).
MX_PREFIX = "mx."

OUTPUT_BINS = ("cancelled_to_zero", "nan", "inf", "finite")


def gemm_model(fmt_a, fmt_b, contexts: int, out_format=None, *,
               nvfp4_levels: int | None = None, accumulation: str = "exact") -> CoverageModel:
    """The tile's cover points for a format pair, context count and MX output format (None:
    fp32 results); ``nvfp4_levels``: nvfp4 operands (UE4M3 scales) with that many levels;
    ``accumulation``: the lanes' mode (:class:`hw.gemm.MXGemm`'s), in the class name unless
    ``"exact"``."""
    fa, fb = golden.element_format(fmt_a), golden.element_format(fmt_b)
    why = {"interleaved_contexts": "one context: runs cannot interleave"
           if contexts == 1 else None}
    pair = f"{fa.name}-x-{fb.name}" if nvfp4_levels is None else f"nvfp4_l{nvfp4_levels}"
    cls = f"{pair}-{'multi' if contexts > 1 else 'one'}_ctx"
    points = [point("runs", RUN_BINS, why), point("outputs", OUTPUT_BINS, {})]
    if nvfp4_levels == 2:
        points.append(point("epilogue", EPILOGUE_BINS, {}))
    if out_format is not None:
        mx = quantizer_model(out_format, "fp32", ["rne"], ["floor"])
        points += [replace(p, name=MX_PREFIX + p.name) for p in mx.points]
        cls += f"-mx_{golden.element_format(out_format).name}"
    if accumulation != "exact":
        cls += f"-{accumulation.replace('.', '_')}"
    return CoverageModel("gemm", cls, tuple(points))


def classify_outputs(results, products_nonzero) -> dict:
    """Bin hit counts ``{"outputs": {bin: count}}`` of tile outputs.

    Parameters
    ----------
    results : ndarray of uint32
        fp32 bit patterns of golden's results, any shape.
    products_nonzero : ndarray of bool
        Per result, whether any product of its run is non-zero (same shape).
    """
    bits = np.asarray(results).astype(np.uint32)
    v = bits.view(np.float32)
    nonzero = np.asarray(products_nonzero, bool)
    bins = {"cancelled_to_zero": (bits == 0) & nonzero, "nan": np.isnan(v),
            "inf": np.isinf(v), "finite": np.isfinite(v) & (v != 0)}
    return {"outputs": {b: int(m.sum()) for b, m in bins.items() if m.any()}}


def classify_mx_blocks(results, scales, codes, out_format) -> dict:
    """Bin hit counts of the MX output's blocks (``mx.rne.floor.*``, the quantizer's bins).

    Parameters
    ----------
    results : ndarray of uint32 (n, C)
        golden's fp32 results, one row of the tile per block.
    scales, codes : ndarray (n,), (n, C)
        golden's quantization of them.
    """
    results = np.asarray(results)
    n = results.shape[0]
    counts = classify_quantizer(results, np.full(n, ROUNDING_IDS["rne"]),
                                np.full(n, SCALE_MODE_IDS["floor"]), np.zeros(results.shape),
                                scales, codes, fmt=out_format, input_format="fp32",
                                random_bits=0)
    return {MX_PREFIX + name: bins for name, bins in counts.items()}
