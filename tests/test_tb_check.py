"""``python -m tb check``: bad inputs give one-line errors (exit 2); in simulation, a generated
unit passes and the same unit with a planted fault fails with decoded mismatch reports."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from hw.sidecar import port_by_role
from tb.check import CheckError, check_ports, failure_reports
from tb.failures import format_outcomes, read_outcomes
from tb.runner import ROOT

#: A small generated unit: quantizer fp8_e4m3, k = 4, bf16 input (a quick Verilator build).
UNIT = ["quantizer", "--format", "fp8_e4m3", "--block-size", "4", "--input", "bf16",
        "--stages", "3"]


def _python(*args, cwd):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.fixture
def unit(tmp_path):
    """(Verilog path, sidecar path, sidecar dict) of :data:`UNIT` in ``tmp_path``."""
    out = tmp_path / "unit.v"
    r = _python("-m", "hw", "generate", *UNIT, "-o", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    side = out.with_suffix(".json")
    return out, side, json.loads(side.read_text())


def _check(*args, cwd):
    return _python("-m", "tb", "check", *map(str, args), cwd=cwd)


def _one_error_line(r, pattern: str) -> None:
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert re.search(pattern, lines[0]), lines[0]


# -- bad inputs (no simulation) ------------------------------------------------------------------
def test_missing_files(unit, tmp_path):
    verilog, side, _ = unit
    _one_error_line(_check("--sidecar", tmp_path / "nope.json", verilog, cwd=tmp_path),
                    r"^python -m tb check: error: no such file: .*nope\.json$")
    _one_error_line(_check("--sidecar", side, tmp_path / "nope.v", cwd=tmp_path),
                    r"error: no such file: .*nope\.v$")
    # a file the simulator build could not read as Verilog (it goes by the suffix)
    renamed = verilog.with_suffix(".txt")
    renamed.write_text(verilog.read_text())
    _one_error_line(_check("--sidecar", side, renamed, cwd=tmp_path),
                    r"error: .*unit\.txt: a Verilog file's name must end in \.v, \.sv, "
                    r"\.vh, \.svh$")


def test_invalid_sidecar(unit, tmp_path):
    verilog, _, meta = unit
    del meta["latency"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(meta))
    _one_error_line(_check("--sidecar", bad, verilog, cwd=tmp_path),
                    r"bad\.json: sidecar \(top level\): 'latency' is a required property")
    bad.write_text("{not json")
    _one_error_line(_check("--sidecar", bad, verilog, cwd=tmp_path), r"bad\.json: not JSON")


def test_sidecar_ports_must_match_the_verilog(unit, tmp_path):
    verilog, _, meta = unit
    port_by_role(meta, "i.payload")["width"] += 1
    port_by_role(meta, "o.valid")["name"] = "out_valid"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(meta))
    r = _check("--sidecar", bad, verilog, cwd=tmp_path)
    _one_error_line(r, r"ports of mx_quantizer_\w+ do not match the sidecar")
    assert "i__payload is 64 bits in the Verilog, 65 in the sidecar" in r.stderr
    assert "out_valid (o.valid) is not a port of the Verilog" in r.stderr
    assert "Verilog ports not in the sidecar: o__valid" in r.stderr


def test_module_not_in_the_verilog(unit, tmp_path):
    verilog, _, meta = unit
    meta["module"] = "my_quantizer"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(meta))
    _one_error_line(_check("--sidecar", bad, verilog, cwd=tmp_path),
                    r"Verilator cannot read my_quantizer .*'my_quantizer' was not found")


def test_check_ports_accepts_the_same_ports_and_lists_each_difference(unit):
    _, _, meta = unit
    ports = {p["name"]: (p["direction"], p["width"]) for p in meta["ports"]}
    check_ports(meta, ports)
    ports["i__ready"] = ("in", 1)
    ports["spare"] = ("in", 3)
    with pytest.raises(CheckError, match="i__ready is 'in' in the Verilog, 'out' in the "
                                         "sidecar; Verilog ports not in the sidecar: spare"):
        check_ports(meta, ports)


def test_failure_reports_joins_continuation_lines_and_names_the_test():
    """cocotb indents a record's further lines to its message column; the report keeps only
    the message's own indentation, and names the test that wrote it."""
    prefix = "     1.00ns ERROR    cocotb.tb    "
    log = ("     0.00ns INFO     cocotb.regression   running tb.quantizer.stream (1/3)\n"
           f"{prefix}MISMATCH block 3: scale expected 1 got 2\n"
           f"{' ' * len(prefix)}  lane 0: expected 0x1\n"
           "     2.00ns INFO     cocotb       next record\n"
           "AssertionError: 1 mismatching outputs\n"
           "     3.00ns INFO     cocotb.regression   running tb.quantizer.reset_in_traffic "
           "(2/3)\n"
           f"{prefix}MISMATCH block 0: scale expected 1 got 3\n")
    assert failure_reports(log) == ["[stream] MISMATCH block 3: scale expected 1 got 2\n"
                                    "  lane 0: expected 0x1",
                                    "[reset_in_traffic] MISMATCH block 0: scale expected 1 got 3",
                                    "[stream] AssertionError: 1 mismatching outputs"]


