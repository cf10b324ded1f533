"""The quantizer's sections, their delay estimates, and the block-max tree's shape.

* :data:`ESTIMATES` -- each section's estimated delay with its one-line provenance
  (:class:`hw.dot.sections.Estimate`), and the views of it the placement reads.
* :func:`quantizer_sections` -- the sections of a configuration, with delays.
* :func:`exponent_field_tree`, :func:`max_tree_radices`, :func:`max_tree_split` -- the
  block-max tree's shape; :func:`subnormal_shift_bits` -- the norm section's shift.

A quantizer's datapath (:mod:`hw.quantize`) is a sequence of sections whose registers
:func:`hw.placement.place_registers` places on the delays :func:`quantizer_sections` gives;
the shape of its block-max tree (over exponent fields or keys, the radix of each level, split
or not) and the subnormal shift's width are decided here, from the formats and the depth.
"""

from __future__ import annotations

from amaranth.utils import bits_for

import golden
from golden.formats import SCALE_BIAS, SCALE_EMIN

from ..placement import Estimate, critical_stage, stage_sections

__all__ = ["quantizer_sections", "max_tree_radices", "max_tree_split", "exponent_field_tree",
           "subnormal_shift_bits", "ESTIMATES", "NORM_SHIFT_BITS", "TREE_LEVEL_DELAY",
           "SPLIT_LEVEL_DELAY", "SCALE_SELECT_DELAY", "OUTPUT_DELAY", "SCALE_COPIES"]


#: The provenance of an estimate from logic depth, where no placed stage holds the section
#: alone (the 2 ns register overhead: :func:`quantizer_sections`).
_DEPTH = "logic depth at about 1.2 ns per LUT level, less the register overhead"
#: The 15-stage build with a binary block-max tree, where norm and each tree level had a
#: stage of their own.
_BINARY_15 = ("its stage in the 15-stage build of a binary block-max tree, 5.2-5.5 ns "
              "(1.3 ns logic + 3.8-4.2 ns routing), less the 2 ns register overhead")

#: The estimates the quantizer's registers are placed on, by section (ns, ECP5 speed 8,
#: k = 32, in context, as :func:`quantizer_sections` weighs them), each with its one-line
#: provenance.  ``amax_radix2`` and ``amax_radix4`` are a block-max tree level as one section,
#: ``amax_compare`` and ``amax_select`` the two sections of a split radix-4 level
#: (:func:`max_tree_split`); ``output`` is a sign-magnitude format's, ``output_twos_complement``
#: int8's (and every ``intN``'s).
ESTIMATES = {
    "input": Estimate(0.2, "no logic: the route from the ring of port flip-flops the unit is "
                      "timed in"),
    "decode": Estimate(1.5, "a leading-zero tree; " + _DEPTH),
    "norm": Estimate(3.5, _BINARY_15),
    "amax_radix2": Estimate(3.2, _BINARY_15),
    "amax_radix4": Estimate(5.5, "6.5-6.6 ns as a stage of its own (1.5 ns logic + 5.1 ns "
                            "routing, 6 LUT levels; bf16 -> fp8_e4m3, 13 stages), weighed 5.5, "
                            "not 4.5, so no stage holds it and a radix-2 level (9.4-9.7 ns)"),
    "amax_compare": Estimate(2.5, "six key comparisons in parallel, 3-4 LUT levels; " + _DEPTH),
    "amax_select": Estimate(2.0, "the win bits and the one-hot select, 3 LUT levels; "
                            + _DEPTH),
    "scale": Estimate(1.5, "a 2:1 mux and the rceil flag's AND; bf16 -> fp8_e4m3 rceil, 10 "
                      "stages, beside the last select: 223.6 MHz (215.4-225.3, seeds 1-3)"),
    "cmp": Estimate(2.5, "the e_key fan-out to every lane and a 10-bit carry chain; " + _DEPTH),
    "shift": Estimate(2.0, "comparisons as gates; " + _DEPTH),
    "align": Estimate(2.5, "a short shifter and a sticky mask; " + _DEPTH),
    "round": Estimate(2.5, "the increment and the saturation select; " + _DEPTH),
    "output": Estimate(1.0, "the zero and NaN/Inf-block muxes and the sign bit; " + _DEPTH),
    "output_twos_complement": Estimate(2.6, "the negation's 8-bit chain: fp32 -> int8 at 12 "
                                       "stages, round + output 7.1 ns (2.2 logic + 4.9 routing) "
                                       "less 2 ns and round's 2.5"),
}

