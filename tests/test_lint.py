"""Every default generated module lints clean with ``verilator --lint-only -Wall``."""

from __future__ import annotations

import subprocess

import pytest

from hw.cli import to_verilog, units
from tb.runner import ROOT, verilator_env

WAIVERS = ROOT / "hw" / "lint_waivers.vlt"


def _defaults():
    for spec in units().values():
        for argv in spec.defaults:
            yield pytest.param(spec, argv, id=f"{spec.name}:{' '.join(argv)}")


@pytest.mark.parametrize("spec,argv", list(_defaults()))
def test_verilator_lint_clean(spec, argv, tmp_path):
    comp = spec.build_from(argv)
    v = tmp_path / f"{comp.module_name}.v"
    v.write_text(to_verilog(comp))
    exe = verilator_env()
    cmd = [exe, "--lint-only", "-Wall", "--top-module", comp.module_name, str(v)]
    if WAIVERS.exists():
        cmd.insert(1, str(WAIVERS))
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0 and "%Warning" not in r.stderr, r.stderr
