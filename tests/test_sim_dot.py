"""Bit-exact RTL regression of the MX dot-product units (cocotb on Verilator vs golden).

One Verilator build per configuration runs two cocotb tests (``tb/dot.py``): stream mode
(directed corner cases and random blocks under three flow-control patterns) and bulk mode
(exhaustive one-lane product sweeps where configured, long random runs, throughput checks).

``make sim`` covers every same-format pair, the two mixed default pairs and MXDotGeneral;
``SIM_FULL=1`` (``make sim-full``) adds all 36 format pairs (exhaustively swept), other block
sizes, pipeline depths and context counts, and DotGeneral runs of K = 8192 blocks.
"""

from __future__ import annotations

import json
import os

import pytest

import golden
from hw.dot import DEFAULT_STAGES
from tb.bulk import VERILATOR_ARGS, prepare_unit
from tb.report import SUMMARY_ENV, read_summary
from tb.runner import BUILD, run_cocotb

FULL = bool(os.environ.get("SIM_FULL"))
FMTS = list(golden.FORMATS)


def _blocks(default: int) -> int:
    return int(os.environ.get("BLOCKS") or default)


# (unit, fmt_a, fmt_b, k, stages, contexts, exhaustive)
DEFAULT = [
    *[("dot", f, f, 32 if f.startswith("fp8") else 16, DEFAULT_STAGES, 1, True) for f in FMTS],
    ("dot", "fp8_e4m3", "fp4_e2m1", 32, 4, 1, True),
    ("dot", "int8", "fp6_e2m3", 32, 3, 1, True),
    ("dot-general", "fp8_e4m3", "fp8_e4m3", 32, DEFAULT_STAGES, 16, False),
]
FULL_EXTRA = [
    *[("dot", a, b, 32, 4, 1, True) for a in FMTS for b in FMTS if a != b
      and (a, b) not in {("fp8_e4m3", "fp4_e2m1"), ("int8", "fp6_e2m3")}],
    ("dot", "fp8_e5m2", "fp8_e5m2", 64, 7, 1, False),
    ("dot", "fp4_e2m1", "fp4_e2m1", 2, 1, 1, True),
    ("dot", "int8", "int8", 64, 2, 1, False),
    ("dot-general", "fp8_e5m2", "fp6_e3m2", 16, 2, 2, False),
    ("dot-general", "int8", "int8", 64, 7, 8, False),
    ("dot-general", "fp4_e2m1", "fp4_e2m1", 32, 3, 1, False),
    ("dot-general", "fp8_e4m3", "fp8_e4m3", 32, 4, 4, False),
]
CONFIGS = DEFAULT + (FULL_EXTRA if FULL else [])


def _id(c):
    unit, fa, fb, k, stages, ctx, _ = c
    return f"{unit}-{fa}-{fb}-k{k}-s{stages}" + (f"-c{ctx}" if unit == "dot-general" else "")


@pytest.mark.sim
@pytest.mark.parametrize("config", CONFIGS, ids=[_id(c) for c in CONFIGS])
def test_dot_rtl_matches_golden(config, seed, sim_record):
    unit, fa, fb, k, stages, ctx, exhaustive = config
    argv = ["--format-a", fa, "--format-b", fb, "--block-size", str(k), "--stages", str(stages),
            *(["--contexts", str(ctx)] if unit == "dot-general" else [])]
    name = _id(config)
    sources, top, side = prepare_unit(unit, argv, BUILD / name / "src")
    summary = BUILD / name / "summary.jsonl"
    summary.unlink(missing_ok=True)
    blocks = _blocks(20000 if FULL else 3000)
    cfg = {"unit": unit, "fmt_a": fa, "fmt_b": fb, "k": k, "stages": stages,
           "contexts": ctx, "sidecar": str(side), "blocks": blocks,
           "exhaustive": exhaustive, "full": FULL, "long_k": 8192 if FULL else 1024}
    try:
        run_cocotb(sources=sources, toplevel=top, test_module="tb.dot", name=name, seed=seed,
                   waves=bool(os.environ.get("WAVES")), build_args=VERILATOR_ARGS,
                   extra_env={"MX_DOT": json.dumps(cfg), "MX_DOT_SEED": seed,
                              SUMMARY_ENV: summary})
    finally:
        for row in read_summary(summary):
            sim_record(**row)
