"""Bit-exact simulation of the NVFP4 dot units (cocotb on Verilator) against golden.

Default (``make sim``): MXDot nvfp4 at k = 16, its default depth (every code pair at every
pair of a spread of 14 scale bytes, the directed corner cases and random blocks, reset in
traffic and backpressure), and MXDotGeneral nvfp4 with the epilogue (k = 16, 4 contexts,
4 stages).  ``SIM_FULL=1`` adds every code pair at every scale pair 0x00..0x7F (4,194,304
blocks), other depths and block sizes, MXDotGeneral without the epilogue and at its default
depth.  The cocotb module is ``tb.dot_nvfp4`` (the standard tests, :mod:`tb.standard_tests`).
Knobs: SEED, BLOCKS, WAVES and SIM_FULL (:mod:`tb.options`).
"""

from __future__ import annotations

import pytest

from tb.options import env_flag, env_int
from tb.runner import run_unit

pytestmark = pytest.mark.sim

FULL = env_flag("SIM_FULL")

# (unit, k, stages (None: default), contexts, levels)
DEFAULT = [("dot", 16, None, 1, 1), ("dot-general", 16, 4, 4, 2)]
FULL_EXTRA = [("dot", 16, 1, 1, 1), ("dot", 32, 5, 1, 1), ("dot", 2, 3, 1, 1),
              ("dot-general", 16, None, 16, 2), ("dot-general", 16, 3, 2, 1)]
CONFIGS = DEFAULT + FULL_EXTRA if FULL else DEFAULT


def config_id(c):
    unit, k, stages, contexts, levels = c
    return (f"{unit}-nvfp4-k{k}-s{'default' if stages is None else stages}"
            + (f"-c{contexts}-l{levels}" if unit == "dot-general" else ""))


def unit_args(config) -> tuple[str, list[str]]:
    """The unit and its ``python -m hw generate`` arguments for a configuration."""
    unit, k, stages, contexts, levels = config
    argv = ["--format", "nvfp4", "--block-size", str(k)]
    if stages is not None:
        argv += ["--stages", str(stages)]
    if unit == "dot-general":
        argv += ["--contexts", str(contexts), "--levels", str(levels)]
    return unit, argv


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_nvfp4_dot_rtl_matches_golden(config, seed, sim_record, sim_coverage):
    unit, argv = unit_args(config)
    run_unit(unit, argv, test_module="tb.dot_nvfp4", name=config_id(config), seed=seed,
             label=config_id(config), blocks=env_int("BLOCKS", 20000 if FULL else 3000),
             full=FULL, sweeps=unit == "dot", exhaustive=FULL and unit == "dot",
             record=sim_record, coverage=sim_coverage)
