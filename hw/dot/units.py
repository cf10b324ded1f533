"""MX dot-product units over the fused block step ``RNE_fp32(c + 2^(sa+sb-254) * sum a_i*b_i)``.

* :class:`MXDot` -- one block pair (formats ``fmt_a`` x ``fmt_b``, block size ``k``) and an fp32
  accumulator input per clock, one fp32 result per block pair (``docs/numerics.md`` section 5).
* :class:`MXDotGeneral` -- the OCP DotGeneral: runs of block pairs chained through the same
  fused step, one rounding per block, in order; interleaved runs keep it busy every clock.

The arithmetic (:func:`hw.dot.fused_step.build_fused_step`) is the bit-level statement of
``golden._kernels.dot_step``:

1. Each element decodes to ``(-1)^neg * sig * 2^(shift + lsb_exp)`` (int8 as sign-magnitude
   "E1M6", :func:`hw.elements.decode_element`).  ``sig_a * sig_b << (shift_a + shift_b)``
   is the exact product in units of ``2^(lsb_a + lsb_b)``.
2. The ``k`` products add up exactly in a signed fixed-point sum ``S`` whose width
   (:attr:`DotGeometry.sum_bits`) is derived from the formats' largest finite magnitudes.
3. ``T = S * 2^eT`` and ``c`` are placed exactly in an ``N``-bit window (``N = W + G + 2``,
   ``G = 25``), anchored on whichever of the two reaches higher; bits of the other operand that
   fall below the window fold into a sticky bit.  ``docs/dot.md`` proves this never changes
   the rounded result.
4. The window sum is normalized (the shift clamped so that subnormal results come out
   denormalized) and rounded once at a fixed place (RNE, overflow to Inf).

Special values (NaN scale, NaN/Inf codes, Inf*0, opposite Infs, NaN/Inf ``c``) are summarized
per lane and override the result.
"""

from __future__ import annotations

import argparse

from amaranth.hdl import Module, unsigned
from amaranth.lib import data

import golden

from ..elements import block_layout
from ..params import check_power_of_two
from ..registry import UnitSpec, format_help
from ..unit import Unit
from .contexts import AccumulatorContexts
from .epilogue import epilogue_sections
from .fused_step import MULTIPLIERS
from .nvfp4_scale import SCALE_FORMATS, check_levels, nvfp4_scale_format
from .parameters import (
    accumulation_suffix,
    accumulator_bits,
    build_run_lanes,
    build_step,
    fused_step_parameters,
    multipliers_suffix,
)

__all__ = ["MXDot", "MXDotGeneral", "cli_units", "fused_step_parameters", "multipliers_suffix",
           "accumulation_suffix", "add_fused_step_options", "add_accumulation_option",
           "formats_from_args", "build_step"]


