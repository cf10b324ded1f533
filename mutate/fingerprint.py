"""Subprocess entry of :meth:`mutate.sandbox.Sandbox.fingerprints`: reads
``[[nodeid, unit, argv], ...]`` as JSON on stdin, generates each configuration with the
``hw`` on ``PYTHONPATH`` and prints ``{"fingerprints": {nodeid: [Verilog sha256, sidecar
sha256]}, "sizes": {nodeid: characters of Verilog}}``.  Elaboration
errors propagate (non-zero exit, the traceback on stderr)."""

from __future__ import annotations

import json
import sys

from .regression import SimConfig, fingerprint


def main() -> int:
    request = json.load(sys.stdin)
    prints, sizes = {}, {}
    for nodeid, unit, argv in request:
        prints[nodeid], sizes[nodeid] = fingerprint(SimConfig(nodeid, unit, tuple(argv)))
    json.dump({"fingerprints": prints, "sizes": sizes}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
