"""The truncating block step of the dot units' GPU accumulation mode ``"tcgen05.mxf8f6f4"``
(``docs/numerics.md`` section 8, ``docs/dot.md``, "Accumulation modes"): the bit-level
statement of golden's ``tcgen05.mxf8f6f4`` step, section by section over a pipeline.

Per block of 32 element pairs with E8M0 scales and fp32 ``c``: every product and ``c`` at its
alignment exponent (element exponents ``max(E, 1) - bias``, not renormalized, plus the scale
exponents; -133 for a zero product and for ``c = +-0``), each term's magnitude truncated to a
multiple of ``2^(e_max - 25)``, the terms summed exactly, the sum rounded toward zero to fp32
(subnormals kept, every zero +0, ``>= 2^128`` +-Inf, NaN 0x7FFFFFFF).

This is a different datapath from the exact step (:mod:`hw.dot.fused_step`): products aligned
to the largest exponent and truncated, instead of an exact wide block sum placed beside
``c``.  It shares with it the element decoder (:func:`hw.elements.decode_element`), the LUT
products (:func:`hw.arith.partial_product_sum`), the pipeline mechanism
(:class:`hw.dot.step.FusedStep` over a :class:`hw.scope.PipelineScope`), and with the rest of
the units the maximum tree (:mod:`hw.maxtree`) and the rounder (:mod:`hw.rounding`, RTZ).

1. :mod:`hw.dot.truncated_terms` -- ``decode``, ``multiply_lo``, ``multiply``, ``emax1``...,
   ``frame``, ``gap``, ``distance``, ``align_hi``, ``align``: the truncated signed terms.
2. :mod:`hw.dot.truncated_sum` -- ``tree0``..., ``magnitude``, ``lzc``, ``lzc_select``,
   ``normalize``, ``position``, ``shift_hi``, ``shift``, ``round``, ``finish``: their sum
   rounded toward zero, and the special cases.
"""

from __future__ import annotations

from ..pipeline import Pipeline, PipelineScope
from . import truncated_f4 as F4
from . import truncated_sum as S
from . import truncated_terms as T
from .chained_f4 import chained_kind
from .geometry import DotGeometry
from .step import FusedStep
from .truncated_sections import F4_MODES, KINDS, truncated_sections

__all__ = ["build_truncated_step", "truncated_sections"]


def build_truncated_step(scope: PipelineScope | Pipeline, geometry: DotGeometry, a, b, c,
                         side=None, *, multipliers: str = "lut",
                         accumulation: str = "tcgen05.mxf8f6f4", last=None):
    """Build the truncating step through ``scope``, crossing every boundary of
    :func:`hw.dot.truncated_sections.truncated_sections` in it; the arguments and the result
    are :func:`hw.dot.fused_step.build_fused_step`'s.

    Parameters
    ----------
    scope : PipelineScope or Pipeline
    geometry : DotGeometry
        Formats the mode takes (the OCP fp8/fp6/fp4 formats), block size 32.
    a, b : View
        One block of each operand (:func:`hw.elements.block_layout`).
    c : Value
        fp32 bits of the accumulator input.
    side : dict of str to Value, optional
        Values that ride along unchanged; a ``last`` field makes only last blocks wait at the
        output.
    multipliers : {"lut", "dsp"}
        The significand products as sums of partial products in LUTs, or as ``*``.
    accumulation : {"tcgen05.mxf8f6f4", "tcgen05.mxf4", "tcgen05.mxf4nvf4"}
        The mode: its terms are :mod:`hw.dot.truncated_terms`' or (mxf4, and mxf4nvf4 with
        E8M0 or UE4M3 scales: fp4_e2m1 x fp4_e2m1) :mod:`hw.dot.truncated_f4`'s.  A block
        enters every clock; without ``last`` it is a step of its own (MXDot), with it the
        chained state makes a step of a run's 64 elements.
    last : Value, optional
        mxf4 and mxf4nvf4 over a run's blocks (MXDotGeneral, MXGemm): the run's ``last``
        flag; ``c`` is then the run's state (:mod:`hw.dot.chained_f4`), and the side values
        gain ``chain`` and ``groups``, of which :func:`hw.dot.chained_f4.next_state` makes the
        state the block leaves; the sum is :func:`hw.dot.chained_f4.chained_kind`'s (with
        UE4M3 scales one bit wider).

    Returns
    -------
    View
        ``result`` (fp32 bits) and ``side`` (if given), after the last boundary.
    """
    # a chained step's side values carry its state even where side is None (MXGemm's lanes)
    step = FusedStep.on(scope, geometry, multipliers, side or last is not None)
    kind = KINDS[accumulation]
    if accumulation in F4_MODES:
        if last is not None:
            kind = chained_kind(accumulation, geometry.scale_format)
        s, multiples = F4.scale_lanes(step, F4.decode(step, a, b, c, side, last=last))
        s = F4.multiply(step, F4.multiply_lo(step, s, multiples))
        s = F4.align(step, F4.align_hi(step, F4.group_sums(step, s, kind.sum_bits)))
    else:
        s = T.multiply(step, T.multiply_lo(step, T.decode(step, a, b, c, side)))
        s = T.distance(step, T.gap(step, T.frame(step, T.emax(step, s))))
        s = T.align(step, T.align_hi(step, s))
    s = S.magnitude(step, S.sum_terms(step, s, kind), kind)
    s = S.normalize(step, S.lzc_select(step, S.lzc(step, s, kind)), kind)
    s = S.shift(step, S.shift_hi(step, S.position(step, s, kind)))
    return S.finish(step, S.round_rtz(step, s), hold_last=bool(side) and "last" in side)
