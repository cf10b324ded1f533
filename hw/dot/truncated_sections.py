"""The truncating steps' sections (``accumulation="tcgen05.mxf8f6f4"`` and
``"tcgen05.mxf4"``): their names in datapath order, their estimated delays, and the constants
of the modes.

* :data:`ACCUMULATIONS` -- the ``accumulation=`` values of the dot units.
* :class:`TruncatedKind`, :data:`KINDS` -- each mode's fraction bits, floor and sum width.
* :data:`FRACTION_BITS`, :data:`ZERO_EXPONENT`, :data:`TERM_BITS`, :data:`SUM_BITS` -- the
  mxf8f6f4 mode's fixed widths (``docs/numerics.md`` section 8).
* :data:`ESTIMATES` and :func:`truncated_sections` -- the sections, with delays.
* :func:`truncated_tree_levels` -- the levels of the terms' adder tree.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..placement import Estimate
from .geometry import DotGeometry
from .sections import FORWARD_DELAY

__all__ = ["ACCUMULATIONS", "TRUNCATING", "FRACTION_BITS", "ZERO_EXPONENT", "TERM_BITS",
           "SUM_BITS", "EXPONENT_BITS", "ESTIMATES", "TRUNCATED_SECTIONS", "F4_SECTIONS",
           "F4_GROUP", "F4_GROUP_BITS", "F4_FRACTION_BITS", "F4_ZERO_EXPONENT", "F4_TERM_BITS",
           "F4_SUM_BITS", "F4_MODES", "KINDS", "SUM_SECTIONS", "TruncatedKind",
           "emax_tree_radices", "truncated_sections",
           "truncated_tree_levels", "truncated_terms"]

#: The ``accumulation=`` values the dot units build: the exact step, or a truncating one
#: (``"tcgen05.mxf4"`` and ``"tcgen05.mxf4nvf4"``: in MXDot one step per block, over a run
#: one per 64 elements, :mod:`hw.dot.truncated_f4`).
F4_MODES = ("tcgen05.mxf4", "tcgen05.mxf4nvf4")
TRUNCATING = ("tcgen05.mxf8f6f4", *F4_MODES)
ACCUMULATIONS = ("exact",) + TRUNCATING

#: Fraction bits kept below the largest exponent of a step: each term is truncated toward
#: zero to a multiple of ``2^(e_max - FRACTION_BITS)``.
FRACTION_BITS = 25
#: The alignment exponent of a zero product and of ``c = +-0``.
ZERO_EXPONENT = -133
#: Bits of a truncated term's magnitude in units of ``2^(e_max - 25)``: a product's
#: significand is below 4 (``2^27`` units), ``c``'s below 2 (``2^26``).
TERM_BITS = FRACTION_BITS + 2
#: Bits of the magnitude of the sum of 32 products and ``c``: below ``32 * 2^27 + 2^26``.
SUM_BITS = 33
#: tcgen05.mxf4: elements per group summed exactly; bits of a group's exact sum's magnitude
#: (16 products of at most 36, in units of 2^-2); fraction bits, floor; bits of a truncated
#: group term (the group sum at ``2^(e_max - 35)`` units) and of the sum of two groups and c.
F4_GROUP = 16
F4_GROUP_BITS = 12
F4_FRACTION_BITS, F4_ZERO_EXPONENT = 35, -139
F4_TERM_BITS = F4_GROUP_BITS + F4_FRACTION_BITS - 2
F4_SUM_BITS = F4_TERM_BITS + 2


@dataclass(frozen=True)
class TruncatedKind:
    """What the back end of a truncating step (:mod:`hw.dot.truncated_sum`) needs of its
    mode: terms truncated to multiples of ``2^(e_max - fraction_bits)``, ``e_max`` at least
    ``zero_exponent``, the magnitude of their sum below ``2^sum_bits``."""

    fraction_bits: int
    zero_exponent: int
    sum_bits: int


#: Bits of the signed exponent integers (``e_max``, the scales' exponent sum, distances):
#: every one lies within +-1024.
EXPONENT_BITS = 12

_ANALOGY = "estimate by analogy with the exact step's sections (not yet measured placed): "
_CUT = ("cut to about four LUT levels or one carry chain with a LUT level beside it "
        "(bench.synth.levels), as the exact step's sections")

#: The estimates the truncating steps' registers are placed on (ns, ECP5 speed 8).  Any two
#: neighbouring estimates sum to more than the largest, so the default depth registers every
#: boundary.
ESTIMATES = {
    "decode": Estimate(3.5, _ANALOGY + "the element fields, as the exact step's decode"),
    "multiply_lo": Estimate(3.5, _CUT + ": the first level of the significand products' pair "
                            "sums, the lane specials reduced, x_base"),
    "multiply": Estimate(4, _CUT + ": the products' last level of pair sums beside the first "
                         "level of the maximum tree of the keys (nz_i, l_i)"),
    "emax": Estimate(4, _CUT + ": one radix-2 level of the maximum tree each; with "
                     "the last two levels and P = x_base + K - 1 in one section it was the "
                     "critical path, 26-27 cells, 10 ns, 96.5 MHz"),
    "frame": Estimate(4, _CUT + ": the compares that choose e_max among the products' P, "
                      "c's x_c and the -133 floor, on l_max against distances made before, "
                      "each candidate's distances beside them"),
    "gap": Estimate(3.5, _CUT + ": e_max's distances and e_top selected, c's clamped"),
    "distance": Estimate(3.5, _CUT + ": a short chain per lane, d = G - l_i"),
    "align_hi": Estimate(3.5, _CUT + ": each term's right shift by the high bits of d"),
    "align": Estimate(3.5, _CUT + ": the shift by d's low bits, the ones' complement"),
    "tree": Estimate(3.25, _ANALOGY + "one level of the adder tree, as the exact step's tree"),
    "group": Estimate(3.25, _ANALOGY + "mxf4: one level of a group's exact sum of 16 products; "
                      "beside the first three, e_max's differences, choice and selection (in "
                      "one section of its own, e_max and the distances were the critical path, "
                      "36-47 cells, 16 ns, 63.2 MHz)"),
    "f4_multiply_lo": Estimate(3.5, _CUT + ": mxf4: each lane's significand product and its "
                               "shift (with the negation in one section, seven LUT levels, "
                               "bench.synth.levels; the shift beside the negation, 13 cells, "
                               "5.3 ns, 189.3 MHz)"),
    "f4_scale_lanes": Estimate(3.5, _CUT + ": mxf4nvf4 with UE4M3 scales: each lane's "
                               "sig_a times P, a choice of 0, P, 2P and 3P (in multiply_lo, "
                               "before the product's pair sum and shift, 11 cells, 8.0 ns, "
                               "131.0 MHz)"),
    "f4_multiply": Estimate(3.5, _CUT + ": mxf4: each product negated, a short chain"),
    "f4_align_hi": Estimate(3.5, _CUT + ": mxf4: each group's magnitude, a short negation "
                            "chain, shifted right by the high bits of its distance"),
    "f4_align": Estimate(3.5, _CUT + ": mxf4: the shift by the distance's low bits, the ones' "
                         "complement"),
    "magnitude": Estimate(3.5, _CUT + ": |sum|, a negation chain"),
    "lzc": Estimate(3.5, _CUT + ": per 8-bit chunk of |sum| its leading zeros, and the first "
                    "chunk with a one"),
    "lzc_select": Estimate(3.5, _CUT + ": the first non-zero chunk moved to the top, the "
                           "leading-zero count"),
    "normalize": Estimate(3.5, _CUT + ": the left shift by the count's low bits, and beside "
                          "it the result's top exponent and its negation"),
    "position": Estimate(3.5, _CUT + ": the shift onto fp32's grid and the binade "
                         "(hw.rounding.Grid.position)"),
    "shift_hi": Estimate(3.5, _CUT + ": the right shift onto fp32's grid by the high bits"),
    "shift": Estimate(3.5, _CUT + ": the right shift by the low bits"),
    "round": Estimate(3.5, _CUT + ": the code (binade and significand), overflow, zero"),
    "finish": Estimate(3.5, _CUT + ": the special cases over the code"),
}


def emax_tree_radices(block_size: int) -> list[int]:
    """Radices of the levels of the mxf8f6f4 step's maximum tree over ``block_size`` keys:
    radix 2 throughout (a radix-4 level, six comparisons and a one-hot select, measured six
    LUT levels in one section, bench.synth.levels), the first level in section ``multiply``,
    each other in a section ``emax<j>`` of its own."""
    return [2] * (block_size - 1).bit_length()


def truncated_terms(block_size: int) -> int:
    """Terms of the adder tree: the lanes, ``c`` and the count of negated terms (each is
    added as its ones' complement, :mod:`hw.dot.truncated_step`)."""
    return block_size + 2


def truncated_tree_levels(block_size: int) -> int:
    """Levels of the adder tree over :func:`truncated_terms` (one section each)."""
    return (truncated_terms(block_size) - 1).bit_length()


#: The truncating steps' kinds by ``accumulation``.
KINDS = {"tcgen05.mxf8f6f4": TruncatedKind(FRACTION_BITS, ZERO_EXPONENT, SUM_BITS),
         **dict.fromkeys(F4_MODES, TruncatedKind(F4_FRACTION_BITS, F4_ZERO_EXPONENT,
                                                 F4_SUM_BITS))}

#: The sections of the sum's back end (:mod:`hw.dot.truncated_sum`) after the adder tree.
SUM_SECTIONS = ("magnitude", "lzc", "lzc_select", "normalize", "position", "shift_hi", "shift",
                "round", "finish")

#: The mxf8f6f4 step's sections in datapath order, ``tree`` standing for one section per
#: level of the adder tree and ``emax`` for one per level of the maximum tree after the first
#: (:func:`truncated_sections`).
TRUNCATED_SECTIONS = ("decode", "multiply_lo", "multiply", "emax", "frame", "gap", "distance",
                      "align_hi", "align", "tree", *SUM_SECTIONS)

#: The mxf4 step's sections (one block of 32: two groups of 16): ``group<j>`` one level of the
#: groups' exact sums each, ``tree<j>`` the levels over the two groups, c and the count;
#: ``f4_scale_lanes`` with UE4M3 scales only.
F4_SECTIONS = ("decode", "f4_scale_lanes", "f4_multiply_lo", "f4_multiply", "group",
               "f4_align_hi", "f4_align", "tree", *SUM_SECTIONS)


def truncated_sections(geometry: DotGeometry, *, forwarded_c: bool = False,
                       accumulation: str = "tcgen05.mxf8f6f4") -> dict:
    """The truncating step's sections for ``geometry`` and ``accumulation`` (name ->
    estimated delay, ns), one ``tree<j>`` per level of the adder tree (and for mxf4 one
    ``group<j>`` per level of the groups' sums); with ``forwarded_c`` (MXDotGeneral)
    ``decode`` weighs :data:`hw.dot.sections.FORWARD_DELAY` more, as in
    :func:`hw.dot.sections.dot_sections`."""
    f4 = accumulation in F4_MODES
    names = F4_SECTIONS if f4 else TRUNCATED_SECTIONS
    if geometry.scale_sig_max == 1:  # E8M0 scales: no significand product to choose
        names = tuple(name for name in names if name != "f4_scale_lanes")
    # mxf4 over a run (forwarded_c): its 64-element step's four groups, c and the count
    levels = {"tree": (3 if forwarded_c else 2) if f4 else truncated_tree_levels(
                  geometry.block_size),
              "group": (F4_GROUP - 1).bit_length()}
    if not f4:
        levels["emax"] = len(emax_tree_radices(geometry.block_size)) - 1
    sections = {}
    for name in names:
        estimate = ESTIMATES[name]
        if name in levels:
            first = 1 if name == "emax" else 0  # the maximum tree's level 0 is multiply's
            sections.update({f"{name}{j}": estimate.ns
                             for j in range(first, first + levels[name])})
            continue
        delay = estimate.ns + (FORWARD_DELAY if name == "decode" and forwarded_c else 0)
        sections[name.removeprefix("f4_")] = delay
    return sections
