"""The chain proofs of MXDotGeneral and MXGemm shown able to fail: one-line bugs planted in a
recompiled copy of their shared accumulation contexts or of the unit's own ``elaborate`` (no
forwarding, the busy bit ignored, no write-back, a lane's copy a block early, a depth-dependent
write-back), each failing its proof, and the planted lines still present in the code.

Skipped only if the SymbiYosys tools are missing (as ``tests/test_formal.py``)."""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import replace

import pytest

from formal.datapath import prove_same_datapath
from formal.matrix import BMC_MARGIN, Job
from formal.sby import sby_available
from formal.units import (
    unit_by_name,
)

_MISSING = sby_available()
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=f"SymbiYosys: {_MISSING}")


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
    "last_never_leaves": ("connect", "leave.eq(self._pipe_valid & (~last | ready[0]))",
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
    planted = _planted_unit("gemm", "m.d.comb += to_ctx.eq(x[1:])",
                            "m.d.comb += to_ctx.eq(early_ctx)", "connect")
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
