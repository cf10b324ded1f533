"""The parameters every unit built on the dot's block step shares (MXDot, MXDotGeneral,
:class:`hw.gemm.MXGemm`): formats and scale format, block size, multipliers, the accumulation
mode and its step (:func:`build_step`), checked once in :func:`fused_step_parameters`.
"""

from __future__ import annotations

from types import SimpleNamespace

import golden
from golden.accumulation_kinds import check_accumulation

from ..params import check_block_size, check_choice
from ..pipeline import Pipeline
from .chained_f4 import chain_layout, chained_kind, next_state
from .epilogue import build_epilogue, operand_fields
from .fused_step import MULTIPLIERS, PRIMITIVES, build_fused_step, dot_sections
from .geometry import DotGeometry
from .nvfp4_scale import NVFP4_ELEMENTS, nvfp4_scale_format
from .truncated_sections import ACCUMULATIONS, F4_MODES, KINDS, TRUNCATING
from .truncated_step import build_truncated_step, truncated_sections
from .truncated_sum import GPU_NAN

__all__ = ["multipliers_suffix", "accumulation_suffix", "build_step", "build_run_lanes",
           "fused_step_parameters", "chained", "accumulator_bits"]


def _check_multipliers(multipliers) -> str:
    if not isinstance(multipliers, str):
        raise TypeError(f"multipliers must be a str, got {type(multipliers).__name__}")
    return check_choice("multipliers", multipliers, MULTIPLIERS)


def multipliers_suffix(multipliers: str) -> str:
    """Module name suffix: none for the default LUT products, ``_dsp`` or ``_mult18x18d``
    for DSP ones."""
    return "" if multipliers == "lut" else f"_{multipliers}"


def _check_accumulation(accumulation, fmt_a, fmt_b, block_size, multipliers,
                        scale_format) -> str:
    """``accumulation`` checked with golden's rules (its names, formats, block sizes and scale
    formats, the same one-line errors), then against the modes built in hardware."""
    check_accumulation(accumulation, fmt_a, fmt_b, block_size, scale_format)
    if accumulation not in ACCUMULATIONS:
        raise ValueError(f"accumulation {accumulation!r} is not built in hardware; the dot "
                         f"units build {', '.join(map(repr, ACCUMULATIONS))}")
    if accumulation in TRUNCATING and multipliers == "mult18x18d":
        raise ValueError(f"accumulation {accumulation!r} builds its products in LUTs or as `*` "
                         f"(multipliers 'lut' or 'dsp'), not 'mult18x18d'")
    return accumulation


def accumulation_suffix(accumulation: str) -> str:
    """Module name suffix: none for the exact step, ``_tcgen05_mxf8f6f4`` (or
    ``_tcgen05_mxf4``) for a GPU mode."""
    return "" if accumulation == "exact" else "_" + accumulation.replace(".", "_")


def chained(unit) -> bool:
    """Whether ``unit``'s accumulators hold a run's state rather than an fp32 value: mxf4 and
    mxf4nvf4 in MXDotGeneral and MXGemm (:mod:`hw.dot.chained_f4`)."""
    return unit.accumulation in F4_MODES and unit.forwarded_c


def accumulator_bits(unit) -> int:
    """Bits of one of ``unit``'s accumulators (:class:`hw.dot.contexts.AccumulatorContexts`):
    32, or the chained state's."""
    return chain_layout(unit.block_size, unit.scale_format).size if chained(unit) else 32


