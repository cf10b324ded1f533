"""Bit-exact RTL regression of the MX GEMM tile (cocotb on Verilator vs golden).

One Verilator build per configuration runs the standard tests of ``tb.gemm`` (stream, reset
in traffic, bulk with the throughput check); every output of a run of K blocks is compared
bit for bit with ``golden.matmul`` of its rows' and columns' blocks, and the run's
coverage must hit every defined bin: the tile's points (K of one block, long K,
cancellation to +0, NaN, Inf, interleaved contexts), nvfp4 with the epilogue its bins
(``epilogue``: NaN and subnormal results among them, the directed runs of
:meth:`tb.gemm.GemmModel.epilogue_runs`) and, with an MX output, the output quantizer's
(``mx.*``: zero and NaN blocks, scale clamps, saturation, ties, ...; the testbench's
directed runs aim at them, :meth:`tb.gemm.GemmModel.quantizer_runs`).

``make sim``: one small tile (2 x 2 lanes, k = 4, fp8_e4m3); ``SIM_FULL=1`` adds others
(mixed formats, one row or one column, fewer stages, fewer contexts, the accumulators in
memories, MX outputs of every element format: each row's results quantized as one block,
expected from ``golden.matmul`` with ``out_format`` and ``out_block_size`` = cols; the GPU
accumulation modes; nvfp4 operands with the tensor scales' epilogue, fp32 and MX out).
Knobs: SEED, BLOCKS, WAVES, SIM_FULL (:mod:`tb.options`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tb.coverage.model import COUNTS_NAME
from tb.options import env_flag, env_int
from tb.runner import run_unit

FULL = env_flag("SIM_FULL")

# (fmt_a, fmt_b, rows, cols, k, stages (None: every boundary), contexts (None: the default)
#  [, out_format (MX output, or None) [, accumulators [, accumulation]]])
DEFAULT = [("fp8_e4m3", "fp8_e4m3", 2, 2, 4, None, None)]
FULL_EXTRA = [
    ("fp4_e2m1", "fp4_e2m1", 2, 4, 8, None, None),
    ("int8", "fp6_e2m3", 1, 3, 4, 6, 8),
    ("fp8_e5m2", "fp8_e4m3", 3, 1, 2, 4, 2),
    ("e3m3", "int4", 2, 2, 4, None, None),
    ("fp8_e4m3", "fp8_e4m3", 2, 4, 4, None, None, "fp8_e4m3", "memory"),
    ("fp4_e2m1", "int8", 1, 2, 8, 5, 8, "fp4_e2m1"),
    ("fp8_e4m3", "fp8_e4m3", 2, 2, 4, 6, 8, "fp8_e5m2", "memory"),
    ("fp8_e4m3", "fp6_e2m3", 1, 2, 4, 6, 8, "fp6_e3m2"),
    ("fp6_e3m2", "fp8_e4m3", 2, 2, 2, 6, 8, "fp6_e2m3"),
    ("fp8_e5m2", "fp8_e5m2", 1, 4, 4, 6, 8, "int8"),
    ("fp8_e4m3", "fp8_e4m3", 2, 2, 4, None, None, None, "memory"),
    ("fp4_e2m1", "fp8_e4m3", 1, 2, 32, 6, 8, None, None, "tcgen05.mxf8f6f4"),
    ("fp4_e2m1", "fp4_e2m1", 1, 2, 32, 6, 8, None, None, "tcgen05.mxf4"),
    ("fp4_e2m1", "fp4_e2m1", 2, 1, 16, 5, 4, None, "memory", "tcgen05.mxf4nvf4"),
    # nvfp4 (UE4M3 scales, the tensor scales' epilogue on alpha): fp32 out, and MX out
    ("nvfp4", "nvfp4", 2, 2, 16, None, None),
    ("nvfp4", "nvfp4", 1, 2, 16, 6, 8, "fp8_e4m3", "memory"),
    ("nvfp4", "nvfp4", 2, 1, 16, 6, 8, None, "memory", "tcgen05.mxf4nvf4"),
]
CONFIGS = DEFAULT + FULL_EXTRA if FULL else DEFAULT


def _options(c):
    """A configuration's fields, the optional ones filled in."""
    fmt_a, fmt_b, rows, cols, k, stages, contexts, *rest = c
    out, accumulators, accumulation = (*rest, None, None, None)[:3]
    return fmt_a, fmt_b, rows, cols, k, stages, contexts, out, accumulators, accumulation


def config_id(c) -> str:
    fmt_a, fmt_b, rows, cols, k, stages, contexts, out, accumulators, accumulation = _options(c)
    return (f"gemm-{fmt_a}-{fmt_b}-{rows}x{cols}-k{k}"
            + (f"-s{stages}" if stages else "") + (f"-c{contexts}" if contexts else "")
            + (f"-o{out}" if out else "") + ("-ram" if accumulators == "memory" else "")
            + (f"-{accumulation.replace('.', '_')}" if accumulation else ""))


def unit_args(c) -> list[str]:
    fmt_a, fmt_b, rows, cols, k, stages, contexts, out, accumulators, accumulation = _options(c)
    return ["--format-a", fmt_a, "--format-b", fmt_b, "--rows", str(rows), "--cols", str(cols),
            "--block-size", str(k), *(["--stages", str(stages)] if stages else []),
            *(["--contexts", str(contexts)] if contexts else []),
            *(["--out-format", out] if out else []),
            *(["--accumulators", accumulators] if accumulators else []),
            *(["--accumulation", accumulation] if accumulation else [])]


def _unhit(directory) -> list[str]:
    """The defined bins (the tile's and, with an MX output, its quantizer's ``mx.*``) in a
    run's coverage database that no batch hit."""
    doc = json.loads((Path(directory) / COUNTS_NAME).read_text())
    return [f"{point}.{b}" for point, p in doc["points"].items()
            for b, n in p["hits"].items() if n == 0]


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