#: Estimated delay (ns) of one block-max tree level as one section, by radix
#: (:data:`ESTIMATES` ``amax_radix2``, ``amax_radix4``).
TREE_LEVEL_DELAY = {2: ESTIMATES["amax_radix2"].ns, 4: ESTIMATES["amax_radix4"].ns}

#: Estimated delay (ns) of the ``output`` section by element encoding: sign-magnitude, or
#: two's complement, which adds the negation (an 8-bit carry chain).
OUTPUT_DELAY = {"sign_magnitude": ESTIMATES["output"].ns,
                "twos_complement": ESTIMATES["output_twos_complement"].ns}

#: Estimated delays (ns) of the two sections of a split radix-4 level
#: (:func:`max_tree_split`): ``compare``, its six key comparisons, and ``select``, the win
#: bits and the one-hot select.  Their sum is above norm's 3.5, so no stage holds both.
SPLIT_LEVEL_DELAY = {"compare": ESTIMATES["amax_compare"].ns,
                     "select": ESTIMATES["amax_select"].ns}

#: Estimated delay (ns) of the ``scale`` section, which only builds with rceil: the choice
#: between the floor's and one binade up's scale (a 2:1 mux of the two candidates the tree
#: selected, and the flag's AND with a runtime scale mode).
SCALE_SELECT_DELAY = ESTIMATES["scale"].ns


#: The most bits of a subnormal input's leading-zero count the ``norm`` section shifts by
#: (:func:`subnormal_shift_bits`); where there are more and the block-max tree runs over
#: exponent fields, the low bits shift in the section after the norm register.  With all
#: five of fp32 -> fp8_e5m2's bits, decode -> norm is 5 cells (190-192 MHz, the worst path of
#: every seed); four bits are 4 cells (fp32 -> fp8_e4m3); two keep norm within three LUT
#: levels (docs/quantizer.md, 'No logic on the flip-flops' reset pins').
NORM_SHIFT_BITS = 2


#: Copies of the e_key path from its last register before ``cmp`` (MXQuantizer's
#: ``scale_copies_at``) on, each for a group of ``k / SCALE_COPIES`` lanes.  8 (4 lanes each
#: at k = 32): with 4 copies of 8 lanes the e_key copy to its lanes binds
#: bf16 -> fp8_e4m3 at 12 stages (248.3 MHz, 2.7-2.8 ns routing); with 8 it places at 250.6
#: (docs/quantizer.md, 'The scale path in copies').
SCALE_COPIES = 8


def _sections(fmt, radices, split: bool, rceil: bool) -> dict[str, float]:
    tree = {}
    for j, radix in enumerate(radices, 1):
        if split and radix == 4:
            tree[f"amax{j}_cmp"] = SPLIT_LEVEL_DELAY["compare"]
            tree[f"amax{j}"] = SPLIT_LEVEL_DELAY["select"]
        else:
            tree[f"amax{j}"] = TREE_LEVEL_DELAY[radix]
    output = OUTPUT_DELAY["twos_complement" if fmt.twos_complement else "sign_magnitude"]
    scale = {"scale": SCALE_SELECT_DELAY} if rceil else {}
    head = {name: ESTIMATES[name].ns for name in ("input", "decode", "norm")}
    tail = {name: ESTIMATES[name].ns for name in ("cmp", "shift", "align", "round")}
    return {**head, **tree, **scale, **tail, "output": output}


