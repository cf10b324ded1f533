"""The MX GEMM tile :class:`MXGemm`: an R x C block of outputs of ``C = A x B``, one fused
dot step per output, all on one pipeline.

Per beat the tile takes one K block of each of R rows of A and of C columns of B: lane
``(r, c)`` computes ``RNE_fp32(acc + a_r . b_c)`` for that block (the fused step of
:mod:`hw.dot.fused_step`, ``docs/numerics.md`` section 5), A's block ``r`` shared by the
lanes of row ``r``, B's block ``c`` by those of column ``c``.  The R x C steps sit side by
side on one :class:`hw.pipeline.Pipeline` (:meth:`hw.pipeline.Pipeline.scope`: lane
``(r, c)`` names its signals ``r<r>c<c>_...``), so they share one flow control and one
latency.  Runs of K blocks accumulate per output in fp32, blocks in K order, one rounding
each, as MXDotGeneral's runs do, with the same interleaved contexts
(:class:`hw.dot.contexts.AccumulatorContexts`): R x C accumulators per context.  With nvfp4
operands (UE4M3 block scales) every lane ends in the tensor scales' epilogue
``f(alpha * sum)`` (:mod:`hw.dot.epilogue`), as MXDotGeneral's nvfp4 runs do.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import data, stream

import golden

from ..dot.contexts import STORAGES, AccumulatorContexts
from ..dot.epilogue import epilogue_sections
from ..dot.nvfp4_scale import SCALE_FORMATS, check_levels, is_nvfp4, nvfp4_scale_format
from ..dot.parameters import (
    accumulation_suffix,
    accumulator_bits,
    build_run_lanes,
    fused_step_parameters,
    multipliers_suffix,
)
from ..elements import block_layout
from ..params import check_int, check_power_of_two
from ..unit import Unit
from .output import output_quantizer, quantize_rows

__all__ = ["MXGemm", "MAX_SIDE", "default_contexts"]

#: The most rows, and the most columns, of a tile.
MAX_SIDE = 16


def default_contexts(latency: int) -> int:
    """The fewest contexts, a power of two, that keep a tile of ``latency`` busy every clock
    (runs round-robin over them): the smallest power of two >= ``latency``."""
    return 1 << (latency - 1).bit_length()


class MXGemm(Unit):
    """MX GEMM tile: R x C fp32 outputs of ``A x B``, one K block step per clock per output.

    Each input beat is the block at one K position of R rows of A (``a.row<r>``) and of C
    columns of B (``b.col<c>``), of run ``ctx``: lane ``(r, c)`` adds ``a_r . b_c`` to its
    accumulator, one fp32 RNE per block pair (exactly :class:`hw.dot.MXDotGeneral`'s
    chaining).  ``first`` starts a run, output ``(r, c)`` from the fp32 ``c0.row<r>[c]``
    (ignored on other beats); blocks of one run arrive in K order; ``last`` ends it, and the
    run's R x C results leave in one output beat with its ``ctx``.  A run of one block sets
    both.  The results over K blocks are ``golden.matmul`` of the R rows' and C columns'
    blocks with ``acc`` the ``c0`` of the run's first beat.

    Schedule: a block enters when its context has no block in the pipeline, or in the cycle
    that block leaves (:class:`hw.dot.contexts.AccumulatorContexts`).  One run alone takes a
    block every ``latency`` clocks; ``latency`` or more runs interleaved round-robin over
    the contexts take one block per clock: every lane does one K-block step (``block_size``
    MACs) per clock.  Non-last blocks never wait for ``o.ready``; last blocks wait at the
    output, and no block is lost or duplicated under any valid/ready pattern.

    Parameters
    ----------
    fmt_a, fmt_b : str or ElementFormat
        Element formats of A and B (any member of the family; ``fmt_b`` defaults to
        ``fmt_a``), or ``"nvfp4"`` for both: fp4_e2m1 codes with UE4M3 block scales.
    rows, cols : int
        Rows of A and columns of B per tile, ``1..MAX_SIDE`` each: ``rows * cols`` lanes.
    block_size : int or None
        Elements per block (K per beat), a power of two in 2..64; None (default): 32, nvfp4
        16.
    contexts : int or None
        Accumulation contexts (runs open at once), a power of two in 1..64; None (the
        default): :func:`default_contexts` of the latency, so interleaved runs keep every
        lane busy every clock.
    stages : int or None
        Pipeline registers of the fused step (= ``latency``), as for :class:`hw.dot.MXDot`;
        None: every section boundary.
    multipliers : {"lut", "dsp", "mult18x18d"}
        The lane products, as for :class:`hw.dot.MXDot`.
    accumulators : {"registers", "memory"}
        The fp32 accumulators (R x C x ``contexts`` words): ``registers`` (the default, as
        MXDotGeneral's), or ``memory``: per lane a memory of ``contexts`` words, one
        combinational read and one write per clock (:class:`hw.dot.contexts.AccumulatorContexts`;
        on ECP5 distributed RAM in place of ``32 contexts`` flip-flops and their read mux per
        lane).  Same function.
    out_format : str, ElementFormat or None
        None (the default): fp32 results.  An element format: each row's C results leave as
        one MX block of that format (``cols`` a power of two in 2..16), quantized with the
        floor scale and RNE (:mod:`hw.gemm.output`: R quantize steps side by side on a
        pipeline after the tile's, each row's results received in a register stage of its
        own, ``quantizer_stages`` more latency).  The fp32 results of
        nvfp4 operands may be quantized so too (an NVFP4 output is golden's only).
    accumulation : {"exact", "tcgen05.mxf8f6f4", "tcgen05.mxf4", "tcgen05.mxf4nvf4"}
        Every lane's block step, chained as for :class:`hw.dot.MXDotGeneral` (mxf4 and
        mxf4nvf4, E8M0 scales: a step per 64 elements of K, each lane's accumulator holding
        the step's pending groups, :mod:`hw.dot.chained_f4`); ``_tcgen05_<kind>`` ends the
        module name.  nvfp4 operands: ``"exact"`` or ``"tcgen05.mxf4nvf4"`` (UE4M3 group values
        chained, the epilogue after a run's last step, as MXDotGeneral's).
    levels : {1, 2}, optional
        nvfp4 only: 2 (its default) applies the tensor scales' epilogue ``f(alpha * sum)`` to
        every output of a run (one fp32 RNE multiply per lane, ten sections after the
        step's; ``alpha`` is ``golden.matmul``'s ``f(Pa * Pb)``); 1 (MX formats: the only
        choice) none.

    Members
    -------
    i : In(stream.Signature(StructLayout))
        ``a``: ``row0..row<R-1>``, ``b``: ``col0..col<C-1>``, each a block
        (:func:`hw.elements.block_layout`: scale, codes); ``c0``: ``row0..row<R-1>``, each
        an array of C fp32 accumulator starts (``c0.row<r>[c]`` for output ``(r, c)``, used
        with ``first``); ``first``, ``last``: run markers;
        ``ctx``: context id (``log2(contexts)`` bits); with ``levels=2``, ``alpha``: fp32
        bits, read on the ``last`` beat (ignored on the others).
    o : Out(stream.Signature(StructLayout))
        ``result``: ``row0..row<R-1>``, each an array of C fp32 results (``result.row<r>[c]``
        is ``C[r][c]``), or with ``out_format`` one block (:func:`hw.elements.block_layout`:
        scale, C codes); ``ctx``: the run's context.  One beat per run (on ``last``).

    Attributes
    ----------
    latency : int
        ``stages`` (+ ``quantizer_stages``): a run's last block accepted in cycle t is
        presented in cycle t + latency (without backpressure).
    quantizer_stages : int
        The output quantizers' depth, 0 for fp32 results: MXQuantizer's default and the
        register stage that receives the tile's results
        (:func:`hw.gemm.output.output_quantizer`).
    lanes : int
        ``rows * cols``: dot lanes, each ``block_size`` MACs per clock.
    sections : dict of str to float
        The fused step's (:func:`hw.dot.fused_step.dot_sections`, ``forwarded_c``), as
        MXDotGeneral's: every lane places its registers at the same boundaries.
    max_stages : int
        ``len(sections)``.
    """

    #: ``i.ready`` has gates (a block enters as its context's block leaves), as MXDotGeneral's.
    i_ready_registered = False
    #: As MXDotGeneral's (:class:`hw.pipeline.Pipeline` options).
    extract_reset = False
    enable_load = 256

    def __init__(self, fmt_a, fmt_b=None, *, rows: int = 2, cols: int = 2,
                 block_size: int | None = None, contexts: int | None = None,
                 stages: int | None = None, multipliers: str = "lut",
                 accumulators: str = "registers", out_format=None,
                 accumulation: str = "exact", levels: int | None = None):
        self.rows = check_int("rows", rows, 1, MAX_SIDE)
        self.cols = check_int("cols", cols, 1, MAX_SIDE)
        if accumulators not in STORAGES:
            raise ValueError(f"accumulators must be one of {', '.join(STORAGES)}, not "
                             f"{accumulators!r}")
        self.accumulators = accumulators
        scale_format = nvfp4_scale_format(fmt_a, fmt_b, SCALE_FORMATS)
        self.levels = check_levels(levels, scale_format)
        shared = fused_step_parameters(self, fmt_a, fmt_b, block_size, stages, multipliers,
                                       forwarded_c=True, accumulation=accumulation,
                                       scale_formats=SCALE_FORMATS,
                                       extra_sections=epilogue_sections()
                                       if self.levels == 2 else None)
        block_size = self.block_size
        if contexts is None:
            contexts = default_contexts(self.stages)
        self.contexts = check_power_of_two("contexts", contexts, 1, 64)
        self.ctx_bits = (contexts - 1).bit_length()
        nv = {"levels": self.levels} if self.scale_format == "ue4m3" else {}
        self._parameters = {**shared, "rows": rows, "cols": cols, "contexts": contexts,
                            "accumulators": accumulators, **nv}
        self.out_fmt, self.quantizer_stages = None, 0
        results = {f"row{r}": data.ArrayLayout(unsigned(32), cols) for r in range(rows)}
        self.fp32_layout = data.StructLayout({"result": data.StructLayout(results),
                                              "ctx": unsigned(self.ctx_bits)})
        out_layout = self.fp32_layout
        if out_format is not None:
            if is_nvfp4(out_format):
                raise ValueError("out_format='nvfp4' (UE4M3 scales) is golden.matmul's, not "
                                 "the tile's: give an MX element format, or None for fp32")
            self.out_fmt = golden.element_format(out_format)
            if cols < 2 or cols & (cols - 1):
                raise ValueError(f"an MX output quantizes each row's cols results as one "
                                 f"block (golden.matmul's out_block_size = cols): cols must "
                                 f"be a power of two in 2..{MAX_SIDE}, got {cols}")
            self._quantizer = output_quantizer(self.out_fmt, cols)
            self.quantizer_stages = self._quantizer.stages
            self._parameters.update(out_format=self.out_fmt.name,
                                    quantizer_stages=self.quantizer_stages)
            blocks = {f"row{r}": block_layout(self.out_fmt, cols) for r in range(rows)}
            out_layout = data.StructLayout({"result": data.StructLayout(blocks),
                                            "ctx": unsigned(self.ctx_bits)})
        row_blocks = {f"row{r}": block_layout(self.fmt_a, block_size) for r in range(rows)}
        col_blocks = {f"col{c}": block_layout(self.fmt_b, block_size) for c in range(cols)}
        starts = {f"row{r}": data.ArrayLayout(unsigned(32), cols) for r in range(rows)}
        super().__init__(data.StructLayout({
            "a": data.StructLayout(row_blocks),
            "b": data.StructLayout(col_blocks),
            "c0": data.StructLayout(starts),
            "first": unsigned(1),
            "last": unsigned(1),
            "ctx": unsigned(self.ctx_bits),
            **({"alpha": unsigned(32)} if self.levels == 2 else {}),
        }), out_layout)

    @property
    def latency(self) -> int:
        return self.stages + self.quantizer_stages

    @property
    def lanes(self) -> int:
        return self.rows * self.cols

    @property
    def module_name(self) -> str:
        formats = (f"nvfp4_gemm_l{self.levels}" if self.scale_format == "ue4m3"
                   else f"mx_gemm_{self.fmt_a.name}_{self.fmt_b.name}")
        return (f"{formats}_r{self.rows}x{self.cols}"
                f"_k{self.block_size}_c{self.contexts}_s{self.stages}"
                + multipliers_suffix(self.multipliers)
                + ("_ram" if self.accumulators == "memory" else "")
                + (f"_o{self.out_fmt.name}" if self.out_fmt else "")
                + accumulation_suffix(self.accumulation))

    @property
    def parameters(self) -> dict:
        return dict(self._parameters)

    def elaborate(self, platform):
        m = Module()
        p = self.i.payload
        pipe = self.pipeline(m, "gemm")
        lanes = [(r, c) for r in range(self.rows) for c in range(self.cols)]
        names = [f"r{r}c{c}" for r, c in lanes]
        contexts = AccumulatorContexts(m, self.contexts, p.ctx, p.first,
                                       [p.c0[f"row{r}"][c] for r, c in lanes], names,
                                       storage=self.accumulators,
                                       width=accumulator_bits(self))
        o, ready = self.o, None
        if self.out_fmt is not None:  # per lane a copy of the output quantizers' i_ready
            o = stream.Signature(self.fp32_layout).create(path=("tile",))
            ready = [Signal(name=f"tile_ready_{name}") for name in names]
        # lane (r, c) in its scope, beside lane (0, 0)'s registers (which carry the run's
        # markers)
        build_run_lanes(self, pipe, contexts,
                        [(pipe.scope(name, sections=None), p.a[f"row{r}"], p.b[f"col{c}"])
                         for (r, c), name in zip(lanes, names, strict=True)],
                        i=self.i, o=o, targets=[o.payload.result[f"row{r}"][c] for r, c in lanes],
                        ready=ready)
        if self.out_fmt is not None:
            quantize_rows(m, self._quantizer, o, self.o, self.rows, self.ctx_bits, ready)
        return m
