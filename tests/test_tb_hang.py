"""A deadlocked unit fails the standard testbench within seconds instead of hanging it.

A small generated dequantizer has its Verilog edited to plant a deadlock -- ``o.valid`` stuck
low (the pipeline fills, then nothing moves) or ``i.ready`` stuck low (nothing is ever
accepted) -- and the three standard tests (stream, reset in traffic, bulk) run on it in a
subprocess.  Every wait of the testbench is bounded in cycles by the block count and the
latency (:mod:`tb.stream.testbench`, :mod:`tb.bulk.runner`), so each test must fail with a
message naming what it waited for and after how many cycles, and those cycles must be within
the testbench's bounds: a hang is reported as a hang, not waited out.  (The subprocess
timeout only keeps a real hang from stopping the test session.)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tb.bulk.runner import CYCLES_MARGIN, MAX_CYCLES_MIN
from tb.standard_tests import UnitModel
from tb.stream.testbench import DRAIN_CYCLES_MIN, DRAIN_CYCLES_PER_OUTPUT, STALL_CYCLES_MAX

pytestmark = pytest.mark.sim

ROOT = Path(__file__).resolve().parent.parent
UNIT = ("dequantizer", ["--format", "int8", "--output", "bf16", "--block-size", "2",
                        "--stages", "2"])
#: Where the subprocess is stopped if it does hang (the test then fails as a hang).
HANG_TIMEOUT_S = 600

# Each plant replaces exactly one line of the generated Verilog (regex, count 1).
# The dequantizer's flow control is the registered stall: i.ready is a register (its
# update is the planted line; reset sets it to 1, then it stays 0) and o.valid is combinational.
PLANTS = {
    "o_valid_stuck_low": (r"(?m)^(\s*)assign o__valid = [^;]+;", r"\1assign o__valid = 1'h0;"),
    "i_ready_stuck_low": (r"(?m)^(\s*)i__ready <= [^;]+;", r"\1i__ready <= 1'h0;"),
}

SCRIPT = textwrap.dedent("""
    import re, sys
    from pathlib import Path
    from tb.bulk import VERILATOR_ARGS, prepare_unit
    from tb.runner import run_cocotb

    name, pattern, replacement, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    build = Path(sys.argv[5])
    unit, argv = {unit!r}, {argv!r}
    sources, top, sidecar = prepare_unit(unit, argv, build / "rtl")
    unit_v = sources[1]
    text, n = re.subn(pattern, replacement, unit_v.read_text(), count=1)
    assert n == 1, f"plant {{name}}: pattern {{pattern!r}} not found in {{unit_v}}"
    unit_v.write_text(text)
    run_cocotb(sources=sources, toplevel=top, test_module="tb.dequantizer", name=name,
               seed=seed, build_args=VERILATOR_ARGS, build_dir=build,
               extra_env={{"MX_SIDECAR": sidecar, "MX_CONFIG": name, "MX_BLOCKS": 50,
                          "MX_SEED": seed, "MX_FULL": 0, "MX_SWEEPS": 1}})
""").format(unit=UNIT[0], argv=UNIT[1])


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_deadlocked_unit_fails_within_its_cycle_bounds(plant, seed, tmp_path):
    pattern, replacement = PLANTS[plant]
    name = f"hang_{plant}"
    try:
        run = subprocess.run([sys.executable, "-c", SCRIPT, name, pattern, replacement,
                              str(seed), str(tmp_path / "build")], cwd=ROOT,
                             capture_output=True, text=True, timeout=HANG_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{plant}: the testbench hung (no result within {HANG_TIMEOUT_S} s)")
    log = run.stdout + run.stderr
    assert run.returncode != 0, f"{plant}: the deadlocked unit passed\n{log[-3000:]}"
    assert re.search(r"TESTS=3 PASS=0 FAIL=3", log), log[-3000:]
    # stream and reset_in_traffic: the drain wait gave up after latency + STALL_CYCLES_MAX
    # cycles without a transfer, within its bound on the whole drain
    drains = re.findall(r"timeout waiting for a batch to drain: no transfer for (\d+) cycles "
                        r"\(latency (\d+)\), after (\d+) cycles: (\d+) of (\d+) blocks sent, "
                        r"(\d+) of (\d+) outputs received", log)
    assert len(drains) >= 2, log[-3000:]
    for stalled, latency, cycles, sent, queued, received, expected in map(
            lambda d: map(int, d), drains):
        print(f"{plant}: drain gave up after {cycles} cycles ({stalled} without a transfer)")
        assert stalled <= latency + STALL_CYCLES_MAX, (plant, stalled, latency)
        assert cycles <= (DRAIN_CYCLES_PER_OUTPUT + latency) * expected + DRAIN_CYCLES_MIN
        assert received == 0 and expected > 0
        assert sent <= queued
        if plant == "i_ready_stuck_low":
            assert sent == 0
    # bulk: the wait for `done` gave up within its cycle limit, with the counts
    m = re.search(r"bulk: no `done` within (\d+) cycles \(latency (\d+), idle 0/256, stall "
                  r"0/256\): \d+ of (\d+) blocks sent, 0 of (\d+) outputs received", log)
    assert m, log[-3000:]
    limit, latency, rows, outputs = map(int, m.groups())
    print(f"{plant}: bulk gave up after {limit} cycles ({rows} blocks, latency {latency})")
    assert limit <= CYCLES_MARGIN * (rows * max(1, latency) + outputs) + UnitModel.drain \
        + MAX_CYCLES_MIN, (plant, limit)
    # both builds (cocotb's and bulk's) compile the model as one unit, with no precompiled
    # header (about 74 MB each: 44 builds of them filled a CI machine's disk)
    assert not sorted((tmp_path / "build").rglob("*.gch"))


def test_the_plants_match_the_generated_verilog(tmp_path):
    """Without simulation: each plant edits exactly one line of the unit's Verilog (so a
    change of Amaranth's output fails here, not as a confusing simulation)."""
    from tb.bulk import prepare_unit

    sources, _, sidecar = prepare_unit(*UNIT, tmp_path)
    text = sources[1].read_text()
    assert json.loads(sidecar.read_text())["latency"] >= 1
    for plant, (pattern, replacement) in PLANTS.items():
        edited, n = re.subn(pattern, replacement, text, count=1)
        assert n == 1 and edited != text, plant