def build_step(unit, scope, a, b, c, side=None, *, last=None):
    """The block step of ``unit``'s accumulation (:func:`hw.dot.fused_step.build_fused_step`
    or :func:`hw.dot.truncated_step.build_truncated_step`) through ``scope``: its ``result``
    and ``side`` and the ``state`` it leaves in the accumulator (its ``result``, or where
    :func:`chained`, :func:`hw.dot.chained_f4.next_state` with ``c`` the run's state and
    ``last`` the run's flag); where not chained, ``shown``, the view its last boundary
    returned (for :meth:`hw.pipeline.Pipeline.last_stage`)."""
    if unit.accumulation == "exact":
        out = build_fused_step(scope, unit.geometry, a, b, c, side,
                               multipliers=unit.multipliers)
    elif not chained(unit):
        out = build_truncated_step(scope, unit.geometry, a, b, c, side,
                                   multipliers=unit.multipliers,
                                   accumulation=unit.accumulation)
    else:
        if isinstance(scope, Pipeline):
            scope = scope.scope()
        out = build_truncated_step(scope, unit.geometry, a, b, c, side,
                                   multipliers=unit.multipliers,
                                   accumulation=unit.accumulation, last=last)
        state = next_state(scope.module, unit.block_size, out.result, out.side.chain,
                           out.side.groups, scope.name("next_state"),
                           unit.geometry.scale_format)
        return SimpleNamespace(result=out.result, side=out.side, state=state)
    return SimpleNamespace(result=out.result, side=out.side if side else None,
                           state=out.result, shown=out)


def build_run_lanes(unit, pipe, contexts, lanes, *, i, o, targets, ready=None):
    """The run datapath of MXDotGeneral (one lane) and :class:`hw.gemm.MXGemm` (R x C
    lanes): per lane its block step (:func:`build_step`) and, with ``unit.levels == 2``, the
    epilogue ``f(alpha * result)`` after it (:func:`hw.dot.epilogue.build_epilogue`; NaN
    0x7FFFFFFF where :func:`chained`), then the accumulation contexts connected to both
    streams (:meth:`hw.dot.contexts.AccumulatorContexts.connect`).  Lane 0 carries the run's
    markers (``ctx``, ``last``; ``alpha``) through the pipeline; every lane's accumulator
    chains its step's state (its result, or its chained state, which rides through the
    epilogue beside it), never the epilogue's result; with several lanes each forwards on its
    own copy of lane 0's markers (``entering`` of
    :meth:`hw.dot.contexts.AccumulatorContexts.connect`).

    Parameters
    ----------
    unit : MXDotGeneral or MXGemm
        Its ``levels``, ``ctx_bits`` and step parameters (:func:`fused_step_parameters`).
    pipe : hw.pipeline.Pipeline
    contexts : hw.dot.contexts.AccumulatorContexts
        One accumulator per lane (``contexts.c``, in lane order).
    lanes : list of (scope, a, b)
        Per lane the :class:`hw.scope.PipelineScope` of its step and epilogue and its two
        blocks.
    i, o : stream interfaces
        The unit's input (its payload's ``last``, ``ctx`` and, ``levels=2``, ``alpha``) and
        output streams.
    targets : list of Value
        Per lane, the field of ``o.payload`` its result drives.
    ready : list of Value, optional
        Per lane, a copy of ``o.ready`` (:meth:`hw.dot.contexts.AccumulatorContexts.connect`).
    """
    p = i.payload
    ctx = {"ctx": p.ctx} if unit.ctx_bits else {}
    epilogue = unit.levels == 2
    markers = ({**ctx, "end": p.last, "alpha": operand_fields(p.alpha)} if epilogue
               else {**ctx, "last": p.last})
    outs = [build_step(unit, scope, a, b, c, None if j else markers, last=p.last)
            for j, ((scope, a, b), c) in enumerate(zip(lanes, contexts.c, strict=True))]
    lead = outs[0].side
    if epilogue:
        gpu = chained(unit)  # the steps' state rides through the epilogue beside its result
        nan = {"nan_bits": GPU_NAN} if gpu else {}
        epilogues = []
        for (scope, _, _), out in zip(lanes, outs, strict=True):
            side = {"ctx": lead.ctx} if unit.ctx_bits and not epilogues else {}
            if not epilogues:
                side["last"] = lead.end
            if gpu:
                side["state"] = out.state
            epilogues.append(build_epilogue(scope, out.result, lead.alpha, side or None,
                                            **nan))
        states = [e.side.state if gpu else e.raw for e in epilogues]
        # the forwarding reads the states off the last stage's registers
        forwarded = [pipe.last_stage(e).side.state if gpu else pipe.last_stage(e).raw
                     for e in epilogues]
        outs, lead = epilogues, epilogues[0].side
    else:
        states = [out.state for out in outs]
        forwarded = (None if chained(unit)  # the state computed after the last boundary
                     else [pipe.last_stage(out.shown).result for out in outs])
    # each lane forwards on a copy of lane 0's markers, from the block entering the last
    # stage (AccumulatorContexts.connect)
    entering = pipe.last_input.side
    contexts.connect(pipe, i=i, o=o, last=lead.last, ctx=lead.ctx if unit.ctx_bits else None,
                     results=states, forwarded=forwarded,
                     payload=[t.eq(out.result) for t, out in zip(targets, outs, strict=True)],
                     entering=(entering.last, entering.ctx if unit.ctx_bits else None),
                     ready=ready)


