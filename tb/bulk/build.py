"""Build orchestration: wrap a unit for simulation (:func:`wrap_unit`), after generating it
with ``hw`` (:func:`prepare_unit`) or from anyone's Verilog and sidecar (``python -m tb
check``)."""

from __future__ import annotations

import json
from pathlib import Path

from ..verilator import public_control
from .wrapper import DEPTH, sidecar_wrapper

__all__ = ["prepare_unit", "wrap_unit"]


def _write_if_changed(path: Path, text: str) -> None:
    """Rewrite only on a change, so an unchanged design does not trigger a Verilator rebuild."""
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def wrap_unit(sidecar: dict, verilog: list[Path], outdir: Path, depth: int = DEPTH):
    """Write the bulk wrapper of the unit a schema-1 ``sidecar`` describes, and its Verilator
    control file, into ``outdir``; returns ``(sources, toplevel)`` for
    :func:`tb.runner.run_cocotb` (the control file, ``verilog``, the models of the vendor
    cells the sidecar lists in ``primitives``, the wrapper)."""
    from hw.dsp import simulation_models

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    top = f"{sidecar['module']}_bulk"
    w_path, c_path = outdir / f"{top}.v", outdir / f"{top}.vlt"
    _write_if_changed(w_path, sidecar_wrapper(sidecar, depth))
    # cocotb touches the wrapper's signals only (its ports and the clock `uclk`).
    _write_if_changed(c_path, public_control(top))
    models = simulation_models(sidecar.get("primitives", ()))
    return [c_path, *map(Path, verilog), *models, w_path], top


def prepare_unit(unit: str, argv: list[str], outdir: Path, depth: int = DEPTH):
    """Generate a unit (``python -m hw generate <unit> <argv>``) plus its bulk wrapper into
    ``outdir``; returns ``(sources, toplevel, sidecar_path)`` for :func:`tb.runner.run_cocotb`.

    Files are rewritten only when their content changes, so an unchanged design does not
    trigger a Verilator rebuild.
    """
    from hw.cli import to_verilog, units
    from hw.sidecar import sidecar

    specs = units()
    if unit not in specs:
        raise ValueError(f"unknown unit {unit!r}; known: {', '.join(specs)}")
    comp = specs[unit].build_from(argv)
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    verilog = to_verilog(comp)
    meta = sidecar(comp, unit, verilog)
    v_path = outdir / f"{comp.module_name}.v"
    j_path = outdir / f"{comp.module_name}.json"
    _write_if_changed(v_path, verilog)
    _write_if_changed(j_path, json.dumps(meta, indent=2) + "\n")
    sources, top = wrap_unit(meta, [v_path], outdir, depth)
    return sources, top, j_path
