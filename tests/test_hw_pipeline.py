"""hw.pipeline.Pipeline in simulation: every block comes out once, in order, transformed by
every section, under random valid/ready; the latency is ``stages``; with one enable copy per
stage and with the stage registers loaded in parts (``enable_load``)."""

from __future__ import annotations

import random
import re

import pytest
from amaranth.hdl import Cat, Elaboratable, Module, ResetInserter, Signal

from hw.pipeline import Pipeline, critical_stage, default_stages, enable_parts

SECTIONS = {"a": 1.0, "b": 2.0, "c": 1.0, "d": 3.0}
#: enable_load: one enable copy per stage, or the 16-bit stage registers loaded in four parts
#: of 4 bits
FLOWS = {"registered": None, "parts": 5}


class _Chain(Elaboratable):
    """Adds 1, 2, 3, 4 in the four sections (so a skipped or repeated section shows)."""

    def __init__(self, stages, enable_load=None, extract_reset=True):
        self.stages, self.enable_load = stages, enable_load
        self.extract_reset = extract_reset
        self.i_valid, self.i_ready, self.i_data = Signal(), Signal(), Signal(16)
        self.o_valid, self.o_ready, self.o_data = Signal(), Signal(), Signal(16)

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, SECTIONS, self.stages, name="t", enable_load=self.enable_load,
                        extract_reset=self.extract_reset)
        x = self.i_data
        for j, name in enumerate(SECTIONS, start=1):
            x = pipe.boundary((x + j)[:16], name)
        m.d.comb += self.o_data.eq(x)
        pipe.connect(i_valid=self.i_valid, i_ready=self.i_ready, o_valid=self.o_valid,
                     o_ready=self.o_ready)
        return m


def _value(n):
    """Block n's input: every one of the 16 bits (every part of a register) changes."""
    return (1000 + 40503 * n) & 0xFFFF


def _out(v):
    return (v + 10) & 0xFFFF


def _simulate(dut, bench):
    """Run the testbench coroutine ``bench`` on ``dut`` with a clock."""
    from amaranth.sim import Simulator

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def _run(dut, p_valid, p_ready, blocks, seed):
    rnd = random.Random(seed)
    sent, got, first_out = [], [], []

    async def bench(ctx):
        nxt, cycle = 0, 0
        while len(got) < blocks and cycle < 50 * blocks:
            valid = nxt < blocks and rnd.random() < p_valid
            ctx.set(dut.i_valid, valid)
            ctx.set(dut.i_data, _value(nxt))
            ctx.set(dut.o_ready, rnd.random() < p_ready)
            if valid and ctx.get(dut.i_ready):
                sent.append((cycle, _value(nxt)))
                nxt += 1
            if ctx.get(dut.o_valid) and ctx.get(dut.o_ready):
                got.append(ctx.get(dut.o_data))
                first_out.append(cycle)
            await ctx.tick()
            cycle += 1

    _simulate(dut, bench)
    return sent, got, first_out


@pytest.mark.parametrize("flow", FLOWS)
@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_pipeline_lossless_in_order(stages, flow, seed):
    sent, got, _ = _run(_Chain(stages, FLOWS[flow]), 0.7, 0.6, 60, seed)
    assert got == [_out(v) for _, v in sent][:len(got)] and len(got) == 60


@pytest.mark.parametrize("flow", FLOWS)
@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_pipeline_latency_and_throughput(stages, flow, seed):
    """With valid and ready always high: one block per clock, each ``stages`` cycles late."""
    sent, got, out_cycles = _run(_Chain(stages, FLOWS[flow]), 1.0, 1.0, 20, seed)
    assert got == [_out(v) for _, v in sent][:20]
    assert [c for c, _ in sent][:20] == list(range(20))
    assert out_cycles == [c + stages for c in range(20)]


class _Replicas(_Chain):
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
    sent, got, _ = _run(_Replicas(stages, FLOWS[flow]), 0.7, 0.6, 60, seed)
    assert got == [_out(v) for _, v in sent][:len(got)] and len(got) == 60


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


