"""The proof harnesses: Amaranth modules that wrap a unit with its environment and state the
properties as ``Assert``/``Assume`` statements (converted with :mod:`amaranth.back.rtlil`).

Why Amaranth and not SystemVerilog: the units are Amaranth components, so a harness in the same
language sees their port layouts (payload widths, the ``last`` field) and their parameters
(``latency``, the registered boundaries) directly, and the open-source Yosys front end reads
RTLIL without the SystemVerilog-assertion subset it lacks (no ``property``/``##`` sequences).

Every harness has the same conventions:

* the ``sync`` domain's reset is a free input, high in the first cycle (``Assume``) and free
  afterwards, so resets in the middle of traffic are covered;
* the unit's own registers start from any value (:mod:`formal.sby` removes their ``init``):
  only the reset brings them to a known state;
* a check about "the previous cycle" uses harness registers (``*_prev``) and is skipped in the
  cycle after a reset (``past_rst``);
* induction invariants read registers inside the pipeline through a ``probe`` input, which
  the Yosys script (:func:`formal.sby.run_sby`) disconnects from the ports and connects to
  the named registers (:func:`formal.units.pipeline_probes`).

* :class:`FlowHarness` -- properties 1-3 (stream rules, scoreboard, reset) on one unit.
* :class:`MiterHarness` -- property 4: the unit at ``stages`` against the unit at 1.
* :class:`OrderHarness` -- ordering, on the datapath-free :class:`hw.pipeline.Pipeline` with the
  unit's sections and depth, carrying sequence-number tags.
* :class:`ChainHarness` -- MXDotGeneral's half of property 4 that depends on the timing: which
  result becomes which block's accumulator input.
"""

from __future__ import annotations

from amaranth.hdl import (
    Assert,
    Assume,
    Cat,
    Const,
    Elaboratable,
    Module,
    Mux,
    ResetSignal,
    Signal,
    Value,
)
from amaranth.utils import bits_for

from hw.dot.parameters import accumulator_bits
from hw.pipeline import Pipeline

from .units import FormalUnit, pipeline_probes

__all__ = ["FlowHarness", "MiterHarness", "OrderHarness", "ChainHarness"]


def _popcount(bits):
    total = 0
    for b in bits:
        total = total + b
    return total


class _Harness(Elaboratable):
    """Shared parts: the free inputs, the first-cycle reset and ``past_rst``."""

    def __init__(self):
        self.i_valid = Signal()
        self.o_ready = Signal()

    def _reset_control(self, m):
        rst = ResetSignal()
        started = Signal(reset_less=True)  # 0 only in the first cycle
        past_rst = Signal(init=1, reset_less=True)
        m.d.sync += [started.eq(1), past_rst.eq(rst)]
        m.d.comb += Assume(started | rst, "the first cycle is a reset")
        return rst, started, past_rst


def _probe_fields(probe, names: dict[str, list[str]], widths: dict[str, int]):
    """Slice the ``probe`` input into the probed registers: kind -> list of Values, in the
    order of ``names`` (bit 0 of ``probe`` first; a kind in ``widths`` is that many bits per
    register, the others one bit)."""
    fields, at = {}, 0
    for kind, wires in names.items():
        w = widths.get(kind, 1)
        fields[kind] = [probe[at + w * j:at + w * (j + 1)] for j in range(len(wires))]
        at += w * len(wires)
    return fields


def _probe_bits(names: dict[str, list[str]], widths: dict[str, int]) -> list[str]:
    """The netlist bits behind ``probe`` (bit 0 first), for :func:`formal.sby.run_sby`."""
    bits = []
    for kind, wires in names.items():
        w = widths.get(kind, 1)
        bits += [f"{wire}[{j}]" if kind in widths else wire for wire in wires for j in range(w)]
    return bits


def _held(m, name, valid, ready, payload):
    """Registers of the previous cycle: ``valid & ~ready`` and the payload then."""
    wait = Signal(name=f"{name}_wait_prev", reset_less=True)
    prev = Signal(len(Value.cast(payload)), name=f"{name}_payload_prev", reset_less=True)
    m.d.sync += [wait.eq(valid & ~ready), prev.eq(payload)]
    return wait, prev


