"""hw.pipeline.Pipeline in simulation: every block comes out once, in order, transformed by
every section, under random valid/ready; the latency is ``stages``; with one enable copy per
stage and with the stage registers loaded in parts (``enable_load``)."""

from __future__ import annotations

import random
import re

import pytest
from amaranth.hdl import Cat, Module, ResetInserter, Signal
from pipeline_toys import FLOWS, SECTIONS, Chain, block_value, chain_out, run_stream, simulate

from hw.pipeline import Pipeline


@pytest.mark.parametrize("flow", FLOWS)
@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_pipeline_lossless_in_order(stages, flow, seed):
    sent, got, _ = run_stream(Chain(stages, FLOWS[flow]), 0.7, 0.6, 60, seed)
    assert got == [chain_out(v) for _, v in sent][:len(got)] and len(got) == 60


@pytest.mark.parametrize("flow", FLOWS)
@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_pipeline_latency_and_throughput(stages, flow, seed):
    """With valid and ready always high: one block per clock, each ``stages`` cycles late."""
    sent, got, out_cycles = run_stream(Chain(stages, FLOWS[flow]), 1.0, 1.0, 20, seed)
    assert got == [chain_out(v) for _, v in sent][:20]
    assert [c for c, _ in sent][:20] == list(range(20))
    assert out_cycles == [c + stages for c in range(20)]


class _Replicas(Chain):
    """The chain with three replicas of each section's value at every boundary but the last
    (:meth:`Pipeline.replicate`): the next section adds the last replica in place of the stage
    register, plus the XORs of the others with it and with the stage register, which are zero
    only while every copy holds the same block as the stage register."""

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, SECTIONS, self.stages, name="t", enable_load=self.enable_load)
        x = self.i_data
        names = list(SECTIONS)
        for j, name in enumerate(names, start=1):
            value = (x + j)[:16]
            x = pipe.boundary(value, name)
            if name != names[-1]:
                r = pipe.replicate(value, name, 3)
                x = (r[2] + (r[0] ^ x) + (r[0] ^ r[1]) + (r[1] ^ r[2]))[:16]
        m.d.comb += self.o_data.eq(x)
        pipe.connect(i_valid=self.i_valid, i_ready=self.i_ready, o_valid=self.o_valid,
                     o_ready=self.o_ready)
        return m


@pytest.mark.parametrize("flow", FLOWS)
@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_replicas_hold_the_stage_registers_block(stages, flow, seed):
    """Replicas load with their stage under random valid/ready: every block comes out once,
    in order, unchanged by the XORs (a replica a block ahead or behind would show)."""
    sent, got, _ = run_stream(_Replicas(stages, FLOWS[flow]), 0.7, 0.6, 60, seed)
    assert got == [chain_out(v) for _, v in sent][:len(got)] and len(got) == 60


def test_replicas_load_on_enable_copies_of_their_own():
    """Each replica of a 16-bit value in parts of 4 bits: four enable copies of its own
    besides the stage's four (16 per boundary for three replicas), so synthesis cannot merge
    the replicas; where the boundary holds no register, the value itself.  Counted in the
    netlist as the formal proofs find them (:func:`formal.units.replicas`,
    :func:`formal.units.enable_copies`: a renamed register fails here and there alike)."""
    from amaranth.back import rtlil

    from formal.units import enable_copies, replicas

    text = rtlil.convert(_Replicas(4, 5), ports=[])
    assert replicas(text, "t", SECTIONS) == {"a": 3, "b": 3, "c": 3}
    assert enable_copies(text, "t", SECTIONS) == {"a": 16, "b": 16, "c": 16, "d": 4}
    pipe = Pipeline(Module(), SECTIONS, 1, name="t")
    value = Signal(4)
    pipe.boundary(value, "a")
    assert pipe.replicate(value, "a", 2) == [value, value]