class _Runs(_Chain):
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
            value = _value(nxt)
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

    _simulate(dut, bench)
    assert len(left) == blocks
    assert left == [expected(v) for v in sent][:blocks]
    assert any(v & 1 for v in sent) and not all(v & 1 for v in sent)


class _OutputCopies(_Chain):
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
        for _ in range(600):
            reset = rnd.random() < 0.01
            if rnd.random() < 0.1:  # o_ready holds its level for runs of about ten cycles
                ready = not ready
            ctx.set(dut.rst, reset)
            ctx.set(dut.i_valid, rnd.random() < 0.7)
            ctx.set(dut.i_data, _value(nxt))
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

    _simulate(dut, bench)
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


def test_pipeline_checks_its_boundaries():
    m = Module()
    pipe = Pipeline(m, SECTIONS, 2, name="t")
    with pytest.raises(ValueError, match="'b' crossed where 'a' is declared"):
        pipe.boundary(Signal(4), "b")
    with pytest.raises(ValueError, match="stages must be in 1..4"):
        Pipeline(Module(), SECTIONS, 5)
    done = Pipeline(Module(), SECTIONS, 1, name="t")
    for name in SECTIONS:
        done.boundary(Signal(4), name)
    with pytest.raises(ValueError, match="hold_when after the last boundary"):
        done.hold_when(Signal())
    with pytest.raises(ValueError, match="hold is known once the last boundary is crossed"):
        _ = Pipeline(Module(), SECTIONS, 2).hold
    with pytest.raises(ValueError, match="enable_load must be at least 1, not 0"):
        Pipeline(Module(), SECTIONS, 2, enable_load=0)
    with pytest.raises(TypeError, match="enable_load must be an int or None, not 2.5"):
        Pipeline(Module(), SECTIONS, 2, enable_load=2.5)


@pytest.mark.parametrize("width,load,parts", [
    (16, None, [(0, 16)]), (16, 16, [(0, 16)]), (16, 5, [(0, 4), (4, 8), (8, 12), (12, 16)]),
    (17, 8, [(0, 5), (5, 11), (11, 17)]), (3, 1, [(0, 1), (1, 2), (2, 3)]),
])
def test_enable_parts_are_the_fewest_equal_parts_within_the_load(width, load, parts):
    assert list(enable_parts(width, load)) == parts


def test_a_stage_in_parts_has_one_enable_copy_per_part():
    """A 16-bit stage register in four parts: four enable registers per stage, no fifth, as
    the formal proofs count them (:func:`formal.units.enable_copies`).  That each part loads
    on its own copy is checked on the netlist by the register-bypass proof
    (formal/datapath.py) and in function by the simulations above."""
    from amaranth.back import rtlil

    from formal.units import enable_copies

    text = rtlil.convert(_Chain(4, 5), ports=[])
    assert enable_copies(text, "t", SECTIONS) == dict.fromkeys(SECTIONS, 4)


def test_pipeline_names_which_boundaries_hold_registers():
    pipe = Pipeline(Module(), SECTIONS, 2, name="t")
    assert pipe.names == ("a", "b", "c", "d")
    assert [pipe.registers(name) for name in pipe.names] == list(pipe.registered)
    assert sum(pipe.registered) == 2 and pipe.registers("d")  # the last one always
    with pytest.raises(ValueError, match="no boundary 'e'; declared: a, b, c, d"):
        pipe.registers("e")


