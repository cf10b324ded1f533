"""SHA-256 of the Verilog of a broad set of unit configurations, to show that a refactoring
of ``hw`` leaves every unit's Verilog unchanged.

The set is every default configuration of ``python -m hw defaults`` plus :data:`EXTRA`: every
element format through the quantizer (fp32, bf16 and fp16 input, fixed and runtime modes),
the dequantizer for each output type, mixed dot pairs (int8, fp8_e5m2, MULT18X18D products),
non-default ``--stages``, and the GPU accumulation modes and nvfp4 (UE4M3 scales) of MXDot,
MXDotGeneral and the GEMM tile (``--levels`` 1 and 2).  One line per configuration: unit,
options, module, hash.

Usage::

    python scripts/verilog_hashes.py before.txt            # before the change
    python scripts/verilog_hashes.py after.txt --compare before.txt   # exit 1 on a change
    python scripts/verilog_hashes.py q.txt --unit quantizer --jobs 1

Conversion takes 10-25 s per unit (about 15 min for the whole set on one core).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

#: Configurations beyond the defaults, by unit.
EXTRA = {
    "quantizer": [
        ["--format", "fp8_e4m3", "--input", "bf16", "--rounding", "runtime",
         "--scale-mode", "runtime", "--block-size", "8"],
        ["--format", "fp6_e2m3", "--input", "fp16", "--rounding", "stochastic",
         "--random-bits", "4", "--block-size", "16"],
        ["--format", "fp6_e3m2", "--input", "bf16", "--scale-mode", "rceil"],
        ["--format", "fp4_e2m1", "--input", "fp16", "--scale-mode", "rceil", "--block-size", "4"],
        ["--format", "int8", "--input", "fp32", "--scale-mode", "rceil", "--rounding", "runtime",
         "--block-size", "8"],
        ["--format", "int8", "--input", "fp16", "--block-size", "2"],
        ["--format", "fp8_e5m2", "--input", "fp32", "--stages", "5"],
        ["--format", "fp8_e4m3", "--input", "bf16", "--stages", "12"],
        ["--format", "fp8_e4m3", "--input", "fp32", "--block-size", "64",
         "--scale-mode", "runtime", "--stages", "3"],
        ["--format", "fp8_e5m2", "--input", "bf16", "--rounding", "rtz", "--block-size", "2",
         "--scale-mode", "rceil"],
        ["--format", "fp4_e2m1", "--input", "bf16", "--rounding", "rna", "--block-size", "16",
         "--stages", "7"],
        ["--format", "fp6_e2m3", "--input", "fp32", "--block-size", "4", "--stages", "1"],
    ],
    "dequantizer": [
        ["--format", "fp8_e4m3", "--output", "bf16", "--block-size", "8"],
        ["--format", "fp4_e2m1", "--output", "fp16", "--block-size", "4"],
        ["--format", "int8", "--output", "fp16", "--block-size", "4", "--stages", "2"],
        ["--format", "fp6_e3m2", "--output", "bf16", "--block-size", "2", "--stages", "6"],
        ["--format", "fp8_e5m2", "--output", "fp32", "--block-size", "16", "--stages", "3"],
    ],
    "dot": [
        ["--format-a", "int8", "--format-b", "fp8_e5m2", "--block-size", "8"],
        ["--format", "fp8_e5m2", "--block-size", "4", "--stages", "6"],
        ["--format-a", "fp4_e2m1", "--format-b", "int8", "--block-size", "16",
         "--multipliers", "mult18x18d"],
        ["--format", "nvfp4", "--block-size", "16", "--accumulation", "tcgen05.mxf4nvf4"],
        ["--format", "fp4_e2m1", "--accumulation", "tcgen05.mxf4"],
    ],
    "dot-general": [
        ["--format-a", "int8", "--format-b", "fp8_e5m2", "--block-size", "8", "--contexts", "2"],
        ["--format", "fp4_e2m1", "--block-size", "4", "--contexts", "1", "--stages", "4"],
        ["--format", "nvfp4", "--block-size", "16", "--levels", "1"],
        ["--format", "nvfp4", "--block-size", "16", "--accumulation", "tcgen05.mxf4nvf4"],
        ["--format", "nvfp4", "--block-size", "16", "--accumulation", "tcgen05.mxf4nvf4",
         "--levels", "1", "--contexts", "2"],
        ["--format", "fp4_e2m1", "--accumulation", "tcgen05.mxf4", "--contexts", "2"],
        ["--format-a", "fp8_e4m3", "--format-b", "fp6_e2m3", "--accumulation",
         "tcgen05.mxf8f6f4", "--contexts", "2"],
    ],
    "gemm": [
        ["--format", "nvfp4", "--rows", "2", "--cols", "2", "--block-size", "16",
         "--levels", "1"],
        ["--format", "nvfp4", "--rows", "2", "--cols", "2", "--block-size", "16",
         "--accumulation", "tcgen05.mxf4nvf4"],
        ["--format", "nvfp4", "--rows", "1", "--cols", "2", "--block-size", "16",
         "--accumulation", "tcgen05.mxf4nvf4", "--levels", "1"],
        ["--format", "fp4_e2m1", "--rows", "2", "--cols", "1", "--accumulation",
         "tcgen05.mxf4"],
    ],
}


def configurations(only=()) -> list[tuple[str, list[str]]]:
    """(unit, options) of the defaults and :data:`EXTRA`, of the units ``only`` (all: empty)."""
    from hw.registry import units

    return [(name, argv) for name, spec in units().items() if not only or name in only
            for argv in spec.defaults + EXTRA.get(name, [])]


def hash_line(job: tuple[str, list[str]]) -> str:
    """``unit options... module sha256`` of one configuration."""
    from hw.registry import units
    from hw.verilog import to_verilog

    unit, argv = job
    component = units()[unit].build_from(argv)
    digest = hashlib.sha256(to_verilog(component).encode()).hexdigest()
    return f"{unit} {' '.join(argv)} {component.module_name} {digest}"


def changed(before: list[str], after: list[str]) -> list[str]:
    """The modules of ``after`` whose hash differs from ``before``'s (or that ``before`` does
    not have); modules of ``before`` alone are not compared (a run of fewer units)."""
    def by_module(lines):
        return dict(line.split()[-2:] for line in lines if line.strip())

    old, new = by_module(before), by_module(after)
    return sorted(m for m in new if old.get(m) != new[m])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("output", type=Path, help="file to write, one line per configuration")
    p.add_argument("--unit", action="append", default=[], help="only this unit (repeatable)")
    p.add_argument("--jobs", type=int, default=2, help="conversions in parallel")
    p.add_argument("--compare", type=Path, help="an earlier output: list the changed modules")
    args = p.parse_args(argv)
    jobs = configurations(args.unit)
    with ProcessPoolExecutor(args.jobs) as pool:
        lines = list(pool.map(hash_line, jobs))
    args.output.write_text("\n".join(lines) + "\n")
    print(f"{len(lines)} configurations -> {args.output}")
    if args.compare is None:
        return 0
    diff = changed(args.compare.read_text().splitlines(), lines)
    for module in diff:
        print(f"CHANGED {module}")
    print(f"{len(diff)} of {len(lines)} changed against {args.compare}")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
