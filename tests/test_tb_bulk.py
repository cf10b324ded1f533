"""The bulk wrapper around a real generated unit: it lints, and a batch run through it under
``verilator --binary`` (the stand-alone ``<dut>_bulk_main`` top, no cocotb) comes back bit for
bit as golden expects, with gaps and stalls; a planted wrong expectation is reported as a
mismatch, and a short stimulus file fails the run.

These replace tests that looked for the template's own text, which no defect could fail.
"""

from __future__ import annotations

import json
import logging
import subprocess

import numpy as np
import pytest

from tb.bulk import VERILATOR_ARGS, bulk_wrapper, prepare_unit
from tb.dequantizer import DequantizerModel
from tb.standard_tests import UnitConfig
from tb.verilator import verilator_environ, verilator_executable

#: A small unit: the build takes seconds, the batch exercises every output lane.
UNIT = ("dequantizer", ["--format", "fp4_e2m1", "--output", "bf16", "--block-size", "2",
                        "--stages", "1"])


def _prepare(tmp_path):
    sources, top, sidecar_path = prepare_unit(*UNIT, tmp_path / "rtl")
    return sources, top, json.loads(sidecar_path.read_text())


def test_wrapper_rejects_a_depth_that_is_not_a_power_of_two():
    with pytest.raises(ValueError, match="power of two"):
        bulk_wrapper("dut", 8, 8, depth=1000)


def test_wrapper_lints_around_a_generated_unit(tmp_path):
    """No error; no warning in the cocotb top (the unit's own width warnings, from Yosys'
    Verilog writer, are tests/test_lint.py's business; the stand-alone top's ``wait (done)``
    draws a spurious WAITCONST)."""
    sources, top, _ = _prepare(tmp_path)
    wrapper = sources[2]
    env = verilator_environ()
    for defines, module in (([], top), (["-DMX_BULK_MAIN"], f"{top}_main")):
        r = subprocess.run([verilator_executable(env), "--lint-only", "-Wno-fatal", "--timing",
                            *defines, "--top-module", module, *map(str, sources[1:])],
                           capture_output=True, text=True, env=env)
        assert r.returncode == 0 and "%Error" not in r.stderr, r.stderr
        if module == top:
            assert wrapper.name not in r.stderr, r.stderr


@pytest.mark.sim
def test_bulk_main_runs_a_batch_bit_exact(tmp_path, seed):
    sources, top, sidecar = _prepare(tmp_path)
    env = verilator_environ()
    exe = verilator_executable(env)
    obj = tmp_path / "obj_dir"
    main = f"{top}_main"
    subprocess.run([exe, "--binary", "-O1", "-Wno-fatal", *VERILATOR_ARGS, "-DMX_BULK_MAIN",
                    "--top-module", main, "-Mdir", str(obj), "-o", main, *map(str, sources)],
                   check=True, capture_output=True, text=True, env=env)
    config = UnitConfig(sidecar=sidecar, seed=seed, label="selftest", blocks=0, full=False,
                        sweeps=False)
    model = DequantizerModel(config)
    batch = model.random_batch(np.random.default_rng(seed), 500)
    stim, out = tmp_path / "stim.bin", tmp_path / "out.bin"
    stim.write_bytes(model.in_layout.to_bin(batch.stim))

    def run(n):
        return subprocess.run([str(obj / main), f"+stim={stim}", f"+out={out}", f"+n={n}",
                               "+idle=64", "+stall=64", f"+seed={seed % 2**31 + 1}"],
                              capture_output=True, text=True, cwd=tmp_path)

    r = run(500)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"500 payloads through {sidecar['module']}" in r.stdout
    got = model.out_layout.from_bin(out.read_bytes())
    log = logging.getLogger("test_tb_bulk")
    assert batch.check(got, log) == 0

    # A wrong expectation must be caught (and decoded) by the one batch-check loop.
    batch.exp[123, 0] ^= 0x01
    reports = []
    log.addHandler(handler := logging.Handler())
    handler.emit = lambda record: reports.append(record.getMessage())
    try:
        assert batch.check(got, log) == 1
    finally:
        log.removeHandler(handler)
    assert len(reports) == 1 and reports[0].startswith("MISMATCH block 123: scale")

    # One payload more than the stimulus file holds: the wrapper reports a failed load.
    r = run(501)
    assert r.returncode != 0 and "cannot load 501 payloads" in r.stdout + r.stderr
