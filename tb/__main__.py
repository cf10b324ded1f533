"""``python -m tb``: the project's testbench on the command line.

Usage::

    python -m tb check --sidecar unit.json unit.v [more.v ...]   # verify any MX unit's RTL
"""

from __future__ import annotations

import argparse
import sys

from . import check


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tb", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="run the verification suite on a unit's RTL against golden",
                       description=check.__doc__.split("\n\n")[0],
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    check.add_arguments(c)
    args = p.parse_args(argv)
    return check.main(args)


if __name__ == "__main__":
    sys.exit(main())
