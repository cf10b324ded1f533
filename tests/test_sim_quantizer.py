"""Bit-exact simulation of the MX quantizer (cocotb on Verilator) against golden.

The default set covers every element format, every input format, every rounding and scale mode
(runtime fields: one build serves all modes; the bulk sets run with a random mode per block), block
sizes 32, 16 and 8, and both shapes of the block-max tree (radix-4 levels split into comparison
and select sections at depth, unsplit at the short depths, ``hw.quantizer.max_tree_split``; its
first level in decode and norm over exponent fields, or over keys from fp16 and for int8 with
rceil, ``hw.quantizer.exponent_field_tree``); ``SIM_FULL=1`` runs the whole matrix (formats x
inputs x block sizes 2..64 x fixed/runtime modes x stages). Formats beyond OCP's six run the
same tests: :data:`CUSTOM` (a ``finite`` ExMy, an ``ieee`` format, an intN) in ``make sim``,
every member of :data:`CUSTOM_FORMATS` under ``SIM_FULL`` (exhaustively at k = 32). Each
configuration is one Verilator build of the unit inside its bulk wrapper; the cocotb module
``tb.quantizer`` runs the standard tests (:mod:`tb.standard_tests`: stream, reset, bulk) on it.
Knobs: SEED, BLOCKS (blocks per random stream run), WAVES and SIM_FULL (booleans, see
:mod:`tb.options`).
"""

from __future__ import annotations

import depths
import pytest

import golden
from tb.options import env_flag, env_int
from tb.runner import run_unit

pytestmark = pytest.mark.sim

FULL = env_flag("SIM_FULL")

def _argv(fmt, input_format, k, rounding="runtime", scale_mode="runtime") -> list[str]:
    return ["--format", fmt, "--input", input_format, "--block-size", str(k),
            "--rounding", rounding, "--scale-mode", scale_mode]


# (format, input format, block size, rounding, scale mode, stages)
DEFAULT = [
    # the default depth: the split tree
    ("fp8_e4m3", "fp32", 32, "runtime", "runtime",
     depths.build("quantizer", _argv("fp8_e4m3", "fp32", 32)).stages),
    ("fp8_e5m2", "fp16", 8, "runtime", "runtime", 7),
    ("fp6_e3m2", "fp32", 8, "runtime", "runtime", 2),
    # the unsplit block-max tree at its deepest (tests/depths.py)
    ("fp6_e2m3", "bf16", 16, "runtime", "runtime",
     depths.unsplit_tree("quantizer", _argv("fp6_e2m3", "bf16", 16), deepest=True)),
    ("fp4_e2m1", "bf16", 8, "runtime", "runtime", 1),
    ("int8", "fp32", 8, "runtime", "runtime", 5),
]

#: Formats beyond OCP's six, one per rule of the family: ``finite`` ExMy, ``ieee`` (Inf and
#: NaN codes), two's-complement intN (``make sim``: CUSTOM; SIM_FULL: CUSTOM_FULL too).
CUSTOM_FORMATS = ("e3m3", "e2m2", "e4m2", "e5m1", "float8_e3m4", "float8_e4m3", "int4")
CUSTOM = [
    ("e3m3", "bf16", 8, "runtime", "runtime", 5),
    ("float8_e4m3", "bf16", 8, "runtime", "runtime", 8),
    ("int4", "bf16", 4, "runtime", "runtime", 3),
]
#: CUSTOM_FULL's k = 32 runtime-mode builds carry the exhaustive element domains
#: (:func:`exhaustive`): every bf16 value at every reachable scale, and the fp32 significand set.
CUSTOM_FULL = [
    *[(f, "bf16", 8, "rne", "floor", 8) for f in CUSTOM_FORMATS],
    *[(f, "bf16", 32, "runtime", "runtime", 4 + i) for i, f in enumerate(CUSTOM_FORMATS)],
    *[(f, "fp32", 32, "runtime", "runtime", 10) for f in CUSTOM_FORMATS],
]


def full_configs():
    """The SIM_FULL matrix (tests/test_sidecar.py validates the sidecar of each)."""
    configs = []
    for i, fmt in enumerate(golden.FORMATS):
        for j, input_format in enumerate(("fp32", "bf16", "fp16")):
            for n, k in enumerate((2, 4, 8, 16, 32, 64)):
                stages = 1 + (i + j + n) % (9 + n)  # 1..8 + log2(k)
                configs.append((fmt, input_format, k, "runtime", "runtime", stages))
            for r in ("rne", "rna", "rtz", "stochastic"):
                for s in ("floor", "rceil"):
                    configs.append((fmt, input_format, 4, r, s, 1 + (3 * (i + j)) % 9))
    return configs + CUSTOM + CUSTOM_FULL


CONFIGS = full_configs() if FULL else DEFAULT + CUSTOM


def config_id(c):
    fmt, input_format, k, r, s, st = c
    return f"{fmt}-{input_format}-k{k}-{r}-{s}-s{st}"


def exhaustive(config) -> bool:
    """Whether a configuration runs the exhaustive element domain (``tb.quantizer``'s
    ``exhaustive_jobs``): in SIM_FULL, the k = 32 runtime-mode build of each format and input
    (runtime modes: one build serves every rounding and scale mode pass)."""
    _, _, k, r, s, _ = config
    return FULL and k == 32 and r == s == "runtime"


def unit_args(config) -> tuple[str, list[str]]:
    """The unit and its ``python -m hw generate`` arguments for a configuration."""
    fmt, input_format, k, r, s, stages = config
    return "quantizer", [*_argv(fmt, input_format, k, r, s), "--stages", str(stages)]


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_quantizer_sim(config, seed, sim_record, sim_coverage):
    unit, argv = unit_args(config)
    run_unit(unit, argv, test_module="tb.quantizer",
             name=f"quantizer_{config_id(config)}", seed=seed,
             label=f"quantizer {config_id(config)}", blocks=env_int("BLOCKS", 200),
             full=FULL, exhaustive=exhaustive(config), record=sim_record,
             coverage=sim_coverage)