def test_failed_tests_are_named_with_their_messages(tmp_path):
    results = tmp_path / "results.xml"
    results.write_text(
        '<testsuites><testsuite name="tb.quantizer">'
        '<testcase name="stream"><failure message="3 of 96 outputs mismatched" /></testcase>'
        '<testcase name="reset_in_traffic" />'
        '<testcase name="bulk"><failure message="2025 mismatching outputs" /></testcase>'
        '</testsuite></testsuites>')
    outcomes = read_outcomes(results)
    assert outcomes == [("stream", "3 of 96 outputs mismatched"), ("reset_in_traffic", None),
                        ("bulk", "2025 mismatching outputs")]
    assert format_outcomes("mxq", outcomes, 7) == [
        "FAILED: mxq: 2 of 3 tests failed (seed 7): stream, bulk",
        "  stream: 3 of 96 outputs mismatched", "  bulk: 2025 mismatching outputs"]
    assert read_outcomes(tmp_path / "none.xml") == []


# -- simulation ----------------------------------------------------------------------------------
@pytest.mark.sim
def test_generated_unit_passes(unit, tmp_path, seed):
    verilog, side, meta = unit
    r = _check("--sidecar", side, verilog, "--seed", seed, "--blocks", 20, cwd=tmp_path)
    print(r.stdout[-3000:], r.stderr[-3000:])
    assert r.returncode == 0
    assert r.stdout.rstrip().endswith("PASS")
    for test in ("stream", "reset", "bulk"):
        assert re.search(rf"^{meta['module']} \[{test}\]\s+\d+\s+\d+\s+0\s+{seed}", r.stdout,
                         re.M), test
    # the default build directory is under the working directory, with the coverage database
    build = tmp_path / "build" / "check" / meta["module"]
    assert (build / "sim.log").is_file()
    assert f"timing: latency {meta['latency']} and i_ready registered, as the sidecar says" \
        in r.stdout
    m = re.search(r"^coverage: (\d+) of (\d+) defined bins hit", r.stdout, re.M)
    assert m and int(m[2]) > 0 and int(m[1]) > 0, "no coverage table in the check's output"
    assert (build / "coverage-report" / "coverage-counts.json").is_file()