class MXDot(Unit):
    """Fused MX block dot product: one block pair and an fp32 accumulator in per clock.

    ``o.payload = RNE_fp32(c + 2^(sa+sb-254) * sum_i a_i*b_i)`` with the contract's special
    values (section 4): NaN results are 0x7FC00000, an exact zero is +0.

    Parameters
    ----------
    fmt_a, fmt_b : str or ElementFormat
        Element formats of A and B (any of the six; mixed pairs allowed), or ``"nvfp4"``
        for both: fp4_e2m1 codes with UE4M3 scale bytes, ``T = (sum a_i*b_i) * sa * sb``
        (:mod:`hw.dot.nvfp4_scale`; 0x7F and bytes with bit 7 set are NaN; module
        ``nvfp4_dot_k<k>_s<stages>``).
    block_size : int
        Elements per block, a power of two in 2..64; None (default): 32, nvfp4 16.
    stages : int
        Pipeline registers, 1..``max_stages`` (the latency); None (the default):
        :func:`hw.pipeline.default_stages`, which for every format pair registers every
        section boundary: at k = 32, 18, plus one for the sign of a float wide factor
        (``factors``: every pair but int8 x int8); one where the lane shift is wider than
        :data:`hw.dot.fused_step.SPLIT_LANE_SHIFT_BITS` (a pair with an fp8 or fp6_e3m2
        operand), whose shift has a boundary between its low and high bits; one where the
        window is wider than :data:`hw.dot.fused_step.SPLIT_ADD_BITS` (fp8_e4m3 x fp8_e4m3
        and the fp8_e5m2 pairs but x fp4_e2m1), whose add has a boundary between its halves;
        one where the block sum is wider than :data:`hw.dot.fused_step.SPLIT_TREE_BITS`
        (fp8_e5m2 x fp8_e5m2), summed in halves a section apart; one where LUT products
        have a narrow factor wider than :data:`hw.dot.fused_step.SPLIT_MULTIPLY_BITS` (every
        pair without fp4_e2m1), whose tree of partial products is spread over two
        sections; and two for MULT18X18D blocks (the routes to and from the DSP column).
        The block sum's adder tree has one section per level (five at k = 32, six at 64);
        below k = 8 the frame's sections without a level share a stage with their
        neighbours.  Fewer registers are placed by
        :func:`hw.pipeline.place_registers` on the delays of
        :func:`hw.dot.fused_step.dot_sections`.
    multipliers : {"lut", "dsp", "mult18x18d"}
        Lane significand products in LUTs and carry chains (default); as ``*`` for the
        synthesis tool's DSP multipliers (``"dsp"``: ECP5 one MULT18X18D per lane, with
        the registers around it in the fabric unless the tool moves them in); or one
        instantiated ECP5 MULT18X18D per lane with its own input and output registers
        (``"mult18x18d"``, :mod:`hw.dsp`: two sections more, the routes to and from the DSP
        column).  Same function; the module name gets ``_dsp`` or ``_mult18x18d``.
    accumulation : {"exact", "tcgen05.mxf8f6f4", "tcgen05.mxf4", "tcgen05.mxf4nvf4"}
        The block step's numerics (``docs/numerics.md`` section 8, ``docs/dot.md``,
        "Accumulation modes"): ``"exact"`` (the default, this fused step) or an NVIDIA
        Blackwell truncating step (:mod:`hw.dot.truncated_step`, ``block_size`` 32,
        ``multipliers`` ``"lut"`` or ``"dsp"``; every term truncated below the step's largest
        exponent, the sum rounded toward zero, NaN 0x7FFFFFFF): ``"tcgen05.mxf8f6f4"`` (OCP
        fp8/fp6/fp4 formats, a step per block) or ``"tcgen05.mxf4"`` (fp4_e2m1 x fp4_e2m1:
        in MXDot a step per block, which is golden's step of that block and an all-zero
        second one; MXDotGeneral chains a step per 64 elements), or ``"tcgen05.mxf4nvf4"``:
        with E8M0 scales the same at ``block_size`` 16 or 32, with UE4M3 ones (``"nvfp4"``,
        ``block_size`` 16) each group of 16 products times both scale
        significands, at the scales' exponents, the scale bytes' sign bit ignored
        (:mod:`hw.dot.truncated_f4`).  Checked with golden's
        ``check_accumulation`` (its one-line errors); the module name gets
        ``_tcgen05_mxf8f6f4``, ``_tcgen05_mxf4`` or ``_tcgen05_mxf4nvf4``.

    Members
    -------
    i : In(stream.Signature(StructLayout))
        ``a``, ``b``: :func:`hw.elements.block_layout` (scale, codes); ``c``: fp32 bits.
    o : Out(stream.Signature(StructLayout))
        ``result``: fp32 bits of the result.

    Attributes
    ----------
    latency : int
        ``stages``: a block accepted in cycle t leaves in cycle t + latency (without
        backpressure).  Initiation interval 1; lossless under any valid/ready pattern (all
        registers share one enable, see :class:`hw.pipeline.Pipeline`).
    sections : dict of str to float
        :func:`hw.dot.fused_step.dot_sections` of the geometry and the multipliers.
    max_stages : int
        The deepest pipeline, every boundary registered (``len(sections)``).
    primitives : tuple of str
        Vendor cells the Verilog instantiates (``("MULT18X18D",)`` with
        ``multipliers="mult18x18d"``): simulation needs their models,
        :func:`hw.dsp.simulation_models`.
    i_ready_registered : bool
        True: the stage enables, and ``i.ready``, are flip-flops (:class:`hw.pipeline.Pipeline`,
        a skid register behind the last stage), so no gate sits between ``o.ready`` and the
        enables' fan-out to every register.
    """

    #: ``i.ready`` is a register (the sidecar's ``flow_control``): the stage enables start at
    #: flip-flops.  fp8_e4m3 x fp8_e4m3, k = 32, 15 stages: 168.7 MHz against 164.2 with an
    #: enable gated from ``o.ready`` before each stage's fan-out (medians of nextpnr seeds 1-3).
    i_ready_registered = True
    #: Whether synthesis may make a stage register's clear its synchronous reset
    #: (:class:`hw.pipeline.Pipeline`'s ``extract_reset``): no, as the quantizer's.  With the
    #: stage enables in parts (below), fp8_e4m3 at 20 stages measured 224.4 MHz (224.3-228.7)
    #: against 216.6 (211.9-224.0), +260 LUT4 (medians of nextpnr seeds 1-3; docs/dot.md,
    #: flow control).
    extract_reset = False
    #: The most bits of a stage register one copy of the stage enable loads
    #: (:class:`hw.pipeline.Pipeline`'s ``enable_load``): 1-4 copies per stage at k = 32 (one
    #: enable to the decode stage's 1,000 flip-flops was a worst path, 3.8-4.1 ns of routing).
    enable_load = 256

    def __init__(self, fmt_a, fmt_b=None, *, block_size: int | None = None,
                 stages: int | None = None, multipliers: str = "lut",
                 accumulation: str = "exact"):
        self._parameters = fused_step_parameters(self, fmt_a, fmt_b, block_size, stages,
                                                 multipliers, accumulation=accumulation,
                                                 scale_formats=SCALE_FORMATS)
        super().__init__(data.StructLayout({
            "a": block_layout(self.fmt_a, self.block_size),
            "b": block_layout(self.fmt_b, self.block_size),
            "c": unsigned(32),
        }), data.StructLayout({"result": unsigned(32)}))

    @property
    def module_name(self) -> str:
        if self.scale_format == "ue4m3":
            return (f"nvfp4_dot_k{self.block_size}_s{self.stages}"
                    + multipliers_suffix(self.multipliers)
                    + accumulation_suffix(self.accumulation))
        return (f"mx_dot_{self.fmt_a.name}_{self.fmt_b.name}_k{self.block_size}_s{self.stages}"
                + multipliers_suffix(self.multipliers) + accumulation_suffix(self.accumulation))

    @property
    def parameters(self) -> dict:
        return dict(self._parameters)

    def elaborate(self, platform):
        m = Module()
        pipe = self.pipeline(m, "dot")
        p = self.i.payload
        out = build_step(self, pipe, p.a, p.b, p.c)
        m.d.comb += self.o.payload.result.eq(out.result)
        pipe.connect(i_valid=self.i.valid, i_ready=self.i.ready, o_valid=self.o.valid,
                     o_ready=self.o.ready)
        return m


