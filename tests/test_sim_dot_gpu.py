"""Bit-exact RTL regression of the dot units' GPU accumulation modes ``tcgen05.mxf8f6f4``,
``tcgen05.mxf4`` and ``tcgen05.mxf4nvf4`` with E8M0 scales (MXDot one block per step,
MXDotGeneral a step per 64 elements of a run) and, nvfp4, UE4M3 ones (cocotb on
Verilator vs ``golden.dot_blocks(..., accumulation=...)``; MXDotGeneral nvfp4 with the
tensor scales' epilogue after the steps, as golden's ``dot``).

The same testbench as ``tests/test_sim_dot.py`` (``tb.dot``: stream, reset in traffic,
backpressure, bulk), which reads the mode from the sidecar: golden's results in the mode, the
mode's directed vectors (:mod:`tb.dot_gpu`: a term truncated away, negative terms truncated
up, the -133 floor, cancellation wiping out ``c``, FLT_MAX where RNE overflows, Inf at
``2^128``, +0 for every zero, NaN 0x7FFFFFFF) and its cover point ``gpu``
(:mod:`tb.coverage.dot_gpu`); nvfp4 runs the NVFP4 dot model (``tb.dot_nvfp4``: its
code-pair sweep over a spread of scale bytes, the GPU mode's results and vectors,
:func:`tb.dot_gpu.nvfp4_gpu_directed_blocks`, and bins; in MXDotGeneral its runs, among
them :func:`tb.dot_gpu.nvfp4_gpu_directed_runs`, and the ``steps`` bins).  ``make sim``: one small
configuration per mode and unit; ``SIM_FULL=1`` adds 8-bit pairs (every code pair swept),
mixed pairs, shallower pipelines, DSP products and MXDotGeneral nvfp4 (2.5 min here with its
Verilator build).
Knobs: SEED, BLOCKS, WAVES, SIM_FULL (:mod:`tb.options`).
"""

from __future__ import annotations

import pytest

from tb.options import env_flag, env_int
from tb.runner import run_unit

FULL = env_flag("SIM_FULL")
F8F6F4, F4, NVF4 = "tcgen05.mxf8f6f4", "tcgen05.mxf4", "tcgen05.mxf4nvf4"

# (mode, unit, fmt_a, fmt_b, k, stages or None (the default), contexts, sweeps[, multipliers])
DEFAULT = [
    (F8F6F4, "dot", "fp4_e2m1", "fp4_e2m1", 32, None, 1, True),
    (F8F6F4, "dot-general", "fp4_e2m1", "fp6_e2m3", 32, None, 4, False),
    (F4, "dot", "fp4_e2m1", "fp4_e2m1", 32, None, 1, True),
    (NVF4, "dot", "fp4_e2m1", "fp4_e2m1", 16, None, 1, True),
    (NVF4, "dot", "nvfp4", "nvfp4", 16, 4, 1, True),
    (F4, "dot-general", "fp4_e2m1", "fp4_e2m1", 32, 4, 2, False),
]
FULL_EXTRA = [
    (F8F6F4, "dot", "fp8_e4m3", "fp8_e4m3", 32, None, 1, True),
    (F8F6F4, "dot", "fp8_e5m2", "fp6_e3m2", 32, 5, 1, True),
    (F8F6F4, "dot", "fp6_e2m3", "fp8_e4m3", 32, 9, 1, True, "dsp"),
    (F8F6F4, "dot-general", "fp8_e4m3", "fp8_e4m3", 32, None, 16, False),
    (F8F6F4, "dot-general", "fp8_e5m2", "fp4_e2m1", 32, 3, 2, False),
    (F4, "dot", "fp4_e2m1", "fp4_e2m1", 32, 4, 1, True, "dsp"),
    (NVF4, "dot", "fp4_e2m1", "fp4_e2m1", 32, 2, 1, True),
    (NVF4, "dot", "nvfp4", "nvfp4", 16, None, 1, True),
    (NVF4, "dot", "nvfp4", "nvfp4", 16, 3, 1, True, "dsp"),
    (F4, "dot-general", "fp4_e2m1", "fp4_e2m1", 32, None, 16, False),
    (NVF4, "dot-general", "fp4_e2m1", "fp4_e2m1", 16, None, 4, False),
    (NVF4, "dot-general", "fp4_e2m1", "fp4_e2m1", 32, 3, 2, False, "dsp"),
    (NVF4, "dot-general", "nvfp4", "nvfp4", 16, 4, 2, False),
]
CONFIGS = DEFAULT + FULL_EXTRA if FULL else DEFAULT


def _multipliers(c) -> str:
    return c[8] if len(c) > 8 else "lut"


def config_id(c) -> str:
    mode, unit, fmt_a, fmt_b, k, stages, contexts, *_ = c
    return (f"{unit}-{fmt_a}-{fmt_b}-k{k}-s{stages or 'default'}"
            + (f"-c{contexts}" if unit == "dot-general" else "")
            + ("" if _multipliers(c) == "lut" else f"-{_multipliers(c)}")
            + "-" + mode.replace(".", "_"))


def unit_args(c) -> tuple[str, list[str]]:
    mode, unit, fmt_a, fmt_b, k, stages, contexts, *_ = c
    return unit, ["--format-a", fmt_a, "--format-b", fmt_b, "--block-size", str(k),
                  "--accumulation", mode,
                  *(["--stages", str(stages)] if stages else []),
                  *(["--contexts", str(contexts)] if unit == "dot-general" else []),
                  *(["--multipliers", _multipliers(c)] if _multipliers(c) != "lut" else [])]


@pytest.mark.sim
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_dot_gpu_rtl_matches_golden(config, seed, sim_record, sim_coverage):
    unit, argv = unit_args(config)
    # nvfp4 (UE4M3 scales): the NVFP4 dot model (tb.dot_nvfp4), its results in the mode
    module = "tb.dot_nvfp4" if config[2] == "nvfp4" else "tb.dot"
    run_unit(unit, argv, test_module=module, name=config_id(config), seed=seed,
             label=f"{config_id(config)} ({config[0]})",
             blocks=env_int("BLOCKS", 20000 if FULL else 1000), full=FULL,
             sweeps=config[7], exhaustive=False, record=sim_record, coverage=sim_coverage)
