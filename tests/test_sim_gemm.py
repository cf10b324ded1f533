"""Bit-exact RTL regression of the MX GEMM tile (cocotb on Verilator vs golden).

One Verilator build per configuration runs the standard tests of ``tb.gemm`` (stream, reset
in traffic, bulk with the throughput check); every output of a run of K blocks is compared
bit for bit with ``golden.matmul`` of its rows' and columns' blocks, and the run's
coverage must hit every defined bin of the tile's points (K of one block, long K,
cancellation to +0, NaN, Inf, interleaved contexts); the MX output's quantizer bins
(``mx.*``) are reported in the coverage table.

``make sim``: one small tile (2 x 2 lanes, k = 4, fp8_e4m3); ``SIM_FULL=1`` adds others
(mixed formats, one row or one column, fewer stages, fewer contexts, MX outputs: each row's
results quantized as one block, expected from ``golden.matmul`` with ``out_format``).
Knobs: SEED, BLOCKS, WAVES, SIM_FULL (:mod:`tb.options`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tb.coverage.gemm import MX_PREFIX
from tb.coverage.model import COUNTS_NAME
from tb.options import env_flag, env_int
from tb.runner import run_unit

FULL = env_flag("SIM_FULL")

# (fmt_a, fmt_b, rows, cols, k, stages (None: every boundary), contexts (None: the default)
#  [, out_format (MX output)])
DEFAULT = [("fp8_e4m3", "fp8_e4m3", 2, 2, 4, None, None)]
FULL_EXTRA = [
    ("fp4_e2m1", "fp4_e2m1", 2, 4, 8, None, None),
    ("int8", "fp6_e2m3", 1, 3, 4, 6, 8),
    ("fp8_e5m2", "fp8_e4m3", 3, 1, 2, 4, 2),
    ("e3m3", "int4", 2, 2, 4, None, None),
    ("fp8_e4m3", "fp8_e4m3", 2, 4, 4, None, None, "fp8_e4m3"),
    ("fp4_e2m1", "int8", 1, 2, 8, 5, 8, "fp4_e2m1"),
]
CONFIGS = DEFAULT + FULL_EXTRA if FULL else DEFAULT


def config_id(c) -> str:
    fmt_a, fmt_b, rows, cols, k, stages, contexts, *out = c
    return (f"gemm-{fmt_a}-{fmt_b}-{rows}x{cols}-k{k}"
            + (f"-s{stages}" if stages else "") + (f"-c{contexts}" if contexts else "")
            + (f"-o{out[0]}" if out else ""))


def unit_args(c) -> list[str]:
    fmt_a, fmt_b, rows, cols, k, stages, contexts, *out = c
    return ["--format-a", fmt_a, "--format-b", fmt_b, "--rows", str(rows), "--cols", str(cols),
            "--block-size", str(k), *(["--stages", str(stages)] if stages else []),
            *(["--contexts", str(contexts)] if contexts else []),
            *(["--out-format", out[0]] if out else [])]


def _unhit(directory) -> list[str]:
    """The defined bins of the tile's cover points (not the MX output's quantizer bins) in a
    run's coverage database that no batch hit."""
    doc = json.loads((Path(directory) / COUNTS_NAME).read_text())
    return [f"{point}.{b}" for point, p in doc["points"].items()
            if f".{MX_PREFIX}" not in point for b, n in p["hits"].items() if n == 0]


@pytest.mark.sim
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_gemm_rtl_matches_golden(config, seed, sim_record, sim_coverage):
    databases = []

    def coverage(directory):
        sim_coverage(directory)
        databases.append(directory)

    run_unit("gemm", unit_args(config), test_module="tb.gemm", name=config_id(config),
             seed=seed, label=config_id(config).replace("-", " "),
             blocks=env_int("BLOCKS", 4000 if FULL else 600), full=FULL, sweeps=False,
             record=sim_record, coverage=coverage)
    assert databases, "the run wrote no coverage database"
    # the long-run bin needs LONG_RUN blocks in one run: the throughput check's runs
    assert _unhit(databases[-1]) == []
