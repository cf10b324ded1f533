# amaranth: UnusedElaboratable=no
"""The units under proof: how to build each at a block size and depth, and where its pipeline's
control registers are (the probes of the induction invariants, :mod:`formal.harness`).

Each unit is built at a small configuration (k = 2 or 4; the smallest element format that
keeps every section of the datapath, and a 16-bit float port where the unit has one), because
the flow-control properties do not depend on the block size and the miter's cost grows with
the datapath.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from amaranth.back import rtlil

from hw.dequantizer import DEQUANTIZER_SECTIONS, MXDequantizer
from hw.dot import MXDot, MXDotGeneral
from hw.dsp import MULT18X18D_REGISTERS
from hw.gemm import MXGemm
from hw.gemm.output import output_quantizer
from hw.nvfp4_dequantizer import NVFP4Dequantizer, nvfp4_sections
from hw.nvfp4_quantizer import NVFP4Quantizer
from hw.pipeline import registered_boundaries
from hw.quantizer import MXQuantizer, quantizer_sections

from .probes import enable_copies, lane_probes, pipeline_probes, replicas

__all__ = ["FormalUnit", "UNITS", "CUSTOM_UNITS", "NVFP4_UNITS", "NVFP4_QUANTIZER_UNITS",
           "GEMM_UNITS", "GPU_UNITS", "GPU_MODE", "GPU_BLOCK_SIZES", "SMALL_ONLY", "unit_by_name",
           "pipeline_probes",
           "enable_copies", "replicas", "default_configurations", "EXTRA_CONFIGURATIONS",
           "MULT18X18D_BLOCKS"]


@dataclass(frozen=True)
class FormalUnit:
    """One unit as the proofs see it.

    Attributes
    ----------
    name : str
        Short name (the report's rows).
    config : str
        The configuration proven, for the report (formats; block size and depth vary).
    build : callable
        ``build(k, stages)`` -> the unit (an Amaranth component with ``i``/``o`` streams).
    sections : callable
        ``sections(k, stages)`` -> the unit's pipeline sections (name -> delay) at block size
        ``k`` and depth ``stages`` (None: the deepest; the quantizer's block-max tree depends
        on the depth).
    prefix : str
        The ``name`` the unit gives its :class:`hw.pipeline.Pipeline` (prefix of the control
        registers' names in the netlist).
    runs : bool
        MXDotGeneral: one output per run (a block with ``last``), not per block.
    cuts : tuple of str
        Nets where a depth-dependent part of the datapath ends, for the register-bypass proof
        (:func:`formal.datapath.split_at_cuts`; those the netlist has): the quantizer's
        block-max tree outputs, the array ``amax`` (per copy of the scale path, the scale's
        ``e_key`` and flags as the tree's last level selects them, and the rceil flag where
        it is built), whose tree's shape follows the depth
        (:func:`hw.quantizer.max_tree_split`, and the replicas, ``scale_copies_at``).
        MXDotGeneral's cut is ``step_c``, the accumulator input entering its fused step.
    compared : tuple of str
        Internal nets the register-bypass proof compares besides ``o.payload``: MXDotGeneral's
        ``leave_result``, the value its accumulators load (the chain proof shows which block
        it belongs to; this shows it is the same function of that block at every depth).
    state : tuple of str
        Shell patterns naming the registers outside the pipeline (MXDotGeneral's and
        MXGemm's accumulators, busy bits and lanes' copies of the pipeline's output,
        ``<prefix>_<boundary>_o<c>...``, :meth:`hw.pipeline.Pipeline.output_copies`, which
        feed only the accumulators' side of the cuts).  The register-bypass proof accepts
        them only if no bit of the output payload depends on them once the datapath is cut
        at ``cuts``; it then proves the part after the cuts (the fused step) and leaves the
        part before them, whose state follows the depth's timing, to the chain proof
        (:class:`formal.chain_harness.ChainHarness`).
    blocks : tuple of (str, str)
        Registers of instantiated blocks that stand for a boundary's data register: (shell
        pattern of their names in the flattened netlist, the boundary).  The dot units'
        MULT18X18D builds: the blocks' A and B registers are ``operands``', their output
        register ``multiply``'s (:data:`MULT18X18D_BLOCKS`).  The register-bypass proof
        checks that they load on that boundary's enable where it is registered.
    base : str
        The :data:`UNITS` entry this is a configuration of (:data:`CUSTOM_UNITS`, the
        full-size rows); empty for the entries themselves (see :attr:`kind`).
    lanes : tuple of (str or None)
        The prefixes of the unit's datapath lanes on its one pipeline (MXGemm: ``r<r>c<c>``,
        one fused step per output); ``(None,)`` for a unit of one datapath.  The first lane
        crosses the pipeline's boundaries (registers ``<prefix>_<boundary>``), each other
        beside it in registers of its own (``<prefix>_<lane>_<boundary>``, on enable copies
        of the stage numbered after the first lane's, :meth:`hw.pipeline.Pipeline.beside`);
        a named lane's replicas, the first's too, are ``<prefix>_<lane>_<boundary>_r<c>``.
        With runs, each lane's accumulator nets are ``<lane>_step_c`` and
        ``<lane>_leave_result`` (:class:`hw.dot.contexts.AccumulatorContexts`).
    tail : tuple
        ``(sections, stages, prefix, lanes)`` of a second pipeline after the unit's, at a fixed
        depth (MXGemm's output quantizers, ``gq``; ``sections`` as (name, delay) pairs,
        ``lanes`` as :attr:`lanes`: the row's quantize step ``q0`` and the run's ``ctx``
        beside it), or empty.  Its depth adds to the latency, it holds blocks of its own
        (:meth:`capacity`), and its registers are probed with the unit's
        (:meth:`control_probes`).
    """

    name: str
    config: str
    build: Callable
    sections: Callable[[int, int | None], Mapping[str, float]]
    prefix: str
    runs: bool = False
    cuts: tuple[str, ...] = ()
    compared: tuple[str, ...] = ()
    state: tuple[str, ...] = ()
    blocks: tuple[tuple[str, str], ...] = ()
    base: str = ""
    lanes: tuple[str | None, ...] = (None,)
    tail: tuple = ()

    @property
    def kind(self) -> str:
        """The unit's :data:`UNITS` name (``quantizer``, ``dequantizer``, ``dot``,
        ``dot-general``), whatever configuration this is."""
        return self.base or self.name

    def max_stages(self, k: int) -> int:
        """The deepest pipeline at block size ``k`` (every boundary registered)."""
        return len(self.sections(k, None))

    def stage_settings(self, k: int) -> tuple[int, ...]:
        """The depths proven: 1, the middle and the maximum."""
        top = self.max_stages(k)
        return tuple(sorted({1, (1 + top) // 2, top}))

    @property
    def tail_stages(self) -> int:
        """The depth of the second pipeline (:attr:`tail`), 0 without one."""
        return self.tail[1] if self.tail else 0

    def latency(self, stages: int) -> int:
        """Cycles from a block's acceptance to its output, without backpressure."""
        return stages + self.tail_stages

    def capacity(self, stages: int) -> int:
        """Blocks the unit can hold at once: one per register stage, plus the skid register
        (of each pipeline, with a :attr:`tail`)."""
        return stages + 1 + (self.tail_stages + 1 if self.tail else 0)

    def drain_cycles(self, stages: int) -> int:
        """Cycles of ``o.ready`` high after which a block accepted before them has left (and
        the ``latency`` window: the registered stall sees ``o.ready`` one cycle late, and
        with a :attr:`tail` the unit's pipeline sees the tail's ``i.ready`` a cycle later)."""
        return self.capacity(stages)

    def net(self, lane: str | None, name: str) -> str:
        """The name of lane ``lane``'s net ``name`` (``<lane>_<name>``, or ``name``)."""
        return name if lane is None else f"{lane}_{name}"

    def control_probes(self, k: int, stages: int, *, text: str | None = None,
                       scope: str = "dut.", data: bool = False) -> dict[str, list[str]]:
        """The unit's pipeline registers (:func:`pipeline_probes`), by default the control
        registers under the harness's instance ``dut``; the enable copies are found in the
        unit's RTLIL (:func:`enable_copies`), ``text`` where the caller has converted it
        already."""
        sections = self.sections(k, stages)
        if text is None:
            text = rtlil.convert(self.build(k, stages), name="top")
        boundaries = registered_boundaries(sections, stages)
        copies = enable_copies(text, self.prefix, boundaries)
        probes = lane_probes(text, sections, stages, self.prefix, self.lanes, scope=scope,
                              data=data, copies=copies, hold_when=self.runs)
        if self.tail:  # the second pipeline's, after the unit's
            tail_sections, tail_stages, prefix, lanes = self.tail
            tail_sections = dict(tail_sections)
            tail_copies = enable_copies(
                text, prefix, registered_boundaries(tail_sections, tail_stages))
            for key, names in lane_probes(text, tail_sections, tail_stages, prefix, lanes,
                                           scope=scope, data=data,
                                           copies=tail_copies).items():
                probes[key] = probes.get(key, []) + names
        return probes


def _dot_sections(fmt_a: str, fmt_b: str):
    # the dot units' sections depend on the formats' window width, not the depth
    return lambda k, stages: MXDot(fmt_a, fmt_b, block_size=k).sections


def _dot_general_sections(fmt_a: str, fmt_b: str, levels: int | None = None):
    # MXDot's, but for c from the accumulator's forwarding path (hw.dot.fused_step)
    return lambda k, stages: MXDotGeneral(fmt_a, fmt_b, block_size=k, contexts=2,
                                          levels=levels).sections


class QuantizerInParts(MXQuantizer):
    """The quantizer with its stage registers loaded in parts of at most 16 bits
    (:attr:`hw.quantizer.MXQuantizer.enable_load`), so that at the proofs' small block sizes
    every stage has several enable copies, as every stage of a k = 32 build has (2-8 parts
    of at most 160 bits): the proofs then cover the copies and the parts."""

    enable_load = 16


def _quantizer(fmt: str, name: str = "quantizer", base: str = "") -> FormalUnit:
    return FormalUnit(name, f"{fmt} from bf16, rne, floor, stage registers in 16-bit parts",
                      lambda k, s: QuantizerInParts(fmt, k, "bf16", stages=s),
                      lambda k, s: quantizer_sections(fmt, k, s, "bf16"), "q",
                      cuts=("amax",), base=base)


def _dequantizer(fmt: str, name: str = "dequantizer", base: str = "") -> FormalUnit:
    return FormalUnit(name, f"{fmt} to fp16",
                      lambda k, s: MXDequantizer(fmt, k, "fp16", stages=s),
                      lambda k, stages: DEQUANTIZER_SECTIONS, "d", base=base)


def _dot(fmt_a: str, fmt_b: str, name: str = "dot", base: str = "") -> FormalUnit:
    return FormalUnit(name, f"{fmt_a} x {fmt_b}, fp32 accumulator",
                      lambda k, s: MXDot(fmt_a, fmt_b, block_size=k, stages=s),
                      _dot_sections(fmt_a, fmt_b), "dot", base=base)


#: MXDotGeneral's registers outside the pipeline: the accumulators, the busy bits and its
#: lane's copy of the pipeline's output (as each of MXGemm's lanes has).
_DOTG_STATE = ("acc[0-9]*", "busy", "dotg_*_o[0-9]*")


def _dot_general(fmt_a: str, fmt_b: str, name: str = "dot-general",
                 base: str = "", levels: int | None = None) -> FormalUnit:
    return FormalUnit(name, f"{fmt_a} x {fmt_b}, 2 contexts"
                      + (f", levels={levels}" if levels else ""),
                      lambda k, s: MXDotGeneral(fmt_a, fmt_b, block_size=k, contexts=2,
                                                stages=s, levels=levels),
                      _dot_general_sections(fmt_a, fmt_b, levels), "dotg", runs=True,
                      cuts=("step_c",), compared=("leave_result",),
                      state=_DOTG_STATE, base=base)


def _gemm(fmt: str, out_format: str | None = None, name: str = "gemm",
          base: str = "", levels: int | None = None,
          accumulation: str = "exact") -> FormalUnit:
    """MXGemm at its smallest tile that keeps its structure: 1 x 2 lanes (a lane beside the
    first, B blocks per column, A's shared along the row), 2 contexts; with ``out_format``
    its MX output, the quantize step of the row after the tile's pipeline (:attr:`tail`);
    ``levels`` and ``accumulation`` as MXGemm's."""
    rows, cols, lanes = 1, 2, ("r0c0", "r0c1")

    def build(k, s):
        return MXGemm(fmt, rows=rows, cols=cols, block_size=k, contexts=2, stages=s,
                      out_format=out_format, levels=levels, accumulation=accumulation)

    tail = ()
    if out_format is not None:
        q = output_quantizer(out_format, cols)
        tail = (tuple(q.sections.items()), q.stages, "gq", ("q0", "ctx"))
    return FormalUnit(name, f"{fmt} x {fmt}, {rows} x {cols} lanes, 2 contexts, "
                      + (f"{out_format} output" if out_format else "fp32 output")
                      + ("" if accumulation == "exact" else f", {accumulation}"),
                      build, lambda k, s: build(k, None).sections, "gemm", runs=True,
                      cuts=tuple(f"{lane}_step_c" for lane in lanes),
                      compared=tuple(f"{lane}_leave_result" for lane in lanes),
                      # the lanes' output copies; the waiting flag's copies (an MX output's
                      # o_ready copies, hw.pipeline.Pipeline.connect)
                      state=("r*c*_acc[0-9]*", "busy", "gemm_*_o[0-9]*", "gemm_hold[1-9]*"),
                      base=base, lanes=lanes, tail=tail)


UNITS = (
    _quantizer("fp8_e4m3"),
    _dequantizer("fp8_e4m3"),
    FormalUnit("nvfp4-dequantizer", "two level, to fp16",
               lambda k, s: NVFP4Dequantizer(k, "fp16", 2, stages=s),
               lambda k, stages: nvfp4_sections(2), "d"),
    _dot("fp4_e2m1", "fp4_e2m1"),
    _dot_general("fp4_e2m1", "fp4_e2m1"),
)

#: One configuration per unit in an element format beyond OCP's six, each on a rule the OCP
#: units do not use: the quantizer to the ``ieee`` e4m3 (Inf and NaN codes at E = 4, where
#: OCP's e4m3 is ``fn``), the dequantizer from two's-complement int4 (MXINT4), MXDot on a
#: mixed ``finite`` ExMy x intN pair, MXDotGeneral on two ``finite`` formats of different
#: exponent widths.  Proven at k = 2 only (:func:`formal.matrix.proof_jobs`), with the jobs
#: :data:`UNITS` have there; named ``<unit>-<formats>``.
CUSTOM_UNITS = (
    _quantizer("float8_e4m3", "quantizer-float8_e4m3", "quantizer"),
    _dequantizer("int4", "dequantizer-int4", "dequantizer"),
    _dot("e3m3", "int4", "dot-e3m3-int4", "dot"),
    _dot_general("e4m2", "e5m1", "dot-general-e4m2-e5m1", "dot-general"),
)


#: MXDot and MXDotGeneral with ``--format nvfp4`` (UE4M3 scales), proven at k = 2 with the
#: jobs of their unit there, and at k = 4 the flow jobs (:func:`formal.matrix.proof_jobs`).
#: MXDotGeneral without the tensor scales' epilogue (``levels=1``): the chain proof
#: (:class:`formal.chain_harness.ChainHarness`) asserts that an output beat is its run's chained
#: result, which ``f(alpha * sum)`` is not; the epilogue is checked in simulation (docs/dot.md,
#: NVFP4).
NVFP4_UNITS = (
    _dot("nvfp4", "nvfp4", "nvfp4-dot", "dot"),
    _dot_general("nvfp4", "nvfp4", "nvfp4-dot-general", "dot-general", levels=1),
)


#: MXGemm (issue 51), proven at k = 2 only: with fp32 results, and with its MX output
#: (fp4_e2m1 blocks of the row's 2 results); and nvfp4 x nvfp4 without the epilogue
#: (``levels=1``, as :data:`NVFP4_UNITS`' MXDotGeneral: the chain proof's output is the run's
#: chained result).  Not among :data:`UNITS`' full-size rows (:data:`SMALL_ONLY`).
GEMM_UNITS = (
    _gemm("fp4_e2m1"),
    _gemm("fp4_e2m1", "fp4_e2m1", "gemm-mx", "gemm"),
    _gemm("nvfp4", name="gemm-nvfp4", base="gemm", levels=1),
)

#: The dot units' GPU accumulation modes (``accumulation="tcgen05.mxf8f6f4"`` and, MXDot
#: only, ``"tcgen05.mxf4"`` and ``"tcgen05.mxf4nvf4"`` with UE4M3 scales: the truncating steps
#: of :mod:`hw.dot.truncated_step`), which take blocks of 32 only (nvfp4 16,
#: :data:`GPU_BLOCK_SIZES`): proven at k = 32, fp4_e2m1 x fp4_e2m1 (the narrowest products),
#: and nvfp4 at k = 16, stream/no-loss/reset (``flow``) and order; named
#: ``<unit>-tcgen05[-mxf4|-nvfp4]``.  MXDotGeneral also in ``"tcgen05.mxf4"`` (k = 32) and
#: ``"tcgen05.mxf4nvf4"`` (E8M0, k = 16, and nvfp4 with UE4M3 scales, k = 16, ``levels=1``):
#: a step per 64 elements of a run, its accumulators the chained state
#: (:mod:`hw.dot.chained_f4`); MXGemm (1 x 2 lanes) in ``"tcgen05.mxf4"``, k = 32.  Not in
#: :data:`UNITS` (their block sizes are 2 and 4).
GPU_MODE = "tcgen05.mxf8f6f4"
#: The block size a :data:`GPU_UNITS` entry is proven at, where not 32.
GPU_BLOCK_SIZES = {"dot-tcgen05-nvfp4": 16, "dot-general-tcgen05-mxf4nvf4": 16,
                   "dot-general-tcgen05-nvfp4": 16}
GPU_UNITS = (
    FormalUnit("dot-tcgen05-mxf4", "fp4_e2m1 x fp4_e2m1, fp32 accumulator, tcgen05.mxf4",
               lambda k, s: MXDot("fp4_e2m1", block_size=k, stages=s,
                                  accumulation="tcgen05.mxf4"),
               lambda k, s: MXDot("fp4_e2m1", block_size=k,
                                  accumulation="tcgen05.mxf4").sections, "dot", base="dot"),
    FormalUnit("dot-tcgen05-nvfp4", "nvfp4 x nvfp4 (UE4M3 scales), fp32 accumulator, "
               "tcgen05.mxf4nvf4",
               lambda k, s: MXDot("nvfp4", block_size=k, stages=s,
                                  accumulation="tcgen05.mxf4nvf4"),
               lambda k, s: MXDot("nvfp4", block_size=k,
                                  accumulation="tcgen05.mxf4nvf4").sections, "dot", base="dot"),
    FormalUnit("dot-tcgen05", f"fp4_e2m1 x fp4_e2m1, fp32 accumulator, {GPU_MODE}",
               lambda k, s: MXDot("fp4_e2m1", block_size=k, stages=s, accumulation=GPU_MODE),
               lambda k, s: MXDot("fp4_e2m1", block_size=k, accumulation=GPU_MODE).sections,
               "dot", base="dot"),
    FormalUnit("dot-general-tcgen05", f"fp4_e2m1 x fp4_e2m1, 2 contexts, {GPU_MODE}",
               lambda k, s: MXDotGeneral("fp4_e2m1", block_size=k, contexts=2, stages=s,
                                         accumulation=GPU_MODE),
               lambda k, s: MXDotGeneral("fp4_e2m1", block_size=k, contexts=2,
                                         accumulation=GPU_MODE).sections,
               "dotg", runs=True, cuts=("step_c",), compared=("leave_result",),
               state=_DOTG_STATE, base="dot-general"),
    *(FormalUnit(f"dot-general-tcgen05-{kind.split('.')[1]}",
                 f"fp4_e2m1 x fp4_e2m1, 2 contexts, {kind} (a step per 64 elements of a run)",
                 lambda k, s, kind=kind: MXDotGeneral("fp4_e2m1", block_size=k, contexts=2,
                                                      stages=s, accumulation=kind),
                 lambda k, s, kind=kind: MXDotGeneral("fp4_e2m1", block_size=k, contexts=2,
                                                      accumulation=kind).sections,
                 "dotg", runs=True, cuts=("step_c",), compared=("leave_result",),
                 state=_DOTG_STATE, base="dot-general")
      for kind in ("tcgen05.mxf4", "tcgen05.mxf4nvf4")),
    # nvfp4 (UE4M3 scales) without the epilogue (levels=1), as NVFP4_UNITS' MXDotGeneral
    FormalUnit("dot-general-tcgen05-nvfp4",
               "nvfp4 x nvfp4 (UE4M3 scales), 2 contexts, tcgen05.mxf4nvf4 (a step per 64 "
               "elements of a run), levels=1",
               lambda k, s: MXDotGeneral("nvfp4", block_size=k, contexts=2, stages=s,
                                         accumulation="tcgen05.mxf4nvf4", levels=1),
               lambda k, s: MXDotGeneral("nvfp4", block_size=k, contexts=2,
                                         accumulation="tcgen05.mxf4nvf4", levels=1).sections,
               "dotg", runs=True, cuts=("step_c",), compared=("leave_result",),
               state=_DOTG_STATE, base="dot-general"),
    # the GEMM tile in tcgen05.mxf4 (k = 32): each lane's accumulators the chained state
    _gemm("fp4_e2m1", name="gemm-tcgen05-mxf4", base="gemm", accumulation="tcgen05.mxf4"),
)


def _nvfp4_quantizer(levels: int, inp: str, name: str, base: str = "",
                     blocks: int = 1) -> FormalUnit:
    """The NVFP4 quantizer, ``levels`` level, from ``inp``, ``blocks`` blocks a beat."""
    def build(k, s):
        return NVFP4Quantizer(k, inp, levels, blocks=blocks, stages=s)

    config = (f"{'single' if levels == 1 else 'two'} level, from {inp}"
              + (f", {blocks} blocks a beat" if blocks > 1 else ""))
    return FormalUnit(name, config, build, lambda k, stages: build(k, None).sections, "q",
                      base=base)


#: The NVFP4 quantizer (issue 50), proven at k = 2 and 4, one configuration per level and the
#: two blocks a beat: the stream, no-loss and reset properties (flow; at k = 2 also order) at
#: 1, the middle and the deepest setting (:func:`formal.matrix.proof_jobs`).  Not among the
#: full-size rows (:data:`SMALL_ONLY`).
NVFP4_QUANTIZER_UNITS = (
    _nvfp4_quantizer(1, "bf16", "nvfp4-quantizer"),
    _nvfp4_quantizer(2, "fp32", "nvfp4-quantizer-l2", "nvfp4-quantizer"),
    _nvfp4_quantizer(1, "fp32", "nvfp4-quantizer-x2", "nvfp4-quantizer", blocks=2),
)

#: ``python -m hw generate`` units proven at a small configuration only (no full-size rows
#: in :func:`default_configurations`).
SMALL_ONLY = ("gemm", "nvfp4-quantizer")


def unit_by_name(name: str) -> FormalUnit:
    """The :data:`UNITS` (or :data:`GEMM_UNITS`, :data:`GPU_UNITS`,
    :data:`NVFP4_QUANTIZER_UNITS`) entry called ``name``."""
    known = UNITS + GEMM_UNITS + GPU_UNITS + NVFP4_QUANTIZER_UNITS
    for unit in known:
        if unit.name == name:
            return unit
    raise ValueError(f"unknown unit {name!r}; expected one of "
                     f"{', '.join(u.name for u in known)}")


#: Configurations proven at full size besides ``python -m hw generate``'s defaults: the dot
#: unit's DSP builds of the synthesis list.
EXTRA_CONFIGURATIONS = {"dot": [["--format", f, "--multipliers", m]
                                for m in ("dsp", "mult18x18d") for f in ("fp8_e4m3", "int8")]}

#: The MULT18X18D blocks' registers (``lane_mult<i>``, :func:`hw.dsp.mult18x18d`) as the data
#: registers of the boundaries they stand for: ``FormalUnit.blocks`` of those builds.
MULT18X18D_BLOCKS = tuple((f"lane_mult*.{reg}", boundary)
                          for side, boundary in (("input", "operands"), ("output", "multiply"))
                          for reg in MULT18X18D_REGISTERS[side])


def default_configurations() -> list[tuple[FormalUnit, int]]:
    """Every default configuration of ``python -m hw generate`` (``make verilog``) plus
    :data:`EXTRA_CONFIGURATIONS`, each as a :class:`FormalUnit` named
    ``<unit>-<option values>`` (block size left out) and its block size: the full-size rows of
    the register-bypass proof (:mod:`formal.datapath`)."""
    from hw.cli import units

    found = []
    for spec in units().values():
        if spec.name in SMALL_ONLY:
            continue
        base = unit_by_name(spec.name)
        for argv in spec.defaults + EXTRA_CONFIGURATIONS.get(spec.name, []):
            k = spec.parser().parse_args(argv).block_size
            values = [v for flag, v in zip(argv[::2], argv[1::2], strict=True)
                      if flag != "--block-size"]

            def build(k_, stages, spec=spec, argv=argv, k=k):
                if k_ != k:
                    raise ValueError(f"{spec.name} {' '.join(argv)} is built at k = {k}")
                return spec.build_from([*argv, "--stages", str(stages)])

            extra = {}
            if spec.name == "quantizer":  # this configuration's sections at each depth
                a = spec.parser().parse_args(argv)
                extra["sections"] = (
                    lambda k_, stages, a=a: quantizer_sections(
                        a.format, k_, stages, a.input, a.scale_mode != "floor"))
            if spec.name in ("dot", "dot-general", "nvfp4-dequantizer"):  # this build's
                built = spec.build_from(argv)
                extra["sections"] = lambda k_, stages, s=built.sections: s
                if "MULT18X18D" in built.primitives:
                    extra["blocks"] = MULT18X18D_BLOCKS
            found.append((replace(base, name="-".join([spec.name, *values]),
                                  config=" ".join(argv), build=build, base=spec.name,
                                  **extra), k))
    return found
