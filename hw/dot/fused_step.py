"""The fused block step of the dot units, section by section over a :class:`Pipeline`.

``RNE_fp32(c + 2^(sa+sb-254) * sum_i a_i*b_i)`` for one block pair (``docs/numerics.md``
section 5); the arithmetic is the bit-level statement of ``golden._kernels.dot_step`` and is
explained, with the exactness argument of the window, in ``docs/dot.md``.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.utils import bits_for

from golden.formats import FP32, SCALE_NAN

from ..arith import (
    add_with_carry,
    any_of_kept,
    kept,
    leading_zeros,
    less_than_const,
    pair_sum_tree,
    pair_sums,
    partial_products,
    wire,
)
from ..dsp import mult18x18d
from ..elements import decode_element, signed_significand
from ..pipeline import Pipeline
from ..rounding import RNE, overflows, round_increment
from .geometry import GUARD, DotGeometry

__all__ = ["DOT_SECTIONS", "FORWARD_DELAY", "FRAME_STEPS", "SIGN_COPY_BITS", "SPLIT_ADD_BITS",
           "SPLIT_LANE_SHIFT_BITS", "SPLIT_MULTIPLY_BITS", "SPLIT_TREE_BITS", "TREE_FRAME_DELAY",
           "MULTIPLIERS", "PRIMITIVES", "BlockSum", "SplitBlockSum", "dot_sections",
           "lane_shift_bits", "tree_levels", "tree_sections", "tree_split_bits",
           "build_fused_step"]

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


class BlockSum:
    """The block sum's adder tree, level by level, and beside it ``S - 1`` on the tree's last
    spine (:func:`build_fused_step`, sections 4.-6.).

    Parameters
    ----------
    terms : list of Value
        The exact signed lane terms, the last one as ``t - 1``.
    width : int
        ``sum_bits``: the sums are ``width + 1`` bits at each section's end.

    Members
    -------
    sign : Value
        The sign of the first partial sum (after the last level: of ``S``).
    total, minus : Value
        After the last section: ``S`` and ``S - 1``.
    """

    def __init__(self, terms, width: int):
        self._level, self._minus, self._width = list(terms), None, width

    def begin_section(self):
        pass

    def add_level(self):
        level = self._level
        pairs = [(level[i] + level[i + 1]).as_signed() for i in range(0, len(level), 2)]
        if self._minus is None:  # level[-1] is t - 1
            self._minus = (level[-2] + level[-1]).as_signed()
            # written as x + ((t - 1) + 1), not minus + 1, which yosys would build from
            # minus's chain (it merges equal sums): one chain with a carry in (x + t, as
            # wide as the other pair sums)
            pairs[-1] = (level[-2] + (level[-1] + 1))[:len(pairs[0])].as_signed()
        else:
            self._minus = (level[-2] + self._minus).as_signed()
        self._level = pairs

    def end_section(self):
        w = self._width
        self._level = [v.as_signed()[:w + 1].as_signed() for v in self._level]
        if self._minus is not None:
            self._minus = self._minus.as_signed()[:w + 1].as_signed()

    @property
    def sign(self):
        return self._level[0][-1]

    def fields(self) -> dict:
        """The values to carry over a section boundary."""
        return {"terms": self._level, "minus": self._minus}

    def reread(self, s):
        """Continue from ``s``, the boundary's view of :meth:`fields`."""
        self._level = [s.terms[i] for i in range(len(self._level))]
        self._minus = None if self._minus is None else s.minus

    @property
    def total(self):
        return self._level[0]

    @property
    def minus(self):
        return self._minus


