"""The regression's run records: session reports, shard merging, and the shard split."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tb.report import format_table, main, merge_sessions, write_session_report

ROOT = Path(__file__).resolve().parent.parent


def _row(config, blocks, mismatches=0):
    return {"config": config, "blocks": blocks, "elements": 4 * blocks,
            "mismatches": mismatches, "seed": 1, "checked_per_s": 10}


def _junit(path: Path, tests: int, failures: int):
    suite = ET.Element("testsuite", name="pytest", tests=str(tests), failures=str(failures),
                       errors="0", skipped="0")
    for i in range(tests):
        ET.SubElement(suite, "testcase", name=f"t{i}")
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path)


def test_format_table_totals_rows():
    lines = format_table([_row("a", 3), _row("bb", 5, mismatches=2)])
    assert lines[0].split() == ["config", "blocks", "elements", "mismatches", "seed",
                                "checked_per_s"]
    assert lines[-1] == "2 runs, 8 blocks (32 elements) checked, 2 mismatches"


def test_merge_sessions_combines_shards(tmp_path):
    for i, (rows, failed) in enumerate([([_row("a", 3)], []),
                                        ([_row("b", 5), _row("c", 7)], ["t::x"])], start=1):
        d = tmp_path / f"shard-{i}-of-2"
        write_session_report(d / "session.json", rows, seed=42, failed=failed,
                             shard=f"{i}/2", duration_s=1.5)
        _junit(d / "junit.xml", tests=len(rows), failures=len(failed))
    merged = merge_sessions(tmp_path, tmp_path / "merged")
    assert merged["totals"] == {"runs": 3, "blocks": 15, "elements": 60, "mismatches": 0}
    assert merged["shards"] == ["1/2", "2/2"] and merged["failed"] == ["t::x"]
    root = ET.parse(tmp_path / "merged" / "junit.xml").getroot()
    assert (root.get("tests"), root.get("failures")) == ("3", "1")
    assert len(root.findall("testsuite")) == 2
    text = (tmp_path / "merged" / "summary.txt").read_text()
    assert "3 runs, 15 blocks" in text and "FAILED t::x" in text
    # A failed test makes the merge command fail too; merging again ignores the merged report.
    assert main(["merge", str(tmp_path)]) == 1
    assert merge_sessions(tmp_path, tmp_path / "merged")["totals"]["runs"] == 3


def test_merge_refuses_mixed_seeds_and_empty_dirs(tmp_path, capsys):
    assert main(["merge", str(tmp_path)]) == 2
    assert "no shard reports" in capsys.readouterr().err
    for i, seed in enumerate((1, 2), start=1):
        write_session_report(tmp_path / f"s{i}" / "session.json", [_row("a", 1)], seed=seed,
                             failed=[])
    with pytest.raises(ValueError, match="different seeds"):
        merge_sessions(tmp_path, tmp_path / "merged")


@functools.cache
def _collect_group(group: int, splits: int) -> frozenset[str]:
    env = {**os.environ, "SIM_FULL": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-m", "sim", "tests", "--splits", str(splits), "--group", str(group),
         "--splitting-algorithm", "least_duration",
         "--durations-path", "tests/sim_durations.json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return frozenset(line for line in out.stdout.splitlines() if "::" in line)


def test_shards_partition_the_full_matrix():
    """make sim-full SHARD=i/N: the N groups are disjoint and together run every test."""
    groups = [_collect_group(i, 3) for i in (1, 2, 3)]
    everything = _collect_group(1, 1)
    assert len(everything) > 400
    assert set().union(*groups) == everything
    assert sum(len(g) for g in groups) == len(everything)


def test_durations_file_names_only_real_tests():
    durations = json.loads((ROOT / "tests" / "sim_durations.json").read_text())
    assert durations and all(v > 0 for v in durations.values())
    everything = _collect_group(1, 1)
    stale = set(durations) - everything
    assert not stale, f"durations recorded for tests that no longer exist: {sorted(stale)[:5]}"


def test_merge_of_shards_without_simulation_rows(tmp_path):
    write_session_report(tmp_path / "s1" / "session.json", [], seed=3, failed=[])
    assert merge_sessions(tmp_path, tmp_path / "m")["totals"]["runs"] == 0
    assert "0 runs, 0 blocks" in (tmp_path / "m" / "summary.txt").read_text()


def test_merge_sessions_merges_the_shards_coverage(tmp_path, seed):
    from tb.coverage.model import Coverage, CoverageModel, Point

    tag = f"shards{seed}"
    cov = Coverage(CoverageModel("report_test", tag, (Point("p", ("x", "y")),)))
    for i, hits in enumerate([{"x": 3}, {"y": 4}], start=1):
        d = tmp_path / f"shard-{i}-of-2"
        write_session_report(d / "session.json", [_row("a", 1)], seed=42, failed=[],
                             shard=f"{i}/2")
        cov.hits[f"report_test.{tag}.p"] = {"x": 0, "y": 0}  # each shard counts its own
        cov.add({"p": hits})
        cov.write(d)
    merged = merge_sessions(tmp_path, tmp_path / "merged")
    assert merged["coverage"][f"report_test {tag}"] == "2/2"
    counts = json.loads((tmp_path / "merged" / "coverage-counts.json").read_text())
    assert counts["points"][f"report_test.{tag}.p"]["hits"] == {"x": 3, "y": 4}
    assert (tmp_path / "merged" / "coverage.yml").exists()
    assert f"report_test  {tag}" in (tmp_path / "merged" / "summary.txt").read_text()
