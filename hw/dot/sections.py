"""The fused step's sections: their names in datapath order, their estimated delays, and the
splits a format pair's widths call for.

* :data:`DOT_SECTIONS` and :func:`dot_sections` -- the sections of a geometry, with delays.
* :func:`tree_levels`, :func:`tree_sections`, :func:`tree_split_bits` -- the block sum's
  adder tree over its sections.
* :func:`lane_shift_bits` -- bits of a lane's shift.
* :data:`MULTIPLIERS`, :data:`PRIMITIVES` -- the ways to build the lane products.
"""

from __future__ import annotations

from .geometry import DotGeometry

__all__ = ["DOT_SECTIONS", "FORWARD_DELAY", "FRAME_STEPS", "SIGN_COPY_BITS", "SPLIT_ADD_BITS",
           "SPLIT_LANE_SHIFT_BITS", "SPLIT_MULTIPLY_BITS", "SPLIT_TREE_BITS", "TREE_FRAME_DELAY",
           "MULTIPLIERS", "PRIMITIVES", "dot_sections", "lane_shift_bits", "tree_levels",
           "tree_sections", "tree_split_bits"]

#: The fused step's sections in datapath order, with their estimated delays on ECP5 (ns,
#: k = 32 fp8 x fp8).  :func:`hw.pipeline.place_registers` balances the pipeline stages with
#: these weights.  ``tree`` stands for one section per level of the block sum's adder tree
#: (:func:`dot_sections`); ``lane_shift`` is there only for wide lane shifts
#: (:data:`SPLIT_LANE_SHIFT_BITS`).  The estimates of 2026-11-24 and 25 came from per-section
#: builds and from the stages measured in context (decode from the input port registers;
#: ``finish``, round register -> finish register, 5.3 ns at fp6_e3m2, 15 stages, where an
#: estimate of 3 let the balancer merge round and finish: 7.6 ns at int8 x int8).  Since
#: 2026-11-26 every section is cut to at most about four LUT levels or one carry chain with a
#: LUT level before or after it, which is what 5 ns holds on ECP5 (a LUT level and its route
#: cost 0.9-1.1 ns): measured at fp8_e4m3, 19 stages, the worst stages of nextpnr seeds 1-3
#: are 5.0-5.4 ns whichever section they are in.  Any two neighbouring estimates add up to
#: more than the largest, so the default depth registers every boundary of a block sum of
#: three or more levels.  Below it, the pairs the balancer merges were measured (fp8_e4m3,
#: seed 1, 2026-11-26): add and pick in one stage 6.8-6.9 ns (at 12 and 16 stages, 147.3 and
#: 145.4 MHz: the sweep fell from 12 to 16), two tree levels 5.0-5.5 (at 16 stages before the
#: cut, 2026-11-25): so a tree level weighs 3.25, less than the others (two of them still
#: more than decode), and add, a window-wide carry chain, 4.5.  Placed with these (seed 1):
#: two tree levels 6.2 ns at 16 stages (162.7 MHz), three 9.2 at 9 (108.6; was 128.7 with
#: the former weights, and 5 stages 66.6 against 74.9, 8 108.2 against 96.6): the sweep rises
#: at every point, but the weights are still two measurements deep.  Since session 44 (trial)
#: decode is two sections, the element fields (decode) and the wide factor's sign (factors,
#: a carry chain), 6 split as 3.5 + 3: every stage of fp8_e4m3 at three LUT levels or fewer.
DOT_SECTIONS = {"decode": 3.5, "factors": 3, "multiply": 5, "lane_shift": 4, "product": 4,
                "tree": 3.25, "place": 3.5, "align_hi": 4, "align_lo": 4, "add": 4.5, "pick": 4,
                "lzc": 4, "shift_hi": 4, "shift_lo": 5, "round": 4, "finish": 5}

#: Estimated delay (ns) the accumulator's forwarding path adds to ``decode`` where ``c`` comes
#: from it (MXDotGeneral: the context compare and two muxes before c's tests): at 18 stages,
#: with decode and factors in one stage, finish -> factors.c_nan was the worst path on two of
#: six placements (7 cells, 1.66 ns logic + 5.0-5.4 ns routing; fp8_e4m3, k = 32, 14 and 18
#: stages, nextpnr seeds 1-3, 2026-11-27), 0.2-0.6 ns longer than two tree levels (6.5-6.7
#: ns), which the same estimate of 6.5 puts on a par with decode and factors.  In MXDot c
#: comes from the input register and its tests are three cells.  0.6, not 0.5: at 18 stages
#: the merge it then avoids (decode and factors, 7.1) weighs more than the one the balancer
#: takes instead (multiply and lane_shift, 7; 6.45 ns or less in MXDot at 14 stages), not
#: the same, which left the choice to the tie-break; every pair places the same registers at
#: every depth with either.  With it, fp8_e4m3 at 18 stages measured 161.3 MHz (153.1-163.6)
#: against 148.8 (141.7-154.5), at 14 157.9 (156.7-162.3) against 151.4 (150.2-154.9), at 5
#: 77.0 (73.9-78.1) against 82.3 (82.1-83.1): there the placement's tie-break moved too.
FORWARD_DELAY = 0.6

#: Estimated delay (ns) of a tree section without a level of its own (k < 8: fewer levels
#: than the frame's three steps, below): the frame's muxes alone.
TREE_FRAME_DELAY = 1.5

