"""``python -m hw``: write synthesizable Verilog (plus a JSON sidecar) for the MX units.

Usage::

    python -m hw generate quantizer --format fp8_e4m3 --block-size 32 --input fp32 -o q.v
    python -m hw generate dot --format-a fp8_e4m3 --format-b fp4_e2m1 -o dot.v
    python -m hw defaults -o build/verilog        # the default set (make verilog)
    python -m hw list                             # units and their options
    python -m hw generate quantizer --format int8 --fusesoc cores/   # plus a FuseSoC core

The units come from the registry (:func:`hw.registry.units`); this module only holds the
command line: argument parsing, help, error reporting (one line, exit status 2).  Writing a
unit's Verilog and sidecar is :mod:`hw.verilog`, its FuseSoC core :mod:`hw.fusesoc`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .fusesoc import write_unit_core
from .registry import UnitSpec, format_help, units
from .sidecar import sidecar
from .verilog import VERILOG_SUFFIXES, to_verilog, write_component

__all__ = ["DESCRIPTION", "HelpFormatter", "option_defaults", "units_summary", "main",
           # the registry's and hw.verilog's names, for the command line's users
           "UnitSpec", "units", "format_help", "sidecar", "to_verilog", "write_component"]

DESCRIPTION = "Write synthesizable Verilog (plus a JSON sidecar) for the MX units."


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter,
                    argparse.RawDescriptionHelpFormatter):
    """Every option's help ends with its default; descriptions and epilogs keep their lines.

    An option whose default is ``None`` (computed from other options, or none) says so in its
    own help, so "(default: None)" is left out; ``_get_help_string`` is the hook argparse's
    own ``ArgumentDefaultsHelpFormatter`` overrides.
    """

    def _get_help_string(self, action):
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


class _OptionRecorder(argparse.ArgumentParser):
    """A parser that keeps the actions of the options added to it, in order."""

    def __init__(self):
        super().__init__(add_help=False)
        self.options = []

    def add_argument(self, *args, **kwargs):
        action = super().add_argument(*args, **kwargs)
        self.options.append(action)
        return action


def option_defaults(spec: UnitSpec) -> dict[str, object]:
    """A unit's options that have a default, ``{"--block-size": 32, ...}``."""
    recorder = _OptionRecorder()
    spec.add_arguments(recorder)
    return {a.option_strings[-1]: a.default for a in recorder.options
            if a.option_strings and a.default is not None and not a.required}


def units_summary(specs: dict[str, UnitSpec], command: str = "python -m hw") -> str:
    """The units, their defaults and the element formats, for the end of ``--help``."""
    import golden

    lines = [f"units ({command} generate UNIT --help for every option):"]
    width = max(len(name) for name in specs)
    for spec in specs.values():
        lines.append(f"  {spec.name:{width}s} {spec.help}")
        defaults = " ".join(f"{k} {v}" for k, v in option_defaults(spec).items())
        lines.append(f"  {'':{width}s} defaults: {defaults}")
    lines.append(f"element formats: {', '.join(golden.FORMATS)}")
    return "\n".join(lines)


def _parser(specs: dict[str, UnitSpec], prog: str = "python -m hw") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=DESCRIPTION,
                                formatter_class=HelpFormatter, epilog=units_summary(specs, prog))
    sub = p.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="write one unit's Verilog and JSON sidecar",
                         formatter_class=HelpFormatter, epilog=units_summary(specs, prog))
    gsub = gen.add_subparsers(dest="unit", required=True)
    for spec in specs.values():
        # -o first, conflicts resolved: a unit may reuse --output for its own option (the
        # dequantizer's output format); -o always names the Verilog file (dest "output").
        sp = gsub.add_parser(spec.name, help=spec.help, description=spec.help,
                             conflict_handler="resolve", formatter_class=HelpFormatter)
        where = sp.add_mutually_exclusive_group(required=True)
        where.add_argument("-o", "--output", type=Path,
                           help="Verilog file to write, or an existing directory to write "
                                "<module>.v into; the JSON sidecar goes beside it")
        where.add_argument("--fusesoc", type=Path, metavar="DIR",
                           help="write <module>.v, its sidecar, the lint waivers and a FuseSoC "
                                "core <module>.core into DIR")
        spec.add_arguments(sp)
    d = sub.add_parser("defaults", help="write the default set of units (make verilog)",
                       formatter_class=HelpFormatter)
    d.add_argument("-o", "--output-dir", type=Path, default=Path("build/verilog"),
                   help="directory to write into")
    sub.add_parser("list", help="list the units")
    return p


def _generate(spec: UnitSpec, args) -> str:
    """Write the unit ``args`` configure; return what was written, for the user."""
    component = spec.build(args)
    if args.fusesoc is None:
        out = args.output
        if out.is_dir():
            out = out / f"{component.module_name}.v"
        elif out.suffix not in VERILOG_SUFFIXES:  # what a simulator build reads as Verilog
            raise ValueError(f"-o {out}: a Verilog file's name must end in "
                             f"{', '.join(VERILOG_SUFFIXES)} (or name an existing directory)")
        out = write_component(component, spec.name, out)
        return f"wrote {out} and {out.with_suffix('.json')}" + _models_note(component)
    out = write_component(component, spec.name, args.fusesoc / f"{component.module_name}.v")
    core, vlnv = write_unit_core(component.module_name, args.fusesoc, description=spec.help,
                                 primitives=component.primitives)
    return (f"wrote {out}, {out.with_suffix('.json')} and the FuseSoC core {core} "
            f"({vlnv})" + _models_note(component))


def _models_note(component) -> str:
    """What a unit that instantiates vendor cells needs for simulation (nothing for others)."""
    from .dsp import simulation_models

    models = simulation_models(component.primitives)
    if not models:
        return ""
    return (f"; it instantiates {', '.join(component.primitives)}: synthesis takes "
            f"{'it' if len(models) == 1 else 'them'} from the vendor library, simulation "
            f"needs {', '.join(map(str, models))}")


def main(argv=None, prog: str = "python -m hw") -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit status.

    ``prog`` names the command in help and error messages (``mx-hdl`` runs this too).
    """
    specs = units()
    parser = _parser(specs, prog)
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            for spec in specs.values():
                print(f"{spec.name:14s} {spec.help}")
            return 0
        if args.command == "generate":
            print(_generate(specs[args.unit], args))
            return 0
        if args.command == "defaults":
            n = 0
            for spec in specs.values():
                for argv_ in spec.defaults:
                    comp = spec.build_from(argv_)
                    write_component(comp, spec.name, args.output_dir / f"{comp.module_name}.v")
                    n += 1
            print(f"wrote {n} modules to {args.output_dir}/")
            return 0
    except (ValueError, TypeError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # an output path that cannot be written
        print(f"{prog}: error: {output_error(e)}", file=sys.stderr)
        return 2
    return 2


def output_error(e: OSError) -> str:
    """One line for an output path that cannot be written (``-o``, ``--fusesoc``)."""
    if isinstance(e, (FileExistsError, NotADirectoryError)):
        return f"cannot write into {e.filename}: a file is in the way of a directory"
    return f"cannot write {e.filename}: {e.strerror or e}"
