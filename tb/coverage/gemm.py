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

Configuration class: the format pair and single or multiple contexts.
"""

from __future__ import annotations

import numpy as np

import golden

from .dot import RUN_BINS
from .model import CoverageModel, point

__all__ = ["OUTPUT_BINS", "gemm_model", "classify_outputs"]

OUTPUT_BINS = ("cancelled_to_zero", "nan", "inf", "finite")


def gemm_model(fmt_a, fmt_b, contexts: int) -> CoverageModel:
    """The tile's cover points for a format pair and context count."""
    fa, fb = golden.element_format(fmt_a), golden.element_format(fmt_b)
    why = {"interleaved_contexts": "one context: runs cannot interleave"
           if contexts == 1 else None}
    cls = f"{fa.name}-x-{fb.name}-{'multi' if contexts > 1 else 'one'}_ctx"
    return CoverageModel("gemm", cls, (point("runs", RUN_BINS, why),
                                       point("outputs", OUTPUT_BINS, {})))


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
