"""The fused step's sections: their names in datapath order, their estimated delays, and the
splits a format pair's widths call for.

* :data:`ESTIMATES` -- each section's estimated delay (:class:`hw.placement.Estimate`) with
  its one-line provenance (what it was measured on).
* :data:`DOT_SECTIONS` and :func:`dot_sections` -- the sections of a geometry, with delays.
* :func:`tree_levels`, :func:`tree_sections`, :func:`tree_split_bits` -- the block sum's
  adder tree over its sections.
* :func:`lane_shift_bits` -- bits of a lane's shift.
* :data:`MULTIPLIERS`, :data:`PRIMITIVES` -- the ways to build the lane products.
"""

from __future__ import annotations

from ..placement import Estimate
from .geometry import DotGeometry

__all__ = ["DOT_SECTIONS", "ESTIMATES", "FORWARD_DELAY", "FRAME_STEPS", "SIGN_COPY_BITS",
           "SPLIT_ADD_BITS", "SPLIT_LANE_SHIFT_BITS", "SPLIT_MULTIPLY_BITS", "SPLIT_TREE_BITS",
           "TREE_FRAME_DELAY", "MULTIPLIERS", "PRIMITIVES", "Estimate", "dot_sections",
           "lane_shift_bits", "tree_levels", "tree_sections", "tree_split_bits"]


#: What a section cut to the 5 ns class measures: on ECP5 a LUT level and its route cost
#: 0.9-1.1 ns, so a section holds at most four LUT levels, or one carry chain with a LUT
#: level before or after it.
_CUT = ("cut to four LUT levels or one chain with a LUT level; the worst stages of "
        "fp8_e4m3 x fp8_e4m3, k = 32, 19 stages, nextpnr seeds 1-3: 5.0-5.4 ns in any section")
_CHAIN = "one carry chain alone, weighed as add's: fp8_e4m3 x fp8_e4m3, k = 32, seeds 1-3"

#: The estimates the fused step's registers are placed on, by section (ns, ECP5 speed 8, in
#: context).  ``tree`` is one level of the block sum's adder tree; the ``split_`` entries
#: replace a section where a wide pair splits it (:func:`dot_sections`).  Any two
#: neighbouring estimates sum to more than the largest, so the default depth registers every
#: boundary of a block sum of three or more levels.
ESTIMATES = {
    "decode": Estimate(3.5, "the element fields, three LUT levels from the input registers "
                       "(fp8_e4m3 x fp8_e4m3, k = 32, 22 stages, seeds 1-3)"),
    "scale_product": Estimate(2.5, "NVFP4: the last add of the UE4M3 significands' product "
                              "P and of 3P, one 10-bit chain between registers (in decode "
                              "with the fields and the first level of adds, input -> decode "
                              "was nvfp4's worst path, 7 cells, 1.8 ns logic + 3.8 ns "
                              "routing, k = 16, 18 stages, seeds 1-3)"),
    "factors": Estimate(3, "the wide factor's negation chain; decode and factors in one stage "
                        "weigh 6.5 (fp8_e4m3 x fp8_e4m3, k = 32, 22 stages, seeds 1-3)"),
    "multiply": Estimate(5, _CUT),
    "lane_shift": Estimate(4, _CUT),
    "product": Estimate(4, _CUT),
    "tree": Estimate(3.25, "two tree levels in one stage 5.0-5.5 ns against 6.8-6.9 for add "
                     "and pick (fp8_e4m3, k = 32, 12 and 16 stages, seed 1)"),
    "place": Estimate(3.5, _CUT),
    "align_hi": Estimate(4, _CUT),
    "align_lo": Estimate(4, _CUT),
    "add": Estimate(4.5, "a window-wide carry chain: add and pick in one stage 6.8-6.9 ns "
                    "(fp8_e4m3, k = 32, 12 and 16 stages, seed 1)"),
    "pick": Estimate(4, _CUT),
    "lzc": Estimate(4, _CUT),
    "shift_hi": Estimate(4, _CUT),
    "shift_lo": Estimate(5, _CUT),
    "round": Estimate(4, _CUT),
    "finish": Estimate(5, "round register -> finish register 5.3 ns (fp6_e3m2 x fp6_e3m2, "
                       "k = 32, 15 stages, seed 1); 3 let round and finish merge, 7.6 ns"),
    "split_add_lo": Estimate(3.5, "the low halves' chains; add at 96 bits measured 7.1 ns in "
                             "one stage (fp8_e5m2 x fp8_e5m2, k = 32, seeds 1-3)"),
    "split_add": Estimate(4, "the high halves' chains with the low carries in (fp8_e5m2 x "
                          "fp8_e5m2, k = 32, seeds 1-3)"),
    "split_multiply_lo": Estimate(4, _CHAIN + "; 5 put three tree levels in one stage at "
                                  "9 stages (tree0 -> tree3, 9.3 ns)"),
    "split_multiply": Estimate(3, "the last level of pair sums (fp8_e4m3, k = 32, seeds 1-3)"),
    "dsp_operands": Estimate(3.5, "the route into the DSP column alone bound int8 x int8 at "
                             "16 stages: 1.3 ns logic + 3.9 ns routing (seed 1)"),
    "dsp_multiply": Estimate(3.5, "the MULT18X18D between its own registers: 3.46 ns"),
    "dsp_drain": Estimate(3.5, "the route back from the DSP column alone bound fp8_e4m3 at "
                          "16 stages: 1.5 ns logic + 4.5 ns routing (seed 1)"),
    "forward": Estimate(0.6, "MXDotGeneral's forwarded c: finish -> factors.c_nan 6.7-7.1 ns "
                        "(fp8_e4m3, k = 32, 14 and 18 stages, seeds 1-3)"),
    "tree_frame": Estimate(1.5, "a tree section without a level (k < 8): the frame's muxes "
                           "alone"),
}

