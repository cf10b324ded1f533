"""The chain harness (:class:`ChainHarness`): MXDotGeneral's (and MXGemm's, lane by lane)
half of property 4 that depends on the timing, which result becomes which block's
accumulator input; the conventions are :mod:`formal.harness`'s."""

from __future__ import annotations

from amaranth.hdl import (
    Assert,
    Cat,
    Const,
    Module,
    Mux,
    Signal,
    Value,
)

from hw.dot.parameters import accumulator_bits

from .environment import (
    Harness,
    drive_free,
    probe_fields,
    quiet_cycles,
)
from .units import FormalUnit

__all__ = ["ChainHarness"]


def lane_value(payload, field: str, lane: str | None, default=None):
    """A lane's part of a payload's ``field``: the field itself for a unit of one lane
    (``lane`` None), ``field.row<r>[c]`` for MXGemm's lane ``r<r>c<c>``; ``default`` where
    the payload has no such field (MXGemm's runs start from +0: no ``c0``)."""
    if not hasattr(payload, field):
        return default
    value = getattr(payload, field)
    if lane is None:
        return value
    r, c = lane[1:].split("c")
    return value[f"row{r}"][int(c)]


class ChainHarness(Harness):
    """MXDotGeneral's chaining: each block's accumulator input is its run's ``c0`` or the
    result of the block of its context that left the fused step last, and results leave
    once each.  For MXGemm (fp32 results) the same, lane by lane at once: ``step_c`` and
    ``leave_result`` are the lanes' (:attr:`formal.units.FormalUnit.lanes`), compared
    together, ``c0`` is +0 and an output beat carries every lane's result.

    In the mxf4 modes an accumulator is a run's chained state (:mod:`hw.dot.chained_f4`):
    ``step_c`` and ``leave_result`` are that state, a run's first block takes ``c0`` with the
    rest cleared, and an output beat carries the fp32 ``c`` (low 32 bits) of its last block's.

    The register-bypass proof (:mod:`formal.datapath`) cuts MXDotGeneral at ``step_c``, the
    accumulator input entering the fused step, and proves the fused step the same function
    of its inputs and ``step_c`` at every depth.  What is left is the wrapper around it (the
    per-context accumulators, busy bits and the forwarding of a leaving result), whose
    behaviour follows the pipeline's timing; this harness proves it at one depth, with a free
    environment on both ports (``i`` held while not ready, as in :class:`FlowHarness`).

    The harness keeps, per context ``j``: ``pending[j]`` (a block of ``j`` was accepted and
    has not left the fused step), ``last[j]`` (that block ends its run), ``result[j]`` (the
    result of the last block of ``j`` to leave) and ``known[j]`` (a block of ``j`` left since
    the reset).  A block leaves when the unit's ``leave`` is high, with ``leave_ctx`` and
    ``leave_result`` (probed).  Asserted:

    * ``chain_one_block_per_context``: a block of ``j`` is accepted only while no block of
      ``j`` is pending, or in the cycle the pending one leaves;
    * ``chain_leave_only_pending`` / ``chain_leave_at_pipeline_output``: a result leaves only
      for a pending block, and only while the pipeline presents a block;
    * ``chain_first_takes_c0`` / ``chain_next_takes_previous_result``: the accepted block's
      ``step_c`` is its ``c0`` if it starts a run, else the result of the previous block of
      its context (the one leaving in this cycle, if any);
    * ``chain_output_is_last_result`` / ``chain_last_result_is_output``: an output beat is
      taken exactly when a pending ``last`` block leaves, with its context and result;
    * ``chain_nothing_pending_after_drain``: after ``drain`` cycles of ``o.ready`` high with
      nothing accepted, no block is pending (every block leaves).

    With the fused step the same function at every depth, and the pipeline's flow and order
    proofs (each block leaves once, in order), these make each run's result the same fold of
    the fused step over the run's blocks, from its ``c0``, at every depth: property 4 for
    MXDotGeneral, per context.  A non-first block for a context with no result since the reset
    (a run that was never opened) is outside the contract and not checked.
    """

    def __init__(self, unit: FormalUnit, k: int, stages: int):
        super().__init__()
        if not unit.runs or unit.tail:
            raise ValueError(f"the chain harness is for units with runs and fp32 results, "
                             f"not {unit.name}")
        self.unit, self.stages = unit, stages
        self.dut = unit.build(k, stages)
        self.i_payload = Signal(len(Value.cast(self.dut.i.payload)))
        ctx_bits = self.dut.ctx_bits
        lanes = unit.lanes
        self.probe_names = {"step_c": [f"dut.{unit.net(ln, 'step_c')}" for ln in lanes],
                            "leave": ["dut.leave"],
                            "leave_result": [f"dut.{unit.net(ln, 'leave_result')}"
                                             for ln in lanes],
                            "pipe_valid": ["dut.pipe_valid"]}
        # an accumulator: fp32, or a run's chained state (hw.dot.chained_f4, fp32 c low)
        self.acc_bits = accumulator_bits(self.dut)
        self.widths = {"step_c": self.acc_bits, "leave_result": self.acc_bits}
        if ctx_bits:
            self.probe_names["leave_ctx"] = ["dut.leave_ctx"]
            self.widths["leave_ctx"] = ctx_bits
        self.probe = Signal(len(self.probe_wires))

    @property
    def ports(self):
        return [self.i_valid, self.i_payload, self.o_ready, self.probe]

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        rst, started, past_rst = self.reset_control(m)
        drive_free(m, self, dut, past_rst)
        f = probe_fields(self.probe, self.probe_names, self.widths)
        step_c, leave, leave_result = f["step_c"], f["leave"][0], f["leave_result"]
        pipe_valid = f["pipe_valid"][0]
        leave_ctx = f["leave_ctx"][0] if "leave_ctx" in f else Const(0, 1)
        p = dut.i.payload
        ctx = p.ctx if dut.ctx_bits else Const(0, 1)
        accept = dut.i.valid & dut.i.ready
        produce = dut.o.valid & dut.o.ready
        out_ctx = dut.o.payload.ctx if dut.ctx_bits else Const(0, 1)

        wide = self.acc_bits - 32  # a run starts from c0 and a cleared rest of its state
        c0 = [Cat(lane_value(p, "c0", lane, Const(0, 32)), Const(0, wide))
              for lane in self.unit.lanes]
        lane_results = [lane_value(dut.o.payload, "result", lane) for lane in self.unit.lanes]
        left = Cat(*(r[:32] for r in leave_result))  # the leaving blocks' fp32 results
        lanes_c = Cat(*step_c)
        first_c0 = lanes_c == Cat(*c0)
        checks = [Assert(~leave | pipe_valid, "chain_leave_at_pipeline_output"),
                  Assert(~(accept & p.first) | first_c0, "chain_first_takes_c0")]
        pending_any = []
        drain = self.unit.drain_cycles(self.stages)
        quiet = quiet_cycles(m, rst, self.o_ready, accept, drain)
        for j in range(dut.contexts):
            pending = Signal(name=f"pending{j}", reset_less=True)
            last = Signal(name=f"last{j}", reset_less=True)
            known = Signal(name=f"known{j}", reset_less=True)
            result = Signal(self.acc_bits * len(step_c), name=f"result{j}", reset_less=True)
            leave_j = leave & (leave_ctx == j)
            accept_j = accept & (ctx == j)
            with m.If(rst):
                m.d.sync += [pending.eq(0), known.eq(0)]
            with m.Else():
                m.d.sync += pending.eq((pending & ~leave_j) | accept_j)
                with m.If(accept_j):
                    m.d.sync += last.eq(p.last)
                with m.If(leave_j):
                    m.d.sync += [result.eq(Cat(*leave_result)), known.eq(1)]
            # (each Assert with its message on one line: formal.sby reads the names from there)
            chained = accept_j & ~p.first & (known | leave_j)
            previous = Mux(leave_j, Cat(*leave_result), result)
            output_j = produce & (out_ctx == j)
            emitted = leave_j & pending & last & (Cat(*lane_results) == left)
            checks += [
                Assert(~accept_j | ~pending | leave_j, "chain_one_block_per_context"),
                Assert(~leave_j | pending, "chain_leave_only_pending"),
                Assert(~chained | (lanes_c == previous), "chain_next_takes_previous_result"),
                Assert(~(leave_j & pending & last) | produce, "chain_last_result_is_output"),
                Assert(~output_j | emitted, "chain_output_is_last_result"),
            ]
            pending_any.append(pending)
        with m.If(started):
            m.d.comb += checks
            with m.If(quiet == drain):
                m.d.comb += Assert(~Cat(*pending_any).any(), "chain_nothing_pending_after_drain")
        return m