def test_replicate_checks_its_arguments():
    m = Module()
    pipe = Pipeline(m, SECTIONS, 4, name="t")
    value = Signal(4)
    with pytest.raises(ValueError, match="boundary 'a' is not crossed yet"):
        pipe.replicate(value, "a", 2)
    pipe.boundary(value, "a")
    with pytest.raises(ValueError, match="copies must be a positive int, not 0"):
        pipe.replicate(value, "a", 0)
    with pytest.raises(ValueError, match="copies must be a positive int, not True"):
        pipe.replicate(value, "a", True)
    pipe.boundary(value, "b")
    with pytest.raises(ValueError, match="boundary 'a' is behind"):
        pipe.replicate(value, "a", 2)
    with pytest.raises(ValueError, match="no boundary 'e'"):
        pipe.replicate(value, "e", 2)
    pipe.boundary(value, "c")
    pipe.boundary(value, "d")
    with pytest.raises(ValueError, match="boundary 'd' is the last one"):
        pipe.replicate(value, "d", 2)
    unregistered = Pipeline(Module(), SECTIONS, 1, name="t")
    with pytest.raises(ValueError, match="boundary 'a' is not crossed yet"):
        unregistered.replicate(value, "a", 2)


class _Runs(Chain):
    """The chain with :meth:`Pipeline.hold_when`: only blocks with bit 0 set wait at the
    output (as MXDotGeneral's last blocks); the others leave whenever they are presented."""

    def __init__(self, stages):
        super().__init__(stages)
        self.o_hold = Signal()

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, SECTIONS, self.stages, name="t")
        x = self.i_data
        for j, name in enumerate(SECTIONS, start=1):
            if name == list(SECTIONS)[-1]:
                pipe.hold_when(x[0])
            x = pipe.boundary(Cat(x[0], (x[1:] + j)[:15]), name)
        m.d.comb += [self.o_data.eq(x), self.o_hold.eq(pipe.hold)]
        pipe.connect(i_valid=self.i_valid, i_ready=self.i_ready, o_valid=self.o_valid,
                     o_ready=self.o_ready)
        return m


@pytest.mark.parametrize("stages", [1, 2, 4])
def test_hold_when_only_flagged_blocks_wait(stages, seed):
    """Every block leaves once, in order: a flagged one only when ``hold`` and ``o_ready``
    (it is presented and taken), an unflagged one whenever it is presented (``o_valid``),
    whatever ``o_ready`` says; ``hold`` is never high for an unflagged block."""
    dut = _Runs(stages)
    rnd = random.Random(seed)
    blocks, sent, left = 80, [], []

    def expected(v):  # bit 0 rides along, bits 1.. gain 1 + 2 + 3 + 4
        return (v & 1) | (((v >> 1) + 10) & 0x7FFF) << 1

    async def bench(ctx):
        nxt, cycle = 0, 0
        while len(left) < blocks and cycle < 50 * blocks:
            value = block_value(nxt)
            valid = nxt < blocks and rnd.random() < 0.7
            ready = rnd.random() < 0.4
            ctx.set(dut.i_valid, valid)
            ctx.set(dut.i_data, value)
            ctx.set(dut.o_ready, ready)
            if valid and ctx.get(dut.i_ready):
                sent.append(value)
                nxt += 1
            out, hold = ctx.get(dut.o_data), ctx.get(dut.o_hold)
            if ctx.get(dut.o_valid):
                flagged = out & 1
                assert hold == flagged, f"hold {hold} for a block with flag {flagged}"
                if not flagged or ready:
                    left.append(out)
            else:
                assert not hold
            await ctx.tick()
            cycle += 1

    simulate(dut, bench)
    assert len(left) == blocks
    assert left == [expected(v) for v in sent][:blocks]
    assert any(v & 1 for v in sent) and not all(v & 1 for v in sent)


