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
