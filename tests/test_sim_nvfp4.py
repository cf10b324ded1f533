"""Bit-exact simulation of the NVFP4 dequantizer and quantizer (cocotb on Verilator) against
golden.

Default (``make sim``): two level k = 16 -> fp32 at the default depth and single level
k = 16 -> bf16 at 3 stages, each on every code at every scale byte (under each directed P)
plus random traffic, reset in traffic and backpressure; ``SIM_FULL=1`` adds every output
format x level x block sizes 16 and 32 x a spread of depths.  The cocotb module
``tb.nvfp4_dequantizer`` runs the standard tests (:mod:`tb.standard_tests`).  The quantizer
(``tb.nvfp4_quantizer``): single level from fp32 (two blocks a beat) and bf16, two level from
fp32, k = 16, in ``make sim``; ``SIM_FULL=1`` adds every input format x level at k = 2, 16 and
32, two blocks a beat from bf16 and fp16, and the lane products in MULT18X18D blocks
(``--multipliers mult18x18d``).  Knobs: SEED, BLOCKS, WAVES and SIM_FULL
(:mod:`tb.options`).
"""

from __future__ import annotations

import pytest

from tb.options import env_flag, env_int
from tb.runner import run_unit

pytestmark = pytest.mark.sim

FULL = env_flag("SIM_FULL")

# (levels, output format, block size, stages; None: the default depth)
DEFAULT = [(2, "fp32", 16, None), (1, "bf16", 16, 3)]
FULL_CONFIGS = [(levels, out, k, st)
                for levels, depths in ((1, (1, 4, 7)), (2, (2, 6, 12)))
                for out in ("fp32", "bf16", "fp16") for k in (16, 32) for st in depths]

CONFIGS = DEFAULT + FULL_CONFIGS if FULL else DEFAULT


def config_id(c):
    levels, out, k, st = c
    return f"l{levels}-{out}-k{k}-s{'default' if st is None else st}"


def _generate_args(unit: str, io_option: str, config) -> tuple[str, list[str]]:
    """``unit`` and its ``python -m hw generate`` arguments for a configuration (levels, the
    format of ``io_option``, block size, stages)."""
    levels, fmt, k, stages = config
    argv = ["--levels", str(levels), io_option, fmt, "--block-size", str(k)]
    return unit, argv + ([] if stages is None else ["--stages", str(stages)])


def unit_args(config) -> tuple[str, list[str]]:
    """The unit and its ``python -m hw generate`` arguments for a configuration."""
    return _generate_args("nvfp4-dequantizer", "--output-format", config)


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_nvfp4_dequantizer_sim(config, seed, sim_record, sim_coverage):
    unit, argv = unit_args(config)
    run_unit(unit, argv, test_module="tb.nvfp4_dequantizer",
             name=f"nvfp4_dequantizer_{config_id(config)}", seed=seed,
             label=f"nvfp4-dequantizer {config_id(config)}", blocks=env_int("BLOCKS", 200),
             full=FULL, record=sim_record, coverage=sim_coverage)


# -- the NVFP4 quantizer (tb.nvfp4_quantizer) ------------------------------------------------
# (levels, input format, block size, stages; None: the default depth[, blocks a beat[,
# multipliers]])
QUANT_DEFAULT = [(1, "fp32", 16, None, 2), (1, "bf16", 16, 6), (2, "fp32", 16, None)]
QUANT_FULL = [(levels, inp, k, st)
              for levels, depths in ((1, (1, 9, None)), (2, (3, 20, None)))
              for inp in ("fp32", "bf16", "fp16") for k in (2, 16) for st in depths]
QUANT_FULL += [(levels, inp, 32, None) for levels in (1, 2) for inp in ("fp32", "bf16", "fp16")]
QUANT_FULL += [(1, "fp32", 16, None), (2, "bf16", 16, None, 2), (2, "fp16", 16, 9, 2)]
# the lane products in MULT18X18D blocks (with the block's model): four a lane (fp32) and
# two (bf16, fp16); both DSP registers used, the input one alone, none; two blocks a beat
QUANT_FULL += [(2, "fp32", 16, None, 1, "mult18x18d"), (1, "bf16", 16, None, 1, "mult18x18d"),
               (2, "fp16", 16, 12, 1, "mult18x18d"), (2, "fp32", 4, 3, 2, "mult18x18d")]
QUANT_CONFIGS = QUANT_DEFAULT + QUANT_FULL if FULL else QUANT_DEFAULT


def _extras(c) -> tuple[int, str]:
    """A configuration's blocks a beat and multipliers (1 and "lut" where not given)."""
    rest = tuple(c[4:])
    return (rest[0] if rest else 1), (rest[1] if len(rest) > 1 else "lut")


def quantizer_id(c):
    """The dequantizer's fields, ``-x2`` for two blocks a beat and ``-<multipliers>`` for
    other lane products than LUTs."""
    blocks, multipliers = _extras(c)
    return (config_id(c[:4]) + ("-x2" if blocks == 2 else "")
            + ("" if multipliers == "lut" else f"-{multipliers}"))


def quantizer_args(config) -> tuple[str, list[str]]:
    """The quantizer and its ``python -m hw generate`` arguments for a configuration."""
    unit, argv = _generate_args("nvfp4-quantizer", "--input", config[:4])
    blocks, multipliers = _extras(config)
    return unit, (argv + (["--blocks", str(blocks)] if config[4:] else [])
                  + ([] if multipliers == "lut" else ["--multipliers", multipliers]))


@pytest.mark.parametrize("config", QUANT_CONFIGS, ids=quantizer_id)
def test_nvfp4_quantizer_sim(config, seed, sim_record, sim_coverage):
    unit, argv = quantizer_args(config)
    run_unit(unit, argv, test_module="tb.nvfp4_quantizer",
             name=f"nvfp4_quantizer_{quantizer_id(config)}", seed=seed,
             label=f"nvfp4-quantizer {quantizer_id(config)}", blocks=env_int("BLOCKS", 200),
             full=FULL, record=sim_record, coverage=sim_coverage)