class SplitBlockSum:
    """:class:`BlockSum` in halves, for sums wider than :data:`SPLIT_TREE_BITS`: a level's
    low halves (``split`` bits) in its own section, each sum ``split + 1`` bits with its
    carry out; its high halves in the next section, with that carry in
    (:func:`hw.arith.add_with_carry`), beside the next level's low halves.  Every chain is
    then about half the sum wide, and one more section (:func:`tree_sections`) sums the last
    level's high halves.

    Parameters
    ----------
    terms, width
        As :class:`BlockSum`'s.
    split : int
        Bits of the low halves (:func:`tree_split_bits`), ``1..width``.

    Members
    -------
    As :class:`BlockSum`'s.
    """

    def __init__(self, terms, width: int, split: int):
        if not 0 < split <= width:
            raise ValueError(f"split must be in 1..{width}, got {split}")
        h = self._split = split
        self._high_bits = width + 1 - h
        full = [Cat(t, t[-1].replicate(width + 1 - len(t))) for t in terms]
        self._lows, self._highs = [t[:h] for t in full], [t[h:] for t in full]
        # While a level's high sums wait for the next section, highs[i] and pending[i] are the
        # operands of high sum i, whose carry in is lows[i][h] (likewise minus_hi,
        # minus_pending and minus_lo); otherwise pending is None and Cat(lows[i], highs[i])
        # is term i.
        self._pending = None
        self._minus_lo = self._minus_hi = self._minus_pending = None

    def begin_section(self):
        if self._pending is None:
            return
        h, wh = self._split, self._high_bits  # the high halves of the level before
        self._highs = [add_with_carry(a, b, lo[h])[:wh]
                       for a, b, lo in zip(self._highs, self._pending, self._lows, strict=True)]
        self._lows = [lo[:h] for lo in self._lows]
        self._minus_hi = add_with_carry(self._minus_hi, self._minus_pending,
                                        self._minus_lo[h])[:wh]
        self._minus_lo = self._minus_lo[:h]
        self._pending = self._minus_pending = None

    def add_level(self):
        lows, highs = self._lows, self._highs
        pairs = [lows[i] + lows[i + 1] for i in range(0, len(lows), 2)]
        if self._minus_lo is None:  # lows[-1] is the low half of t - 1
            self._minus_lo, self._minus_pending = lows[-2] + lows[-1], highs[-1]
            pairs[-1] = add_with_carry(lows[-2], lows[-1], Const(1, 1))
        else:
            self._minus_lo, self._minus_pending = lows[-2] + self._minus_lo, self._minus_hi
        self._minus_hi = highs[-2]
        self._lows, self._highs, self._pending = pairs, highs[0::2], highs[1::2]

    def end_section(self):
        pass

    @property
    def sign(self):
        return self._highs[0][-1]

    def fields(self) -> dict:
        """The values to carry over a section boundary."""
        return {"lows": self._lows, "highs": self._highs, "pending": self._pending,
                "minus_lo": self._minus_lo, "minus_hi": self._minus_hi,
                "minus_pending": self._minus_pending}

    def reread(self, s):
        """Continue from ``s``, the boundary's view of :meth:`fields`."""
        self._lows = [s.lows[i] for i in range(len(self._lows))]
        self._highs = [s.highs[i] for i in range(len(self._highs))]
        if self._pending is not None:
            self._pending = [s.pending[i] for i in range(len(self._pending))]
        if self._minus_lo is not None:
            self._minus_lo, self._minus_hi = s.minus_lo, s.minus_hi
        if self._minus_pending is not None:
            self._minus_pending = s.minus_pending

    @property
    def total(self):
        return Cat(self._lows[0], self._highs[0]).as_signed()

    @property
    def minus(self):
        return Cat(self._minus_lo, self._minus_hi).as_signed()


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


#: The ways :func:`build_fused_step` can build the lane products.
MULTIPLIERS = ("lut", "dsp", "mult18x18d")
#: The vendor cells each way instantiates (simulation needs their models: hw.dsp).
PRIMITIVES = {"lut": (), "dsp": (), "mult18x18d": ("MULT18X18D",)}