def _drive_free(m, harness, dut, past_rst):
    """Connect ``dut``'s streams to the harness's free inputs (``i_valid``, ``i_payload``,
    ``o_ready``) and assume property 1 on the input: while ``i.valid & ~i.ready``, the next
    cycle keeps ``i.valid`` and the payload (not across a reset)."""
    m.d.comb += [dut.i.valid.eq(harness.i_valid), dut.i.payload.eq(harness.i_payload),
                 dut.o.ready.eq(harness.o_ready)]
    i_wait, i_prev = _held(m, "i", dut.i.valid, dut.i.ready, dut.i.payload)
    with m.If(i_wait & ~past_rst):
        m.d.comb += Assume(dut.i.valid & (Value.cast(dut.i.payload) == i_prev),
                           "input held while not ready")


def _quiet_cycles(m, rst, o_ready, accept, drain: int) -> Signal:
    """Consecutive cycles (saturating at ``drain``) with ``o_ready`` high and nothing
    accepted, restarted by a reset: at ``drain``, every block accepted before has left."""
    quiet = Signal(range(drain + 1), name="quiet", reset_less=True)
    with m.If(rst | ~o_ready | accept):
        m.d.sync += quiet.eq(0)
    with m.Elif(quiet != drain):
        m.d.sync += quiet.eq(quiet + 1)
    return quiet


class FlowHarness(_Harness):
    """Properties 1-3 on one unit, with a free environment on both ports.

    1. Stream rules: while ``i.valid & ~i.ready`` the input keeps ``valid`` and its payload
       (assumed); while ``o.valid & ~o.ready`` the output does (asserted).
    2. Scoreboard: ``inflight`` counts accepted blocks (MXDotGeneral and MXGemm: accepted
       ``last`` blocks, one output per run) minus taken outputs. Asserted: no output while
       ``inflight`` is 0 (no duplication, nothing from nothing); ``inflight`` never exceeds the
       capacity; after ``drain`` cycles of ``o.ready`` high with nothing accepted, ``inflight``
       is 0 (no loss) and ``i.ready`` is high (no deadlock); with ``o.ready`` high for the last
       ``drain`` cycles, ``o.valid`` now equals "a block was accepted ``latency`` cycles ago"
       (exact latency; ``latency``, ``capacity`` and ``drain`` count a unit's
       :attr:`formal.units.FormalUnit.tail` pipeline too).
    3. Reset: in the cycle after a reset ``o.valid`` is low and ``i.ready`` high; the
       scoreboard restarts at 0, so every later output must come from a block accepted after
       the reset (nothing was held over).

    Induction invariants (with ``probes``): the pipeline's control registers, read through
    the ``probe`` input that :mod:`formal.sby` connects to them, agree with the scoreboard:
    all copies of the stage enable (``advance``) are equal and ``inflight`` is the number of
    valid stages plus the full skid register (the skid register is full exactly when
    ``advance`` is low); with :meth:`Pipeline.hold_when` (MXDotGeneral), the hold bit implies
    the last stage's valid.

    Parameters
    ----------
    unit : FormalUnit
    k, stages : int
    probes : bool
        Add the induction invariants (needs the probe connection; not for MXDotGeneral,
        whose stages hold non-last blocks the scoreboard does not count).
    """

    def __init__(self, unit: FormalUnit, k: int, stages: int, *, probes: bool = True):
        super().__init__()
        self.unit, self.stages = unit, stages
        self.dut = unit.build(k, stages)
        self.i_payload = Signal(len(Value.cast(self.dut.i.payload)))
        self.probe_names = unit.control_probes(k, stages) if probes else {}
        self.probe = Signal(max(1, sum(len(v) for v in self.probe_names.values())))

    @property
    def ports(self):
        return [self.i_valid, self.i_payload, self.o_ready, self.probe]

    @property
    def probe_wires(self) -> list[str]:
        """Netlist names behind ``probe``, bit 0 first."""
        return _probe_bits(self.probe_names, {})

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        unit, latency = self.unit, self.unit.latency(self.stages)
        rst, started, past_rst = self._reset_control(m)
        _drive_free(m, self, dut, past_rst)  # 1. stream rules: the input's, assumed
        accept = dut.i.valid & dut.i.ready
        produce = dut.o.valid & dut.o.ready
        counted = accept & dut.i.payload.last if unit.runs else accept

        # 1. stream rules: the output's
        o_wait, o_prev = _held(m, "o", dut.o.valid, dut.o.ready, dut.o.payload)
        with m.If(o_wait & ~past_rst):
            m.d.comb += Assert(dut.o.valid, "stream_o_valid_held")
            m.d.comb += Assert(Value.cast(dut.o.payload) == o_prev, "stream_o_payload_held")

        # 2. scoreboard
        capacity, drain = unit.capacity(self.stages), unit.drain_cycles(self.stages)
        inflight = Signal(bits_for(capacity + 1), reset_less=True)
        quiet = _quiet_cycles(m, rst, self.o_ready, accept, drain)
        ready_run = Signal(range(drain + 1), reset_less=True)  # o.ready high
        history = Signal(latency, reset_less=True)  # history[j]: counted accept j+1 cycles ago
        with m.If(rst):
            m.d.sync += [inflight.eq(0), ready_run.eq(0), history.eq(0)]
        with m.Else():
            m.d.sync += [inflight.eq(inflight + counted - produce),
                         history.eq(Cat(counted, history[:-1]))]
            with m.If(~self.o_ready):
                m.d.sync += ready_run.eq(0)
            with m.Elif(ready_run != drain):
                m.d.sync += ready_run.eq(ready_run + 1)
        with m.If(started):
            m.d.comb += [
                Assert(~produce | (inflight != 0), "no_output_without_input"),
                Assert(inflight <= capacity, "inflight_within_capacity"),
            ]
            with m.If(quiet == drain):
                m.d.comb += [Assert(inflight == 0, "no_loss_after_drain"),
                             Assert(dut.i.ready, "ready_after_drain")]
            with m.If(ready_run == drain):
                m.d.comb += Assert(dut.o.valid == history[-1], "exact_latency")

        # 3. reset
        with m.If(past_rst & started):
            m.d.comb += [Assert(~dut.o.valid, "reset_o_valid_low"),
                         Assert(dut.i.ready, "reset_i_ready_high")]

        if self.probe_names:
            self._invariants(m, started, inflight)
        return m

    def _invariants(self, m, started, inflight):
        bits = _probe_fields(self.probe, self.probe_names, {})
        valid = bits["valid"]
        if self.unit.runs:  # hold_when: hold0 says whether the last stage's block waits
            checks = [Assert(~bits["hold"][0] | valid[-1], "inv_hold_implies_valid")]
        else:  # the skid register is full exactly when advance is low
            advance = bits["advance"]
            checks = [Assert(s == advance[0], "inv_stall_copies_equal") for s in advance[1:]]
            checks.append(Assert(inflight == _popcount(valid) + ~advance[0],
                                 "inv_inflight_counts_valid_and_skid"))
        with m.If(started):
            m.d.comb += checks