@pytest.mark.sim
def test_unit_with_dsp_blocks_is_checked_with_their_model(tmp_path, seed):
    """A unit instantiating MULT18X18D blocks (its sidecar's ``primitives``): check reads the
    model from hw/models/ itself, given only the unit's own Verilog."""
    out = tmp_path / "dot.v"
    r = _python("-m", "hw", "generate", "dot", "--format", "int8", "--block-size", "2",
                "--multipliers", "mult18x18d", "-o", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["primitives"] == ["MULT18X18D"]
    r = _check("--sidecar", out.with_suffix(".json"), out, "--seed", seed, "--blocks", 20,
               cwd=tmp_path)
    print(r.stdout[-3000:], r.stderr[-3000:])
    assert r.returncode == 0 and r.stdout.rstrip().endswith("PASS")


@pytest.mark.sim
def test_planted_fault_fails_with_decoded_mismatches(unit, tmp_path, seed):
    """One Verilog line changed: lane 0's code comes out with its low bit flipped."""
    verilog, side, meta = unit
    out = port_by_role(meta, "o.payload")
    codes = next(f for f in out["fields"] if f["name"] == "codes")
    text, n = re.subn(rf"^(\s*assign {out['name']} = )(.*);$",
                      rf"\1(\2) ^ {out['width']}'d{1 << codes['lsb']};", verilog.read_text(),
                      flags=re.M)
    assert n == 1
    verilog.write_text(text)
    r = _check("--sidecar", side, verilog, "--seed", seed, "--blocks", 20, "--build-dir",
               tmp_path / "faulty", cwd=tmp_path)
    print(r.stdout[-3000:], r.stderr[-3000:])
    assert r.returncode == 1
    assert r.stdout.rstrip().endswith("FAIL")
    assert "note: the sidecar's verilog_sha256 matches none of the Verilog files" in r.stdout
    assert re.search(rf"^{meta['module']} \[stream\]\s+(\d+)\s+\d+\s+\1\s", r.stdout, re.M), \
        "every stream block must mismatch"
    assert re.search(rf"^{meta['module']} \[bulk\]\s+\d+\s+\d+\s+[1-9]\d*\s", r.stdout, re.M), \
        "the bulk row must count mismatches too"
    assert "first failures (decoded):" in r.stdout
    assert re.search(r"MISMATCH block \d+ \(rounding=rne, scale_mode=floor\).*\n"
                     r"  lane 0: input .*\n    expected .*\n    actual ", r.stdout)


# -- a failed build --------------------------------------------------------------------------
EXAMPLE = ROOT / "examples" / "verify-your-rtl"


def test_failed_build_reports_the_build_error_alone(tmp_path):
    """Verilator finds ``mxq_lane.v`` in the working directory for the port check, but the
    build (run in the build directory) does not: exit 2, the build error, and nothing of the
    earlier run whose logs are still in the build directory."""
    for name in ("mxq_bf16_fp4_k4.v", "mxq_lane.v", "mxq_bf16_fp4_k4.json"):
        (tmp_path / name).write_text((EXAMPLE / name).read_text())
    build = tmp_path / "build"
    build.mkdir()
    (build / "sim.log").write_text("0.00ns ERROR cocotb.tb MISMATCH block 1: an earlier run\n"
                                   "AssertionError: 1 mismatching outputs\n")
    (build / "results.xml").write_text("<testsuites/>")
    r = _check("--sidecar", "mxq_bf16_fp4_k4.json", "mxq_bf16_fp4_k4.v", "--seed", 1,
               "--build-dir", build, cwd=tmp_path)
    _one_error_line(r, r"^python -m tb check: error: the Verilator build of mxq_bf16_fp4_k4 "
                       r"failed: %Error-MODMISSING: .*'mxq_lane' \(log: .*build\.log\)$")
    assert "MODMISSING" in r.stdout
    for earlier in ("MISMATCH", "an earlier run", "AssertionError", "FAIL", "PASS"):
        assert earlier not in r.stdout, earlier
    assert not (build / "sim.log").exists() and not (build / "results.xml").exists()


def test_payload_field_names_are_checked_before_building(tmp_path):
    """A field named wrongly (``codez``) or of the wrong width: one line, exit 2, before any
    Verilator run (no build directory is made)."""
    meta = json.loads((EXAMPLE / "mxq_bf16_fp4_k4.json").read_text())
    out = port_by_role(meta, "o.payload")
    next(f for f in out["fields"] if f["name"] == "codes")["name"] = "codez"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(meta))
    verilog = [EXAMPLE / "mxq_bf16_fp4_k4.v", EXAMPLE / "mxq_lane.v"]
    build = tmp_path / "build"
    r = _check("--sidecar", bad, *verilog, "--build-dir", build, cwd=tmp_path)
    _one_error_line(r, r"error: payload fields of mxq_bf16_fp4_k4 differ from the quantizer's "
                       r"interface .*: o\.payload has codez \(16 bits\), not a field of the "
                       r"quantizer; o\.payload lacks codes \(16 bits\)$")
    assert not build.exists()
    meta = json.loads((EXAMPLE / "mxq_bf16_fp4_k4.json").read_text())
    port_by_role(meta, "o.payload")["fields"][1]["width"] = 7  # scale: 7 bits, lsb 16
    bad.write_text(json.dumps(meta))
    _one_error_line(_check("--sidecar", bad, *verilog, "--build-dir", build, cwd=tmp_path),
                    r"o\.payload field scale is 7 bits, the interface's 8$")


