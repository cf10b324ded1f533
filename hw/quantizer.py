"""MX quantizer: a block of k floating-point values -> one E8M0 scale and k element codes.

Implements section 3 of ``docs/numerics.md`` (quantization) bit for bit;
``golden._kernels.quantize_blocks`` is the reference.
Architecture, interface timing and verification: ``docs/quantizer.md``.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Value, unsigned
from amaranth.lib import data
from amaranth.utils import bits_for

import golden
from golden.formats import (
    ROUNDING_IDS,
    SCALE_BIAS,
    SCALE_EMAX,
    SCALE_EMIN,
    SCALE_MODE_IDS,
    SCALE_NAN,
)

from .arith import (
    increment_gates,
    leading_zeros,
    less_than_const,
    max_tree_compare,
    max_tree_select,
    max_tree_wins,
    negate_gates,
    reduce_significand,
    wire,
)
from .elements import block_layout, encode_element
from .params import check_block_size, check_choice, check_int
from .pipeline import (
    critical_stage,
    registered_boundaries,
    stage_sections,
)
from .registry import UnitSpec, format_help
from .rounding import round_increment
from .unit import Unit

__all__ = ["MXQuantizer", "quantizer_sections", "max_tree_radices", "max_tree_split",
           "exponent_field_tree", "subnormal_shift_bits", "NORM_SHIFT_BITS", "TREE_LEVEL_DELAY",
           "SPLIT_LEVEL_DELAY", "SCALE_SELECT_DELAY", "OUTPUT_DELAY", "cli_units"]

ROUNDINGS = (*ROUNDING_IDS, "runtime")
SCALE_MODES = (*SCALE_MODE_IDS, "runtime")
INPUTS = ("fp32", "bf16", "fp16")
MAX_RANDOM_BITS = 16


#: Estimated delay (ns, as in :func:`quantizer_sections`) of one block-max tree level by radix.
#: Radix 2: the measured critical stage of the 15-stage build less the register overhead.
#: Radix 4 measures 6.5-6.6 ns as a stage of its own (13 stages, bf16 -> fp8_e4m3: 1.5 ns
#: logic + 5.1 ns routing, 6 LUT levels: comparison, win bits, one-hot select), 4.5 by that
#: rule; it is given 5.5 so that no stage holds the radix-2 and a radix-4 level together.
#: That pair measured 9.4-9.7 ns, where the estimates say 7.7, below shift..output's 8.0
#: (measured 7.3-8.1): with 4.5 the placement at 5 stages chose such a stage (102.8 MHz,
#: seed 1), with 5.5 it registers amax1, amax2, amax3, cmp, output (134.5 MHz, median of
#: seeds 1-3).
TREE_LEVEL_DELAY = {2: 3.2, 4: 5.5}


#: The most bits of a subnormal input's leading-zero count the ``norm`` section shifts by
#: (:func:`subnormal_shift_bits`); where there are more (fp32 -> fp8_e5m2: 5, its
#: decode -> norm 5 cells at 190-192 MHz, the worst path of every seed) and the block-max
#: tree runs over exponent fields, the low bits shift in the section after the norm register.
#: Four bits in norm measure 4 cells (fp32 -> fp8_e4m3); two keep norm within three LUT levels
#: (docs/quantizer.md, 'No logic on the flip-flops' reset pins').
NORM_SHIFT_BITS = 2


#: Estimated delay (ns, as in :func:`quantizer_sections`) of the ``output`` section by
#: element encoding.  Sign-magnitude: the zero and NaN/Inf-block muxes and the sign bit.  Two's
#: complement (int8) adds the negation, an 8-bit carry chain: 2.6 is the round + output stage
#: measured at 12 stages, where the two shared one (fp32 -> int8: align -> output, 7.1 ns:
#: 2.2 ns logic + 4.9 ns routing, 139.5 MHz), less the 2 ns register overhead and round's 2.5.
OUTPUT_DELAY = {"sign_magnitude": 1.0, "twos_complement": 2.6}


#: Estimated delays (ns, as in :func:`quantizer_sections`) of the two sections of a split
#: radix-4 level (:func:`max_tree_split`): ``compare``, its six key comparisons in parallel (a
#: comparison's gate tree, 3-4 LUT levels), and ``select``, the win bits and the one-hot
#: select (3 LUT levels).  Their sum is above norm's 3.5, so no stage holds both.
SPLIT_LEVEL_DELAY = {"compare": 2.5, "select": 2.0}


#: Estimated delay (ns, as in :func:`quantizer_sections`) of the ``scale`` section, which only
#: builds with rceil: the choice between the floor's and one binade up's scale (a 2:1 mux of
#: the two candidates the tree selected, and the flag's AND with a runtime scale mode).
#: Placed once (2026-11-26): bf16 -> fp8_e4m3 rceil at 10 stages, where it shares a stage
#: with the tree's last select (2.0 + 1.5), 223.6 MHz (215.4-225.3, seeds 1-3), that stage
#: the worst of seed 1 (amax2_cmp -> scale, 4 cells, 1.12 ns logic + 3.36 ns routing).
SCALE_SELECT_DELAY = 1.5


#: Copies of the e_key path from its last register before ``cmp`` (MXQuantizer's
#: ``scale_copies_at``) on, each for a group of ``k / SCALE_COPIES`` lanes.  8 (4 lanes each
#: at k = 32) since 2026-11-26: with 4 copies of 8 lanes the e_key copy to its lanes bound
#: bf16 -> fp8_e4m3 at 12 stages (248.3 MHz, 2.7-2.8 ns routing), with 8 it places at 250.6
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
    return {"input": 0.2, "decode": 1.5, "norm": 3.5, **tree, **scale,
            "cmp": 2.5, "shift": 2.0, "align": 2.5, "round": 2.5, "output": output}


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

    Split unless either, as before for the binary tree against radix 4:

    * the registers of a ``stages``-deep pipeline, placed on the split tree's sections, would
      leave two of its sections in one stage (a select and the next comparisons in series); or
    * the unsplit tree's placement has the smaller critical stage by the section estimates:
      its fewer sections leave registers for the rest of the datapath.

    Measured unsplit against binary on bf16 -> fp8_e4m3, k = 32, ECP5 (medians of nextpnr
    seeds 1-3, the first level then a radix-2 section): 4 stages 98.7 against 88.5 MHz,
    5 stages 134.5 against 124.2, 7 stages 152.5 against 135.1; every boundary registered
    169.2 against 193.3.
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
    its own (until 2026-11-25, ``exp`` and ``scale`` after the tree, 2.0 and 1.5).

    A stage's delay is about 2 ns of register overhead (clock to out, setup, the route out of one
    register and into the next), paid once per stage, plus the delays of the sections it holds; the
    values here are the sections' own (ECP5 speed 8, k = 32, in context, ``docs/quantizer.md``).
    ``norm`` (3.5) and a binary ``amax<j>`` (3.2) are the measured critical stages of the 15-stage
    build of the binary tree (5.2-5.5 ns: 1.3 ns logic + 3.8-4.2 ns routing) less that overhead
    (an unsplit radix-4 level: :data:`TREE_LEVEL_DELAY`); ``cmp`` is the ``e_key`` fan-out to
    all lanes plus a 10-bit carry chain; the others are their logic depth at about 1.2 ns per
    LUT level with local routing, less the overhead (decode: a leading-zero tree; shift:
    comparisons as gates; align: a short shifter and a sticky mask; round: the increment and
    the saturation select; scale: a mux; output: muxes, and int8's negation,
    :data:`OUTPUT_DELAY`);
    ``input`` carries no logic (the route from the ring of port flip-flops the unit is timed in).
    Counting the overhead once per section instead (the estimates before) over-weighted stages of
    many short sections: at 5 stages it placed the registers after amax1, amax3, exp, shift, output
    (112.2 MHz, bf16 -> fp8_e4m3, seed 1); these estimates, on the binary tree, place them after
    amax1, amax3, amax5, cmp, output (124.2 MHz), and on the radix-4 tree after amax1, amax2,
    amax3, cmp, output (134.5 MHz).  With the scale in the tree's last level the quantizer now
    builds at that depth after norm, amax1, amax2, shift, output (bf16 -> fp8_e4m3: 148.4 MHz,
    median of seeds 1-3).
    """
    fmt = golden.element_format(fmt)
    radices = max_tree_radices(fmt, block_size, input_format, rceil)
    return _sections(fmt, radices,
                     max_tree_split(fmt, block_size, stages, input_format, rceil), rceil)


