"""The command-line entry of the GEMM tile: ``python -m hw generate gemm``
(:class:`hw.registry.UnitSpec`)."""

from __future__ import annotations

from ..dot.contexts import STORAGES
from ..dot.units import add_accumulation_option, add_fused_step_options, formats_from_args
from ..registry import UnitSpec, format_help
from .tile import MAX_SIDE, MXGemm

__all__ = ["cli_units"]


def _add_options(p):
    add_fused_step_options(p)
    add_accumulation_option(p)
    p.add_argument("--rows", type=int, default=2, help=f"rows of A per tile (1..{MAX_SIDE})")
    p.add_argument("--cols", type=int, default=2,
                   help=f"columns of B per tile (1..{MAX_SIDE})")
    p.add_argument("--contexts", type=int, default=None,
                   help="accumulation contexts (power of two, 1..64; default: the smallest "
                        "power of two >= the latency, a block per clock)")
    p.add_argument("--accumulators", default="registers",
                   help=f"the fp32 accumulators ({' or '.join(STORAGES)}): flip-flops (the "
                        f"default) or a memory per lane (distributed RAM on ECP5)")
    p.set_defaults(block_size=None)  # 32, or 16 for nvfp4 (fused_step_parameters)
    p.add_argument("--levels", type=int, choices=(1, 2), default=None,
                   help="nvfp4: 2 (default) applies the tensor scales' epilogue "
                        "f(alpha * sum) to every output, alpha the input field of a run's "
                        "last beat; 1 none")
    p.add_argument("--out-format", default=None,
                   help=format_help("MX output: each row's cols results as one block of this "
                                    "element format (default: fp32 results)"))


def _build(args):
    fmt_a, fmt_b = formats_from_args(args)
    return MXGemm(fmt_a, fmt_b, rows=args.rows, cols=args.cols, block_size=args.block_size,
                  contexts=args.contexts, stages=args.stages, multipliers=args.multipliers,
                  accumulators=args.accumulators, out_format=args.out_format,
                  accumulation=args.accumulation, levels=args.levels)


def cli_units() -> list[UnitSpec]:
    return [UnitSpec("gemm", "MX GEMM tile: rows x cols fp32 outputs of A x B, K blocks "
                     "accumulated per output, one block step per clock per lane",
                     _add_options, _build,
                     [["--format", "fp8_e4m3", "--rows", "2", "--cols", "2",
                       "--block-size", "8"],
                      ["--format", "fp8_e4m3", "--rows", "2", "--cols", "2",
                       "--block-size", "8", "--out-format", "fp8_e4m3"],
                      ["--format", "nvfp4", "--rows", "2", "--cols", "2",
                       "--block-size", "16"]])]
