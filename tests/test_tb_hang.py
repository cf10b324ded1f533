"""A deadlocked unit fails the standard testbench within seconds instead of hanging it.

A small generated dequantizer has its Verilog edited to plant a deadlock -- ``o.valid`` stuck
low (the pipeline fills, then nothing moves) or ``i.ready`` stuck low (nothing is ever
accepted) -- and the three standard tests (stream, reset in traffic, bulk) run on it in a
subprocess.  Every wait of the testbench is bounded by the block count and the latency
(:mod:`tb.stream.testbench`, :mod:`tb.bulk.runner`), so each test must fail with a message
naming what it waited for, and the whole run (Verilator build included) must end well inside
the subprocess timeout: a hang is reported as a hang, not waited out.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.sim

ROOT = Path(__file__).resolve().parent.parent
UNIT = ("dequantizer", ["--format", "int8", "--output", "bf16", "--block-size", "2",
                        "--stages", "2"])
#: Wall-time bound of one run (build plus three failing tests); a hang would take forever
#: (before the bounds, the bulk test waited up to 131 million cycles).
WALL_LIMIT_S = 180
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
    from tb.runner import BUILD, run_cocotb

    name, pattern, replacement, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    unit, argv = {unit!r}, {argv!r}
    sources, top, sidecar = prepare_unit(unit, argv, BUILD / name / "rtl")
    unit_v = sources[1]
    text, n = re.subn(pattern, replacement, unit_v.read_text(), count=1)
    assert n == 1, f"plant {{name}}: pattern {{pattern!r}} not found in {{unit_v}}"
    unit_v.write_text(text)
    run_cocotb(sources=sources, toplevel=top, test_module="tb.dequantizer", name=name,
               seed=seed, build_args=VERILATOR_ARGS,
               extra_env={{"MX_SIDECAR": sidecar, "MX_CONFIG": name, "MX_BLOCKS": 50,
                          "MX_SEED": seed, "MX_FULL": 0, "MX_SWEEPS": 1}})
""").format(unit=UNIT[0], argv=UNIT[1])


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_deadlocked_unit_fails_within_seconds(plant, seed):
    pattern, replacement = PLANTS[plant]
    name = f"hang_{plant}"
    t0 = time.monotonic()
    try:
        run = subprocess.run([sys.executable, "-c", SCRIPT, name, pattern, replacement,
                              str(seed)], cwd=ROOT, capture_output=True, text=True,
                             timeout=HANG_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{plant}: the testbench hung (no result within {HANG_TIMEOUT_S} s)")
    wall = time.monotonic() - t0
    log = run.stdout + run.stderr
    print(f"{plant}: {wall:.0f} s, exit status {run.returncode}")
    assert run.returncode != 0, f"{plant}: the deadlocked unit passed\n{log[-3000:]}"
    assert re.search(r"TESTS=3 PASS=0 FAIL=3", log), log[-3000:]
    # stream and reset_in_traffic: the drain wait, with what was sent and received
    drains = re.findall(r"timeout waiting for a batch to drain: no transfer for \d+ cycles "
                        r"\(latency \d+\), after \d+ cycles: (\d+) of (\d+) blocks sent, "
                        r"(\d+) of (\d+) outputs received", log)
    assert len(drains) >= 2, log[-3000:]
    for sent, queued, received, expected in drains:
        assert int(received) == 0 and int(expected) > 0
        assert int(sent) <= int(queued)
        if plant == "i_ready_stuck_low":
            assert int(sent) == 0
    # bulk: the wait for `done`, with the counts
    assert re.search(r"bulk: no `done` within \d+ cycles \(latency \d+, idle 0/256, stall "
                     r"0/256\): \d+ of \d+ blocks sent, 0 of \d+ outputs received", log), \
        log[-3000:]
    assert wall < WALL_LIMIT_S, f"{plant}: the failure took {wall:.0f} s"


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
