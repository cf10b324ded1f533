"""Non-vacuity of the simulation regression: with one output bit flipped on its way into the
scoreboard, each unit's run must fail and report the mismatch decoded (fields and values),
and its summary row must count it.  Small configurations (k = 2, no sweeps)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from tb.runner import run_unit
from tb.standard_tests import FLIP_OUTPUT_ENV

pytestmark = pytest.mark.sim

# unit, cocotb module, generator arguments, a decoded field the report must show
UNITS = {
    "quantizer": ("tb.quantizer", ["--format", "fp4_e2m1", "--input", "bf16", "--block-size",
                                   "2", "--rounding", "runtime", "--scale-mode", "runtime",
                                   "--stages", "1"], r"block \d+ \(rounding=\w+, scale_mode="),
    "dequantizer": ("tb.dequantizer", ["--format", "fp6_e3m2", "--output", "fp16",
                                       "--block-size", "2", "--stages", "1"],
                    r"block \d+: scale \d+ .*lane \d: code 0x"),
    "dot": ("tb.dot", ["--format-a", "fp4_e2m1", "--format-b", "fp6_e2m3", "--block-size", "2",
                       "--stages", "1"], r"output \d+ \(.*sa=\d+ sb=\d+.*expected 0x"),
}


@pytest.mark.parametrize("unit", list(UNITS))
def test_a_flipped_output_bit_fails_the_run_with_a_decoded_report(unit, seed, monkeypatch,
                                                                  tmp_path):
    module, argv, decoded = UNITS[unit]
    flipped = seed % 8  # an output early in the stream test
    monkeypatch.setenv(FLIP_OUTPUT_ENV, str(flipped))
    name = f"planted_{unit}"
    rows = []
    # (cocotb's runner exits when a test failed; run_cocotb asserts when results say so)
    with pytest.raises((AssertionError, SystemExit)):
        run_unit(unit, argv, test_module=module, name=name, seed=seed, label=name, blocks=20,
                 sweeps=False, record=lambda **row: rows.append(row), build_dir=tmp_path)
    stream = [r for r in rows if r["config"].endswith("[stream]")]
    assert len(stream) == 1 and stream[0]["mismatches"] == 1, rows
    # Only the stream test fails, and its failure message carries the decoded report.
    failures = {case.get("name"): failure.get("message", "") + (failure.text or "")
                for case in ET.parse(tmp_path / "results.xml").getroot().iter("testcase")
                for failure in case.iter("failure")}
    assert list(failures) == ["stream"], failures
    assert "1 of" in failures["stream"] and re.search(decoded, failures["stream"], re.S), \
        failures["stream"]