#: The fused step's sections in datapath order with their estimated delays (ns): the
#: :data:`ESTIMATES` of the sections every pair has, ``tree`` standing for one section per
#: level of the adder tree (:func:`dot_sections`), ``lane_shift`` there only for wide lane
#: shifts (:data:`SPLIT_LANE_SHIFT_BITS`) and ``scale_product`` only for UE4M3 scales (NVFP4,
#: :func:`hw.dot.nvfp4_scale.scale_multiples`).
DOT_SECTIONS = {name: ESTIMATES[name].ns for name in (
    "decode", "scale_product", "factors", "multiply", "lane_shift", "product", "tree", "place",
    "align_hi", "align_lo", "add", "pick", "lzc", "shift_hi", "shift_lo", "round", "finish")}

#: Estimated delay (ns) the accumulator's forwarding path adds to ``decode`` where ``c`` comes
#: from it (MXDotGeneral: the context compare and two muxes before c's tests; in MXDot c comes
#: from the input register).  0.6 rather than 0.5: at 18 stages the merge it avoids (decode
#: and factors) then weighs more than the one the balancer takes instead (multiply and
#: lane_shift), not the same, so the choice is not left to the tie-break.
FORWARD_DELAY = ESTIMATES["forward"].ns

#: Estimated delay (ns) of a tree section without a level of its own (k < 8: fewer levels
#: than the frame's three steps, below): the frame's muxes alone.
TREE_FRAME_DELAY = ESTIMATES["tree_frame"].ns

#: Windows wider than this many bits are summed in two halves, with the boundary ``add_lo``
#: between them (:func:`dot_sections`): at k = 32 fp8_e4m3 x fp8_e4m3 (68 bits) and the
#: fp8_e5m2 pairs but x fp4_e2m1.  The window add's stage grows with the window (every
#: boundary registered, k = 32, medians of nextpnr seeds 1-3: 5.9 ns at 54 bits, 6.1 at 68,
#: 7.1 at 96); with every other section at three LUT levels the 68-bit chain is the longest.
SPLIT_ADD_BITS = 64

