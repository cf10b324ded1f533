"""Bit-exact simulation of the MX dequantizer (cocotb on Verilator) against golden.

Default: every element format, every output format, block sizes 32 and 8, each build checked
on every code at every scale plus random traffic; ``SIM_FULL=1`` runs formats x outputs x
block sizes 2..64 x stages.  Knobs: SEED, BLOCKS, WAVES=1.
"""

from __future__ import annotations

import os

import pytest

import golden
from tb.bulk import VERILATOR_ARGS, prepare_unit
from tb.report import SUMMARY_ENV, read_summary
from tb.runner import BUILD, run_cocotb

pytestmark = pytest.mark.sim

# (format, output, block size, stages)
DEFAULT = [
    ("fp8_e4m3", "fp32", 32, 3),
    ("fp8_e5m2", "fp16", 8, 3),
    ("fp6_e3m2", "bf16", 8, 1),
    ("fp6_e2m3", "fp16", 8, 4),
    ("fp4_e2m1", "fp32", 8, 3),
    ("int8", "bf16", 8, 2),
]


def _full():
    out = []
    for i, fmt in enumerate(golden.FORMATS):
        for j, o in enumerate(("fp32", "bf16", "fp16")):
            for n, k in enumerate((2, 4, 8, 16, 32, 64)):
                out.append((fmt, o, k, 1 + (i + j + n) % 4))
    return out


CONFIGS = _full() if os.environ.get("SIM_FULL") == "1" else DEFAULT


def config_id(c):
    fmt, o, k, st = c
    return f"{fmt}-{o}-k{k}-s{st}"


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_dequantizer_sim(config, seed, sim_record):
    fmt, o, k, stages = config
    argv = ["--format", fmt, "--output", o, "--block-size", str(k), "--stages", str(stages)]
    name = f"dequantizer_{config_id(config)}"
    sources, top, sidecar = prepare_unit("dequantizer", argv, BUILD / name / "rtl")
    summary = BUILD / name / f"summary-{seed}.jsonl"
    summary.unlink(missing_ok=True)
    try:
        run_cocotb(sources=sources, toplevel=top, test_module="tb.dequantizer", name=name,
                   seed=seed, waves=os.environ.get("WAVES") == "1", build_args=VERILATOR_ARGS,
                   extra_env={"MX_SIDECAR": sidecar,
                              "MX_CONFIG": f"dequantizer {config_id(config)}",
                              "MX_BLOCKS": os.environ.get("BLOCKS") or 200, "MX_SEED": seed,
                              SUMMARY_ENV: summary})
    finally:
        for row in read_summary(summary):
            sim_record(**row)
