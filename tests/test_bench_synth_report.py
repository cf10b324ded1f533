"""bench.synth's report: every unit has a depth sweep, the curves' falls and targets, the
critical paths and next steps of missed targets, the anchors beside the sweeps, and the GEMM
tiles' GFLOPS beside the published engines (the tables of docs/performance.md)."""

from __future__ import annotations


def test_every_unit_has_a_depth_sweep():
    """The Pareto table of docs/performance.md has every unit of ``python -m hw generate``:
    a unit added without a sweep fails here, not in a reader's search for its curve."""
    from bench.synth.configs import SWEEPS
    from hw.cli import units

    assert set(units()) <= {unit for unit, _ in SWEEPS}


def test_curve_falls_count_only_beyond_the_seeds_spread():
    """A sweep's curve row: a fall of Fmax counts only where a point's median is below every
    seed of the point before it; a point with one seed has no spread.  Hand-made results."""
    from bench.synth.report import curve_falls, curve_targets_md

    def point(stages, *seeds):
        placements = {str(i): {"fmax_mhz": f} for i, f in enumerate(seeds, 1)}
        fmax = sorted(seeds)[(len(seeds) - 1) // 2]  # the lower median, as flow stores it
        return {"unit": "quantizer", "args": ["--stages", str(stages)], "latency": stages,
                "parameters": {"stages": stages},
                "ecp5": {"fmax_mhz": fmax, "placements": placements if len(seeds) > 1 else {}}}

    rising = [point(1, 30.0), point(3, 80.0, 79.0, 82.0), point(5, 80.5)]
    assert curve_falls(rising) == []
    # 12 -> 13: 195.0 lies inside 12's seeds (194.0-206.0): noise; 13 -> 15 below all of 13's
    # seeds (195.0, 196.0, 199.0): a fall; 15 -> 16: after one seed any fall counts; the
    # points are taken in order of stages, whatever order they come in
    rows = [point(13, 199.0, 195.0, 196.0), point(12, 200.0, 194.0, 206.0),
            point(16, 190.9), point(15, 191.0)]
    assert curve_falls(rows) == [
        "13 -> 15 stages: 196.0 -> 191.0 MHz (13: 195.0-199.0)",
        "15 -> 16 stages: 191.0 -> 190.9 MHz (15: one seed)"]
    table = curve_targets_md({"quantizer a": rising, "quantizer b": rows})
    assert "| quantizer a: Fmax rises with every added stage | within the seeds' spread | " \
           "rises at every point | yes |" in table
    assert "| quantizer b: Fmax rises with every added stage | within the seeds' spread | " \
           "13 -> 15 stages: 196.0 -> 191.0 MHz (13: 195.0-199.0); 15 -> 16 stages: 191.0 " \
           "-> 190.9 MHz (15: one seed) | **no** |" in table


def test_slower_than_an_anchor_names_its_path_and_next_step(monkeypatch):
    """A sweep slower than an anchor at the anchor's latency gets a Missed line with its
    point's critical path and the next step kept with the code; a faster one gets none."""
    from bench.synth import report
    from bench.synth.configs import Anchor

    anchor = Anchor("dot", ("--format", "fp8_e4m3"), "a fixed-point sum", 0, 38, 13900)
    monkeypatch.setattr(report, "ANCHOR_POINTS", (anchor,))
    monkeypatch.setattr(report, "CURVE_NEXT_STEPS", {("dot", 0): "a like-for-like build"})
    path = {"from": "r_i__payload", "to": "dut.dot_finish", "logic_ns": 16.05,
            "routing_ns": 36.99, "cells": 177}

    def sweep(fmax):
        return {"dot": [{"unit": "dot", "args": ["--format", "fp8_e4m3", "--stages", "1"],
                         "latency": 1, "parameters": {"stages": 1},
                         "ecp5": {"fmax_mhz": fmax, "critical_path": path}}]}

    missed = [line for line in report.curve_targets_md(sweep(18.9))
              if line.startswith("Missed:")]
    assert missed == ["Missed: dot: faster than the anchor at its latency (0), against a "
                      "fixed-point sum: critical path at latency 1 r_i__payload -> "
                      "dut.dot_finish: 177 cells, 16.05 ns logic + 36.99 ns routing; next "
                      "step: a like-for-like build"]
    assert not [line for line in report.curve_targets_md(sweep(40.0))
                if line.startswith("Missed:")]


def test_sweep_fall_names_its_path_and_next_step(monkeypatch):
    """A fall beyond the seeds' spread gets a line under the curve table with the critical
    path of the point that fell and the next step kept with the code ("not known" without
    one); a fall inside the spread gets none.  Hand-made results."""
    from bench.synth import report

    path = {"from": "dut.q_norm", "to": "dut.q_amax1_cmp", "logic_ns": 1.12,
            "routing_ns": 3.46, "cells": 4}

    def point(stages, *seeds):
        placements = {str(i): {"fmax_mhz": f, "critical_path": path}
                      for i, f in enumerate(seeds, 1)}
        return {"unit": "quantizer", "args": ["--stages", str(stages)], "latency": stages,
                "parameters": {"stages": stages},
                "ecp5": {"fmax_mhz": sorted(seeds)[(len(seeds) - 1) // 2],
                         "placements": placements, "critical_path": path}}

    monkeypatch.setattr(report, "FALL_NEXT_STEPS", {("q a", 12): "cut norm in two"})
    sweeps = {"q a": [point(10, 222.7, 222.6, 227.0), point(12, 218.5, 221.0, 220.7)],
              "q b": [point(10, 222.7, 222.6, 227.0), point(12, 223.0, 224.0, 220.7)],
              "q c": [point(10, 222.7), point(12, 220.0)]}
    missed = [line for line in report.curve_targets_md(sweeps) if line.startswith("Missed:")]
    assert missed == [
        "Missed: q a: Fmax rises with every added stage: 10 -> 12 stages: 222.7 -> 220.7 MHz "
        "(10: 222.6-227.0); critical path at 12 stages dut.q_norm -> dut.q_amax1_cmp: 4 cells, "
        "1.12 ns logic + 3.46 ns routing; next step: cut norm in two",
        "Missed: q c: Fmax rises with every added stage: 10 -> 12 stages: 222.7 -> 220.0 MHz "
        "(10: one seed); critical path at 12 stages dut.q_norm -> dut.q_amax1_cmp: 4 cells, "
        "1.12 ns logic + 3.46 ns routing; next step: not known"]


def test_critical_path_names_anonymous_cells_by_their_nets():
    """nextpnr's report names a cell yosys left anonymous (``$<n>``) only by that number;
    the summary names such an end by the net it drives or is driven by (the report rows
    once read ``dut.\\ -> dut.q_amax1``)."""
    from bench.synth.flow import critical_path

    def step(kind, src, dst, delay, net=None):
        return {"type": kind, "from": {"cell": src}, "to": {"cell": dst}, "delay": delay,
                **({"net": net} if net else {})}

    ff, lut, reg = "dut.\\$10499_TRELLIS_FF_Q", "dut.\\$77_LUT4_Z", "dut.q_amax1_TRELLIS_FF_Q"
    rep = {"critical_paths": [{"path": [
        step("clk-to-q", ff, ff, 0.5),
        step("routing", ff, lut, 2.0, "dut.amax1_l32_8_b[8]"),
        step("logic", lut, lut, 0.4),
        step("routing", lut, reg, 1.5, "dut.amax1_max"),
        step("setup", reg, reg, 0.1)]}]}
    assert critical_path(rep) == {"from": "dut.amax1_l32_8_b[8] (net)", "to": "dut.q_amax1",
                                  "logic_ns": 1.0, "routing_ns": 3.5, "cells": 1}
    assert critical_path({}) == {}


def test_late_registers_group_cells_by_register_latest_first():
    """Every register input's arrival from nextpnr's detailed net timings, per register: its
    bits, struct fields and memory words under one name, an anonymous cell under the net
    driving it; the latest arrival per register, latest first, ``count`` of them."""
    from bench.synth.flow import late_registers

    def net(name, *ends):
        return {"net": name, "endpoints": [{"cell": c, "port": "DI", "delay": [0.5, ns]}
                                           for c, ns in ends]}

    rep = {"detailed_net_timings": [
        net("dut.a", ("dut.q_ralign.grid.sticky_TRELLIS_FF_Q", 6.7),
            ("dut.q_ralign_TRELLIS_FF_Q_26", 5.1), ("dut.q_alz_TRELLIS_FF_Q_3", 4.2)),
        net("dut.amax1_max[3]", ("dut.\\$196_TRELLIS_FF_Q", 5.9)),
        net("dut.b", ("dut.q_data_p4_ring.0.86$DPRAM_C", 4.9),
            ("dut.lane14_mult11_MULT18X18D", 5.5), ("dut.q_alz_TRELLIS_FF_Q_1", 6.3))]}
    assert late_registers(rep) == [["q_ralign", 6.7], ["q_alz", 6.3],
                                   ["amax1_max (net)", 5.9], ["lane14_mult11", 5.5],
                                   ["q_data_p4_ring", 4.9]]
    assert late_registers(rep, count=2) == [["q_ralign", 6.7], ["q_alz", 6.3]]
    assert late_registers({}) == []


def test_missed_target_lists_the_registers_later_than_its_period(monkeypatch):
    """A missed row's line names every listed register whose inputs arrive after the
    target's period (5.00 ns at 200 MHz), and says so where all listed ones do."""
    from bench.synth import report
    from bench.synth.configs import K

    a = ["--format", "fp8_e4m3", *K]
    monkeypatch.setattr(report, "TARGETS", (("dot", a, 200, None),))
    monkeypatch.setattr(report, "NEXT_STEPS", {"dot": "split q_ralign"})
    path = {"from": "dut.q_rpos", "to": "dut.q_ralign", "logic_ns": 1.6, "routing_ns": 5.1,
            "cells": 7}

    def missed(late):
        row = {"unit": "dot", "args": a, "ecp5": {"fmax_mhz": 149.2, "LUT4": 100,
                                                  "critical_path": path,
                                                  "late_registers": late}}
        return [line for line in report.targets_md([row]) if line.startswith("Missed:")]

    head = ("Missed: dot --format fp8_e4m3: critical path dut.q_rpos -> dut.q_ralign: 7 cells, "
            "1.6 ns logic + 5.1 ns routing")
    assert missed([["q_ralign", 6.7], ["q_alz", 5.01], ["q_amax", 4.99]]) == [
        f"{head}; inputs later than 5.00 ns at q_ralign 6.70, q_alz 5.01; next step: split "
        "q_ralign"]
    assert missed([["q_ralign", 6.7], ["q_alz", 5.01]]) == [
        f"{head}; inputs later than 5.00 ns at q_ralign 6.70, q_alz 5.01, and more; next "
        "step: split q_ralign"]
    assert missed(None) == [f"{head}; next step: split q_ralign"]


def test_report_sections_keep_each_other(tmp_path, monkeypatch):
    """docs/performance.md is assembled from sections: a run that rewrites the synthesis
    section without the sweeps (``--no-sweep``, ``--only``) keeps the sweep section, and the
    order of the sections is fixed whichever is written."""
    from bench import perfdoc

    doc = tmp_path / "performance.md"
    monkeypatch.setattr(perfdoc, "DOC", doc)
    perfdoc.update(sweep="old sweep", header="head")
    perfdoc.update(synth="new table")
    text = doc.read_text()
    assert text == ("<!-- begin header -->\nhead\n<!-- end header -->\n\n"
                    "<!-- begin synth -->\nnew table\n<!-- end synth -->\n\n"
                    "<!-- begin sweep -->\nold sweep\n<!-- end sweep -->\n")
    perfdoc.update(synth="newer", sweep="new sweep")
    assert "old sweep" not in doc.read_text() and "new table" not in doc.read_text()


def test_sweep_tables_show_the_anchor_at_its_latency():
    """Each sweep has its own table; an anchor doing the same job is a row of it, compared
    with this project's point at its latency (a combinational anchor: at the smallest
    latency).  Hand-made results; the anchors are the real ones."""
    from bench.synth.configs import ANCHOR_POINTS, K
    from bench.synth.report import sweep_markdown

    def point(unit, args, stages, fmax):
        return {"unit": unit, "args": [*args, "--stages", str(stages)], "latency": stages,
                "parameters": {"stages": stages},
                "ecp5": {"LUT4": 1000 + stages, "FF": 10 * stages, "fmax_mhz": fmax}}

    q = ["--format", "fp8_e4m3", "--input", "bf16", *K]
    d = ["--format", "fp8_e4m3", *K]
    deq = ["--format", "fp8_e4m3", *K]
    text = sweep_markdown({
        "q": [point("quantizer", q, 5, 129.0), point("quantizer", q, 1, 30.0)],
        "d": [point("dot", d, 3, 48.2), point("dot", d, 1, 19.2)],
        "deq": [point("dequantizer", deq, 6, 190.0)],
    })
    quantizer = next(a for a in ANCHOR_POINTS if a.unit == "quantizer" and a.latency)
    assert (quantizer.latency, quantizer.fmax, quantizer.lut4) == (5, 86, 4640)
    tables = text.split("##### ")[1:]
    assert [t.splitlines()[0] for t in tables] == ["q", "d", "deq"]
    q_rows = [line for line in tables[0].splitlines() if line.startswith("| ")][1:]
    assert q_rows == ["| 1 | 1 | 1,001 | 10 | 30.0 |", "| 5 | 5 | 1,005 | 50 | 129.0 |",
                      "| anchor | 5 | 4,640 | 3,074 | 86: bf16 -> MXFP8 E4M3; here at latency "
                      "5: 129.0 MHz, 1.50x |"]
    d_rows = [line for line in tables[1].splitlines() if line.startswith("| anchor")]
    assert d_rows == [
        "| anchor | 0 | 13.9k |  | 38: E4M3 x E4M3 dot product (fixed-point sum, no scales, "
        "no fp32 rounding) with DSPs, 32 MULT18X18D; here at latency 1: 19.2 MHz, 0.51x |",
        "| anchor | 0 | 12.4k |  | 48: E4M3 x E4M3 dot product without DSPs; here at latency "
        "1: 19.2 MHz, 0.40x |"]
    assert "anchor" not in tables[2].split("| curve target")[0]
    # the curve table: faster than each anchor at its latency (strictly)
    rows = [line for line in text.splitlines()
            if line.startswith("| ") and "faster than the anchor" in line]
    assert rows == [
        "| q: faster than the anchor at its latency (5) | > 86 MHz (bf16 -> MXFP8 E4M3) | "
        "129.0 MHz at latency 5 | yes |",
        "| d: faster than the anchor at its latency (0) | > 38 MHz (E4M3 x E4M3 dot product "
        "(fixed-point sum, no scales, no fp32 rounding) with DSPs) | 19.2 MHz at latency 1 | "
        "**no** |",
        "| d: faster than the anchor at its latency (0) | > 48 MHz (E4M3 x E4M3 dot product "
        "without DSPs) | 19.2 MHz at latency 1 | **no** |"]


def test_missed_curve_target_names_its_path_and_next_step(monkeypatch):
    """A curve target missed at its latency gets a line under the curve table with the sweep
    point's critical path and the next step kept with the code; a met one gets none."""
    from bench.synth import report
    from bench.synth.configs import K

    args = ["--format", "fp8_e4m3", "--input", "bf16", *K]
    monkeypatch.setattr(report, "CURVE_TARGETS", (("quantizer", args, 5, 130),))
    monkeypatch.setattr(report, "CURVE_NEXT_STEPS", {("quantizer", 5): "split the stage"})
    monkeypatch.setattr(report, "STRETCH_TARGETS", ())  # its 5 stages would be the deepest

    def sweep(fmax):
        path = {"from": "dut.q_amax1", "to": "dut.q_exp", "logic_ns": 1.8, "routing_ns": 6.1,
                "cells": 8}
        return {"q": [{"unit": "quantizer", "args": [*args, "--stages", "5"], "latency": 5,
                       "parameters": {"stages": 5},
                       "ecp5": {"fmax_mhz": fmax, "critical_path": path}}]}

    missed = [line for line in report.curve_targets_md(sweep(126.7))
              if line.startswith("Missed:")]
    assert missed == ["Missed: quantizer --format fp8_e4m3 --input bf16, latency 5: critical "
                      "path dut.q_amax1 -> dut.q_exp: 8 cells, 1.8 ns logic + 6.1 ns routing; "
                      "next step: split the stage"]
    assert not [line for line in report.curve_targets_md(sweep(130.0))
                if line.startswith("Missed:")]


def test_missed_target_is_one_line_per_row_with_its_path_and_next_step(monkeypatch):
    """Each default-depth row that misses gets one line: its label, the stored result's
    critical path and the unit's next step; a met row gets none."""
    from bench.synth import report
    from bench.synth.configs import K

    a, b = ["--format", "fp8_e4m3", *K], ["--format", "int8", *K]
    monkeypatch.setattr(report, "TARGETS", (("dot", a, 200, None), ("dot", b, 200, None)))
    monkeypatch.setattr(report, "NEXT_STEPS", {"dot": "move the registers into the DSP"})
    path = {"from": "dut.factors", "to": "dut.multiply", "logic_ns": 3.5, "routing_ns": 2.9,
            "cells": 3}

    def row(args, fmax):
        return {"unit": "dot", "args": args,
                "ecp5": {"fmax_mhz": fmax, "LUT4": 100, "critical_path": path}}

    missed = [line for line in report.targets_md([row(a, 154.7), row(b, 201.0)])
              if line.startswith("Missed:")]
    assert missed == ["Missed: dot --format fp8_e4m3: critical path dut.factors -> "
                      "dut.multiply: 3 cells, 3.5 ns logic + 2.9 ns routing; next step: move "
                      "the registers into the DSP"]


def test_stretch_target_reads_the_deepest_point(monkeypatch):
    """The stretch row compares the sweep's deepest point (whatever the order of the points),
    not the default; a miss gets a line with that point's critical path and the next step
    kept with the code.  Hand-made results."""
    from bench.synth import report
    from bench.synth.configs import K

    args = ["--format", "fp8_e4m3", *K]
    monkeypatch.setattr(report, "STRETCH_TARGETS", (("dot", args, 250),))
    monkeypatch.setattr(report, "STRETCH_NEXT_STEPS", {"dot": "cut every section"})
    monkeypatch.setattr(report, "CURVE_TARGETS", ())
    monkeypatch.setattr(report, "ANCHOR_POINTS", ())
    path = {"from": "dut.dot_add", "to": "dut.dot_pick", "logic_ns": 1.3, "routing_ns": 3.4,
            "cells": 5}

    def point(stages, fmax):
        return {"unit": "dot", "args": [*args, "--stages", str(stages)], "latency": stages,
                "parameters": {"stages": stages},
                "ecp5": {"fmax_mhz": fmax, "critical_path": path}}

    def stretch(sweep):
        lines = report.curve_targets_md({"dot": sweep})
        return ([line for line in lines if "(stretch)" in line and line.startswith("| ")],
                [line for line in lines if line.startswith("Missed: dot --format")])

    rows, missed = stretch([point(20, 249.9), point(12, 260.0)])
    assert rows == ["| dot --format fp8_e4m3, deepest setting (stretch) | >= 250 MHz | 249.9 "
                    "MHz at 20 stages | **no** |"]
    assert missed == ["Missed: dot --format fp8_e4m3, deepest setting (stretch): critical "
                      "path at 20 stages dut.dot_add -> dut.dot_pick: 5 cells, 1.3 ns logic + "
                      "3.4 ns routing; next step: cut every section"]
    rows, missed = stretch([point(12, 200.0), point(20, 250.0)])
    assert rows == ["| dot --format fp8_e4m3, deepest setting (stretch) | >= 250 MHz | 250.0 "
                    "MHz at 20 stages | yes |"] and missed == []
    rows, missed = stretch([])
    assert rows == ["| dot --format fp8_e4m3, deepest setting (stretch) | >= 250 MHz | not in "
                    "the sweep | |"] and missed == []

def test_gemm_tiles_beside_the_engines_give_gflops_per_thousand_luts():
    """2 x MACs x Fmax, per 1,000 LUT4, against the target of 2; an unplaced tile says so."""
    from bench.synth.engines import ENGINES, engines_md

    tile = {"unit": "gemm", "latency": 19,
            "parameters": {"rows": 4, "cols": 4, "block_size": 32, "format_a": "fp4_e2m1"},
            "ecp5": {"LUT4": 40_000, "CCU2C": 5, "FF": 9, "MULT18X18D": 0}}
    lines = engines_md([tile, {"unit": "dot", "ecp5": {}}])
    (row,) = [x for x in lines if x.startswith("| MXGemm")]
    assert "| 512 | not placed |" in row and "5.1 per 1,000 LUT4 if placed at 200 MHz" in row
    tile["ecp5"].update(fmax_mhz=50.0, placements={"1": {}, "2": {}, "3": {}})
    (row,) = [x for x in engines_md([tile]) if x.startswith("| MXGemm")]
    # 2 x 512 x 50 MHz = 51.2 GFLOPS; per 40 kLUT4: 1.28, below the target
    assert "| 50 (3 seeds) | 51.2 |" in row and "| 1.28 (**below 2**) |" in row
    tile["ecp5"]["fmax_mhz"] = 200.0
    (row,) = [x for x in engines_md([tile]) if x.startswith("| MXGemm")]
    assert "| 204.8 |" in row and "| 5.12 |" in row
    ten_four = next(x for x in engines_md([]) if x.startswith("| Ten-Four"))
    assert "| 134.3 |" in ten_four and "| 0.71 |" in ten_four
    assert all(g.macs > 0 for g in ENGINES)