def exponent_field_tree(fmt, input_format, rceil: bool) -> bool:
    """Whether the block maximum of a quantizer to element format ``fmt`` from
    ``input_format`` (``rceil``: with the rceil scale mode built in) is taken over the lanes'
    exponent fields ``E`` (unsigned, ``ebits`` wide) instead of their keys (signed: ``E``
    for a normal, ``-lzf`` for a subnormal, one bit wider).

    The two maxima differ only where every lane is zero or subnormal: the key's maximum is then
    at most 0 and ``E``'s is 0.  Both give the same scale when a key of 0 already gives the
    clamp at 2^-127, ``e = 0 - (bias + emax) <= SCALE_EMIN``, and with rceil also one binade
    up, ``1 - (bias + emax) <= SCALE_EMIN`` (then the rceil flags of those lanes cannot
    matter either).  The clamp's code, 0, is also an all-zero block's, so that test goes too.
    True from fp32 and bf16 to every floating-point element format (``emax >= 2``) and to
    int8 (``emax = 0``) without rceil; false from fp16.

    The exponent fields are there from the input register on, so the tree's first level
    compares them in ``decode`` (beside the leading-zero count) and selects in ``norm``:
    ``log2 k - 1`` levels are left for the tree's own sections.
    """
    fmt = golden.element_format(fmt)
    input_format = golden.float_format(input_format)
    if SCALE_BIAS + SCALE_EMIN != 0:  # the all-zero block's code 0 is the clamp's
        return False
    return input_format.bias + fmt.emax - (1 if rceil else 0) + SCALE_EMIN >= 0