class _OutputCopies(Chain):
    """The chain (with :meth:`Pipeline.hold_when` on bit 0, or every block waiting) and three
    copies of the output's valid and data (:meth:`Pipeline.output_copies`), under a
    synchronous reset ``rst``."""

    def __init__(self, stages, enable_load=None, hold=True):
        super().__init__(stages, enable_load)
        self.hold, self.rst = hold, Signal()
        self.copies = [(Signal(name=f"copy{c}_valid"), Signal(16, name=f"copy{c}_data"))
                       for c in range(3)]

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, SECTIONS, self.stages, name="t", enable_load=self.enable_load)
        x = self.i_data
        for j, name in enumerate(SECTIONS, start=1):
            if self.hold and name == list(SECTIONS)[-1]:
                pipe.hold_when(x[0])
            x = pipe.boundary(Cat(x[0], (x[1:] + j)[:15]), name)
        m.d.comb += self.o_data.eq(x)
        for (valid, value), (copy_valid, copy_data) in zip(
                pipe.output_copies(pipe.last_input, 3), self.copies, strict=True):
            m.d.comb += [copy_valid.eq(valid), copy_data.eq(value)]
        pipe.connect(i_valid=self.i_valid, i_ready=self.i_ready, o_valid=self.o_valid,
                     o_ready=self.o_ready)
        return ResetInserter(self.rst)(m)


@pytest.mark.parametrize("hold", [True, False], ids=["hold_when", "all_wait"])
@pytest.mark.parametrize("flow", FLOWS)
@pytest.mark.parametrize("stages", [1, 2, 4])
def test_output_copies_show_the_output_every_cycle(stages, flow, hold, seed):
    """Every cycle, under random valid, ready in runs (long stalls) and resets in traffic,
    each copy's valid equals ``o_valid`` and, while valid, its data the output's."""
    dut = _OutputCopies(stages, FLOWS[flow], hold)
    rnd = random.Random(seed)
    shown = {"valid": 0, "stalled": 0, "reset": 0}

    async def bench(ctx):
        nxt, ready = 0, True
        for cycle in range(600):
            reset = rnd.random() < 0.01 or cycle == 300  # at least one, whatever the seed
            if rnd.random() < 0.1:  # o_ready holds its level for runs of about ten cycles
                ready = not ready
            ctx.set(dut.rst, reset)
            ctx.set(dut.i_valid, rnd.random() < 0.7)
            ctx.set(dut.i_data, block_value(nxt))
            ctx.set(dut.o_ready, ready)
            if ctx.get(dut.i_valid) and ctx.get(dut.i_ready):
                nxt += 1
            valid = ctx.get(dut.o_valid)
            for c, (copy_valid, copy_data) in enumerate(dut.copies):
                assert ctx.get(copy_valid) == valid, f"copy {c}: valid differs"
                if valid:
                    assert ctx.get(copy_data) == ctx.get(dut.o_data), f"copy {c}: data"
            shown["valid"] += valid
            shown["stalled"] += valid and not ready
            shown["reset"] += reset
            await ctx.tick()

    simulate(dut, bench)
    assert shown["valid"] > 100 and shown["stalled"] > 20 and shown["reset"], shown


def test_output_copies_load_on_enable_copies_of_their_own():
    """Each copy loads on one enable copy of its own, numbered after the stage's (one for
    each of its 4-bit parts): counted as the formal proofs count them."""
    from amaranth.back import rtlil

    from formal.units import enable_copies

    text = rtlil.convert(_OutputCopies(4, 5), ports=[])
    assert enable_copies(text, "t", SECTIONS) == {"a": 4, "b": 4, "c": 4, "d": 7}
    for c in range(3):
        for suffix in ("", "_skid", "_valid"):
            assert re.search(rf"wire .*\\t_d_o{c}{suffix}$", text, flags=re.MULTILINE)


def test_output_copies_check_their_arguments():
    pipe = Pipeline(Module(), SECTIONS, 2, name="t")
    value = Signal(4)
    with pytest.raises(ValueError, match="last_input is known once the last boundary"):
        pipe.last_input  # noqa: B018
    for name in SECTIONS:
        with pytest.raises(ValueError, match="output copies are built once the last"):
            pipe.output_copies(value, 2)
        pipe.boundary(value, name)
    assert pipe.last_input is value
    with pytest.raises(ValueError, match="copies must be a positive int, not 0"):
        pipe.output_copies(value, 0)
    with pytest.raises(ValueError, match="copies must be a positive int, not True"):
        pipe.output_copies(value, True)
    assert len(pipe.output_copies(value, 2)) == 2


