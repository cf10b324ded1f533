"""The register-bypass proof's reading of a netlist (``formal.datapath``, ``formal.probes``,
``formal.units``): each data register on its boundary's enable or enable copy, the replicas
of a boundary's values and the enable copies read off a unit's RTLIL, and the NVFP4
dequantizer's lane replicas checked.

Skipped only if the SymbiYosys tools are missing (as ``tests/test_formal.py``)."""

from __future__ import annotations

from unittest import mock

import pytest

from formal.datapath import bypass_data_registers, prove_same_datapath
from formal.probes import replica_names
from formal.sby import sby_available
from formal.units import (
    enable_copies,
    pipeline_probes,
    replicas,
    unit_by_name,
)
from hw.nvfp4_dequantizer import POSITION_COPIES as NVFP4_POSITION_COPIES

_MISSING = sby_available()
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=f"SymbiYosys: {_MISSING}")


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
