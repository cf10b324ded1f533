"""``python -m hw``: write synthesizable Verilog (plus a JSON sidecar) for the MX units.

Usage::

    python -m hw generate quantizer --format fp8_e4m3 --block-size 32 --input fp32 -o q.v
    python -m hw generate dot --format-a fp8_e4m3 --format-b fp4_e2m1 -o dot.v
    python -m hw defaults -o build/verilog        # the default set (make verilog)
    python -m hw list                             # units and their options

Each unit family module (``hw.quantizer``, ``hw.dequantizer``, ``hw.dot``) contributes
:class:`UnitSpec` entries through its public ``cli_units()`` function; this module only holds
the shared machinery: argument parsing, error reporting (one line, exit status 2), Verilog
conversion; the sidecar is :mod:`hw.sidecar`.

A generated component must provide ``module_name`` (a Verilog identifier that encodes its
parameters), ``parameters`` (a JSON-able dict) and ``latency`` (cycles, int) attributes.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .sidecar import sidecar

UNIT_MODULES = ("hw.quantizer", "hw.dequantizer", "hw.dot")


@dataclass(frozen=True)
class UnitSpec:
    """One ``generate`` subcommand.

    Parameters
    ----------
    name : str
        Subcommand name, e.g. ``"quantizer"``.
    help : str
    add_arguments : callable(argparse.ArgumentParser)
        Adds the unit's options (``-o`` is added by the CLI).
    build : callable(argparse.Namespace) -> Component
        Elaborates the component from parsed options; raises ``ValueError``/``TypeError`` for
        bad parameters (reported as a one-line error).
    defaults : list of list of str
        Argument lists of the default configurations written by ``make verilog``.
    """

    name: str
    help: str
    add_arguments: Callable
    build: Callable
    defaults: list = field(default_factory=list)


def units() -> dict[str, UnitSpec]:
    """Every ``generate`` subcommand, by name, from the unit family modules."""
    found = {}
    for mod_name in UNIT_MODULES:
        mod = importlib.import_module(mod_name)
        for spec in mod.cli_units():
            found[spec.name] = spec
    return found


_SRC_ATTR = re.compile(r"^\s*\(\* src = .* \*\)\n", re.M)


def to_verilog(component, name: str | None = None) -> str:
    """Convert an Amaranth component to one self-contained Verilog module, without the
    ``src`` attributes (they carry absolute paths of the generating machine)."""
    from amaranth.back import verilog

    text = verilog.convert(component, name=name or component.module_name,
                           strip_internal_attrs=True)
    return _SRC_ATTR.sub("", text)


def write_component(component, unit: str, out: Path) -> Path:
    """Write ``out`` (Verilog) and its ``.json`` sidecar for an elaborated-ready component."""
    out.parent.mkdir(parents=True, exist_ok=True)
    verilog = to_verilog(component)
    out.write_text(verilog)
    meta = sidecar(component, unit, verilog)
    out.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")
    return out


def write_unit(spec: UnitSpec, args, out: Path) -> Path:
    return write_component(spec.build(args), spec.name, out)


def _parser(specs: dict[str, UnitSpec]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m hw", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="write one unit's Verilog and JSON sidecar")
    gsub = gen.add_subparsers(dest="unit", required=True)
    for spec in specs.values():
        # -o first, conflicts resolved: a unit may reuse --output for its own option (the
        # dequantizer's output format); -o always names the Verilog file (dest "output").
        sp = gsub.add_parser(spec.name, help=spec.help, conflict_handler="resolve")
        sp.add_argument("-o", "--output", type=Path, required=True, help="Verilog file to write")
        spec.add_arguments(sp)
    d = sub.add_parser("defaults", help="write the default set of units (make verilog)")
    d.add_argument("-o", "--output-dir", type=Path, default=Path("build/verilog"))
    sub.add_parser("list", help="list the units")
    return p


def main(argv=None) -> int:
    specs = units()
    parser = _parser(specs)
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            for spec in specs.values():
                print(f"{spec.name:14s} {spec.help}")
            return 0
        if args.command == "generate":
            spec = specs[args.unit]
            out = write_unit(spec, args, args.output)
            print(f"wrote {out} and {out.with_suffix('.json').name}")
            return 0
        if args.command == "defaults":
            n = 0
            for spec in specs.values():
                for argv_ in spec.defaults:
                    sp = argparse.ArgumentParser()
                    spec.add_arguments(sp)
                    a = sp.parse_args(argv_)
                    comp = spec.build(a)
                    write_component(comp, spec.name, args.output_dir / f"{comp.module_name}.v")
                    n += 1
            print(f"wrote {n} modules to {args.output_dir}/")
            return 0
    except (ValueError, TypeError) as e:
        print(f"python -m hw: error: {e}", file=sys.stderr)
        return 2
    return 2