#: Block sums wider than this many bits (``sum_bits + 1``: at k = 32 fp8_e5m2 x fp8_e5m2, 70)
#: are summed in halves, the high halves one tree section after the low ones
#: (:func:`tree_split_bits`): every chain of the tree is then half as long, for one more
#: section.  A tree level is one carry chain as wide as the sum, and its delay grows with it
#: (k = 32, every boundary registered, medians of nextpnr seeds 1-3: fp8_e4m3's 42-bit levels
#: allow 252.8 MHz; fp8_e5m2's 70-bit ones unsplit bound it at 198.6 MHz, tree3 -> tree4,
#: 69 cells, 2.95 ns logic + 2.1 ns routing).
SPLIT_TREE_BITS = 64


#: LUT lane products with a narrow factor wider than this many bits (3 or more partial-product
#: rows: two or more levels of pair sums, :func:`hw.multiply.pair_sums`) spread the levels over
#: the sections, with the boundary ``multiply_lo`` (:func:`dot_sections`): every pair but those
#: with fp4_e2m1, whose narrower factor has 2 bits.  Two levels with the rows' LUT before them
#: in one stage measure 5-10 cells, 1.9-2.1 ns logic + 3.0-3.3 ns routing (fp8_e4m3, 4 rows,
#: 19 stages); three rows, 7 cells, 2.0 + 3.2 ns (fp8_e5m2).  int8 x int8, eight rows from
#: its signed codes, has one level in decode, one in multiply_lo, one in multiply.
SPLIT_MULTIPLY_BITS = 2


#: Lane shifts (``shift_a + shift_b``) of more bits than this are split: the low 3 bits shift
#: the narrow product in the section ``lane_shift``, the high ones the wider result in
#: ``product`` (:func:`dot_sections`): pairs with an fp8 or fp6_e3m2 operand (exponent fields of
#: 3 or more bits).  In one stage with the lane specials, the shift measures 5 cells, 1.3 ns
#: logic + 4.2 ns routing (fp8_e4m3, 16 stages).  The narrow product goes first: its low bits
#: then shift 10-15 bits, not 37-65 (fp8_e5m2: 7,157 LUT4 against 11,463 the other way round).
SPLIT_LANE_SHIFT_BITS = 3

#: The frame of ``c + T`` (the anchor and the shift distance) takes three steps beside the
#: block sum's adder tree, one per tree section: a block of fewer than 8 elements still has
#: three tree sections, some without a level of the tree.
FRAME_STEPS = 3

#: ``|S|`` is chosen bit by bit by the sign of the block sum ``S``: one register of the sign
#: per this many bits of ``|S|`` (:meth:`hw.pipeline.Pipeline.replicate`).  One register
#: driving 43 LUTs measures 0.9 ns of logic and 3.5 ns of routing (fp8_e4m3, tree4 -> place,
#: 22 stages).
SIGN_COPY_BITS = 8


def tree_levels(block_size: int) -> list[range]:
    """The adder-tree levels (``log2(block_size)`` in all) in each tree section: one level per
    section, or none in the sections beyond the levels of a small block."""
    depth = (block_size - 1).bit_length()
    count = max(FRAME_STEPS, depth)
    return [range(round(j * depth / count), round((j + 1) * depth / count))
            for j in range(count)]