class MiterHarness(_Harness):
    """Property 4: the unit at ``stages`` and at 1, fed the same input sequence, produce the
    same output sequence.

    Inputs: the two copies are joined, an input beat is offered to each only while the other
    is ready, so both accept exactly the same beats in the same cycles (MXDotGeneral's
    ``i.ready`` depends on the depth: a context stays busy for ``latency`` cycles).  Outputs:
    ``o.ready`` is held high, so by the exact latency of the flow proof the deep copy presents
    in cycle t what the shallow one presented in cycle t - (stages - 1); a delay line aligns
    them and asserts equal ``o.valid`` and, when valid, equal payloads.  Backpressure is left
    to the flow and order proofs (it only pauses the common enable).  For MXDotGeneral the
    whole result stream (results and contexts) is compared, which implies the per-context
    equality.
    """

    def __init__(self, unit: FormalUnit, k: int, stages: int):
        super().__init__()
        if stages < 2:
            raise ValueError(f"a miter needs stages >= 2, got {stages}")
        self.unit, self.stages = unit, stages
        self.deep = unit.build(k, stages)
        self.ref = unit.build(k, 1)
        self.i_payload = Signal(len(Value.cast(self.deep.i.payload)))

    @property
    def ports(self):
        return [self.i_valid, self.i_payload]

    def elaborate(self, platform):
        m = Module()
        m.submodules.deep, m.submodules.ref = deep, ref = self.deep, self.ref
        rst, started, _ = self._reset_control(m)
        for a, b in ((deep, ref), (ref, deep)):
            m.d.comb += [a.i.valid.eq(self.i_valid & b.i.ready),
                         a.i.payload.eq(self.i_payload), a.o.ready.eq(1)]
        delay = self.stages - 1
        age = Signal(range(delay + 1), reset_less=True)  # cycles since a reset, saturating
        with m.If(rst):
            m.d.sync += age.eq(0)
        with m.Elif(age != delay):
            m.d.sync += age.eq(age + 1)
        ref_out = Cat(ref.o.valid, ref.o.payload)
        line = [Signal(len(ref_out), name=f"ref_out_{j + 1}", reset_less=True)
                for j in range(delay)]
        m.d.sync += [line[0].eq(ref_out)] + [line[j].eq(line[j - 1]) for j in range(1, delay)]
        ref_valid, ref_payload = line[-1][0], line[-1][1:]
        with m.If(started & (age == delay)):
            m.d.comb += Assert(deep.o.valid == ref_valid, "miter_same_valid")
            with m.If(ref_valid):
                m.d.comb += Assert(Value.cast(deep.o.payload) == ref_payload, "miter_same_payload")
        return m