class MXDotGeneral(Unit):
    """MX DotGeneral: runs of block pairs chained through the fused step, one rounding per
    block, in order (``docs/numerics.md`` section 5), with interleaved accumulation contexts.

    Each input beat is one block pair of run ``ctx``.  ``first`` starts a run from ``c0``
    (``c0`` is ignored otherwise); blocks of one run must arrive in order; ``last`` ends the run
    and emits ``acc`` with the run's ``ctx``.  A single-block run sets both ``first`` and
    ``last``.  Several runs may be open at once, one per context.

    A block may only enter when its context has no block still in the pipeline (a per-context
    busy bit), or in the cycle that block leaves: the result of a block that does not end its
    run is forwarded to a block of the same context entering then; after a ``last`` block
    only a ``first`` block enters in that cycle (it takes ``c0``;
    :class:`hw.dot.contexts.AccumulatorContexts`, shared with :class:`hw.gemm.MXGemm`).
    Hence:

    * one run alone: one block every ``latency`` cycles;
    * ``>= latency`` runs interleaved round-robin: one block per clock.

    Parameters
    ----------
    fmt_a, fmt_b : str or ElementFormat
        As for :class:`MXDot` (``"nvfp4"`` on both sides: UE4M3 scales).
    block_size : int
        A power of two in 2..64; None (default): 32, nvfp4 16.
    contexts : int
        Accumulation contexts (simultaneously open runs), a power of two in 1..64.
    stages : int
        Pipeline registers of the fused step (= ``latency``), as for :class:`MXDot`.
    multipliers : {"lut", "dsp", "mult18x18d"}
        As for :class:`MXDot` (so is the ``primitives`` attribute).
    accumulation : {"exact", "tcgen05.mxf8f6f4", "tcgen05.mxf4", "tcgen05.mxf4nvf4"}
        As for :class:`MXDot`, chained as ``golden.dot_blocks`` chains the steps: in
        ``"tcgen05.mxf8f6f4"`` each block is one tcgen05 step, its fp32 result the next
        block's ``c``; in ``"tcgen05.mxf4"`` (blocks of 32) and ``"tcgen05.mxf4nvf4"`` (E8M0
        scales, blocks of 16 or 32; nvfp4, UE4M3 scales, blocks of 16) a step takes 64
        elements, two or four blocks of a run (a run's last step may hold fewer): each
        context's accumulator holds the step's ``c`` and the exact sums of its earlier
        blocks' groups (with UE4M3 scales their values, the sums times the scale
        significands' product; :mod:`hw.dot.chained_f4`), and the block that ends the step
        or the run adds them up.  With nvfp4 and ``levels=2`` the epilogue follows the run's
        last step, as golden's ``dot`` applies the tensor scales once to the GPU sum (a NaN
        result 0x7FFFFFFF); the accumulators chain the steps' state, not the epilogue's
        result.
    levels : {1, 2}, optional
        nvfp4 only: 2 (its default) applies the tensor scales' epilogue ``f(alpha * sum)``
        to each run's result (:mod:`hw.dot.epilogue`: one fp32 RNE multiply, ten sections
        after the step's); 1 (MX formats: the only choice) none.

    Members
    -------
    i : In(stream.Signature(StructLayout))
        ``a``, ``b``: :func:`hw.elements.block_layout`; ``c0``: fp32 initial accumulator (used with
        ``first``); ``first``, ``last``: run markers; ``ctx``: context id; with
        ``levels=2``, ``alpha``: fp32 bits, read on the ``last`` beat (``f(Pa * Pb)``,
        ignored on the others).
    o : Out(stream.Signature(StructLayout))
        ``result``: fp32 bits; ``ctx``: the run's context.  One beat per run (on ``last``).

    Attributes
    ----------
    latency : int
        ``stages``: a run's ``last`` block accepted in cycle t is presented in cycle
        t + latency (without backpressure).
    sections : dict of str to float
        As :class:`MXDot`'s, with ``decode`` weighing
        :data:`hw.dot.fused_step.FORWARD_DELAY` more: ``c`` comes from the accumulator's
        forwarding path (:func:`hw.dot.fused_step.dot_sections`, ``forwarded_c``).  So
        fewer registers than every boundary may be placed otherwise than in MXDot.
    max_stages : int
        ``len(sections)``, as for :class:`MXDot`.
    """

    #: The fused step's pipeline (:class:`hw.pipeline.Pipeline`) has each stage's enable a
    #: flip-flop; only last blocks wait at the output.  But ``i.ready`` is not a register: a
    #: block may enter when its context's block leaves in the same cycle, which a last block
    #: does with ``o.ready`` (the sidecar's ``flow_control``).
    i_ready_registered = False
    #: As MXDot's (:attr:`MXDot.extract_reset`, :attr:`MXDot.enable_load`): fp8_e4m3 at 22
    #: stages measured 235.1 MHz (220.2-239.7) against 216.1 (213.2-220.7) with the
    #: ``Pipeline`` defaults, +282 LUT4 (medians of nextpnr seeds 1-3).
    extract_reset = MXDot.extract_reset
    enable_load = MXDot.enable_load

    def __init__(self, fmt_a, fmt_b=None, *, block_size: int | None = None, contexts: int = 4,
                 stages: int | None = None, multipliers: str = "lut",
                 accumulation: str = "exact", levels: int | None = None):
        self.levels = check_levels(levels, nvfp4_scale_format(fmt_a, fmt_b, SCALE_FORMATS))
        shared = fused_step_parameters(self, fmt_a, fmt_b, block_size, stages, multipliers,
                                       forwarded_c=True, accumulation=accumulation,
                                       scale_formats=SCALE_FORMATS,
                                       extra_sections=epilogue_sections()
                                       if self.levels == 2 else None)
        check_power_of_two("contexts", contexts, 1, 64)
        self.contexts = contexts
        self.ctx_bits = (contexts - 1).bit_length()
        nv = {"levels": self.levels} if self.scale_format == "ue4m3" else {}
        self._parameters = {**shared, "contexts": contexts, **nv}
        alpha = {"alpha": unsigned(32)} if self.levels == 2 else {}
        super().__init__(data.StructLayout({
            "a": block_layout(self.fmt_a, self.block_size),
            "b": block_layout(self.fmt_b, self.block_size),
            "c0": unsigned(32),
            "first": unsigned(1),
            "last": unsigned(1),
            "ctx": unsigned(self.ctx_bits),
            **alpha,
        }), data.StructLayout({"result": unsigned(32), "ctx": unsigned(self.ctx_bits)}))

    @property
    def module_name(self) -> str:
        if self.scale_format == "ue4m3":
            return (f"nvfp4_dot_general_l{self.levels}_k{self.block_size}_c{self.contexts}"
                    f"_s{self.stages}" + multipliers_suffix(self.multipliers)
                    + accumulation_suffix(self.accumulation))
        return (f"mx_dot_general_{self.fmt_a.name}_{self.fmt_b.name}_k{self.block_size}"
                f"_c{self.contexts}_s{self.stages}" + multipliers_suffix(self.multipliers)
                + accumulation_suffix(self.accumulation))

    @property
    def parameters(self) -> dict:
        return dict(self._parameters)

    def elaborate(self, platform):
        m = Module()
        p = self.i.payload
        pipe = self.pipeline(m, "dotg")
        contexts = AccumulatorContexts(m, self.contexts, p.ctx, p.first, [p.c0], [None],
                                       width=accumulator_bits(self))
        # one lane: the step (and with levels=2 the epilogue) on the pipeline's own names
        build_run_lanes(self, pipe, contexts, [(pipe.scope(), p.a, p.b)], i=self.i, o=self.o,
                        targets=[self.o.payload.result])
        return m


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------

