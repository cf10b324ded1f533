"""Bit-exact RTL regression of the MX dot-product units (cocotb on Verilator vs golden).

One Verilator build per configuration runs the stream and bulk tests of ``tb.dot`` (the
standard tests of :mod:`tb.standard_tests` with the dot model): stream mode (directed corner
cases and random blocks under three flow-control patterns) and bulk mode (throughput,
exhaustive one-lane product sweeps where configured, long random runs).

``make sim`` covers every same-format pair, the two mixed default pairs, MXDotGeneral and two
mixed pairs of formats beyond OCP's six (:data:`CUSTOM`: e3m3 x int4, float8_e4m3 x e2m2);
``SIM_FULL=1`` (``make sim-full``) adds all 36 format pairs (exhaustively swept), other block
sizes, pipeline depths and context counts, and DotGeneral runs of K = 8192 blocks.  Knobs:
SEED, BLOCKS (random blocks per bulk run), WAVES and SIM_FULL (booleans, see
:mod:`tb.options`).
"""

from __future__ import annotations

import depths
import pytest

import golden
from hw.cli import units
from tb.options import env_flag, env_int
from tb.runner import run_unit


def default_stages(unit: str, fmt_a: str, fmt_b: str, k: int, multipliers: str = "lut") -> int:
    """The unit's default pipeline depth for a format pair, block size and multipliers (every
    section boundary), from its command line (hw.cli's public API)."""
    return units()[unit].build_from(["--format-a", fmt_a, "--format-b", fmt_b,
                                     "--block-size", str(k),
                                     "--multipliers", multipliers]).stages


FULL = env_flag("SIM_FULL")
FMTS = list(golden.FORMATS)

# (unit, fmt_a, fmt_b, k, stages, contexts, exhaustive[, multipliers]); multipliers "lut"
# unless given
DEFAULT = [
    *[("dot", f, f, k, default_stages("dot", f, f, k), 1, True)
      for f in FMTS for k in [32 if f.startswith("fp8") else 16]],
    ("dot", "fp8_e4m3", "fp4_e2m1", 32, 4, 1, True),
    ("dot", "int8", "fp6_e2m3", 32, 3, 1, True),
    # DSP lane products: every int8 code pair (the widest products) through `*`
    ("dot", "int8", "int8", 8, 4, 1, True, "dsp"),
    # MULT18X18D blocks with both their registers (hw.dsp, its model hw/models/MULT18X18D.v),
    # every int8 code pair
    ("dot", "int8", "int8", 8, default_stages("dot", "int8", "int8", 8, "mult18x18d"), 1, True,
     "mult18x18d"),
    ("dot-general", "fp8_e4m3", "fp8_e4m3", 32,
     default_stages("dot-general", "fp8_e4m3", "fp8_e4m3", 32), 16, False),
]
FULL_EXTRA = [
    *[("dot", a, b, 32, 4, 1, True) for a in FMTS for b in FMTS if a != b
      and (a, b) not in {("fp8_e4m3", "fp4_e2m1"), ("int8", "fp6_e2m3")}],
    ("dot", "fp8_e5m2", "fp8_e5m2", 64, 7, 1, False),
    # the block sum in halves (SPLIT_TREE_BITS) with frame-only tree sections (k = 2)
    ("dot", "fp8_e5m2", "fp8_e5m2", 2, 4, 1, True),
    ("dot", "fp4_e2m1", "fp4_e2m1", 2, 1, 1, True),
    ("dot", "int8", "int8", 64, 2, 1, False),
    ("dot-general", "fp8_e5m2", "fp6_e3m2", 16, 2, 2, False),
    ("dot-general", "int8", "int8", 64, 7, 8, False),
    ("dot-general", "fp4_e2m1", "fp4_e2m1", 32, 3, 1, False),
    ("dot-general", "fp8_e4m3", "fp8_e4m3", 32, 4, 4, False),
    # MULT18X18D blocks at depths where one, the other or neither of their registers is used
    # (the fewest such stages, from the unit's sections: tests/depths.py)
    *[("dot", "fp8_e4m3", "fp8_e4m3", 32,
       depths.dsp_registers("dot", ["--format", "fp8_e4m3", "--block-size", "32",
                                    "--multipliers", "mult18x18d"], inputs, output),
       1, True, "mult18x18d")
      for inputs, output in ((False, False), (True, False), (False, True))],
    ("dot-general", "fp6_e2m3", "int8", 16, 17, 4, False, "mult18x18d"),
]
#: Mixed pairs of formats beyond OCP's six (``finite`` ExMy x intN, ``ieee`` x ``finite``),
#: every code pair swept (``make sim``: CUSTOM; SIM_FULL: CUSTOM_FULL too).
CUSTOM = [
    ("dot", "e3m3", "int4", 4, default_stages("dot", "e3m3", "int4", 4), 1, True),
    ("dot-general", "float8_e4m3", "e2m2", 4,
     default_stages("dot-general", "float8_e4m3", "e2m2", 4), 2, False),
]
CUSTOM_FULL = [
    ("dot", "float8_e4m3", "e2m2", 4, default_stages("dot", "float8_e4m3", "e2m2", 4), 1, True),
    ("dot-general", "e3m3", "int4", 4, default_stages("dot-general", "e3m3", "int4", 4), 2,
     False),
    ("dot", "float8_e3m4", "e5m1", 32, 4, 1, True),
    ("dot", "e4m2", "int4", 32, 4, 1, True),
]

#: The SIM_FULL matrix (tests/test_sidecar.py validates the sidecar of each).
FULL_CONFIGS = DEFAULT + FULL_EXTRA + CUSTOM + CUSTOM_FULL
CONFIGS = FULL_CONFIGS if FULL else DEFAULT + CUSTOM


def multipliers(c) -> str:
    return c[7] if len(c) > 7 else "lut"


def config_id(c):
    unit, fmt_a, fmt_b, k, stages, contexts, *_ = c
    return (f"{unit}-{fmt_a}-{fmt_b}-k{k}-s{stages}"
            + (f"-c{contexts}" if unit == "dot-general" else "")
            + ("" if multipliers(c) == "lut" else f"-{multipliers(c)}"))


def label(c):
    unit, fmt_a, fmt_b, k, stages, contexts, *_ = c
    return (f"{unit} {fmt_a} x {fmt_b} k={k} s={stages}"
            + (f" ctx={contexts}" if unit == "dot-general" else "")
            + ("" if multipliers(c) == "lut" else f" {multipliers(c)}"))


def unit_args(config) -> tuple[str, list[str]]:
    """The unit and its ``python -m hw generate`` arguments for a configuration."""
    unit, fmt_a, fmt_b, k, stages, contexts, *_ = config
    return unit, ["--format-a", fmt_a, "--format-b", fmt_b, "--block-size", str(k),
                  "--stages", str(stages),
                  *(["--contexts", str(contexts)] if unit == "dot-general" else []),
                  *(["--multipliers", multipliers(config)]
                    if multipliers(config) != "lut" else [])]


@pytest.mark.sim
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_dot_rtl_matches_golden(config, seed, sim_record, sim_coverage):
    unit, argv = unit_args(config)
    exhaustive = config[6]
    run_unit(unit, argv, test_module="tb.dot", name=config_id(config), seed=seed,
             label=label(config), blocks=env_int("BLOCKS", 20000 if FULL else 3000),
             full=FULL, sweeps=exhaustive, exhaustive=FULL and exhaustive and unit == "dot",
             record=sim_record, coverage=sim_coverage)
