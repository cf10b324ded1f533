"""A unit's Verilog and its files: the module text, the ``.v`` file and its JSON sidecar.

A unit (a component of :func:`hw.registry.units`) provides ``module_name`` (a Verilog
identifier that encodes its parameters), ``parameters`` (a JSON-able dict), ``latency``
(cycles, int), ``i_ready_registered`` (bool) and ``primitives`` (vendor cells, a tuple of
str): a :class:`hw.unit.Unit`.  The sidecar is :mod:`hw.sidecar`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .sidecar import sidecar

__all__ = ["VERILOG_SUFFIXES", "to_verilog", "write_component"]

#: The file names a Verilog file may have: those a simulator build (cocotb's runner, hence
#: ``python -m tb check``) reads as Verilog; ``python -m hw generate -o`` writes only these.
VERILOG_SUFFIXES = (".v", ".sv", ".vh", ".svh")

_SRC_ATTR = re.compile(r"^\s*\(\* src = .* \*\)\n", re.M)


def to_verilog(component, name: str | None = None) -> str:
    """Convert an Amaranth component to one self-contained Verilog module, without the
    ``src`` attributes (they carry absolute paths of the generating machine)."""
    from amaranth.back import verilog

    text = verilog.convert(component, name=name or component.module_name,
                           strip_internal_attrs=True)
    return _SRC_ATTR.sub("", text)


def write_component(component, unit: str, out: Path) -> Path:
    """Write ``out`` (Verilog) and its ``.json`` sidecar for an elaborated-ready component."""
    out.parent.mkdir(parents=True, exist_ok=True)
    verilog = to_verilog(component)
    out.write_text(verilog)
    meta = sidecar(component, unit, verilog)
    out.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")
    return out