class OrderHarness(_Harness):
    """Ordering on the datapath-free pipeline: :class:`hw.pipeline.Pipeline` with the unit's
    sections and depth, carrying a sequence-number tag instead of a datapath.

    The tag of each accepted block is the number of blocks accepted before it (modulo
    ``2^w``, ``w`` wide enough for every block in flight); asserted: each output's tag is
    the number of outputs taken before it, i.e. outputs leave in acceptance order, none lost
    or repeated.  With a :attr:`formal.units.FormalUnit.tail` (MXGemm's MX output) the
    tags then cross a second pipeline of the tail's sections and depth.  For MXDotGeneral
    and MXGemm the (first) pipeline waits only for ``last`` blocks
    (:meth:`Pipeline.hold_when`): a free ``last`` bit rides with the tag, only ``last`` blocks
    are numbered and emitted, and the others leave without waiting.  Legitimate because every
    unit's data registers load on the same enables as these valid bits: the unit's ordering is
    the pipeline's.

    Induction invariants (``probes``; not with ``hold_when``): the stage enable's copies
    (``advance``) are equal; the skid register is full exactly when ``advance`` is low and
    then holds the oldest block
    (tag ``count_out``); a valid stage's tag is ``count_out`` plus the number of valid blocks
    nearer the output, and ``count_in - count_out`` is the number of blocks held.
    """

    def __init__(self, unit: FormalUnit, k: int, stages: int, *, probes: bool = True):
        super().__init__()
        self.unit, self.stages = unit, stages
        self.sections = dict(unit.sections(k, stages))
        self.tag_bits = bits_for(unit.capacity(stages)) + 1
        self.i_last = Signal()
        self.probe_names = {}
        if probes:
            if unit.runs:
                raise ValueError("order invariants are not stated for hold_when")
            self.probe_names = pipeline_probes(self.sections, stages, "t", data=True)
        self.widths = {"data": self.tag_bits, "skid": self.tag_bits}
        self.probe = Signal(max(1, len(self.probe_wires)))

    @property
    def ports(self):
        return [self.i_valid, self.i_last, self.o_ready, self.probe]

    @property
    def probe_wires(self) -> list[str]:
        """Netlist names behind ``probe``, bit 0 first."""
        return _probe_bits(self.probe_names, self.widths)

    def elaborate(self, platform):
        m = Module()
        unit = self.unit
        rst, started, _ = self._reset_control(m)
        pipe = Pipeline(m, self.sections, self.stages, name="t")
        count_in = Signal(self.tag_bits, reset_less=True)
        count_out = Signal(self.tag_bits, reset_less=True)
        last = self.i_last if unit.runs else 1
        x = Cat(count_in, last)
        names = list(self.sections)
        for name in names:
            if unit.runs and name == names[-1]:  # the flag is read before the last boundary
                pipe.hold_when(x[self.tag_bits])
            x = pipe.boundary(x, name)
        tag = x[:self.tag_bits]
        i_ready, pipe_valid, pipe_ready = Signal(), Signal(), Signal()
        pipe.connect(i_valid=self.i_valid, i_ready=i_ready, o_valid=pipe_valid,
                     o_ready=pipe_ready if unit.tail else self.o_ready)
        o_valid = pipe.hold if unit.runs else pipe_valid
        if unit.tail:  # the second pipeline (MXGemm's output quantizers), the tags through it
            sections, depth = unit.tail[:2]
            tail = Pipeline(m, dict(sections), depth, name="u")
            for name in dict(sections):
                tag = tail.boundary(tag, name)
            tail_valid = Signal()
            tail.connect(i_valid=o_valid, i_ready=pipe_ready, o_valid=tail_valid,
                         o_ready=self.o_ready)
            o_valid = tail_valid
        accept = self.i_valid & i_ready
        produce = o_valid & self.o_ready
        with m.If(rst):
            m.d.sync += [count_in.eq(0), count_out.eq(0)]
        with m.Else():
            m.d.sync += [count_in.eq(count_in + (accept & last)),
                         count_out.eq(count_out + produce)]
        with m.If(started & produce):
            m.d.comb += Assert(tag == count_out, "order_tag_is_next")
        if self.probe_names:
            self._invariants(m, started, count_in, count_out)
        return m

    def _invariants(self, m, started, count_in, count_out):
        f = _probe_fields(self.probe, self.probe_names, self.widths)
        valid, data, advance = f["valid"], f["data"], f["advance"]
        checks = [Assert(s == advance[0], "inv_stall_copies_equal") for s in advance[1:]]
        # the skid register is full exactly when advance is low, and then holds the oldest block
        skid_full = Signal(name="inv_skid_full")
        m.d.comb += skid_full.eq(~advance[0])
        checks.append(Assert(~skid_full | (f["skid"][0] == count_out), "inv_skid_tag"))
        ahead = skid_full  # valid blocks nearer the output than stage j
        for j in reversed(range(len(valid))):
            expect = (count_out + ahead)[:self.tag_bits]
            checks.append(Assert(~valid[j] | (data[j] == expect), "inv_stage_tags_consecutive"))
            ahead = ahead + valid[j]
        checks.append(Assert(count_in == (count_out + ahead)[:self.tag_bits],
                             "inv_count_in_is_out_plus_held"))
        with m.If(started):
            m.d.comb += checks