def build_fused_step(m: Module, pipe: Pipeline, geometry: DotGeometry, a, b, c, side=None,
                     *, multipliers: str = "lut"):
    """Build the fused step into ``m``, crossing every boundary of :func:`dot_sections` on
    ``pipe``.

    Parameters
    ----------
    m : Module
    pipe : Pipeline
        Declared with :func:`dot_sections` of ``geometry``; its ``connect`` is left to the
        caller.
    geometry : DotGeometry
    a, b : View
        One block of each operand (:func:`hw.elements.block_layout`).
    c : Value
        fp32 bits of the accumulator input.
    side : dict of str to Value, optional
        Values that ride along unchanged (MXDotGeneral: ``ctx``, ``last``); a ``last`` field
        also makes only last blocks wait at the output (:meth:`Pipeline.hold_when`).
    multipliers : {"lut", "dsp"}
        How the lane significand products are built: ``"lut"`` as sums of partial products
        in LUTs and carry chains (:func:`hw.arith.partial_product_sum`), ``"dsp"`` as ``*``,
        which yosys maps to DSP multipliers (ECP5 MULT18X18D, one per lane).  Same function.

    Returns
    -------
    View
        ``result`` (fp32 bits) and ``side`` (if given), after the last boundary.
    """
    g = geometry
    fmt_a, fmt_b, k = g.fmt_a, g.fmt_b, g.block_size
    wp, w = g.product_bits, g.sum_bits
    n = g.window_bits
    nb = bits_for(n)  # bits of a shift amount 0..n
    np_ = -(-n // 8) * 8  # the window padded below to whole 8-bit chunks for normalizing
    pad, nc = np_ - n, np_ // 8

    def cross(fields, name):  # a section boundary: one struct signal, maybe a register
        return pipe.boundary(wire(m, fields, name), name)

    def specials(s):  # the special-value summary and c, carried from `product` to `round`
        return {"nan": s.nan, "inf": s.inf, "inf_neg": s.inf_neg, "c": s.c,
                "c_zero": s.c_zero, "side": s.side if side else None}

    # 1. decode: element fields; per lane the product's two factors (or, for int8 x int8
    #    LUT products, the first level of their sum), their shifts, and the lane's specials;
    #    from the scales: the frame when T anchors.  c passes undecoded (in MXDotGeneral it
    #    comes from the accumulator forwarding path).
    # Two's complement codes on both sides (int8 x int8): each code is its own signed
    # significand times 2^0 (-128 included, where the decoder gives -64 * 2^1), so the product
    # is the codes' and needs no decoding: no magnitude, no negation, no shift.  LUT products
    # then start here: the first level of their tree of carry chains is summed from the codes
    # (hw.arith.partial_products, a signed multiplier's top row without a negation).
    signed_codes = fmt_a.twos_complement and fmt_b.twos_complement
    product_width = 2 * fmt_a.bits if signed_codes else None
    lanes = []
    for i in range(k):
        x = decode_element(m, a.codes[i], fmt_a, f"a{i}")
        y = decode_element(m, b.codes[i], fmt_b, f"b{i}")
        neg = x.neg ^ y.neg
        # Inf * 0 and NaN codes give NaN; otherwise an Inf operand gives a signed Inf.
        nan = x.nan | y.nan | (x.inf & y.zero) | (y.inf & x.zero)
        # (a NaN lane may also flag an Inf: the block's NaN overrides it)
        inf = x.inf | y.inf
        flags = {"nan": nan, "pinf": inf & ~neg, "ninf": inf & neg}
        if signed_codes:
            wide, narrow = a.codes[i].as_signed(), b.codes[i].as_signed()
            if multipliers == "lut":
                rows = partial_products(wide, narrow, y_signed=True)
                level = pair_sums(m, rows, product_width, f"sig_prod{i}")
                lanes.append({"level": [value for value, _ in level], **flags})
            else:
                lanes.append({"wide": wide, "narrow": narrow, **flags})
            continue
        # The product's factors: the wider significand carries the lane's sign (negated
        # here, so the multiply is one sum), the narrower one gives the partial products.
        # A NaN or Inf lane's product is not zeroed: its flag makes the block's result NaN or
        # Inf, which replaces the sum in the finish section, so the sum's value is unused.
        # A two's complement code (int8 against a float) is its own signed significand, which
        # only the other factor's sign negates: one carry chain after the input, not its
        # magnitude and then the negated magnitude, two in series.
        # The last lane's product is built with the opposite sign, -p, at no cost (a mux's
        # inputs swapped): the product section complements its term to ~(-t) = t - 1, which
        # starts the tree's spine (section 4.-6.).
        wide_op, narrow_op = (fmt_a, a.codes[i], x), (fmt_b, b.codes[i], y)
        if len(y.sig) > len(x.sig):
            wide_op, narrow_op = narrow_op, wide_op
        (wide_fmt, wide_code, wide_dec), narrow_dec = wide_op, narrow_op[2]
        narrow = narrow_dec.sig
        last_lane = i == k - 1
        negate = ~neg if last_lane else neg
        if wide_fmt.twos_complement:
            wide_negate = ~narrow_dec.neg if last_lane else narrow_dec.neg
            wide = wide_code
        else:
            wide_negate = negate
            wide = wide_dec.sig
        # the two shifts are summed in multiply, beside the product: here the sum's chain came
        # after three LUT levels of the element decode (fp8_e5m2, 5.2 ns, with the spine at a
        # leaf)
        lanes.append({"wide": wide, "negate": wide_negate, "narrow": narrow,
                      "shift_a": x.shift, "shift_b": y.shift, **flags})
    # the frame when T anchors, aT = sa + sb + lsb - 254 - G (T's lsb at bit G+1): where the
    # factors section follows, the scales' sum here and the constant added there (two chains
    # in one section were input -> decode's deepest path)
    split_frame = "factors" in pipe.names
    frame_offset = g.lsb_exp - 254 - GUARD
    e_t = a.scale + b.scale if split_frame else a.scale + b.scale + frame_offset
    in_block = multipliers == "mult18x18d"
    s = cross({
        "lanes": lanes,
        "scale_nan": (a.scale == SCALE_NAN) | (b.scale == SCALE_NAN), "c": c,
        "a_t": e_t[:12].as_signed() if not split_frame else e_t,
        "side": side,
    }, "decode")

    # 1b. factors (float wide factors): the wide factor's sign applied, a carry chain after
    #     decode's LUT levels (in one section with them, input -> decode was a worst path,
    #     8-12 cells, 2.0-2.1 ns logic + 2.3-2.5 ns routing, at 20 stages).
    if "factors" in pipe.names:
        def signed_wide(ln):  # wide_fmt: the wide factor's format, the same in every lane
            if wide_fmt.twos_complement:
                return signed_significand(ln.wide, wide_fmt, ln.negate)
            mag = Cat(ln.wide, Const(0, 1)).as_signed()
            return Mux(ln.negate, -mag, mag)[:len(mag)].as_signed()
        # Beside the chain, the lane specials reduced in groups of 8 lanes and c's specials
        # (in multiply, the specials' OR over 32 lanes and c's tests were 4 LUT levels).
        groups = [range(j, min(j + 8, k)) for j in range(0, k, 8)]
        c_max = kept(m, s.c[23:31] == 0xFF, "c_max")
        c_frac_nz = kept(m, Cat(kept(m, s.c[:12].any(), "c_frac_nz0"),
                             kept(m, s.c[12:23].any(), "c_frac_nz1")).any(), "c_frac_nz")
        lanes_in = [s.lanes[i] for i in range(k)]
        s = cross({
            "lanes": [{"wide": signed_wide(ln), "narrow": ln.narrow, "shift_a": ln.shift_a,
                       "shift_b": ln.shift_b} for ln in lanes_in],
            "flags": {f: Cat(*(Cat(*(lanes_in[i][f] for i in g)).any() for g in groups))
                      for f in ("nan", "pinf", "ninf")},
            "c_nan": c_max & c_frac_nz, "c_inf": c_max & ~c_frac_nz,
            "scale_nan": s.scale_nan, "c": s.c, "a_t": (s.a_t + frame_offset)[:12].as_signed(),
            "side": s.side if side else None,
        }, "factors")
    early = "factors" in pipe.names  # the block's specials reduced in factors

    def early_flags(s):  # carried from factors to multiply
        return {"flags": s.flags, "c_nan": s.c_nan, "c_inf": s.c_inf} if early else {}

    def lane_fields(ln):
        flags = {} if early else {"nan": ln.nan, "pinf": ln.pinf, "ninf": ln.ninf}
        return {"shift_a": None if signed_codes else ln.shift_a,
                "shift_b": None if signed_codes else ln.shift_b, **flags}

    def registered_level(ln):  # a level of pair sums after a boundary: (sum, no carry) pairs
        return [(ln.level[j], None) for j in range(len(ln.level))]

    # 2. multiply: the signed lane products +-sig_a*sig_b (not yet shifted), in LUTs and
    #    carry chains (see partial_product_sum) or DSPs; the lane specials reduced over the
    #    block.  LUT products of 4 or more rows (dot_sections) have the boundary
    #    multiply_lo: one level of their tree of carry chains before it (for int8 x int8 the
    #    second, where decode summed the first), the rest after it.  (Built so at every depth: the
    #    register-bypass proof then compares like with like; a SAT solver does not settle two
    #    different multipliers in minutes.)  MULT18X18D blocks (hw.dsp): the boundary
    #    operands is the route to the DSP column, ending in the blocks' own input registers,
    #    multiply their output registers, and drain the route back into the fabric.
    lanes = [s.lanes[i] for i in range(k)]
    if signed_codes and multipliers == "lut":
        tree = [registered_level(ln) for ln in lanes]
        depth = 1
    elif multipliers == "lut":
        tree = [partial_products(ln.wide, ln.narrow) for ln in lanes]
        product_width = len(lanes[0].wide) + len(lanes[0].narrow)
        depth = 0
    if in_block:
        factors = [(ln.wide, ln.narrow) for ln in lanes]
        s = cross({"lanes": [lane_fields(ln) for ln in lanes], "scale_nan": s.scale_nan,
                   **early_flags(s), "c": s.c, "a_t": s.a_t,
                   "side": s.side if side else None}, "operands")
        lanes = [s.lanes[i] for i in range(k)]
    if "multiply_lo" in pipe.names:
        s = cross({
            "lanes": [{"level": [value for value, _ in pair_sums(m, tree[i], product_width,
                                                                  f"sig_prod{i}", depth)],
                       **lane_fields(ln)}
                      for i, ln in enumerate(lanes)],
            "scale_nan": s.scale_nan, **early_flags(s), "c": s.c, "a_t": s.a_t,
            "side": s.side if side else None,
        }, "multiply_lo")
        lanes = [s.lanes[i] for i in range(k)]
        tree = [registered_level(ln) for ln in lanes]
        depth += 1
    if multipliers == "lut":
        prods = [pair_sum_tree(m, tree[i], product_width, f"sig_prod{i}", depth)
                 for i in range(k)]
    elif multipliers == "dsp":  # `*`: yosys maps each to a DSP multiplier
        prods = [wire(m, (ln.wide * ln.narrow)[:len(ln.wide) + len(ln.narrow)].as_signed(),
                      f"sig_prod{i}") for i, ln in enumerate(lanes)]
    s = cross({
        "prods": None if in_block else prods,
        "shifts": None if signed_codes else [ln.shift_a + ln.shift_b for ln in lanes],
        **({"nan": s.flags.nan.any() | s.scale_nan, "pinf": s.flags.pinf.any(),
            "ninf": s.flags.ninf.any(), "c_nan": s.c_nan, "c_inf": s.c_inf} if early else {
            "nan": Cat(*(ln.nan for ln in lanes)).any() | s.scale_nan,
            "pinf": Cat(*(ln.pinf for ln in lanes)).any(),
            "ninf": Cat(*(ln.ninf for ln in lanes)).any(),
            # c's specials, here rather than with the lane terms (which they once delayed: the
            # product stage's worst path, 5 cells, ended at inf_neg)
            "c_nan": (s.c[23:31] == 0xFF) & s.c[:23].any(),
            "c_inf": (s.c[23:31] == 0xFF) & ~s.c[:23].any()}),
        "c": s.c, "a_t": s.a_t, "side": s.side if side else None,
    }, "multiply")

    def flags(s):  # the block's specials so far and c, carried from `multiply` to `product`
        return {"nan": s.nan, "pinf": s.pinf, "ninf": s.ninf, "c_nan": s.c_nan,
                "c_inf": s.c_inf, "c": s.c, "a_t": s.a_t, "side": s.side if side else None}

    if in_block:
        width = len(factors[0][0]) + len(factors[0][1])
        enables = {key: pipe.enable(key) if pipe.registers(key) else None
                   for key in ("operands", "multiply")}
        prods = [mult18x18d(m, wide, narrow if signed_codes else
                            Cat(narrow, Const(0, 1)).as_signed(), f"lane_mult{i}",
                            input_enable=enables["operands"],
                            output_enable=enables["multiply"])[:width].as_signed()
                 for i, (wide, narrow) in enumerate(factors)]
        s = cross({"prods": prods, "shifts": None if signed_codes else s.shifts, **flags(s)},
                  "drain")
    prods = [s.prods[i] for i in range(k)]

    # 3. product: exact signed lane terms in units of 2^(lsb_a + lsb_b); c's fields.
    #    Each term is the signed significand product, shifted (sign-extended) into place.  A
    #    wide shift (dot_sections) has the boundary lane_shift: its low bits shift the narrow
    #    product before it, its high bits the wider result after it.
    shifts = None if signed_codes else [s.shifts[i] for i in range(k)]
    if "lane_shift" in pipe.names:
        low = SPLIT_LANE_SHIFT_BITS
        s = cross({"prods": [(prods[i] << shifts[i][:low]).as_signed() for i in range(k)],
                   "shifts": [shifts[i][low:] for i in range(k)], **flags(s)}, "lane_shift")
        prods = [s.prods[i] for i in range(k)]
        shifts = [Cat(Const(0, low), s.shifts[i]) for i in range(k)]
    terms = [(prods[i] if signed_codes else prods[i] << shifts[i]).as_signed()[:wp + 1]
             .as_signed() for i in range(k)]
    # The last lane's term enters the tree as t - 1 (the spine, section 4.-6.): the
    # complement of its -t, which the lane shift's LUTs compute instead of -t; int8 x int8
    # codes have no sign to swap and no shift, so their p - 1 is a short chain in this
    # section, which they otherwise pass through.
    terms[-1] = (terms[-1] - 1 if signed_codes else ~terms[-1])[:wp + 1].as_signed()
    pinf, ninf, c_nan, c_inf = s.pinf, s.ninf, s.c_nan, s.c_inf
    cbits = s.c
    c_neg, c_exp = cbits[31], cbits[23:31]
    nan = s.nan | c_nan | (pinf & ninf) | (c_inf & Mux(c_neg, pinf, ninf))
    # c = C * 2^eC with its 24-bit field's top at cTop (-126 for exponent field 0); the
    # frame when c anchors puts that top at window bit n-2: aC = cTop - (n-3).
    a_c = Mux(c_exp == 0, -126 - (n - 3), c_exp - (127 + n - 3))[:12].as_signed()
    s = cross({
        "terms": terms, "nan": nan, "inf": pinf | ninf | c_inf,
        "inf_neg": ninf | (c_inf & c_neg), "c": cbits,
        # for finish, where the test of 31 bits before its selects was four LUT levels
        "c_zero": ~cbits[:31].any(),
        "a_t": s.a_t, "a_c": a_c, "side": s.side if side else None,
    }, "product")

    # 4.-6. Exact block sum: a balanced adder tree, one level per section (tree_levels).
    # Beside it, S - 1 on the tree's last spine (the pair sums that hold the last term): the
    # last term arrives as t - 1, so the spine's first pair sum is x + (t - 1) and the tree's
    # is the same sum with a carry in, each one carry chain with nothing before it (a layer
    # of full adders that made x + t - 1 from x and t put a LUT before fp8_e5m2's 65-bit
    # chain: product -> tree0, 58-67 cells, 5.0-5.3 ns); each later level adds the spine's
    # S - 1 in place of its sum.  Then -S = ~(S - 1) is at hand when the sum ends, and |S| in
    # place is a choice, not a negation (the chain of a negation after the tree's last level
    # was place's worst path, 34-40 cells, 2.2-2.4 ns logic + 2.8-3.5 ns routing, at
    # fp8_e4m3, 19 stages).
    # Alongside: the shift distance |aT - aC| (clamped to n) and the frame F = max(aT, aC),
    # from which lim = F + n + 124: normalization may shift left at most this far (the
    # result's top bit then weighs 2^-126; smaller results are subnormal, docs/dot.md).  The
    # frame takes FRAME_STEPS sections; the later ones carry it.
    # A sum wider than SPLIT_TREE_BITS is summed in halves (SplitBlockSum).
    trees = tree_sections(g)
    h = tree_split_bits(g)
    terms = [s.terms[i] for i in range(k)]
    block_sum = SplitBlockSum(terms, w, h) if h else BlockSum(terms, w)
    for j, levels in enumerate(trees):
        block_sum.begin_section()
        for _ in levels:
            block_sum.add_level()
        block_sum.end_section()
        if j == 0:
            d = wire(m, (s.a_t - s.a_c)[:13].as_signed(), "anchor_diff")
            frame = {"a_t": s.a_t, "a_c": s.a_c, "t_anchors": d >= 0,
                     "d": d.as_unsigned()[:12], "d_back": (s.a_c - s.a_t)[:12]}
        elif j == 1:
            ta = s.t_anchors
            # Two tests of tree2's, made here on the registered operands as gates: the
            # distance's clamp (after the choice in tree2, test and clamp were four LUT
            # levels), and lim < n, i.e. F + 124 < 0 (lim = F + n + 124 does not wrap; on F
            # in tree2, a chain, it was a worst path: tree1 -> tree2, 12 cells).
            frame = {"t_anchors": ta, "dist": Mux(ta, s.d, s.d_back),
                     "lim_small": Mux(ta, less_than_const(m, s.a_t, -124, "a_t_small"),
                                      less_than_const(m, s.a_c, -124, "a_c_small")),
                     "dist_big": Mux(ta, ~less_than_const(m, s.d, n, "dist_small"),
                                     ~less_than_const(m, s.d_back, n, "dist_back_small")),
                     "frame": Mux(ta, s.a_t, s.a_c)[:12].as_signed()}
        elif j == 2:
            frame = {"t_anchors": s.t_anchors, "dist": Mux(s.dist_big, n, s.dist)[:nb],
                     "lim": (s.frame + (n + 124))[:12].as_signed(),
                     "lim_small": s.lim_small}
        else:
            frame = {"t_anchors": s.t_anchors, "dist": s.dist, "lim": s.lim,
                     "lim_small": s.lim_small}
        sign = block_sum.sign
        s = cross({**specials(s), **frame, **block_sum.fields()}, f"tree{j}")
        block_sum.reread(s)
    ssum, minus = block_sum.total, block_sum.minus
    signs = pipe.replicate(sign, f"tree{len(trees) - 1}", -(-w // SIGN_COPY_BITS))

    # 7. place: |S|; the anchoring operand U and the one to shift, V, in the window.
    t_neg = wire(m, ssum < 0, "t_neg")
    t_mag = wire(m, Cat(*(Mux(signs[i // SIGN_COPY_BITS], ~minus[i], ssum[i]) for i in range(w))),
                 "t_mag")  # |S|: -S = ~(S - 1)
    c_sig = Cat(s.c[:23], s.c[23:31].any())
    t_win = wire(m, Cat(Const(0, GUARD + 1), t_mag, Const(0, n - GUARD - 1 - w)), "t_win")
    c_win = wire(m, Cat(Const(0, n - 25), c_sig, Const(0, 1)), "c_win")
    ta = s.t_anchors
    s = cross({
        **specials(s), "dist": s.dist, "lim": s.lim,
        # T = 0 in two steps: groups of up to 16 bits here (two LUT levels), their NOR in
        # align_hi (as one OR of 43 bits here, place was four levels deep)
        "t_nz": Cat(*(ssum[i:i + 16].any() for i in range(0, len(ssum), 16))),
        "lim_small": s.lim_small,
        "u": Mux(ta, t_win, c_win), "v": Mux(ta, c_win, t_win),
        "u_neg": Mux(ta, t_neg, s.c[31]), "v_neg": Mux(ta, s.c[31], t_neg),
        # the window bits that end at or below V's bit 0, i <= dist (their OR is the bit
        # after the shift, sticky included): thermometer gates of the registered distance
        "below": Cat(Const(1, 1), *(~less_than_const(m, s.dist, i, f"below{i}")
                                    for i in range(1, n))),
    }, "place")

    # 8./9. align: V >> dist, bits shifted out of the window folded into a sticky bit.
    def window(s):  # U and the frame, carried through align
        return {"lim": s.lim, "u": s.u, "u_neg": s.u_neg, "v_neg": s.v_neg}

    # V's bit 0 after the shift is the OR of V's bits at or below dist (the bit that lands
    # there and the sticky of those shifted out): OR of V & below in groups of 32 bits here
    # (three LUT levels), their OR in align_lo.  (As the high shift's chunk sticky here and the
    # low shift's in align_lo, each stage was four levels deep.)
    v_below = s.v & s.below
    bit0 = [kept(m, v_below[i:i + 32].any(), f"align_bit0_{i}") for i in range(0, n, 32)]
    v = s.v
    for b in reversed(range(nb // 2, nb)):
        step = 1 << b
        shifted = Const(0, n) if step >= n else v >> step
        v = wire(m, Mux(s.dist[b], shifted, v), f"align_hi_s{b}")
    s = cross({**specials(s), **window(s), "t_zero": ~s.t_nz.any(), "dist": s.dist,
               "lim_small": s.lim_small, "v": v, "bit0": Cat(*bit0)}, "align_hi")
    v = s.v
    for b in reversed(range(nb // 2)):
        v = wire(m, Mux(s.dist[b], v >> (1 << b), v), f"align_lo_s{b}")
    s = cross({
        **specials(s), **window(s), "t_zero": s.t_zero, "v": Cat(s.bit0.any(), v[1:]),
        "marker": Mux(s.lim_small, Const(1 << (n - 1), n) >> s.lim[:nb], 0),
    }, "align_lo")

    # 10. add: the window sum U +- V' as sign and magnitude (both < 2^(n-1): no overflow):
    #     U + V', U - V' and V' - U in parallel, the magnitude picked by the signs and the
    #     borrow.  A wide window (dot_sections) has the boundary add_lo.  Where it holds a
    #     register, the low halves are summed before it and their carry bits cross it into
    #     the high halves' sums; where it does not, one carry chain per sum is faster (two
    #     halves in one stage, fp8_e4m3 at 15 of 16 boundaries: 114.3 MHz, median of nextpnr
    #     seeds 1-3, against 164.2 with one chain).
    if "add_lo" in pipe.names and pipe.registers("add_lo"):
        h = n // 2
        u, v = s.u, s.v
        # a - b as a + ~b + 1: each half one carry chain, the carry in of the high half the
        # carry out of the low one (for a difference: set iff the low halves do not borrow)
        s = cross({
            **specials(s), "lim": s.lim, "t_zero": s.t_zero, "marker": s.marker,
            "u_neg": s.u_neg, "v_neg": s.v_neg, "u_hi": u[h:], "v_hi": v[h:],
            "total_lo": add_with_carry(u[:h], v[:h], Const(0, 1)),
            "diff_lo": add_with_carry(u[:h], ~v[:h], Const(1, 1)),
            "back_lo": add_with_carry(v[:h], ~u[:h], Const(1, 1)),
        }, "add_lo")
        u, v = s.u_hi, s.v_hi
        total_hi = wire(m, add_with_carry(u, v, s.total_lo[h]), "win_total_hi")
        diff_hi = wire(m, add_with_carry(u, ~v, s.diff_lo[h]), "win_diff_hi")
        back_hi = wire(m, add_with_carry(v, ~u, s.back_lo[h]), "win_back_hi")
        total = wire(m, Cat(s.total_lo[:h], total_hi), "win_total")
        # U >= V' is the high half's carry out, crossed as it leaves the chain (its complement,
        # V' > U, is pick's: an inverter here is a LUT after the chain)
        diff = wire(m, Cat(s.diff_lo[:h], diff_hi[:n - h]), "win_diff")
        diff_pos = diff_hi[n - h]
        back = wire(m, Cat(s.back_lo[:h], back_hi[:n - h], ~back_hi[n - h]), "win_back")
    else:
        if "add_lo" in pipe.names:
            s = pipe.boundary(s, "add_lo")  # not registered: s passes unchanged
        u, v = s.u, s.v
        total = wire(m, u + v, "win_total")
        diff = wire(m, u - v, "win_diff")  # n+1 bits: bit n set iff V' > U
        diff_pos = ~diff[n]
        back = wire(m, v - u, "win_back")
    same = wire(m, s.u_neg == s.v_neg, "same_sign")

    # Normalization reads the window sum in 8-bit chunks from the top (padded below to np
    # bits: the last chunk holds fewer of the n bits).
    def chunk_any(value, j):  # whether chunk j of an n-bit value has a one
        return Cat(*(value[i] for i in range(max(0, n - 8 * (j + 1)), n - 8 * j))).any()

    # The three sums cross the boundary as they leave their carry chains; the pick, which
    # waits for the top of the difference's chain and fans out to every bit, has a section
    # of its own (in one stage, chain, pick and fan-out took 5.9 ns at fp8_e4m3, its worst
    # path; as the first step of lzc, 6.5 ns).  Beside the chains: which chunks of the marker
    # are nonzero.
    s = cross({
        **specials(s), "lim": s.lim, "t_zero": s.t_zero, "marker": s.marker,
        "same": same, "u_neg": s.u_neg, "v_neg": s.v_neg,
        "total": total[:n], "diff": diff[:n], "diff_pos": diff_pos, "back": back[:n],
        "marker_nz": Cat(*(chunk_any(s.marker, j) for j in range(nc))),
    }, "add")

    # 11. pick: the window sum's sign and magnitude, picked by the signs and the borrow.
    #     Beside it, which chunks of mag | marker are nonzero, read off the three sums
    #     directly: per chunk, the OR of each sum's chunk gated by the choice of that sum,
    #     then their OR with the marker's flag (any_of_kept: each gated OR is mapped on its
    #     own, two LUT levels by design, then one LUT).  After the pick, as the first step of
    #     lzc, the flags took 5 LUTs: pick -> lzc was fp8_e4m3's worst path at 18 stages, 1.6
    #     ns logic + 3.7-4.0 ns routing; at 20 stages pick is on no seed's worst path.
    dn = ~s.diff_pos
    mag = wire(m, Mux(s.same, s.total, Mux(dn, s.back, s.diff[:n])), "pick_mag")
    choices = [(s.same, s.total), (~s.same & dn, s.back), (~s.same & ~dn, s.diff)]
    # Per chunk, the OR of each sum's two half chunks (one LUT each), then three kept terms
    # of one LUT each, a choice and its halves (the marker's flag rides in the first), then
    # their OR: three levels (as gated chunk ORs, any_of_kept, four).
    def halves(value, j):
        lo, hi = max(0, n - 8 * (j + 1)), n - 8 * j
        mid = max(lo, hi - 4)
        return [kept(m, Cat(*(value[i] for i in range(a, b))).any(), f"pick_h{j}_{a}")
                for a, b in ((mid, hi), (lo, mid)) if b > a]
    nz = []
    for j in range(nc):
        terms = [chosen & Cat(*halves(value, j)).any() for chosen, value in choices]
        terms[0] = terms[0] | s.marker_nz[j]
        nz.append(any_of_kept(m, terms, f"chunk_nz{j}"))
    s = cross({
        **specials(s), "lim": s.lim, "t_zero": s.t_zero,
        "neg": Mux(~s.same & dn, s.v_neg, s.u_neg),
        "mag": mag, "mag_marked": mag | s.marker, "nz": Cat(*nz),
    }, "pick")

    # 12. lzc: the normalization shift s = min(leading zeros, lim) = leading zeros of
    #     mag | marker (a one at bit n-1-lim), coarse: the first nonzero chunk, one-hot (oh)
    #     and as its index hz (none: the last chunk), with each chunk's own leading-zero count.
    mp = Cat(Const(0, pad), s.mag_marked)
    clz = [leading_zeros(m, wire(m, mp[np_ - 8 * (j + 1):np_ - 8 * j], f"chunk{j}"),
                         f"clz{j}")[:3] for j in range(nc)]
    oh = [s.nz[0], *(s.nz[j] & ~s.nz[:j].any() for j in range(1, nc - 1)), ~s.nz[:nc - 1].any()]
    hz = Const(nc - 1, 4)
    for j in reversed(range(nc - 1)):
        hz = Mux(s.nz[j], j, hz)
    s = cross({
        **specials(s), "lim": s.lim, "t_zero": s.t_zero, "neg": s.neg,
        "mag": Cat(Const(0, pad), s.mag), "hz": hz, "oh": Cat(*oh), "clz": clz,
        "mag_nz": Cat(*(chunk_any(s.mag, j) for j in range(nc))),
    }, "lzc")

    # 13. shift_hi: shift by 8*hz and pick the fine count of the leading chunk, both as an
    #     AND-OR of the one-hot choices (3 LUT levels; a mux tree on hz takes 4, and the
    #     stage measured 5 LUTs, lzc -> shift_hi 1.3 ns logic + 3.8 ns routing).  Beside
    #     them, the sticky bit of the chunks that the shift takes below the round bit's
    #     chunk: the fourth chunk below the leading one and all below it (in shift_lo, as an
    #     OR of the shifted bits, 5 LUTs, shift_hi -> shift_lo 4.8 ns).
    shifted, fine = Const(0, np_), Const(0, 3)
    for j in range(nc):
        shifted = shifted | Mux(s.oh[j], (s.mag << (8 * j))[:np_], 0)
        fine = fine | Mux(s.oh[j], s.clz[j], 0)
    below = [s.mag_nz[j] & s.oh[:j - 3].any() for j in range(4, nc)]
    s = cross({
        **specials(s), "t_zero": s.t_zero, "neg": s.neg, "mag": shifted, "fine": fine,
        "lim": (s.lim - Cat(Const(0, 3), s.hz))[:12].as_signed(),
        "sticky": Cat(*below).any(),
    }, "shift_hi")

    # 14. shift_lo: shift by the fine count; round bit, sticky, exponent field e0 = lim - s
    #     (top + 126: 0 for a subnormal result, whose leading bit stays below the top).
    p1, fine = s.mag, s.fine
    norm = wire(m, (p1 << fine)[:np_], "norm")
    # (p1[:np - 32], the bits below the fourth chunk, are in shift_hi's sticky)
    sticky = s.sticky | (p1[np_ - 32:np_ - 25] & (Const(0x7F, 7) >> fine)).any()
    s = cross({
        **specials(s), "t_zero": s.t_zero, "neg": s.neg,
        "sig": norm[np_ - 24:], "guard": norm[np_ - 25], "sticky": sticky,
        "e0": (s.lim - fine)[:11],
    }, "shift_lo")

    # 15. round: RNE at the fixed place; a carry out of the significand bumps the exponent.
    #     Overflow beside it, from e0 alone (hw.rounding.overflows: e0 is the binade of
    #     round_aligned's code with mbits 23, 0 for a subnormal result).
    #     The code's fields with and without the increment come from three short carry
    #     chains that start at the registers: the fraction plus one, and the exponent plus
    #     the hidden bit, plus one more where the fraction's increment carries out; the
    #     increment then picks among them (as the code's carry in, it waited for the
    #     increment's LUT: shift_lo -> round, 34 cells, 2.1 ns logic + 3.0 ns routing at
    #     fp8_e4m3, 19 stages).  The exponent's two sums add different operands, so that
    #     synthesis does not build one from the other (it did, for code and code + 1: 9
    #     cells, 5.3 ns).
    up = round_increment(m, s.guard, s.sticky, s.sig[0], RNE, name="round_up")
    hidden = s.sig[23]
    # the fraction plus one in two halves of 6 carry cells each, the high half's chosen by
    # the low half's carry out (one 23-bit chain, 12 cells, then the selects was a worst
    # path: shift_lo -> round, 24 cells, 1.8 ns logic + 2.3-2.6 ns routing)
    frac_lo = wire(m, s.sig[:12] + 1, "round_frac_lo")  # bit 12: the carry out
    frac_hi = wire(m, s.sig[12:23] + 1, "round_frac_hi")  # bit 11: the carry out
    frac_up = Cat(frac_lo[:12], Mux(frac_lo[12], frac_hi[:11], s.sig[12:23]))
    carry = frac_lo[12] & frac_hi[11]
    exp = wire(m, s.e0 + hidden, "round_exp")
    exp_up = wire(m, s.e0 + Cat(~hidden, hidden), "round_exp_up")  # e0 + hidden + 1
    # the increment's selects are finish's, before its own (here, after the chains, they
    # were a worst path: shift_lo -> round, 14-15 cells, 1.7 ns logic + 2.6-2.8 ns routing)
    overflow = overflows(m, s.e0, ebits=FP32.ebits, name="round_overflow")
    # The shift stops at mag's leading one or before it, so it loses no bit: the normalized
    # bits are all zero iff the window sum is (exact cancellation).
    zero = ~(s.sig.any() | s.guard | s.sticky)
    s = cross({**specials(s), "t_zero": s.t_zero, "neg": s.neg, "zero": zero,
               "up": up, "up_carry": up & carry, "frac": s.sig[:23], "frac_up": frac_up,
               "exp": exp, "exp_up": exp_up, "overflow": overflow}, "round")

    # 16. finish: the rounded code, overflow to Inf, then the special cases in order.
    rounded = Cat(Mux(s.up, s.frac_up, s.frac), Mux(s.up_carry, s.exp_up, s.exp))
    code = Mux(s.overflow, FP32.inf_bits, rounded[:31])[:31]
    c_in = s.c
    result = Signal(32)
    with m.If(s.nan):
        m.d.comb += result.eq(FP32.qnan_bits)
    with m.Elif(s.inf):
        m.d.comb += result.eq(Cat(Const(FP32.inf_bits, 31), s.inf_neg))
    with m.Elif(s.t_zero):  # T = 0: c passes unchanged, a zero c becomes +0
        m.d.comb += result.eq(Mux(s.c_zero, 0, c_in))
    with m.Elif(s.zero):  # exact cancellation: +0
        m.d.comb += result.eq(0)
    with m.Else():
        m.d.comb += result.eq(Cat(code, s.neg))
    if side and "last" in side:  # MXDotGeneral: only a last block waits for the output
        pipe.hold_when(s.side.last)
    return cross({"result": result, "side": s.side if side else None}, "finish")