class MXQuantizer(Unit):
    """Quantize one block of ``block_size`` values per clock to an MX format.

    Parameters
    ----------
    fmt : str or golden.ElementFormat
        Element format (``fp8_e4m3``, ``fp8_e5m2``, ``fp6_e3m2``, ``fp6_e2m3``, ``fp4_e2m1``,
        ``int8``).
    block_size : int
        k, a power of two in 2..64.
    input_format : {"fp32", "bf16", "fp16"}
    rounding : {"rne", "rna", "rtz", "stochastic", "runtime"}
        Fixed at elaboration, or ``"runtime"``: a 2-bit ``rounding`` payload field (0 rne,
        1 rna, 2 rtz, 3 stochastic).
    scale_mode : {"floor", "rceil", "runtime"}
        Fixed, or ``"runtime"``: a 1-bit ``scale_mode`` payload field (0 floor, 1 rceil).
    random_bits : int
        R, random bits per element for stochastic rounding (1..16); used when ``rounding`` is
        ``"stochastic"`` or ``"runtime"``.
    stages : int or None
        Pipeline registers, 1..7 + log2(k) (from fp16, and int8 with rceil: 1..8 + log2(k),
        :func:`exponent_field_tree`; one more where rceil is built, the ``scale`` section);
        None (the default): :func:`hw.pipeline.default_stages`, the fewest registers with the
        estimated critical stage of all: 5 + log2(k) (10 for k = 32), int8 6 + log2(k) (11),
        whose negation keeps round and output apart; from fp16 one more.  The registers
        beyond it (two with the floor scale; int8 one) add latency and
        flip-flops, no clock (measured: ``docs/quantizer.md``, default depth).  Registers
        are placed by :func:`hw.pipeline.place_registers` on the delays of
        :func:`quantizer_sections` (stage contents in ``docs/quantizer.md``); the block-max
        tree's radix-4 levels are split into a comparison and a select section unless that
        would put two of the tree's sections in one stage (:func:`max_tree_split`; the
        sidecar's ``max_tree_split``, ``max_tree_radices`` and ``exponent_field_tree``).

    Members
    -------
    i : In(stream.Signature(StructLayout))
        Payload fields: ``data`` (k input values, element i at bits ``[w*i, w*(i+1))``),
        ``random`` (k x R bits, if stochastic rounding is built in), ``rounding`` and
        ``scale_mode`` (if runtime).
    o : Out(stream.Signature(StructLayout))
        Payload fields: ``scale`` (E8M0 code) and ``codes`` (k element codes).

    Latency is ``stages`` cycles: a block accepted in cycle c is presented in cycle
    c + ``stages``; one block per clock.  Flow control: :class:`hw.pipeline.Pipeline`:
    ``i.ready`` is a register (the common stage enable, ``o.ready |
    ~o.valid`` of the cycle before); a skid register catches the block the pipeline moves on
    in the first cycle of a stall (``docs/quantizer.md``, flow control).
    """

    #: Whether synthesis may make a stage register's clear its synchronous reset
    #: (:class:`hw.pipeline.Pipeline`'s ``extract_reset``): no.  With every stage at three LUT
    #: levels or fewer, that reset's LSR pin was the worst path; without it, bf16 -> fp8_e4m3
    #: at 10 stages measured 240.0 MHz against 222.1 before the change (medians of nextpnr
    #: seeds 1-3; docs/quantizer.md, 'No logic on the flip-flops' reset pins').
    extract_reset = False
    #: The most bits of a stage register one copy of the stage enable loads
    #: (:class:`hw.pipeline.Pipeline`'s ``enable_load``): 2-8 copies per stage at k = 32.
    #: fp32 -> fp6_e2m3 at 10 stages was bound by one enable's fan-out (``q_amax2_cmp_en ->
    #: q_amax2_cmp``, 1.0 ns logic + 4.0-4.1 ns routing) at 199.4 MHz; with parts of 160
    #: bits it placed at 217.2 (216.5-219.4, seeds 1-3; docs/quantizer.md, flow control).
    enable_load = 160

    def __init__(self, fmt="fp8_e4m3", block_size=32, input_format="fp32", *, rounding="rne",
                 scale_mode="floor", random_bits=8, stages=None):
        self.fmt = golden.element_format(fmt)
        self.block_size = check_block_size(block_size)
        self.input_format = golden.float_format(check_choice("input format", input_format,
                                                             INPUTS))
        self.rounding = check_choice("rounding", rounding, ROUNDINGS)
        self.scale_mode = check_choice("scale mode", scale_mode, SCALE_MODES)
        self.stochastic = rounding in ("stochastic", "runtime")
        if self.stochastic:
            check_int("random_bits", random_bits, 1, MAX_RANDOM_BITS)
        self.random_bits = random_bits if self.stochastic else 0
        # the deepest pipeline: every boundary of the split tree's sections registered
        tree_args = (self.input_format, scale_mode != "floor")
        self._choose_stages(stages, quantizer_sections(self.fmt, self.block_size, None,
                                                       *tree_args))
        self.exponent_field_tree = exponent_field_tree(self.fmt, *tree_args)
        self.tree_radices = max_tree_radices(self.fmt, self.block_size, *tree_args)
        self.tree_split = max_tree_split(self.fmt, self.block_size, self.stages, *tree_args)
        self.sections = quantizer_sections(self.fmt, self.block_size, self.stages, *tree_args)
        registered = registered_boundaries(self.sections, self.stages)
        tail = [b for b in self.sections if b == "scale" or self.tree_radices
                and b.startswith(f"amax{len(self.tree_radices)}")]
        self.scale_copies_at = next((b for b in reversed(tail) if b in registered), None)
        self.scale_copies = min(SCALE_COPIES, self.block_size)

        k = self.block_size
        fields = {"data": data.ArrayLayout(self.input_format.bits, k)}
        if self.stochastic:
            fields["random"] = data.ArrayLayout(self.random_bits, k)
        if rounding == "runtime":
            fields["rounding"] = unsigned(2)
        if scale_mode == "runtime":
            fields["scale_mode"] = unsigned(1)
        super().__init__(data.StructLayout(fields), block_layout(self.fmt, k))

    @property
    def module_name(self) -> str:
        r = self.rounding + (str(self.random_bits) if self.stochastic else "")
        return (f"mx_quantizer_{self.fmt.name}_k{self.block_size}_{self.input_format.name}"
                f"_{r}_{self.scale_mode}_s{self.stages}")

    @property
    def parameters(self) -> dict:
        return {"format": self.fmt.name, "block_size": self.block_size,
                "input": self.input_format.name, "rounding": self.rounding,
                "scale_mode": self.scale_mode, "random_bits": self.random_bits,
                "stages": self.stages, "exponent_field_tree": self.exponent_field_tree,
                "max_tree_radices": list(self.tree_radices), "max_tree_split": self.tree_split,
                "scale_copies": self.scale_copies, "scale_copies_at": self.scale_copies_at,
                "registered_boundaries": list(registered_boundaries(self.sections,
                                                                    self.stages))}

    def elaborate(self, platform):
        m = Module()
        fmt, input_format, k = self.fmt, self.input_format, self.block_size
        pipe = self.pipeline(m, "q")

        def cross(fields, name):  # a section boundary: one struct signal, maybe registered
            return pipe.boundary(wire(m, fields, f"q_{name}_in"), name)

        mag_w = input_format.ebits + input_format.mbits  # IEEE magnitude bits
        p = input_format.mbits + 1  # input significand bits (hidden bit included)
        mb = fmt.mbits
        f = self.random_bits if self.stochastic else 1  # fraction bits kept below the grid
        keep = mb + 1 + f  # normalized significand bits that can reach n or the fraction
        # key = floor(log2 |v|) + bias (signed): E for a normal, -lzf for a subnormal (lzf:
        # leading zeros of the fraction), 1 - p for a zero; it orders the lanes like their
        # magnitudes' binades.
        key_bias = input_format.bias
        zero_key = 1 - p
        e_max_key = (1 << input_format.ebits) - 1  # exponent field all ones: Inf or NaN
        # exponent fields 0 .. b_ovf + 1 (the field of max_code, rounded up: any code with
        # field b_ovf + 1 is >= max_code); b_ovf + 1 sets the field's width
        b_ovf = -(-fmt.max_code // (1 << mb)) - 1
        runtime_rounding = self.rounding == "runtime"
        runtime_scale = self.scale_mode == "runtime"
        rceil_built = self.scale_mode != "floor"

        # Per-stage state is a struct; values fixed at elaboration (a fixed rounding or scale
        # mode) are Python ints and never fields.  ``ctl`` carries the runtime modes and the
        # random bits along the lanes' sections.
        # a tree level's comparisons (arith.max_tree_compare) as struct fields and back
        def comparison_fields(comparisons):
            return [[{"greater": g, "equal": e} for g, e in group] for group in comparisons]

        def comparison_entries(fields):
            return [[(c.greater, c.equal if rceil_built else None) for c in group]
                    for group in fields]

        # a tree level's (key, flag) entries as struct fields and back; from the last level's
        # comparisons on, an entry carries its scale candidate (a View) instead of its key
        def tree_fields(tree, complements=False):
            field = "cand" if isinstance(tree[0][0], data.View) else "key"
            # with ``complements``, before a level's comparisons: each unsigned key's
            # complement too, the second operand of its carry chains (max_tree_compare)
            nkey = (complements and field == "key"
                    and not Value.cast(tree[0][0]).shape().signed)
            return [{field: value, "nkey": ~Value.cast(value) if nkey else None, "flag": flag}
                    for value, flag in tree]

        def tree_complements(fields):
            return [t.nkey for t in fields] if "nkey" in fields[0].shape().members else None

        def tree_entries(fields):
            field = "cand" if "cand" in fields[0].shape().members else "key"
            return [(t[field], t.flag if rceil_built else None) for t in fields]

        def binade_key(e, nz_e, lzf, i):  # E for a normal lane, -lzf for a subnormal one
            return wire(m, Mux(nz_e, e, negate_gates(lzf)), f"lane{i}_key")

        def pad_to_grid(sig):  # a significand shorter than the grid (finer than the input)
            return Cat(Const(0, mb + 1 - len(sig)), sig) if len(sig) < mb + 1 else sig

        # The block's scale from its maximum key: e = clamp(key_max - (key_bias + emax) + a,
        # -127, 127) for a = 0 (floor) and a = 1 (rceil's one binade up), as e_key = e +
        # e_key_off, the offset of the lanes' element binades.  This is worked out for each of
        # the four (or two) candidates of the tree's last level, beside that level's
        # comparisons, so its select picks the answer ready (arith.max_tree_select moves a View
        # whole): the comparisons with the clamp bounds, the addition and the clamp muxes are
        # off the path from the tree to the lanes.  The scale code, e_key's constant apart, is
        # made in cmp (off that path too), where a zero block (the key tree's zero_key) and a
        # NaN/Inf block override it.
        e0 = key_bias + fmt.emax
        e_key_off = fmt.emin + key_bias  # a lane's element binade is key - (e + e_key_off)

        def scale_candidate(key, name):
            fields = {"nonfinite": key == e_max_key,
                      # over exponent fields the zero block's code is the clamp's
                      "zero": None if self.exponent_field_tree else key == zero_key}
            for a in ((0, 1) if rceil_built else (0,)):
                lo = less_than_const(m, key, e0 - a + SCALE_EMIN, f"{name}_lo{a}", tree=True)
                hi = ~less_than_const(m, key, e0 - a + SCALE_EMAX + 1, f"{name}_hi{a}",
                                      tree=True)
                fields[f"e_key{a}"] = Mux(lo, SCALE_EMIN + e_key_off,
                                          Mux(hi, SCALE_EMAX + e_key_off,
                                              key + (a - e0 + e_key_off)))
            return wire(m, fields, name)

        def scale_candidates(tree, name):  # the last level's entries, keys -> candidates
            return [(scale_candidate(key, f"{name}_c{i}"), flag)
                    for i, (key, flag) in enumerate(tree)]

        def ctl_fields(x, scale_mode=True):
            return {"rounding": x.rounding if runtime_rounding else None,
                    "scale_mode": x.scale_mode if runtime_scale and scale_mode else None,
                    "random": x.random if self.stochastic else None}

        # -- input -----------------------------------------------------------------------------
        payload = pipe.boundary(self.i.payload, "input")

        # -- decode: per lane exponent field, E != 0, leading zeros of the fraction ------------
        lanes = []
        for i in range(k):
            w = payload.data[i]
            e, frac = w[input_format.mbits:mag_w], w[:input_format.mbits]
            lanes.append({"neg": w[mag_w], "e": e, "nz_e": e != 0, "frac": frac,
                          "lzf": leading_zeros(m, frac, name=f"lane{i}_lz")})
        # the block-max tree's first level over exponent fields: its comparisons here, beside
        # the leading-zero counts (exponent_field_tree); its selects in norm
        first = None
        if self.exponent_field_tree:
            first = comparison_fields(max_tree_compare(m, [ln["e"] for ln in lanes], 2,
                                                       "amax0", equal=rceil_built))
        x = cross({"lanes": lanes, "first": first, **ctl_fields(payload)}, "decode")

        # -- norm: binade key; normalize, keep the top bits plus a sticky bit ------------------
        # A normal's significand 1.frac is already normalized; a subnormal's frac moves up by
        # lzf + 1 (lzf = its leading zeros), i.e. (frac << 1) << lzf, by lzf's low bits only
        # where the lanes beyond them can only be shifted out whole (subnormal_shift_bits).
        # Where the shift has more than NORM_SHIFT_BITS bits and no rceil flag is taken from
        # s2 (the exponent-field tree), its low bits move past the norm register: norm keeps
        # 2^late_bits - 1 more bits, and the first section after it shifts by the rest (``late``).
        sub_shift = subnormal_shift_bits(fmt, input_format, keep)
        late_bits = (sub_shift - NORM_SHIFT_BITS
                     if self.exponent_field_tree and sub_shift > NORM_SHIFT_BITS else 0)
        kept = keep + (1 << late_bits) - 1
        lanes = []
        for i in range(k):
            ln = x.lanes[i]
            e, nz_e, frac, lzf = ln.e, ln.nz_e, ln.frac, ln.lzf
            # the binade key; over exponent fields the tree does not need it, and cmp is its
            # first use: it is made after the norm register, off norm's LUT levels
            key = ({"e": e, "nz_e": nz_e, "lzf": lzf} if self.exponent_field_tree else
                   {"key": binade_key(e, nz_e, lzf, i)})
            sub = reduce_significand(m, Cat(Const(0, 1), frac),
                                     Cat(Const(0, late_bits), lzf[late_bits:sub_shift]), kept,
                                     name=f"lane{i}_s")
            nrm = reduce_significand(m, Cat(frac, Const(1, 1)), Const(0, 1), kept,
                                     name=f"lane{i}_n")
            s2 = pad_to_grid(wire(m, Mux(nz_e, nrm, sub), f"lane{i}_s2"))
            # zero: key == zero_key, tested on E and lzf directly (not after the -lzf carry chain)
            zero = wire(m, ~nz_e & (lzf == input_format.mbits), f"lane{i}_zero")
            late = Mux(nz_e, 0, lzf[:late_bits]) if late_bits else None
            lanes.append({"neg": ln.neg, "zero": zero, "s2": s2, **key, "late": late})

        def above_max_normal(sig, name):  # rceil: 1.f > max_normal's 1.g, f MSB-aligned
            sig = pad_to_grid(sig)
            top, rest = sig[-(mb + 1):], sig[:-(mb + 1)]
            at_max = (top == fmt.max_significand) & (rest.any() if len(rest) else 0)
            # fp4_e2m1's 1.1 is top's all ones: no top is above it (and a constant comparison
            # would be a lint warning)
            above = (top > fmt.max_significand
                     if fmt.max_significand < (1 << len(top)) - 1 else 0)
            return wire(m, above | at_max, name)

        # the tree's leaves (key, rceil flag): the first level's selects over exponent fields,
        # where a normal lane's flag comes from its fraction (a subnormal's cannot matter:
        # exponent_field_tree), or one leaf per lane, flagged from its normalized significand
        tree = None
        if self.exponent_field_tree:
            leaves = [(x.lanes[i].e, above_max_normal(Cat(x.lanes[i].frac, Const(1, 1)),
                                                     f"lane{i}_gt") if rceil_built else None)
                      for i in range(k)]
            if not self.tree_radices:  # this is the tree's only level (k = 2)
                leaves = scale_candidates(leaves, "amax0")
            tree = tree_fields(max_tree_select(m, leaves, comparison_entries(x.first), 2,
                                               "amax0"), complements=True)
        x = cross({"lanes": lanes, "tree": tree, **ctl_fields(x)}, "norm")
        # the subnormal shift's low bits, if past the register: exact, since the leading one
        # is then within the top 2^late_bits bits and the sticky bit stays below the kept ones
        lanes = []
        for i, ln in enumerate(x.lanes):
            s2 = ln.s2
            if late_bits:
                s2 = wire(m, reduce_significand(m, s2, ln.late, keep, name=f"lane{i}_late"),
                          f"lane{i}_s2late")
            key = (binade_key(ln.e, ln.nz_e, ln.lzf, i) if self.exponent_field_tree
                   else ln.key)
            lanes.append({"neg": ln.neg, "zero": ln.zero, "s2": s2, "key": key})
        width = len(lanes[0]["s2"])
        d0 = width - 1 - mb  # bits of s2 below the grid in a normal binade

        # -- block amax: max tree over the exponent fields or keys (rceil: and whether 1.f >
        # max_normal's 1.g); a split radix-4 level registers its comparisons' winners, or
        # with flags the comparisons themselves (max_tree_split)
        if self.exponent_field_tree:
            tree, complements = tree_entries(x.tree), tree_complements(x.tree)
        else:
            tree = [(lanes[i]["key"], above_max_normal(lanes[i]["s2"], f"lane{i}_gt")
                     if rceil_built else None) for i in range(k)]
            complements = None

        # The scale path: the tree's last level, rceil's choice, e_key.  From its last
        # register before cmp (scale_copies_at) on it is built once per group of lanes, each
        # on a copy of that register (Pipeline.replicate), so no one net carries e_key to all
        # k lanes (SCALE_COPIES).  ``tails``: the scale path's part of a boundary's struct,
        # per copy (one before the replicas).
        def cross_tails(fields, tails, name):
            if name == self.scale_copies_at:
                x = cross(fields, name)
                return x, pipe.replicate(wire(m, tails[0], f"q_{name}_tail"), name,
                                         self.scale_copies)
            x = cross({**fields, "copies": tails}, name)
            return x, list(x.copies)

        # where the tree's only level was in norm (k = 2): its register's entry
        tails = [x.tree] if not self.tree_radices else None
        for j, radix in enumerate(self.tree_radices, 1):  # one or two sections per level
            comparisons = max_tree_compare(m, [key for key, _ in tree], radix, f"amax{j}",
                                           equal=rceil_built, complements=complements)
            if j == len(self.tree_radices):
                tree = scale_candidates(tree, f"amax{j}")
            levels = [(tree, comparisons, None)]  # per copy: entries, comparisons, wins
            if self.tree_split and radix == 4:
                split = ({"cmp": comparison_fields(comparisons)} if rceil_built else
                         {"wins": max_tree_wins(m, comparisons, radix, f"amax{j}")})
                x, tails = cross_tails({"lanes": lanes, **ctl_fields(x)},
                                       [{"tree": tree_fields(tree), **split}], f"amax{j}_cmp")
                lanes = x.lanes
                levels = [(tree_entries(t.tree),
                           comparison_entries(t.cmp) if rceil_built else None,
                           None if rceil_built else [list(group) for group in t.wins])
                          for t in tails]
            selects = [max_tree_select(m, entries, cmps, radix,
                                       f"amax{j}" + (f"_r{c}" if len(levels) > 1 else ""),
                                       wins=wins)
                       for c, (entries, cmps, wins) in enumerate(levels)]
            x, tails = cross_tails({"lanes": lanes, **ctl_fields(x)},
                                   [tree_fields(s, complements=True) for s in selects],
                                   f"amax{j}")
            lanes = x.lanes
            tree, complements = tree_entries(tails[0]), tree_complements(tails[0])
        # the tree's outputs, per copy, as one net (formal/units.py cuts the datapath there);
        # scale_copies entries at every depth (the one path's repeated where it has no
        # replicas), so that the net compares across depths
        amax = wire(m, [{"cand": t[0].cand, "above": t[0].flag if rceil_built else None}
                        for t in tails * (self.scale_copies // len(tails))], "amax")

        # -- scale (rceil only): the floor's or one binade up's candidate ------------------
        e_keys = []
        for c in range(len(amax)):
            e_key = amax[c].cand.e_key0
            if rceil_built:
                above = amax[c].above
                if runtime_scale:
                    above = above & (x.scale_mode == SCALE_MODE_IDS["rceil"])
                e_key = Mux(above, amax[c].cand.e_key1, e_key)
            e_keys.append(e_key)
        y = {"lanes": lanes, **ctl_fields(x, scale_mode=False),
             "nonfinite": amax[0].cand.nonfinite,
             "zero": None if self.exponent_field_tree else amax[0].cand.zero}
        if rceil_built:
            y, e_keys = cross_tails(y, e_keys, "scale")
        else:
            y = wire(m, y, "q_scale_in")

        # -- cmp: per lane element binade br = key - e_key (negative: element subnormal) ------
        # This is the only per-lane use of a block-wide value, and e_key's register drives all
        # k lanes, spread over the die: its routing alone takes about half a 200 MHz cycle.  So
        # this section is one subtraction per lane and nothing else (a carry chain whose sum
        # bits feed the cmp register directly); every test of br comes after the register, in
        # shift, on lane-local values.  br's exact range (key in [zero_key, e_max_key], e_key
        # within the clamp) sets its width: 10 bits for bf16/fp32 input.
        br_lo = zero_key - (SCALE_EMAX + e_key_off)
        br_hi = e_max_key - (SCALE_EMIN + e_key_off)
        bw = max(bits_for(br_lo, True), bits_for(br_hi, True))
        lanes = []
        for i in range(k):
            ln = y.lanes[i]
            e_key = e_keys[i * len(e_keys) // k]  # its group's copy
            br = wire(m, (ln.key - e_key)[:bw].as_signed(), f"lane{i}_br")
            lanes.append({"neg": ln.neg, "zero": ln.zero, "s2": ln.s2, "br": br})
        # beside the lanes: the scale code e + 127, 0 for a zero block, 255 for a NaN/Inf one
        scale = (e_keys[0] + (SCALE_BIAS - e_key_off))[:8]
        if not self.exponent_field_tree:
            scale = Mux(y.zero, 0, scale)
        scale = Mux(y.nonfinite, SCALE_NAN, scale)
        y = cross({"lanes": lanes, **ctl_fields(y, scale_mode=False), "scale": scale,
                   "nonfinite": y.nonfinite}, "cmp")

        # -- shift: exponent field (0 below emin) and alignment shift ------------------------
        # Two range tests of br (br < 0: element subnormal; br < -keep: nothing reaches n) and
        # the low bits of br + 1 and -br, in parallel.  No test for br above the element's
        # range: the block's scale puts the largest lane in the top normal binade or below
        # (br <= emax - emin; the scale's clamp at 2^127 only ever raises br of rceil's
        # a = 1 back to that of a = 0), so br + 1 <= b_ovf + 1 always fits the field, and
        # codes above max_code are clamped by the round section's `sat` test.  (An early
        # saturation `br > b_ovf` was here: it could never fire.  docs/verification.md.)
        fw, sw = bits_for(b_ovf + 1), bits_for(keep)
        lanes = []
        for i in range(k):
            ln = y.lanes[i]
            br = ln.br
            under = br[-1]  # br < 0
            # gates, not carry chains: see less_than_const
            gone = less_than_const(m, br, -keep, f"lane{i}_gone", tree=True)
            field = Mux(under, 0, increment_gates(br[:fw]))  # (br + 1)[:fw]
            field = wire(m, field, f"lane{i}_field")
            sh = wire(m, Mux(~under, 0, Mux(gone, keep, negate_gates(br[:sw])[:sw])),
                      f"lane{i}_sh")  # (-br)[:sw]
            lanes.append({"neg": ln.neg, "zero": ln.zero, "s2": ln.s2, "sh": sh,
                          "field": field})
        z = cross({"lanes": lanes, **ctl_fields(y, scale_mode=False), "scale": y.scale,
                   "nonfinite": y.nonfinite}, "shift")

        # -- align: right shift onto the grid: n (hidden bit included), fraction, sticky -----
        lanes = []
        for i in range(k):
            ln = z.lanes[i]
            v = Cat(Const(0, f), ln.s2)  # s2 with f fraction bits below
            kept = wire(m, v[d0:] >> ln.sh, f"lane{i}_kept")  # keep = mb + 1 + f bits
            sticky = 0
            for j in range(d0):  # v[j] is shifted out when j < d0 + sh
                sticky = sticky | v[j]
            for j in range(d0, len(v)):  # sh > j - d0, as gates (see less_than_const)
                out = ~less_than_const(m, ln.sh, j - d0 + 1, f"lane{i}_out{j}", tree=True)
                sticky = sticky | (v[j] & out)
            lanes.append({"neg": ln.neg, "zero": ln.zero, "field": ln.field,
                          "n": kept[f:f + mb], "frac": kept[:f],
                          "sticky": wire(m, sticky, f"lane{i}_sticky")})
        z = cross({"lanes": lanes, **ctl_fields(z, scale_mode=False), "scale": z.scale,
                   "nonfinite": z.nonfinite}, "align")

        # -- round: increment, saturate (code + 1 and both saturation tests in parallel) ----
        rounding = z.rounding if runtime_rounding else ROUNDING_IDS[self.rounding]
        lanes = []
        for i in range(k):
            ln = z.lanes[i]
            n, frac = ln.n, ln.frac
            code = wire(m, Cat(n, ln.field), f"lane{i}_code")  # IEEE-style E.M, unrounded
            up = round_increment(m, frac, ln.sticky, n[0], rounding,
                                 z.random[i] if self.stochastic else None, name=f"lane{i}_up")
            sat_inc = ~less_than_const(m, code, fmt.max_code - 1, f"lane{i}_sat_inc", tree=True)
            sat = ~less_than_const(m, code, fmt.max_code, f"lane{i}_sat", tree=True)
            inc = Mux(sat_inc, fmt.max_code, code + 1)
            same = Mux(sat, fmt.max_code, code)
            mag = wire(m, Mux(up, inc, same)[:fmt.bits], f"lane{i}_mag")
            zero = ln.zero
            if fmt.twos_complement:  # a NaN/Inf block's codes are a zero lane's (see output)
                zero = wire(m, zero | z.nonfinite, f"lane{i}_zero_code")
            lanes.append({"neg": ln.neg, "zero": zero, "mag": mag})
        z = cross({"lanes": lanes, "scale": z.scale,
                   "nonfinite": None if fmt.twos_complement else z.nonfinite}, "round")

        # -- output: zero, sign, NaN/Inf block ------------------------------------------------
        # A NaN/Inf block's codes are all 0.  Sign-magnitude: a select after the encoding.
        # Two's complement has no signed zero, so there the block's codes are its zero lanes'
        # (round ORs the flag into each lane's): the select of 0 after the negation's carry
        # chain, in front of the output register, became the register's synchronous reset in
        # yosys, its condition ANDed with the stage enable in a LUT driving every LSR
        # (bf16 -> int8: q_output_en -> q_output, 1 cell, 0.9 ns logic + 4.2-4.4 ns routing).
        codes = []
        for i in range(k):
            ln = z.lanes[i]
            code = encode_element(m, ln.neg, Mux(ln.zero, 0, ln.mag), fmt, f"lane{i}_out")
            codes.append(code if fmt.twos_complement else Mux(z.nonfinite, 0, code))
        out = cross({"scale": z.scale, "codes": codes}, "output")

        m.d.comb += self.o.payload.eq(out)
        pipe.connect(i_valid=self.i.valid, i_ready=self.i.ready,
                     o_valid=self.o.valid, o_ready=self.o.ready)
        return m


# ----------------------------------------------------------------------------------------------
# CLI
# ----------------------------------------------------------------------------------------------
def _add_arguments(p):
    p.add_argument("--format", required=True, help=format_help())
    p.add_argument("--block-size", type=int, default=32, help="k, a power of two 2..64")
    p.add_argument("--input", default="fp32", help=f"input format: {', '.join(INPUTS)}")
    p.add_argument("--rounding", default="rne",
                   help=f"{', '.join(ROUNDINGS)} (runtime: chosen per block by a 2-bit payload "
                        f"field; stochastic and runtime add the random field)")
    p.add_argument("--scale-mode", default="floor",
                   help=f"{', '.join(SCALE_MODES)} (runtime: chosen per block by a 1-bit "
                        f"payload field)")
    p.add_argument("--random-bits", type=int, default=8,
                   help=f"R, bits per lane of the random field (stochastic and runtime "
                        f"rounding), 1..{MAX_RANDOM_BITS}")
    p.add_argument("--stages", type=int, default=None,
                   help="pipeline registers = latency in cycles, 1..7+log2(k) (12 for "
                        "k = 32) from fp32 or bf16 with the floor scale, up to two more from "
                        "fp16 or with rceil (an error names the bound); default 5+log2(k), 10 "
                        "for k = 32, one more for int8 and from fp16")


def _build(a):
    return MXQuantizer(a.format, a.block_size, a.input, rounding=a.rounding,
                       scale_mode=a.scale_mode, random_bits=a.random_bits, stages=a.stages)


def cli_units():
    defaults = [["--format", f, "--input", "fp32"] for f in golden.FORMATS]
    defaults += [["--format", f, "--input", "bf16"] for f in ("fp8_e4m3", "fp4_e2m1", "int8")]
    defaults += [["--format", "fp8_e5m2", "--input", "fp16"]]
    return [UnitSpec("quantizer", "k floating-point values -> E8M0 scale + k element codes",
                     _add_arguments, _build, defaults)]