def test_pipeline_gives_a_registered_boundarys_enable_once_crossed():
    """A register built outside the pipeline (a DSP block's) loads with its boundary's
    enable: the one that loads the pipeline's own register there."""
    m = Module()
    pipe = Pipeline(m, SECTIONS, 2, name="t")
    first = next(name for name in pipe.names if pipe.registers(name))
    unregistered = next(name for name in pipe.names if not pipe.registers(name))
    with pytest.raises(ValueError, match=f"boundary '{first}' is not crossed yet"):
        pipe.enable(first)
    with pytest.raises(ValueError, match=f"boundary '{unregistered}' holds no register"):
        pipe.enable(unregistered)
    value = Signal(4)
    for name in pipe.names:
        value = pipe.boundary(value, name)
        if name == first:
            assert len(pipe.enable(name)) == 1
    # one enable per registered stage, the same one each time it is asked for (that a block
    # register on it loads with the stage is the register-bypass proof's check)
    enables = [pipe.enable(n) for n in pipe.names if pipe.registers(n)]
    assert all(len(e) == 1 for e in enables) and len({id(e) for e in enables}) == 2
    assert all(pipe.enable(n) is e for n, e in zip(
        [n for n in pipe.names if pipe.registers(n)], enables, strict=True))


@pytest.mark.parametrize("delays,expected", [
    ([3.0], 1),
    ([1.0, 1.0, 1.0, 1.0], 4),  # no two sections fit in one stage
    ([3.0, 1.0, 2.0, 3.0], 3),  # 1 + 2 <= 3: one merge; 3 + 1 > 3, so not two
    ([0.2, 1.5, 3.5, 2.0, 1.5], 3),  # input + decode, norm, exp + scale (the quantizer's)
    ([2.0, 4.0, 3.0, 3.5, 3.5, 2.5], 6),  # the dequantizer's: no pair within 4.0
    ([0.1, 0.2, 0.3], 2),  # 0.1 + 0.2 is 0.30000000000000004 in floating point: fits
])
def test_default_stages_is_the_fewest_with_the_longest_section_as_critical(delays, expected):
    assert default_stages(delays) == expected


@pytest.mark.parametrize("delays,stages,expected", [
    ([3.0, 1.0, 2.0, 3.0], 4, 3.0),  # every boundary: the longest section
    ([3.0, 1.0, 2.0, 3.0], 3, 3.0),  # 1 + 2 share a stage
    ([3.0, 1.0, 2.0, 3.0], 2, 5.0),  # 3 + 1 | 2 + 3 (or 3 | 1 + 2 + 3 = 6: worse)
    ([3.0, 1.0, 2.0, 3.0], 1, 9.0),  # all in one stage
])
def test_critical_stage_is_the_longest_stage_of_the_placement(delays, stages, expected):
    assert critical_stage(delays, stages) == expected


def test_extract_reset_marks_every_register():
    """``extract_reset=False`` puts ``extract_reset = "no"`` on every register: the stages'
    data, the skid register, the valid bits and the enable registers.  The default marks
    nothing.  A non-bool is refused."""
    from amaranth.back import rtlil

    def marked(extract_reset):
        unit = _Chain(3, extract_reset=extract_reset)
        text = rtlil.convert(unit, name="top", ports=[
            unit.i_valid, unit.i_ready, unit.i_data, unit.o_valid, unit.o_ready, unit.o_data])
        return set(re.findall(r'attribute \\extract_reset "no"\n\s*wire width \d+ \\(\S+)',
                              text))

    assert marked(True) == set()
    names = marked(False)
    for kind in ("_skid", "_valid", "_advance"):
        assert any(n.endswith(kind) for n in names), (kind, names)
    with pytest.raises(TypeError, match="extract_reset must be a bool, not 0"):
        Pipeline(Module(), SECTIONS, 2, extract_reset=0)


def test_test_depths_are_found_from_the_sections_or_fail_by_name():
    """tests/depths.py (the depths of the lint and simulation configurations): a depth is
    found from the unit's sections, and one no depth has fails naming the configuration."""
    import depths

    argv = ["--format", "int8", "--block-size", "2"]
    top = depths.max_stages("quantizer", argv)
    last = list(depths.build("quantizer", argv).sections)[-1]
    assert depths.registering("quantizer", argv, {last: True}) == 1
    assert depths.registering("quantizer", argv, {last: True}, deepest=True) == top
    with pytest.raises(LookupError, match=rf"quantizer --format int8 --block-size 2: no "
                                          rf"depth in 1..{top} registers exactly"):
        depths.registering("quantizer", argv, {last: False})


