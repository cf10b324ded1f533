"""The fused block step of the dot units, section by section over a :class:`Pipeline`.

``RNE_fp32(c + 2^(sa+sb-254) * sum_i a_i*b_i)`` for one block pair (``docs/numerics.md``
section 5); the arithmetic is the bit-level statement of ``golden._kernels.dot_step`` and is
explained, with the exactness argument of the window, in ``docs/dot.md``.

:func:`build_fused_step` places the sections in datapath order through a pipeline scope
(:mod:`hw.scope`: several steps on one pipeline, each under its own names), each from the
module that holds it:

1. :mod:`hw.dot.decode` -- ``decode``, ``scale_product`` (NVFP4), ``factors``: element fields,
   the product's factors.
2. :mod:`hw.dot.products` -- ``multiply``, ``product``: exact signed lane terms.
3. :mod:`hw.dot.block_sum` -- ``tree0``...: the exact block sum ``S``, and beside it the frame
   of ``c + T`` (:mod:`hw.dot.frame`).
4. :mod:`hw.dot.window` -- ``place``, ``align``, ``add``: ``c + T`` in an exact window.
5. :mod:`hw.dot.normalize` -- ``pick``, ``lzc``, ``shift``: the window sum normalized.
6. :mod:`hw.dot.finish` -- ``round``, ``finish``: the fp32 result and its special cases.

The sections, their delays and the splits of wide pairs are :mod:`hw.dot.sections`'
(re-exported here).
"""

from __future__ import annotations

from ..pipeline import Pipeline, PipelineScope
from .block_sum import BlockSum, SplitBlockSum, sum_block
from .decode import decode, factors, scale_product
from .finish import finish, round_result
from .geometry import DotGeometry
from .normalize import lzc, pick, shift
from .products import multiply, product
from .sections import (
    DOT_SECTIONS,
    FORWARD_DELAY,
    FRAME_STEPS,
    MULTIPLIERS,
    PRIMITIVES,
    SIGN_COPY_BITS,
    SPLIT_ADD_BITS,
    SPLIT_LANE_SHIFT_BITS,
    SPLIT_MULTIPLY_BITS,
    SPLIT_TREE_BITS,
    TREE_FRAME_DELAY,
    dot_sections,
    lane_shift_bits,
    tree_levels,
    tree_sections,
    tree_split_bits,
)
from .step import FusedStep
from .window import add, align, place

__all__ = ["DOT_SECTIONS", "FORWARD_DELAY", "FRAME_STEPS", "SIGN_COPY_BITS", "SPLIT_ADD_BITS",
           "SPLIT_LANE_SHIFT_BITS", "SPLIT_MULTIPLY_BITS", "SPLIT_TREE_BITS", "TREE_FRAME_DELAY",
           "MULTIPLIERS", "PRIMITIVES", "BlockSum", "SplitBlockSum", "dot_sections",
           "lane_shift_bits", "tree_levels", "tree_sections", "tree_split_bits",
           "build_fused_step"]


def build_fused_step(scope: PipelineScope | Pipeline, geometry: DotGeometry, a, b, c,
                     side=None, *, multipliers: str = "lut"):
    """Build the fused step through ``scope``, crossing every boundary of
    :func:`dot_sections` in it.

    Several steps share one pipeline through scopes (:meth:`hw.pipeline.Pipeline.scope`):
    steps side by side (a tile's lanes) in scopes of different prefixes on the same sections,
    each named ``<prefix>_...`` (the first to cross a boundary crosses it, the others beside
    it, in the same stages); steps in series in scopes of their own sections.  A
    :class:`~hw.pipeline.Pipeline` given itself stands for its scope without a prefix: the
    pipeline's own names (MXDot, MXDotGeneral).

    Parameters
    ----------
    scope : PipelineScope or Pipeline
        Its sections :func:`dot_sections` of ``geometry`` (with the scope's prefix, if any);
        the pipeline's ``connect`` is left to the caller.
    geometry : DotGeometry
    a, b : View
        One block of each operand (:func:`hw.elements.block_layout`).
    c : Value
        fp32 bits of the accumulator input.
    side : dict of str to Value, optional
        Values that ride along unchanged (MXDotGeneral: ``ctx``, ``last``); a ``last`` field
        also makes only last blocks wait at the output (:meth:`Pipeline.hold_when`, one
        flag per pipeline: give ``last`` to one of the steps side by side).
    multipliers : {"lut", "dsp", "mult18x18d"}
        How the lane significand products are built: ``"lut"`` as sums of partial products
        in LUTs and carry chains (:func:`hw.arith.partial_product_sum`), ``"dsp"`` as ``*``,
        which yosys maps to DSP multipliers (ECP5 MULT18X18D, one per lane), ``"mult18x18d"``
        as instantiated ECP5 MULT18X18D blocks (:mod:`hw.dsp`).  Same function.

    Returns
    -------
    View
        ``result`` (fp32 bits) and ``side`` (if given), after the last boundary.
    """
    step = FusedStep.on(scope, geometry, multipliers, side)
    s, wide_fmt = decode(step, a, b, c, side)
    scale_sigs = None
    if "scale_product" in step.scope.names:
        s, scale_sigs = scale_product(step, s)
    if "factors" in step.scope.names:
        s = factors(step, s, wide_fmt, scale_sigs)
    s = product(step, multiply(step, s))
    s, total, minus, signs = sum_block(step, s)
    s = add(step, align(step, place(step, s, total, minus, signs)))
    s = shift(step, lzc(step, pick(step, s)))
    return finish(step, round_result(step, s), hold_last=bool(side) and "last" in side)