def add_fused_step_options(p: argparse.ArgumentParser):
    """The command-line options of the fused step's units: formats, block size, stages,
    multipliers."""
    p.add_argument("--format-a", help=format_help("element format of A (default: --format)"))
    p.add_argument("--format-b", help=format_help("element format of B (default: --format)"))
    p.add_argument("--format", help=format_help("element format of both A and B"))
    p.add_argument("--block-size", type=int, default=32,
                   help="elements per block (2..64; default 32, nvfp4 16)")
    p.add_argument("--stages", type=int, default=None,
                   help="pipeline registers = latency in cycles (default: every section "
                        "boundary, 18-21 at k = 32 with LUT products, mult18x18d two more)")
    p.add_argument("--multipliers", choices=MULTIPLIERS, default="lut",
                   help="lane products in LUTs and carry chains (lut, default), as `*` for "
                        "the synthesis tool's DSP multipliers (dsp), or as instantiated ECP5 "
                        "MULT18X18D blocks with their own registers (mult18x18d; simulation "
                        "needs hw/models/MULT18X18D.v)")


def add_accumulation_option(p: argparse.ArgumentParser):
    """The ``--accumulation`` option of MXDot and MXDotGeneral."""
    p.add_argument("--accumulation", default="exact",
                   help="the block step's numerics: exact (one RNE per block), "
                        "tcgen05.mxf8f6f4 (NVIDIA Blackwell's truncating steps: fp8/fp6/fp4, "
                        "k = 32), tcgen05.mxf4 (fp4_e2m1, k = 32) or tcgen05.mxf4nvf4 "
                        "(fp4_e2m1 with E8M0 scales, k = 16 or 32, or nvfp4, k = 16); "
                        "docs/numerics.md section 8")


