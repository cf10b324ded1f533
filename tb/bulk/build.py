"""Build orchestration: generate a unit with ``hw`` and wrap it for simulation."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .wrapper import DEPTH, bulk_wrapper, public_control

__all__ = ["prepare_unit"]


def prepare_unit(unit: str, argv: list[str], outdir: Path, depth: int = DEPTH):
    """Generate a unit (``python -m hw generate <unit> <argv>``) plus its bulk wrapper into
    ``outdir``; returns ``(sources, toplevel, sidecar_path)`` for :func:`tb.runner.run_cocotb`.

    Files are rewritten only when their content changes, so an unchanged design does not
    trigger a Verilator rebuild.
    """
    from hw.cli import sidecar as make_sidecar
    from hw.cli import to_verilog, units

    specs = units()
    if unit not in specs:
        raise ValueError(f"unknown unit {unit!r}; known: {', '.join(specs)}")
    spec = specs[unit]
    p = argparse.ArgumentParser()
    spec.add_arguments(p)
    comp = spec.build(p.parse_args(argv))
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    meta = make_sidecar(comp, unit)
    files = {
        outdir / f"{comp.module_name}.v": None,
        outdir / f"{comp.module_name}.json": json.dumps(meta, indent=2) + "\n",
        outdir / f"{comp.module_name}_bulk.v": None,
        outdir / f"{comp.module_name}_bulk.vlt": public_control(f"{comp.module_name}_bulk"),
    }
    v_path, j_path, w_path, c_path = files
    widths = {q["name"]: q["width"] for q in meta["ports"]}
    files[w_path] = bulk_wrapper(comp.module_name, widths["i__payload"], widths["o__payload"],
                                 depth)
    files[v_path] = to_verilog(comp)
    for path, text in files.items():
        if text is not None and (not path.exists() or path.read_text() != text):
            path.write_text(text)
    return [c_path, v_path, w_path], f"{comp.module_name}_bulk", j_path
