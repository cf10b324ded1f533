"""FuseSoC generator ``mx_unit`` of ``ocp_mx_hdl.core``: ``python3 mx_unit_generator.py IN.yml``.

All the work is :func:`hw.fusesoc.generator_main`; this script only finds the ``hw`` package:
the installed ``ocp-mx-hdl``, or else the repository checkout this file lives in.
"""

import sys
from pathlib import Path

try:
    from hw.fusesoc import generator_main
except ModuleNotFoundError as e:
    if e.name != "hw":
        raise
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from hw.fusesoc import generator_main

if __name__ == "__main__":
    sys.exit(generator_main())