def max_tree_radices(fmt, block_size: int, input_format="fp32", rceil: bool = False
                     ) -> list[int]:
    """The radix of each level of the block-max tree after its first level in ``decode``
    and ``norm`` (where :func:`exponent_field_tree`; else every level): radix-4 levels, after
    one radix-2 level if their count is odd (4, 4 for k = 32 from fp32 or bf16).  A radix-4
    level compares its four keys pairwise in parallel (six comparisons) and selects one-hot:
    the depth of one comparison and a select for two binary levels' work.  Whether each
    radix-4 level is one section or two: :func:`max_tree_split`.
    """
    fmt = golden.element_format(fmt)
    levels = (block_size - 1).bit_length()
    if exponent_field_tree(fmt, input_format, rceil):
        levels -= 1
    return [2] * (levels % 2) + [4] * (levels // 2)


def max_tree_split(fmt, block_size: int, stages: int | None = None, input_format="fp32",
                   rceil: bool = False) -> bool:
    """Whether the radix-4 levels of the block-max tree (:func:`max_tree_radices`) of a
    quantizer at depth ``stages`` (None: every boundary registered) are split: each level's
    comparisons and their winners in a section of their own (``amax<j>_cmp``; the winners
    registered, or with rceil's flags the comparisons), then its select (``amax<j>``).  A
    radix-4 level as one section takes about 6.5 ns on ECP5 (comparison, win bits, select: 6 LUT
    levels), a binary level 5.2-5.5 (5 cells); a split level's halves are 3-4 LUT levels each,
    with as many sections as the binary tree it replaces.

    Split unless either:

    * the registers of a ``stages``-deep pipeline, placed on the split tree's sections, would
      leave two of its sections in one stage (a select and the next comparisons in series); or
    * the unsplit tree's placement has the smaller critical stage by the section estimates:
      its fewer sections leave registers for the rest of the datapath.

    At low depths the unsplit tree is the faster: a radix-4 level is the depth of one
    comparison and a select where a binary tree takes two of each (bf16 -> fp8_e4m3, k = 32,
    5 stages, unsplit: 157.9 MHz, 150.7-162.1, the sweep of docs/performance.md).
    """
    fmt = golden.element_format(fmt)
    radices = max_tree_radices(fmt, block_size, input_format, rceil)
    if 4 not in radices:
        return False
    split, unsplit = _sections(fmt, radices, True, rceil), _sections(fmt, radices, False, rceil)
    if stages is None or stages > len(unsplit):
        return True
    shares = any(sum(name.startswith("amax") for name in stage) > 1
                 for stage in stage_sections(split, stages))
    shorter = (critical_stage(list(unsplit.values()), stages)
               < critical_stage(list(split.values()), stages))
    return not (shares or shorter)


def subnormal_shift_bits(fmt, input_format, keep: int) -> int:
    """How many low bits of a subnormal input's leading-zero count ``lzf`` the ``norm``
    section's shift uses, for a quantizer to element format ``fmt`` from ``input_format``
    keeping ``keep`` significand bits (hidden bit, element mantissa, fraction bits below it).

    A subnormal input's key is ``-lzf``; its element binade is ``br = -lzf - e_key``, and the
    scale's clamp at 2^-127 bounds ``e_key`` below by ``e_key_min = SCALE_EMIN + emin + bias``.
    A lane with ``lzf >= L = keep - e_key_min`` therefore has ``br <= -keep`` in every block:
    the ``shift`` section shifts all its ``keep`` bits out (``sh = keep``, as for ``gone``) and
    only whether its significand is nonzero reaches the output, as the sticky bit.  A shift by
    ``lzf``'s low ``b`` bits (``2^b >= L``) is exact below ``L`` and never more than ``lzf``
    above it, so it loses no bit off the top and keeps that nonzero test exact.  Such a lane
    can still hold the block's maximum key (every other lane zero or smaller), but then both
    the floor scale and rceil's one binade up are clamped to 2^-127, so its rceil flag cannot
    matter; this needs ``1 - L - (bias + emax) <= SCALE_EMIN``, checked here.

    The shift is a 2^b:1 select instead of one over the whole fraction: from fp32, by 4 bits
    of 5 to fp8_e4m3, 3 to fp6 and int8, 2 to fp4_e2m1 (rne/rna/rtz builds; stochastic keeps
    more fraction bits).  Returns ``len(lzf)`` (no saving) where the bound does not help: bf16
    and fp16 input (except bf16 -> fp4_e2m1: 2 bits of 3), fp32 -> fp8_e5m2.
    """
    lzf_bits = bits_for(input_format.mbits)
    shifted_out = keep - (SCALE_EMIN + fmt.emin + input_format.bias)  # L
    b = bits_for(shifted_out - 1)
    if b >= lzf_bits or 1 - shifted_out - (input_format.bias + fmt.emax) > SCALE_EMIN:
        return lzf_bits
    return b


def quantizer_sections(fmt, block_size: int, stages: int | None = None, input_format="fp32",
                       rceil: bool = False) -> dict[str, float]:
    """The sections of a quantizer to element format ``fmt`` from ``input_format`` (``rceil``:
    with the rceil scale mode built in) for blocks of ``block_size`` values at depth ``stages``
    (None: every boundary registered), in datapath order, with their estimated delays in ns
    (the boundary after a section has its name): ``input``, ``decode``, ``norm``, per level
    of the block-max tree after the first (:func:`max_tree_radices`; the first is in decode
    and norm where :func:`exponent_field_tree`) ``amax<j>_cmp`` and ``amax<j>`` for a split
    radix-4 level (:func:`max_tree_split`, :data:`SPLIT_LEVEL_DELAY`) or ``amax<j>`` alone,
    ``scale`` (with rceil only: :data:`SCALE_SELECT_DELAY`), ``cmp``, ``shift``, ``align``,
    ``round``, ``output``.  The block's scale is worked out for each candidate of the tree's
    last level beside its comparisons, and that level's select picks it: it has no section of
    its own.

    A stage's delay is about 2 ns of register overhead (clock to out, setup, the route out of
    one register and into the next), paid once per stage, plus the delays of the sections it
    holds; the values here are the sections' own (:data:`ESTIMATES`, each with what it was
    measured on or the logic depth it stands for; ``docs/quantizer.md``).  At 5 stages they
    place the registers after norm, amax1, amax2, shift and output (bf16 -> fp8_e4m3: 157.9
    MHz, 150.7-162.1, nextpnr seeds 1-3, docs/performance.md).
    """
    fmt = golden.element_format(fmt)
    radices = max_tree_radices(fmt, block_size, input_format, rceil)
    return _sections(fmt, radices,
                     max_tree_split(fmt, block_size, stages, input_format, rceil), rceil)
