"""``python -m mutate``: a mutation campaign over ``hw/`` (``make mutate``).

Examples::

    python -m mutate                           # the default sample, a fresh seed (printed)
    python -m mutate --seed 7 --sample 30      # rerun a campaign exactly, or larger
    python -m mutate --files hw/arith.py --list   # show the mutants that would be tried
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from .campaign import Campaign
from .operators import find_mutations
from .sample import StratifiedSampler

ROOT = Path(__file__).resolve().parent.parent
#: Mutants that change the Verilog simulated by default, and the time budget after which no
#: new one starts: a mutant costs 2-7 minutes on 2 shared cores (generation of the default
#: configurations, a Verilator build, the simulation; see docs/verification.md, "Mutation
#: score"), so the default campaign ends after about 30 minutes.
DEFAULT_SAMPLE = 12
DEFAULT_MINUTES = 30.0


def hw_files(root: Path) -> list[str]:
    """Every ``hw/**/*.py`` with at least one mutation site, relative to ``root``."""
    files = []
    for path in sorted((root / "hw").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if find_mutations(rel, path.read_text()):
            files.append(rel)
    return files


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mutate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=DEFAULT_SAMPLE,
                        help="mutants that change the Verilog to simulate "
                             f"(default {DEFAULT_SAMPLE})")
    parser.add_argument("--seed", type=int, default=None,
                        help="sampling and simulation seed (default: random, printed)")
    parser.add_argument("--files", nargs="+", metavar="FILE",
                        help="hw source files to mutate (default: every hw/**/*.py)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="mutants evaluated in parallel (default 1: the machine is shared)")
    parser.add_argument("--minutes", type=float, default=DEFAULT_MINUTES,
                        help="time budget: start no new mutant after this many minutes "
                             f"(default {DEFAULT_MINUTES:g}; 0: none)")
    parser.add_argument("--list", action="store_true",
                        help="print the first --sample proposed mutants and their diffs, "
                             "run nothing")
    args = parser.parse_args(argv)
    if args.sample < 1 or args.jobs < 1:
        parser.error("--sample and --jobs must be >= 1")
    if args.minutes < 0:
        parser.error("--minutes must be >= 0")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    files = args.files or hw_files(ROOT)
    for f in files:
        if not (ROOT / f).is_file() or not f.startswith("hw/"):
            parser.error(f"{f}: not a file under hw/ (paths are relative to {ROOT})")
    print(f"seed {seed} (rerun with --seed {seed})", flush=True)
    if args.list:
        by_file = {f: find_mutations(f, (ROOT / f).read_text()) for f in files}
        for mutation in StratifiedSampler(by_file, seed).take(args.sample):
            print(f"{mutation.path}:{mutation.line} {mutation.operator} "
                  f"{mutation.description}")
            print(mutation.diff((ROOT / mutation.path).read_text()))
        return 0
    campaign = Campaign(ROOT, files, sample=args.sample, seed=seed, jobs=args.jobs,
                        minutes=args.minutes or None, log=lambda text: print(text, flush=True))
    campaign.run()
    print(f"report: {campaign.out / 'report.md'} (and report.json)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
