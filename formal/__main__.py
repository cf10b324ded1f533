"""``python -m formal``: run the proof matrix, print progress and the proof table, and write
``build/formal/report.md`` (per-job logs under ``build/formal/<job>/``)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from .matrix import PROPERTIES, proof_jobs, report_table
from .sby import sby_available


def _parse(argv):
    p = argparse.ArgumentParser(prog="python -m formal", description=__doc__)
    p.add_argument("--quick", action="store_true",
                   help="k = 2 only, no miter at the deepest setting (a few minutes)")
    p.add_argument("--all", dest="full", action="store_true",
                   help="also the dot units' miters (no verdict in minutes, "
                        "see docs/verification.md)")
    p.add_argument("--only", metavar="PATTERN",
                   help="run the jobs whose name matches a shell pattern, e.g. 'dot-k2-*' "
                        "or '*-miter' (names: UNIT-kK-sSTAGES-PROPERTY)")
    p.add_argument("--jobs", type=int, default=1, help="SymbiYosys runs in parallel (default 1)")
    p.add_argument("--timeout", type=float, default=1800,
                   help="seconds per job before it counts as timeout (default 1800)")
    p.add_argument("--out", type=Path, default=Path("build/formal"), help="output directory")
    p.add_argument("--list", action="store_true", help="list the jobs and exit")
    a = p.parse_args(argv)
    if a.jobs < 1:
        p.error("--jobs must be >= 1")
    if a.timeout <= 0:
        p.error("--timeout must be positive")
    return a


def main(argv=None) -> int:
    a = _parse(argv)
    jobs = proof_jobs(quick=a.quick, full=a.full, only=a.only)
    if not jobs:
        print(f"no job matches {a.only!r}", file=sys.stderr)
        return 2
    if a.list:
        for job in jobs:
            print(f"{job.name}  ({job.mode}"
                  + (")" if job.mode == "equiv" else f", depth {job.depth})"))
        return 0
    missing = sby_available()
    if missing:
        print(f"formal: cannot run: {missing}", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    print(f"formal: {len(jobs)} jobs, {a.jobs} at a time, logs under {a.out}/", flush=True)
    start = time.monotonic()
    results = []
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = {pool.submit(job.run, a.out, a.timeout): job for job in jobs}
        for n, fut in enumerate(as_completed(futures), start=1):
            job, res = futures[fut], fut.result()
            results.append((job, res))
            extra = f"  failed: {', '.join(res.failed)}  trace: {res.trace}" if res.failed else ""
            bound = "all inputs" if job.mode == "equiv" else f"depth {job.depth:2}"
            print(f"[{n}/{len(jobs)}] {job.name:44} {job.mode:5} {bound:10}  "
                  f"{res.verdict:14} {res.seconds:6.1f} s{extra}", flush=True)
    wall = time.monotonic() - start
    order = {job.name: i for i, job in enumerate(jobs)}
    results.sort(key=lambda r: order[r[0].name])
    table = report_table(results)
    load = os.getloadavg()[0]
    summary = (f"{len(results)} jobs in {wall:.0f} s wall ({a.jobs} in parallel; load average "
               f"{load:.1f} at the end on {os.cpu_count()} cores)")
    report = (f"# Formal proof report\n\n{summary}.\n\n"
              "Columns: " + "; ".join(f"`{k}` = {v}" for k, v in PROPERTIES.items())
              + ".\n\n" + table + "\n")
    (a.out / "report.md").write_text(report)
    print("\n" + table + "\n\n" + summary + f"\nreport: {a.out / 'report.md'}")
    bad = [job.name for job, res in results if res.status != "PASS"]
    if bad:
        print(f"formal: {len(bad)} job(s) not passed: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
