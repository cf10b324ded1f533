"""Run records of the simulation regression: per run, per pytest session, per shard.

Three levels, one format:

* a cocotb testbench calls :func:`write_summary` at the end of a run (in the simulator
  process); the pytest side reads it back with :func:`read_summary` and hands each record to
  the ``sim_record`` fixture of ``tests/conftest.py``;
* at the end of a pytest session the rows become the closing table of ``make sim``
  (:func:`format_table`) and, with ``--sim-report PATH``, one JSON session report
  (:func:`write_session_report`) beside pytest's JUnit XML;
* ``make sim-merge`` (``python -m tb.report merge DIR``) combines the session reports and
  JUnit files of the shards of one ``make sim-full SHARD=i/N`` regression into one table and
  one JUnit file, and their coverage databases into one (:func:`merge_sessions`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from .coverage.report import class_summary, format_coverage_table, merge_databases

SUMMARY_ENV = "MX_SUMMARY_FILE"
SESSION_FORMAT = 1

#: Columns of the summary table, in order.
SUMMARY_COLUMNS = ["config", "blocks", "elements", "mismatches", "seed", "checked_per_s"]


def write_summary(**fields) -> None:
    """From inside a cocotb test: append one JSON record to the run's summary file."""
    path = os.environ.get(SUMMARY_ENV)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(fields) + "\n")


def read_summary(path: Path) -> list[dict]:
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def totals(rows: list[dict]) -> dict:
    """Runs, blocks, elements and mismatches summed over ``rows``."""
    return {"runs": len(rows),
            "blocks": sum(int(r.get("blocks") or 0) for r in rows),
            "elements": sum(int(r.get("elements") or 0) for r in rows),
            "mismatches": sum(int(r.get("mismatches") or 0) for r in rows)}


def format_table(rows: list[dict]) -> list[str]:
    """The summary table as text lines (columns :data:`SUMMARY_COLUMNS`), then the totals."""
    table = [[str(r.get(c, "")) for c in SUMMARY_COLUMNS] for r in rows]
    widths = [max([len(c)] + [len(t[i]) for t in table]) for i, c in enumerate(SUMMARY_COLUMNS)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(SUMMARY_COLUMNS, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(t, widths, strict=True)).rstrip()
              for t in table]
    t = totals(rows)
    lines.append(f"{t['runs']} runs, {t['blocks']} blocks ({t['elements']} elements) checked, "
                 f"{t['mismatches']} mismatches")
    return lines


def write_session_report(path: Path, rows: list[dict], *, seed: int, failed: list[str],
                         shard: str | None = None, duration_s: float | None = None) -> None:
    """One pytest session's records as JSON (the unit :func:`merge_sessions` combines)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": SESSION_FORMAT, "seed": seed, "shard": shard,
                                "duration_s": duration_s, "failed": failed, "rows": rows,
                                "totals": totals(rows)}, indent=1) + "\n")


def _read_session(path: Path) -> dict:
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict) or data.get("format") != SESSION_FORMAT:
        raise ValueError(f"{path}: not a session report of format {SESSION_FORMAT} "
                         "(written by pytest --sim-report)")
    return data


def _merge_junit(paths: list[Path], out: Path) -> dict:
    """Concatenate the ``<testsuite>`` elements of JUnit files into one ``<testsuites>``."""
    merged = ET.Element("testsuites")
    counts = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for p in paths:
        root = ET.parse(p).getroot()
        for suite in ([root] if root.tag == "testsuite" else root.iter("testsuite")):
            suite.set("name", f"{suite.get('name', 'pytest')}[{p.parent.name}]")
            merged.append(suite)
            for k in counts:
                counts[k] += int(suite.get(k, 0))
    for k, v in counts.items():
        merged.set(k, str(v))
    ET.ElementTree(merged).write(out, encoding="utf-8", xml_declaration=True)
    return counts


def merge_sessions(directory: Path, out: Path) -> dict:
    """Merge every ``*/session.json`` (and ``*/junit.xml``, and the coverage database beside
    it) under ``directory`` into ``out``.

    Writes ``out/session.json`` (all rows, shards listed), ``out/junit.xml``, the merged
    coverage database (:func:`tb.coverage.report.merge_databases`) and ``out/summary.txt``
    (the summary and coverage tables); returns the merged session dict.  Raises
    ``ValueError`` when shards disagree on the seed or when there is nothing to merge.
    """
    directory, out = Path(directory), Path(out)
    # The merged report may live under ``directory`` too (the default): never merge it again.
    sessions = sorted(p for p in directory.glob("*/session.json")
                      if p.parent.resolve() != out.resolve())
    if not sessions:
        raise ValueError(f"no shard reports (*/session.json) under {directory}/: run "
                         "`make sim-full SHARD=i/N` first")
    parts = [_read_session(p) for p in sessions]
    seeds = {p["seed"] for p in parts}
    if len(seeds) != 1:
        raise ValueError(f"shards ran with different seeds {sorted(seeds)}: a merged report "
                         "must come from one SEED")
    rows = [r for p in parts for r in p["rows"]]
    failed = [f for p in parts for f in p["failed"]]
    merged = {"format": SESSION_FORMAT, "seed": seeds.pop(),
              "shards": [p.get("shard") for p in parts],
              "duration_s": {p.get("shard"): p.get("duration_s") for p in parts},
              "failed": failed, "rows": rows, "totals": totals(rows)}
    out.mkdir(parents=True, exist_ok=True)
    # Each shard's coverage database sits beside its session report (tests/conftest.py).
    coverage = merge_databases([p.parent for p in sessions], out)
    if coverage:
        merged["coverage"] = {f"{r['unit']} {r['config_class']}": f"{r['hit']}/{r['defined']}"
                              for r in class_summary(coverage)}
    (out / "session.json").write_text(json.dumps(merged, indent=1) + "\n")
    junits = sorted(p.parent / "junit.xml" for p in sessions
                    if (p.parent / "junit.xml").exists())
    if junits:
        merged["junit"] = _merge_junit(junits, out / "junit.xml")
    lines = format_table(rows)
    lines.append(f"{len(parts)} shards {', '.join(str(s) for s in merged['shards'])}; "
                 f"SEED={merged['seed']}; failed tests: {len(failed)}")
    lines += [f"  FAILED {f}" for f in failed]
    if coverage:
        lines += ["", *format_coverage_table(coverage)]
    (out / "summary.txt").write_text("\n".join(lines) + "\n")
    return merged


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tb.report",
                                description="Merge the shard reports of a sharded regression.")
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("merge", help="merge */session.json and */junit.xml under DIR")
    m.add_argument("directory", type=Path, help="directory holding one subdirectory per shard")
    m.add_argument("-o", "--output", type=Path, default=None,
                   help="output directory (default: DIR/merged)")
    a = p.parse_args(argv)
    try:
        merged = merge_sessions(a.directory, a.output or a.directory / "merged")
    except (ValueError, OSError, ET.ParseError) as e:
        print(f"python -m tb.report: error: {e}", file=sys.stderr)
        return 2
    print((Path(a.output or a.directory / "merged") / "summary.txt").read_text(), end="")
    return 1 if merged["failed"] or merged["totals"]["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