# -- scopes: two steps on one pipeline ---------------------------------------------------------
#: One toy step's sections; two steps of these names share a pipeline through scopes.
STEP = {"decode": 1.0, "round": 2.0}


def _toy_step(scope, x, add):
    """A toy datapath placed through ``scope``: ``decode`` adds ``add``, ``round`` doubles;
    one named signal of its own (``scope.name``)."""
    m = scope.module
    y = Signal(16, name=scope.name("sum"))
    m.d.comb += y.eq(x + add)
    y = scope.boundary(y, "decode")
    return scope.boundary((y << 1)[:16], "round")


class _TwoSteps(Elaboratable):
    """Two scoped toy steps, ``s0`` then ``s1``, in series on one Pipeline: out = ((x + 3) * 2
    + 5) * 2 (mod 2^16)."""

    def __init__(self, stages):
        from hw.pipeline import scoped_sections

        self.sections = {**scoped_sections("s0", STEP), **scoped_sections("s1", STEP)}
        self.stages = stages
        self.i_valid, self.i_ready, self.i_data = Signal(), Signal(), Signal(16)
        self.o_valid, self.o_ready, self.o_data = Signal(), Signal(), Signal(16)

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, self.sections, self.stages, name="t")
        s0, s1 = pipe.scope("s0"), pipe.scope("s1")
        x = _toy_step(s1, _toy_step(s0, self.i_data, 3), 5)
        m.d.comb += self.o_data.eq(x)
        pipe.connect(i_valid=self.i_valid, i_ready=self.i_ready, o_valid=self.o_valid,
                     o_ready=self.o_ready)
        return m


def _two_steps(v):
    return ((((v + 3) * 2) & 0xFFFF) + 5) * 2 & 0xFFFF


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_two_scoped_steps_share_a_pipeline(stages, seed):
    """Two steps with the same section names on one pipeline: every block comes out once, in
    order, through both; with valid and ready high, one per clock, ``stages`` cycles late."""
    dut = _TwoSteps(stages)
    sent, got, _ = _run(dut, 0.7, 0.6, 40, seed)
    assert got == [_two_steps(v) for _, v in sent][:len(got)] and len(got) == 40
    sent, got, out_cycles = _run(_TwoSteps(stages), 1.0, 1.0, 12, seed)
    assert got == [_two_steps(v) for _, v in sent][:12]
    assert out_cycles == [c + stages for c in range(12)]


def test_scopes_name_sections_and_signals():
    """A scope's boundaries and signals carry its prefix (both steps' ``decode`` registers
    and named signals are there, apart); without a scope a second step's ``decode`` is
    rejected, and the scope without a prefix names everything as the pipeline does."""
    from amaranth.back import rtlil

    text = rtlil.convert(_TwoSteps(4), ports=[])
    for scope in ("s0", "s1"):
        assert f"wire width 16 \\t_{scope}_decode\n" in text
        assert f"wire width 16 \\t_{scope}_round\n" in text
        assert f"wire width 16 \\{scope}_sum\n" in text
    pipe = Pipeline(Module(), {**STEP, "output": 1.0}, 3, name="t")
    pipe.boundary(Signal(4), "decode")
    pipe.boundary(Signal(4), "round")
    with pytest.raises(ValueError, match="boundary 'decode' crossed where 'output'"):
        pipe.boundary(Signal(4), "decode")
    plain = Pipeline(Module(), SECTIONS, 4, name="t").scope()
    assert plain.section("a") == "a" and plain.name("x") == "x"
    assert plain.signal_name("a") == "t_a" and plain.names == tuple(SECTIONS)
    inner = Pipeline(Module(), {"q0_x_a": 1.0}, 1, name="t").scope("q0").scope("x")
    assert inner.section("a") == "q0_x_a" and inner.names == ("a",)
    for bad in ("", "a-b", "q 0", 3):
        with pytest.raises((ValueError, TypeError), match="scope prefix"):
            Pipeline(Module(), SECTIONS, 4, name="t").scope(bad)