def fused_step_parameters(unit, fmt_a, fmt_b, block_size, stages, multipliers, *,
                          forwarded_c=False, accumulation="exact", scale_formats=("e8m0",),
                          extra_sections=None) -> dict:
    """Validate the parameters the fused step's units share (MXDot, MXDotGeneral,
    :class:`hw.gemm.MXGemm`), set them on ``unit`` (formats, scale format, block size,
    geometry, sections, stages, multipliers, primitives, accumulation) and return them as
    sidecar parameters.  ``forwarded_c``: ``c`` comes from the accumulator's forwarding path
    (:func:`hw.dot.fused_step.dot_sections`).  ``accumulation``: ``"exact"`` (the fused
    step) or a GPU mode (the truncating step, :mod:`hw.dot.truncated_step`; with UE4M3 scales
    ``"tcgen05.mxf4nvf4"``, as golden's :func:`golden.accumulation_kinds.check_accumulation`
    takes them).  ``scale_formats``: those the unit takes; with ``"ue4m3"``, ``"nvfp4"`` (on
    both sides) is fp4_e2m1 codes with UE4M3 scales (:mod:`hw.dot.nvfp4_scale`).
    ``block_size`` None: 16 for nvfp4, else 32.  ``extra_sections``: sections after the
    step's (name -> estimated delay)."""
    scale_format = nvfp4_scale_format(fmt_a, fmt_b, scale_formats)
    if scale_format == "ue4m3":
        fmt_a = fmt_b = NVFP4_ELEMENTS
    if block_size is None:
        block_size = 16 if scale_format == "ue4m3" else 32
    fmt_a = golden.element_format(fmt_a)
    fmt_b = fmt_a if fmt_b is None else golden.element_format(fmt_b)
    unit.scale_format = scale_format
    unit.geometry = DotGeometry(fmt_a, fmt_b, check_block_size(block_size), scale_format)
    unit.multipliers = _check_multipliers(multipliers)
    unit.accumulation = _check_accumulation(accumulation, fmt_a, fmt_b, block_size,
                                            multipliers, scale_format)
    unit.primitives = PRIMITIVES[multipliers]
    unit.forwarded_c = forwarded_c
    if accumulation == "exact":
        sections = dot_sections(unit.geometry, multipliers, forwarded_c=forwarded_c)
    else:
        sections = truncated_sections(unit.geometry, forwarded_c=forwarded_c,
                                      accumulation=accumulation)
    unit.sections = {**sections, **(extra_sections or {})}
    # max_stages: every boundary (bench.synth sweeps 1..max_stages); the default depth is
    # every boundary too, for every pair so far
    stages = unit._choose_stages(stages, unit.sections)
    unit.fmt_a, unit.fmt_b, unit.block_size = fmt_a, fmt_b, block_size
    if accumulation == "exact":
        widths = {"sum_bits": unit.geometry.sum_bits + 1,
                  "window_bits": unit.geometry.window_bits}
    else:  # the truncated terms' signed sum; no window
        kind = (chained_kind(accumulation, scale_format) if chained(unit)
                else KINDS[accumulation])
        widths = {"sum_bits": kind.sum_bits + 1}
    nv = {"scale_format": scale_format} if scale_format != "e8m0" else {}
    return {"format_a": fmt_a.name, "format_b": fmt_b.name, **nv, "block_size": block_size,
            "stages": stages, **widths, "multipliers": multipliers,
            "accumulation": accumulation}
