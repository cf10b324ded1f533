"""MX quantizer: a block of k floating-point values -> one E8M0 scale and k element codes.

Implements section 3 of ``docs/numerics.md`` (quantization) bit for bit;
``golden._kernels.quantize_blocks`` is the reference.
Architecture, interface timing and verification: ``docs/quantizer.md``.
"""

from __future__ import annotations

from amaranth.hdl import Module, unsigned
from amaranth.lib import data

import golden
from golden.formats import ROUNDING_IDS, SCALE_MODE_IDS

from .elements import block_layout
from .params import check_block_size, check_choice, check_int
from .pipeline import registered_boundaries
from .quantize.geometry import QuantizeGeometry
from .quantize.sections import (
    NORM_SHIFT_BITS,
    OUTPUT_DELAY,
    SCALE_COPIES,
    SCALE_SELECT_DELAY,
    SPLIT_LEVEL_DELAY,
    TREE_LEVEL_DELAY,
    exponent_field_tree,
    max_tree_radices,
    max_tree_split,
    quantizer_sections,
    subnormal_shift_bits,
)
from .quantize.step import quantize_step
from .registry import UnitSpec, format_help
from .unit import Unit

__all__ = ["MXQuantizer", "quantizer_sections", "max_tree_radices", "max_tree_split",
           "exponent_field_tree", "subnormal_shift_bits", "NORM_SHIFT_BITS", "TREE_LEVEL_DELAY",
           "SPLIT_LEVEL_DELAY", "SCALE_SELECT_DELAY", "OUTPUT_DELAY", "SCALE_COPIES", "cli_units"]

ROUNDINGS = (*ROUNDING_IDS, "runtime")
SCALE_MODES = (*SCALE_MODE_IDS, "runtime")
INPUTS = ("fp32", "bf16", "fp16")
MAX_RANDOM_BITS = 16


class MXQuantizer(Unit):
    """Quantize one block of ``block_size`` values per clock to an MX format.

    Parameters
    ----------
    fmt : str or golden.ElementFormat
        Element format: any member of the family (:func:`golden.element_format`: the six OCP
        formats, ``e<E>m<M>``, ``float8_e4m3``, ``float8_e3m4``, ``int2`` .. ``int8``, or a
        :class:`golden.ElementFormat`).
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
    #: levels or fewer, that reset's LSR pin is the worst path: bf16 -> fp8_e4m3 at 10 stages
    #: places at 240.0 MHz without the extraction and 222.1 with it (medians of nextpnr seeds
    #: 1-3; docs/quantizer.md, 'No logic on the flip-flops' reset pins').
    extract_reset = False
    #: The most bits of a stage register one copy of the stage enable loads
    #: (:class:`hw.pipeline.Pipeline`'s ``enable_load``): 2-8 copies per stage at k = 32.
    #: With one enable per stage, its fan-out (``q_amax2_cmp_en -> q_amax2_cmp``, 1.0 ns logic
    #: + 4.0-4.1 ns routing) binds fp32 -> fp6_e2m3 at 10 stages to 199.4 MHz; in parts of 160
    #: bits it places at 217.2 (216.5-219.4, seeds 1-3; docs/quantizer.md, flow control).
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

    @property
    def geometry(self) -> QuantizeGeometry:
        """The parameters and derived constants the datapath is built from
        (:func:`hw.quantize.step.quantize_step`)."""
        return QuantizeGeometry(
            fmt=self.fmt, input_format=self.input_format, block_size=self.block_size,
            rounding=self.rounding, scale_mode=self.scale_mode, random_bits=self.random_bits,
            exponent_field_tree=self.exponent_field_tree, tree_radices=tuple(self.tree_radices),
            tree_split=self.tree_split, scale_copies_at=self.scale_copies_at,
            scale_copies=self.scale_copies)

    def elaborate(self, platform):
        m = Module()
        pipe = self.pipeline(m, "q")
        out = quantize_step(pipe.scope(), self.geometry, self.i.payload)
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

