"""``mx-hdl``: the project's command lines as one installed command.

Each command is the ``python -m`` form of the package that implements it, with the same
arguments::

    mx-hdl generate UNIT ...    python -m hw generate UNIT ...     (needs the hw extra)
    mx-hdl defaults ...         python -m hw defaults ...
    mx-hdl list                 python -m hw list
    mx-hdl vectors ...          python -m golden vectors ...
    mx-hdl check ...            python -m tb check ...             (needs the sim extra)

A command's module is imported only when that command runs, so ``mx-hdl vectors`` needs
neither Amaranth nor cocotb, and ``mx-hdl generate`` does not need cocotb.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from dataclasses import dataclass

__all__ = ["Command", "COMMANDS", "PROG", "main", "usage"]

PROG = "mx-hdl"


@dataclass(frozen=True)
class Command:
    """One ``mx-hdl`` command: the module whose ``main(argv)`` runs it."""

    module: str
    python_m: str
    extra: str
    help: str


COMMANDS = {
    "generate": Command("hw.cli", "python -m hw", "hw",
                        "write one unit's Verilog and JSON sidecar (--fusesoc DIR: and a "
                        "FuseSoC core)"),
    "defaults": Command("hw.cli", "python -m hw", "hw",
                        "write the default set of units (make verilog)"),
    "list": Command("hw.cli", "python -m hw", "hw", "list the units"),
    "vectors": Command("golden.__main__", "python -m golden", "",
                       "write $readmemh test vectors with golden's expected values"),
    "check": Command("tb.__main__", "python -m tb", "sim",
                     "build an MX unit's RTL (yours or generated) and verify it against golden"),
}


def usage() -> str:
    """``mx-hdl --help``: the commands, the units with their defaults, the element formats."""
    lines = [f"usage: {PROG} COMMAND [ARGS ...]", "",
             "Bit-exact OCP Microscaling (MX) hardware: generate the units' Verilog, write test",
             "vectors, verify RTL against the golden model.", "",
             f"commands ({PROG} COMMAND --help shows the options and their defaults):"]
    for name, cmd in COMMANDS.items():
        needs = f"; needs ocp-mx-hdl[{cmd.extra}]" if cmd.extra else ""
        lines.append(f"  {name:9s} {cmd.help}")
        lines.append(f"  {'':9s} (= {cmd.python_m} {name}{needs})")
    lines.append("")
    try:
        from .cli import units_summary
        from .registry import units

        lines.append(units_summary(units(), PROG))
    except ModuleNotFoundError as e:  # the base install: golden only
        lines.append(f"units: not available ({e}); pip install 'ocp-mx-hdl[hw]'")
    return "\n".join(lines)


def _version() -> str:
    from golden.vectors import generator_version

    return generator_version()


def main(argv=None) -> int:
    """Run ``mx-hdl argv`` (default ``sys.argv[1:]``); return the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] == "--version":
        print(f"{PROG} {_version()}")
        return 0
    cmd = COMMANDS.get(argv[0])
    if cmd is None:
        print(f"{PROG}: error: unknown command {argv[0]!r}; expected one of "
              f"{', '.join(COMMANDS)} ({PROG} --help)", file=sys.stderr)
        return 2
    try:
        run = importlib.import_module(cmd.module).main
    except ModuleNotFoundError as e:
        if e.name == cmd.module:
            why = f"{cmd.module} is not part of this installation"
        else:
            why = f"it needs ocp-mx-hdl[{cmd.extra}] ({e})"
        print(f"{PROG}: error: {PROG} {argv[0]} is not available: {why}", file=sys.stderr)
        return 2
    if "prog" in inspect.signature(run).parameters:
        return run(argv, prog=PROG) or 0
    return run(argv) or 0


if __name__ == "__main__":
    sys.exit(main())
