"""Bit-exact simulation of the MX quantizer (cocotb on Verilator) against golden.

The default set covers every element format, every input format, every rounding and scale
mode (runtime fields: one build serves all modes; the bulk sets run with a random mode per
block) and block sizes 32 and 8; ``SIM_FULL=1``
runs the whole matrix (formats x inputs x block sizes 2..64 x fixed/runtime modes x stages).
Each configuration is one Verilator build of the unit inside its bulk wrapper; the cocotb
module ``tb.quantizer`` runs the stream tests (idle cycles, backpressure, reset) and the bulk
sweeps on it.  Knobs: SEED, BLOCKS (blocks per random run), WAVES=1.
"""

from __future__ import annotations

import os

import pytest

import golden
from tb.bulk import VERILATOR_ARGS, prepare_unit
from tb.report import SUMMARY_ENV, read_summary
from tb.runner import BUILD, run_cocotb

pytestmark = pytest.mark.sim

# (format, input, block size, rounding, scale mode, stages)
DEFAULT = [
    ("fp8_e4m3", "fp32", 32, "runtime", "runtime", 15),
    ("fp8_e5m2", "fp16", 8, "runtime", "runtime", 7),
    ("fp6_e3m2", "fp32", 8, "runtime", "runtime", 2),
    ("fp6_e2m3", "bf16", 8, "runtime", "runtime", 9),
    ("fp4_e2m1", "bf16", 8, "runtime", "runtime", 1),
    ("int8", "fp32", 8, "runtime", "runtime", 5),
]


def _full():
    configs = []
    for i, fmt in enumerate(golden.FORMATS):
        for j, inp in enumerate(("fp32", "bf16", "fp16")):
            for n, k in enumerate((2, 4, 8, 16, 32, 64)):
                stages = 1 + (i + j + n) % (11 + n)  # 1..10 + log2(k)
                configs.append((fmt, inp, k, "runtime", "runtime", stages))
            for r in ("rne", "rna", "rtz", "stochastic"):
                for s in ("floor", "rceil"):
                    configs.append((fmt, inp, 4, r, s, 1 + (3 * (i + j)) % 12))
    return configs


CONFIGS = _full() if os.environ.get("SIM_FULL") == "1" else DEFAULT


def config_id(c):
    fmt, inp, k, r, s, st = c
    return f"{fmt}-{inp}-k{k}-{r}-{s}-s{st}"


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_quantizer_sim(config, seed, sim_record):
    fmt, inp, k, r, s, stages = config
    argv = ["--format", fmt, "--input", inp, "--block-size", str(k), "--rounding", r,
            "--scale-mode", s, "--stages", str(stages)]
    name = f"quantizer_{config_id(config)}"
    sources, top, sidecar = prepare_unit("quantizer", argv, BUILD / name / "rtl")
    summary = BUILD / name / f"summary-{seed}.jsonl"
    summary.unlink(missing_ok=True)
    try:
        run_cocotb(sources=sources, toplevel=top, test_module="tb.quantizer", name=name,
                   seed=seed, waves=os.environ.get("WAVES") == "1", build_args=VERILATOR_ARGS,
                   extra_env={"MX_SIDECAR": sidecar, "MX_CONFIG": f"quantizer {config_id(config)}",
                              "MX_BLOCKS": os.environ.get("BLOCKS") or 200, "MX_SEED": seed,
                              "MX_ALL_MODES": os.environ.get("SIM_FULL") or "0",
                              SUMMARY_ENV: summary})
    finally:
        for row in read_summary(summary):
            sim_record(**row)