def tree_split_bits(geometry: DotGeometry) -> int:
    """Bits of the low halves where the block sum is summed in halves (wider than
    :data:`SPLIT_TREE_BITS`), else 0."""
    width = geometry.sum_bits + 1
    return -(-width // 2) if width > SPLIT_TREE_BITS else 0


def tree_sections(geometry: DotGeometry) -> list[range]:
    """The adder-tree levels in each tree section (:func:`tree_levels`), with one more
    section, without a level, where the sum is split (:func:`tree_split_bits`): there the
    high halves of the last level are summed."""
    levels = tree_levels(geometry.block_size)
    return [*levels, range(0)] if tree_split_bits(geometry) else levels


def lane_shift_bits(geometry: DotGeometry) -> int:
    """Bits of a lane's shift ``shift_a + shift_b``: one more than the wider exponent field
    (a float element's shift has as many bits as its exponent field,
    :func:`hw.elements.decode_element`; int8's has 2, against a partner of 2 or more); 0 where
    both operands are two's complement codes, whose products need no shift."""
    fmt_a, fmt_b = geometry.fmt_a, geometry.fmt_b
    if fmt_a.twos_complement and fmt_b.twos_complement:
        return 0
    return max(fmt_a.ebits, fmt_b.ebits) + 1


def dot_sections(geometry: DotGeometry, multipliers: str = "lut", *,
                 forwarded_c: bool = False) -> dict[str, float]:
    """The fused step's sections for ``geometry``: :data:`DOT_SECTIONS`, with one tree section
    per level of the adder tree (:func:`tree_levels`; a section without a level weighs
    :data:`TREE_FRAME_DELAY`); ``lane_shift`` where the lane shift has more than
    :data:`SPLIT_LANE_SHIFT_BITS` bits; ``scale_product`` (the last add of the UE4M3 scales'
    significand product) for NVFP4; ``add_lo`` (the low halves of the window sums) before
    ``add`` where the window is wider than :data:`SPLIT_ADD_BITS`; ``multiply_lo`` (a level
    of the partial products' pair sums) before ``multiply`` where LUT products have a narrow
    factor wider than :data:`SPLIT_MULTIPLY_BITS`; and for MULT18X18D blocks ``operands``
    and ``drain`` around ``multiply`` (:mod:`hw.dsp`).  With ``forwarded_c`` (``c`` from an
    accumulator's forwarding path, MXDotGeneral) ``decode`` weighs :data:`FORWARD_DELAY`
    more."""
    split_add = geometry.window_bits > SPLIT_ADD_BITS
    split_multiply = multipliers == "lut" and geometry.narrow_bits > SPLIT_MULTIPLY_BITS
    split_lane_shift = lane_shift_bits(geometry) > SPLIT_LANE_SHIFT_BITS
    signed_codes = geometry.fmt_a.twos_complement and geometry.fmt_b.twos_complement
    sections = {}
    for name, delay in DOT_SECTIONS.items():
        if name == "tree":
            # a section sums where it holds a level, or the high halves of the one before
            trees = tree_sections(geometry)
            split_tree = bool(tree_split_bits(geometry))
            sections.update({
                f"tree{j}": delay if levels or (split_tree and j and trees[j - 1])
                else TREE_FRAME_DELAY for j, levels in enumerate(trees)})
            continue
        if name == "lane_shift" and not split_lane_shift:
            continue
        if name == "factors" and signed_codes:
            continue
        if name == "scale_product" and geometry.scale_format != "ue4m3":
            continue
        if name == "decode" and forwarded_c:
            delay += FORWARD_DELAY
        if name == "add" and split_add:
            sections["add_lo"] = ESTIMATES["split_add_lo"].ns
            delay = ESTIMATES["split_add"].ns
        if name == "multiply" and multipliers == "mult18x18d":
            # routes to and from the DSP column around the block's own multiply stage
            sections.update(operands=ESTIMATES["dsp_operands"].ns,
                            multiply=ESTIMATES["dsp_multiply"].ns,
                            drain=ESTIMATES["dsp_drain"].ns)
            continue
        if name == "multiply" and split_multiply:
            # multiply_lo is one level of pair sums, a chain with the rows' ANDs in its carry
            # cells
            sections["multiply_lo"] = ESTIMATES["split_multiply_lo"].ns
            delay = ESTIMATES["split_multiply"].ns
        sections[name] = delay
    return sections


#: The ways :func:`hw.dot.fused_step.build_fused_step` can build the lane products.
MULTIPLIERS = ("lut", "dsp", "mult18x18d")
#: The vendor cells each way instantiates (simulation needs their models: hw.dsp).
PRIMITIVES = {"lut": (), "dsp": (), "mult18x18d": ("MULT18X18D",)}