class _ReadyCopies(Chain):
    """Two chains in series, ``t`` then ``u``: ``t``'s stage enables are updated from three
    copies of ``u``'s ``i_ready`` (:meth:`Pipeline.ready_copies`, :meth:`Pipeline.connect`).
    With ``hold``, ``t`` holds only blocks with bit 0 set at its output (``hold_when``); the
    others leave it into nothing, as a GEMM tile's non-last blocks leave into its
    accumulators, and only flagged blocks reach ``u``."""

    def __init__(self, stages, enable_load=None, hold=False):
        super().__init__(stages, enable_load)
        self.hold, self.rst = hold, Signal()

    def elaborate(self, platform):
        m = Module()
        t, u = (Pipeline(m, SECTIONS, self.stages, name=name, enable_load=self.enable_load)
                for name in ("t", "u"))
        x = self.i_data
        for j, name in enumerate(SECTIONS, start=1):
            if self.hold and name == list(SECTIONS)[-1]:
                t.hold_when(x[0])
            x = t.boundary(Cat(x[0], (x[1:] + j)[:15]), name)
        copies = [Signal(name=f"ready{c}") for c in range(3)]
        between_valid, between_ready = Signal(), Signal()
        t.connect(i_valid=self.i_valid, i_ready=self.i_ready, o_valid=between_valid,
                  o_ready=copies)
        for j, name in enumerate(SECTIONS, start=1):
            x = u.boundary(Cat(x[0], (x[1:] + j)[:15]), name)
        m.d.comb += [self.o_data.eq(x),
                     *(c.eq(r) for c, r in zip(copies, u.ready_copies(3), strict=True))]
        u.connect(i_valid=t.hold if self.hold else between_valid, i_ready=between_ready,
                  o_valid=self.o_valid, o_ready=self.o_ready)
        return ResetInserter(self.rst)(m)


def _twice(v):  # bit 0 rides along, bits 1.. gain 10 in each chain
    return (v & 1) | (((v >> 1) + 20) & 0x7FFF) << 1


@pytest.mark.parametrize("hold", [False, True], ids=["all_wait", "hold_when"])
@pytest.mark.parametrize("flow", FLOWS)
@pytest.mark.parametrize("stages", [1, 2, 4])
def test_ready_copies_keep_every_block(stages, flow, hold, seed):
    """Under random valid and ready every (flagged) block comes out of both chains once, in
    order; with both always high, one block per clock (all_wait) after 2 x ``stages``."""
    sent, got, _ = run_stream(_ReadyCopies(stages, FLOWS[flow], hold), 0.7, 0.6, 40, seed)
    kept = [_twice(v) for _, v in sent if v & 1 or not hold]  # odd blocks have bit 0 set
    assert got == kept and len(got) == (20 if hold else 40)
    if not hold:
        sent, got, out_cycles = run_stream(_ReadyCopies(stages, FLOWS[flow]), 1, 1, 20, seed)
        assert got == [_twice(v) for _, v in sent][:20]
        assert out_cycles == [c + 2 * stages for c, _ in sent][:20]


def test_ready_copies_are_registers_of_their_own():
    """Three enable copies of ``u``'s first stage beyond its own (the ``ready`` copies) and
    two more waiting flags of ``t`` (``t_hold1``, ``t_hold2``), on enable copies of ``t``'s
    last stage: distinct nets synthesis cannot merge; counted as the formal proofs count
    enable copies."""
    from amaranth.back import rtlil

    from formal.units import enable_copies

    text = rtlil.convert(_ReadyCopies(4, hold=True), ports=[])
    assert enable_copies(text, "u", SECTIONS) == {"a": 4, "b": 1, "c": 1, "d": 1}
    assert enable_copies(text, "t", SECTIONS) == {"a": 1, "b": 1, "c": 1, "d": 3}
    for c in (1, 2):
        assert re.search(rf"wire .*\\t_hold{c}$", text, flags=re.MULTILINE)
    for c in range(3):  # each copy updates a run of t's six enables (two, one cell each)
        assert len(re.findall(rf"connect \\A \\ready{c} \[0\]", text)) == 2, c
    pipe = Pipeline(Module(), SECTIONS, 2, name="t")
    with pytest.raises(ValueError, match="boundary 'b' is not crossed yet"):
        pipe.ready_copies(1)