def _lane_value(payload, field: str, lane: str | None, default=None):
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


class ChainHarness(_Harness):
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

    @property
    def probe_wires(self) -> list[str]:
        """Netlist names behind ``probe``, bit 0 first."""
        return _probe_bits(self.probe_names, self.widths)

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        rst, started, past_rst = self._reset_control(m)
        _drive_free(m, self, dut, past_rst)
        f = _probe_fields(self.probe, self.probe_names, self.widths)
        step_c, leave, leave_result = f["step_c"], f["leave"][0], f["leave_result"]
        pipe_valid = f["pipe_valid"][0]
        leave_ctx = f["leave_ctx"][0] if "leave_ctx" in f else Const(0, 1)
        p = dut.i.payload
        ctx = p.ctx if dut.ctx_bits else Const(0, 1)
        accept = dut.i.valid & dut.i.ready
        produce = dut.o.valid & dut.o.ready
        out_ctx = dut.o.payload.ctx if dut.ctx_bits else Const(0, 1)

        wide = self.acc_bits - 32  # a run starts from c0 and a cleared rest of its state
        c0 = [Cat(_lane_value(p, "c0", lane, Const(0, 32)), Const(0, wide))
              for lane in self.unit.lanes]
        lane_results = [_lane_value(dut.o.payload, "result", lane) for lane in self.unit.lanes]
        left = Cat(*(r[:32] for r in leave_result))  # the leaving blocks' fp32 results
        lanes_c = Cat(*step_c)
        first_c0 = lanes_c == Cat(*c0)
        checks = [Assert(~leave | pipe_valid, "chain_leave_at_pipeline_output"),
                  Assert(~(accept & p.first) | first_c0, "chain_first_takes_c0")]
        pending_any = []
        drain = self.unit.drain_cycles(self.stages)
        quiet = _quiet_cycles(m, rst, self.o_ready, accept, drain)
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
