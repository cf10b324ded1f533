"""Merging coverage databases and the coverage table.

Every run (one configuration, one simulator process) writes a database directory
(:meth:`tb.coverage.model.Coverage.write`): cocotb-coverage's YAML and XML exports and the
exact counts with the model (JSON).  :func:`merge_databases` combines many such directories
into one -- the YAML and XML with cocotb-coverage's own ``merge_coverage``, the counts by
summing -- and :func:`format_coverage_table` prints the closure per unit and configuration
class: bins hit / bins defined, and the bins never hit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from .model import COUNTS_FORMAT, COUNTS_NAME, XML_NAME, YAML_NAME

__all__ = ["read_counts", "merge_counts", "merge_databases", "class_summary",
           "format_coverage_table"]


def read_counts(directory: Path) -> dict:
    """The exact-count document of a database directory."""
    doc = json.loads((Path(directory) / COUNTS_NAME).read_text())
    if doc.get("format") != COUNTS_FORMAT:
        raise ValueError(f"{directory}: not a coverage count file of format {COUNTS_FORMAT}")
    return doc


def merge_counts(docs: Iterable[dict]) -> dict:
    """Sum the hits of count documents point by point and bin by bin (the union of their
    points; exclusions and excluded-bin hits are carried over)."""
    points: dict[str, dict] = {}
    for doc in docs:
        for name, p in doc["points"].items():
            merged = points.setdefault(name, {"hits": {}, "excluded": {}, "excluded_hits": {}})
            for b, n in p["hits"].items():
                merged["hits"][b] = merged["hits"].get(b, 0) + int(n)
            merged["excluded"].update(p["excluded"])
            for b, n in p.get("excluded_hits", {}).items():
                merged["excluded_hits"][b] = merged["excluded_hits"].get(b, 0) + int(n)
    for name, p in points.items():
        overlap = set(p["hits"]) & set(p["excluded"])
        if overlap:
            raise ValueError(f"{name}: bins {sorted(overlap)} are defined in one database and "
                             "excluded in another")
    return {"format": COUNTS_FORMAT, "points": points}


def merge_databases(directories: Iterable[Path], out: Path) -> dict | None:
    """Merge the database directories into ``out`` (YAML, XML, counts); returns the merged
    count document, or None when there is nothing to merge."""
    from cocotb_coverage.coverage import merge_coverage

    directories = [Path(d) for d in directories if (Path(d) / COUNTS_NAME).exists()]
    if not directories:
        return None
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    merged = merge_counts(read_counts(d) for d in directories)
    (out / COUNTS_NAME).write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")
    for name in (YAML_NAME, XML_NAME):
        files = [str(d / name) for d in directories if (d / name).exists()]
        if files:
            merge_coverage(lambda message: None, str(out / name), *files)
    return merged


def class_summary(doc: dict) -> list[dict]:
    """Per ``(unit, configuration class)``: bins defined, hit, excluded, the bins never hit
    (``point:bin``, the point below the class) and excluded bins that were hit."""
    classes: dict[tuple[str, str], dict] = {}
    for name, p in sorted(doc["points"].items()):
        unit, config_class, rel = name.split(".", 2)
        row = classes.setdefault((unit, config_class), {
            "unit": unit, "config_class": config_class, "defined": 0, "hit": 0,
            "excluded": 0, "never_hit": [], "excluded_hit": []})
        row["defined"] += len(p["hits"])
        row["hit"] += sum(1 for n in p["hits"].values() if n > 0)
        row["excluded"] += len(p["excluded"])
        row["never_hit"] += [f"{rel}:{b}" for b, n in p["hits"].items() if n == 0]
        row["excluded_hit"] += [f"{rel}:{b}" for b, n in p.get("excluded_hits", {}).items()
                                if n > 0]
    return list(classes.values())


def format_coverage_table(doc: dict) -> list[str]:
    """The coverage table as text lines, then the totals and any never-hit bins."""
    rows = class_summary(doc)
    head = ["unit", "configuration class", "bins hit", "%", "excluded", "never hit"]
    table = [[r["unit"], r["config_class"], f"{r['hit']}/{r['defined']}",
              f"{100 * r['hit'] / r['defined']:.1f}" if r["defined"] else "-",
              str(r["excluded"]), str(len(r["never_hit"]))] for r in rows]
    widths = [max([len(h)] + [len(t[i]) for t in table]) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(t, widths, strict=True)).rstrip()
              for t in table]
    hit, defined = sum(r["hit"] for r in rows), sum(r["defined"] for r in rows)
    lines.append(f"coverage: {hit} of {defined} defined bins hit "
                 f"({100 * hit / defined if defined else 0:.1f} %) in {len(rows)} "
                 f"configuration classes; {sum(r['excluded'] for r in rows)} bins excluded "
                 "(reasons in coverage-counts.json and docs/verification.md)")
    for r in rows:
        if r["never_hit"]:
            lines.append(f"never hit: {r['unit']} {r['config_class']}: "
                         + ", ".join(r["never_hit"]))
        if r["excluded_hit"]:
            lines.append(f"EXCLUDED BIN HIT (the exclusion is wrong): {r['unit']} "
                         f"{r['config_class']}: " + ", ".join(r["excluded_hit"]))
    return lines
