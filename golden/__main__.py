"""``python -m golden``: the golden model's command line.

    python -m golden vectors --unit quantizer --format fp8_e4m3 --count 1000 --seed 1 -o DIR
    python -m golden vectors --unit dot --format fp8_e4m3 --format-b fp4_e2m1 --count 500 -o DIR
"""

from __future__ import annotations

import argparse
import shlex
import sys

from .formats import FORMATS
from .mx import default_block_size
from .vectors import UNITS, generate


def main(argv=None, prog: str = "python -m golden") -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); return the exit status.
    ``prog`` names the command in help and error messages (``mx-hdl`` runs this too)."""
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    v = sub.add_parser("vectors", help="write $readmemh test vectors (inputs + expected)")
    v.add_argument("--unit", required=True, choices=UNITS)
    v.add_argument("--format", required=True,
                   help=f"element format (A side for dot): {', '.join(FORMATS)}, any name "
                   "golden.element_format takes (int4, float8_e4m3, e3m3, e3m4fn_bias5, ...), "
                   "or nvfp4 (UE4M3 scales)")
    v.add_argument("--format-b", help="dot: element format of B (default: --format)")
    v.add_argument("--block-size", type=int, default=None,
                   help="k, a power of two 2..64 (default: 32; nvfp4: 16)")
    v.add_argument("--input", default="fp32",
                   help="quantizer input: fp32, bf16, fp16 (default: %(default)s)")
    v.add_argument("--output-format", dest="output", default="fp32",
                   help="dequantizer output: fp32, bf16, fp16 (default: %(default)s)")
    v.add_argument("--output", dest="output", help=argparse.SUPPRESS)  # deprecated spelling
    v.add_argument("--rounding", default="rne",
                   help="quantizer: rne, rna, rtz, stochastic (default: %(default)s)")
    v.add_argument("--scale-mode", default="floor",
                   help="quantizer: floor, rceil (default: %(default)s)")
    v.add_argument("--random-bits", type=int, default=8,
                   help="quantizer: R for stochastic (default: %(default)s)")
    v.add_argument("--tensor-scale", default=None,
                   help="nvfp4: the fp32 tensor scale P, or dynamic (default: single level)")
    v.add_argument("--recipe", default="torchao",
                   help="nvfp4 quantizer: torchao or te (default: %(default)s)")
    v.add_argument("--count", type=int, default=1000, help="blocks (default: %(default)s)")
    v.add_argument("--seed", type=int, default=1, help="stimulus seed (default: %(default)s)")
    v.add_argument("-o", "--out-dir", required=True, help="directory to write")
    a = p.parse_args(argv)
    if a.block_size is None:
        a.block_size = default_block_size(a.format)
    if not 2 <= a.block_size <= 64 or a.block_size & (a.block_size - 1):
        print(f"{prog}: error: --block-size must be a power of two in 2..64, got "
              f"{a.block_size}", file=sys.stderr)
        return 2
    try:
        out = generate(a.unit, a.out_dir, count=a.count, seed=a.seed, fmt=a.format,
                       fmt_b=a.format_b, block_size=a.block_size, input_format=a.input,
                       output_format=a.output, rounding=a.rounding, scale_mode=a.scale_mode,
                       random_bits=a.random_bits, tensor_scale=a.tensor_scale,
                       recipe=a.recipe,
                       command=f"{prog} " + shlex.join(sys.argv[1:] if argv is None else argv))
    except (ValueError, TypeError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # -o names a path that cannot be a directory
        print(f"{prog}: error: cannot write into {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    print(f"wrote {a.count} {a.unit} vectors to {out}/ (README.txt describes the files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
