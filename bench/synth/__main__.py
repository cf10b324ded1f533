"""``python -m bench.synth``: synthesize the configuration list, the depth sweeps, and rewrite
the synthesis section of docs/performance.md (see :mod:`bench.synth`)."""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import sys

from hw.cli import units

from .. import perfdoc
from .configs import CONFIGS, SWEEPS, describe
from .flow import LUT_MAPS, ROOT, stored, sweep, synthesize
from .report import markdown, plot, sweep_markdown


def main(argv=None) -> int:
    import warnings

    from amaranth.hdl import UnusedElaboratable

    # configurations are built only to read their names and Verilog: not a user error
    warnings.simplefilter("ignore", UnusedElaboratable)
    ap = argparse.ArgumentParser(prog="python -m bench.synth",
                                 description="synthesis, place-and-route and area reports")
    ap.add_argument("--only", action="append", default=[],
                    help="run only configurations whose unit/args contain this text (may be "
                         "repeated); the table keeps the stored results of the others")
    ap.add_argument("--no-sweep", action="store_true",
                    help="skip the pipeline-depth sweeps (the document keeps its sweep section)")
    ap.add_argument("--sweep-points", type=int, default=6,
                    help="stage counts per sweep, spread over the unit's range (default 6)")
    ap.add_argument("--ecp5-only", action="store_true",
                    help="skip the xc7 and generic reports (faster; their columns stay empty)")
    ap.add_argument("--report-only", action="store_true",
                    help="synthesize nothing from the list: rebuild the table (and the sweeps, "
                         "unless --no-sweep) from stored results")
    ap.add_argument("--seeds", type=int, default=1,
                    help="place each configuration with nextpnr seeds 1..N and report the "
                         "median Fmax and the range (default 1; stored seeds are reused)")
    ap.add_argument("--lut-map", choices=LUT_MAPS, default="lut4",
                    help="LUT mapping of the configurations synthesized by this run: lut4 "
                         "(default, the project's flow), lut5 or wide (LUT4-5 or LUT4-7 "
                         "through PFU muxes, ECP5 only, stored in bench/results/synth/<mapping> "
                         "and shown beside the targets); the sweeps are always lut4")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    if args.seeds < 1:
        ap.error(f"--seeds must be at least 1, not {args.seeds}")
    available = units()
    configs = [(u, a) for u, a in CONFIGS if u in available]
    todo = [(u, a) for u, a in configs
            if not args.report_only
            and (not args.only or any(o in " ".join([u, *a]) for o in args.only))]
    missing = sorted({u for u, _ in CONFIGS if u not in available})
    if missing:
        print(f"units not available yet, skipped: {', '.join(missing)}")
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        ran = list(ex.map(lambda c: synthesize(*c, ecp5_only=args.ecp5_only,
                                               seeds=args.seeds, lut_map=args.lut_map), todo))
    results = [r for r in (stored(u, a) for u, a in configs) if r is not None]
    mapped = {name: [r for r in (stored(u, a, name) for u, a in configs) if r is not None]
              for name in LUT_MAPS if name != "lut4"}
    sweeps = {}
    if not args.no_sweep and not args.only:
        for unit, a in SWEEPS:
            if unit in available:
                points = sweep(unit, a, args.jobs, points=args.sweep_points,
                               seeds=args.seeds, stored_only=args.report_only)
                if points:
                    sweeps[describe(unit, a)] = points
        if sweeps:
            plot(sweeps, ROOT / "docs" / "stages_sweep.png")
    not_run = len(configs) - len(results)
    text = markdown(results, mapped)
    if not_run:
        text += (f"\n{not_run} configuration(s) of the list have no current result yet "
                 "(run `make synth`).\n")
    # without sweeps (--no-sweep, --only) the document keeps its sweep section as it is
    perfdoc.update(synth=text, **({"sweep": sweep_markdown(sweeps)} if sweeps else {}))
    print(f"updated {perfdoc.DOC.relative_to(ROOT)}")
    failed = [r["module"] for r in ran if "error" in r]
    if failed:
        print(f"synthesis failed for: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0




if __name__ == "__main__":
    sys.exit(main())
