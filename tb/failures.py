"""What a failed run of ``python -m tb check`` left behind, read for its report: each cocotb
test's outcome (the results XML) and the decoded mismatch reports of the simulation log,
each named by the test that wrote it."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

__all__ = ["MAX_ASSERTION_CHARS", "read_outcomes", "format_outcomes", "failure_reports"]

#: Characters of a failed-assertion message shown.
MAX_ASSERTION_CHARS = 200

#: A log line of cocotb (time, level, logger): the end of a multi-line mismatch report.
_LOG_LINE = re.compile(r"^\s*\d[\d.]*(\s*[a-z]+)?\s+(INFO|WARNING|ERROR|DEBUG|CRITICAL)\b")
#: cocotb's line starting a test: ``running tb.quantizer.stream (1/3)``.
_RUNNING = re.compile(r"\brunning [\w.]*?(\w+) \(\d+/\d+\)")


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_ASSERTION_CHARS else text[:MAX_ASSERTION_CHARS] + " ..."


def read_outcomes(results: Path) -> list[tuple[str, str | None]]:
    """``(test, failure message or None)`` for each cocotb test of a results XML file, in the
    order they ran; empty if there is no such file or it cannot be read."""
    try:
        root = ET.parse(results).getroot()
    except (OSError, ET.ParseError):
        return []
    outcomes = []
    for case in root.iter("testcase"):
        failed = case.find("failure")
        if failed is None:
            failed = case.find("error")
        outcomes.append((case.get("name", "?"), None if failed is None else
                         _headline(failed.get("message") or failed.text or "failed")))
    return outcomes


def _headline(message: str) -> str:
    """A failed test's message without the decoded reports it may carry (they are shown
    from the log): its first line, up to ``; first:``; a bare list of reports is named."""
    line = message.strip().splitlines()[0] if message.strip() else "failed"
    if line.startswith("['"):
        return "mismatching outputs (decoded below)"
    return _short(line.split("; first: ")[0])


def format_outcomes(module: str, outcomes: list[tuple[str, str | None]], seed: int) -> list[str]:
    """``FAILED: <module>: 2 of 3 tests failed (seed 1): stream, reset_in_traffic`` and one line
    per failed test with its message."""
    failed = [(name, why) for name, why in outcomes if why is not None]
    lines = [f"FAILED: {module}: {len(failed)} of {len(outcomes)} tests failed (seed {seed}): "
             f"{', '.join(name for name, _ in failed)}"]
    lines += [f"  {name}: {why}" for name, why in failed]
    return lines


def failure_reports(log_text: str, limit: int = 5) -> list[str]:
    """The decoded mismatch reports (``MISMATCH`` log records, with their continuation lines)
    and failed-assertion messages of a simulation log, the first ``limit`` of each, each
    prefixed with the test that wrote it (``[stream] MISMATCH block 3: ...``)."""
    reports, failures, current, column, test = [], [], None, 0, None

    def tag(text: str) -> str:
        return f"[{test}] {text}" if test else text

    for line in log_text.splitlines():
        running = _RUNNING.search(line)
        if running:
            test, current = running[1], None
            continue
        if "MISMATCH" in line:
            column = line.index("MISMATCH")
            current = [tag(line[column:])]
            reports.append(current)
            continue
        if current is not None and line.strip() and not _LOG_LINE.match(line):
            # cocotb indents a record's further lines to its message column
            current.append(line[column:] if not line[:column].strip() else line)
            continue
        current = None
        if re.search(r"\bAssertionError\b", line):
            failures.append(tag(_short(line.strip())))
    return (["\n".join(r) for r in reports[:limit]]
            + list(dict.fromkeys(failures))[:limit])