#: Windows wider than this many bits are summed in two halves, with the boundary ``add_lo``
#: between them (:func:`dot_sections`).  The window add's stage grows with the window
#: (measured, every boundary registered, k = 32, median of nextpnr seeds 1-3: 5.9 ns at 54
#: bits, fp8_e4m3 x fp4_e2m1; 6.1 at 68, fp8_e4m3; 7.1 at 96, fp8_e5m2).  Split, fp8_e5m2
#: went from 141.8 to 154.6 MHz (16 stages against 15).  fp8_e4m3 (68 bits) is not split:
#: with MXDot's registered stall it gives 170.9 MHz at 16 stages against 168.7 at 15
#: unsplit, within the seeds' spread, for a cycle and 114 LUT4; MXDotGeneral's fp8_e4m3
#: split gives 164.6 against 160.0, but its accumulator loop is a cycle longer, so one run
#: alone takes 97.2 ns per block against 93.8 (docs/dot.md).  The bound lies where the add's
#: estimate (0.034 ns per bit above 54 bits) reaches the dot's next longest stages, about
#: 6.3 ns: near 75 bits.
SPLIT_ADD_BITS = 64

#: Block sums wider than this many bits (``sum_bits + 1``: at k = 32 fp8_e5m2 x fp8_e5m2, 70)
#: are summed in halves, the high halves one tree section after the low ones
#: (:func:`tree_split_bits`): every chain of the tree is then half as long, for one more
#: section.  A tree level is one carry chain as wide as the sum, and its delay grows with it
#: (measured, k = 32, every boundary registered, medians of nextpnr seeds 1-3: fp8_e4m3's
#: 42-bit levels allow 252.8 MHz; fp8_e5m2's 70-bit ones bound it at 198.6 MHz, tree3 ->
#: tree4, 69 cells, 2.95 ns logic + 2.1 ns routing, on every seed).
SPLIT_TREE_BITS = 64


#: LUT lane products with a narrow factor wider than this many bits (3 or more partial-product
#: rows: two or more levels of pair sums, :func:`hw.arith.pair_sums`) spread the levels over
#: the sections, with the boundary ``multiply_lo`` (:func:`dot_sections`): every pair but those
#: with fp4_e2m1, whose narrower factor has 2 bits.  Was 3 until 2026-11-26 (session 39): with
#: the tree's spine at a leaf, fp8_e5m2's three rows (a LUT and two chains in one stage) were
#: its worst path (decode -> multiply, 7 cells, 2.0 ns logic + 3.2 ns routing).  fp8_e4m3's two
#: levels in one stage, with the rows' LUT before them, were its worst path once the other
#: sections were cut (decode -> multiply, 5-10 cells, 1.9-2.1 ns logic + 3.0-3.3 ns routing,
#: 19 stages); int8 x int8, eight rows from its signed codes, has one level in decode, one in
#: multiply_lo, one in multiply (with the seven rows in one stage, 11 cells, 2.1 ns logic +
#: 4.5 ns routing, 152.1 MHz).
SPLIT_MULTIPLY_BITS = 2


#: Lane shifts (``shift_a + shift_b``) of more bits than this are split: the low 3 bits shift
#: the narrow product in the section ``lane_shift``, the high ones the wider result in
#: ``product`` (:func:`dot_sections`): pairs with an fp8 or fp6_e3m2 operand (exponent fields of
#: 3 or more bits).  In one stage with the lane specials, the shift was fp8_e4m3's worst path
#: (multiply -> product, 5 cells, 1.3 ns logic + 4.2 ns routing at 16 stages).  The narrow
#: product goes first: its low bits then shift 10-15 bits, not 37-65 (fp8_e5m2 placed 11,463
#: LUT4 with the high bits first, 7,157 with the low ones).
SPLIT_LANE_SHIFT_BITS = 3

#: The frame of ``c + T`` (the anchor and the shift distance) takes three steps beside the
#: block sum's adder tree, one per tree section: a block of fewer than 8 elements still has
#: three tree sections, some without a level of the tree.
FRAME_STEPS = 3

#: ``|S|`` is chosen bit by bit by the sign of the block sum ``S``: one register of the sign
#: per this many bits of ``|S|`` (:meth:`hw.pipeline.Pipeline.replicate`).  One register
#: drove 43 LUTs at fp8_e4m3, a worst path at 22 stages (tree4 -> place, 3 cells, 0.9 ns of
#: logic and 3.5 ns of routing).
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
    :data:`SPLIT_LANE_SHIFT_BITS` bits; ``add_lo`` (the low halves of the window sums) before
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
        if name == "decode" and forwarded_c:
            delay += FORWARD_DELAY
        if name == "add" and split_add:
            # 7.1 ns measured in one stage; a carry hop between the halves
            sections["add_lo"] = 3.5
            delay = 4
        if name == "multiply" and multipliers == "mult18x18d":
            # routes to and from the DSP column around the block's own multiply stage
            sections.update(operands=3.5, multiply=3.5, drain=3.5)
            continue
        if name == "multiply" and split_multiply:
            # multiply_lo is one level of pair sums, a chain with the rows' ANDs in its carry
            # cells, as add's chain (it was 5, for two levels with the rows' LUT before them,
            # until 2026-11-27: with 5, 9 stages put three tree levels in one stage, tree0 ->
            # tree3, 107.7 MHz against 119.1 at 8; with 4, 9 stages refine 8's stages)
            sections["multiply_lo"] = 4
            delay = 3
        sections[name] = delay
    return sections


#: The ways :func:`hw.dot.fused_step.build_fused_step` can build the lane products.
MULTIPLIERS = ("lut", "dsp", "mult18x18d")
#: The vendor cells each way instantiates (simulation needs their models: hw.dsp).
PRIMITIVES = {"lut": (), "dsp": (), "mult18x18d": ("MULT18X18D",)}