class _SideBySide(Elaboratable):
    """Two toy steps side by side on the sections ``st`` (scopes ``p0`` and ``p1``, the first
    adding 3, the second 5), then, with ``series``, a third step after them on sections of
    its own adding 7 to their sum: out = (2(x + 3) + 2(x + 5)) (* 2 after + 7 with series)."""

    def __init__(self, stages, series=False):
        from hw.pipeline import scoped_sections

        self.series = series
        self.sections = {**scoped_sections("st", STEP),
                         **(scoped_sections("s2", STEP) if series else {})}
        self.stages = stages
        self.i_valid, self.i_ready, self.i_data = Signal(), Signal(), Signal(16)
        self.o_valid, self.o_ready, self.o_data = Signal(), Signal(), Signal(16)

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, self.sections, self.stages, name="t", enable_load=5)
        a = _toy_step(pipe.scope("p0", sections="st"), self.i_data, 3)
        b = _toy_step(pipe.scope("p1", sections="st"), self.i_data, 5)
        x = (a + b)[:16]
        if self.series:
            x = _toy_step(pipe.scope("s2"), x, 7)
        m.d.comb += self.o_data.eq(x)
        pipe.connect(i_valid=self.i_valid, i_ready=self.i_ready, o_valid=self.o_valid,
                     o_ready=self.o_ready)
        return m


def _side_by_side(v, series):
    x = (((v + 3) * 2 & 0xFFFF) + ((v + 5) * 2 & 0xFFFF)) & 0xFFFF
    return ((x + 7) * 2) & 0xFFFF if series else x


@pytest.mark.parametrize("stages,series", [(1, False), (2, False)]
                         + [(s, True) for s in range(1, 5)])
def test_steps_side_by_side_share_their_stages(stages, series, seed):
    """Two steps on the same sections, the second's registers beside the first's (and its
    own skid register at the last boundary), loaded in 5-bit parts: under random valid/ready
    every block comes out once, in order, the sum of both; with valid and ready high, one
    per clock, ``stages`` cycles late."""
    sent, got, _ = _run(_SideBySide(stages, series), 0.7, 0.6, 40, seed)
    assert got == [_side_by_side(v, series) for _, v in sent][:len(got)] and len(got) == 40
    sent, got, out_cycles = _run(_SideBySide(stages, series), 1.0, 1.0, 12, seed)
    assert got == [_side_by_side(v, series) for _, v in sent][:12]
    assert out_cycles == [c + stages for c in range(12)]


def test_a_step_beside_another_has_registers_of_its_own():
    """The first step's registers carry the sections' names, the second's its prefix, each
    on enable copies of its own; a scope crosses its boundaries once and in order."""
    from amaranth.back import rtlil

    text = rtlil.convert(_SideBySide(2), ports=[])
    for reg in ("t_st_decode", "t_st_round", "t_p1_decode", "t_p1_round", "t_p1_round_skid"):
        assert f"wire width 16 \\{reg}\n" in text
    for copy in range(4, 8):  # the second step's four 4-bit parts, after the first's 0..3
        assert f"wire width 1 \\t_st_decode_en{copy}_advance\n" in text
    pipe = Pipeline(Module(), {**_scoped("st"), **_scoped("s2")}, 4, name="t")
    first, second = pipe.scope("p0", sections="st"), pipe.scope("p1", sections="st")
    with pytest.raises(ValueError, match="boundary 'st_decode' is not crossed yet"):
        pipe.beside(Signal(4), "st_decode", "p1_decode")
    first.boundary(Signal(4), "decode")
    second.boundary(Signal(4), "decode")
    with pytest.raises(ValueError, match="boundary 'decode' crossed out of order in scope"):
        second.boundary(Signal(4), "decode")


def _scoped(prefix):
    from hw.pipeline import scoped_sections

    return scoped_sections(prefix, STEP)
