"""Bit-exact simulation of the MX dequantizer (cocotb on Verilator) against golden.

Default: every element format, every output format, block sizes 32 and 8, each build checked
on every code at every scale plus random traffic; ``SIM_FULL=1`` runs formats x outputs x
block sizes 2..64 x stages.  Formats beyond OCP's six (:data:`CUSTOM`: an ``ieee`` format in
``make sim``; every member of :data:`CUSTOM_FORMATS` under ``SIM_FULL``) run the
same tests.  The cocotb module ``tb.dequantizer`` runs the standard tests
(:mod:`tb.standard_tests`).  Knobs: SEED, BLOCKS, WAVES and SIM_FULL (booleans, see
:mod:`tb.options`).
"""

from __future__ import annotations

import pytest

import golden
from tb.options import env_flag, env_int
from tb.runner import run_unit

pytestmark = pytest.mark.sim

FULL = env_flag("SIM_FULL")

# (format, output format, block size, stages)
DEFAULT = [
    ("fp8_e4m3", "fp32", 32, 6),
    ("fp8_e5m2", "fp16", 8, 5),
    ("fp6_e3m2", "bf16", 8, 1),
    ("fp6_e2m3", "fp16", 8, 4),
    ("fp4_e2m1", "fp32", 8, 3),
    ("int8", "bf16", 8, 2),
]

#: Formats beyond OCP's six, one per rule of the family: ``finite`` ExMy, ``ieee`` (Inf and
#: NaN codes), two's-complement intN (``make sim``: CUSTOM; SIM_FULL: CUSTOM_FULL too).
CUSTOM_FORMATS = ("e3m3", "e2m2", "e4m2", "e5m1", "float8_e3m4", "float8_e4m3", "int4")
CUSTOM = [
    ("float8_e3m4", "fp32", 4, 5),
]
CUSTOM_FULL = [
    *[(f, "fp32", 4, 5) for f in CUSTOM_FORMATS],
    *[(f, "fp16", 32, 1 + i % 6) for i, f in enumerate(CUSTOM_FORMATS)],
    ("int4", "bf16", 4, 3),
]


def full_configs():
    """The SIM_FULL matrix (tests/test_sidecar.py validates the sidecar of each)."""
    out = []
    for i, fmt in enumerate(golden.FORMATS):
        for j, output_format in enumerate(("fp32", "bf16", "fp16")):
            for n, k in enumerate((2, 4, 8, 16, 32, 64)):
                out.append((fmt, output_format, k, 1 + (i + j + n) % 6))
    return out + CUSTOM + [c for c in CUSTOM_FULL if c not in CUSTOM]


CONFIGS = full_configs() if FULL else DEFAULT + CUSTOM


def config_id(c):
    fmt, output_format, k, st = c
    return f"{fmt}-{output_format}-k{k}-s{st}"


def unit_args(config) -> tuple[str, list[str]]:
    """The unit and its ``python -m hw generate`` arguments for a configuration."""
    fmt, output_format, k, stages = config
    return "dequantizer", ["--format", fmt, "--output", output_format, "--block-size", str(k),
                           "--stages", str(stages)]


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_dequantizer_sim(config, seed, sim_record, sim_coverage):
    unit, argv = unit_args(config)
    run_unit(unit, argv, test_module="tb.dequantizer",
             name=f"dequantizer_{config_id(config)}", seed=seed,
             label=f"dequantizer {config_id(config)}", blocks=env_int("BLOCKS", 200),
             full=FULL, record=sim_record, coverage=sim_coverage)
