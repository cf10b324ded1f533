"""Interleaved accumulation contexts: runs of blocks chained through a pipelined step, one
context per open run (:class:`AccumulatorContexts`).

A step of latency ``L`` (the fused dot step) takes the result of a run's block as the ``c``
of the run's next block, so one run alone can take a block every ``L`` clocks; runs in
different contexts interleave, and ``L`` or more of them, round-robin, keep the step busy
every clock.  Per context: a busy bit (a block of it is in the pipeline) and, per lane, an
fp32 accumulator: a register, or (``storage="memory"``) a word of a memory of the lane's
contexts, one write and one combinational read per clock (on ECP5 distributed RAM, whose
read is asynchronous as the accumulator input's path needs).  All lanes of a tile
(:class:`hw.gemm.MXGemm`) move in lockstep, so the control is one and the accumulators and
forwarding muxes are per lane; MXDotGeneral is the tile of one lane.  Each lane's
forwarding select and accumulator writes read a copy of its own of the leaving block's valid,
``last`` and context (:meth:`hw.pipeline.Pipeline.output_copies`), so no net from the
pipeline's output reaches every lane's forwarding mux across the die; the forwarding reads the
copy's and the state's last-stage registers (:meth:`hw.pipeline.Pipeline.last_stage`), not
the output's select between them and the skid register.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib.memory import Memory

__all__ = ["AccumulatorContexts", "STORAGES"]

#: Where the accumulators live: ``registers`` (one per context and lane, read through a mux)
#: or ``memory`` (one memory of ``contexts`` words per lane, :class:`AccumulatorContexts`).
STORAGES = ("registers", "memory")


class AccumulatorContexts:
    """The contexts' busy bits, accumulators and forwarding around a pipeline's step.

    A block may enter when its context has no block in the pipeline, or in the cycle that
    block leaves: the result of a block that does not end its run is forwarded to a block of
    the same context entering then; after a ``last`` block only a ``first`` block enters in
    that cycle (it takes ``c0``).  So ``o.ready`` (on which a last block leaves) stays off the
    accumulator input's path (``o.ready`` -> ``step_c`` -> the decode register, 4 LUTs,
    5.1 ns, was a worst path at 20 stages).  A non-first block after a last one (a run
    continued from its result) waits a cycle instead and reads it from the accumulator.

    Build order: construct it (the accumulator inputs :attr:`c`, before the step), build the
    step on them, then :meth:`connect` the pipeline and the streams.

    Parameters
    ----------
    m : Module
    contexts : int
        Accumulation contexts, a power of two (the caller validates it).
    ctx : Value
        The entering block's context id (``ctx_bits`` bits; unused for one context).
    first : Value
        The entering block starts a run from ``c0``.
    c0 : list of Value
        Per lane, the fp32 start of a run.
    lanes : list of (str or None)
        Per lane, the prefix of its signals (``<lane>_acc<j>``, ``<lane>_step_c``,
        ``<lane>_leave_result``); None: no prefix (one lane).
    storage : {"registers", "memory"}
        The accumulators: a register per context and lane (``<lane>_acc<j>``), or per lane
        a memory of ``contexts`` words (``<lane>_acc``) read at the entering block's context
        and written at the leaving block's, the same function (the forwarding mux stays: a
        result is written at the end of the cycle it leaves in).
    width : int
        Bits of an accumulator: 32 (an fp32 value), or wider where a step leaves more than
        its fp32 result to the run's next block (:mod:`hw.dot.chained_f4`: ``c0`` fills the
        low 32 bits, the others start at zero).

    Attributes
    ----------
    c : list of Signal
        Per lane, the step's fp32 ``c`` (``step_c``: the formal proofs cut the design here;
        the step after it has the same function at every depth, the chaining before it is
        proven per depth).
    """

    def __init__(self, m: Module, contexts: int, ctx, first, c0: list, lanes: list, *,
                 storage: str = "registers", width: int = 32):
        if len(c0) != len(lanes):
            raise ValueError(f"{len(c0)} c0 values for {len(lanes)} lanes")
        if storage not in STORAGES:
            raise ValueError(f"storage must be one of {', '.join(STORAGES)}, not {storage!r}")
        self._m, self._contexts = m, contexts
        self._ctx_bits = ctx_bits = (contexts - 1).bit_length()
        self._lanes = list(lanes)
        nctx = contexts

        def named(lane, name):
            return name if lane is None else f"{lane}_{name}"

        if storage == "memory":
            self._acc = [Memory(shape=unsigned(width), depth=nctx, init=[]) for _ in lanes]
            for lane, memory in zip(lanes, self._acc, strict=True):
                m.submodules[named(lane, "acc")] = memory
        else:
            self._acc = [Array(Signal(width, name=named(lane, f"acc{j}"), reset_less=True)
                               for j in range(nctx)) for lane in lanes]
        busy = Signal(nctx)
        # The block leaving the step this cycle (its results are the context's new accs).
        pipe_ready, pipe_valid = Signal(), Signal()  # pipe_valid: the step presents one
        leave = Signal()
        leave_last = Signal()  # the presented block ends its run
        leave_ctx = Signal(ctx_bits)
        self._leave_results = [Signal(width, name=named(lane, "leave_result"))
                               for lane in lanes]
        # Per lane, the presented block's valid, last and context as its accumulator writes
        # read them, and as its forwarding does with its state, from the last stage's
        # registers: a copy of the pipeline's output of the lane's own
        # (Pipeline.output_copies), so no one net reaches every lane; one lane's are
        # named lane_...
        def markers(lane, what):
            return (Signal(name=named(lane or "lane", f"{what}_valid")),
                    Signal(name=named(lane or "lane", f"{what}_last")),
                    Signal(max(ctx_bits, 1), name=named(lane or "lane", f"{what}_ctx")))

        self._lane_leaving = [markers(lane, "leave") for lane in lanes]
        self._lane_forwarding = [(*markers(lane, "forward"),
                                  Signal(width, name=named(lane or "lane", "forward_state")))
                                 for lane in lanes]

        ctx = ctx if ctx_bits else Const(0, 1)
        self._onehot = Const(1, nctx) << ctx if ctx_bits else Const(1, 1)
        same_ctx = leave_ctx == ctx if ctx_bits else Const(1, 1)
        handoff = leave & same_ctx & (~leave_last | first)
        self._free = ~(busy & self._onehot).any() | handoff
        self.c = []
        for acc, start, lane, (valid, last, at, result) in zip(
                self._acc, c0, lanes, self._lane_forwarding, strict=True):
            if storage == "memory":
                read = acc.read_port(domain="comb")
                m.d.comb += read.addr.eq(ctx if ctx_bits else 0)
                stored = read.data
            else:
                stored = acc[ctx] if ctx_bits else acc[0]
            forward = valid & ~last & (at == ctx if ctx_bits else 1)
            current = Mux(forward, result, stored)
            c = Signal(width, name=named(lane, "step_c"))
            m.d.comb += c.eq(Mux(first, start, current))
            self.c.append(c)
        self._busy, self._leave, self._leave_last, self._leave_ctx = (busy, leave, leave_last,
                                                                      leave_ctx)
        self._pipe_ready, self._pipe_valid = pipe_ready, pipe_valid
        self._storage = storage

    @property
    def contexts(self) -> int:
        return self._contexts

    def connect(self, pipe, *, i, o, last, ctx, results: list, payload: list, entering,
                forwarded=None, ready=None):
        """Connect ``pipe`` (the step's pipeline, last blocks alone waiting at its output,
        :meth:`hw.pipeline.Pipeline.hold_when`) to the streams ``i`` and ``o``: non-last blocks
        leave into the accumulators without waiting for ``o.ready``.

        Parameters
        ----------
        pipe : hw.pipeline.Pipeline
        i, o : stream interfaces
            The unit's input and output streams (``o.valid``: a last block is presented).
        last, ctx : Value
            The presented block's ``last`` flag and context (its side values).
        results : list of Value
            Per lane, the presented block's fp32 result.
        payload : list of Statement
            The assignments of ``o.payload`` from the results.
        entering : tuple of Value
            ``(last, ctx)`` of the block entering the last stage (before the last boundary,
            from :attr:`hw.pipeline.Pipeline.last_input`; ``ctx`` None for one context): each
            lane's copy of the output (:meth:`hw.pipeline.Pipeline.output_copies`) is built
            from them.
        forwarded : list of Value, optional
            Per lane, ``results`` as the last stage's register holds it
            (:meth:`hw.pipeline.Pipeline.last_stage`), which the forwarding reads; None:
            ``results`` (a state computed after the last boundary).
        ready : list of Value, optional
            Per lane, a copy of ``o.ready`` (equal in every reachable state, a net of its own:
            :meth:`hw.pipeline.Pipeline.ready_copies` of the pipeline after this one): lane
            ``l``'s accumulator writes read copy ``l``, and ``pipe``'s stage enables are
            updated from the copies (:meth:`hw.pipeline.Pipeline.connect`).  None: ``o.ready``.
        """
        m = self._m
        leave, busy = self._leave, self._busy
        forwarded = results if forwarded is None else forwarded
        o_ready = o.ready if ready is None else ready  # the pipeline's, one net or copies
        ready = [o.ready] * len(self._lanes) if ready is None else ready
        if len(ready) != len(self._lanes):
            raise ValueError(f"{len(ready)} copies of o.ready for {len(self._lanes)} lanes")
        if len(forwarded) != len(self._lanes):
            raise ValueError(f"{len(forwarded)} forwarded states for {len(self._lanes)} lanes")
        early_last, early_ctx = entering
        value = early_last if not self._ctx_bits else Cat(early_last, early_ctx)
        for (valid, shown), leaving, (f_valid, f_last, f_ctx, f_state), state in zip(
                pipe.output_copies(value, len(self._lanes)), self._lane_leaving,
                self._lane_forwarding, forwarded, strict=True):
            for (to_valid, to_last, to_ctx), (v, x) in ((leaving, (valid, shown)),
                                                         ((f_valid, f_last, f_ctx),
                                                          (pipe.last_stage(valid),
                                                           pipe.last_stage(shown)))):
                m.d.comb += [to_valid.eq(v), to_last.eq(x[0])]
                if self._ctx_bits:
                    m.d.comb += to_ctx.eq(x[1:])
            m.d.comb += f_state.eq(state)
        pipe.connect(i_valid=i.valid & self._free, i_ready=self._pipe_ready,
                     o_valid=self._pipe_valid, o_ready=o_ready)
        m.d.comb += [
            i.ready.eq(self._pipe_ready & self._free),
            o.valid.eq(pipe.hold),  # "a valid last block is presented"
            *payload,
            leave.eq(self._pipe_valid & (~last | ready[0])),
            self._leave_last.eq(last),
            *(held.eq(result) for held, result in zip(self._leave_results, results,
                                                      strict=True)),
        ]
        nctx = self._contexts
        if self._ctx_bits:
            m.d.comb += [o.payload.ctx.eq(ctx), self._leave_ctx.eq(ctx)]
        leave_onehot = (Const(1, nctx) << self._leave_ctx) if self._ctx_bits else Const(1, 1)
        enter = i.valid & i.ready
        m.d.sync += busy.eq((busy & ~Mux(leave, leave_onehot, 0)[:nctx])
                            | Mux(enter, self._onehot, 0)[:nctx])
        # each lane writes its accumulators on its own copy of the leaving block's markers
        writes = [(lane_valid & (~lane_last | lane_ready), lane_ctx)
                  for (lane_valid, lane_last, lane_ctx), lane_ready
                  in zip(self._lane_leaving, ready, strict=True)]
        if self._storage == "memory":
            for memory, result, (write_en, at) in zip(self._acc, self._leave_results, writes,
                                                      strict=True):
                write = memory.write_port()
                m.d.comb += [write.addr.eq(at if self._ctx_bits else 0),
                             write.data.eq(result), write.en.eq(write_en)]
            return
        for acc, result, (write_en, at) in zip(self._acc, self._leave_results, writes,
                                               strict=True):
            for j in range(nctx):  # one write enable per context (no partial case statement)
                with m.If(write_en & (at == j if self._ctx_bits else 1)):
                    m.d.sync += acc[j].eq(result)
