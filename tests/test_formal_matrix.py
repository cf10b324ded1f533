"""The proof matrix (``formal.matrix``): datapath proofs at every depth, every unit at three
depths, one custom format per unit, MXGemm and the NVFP4 units at k = 2 and 4, and the
cone of state a proof stops at.

Skipped only if the SymbiYosys tools are missing (as ``tests/test_formal.py``)."""

from __future__ import annotations

import pytest

import golden
from formal.matrix import SLOW_MITERS, proof_jobs, report_table
from formal.sby import SbyResult, sby_available
from formal.units import (
    CUSTOM_UNITS,
    GEMM_UNITS,
    GPU_BLOCK_SIZES,
    GPU_UNITS,
    NVFP4_QUANTIZER_UNITS,
    NVFP4_UNITS,
    UNITS,
    default_configurations,
    unit_by_name,
)

_MISSING = sby_available()
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=f"SymbiYosys: {_MISSING}")


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