def formats_from_args(args) -> tuple[str, str]:
    """``(format_a, format_b)`` from the options of :func:`add_fused_step_options`."""
    fmt_a, fmt_b = args.format_a or args.format, args.format_b or args.format
    if args.format and ((args.format_a and args.format_a != args.format)
                        or (args.format_b and args.format_b != args.format)):
        raise ValueError("--format sets both formats; do not combine it with a different "
                         "--format-a/--format-b")
    if fmt_a is None or fmt_b is None:
        raise ValueError("give --format, or both --format-a and --format-b")
    return fmt_a, fmt_b


def _add_dot(p):
    add_fused_step_options(p)
    add_accumulation_option(p)
    p.set_defaults(block_size=None)  # 32, or 16 for nvfp4 (fused_step_parameters)


def _build_dot(args):
    fmt_a, fmt_b = formats_from_args(args)
    return MXDot(fmt_a, fmt_b, block_size=args.block_size, stages=args.stages,
                 multipliers=args.multipliers, accumulation=args.accumulation)


def _add_general(p):
    _add_dot(p)
    p.add_argument("--contexts", type=int, default=4,
                   help="accumulation contexts (power of two, 1..64)")
    p.add_argument("--levels", type=int, choices=(1, 2), default=None,
                   help="nvfp4: 2 (default) applies the tensor scales' epilogue "
                        "f(alpha * sum), alpha the input field of a run's last beat; 1 none")


def _build_general(args):
    fmt_a, fmt_b = formats_from_args(args)
    return MXDotGeneral(fmt_a, fmt_b, block_size=args.block_size, contexts=args.contexts,
                        stages=args.stages, multipliers=args.multipliers,
                        accumulation=args.accumulation, levels=args.levels)


def cli_units() -> list[UnitSpec]:
    same = [["--format", f, "--block-size", "32"] for f in golden.FORMATS]
    mixed = [["--format-a", "fp8_e4m3", "--format-b", "fp4_e2m1", "--block-size", "32"],
             ["--format-a", "int8", "--format-b", "fp6_e2m3", "--block-size", "32"]]
    return [
        UnitSpec("dot", "fused MX block dot product: RNE_fp32(c + sum a*b) per block pair",
                 _add_dot, _build_dot,
                 same + mixed + [["--format", "nvfp4", "--block-size", "16"]]),
        UnitSpec("dot-general", "MX DotGeneral: runs of blocks chained, interleaved contexts",
                 _add_general, _build_general,
                 [["--format", "fp8_e4m3", "--block-size", "32"],
                  ["--format", "nvfp4", "--block-size", "16"]]),
    ]
