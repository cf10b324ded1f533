"""Write the bulk wrapper of a unit with the ``i``/``o`` stream roles, from its schema-1 JSON
sidecar (:mod:`hw.sidecar`), for use without cocotb.

Usage::

    python -m hw generate quantizer ... -o build/verilog/unit.v     # also writes unit.json
    python -m tb.bulk build/verilog/unit.json -o unit_bulk.v
    verilator --binary --timing -CFLAGS -fcoroutines -DMX_BULK_MAIN \\
        --top-module <dut>_bulk_main unit.v unit_bulk.v
    obj_dir/V<dut>_bulk_main +stim=in.bin +out=out.bin +n=1000 +idle=64 +stall=64
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .wrapper import DEPTH, write_bulk_wrapper


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tb.bulk", description=__doc__.split("\n\n")[0])
    p.add_argument("sidecar", type=Path, help="the unit's JSON sidecar (python -m hw generate)")
    p.add_argument("-o", "--output", type=Path, required=True, help="wrapper Verilog to write")
    p.add_argument("--depth", type=int, default=DEPTH, help="payloads per memory load")
    a = p.parse_args(argv)
    from hw.sidecar import validate

    top = write_bulk_wrapper(validate(json.loads(a.sidecar.read_text())), a.output, a.depth)
    print(f"wrote {a.output} (modules {top}, {top}_main)")


if __name__ == "__main__":
    main()
