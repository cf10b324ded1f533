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
* :class:`formal.chain_harness.ChainHarness` -- MXDotGeneral's half of property 4 that
  depends on the timing: which result becomes which block's accumulator input.

Their shared parts (the free inputs, the first-cycle reset, the probe input, the input's hold
assumption) are :mod:`formal.environment`'s.
"""

from __future__ import annotations

from amaranth.hdl import (
    Assert,
    Cat,
    Module,
    Signal,
    Value,
)
from amaranth.utils import bits_for

from hw.pipeline import Pipeline

from .environment import (
    Harness,
    drive_free,
    held,
    popcount,
    probe_fields,
    quiet_cycles,
)
from .units import FormalUnit, pipeline_probes

__all__ = ["FlowHarness", "MiterHarness", "OrderHarness"]


class FlowHarness(Harness):
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
        self.widths = {}  # every probed control register is one bit
        self.probe = Signal(max(1, sum(len(v) for v in self.probe_names.values())))

    @property
    def ports(self):
        return [self.i_valid, self.i_payload, self.o_ready, self.probe]

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        unit, latency = self.unit, self.unit.latency(self.stages)
        rst, started, past_rst = self.reset_control(m)
        drive_free(m, self, dut, past_rst)  # 1. stream rules: the input's, assumed
        accept = dut.i.valid & dut.i.ready
        produce = dut.o.valid & dut.o.ready
        counted = accept & dut.i.payload.last if unit.runs else accept

        # 1. stream rules: the output's
        o_wait, o_prev = held(m, "o", dut.o.valid, dut.o.ready, dut.o.payload)
        with m.If(o_wait & ~past_rst):
            m.d.comb += Assert(dut.o.valid, "stream_o_valid_held")
            m.d.comb += Assert(Value.cast(dut.o.payload) == o_prev, "stream_o_payload_held")

        # 2. scoreboard
        capacity, drain = unit.capacity(self.stages), unit.drain_cycles(self.stages)
        inflight = Signal(bits_for(capacity + 1), reset_less=True)
        quiet = quiet_cycles(m, rst, self.o_ready, accept, drain)
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
        bits = probe_fields(self.probe, self.probe_names, self.widths)
        valid = bits["valid"]
        if self.unit.runs:  # hold_when: hold0 says whether the last stage's block waits
            checks = [Assert(~bits["hold"][0] | valid[-1], "inv_hold_implies_valid")]
        else:  # the skid register is full exactly when advance is low
            advance = bits["advance"]
            checks = [Assert(s == advance[0], "inv_stall_copies_equal") for s in advance[1:]]
            checks.append(Assert(inflight == popcount(valid) + ~advance[0],
                                 "inv_inflight_counts_valid_and_skid"))
        with m.If(started):
            m.d.comb += checks


class MiterHarness(Harness):
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
        rst, started, _ = self.reset_control(m)
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


class OrderHarness(Harness):
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

    def elaborate(self, platform):
        m = Module()
        unit = self.unit
        rst, started, _ = self.reset_control(m)
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
        f = probe_fields(self.probe, self.probe_names, self.widths)
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
