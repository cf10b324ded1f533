"""Run records shared between cocotb testbenches (in the simulator process) and pytest.

A testbench calls :func:`write_summary` at the end of a run; the pytest side reads it back
with :func:`read_summary` and passes each record to the ``sim_record`` fixture of
``tests/conftest.py``, which prints them as the closing table of ``make sim``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

SUMMARY_ENV = "MX_SUMMARY_FILE"

#: Columns of the summary table, in order.
SUMMARY_COLUMNS = ["config", "blocks", "elements", "mismatches", "seed", "checked_per_s"]


def write_summary(**fields) -> None:
    """From inside a cocotb test: append one JSON record to the run's summary file."""
    path = os.environ.get(SUMMARY_ENV)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(fields) + "\n")


def summary_table(rows: list[dict]) -> list[str]:
    """The summary records as text lines: a header, one aligned line per record and a total
    line (runs, blocks, mismatches)."""
    table = [[str(r.get(c, "")) for c in SUMMARY_COLUMNS] for r in rows]
    widths = [max(len(c), *(len(t[i]) for t in table)) for i, c in enumerate(SUMMARY_COLUMNS)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(SUMMARY_COLUMNS, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(t, widths, strict=True)) for t in table]
    blocks = sum(int(r.get("blocks") or 0) for r in rows)
    bad = sum(int(r.get("mismatches") or 0) for r in rows)
    lines.append(f"{len(rows)} runs, {blocks} blocks checked, {bad} mismatches")
    return [line.rstrip() for line in lines]


def read_summary(path: Path) -> list[dict]:
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