@pytest.mark.sim
def test_a_false_i_ready_claim_fails(tmp_path, seed):
    """The worked example's design, whose in_ready is ``out_ready | ~out_valid``, with a
    sidecar that claims a registered i_ready: every value is right, the claim is not."""
    meta = json.loads((EXAMPLE / "mxq_bf16_fp4_k4.json").read_text())
    meta["flow_control"]["i_ready"] = "registered"
    liar = tmp_path / "liar.json"
    liar.write_text(json.dumps(meta))
    r = _check("--sidecar", liar, EXAMPLE / "mxq_bf16_fp4_k4.v", EXAMPLE / "mxq_lane.v",
               "--seed", seed, "--blocks", 20, "--build-dir", tmp_path / "b", cwd=tmp_path)
    print(r.stdout[-3000:], r.stderr[-3000:])
    assert r.returncode == 1 and r.stdout.rstrip().endswith("FAIL")
    assert re.search(r"^FAILED: flow_control: the sidecar says i_ready is registered, but "
                     r"i_ready followed o_ready between two clock edges in \d+ of \d+ cycles",
                     r.stdout, re.M)
    rows = re.findall(r"^mxq_bf16_fp4_k4 \[(\w+)\]\s+\d+\s+\d+\s+(\d+)\s", r.stdout, re.M)
    assert rows == [("stream", "0"), ("reset", "0"), ("bulk", "0")], rows
    assert "FAILED: latency" not in r.stdout  # the latency claim (2) holds


def test_the_latency_definition_is_what_the_check_measures():
    """docs/sidecar.md defines latency as the timing probe (tb.flow_control) and the
    back-to-back check (n blocks in n + latency + 1 wrapper cycles) measure it: transferred
    in at edge t, presented after edge t + latency - 1, transferred out at edge t + latency."""
    from tb import flow_control

    doc = (ROOT / "docs" / "sidecar.md").read_text()
    row = next(line for line in doc.splitlines() if line.startswith("| `latency` |"))
    assert "after edge t + latency - 1" in row and "transferred out at edge t + latency" in row
    assert "n + latency + 1" in row
    assert "after edge t + m, the measured latency is m + 1" in " ".join(
        flow_control.__doc__.split())
    problems = flow_control.judge({"latency": 2, "flow_control": {"i_ready": "registered"}},
                                  {"latency": 3, "i_ready_follows_o_ready": 0,
                                   "first_cycle": None, "probe_cycles": 400})
    assert problems == ["latency: the sidecar says 2, measured 3 (a block transferred in at "
                        "edge t was first presented after edge t + 2)"]


def test_a_failed_tests_message_is_its_headline(tmp_path):
    results = tmp_path / "results.xml"
    results.write_text(
        '<testsuites><testsuite name="tb.quantizer">'
        '<testcase name="stream"><failure message="26 of 276 outputs mismatched; first: '
        '[&apos;block 34 ...&apos;]" /></testcase>'
        '<testcase name="reset_in_traffic"><failure message="[&apos;block 3 (rounding=rne)'
        '&apos;]" /></testcase>'
        '<testcase name="bulk"><failure message="2035 mismatching outputs&#10;assert 2035 == 0"'
        ' /></testcase></testsuite></testsuites>')
    assert read_outcomes(results) == [("stream", "26 of 276 outputs mismatched"),
                                      ("reset_in_traffic", "mismatching outputs (decoded below)"),
                                      ("bulk", "2035 mismatching outputs")]


@pytest.mark.sim
def test_dot_general_timing_claims_hold(tmp_path, seed):
    """MXDotGeneral: outputs only for a run's last block, and an i_ready that follows
    o_ready (its sidecar says combinational): the timing probe measures its latency with a
    run of one block and accepts the claim."""
    out = tmp_path / "dg.v"
    r = _python("-m", "hw", "generate", "dot-general", "--format-a", "fp4_e2m1", "--format-b",
                "fp4_e2m1", "--block-size", "2", "--stages", "2", "--contexts", "2", "-o",
                str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["flow_control"]["i_ready"] == "combinational"
    r = _check("--sidecar", out.with_suffix(".json"), out, "--seed", seed, "--blocks", 20,
               cwd=tmp_path)
    print(r.stdout[-3000:], r.stderr[-3000:])
    assert r.returncode == 0 and r.stdout.rstrip().endswith("PASS")
    assert (f"timing: latency {meta['latency']} and i_ready combinational, as the sidecar "
            "says") in r.stdout
