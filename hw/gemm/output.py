# amaranth: UnusedElaboratable=no
# (the MXQuantizer built here states the output quantizer's parameters; it is never elaborated)
"""The GEMM tile's MX output: each row's C fp32 results quantized as one MX block along N
(:func:`quantize_rows`).

The quantizer's step (:func:`hw.quantize.step.quantize_step`: fp32 input, RNE, the floor
scale, the RFC's rule) is placed R times side by side, one per row, on a pipeline of its own
after the tile's (``gq_...``; row r's signals ``q<r>_...``), with the run's ``ctx`` carried
beside them over every boundary: the tile's fp32 stream in, the MX stream out, one flow
control.  Its sections and geometry are :class:`hw.quantizer.MXQuantizer`'s for ``cols``
fp32 values, one register deeper than its default (:func:`output_quantizer`): that register
is the quantizer's ``input`` boundary, so each row's results (and the ``ctx``) cross one
register stage with no logic before the row's decode, from the tile's last stage (through
its skid mux) into registers of the row's own, on enable copies of their own
(:meth:`hw.pipeline.Pipeline.beside`).  The tile's output then drives one register per
row, not every row's decode logic across the die.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal

from ..pipeline import registered_boundaries
from ..quantize.step import quantize_step
from ..quantizer import MXQuantizer

__all__ = ["output_quantizer", "quantize_rows", "RECEIVE_BOUNDARY"]

#: The output quantizers' boundary that receives the tile's results: registered in the
#: GEMM's quantizers (:func:`output_quantizer`), not at MXQuantizer's default depth.
RECEIVE_BOUNDARY = "input"


def output_quantizer(fmt, cols: int) -> MXQuantizer:
    """The quantizer of one row: ``cols`` fp32 values -> one block of ``fmt`` (scale, codes),
    its parameters only (the rows' steps are placed by :func:`quantize_rows`).

    One register deeper than MXQuantizer's default depth, the same sections: the placement
    (:func:`hw.pipeline.place_registers`) keeps the default's registers and adds the one at
    :data:`RECEIVE_BOUNDARY` (its section has no logic; of the placements with the default's
    critical stage it is the earliest).  Any other placement is a ``ValueError``.
    """
    default = MXQuantizer(fmt, cols, "fp32")
    q = MXQuantizer(fmt, cols, "fp32", stages=default.stages + 1)
    registered = registered_boundaries(q.sections, q.stages)
    wanted = (RECEIVE_BOUNDARY, *registered_boundaries(default.sections, default.stages))
    if q.sections != default.sections or registered != wanted:
        raise ValueError(f"the output quantizer to {q.fmt.name} of {cols} values has no "
                         f"register stage of its own at {RECEIVE_BOUNDARY!r}: its registers "
                         f"at {q.stages} stages are {', '.join(registered)}")
    return q


def quantize_rows(m: Module, q: MXQuantizer, tile, o, rows: int, ctx_bits: int,
                  ready_copies: list = ()):
    """Quantize the fp32 beats of ``tile`` (a stream of the tile's fp32 payload:
    ``result.row<r>``, ``ctx``) row by row into ``o`` (``result.row<r>``: scale and codes,
    ``ctx``): ``rows`` quantize steps of ``q``'s parameters side by side on one pipeline.
    ``ready_copies``: signals driven with copies of ``tile.ready``, each its own register
    (:meth:`hw.pipeline.Pipeline.ready_copies`), for the tile's lanes."""
    pipe = q.pipeline(m, "gq")
    for r in range(rows):
        block = Signal(q.in_layout, name=f"q{r}_in")
        m.d.comb += block.data.eq(tile.payload.result[f"row{r}"])
        out = quantize_step(pipe.scope(f"q{r}", sections=None), q.geometry, block)
        m.d.comb += o.payload.result[f"row{r}"].eq(out)
    if ctx_bits:
        ctx = tile.payload.ctx
        for name in pipe.names:  # beside the rows' registers, on the stages' enables
            ctx = pipe.beside(ctx, name, f"ctx_{name}")
        m.d.comb += o.payload.ctx.eq(ctx)
    m.d.comb += [copy.eq(ready) for copy, ready
                 in zip(ready_copies, pipe.ready_copies(len(ready_copies)), strict=True)]
    pipe.connect(i_valid=tile.valid, i_ready=tile.ready, o_valid=o.valid, o_ready=o.ready)
