"""Import hygiene: the format table and Verilog generation need neither numba nor the kernels."""

from __future__ import annotations

import subprocess
import sys

from tb.runner import ROOT


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)


def test_format_table_imports_without_numba():
    r = _run("import sys, golden, golden.formats; golden.FP8_E4M3.max_normal; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numba' "
             "or m == 'golden._kernels'))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_generating_verilog_imports_no_numba(tmp_path):
    out = tmp_path / "q.v"
    r = _run("import sys; from hw.cli import main; "
             f"rc = main(['generate', 'quantizer', '--format', 'fp4_e2m1', '--block-size', '2', "
             f"'--input', 'bf16', '--rounding', 'runtime', '-o', {str(out)!r}]); "
             "rc |= main(['generate', 'dot', '--format', 'int8', '--block-size', '2', "
             f"'-o', {str(tmp_path / 'd.v')!r}]); "
             "rc |= main(['generate', 'dequantizer', '--format', 'fp8_e5m2', '--block-size', '2', "
             f"'-o', {str(tmp_path / 'dq.v')!r}]); "
             "print('LOADED', sorted(m for m in sys.modules if m.split('.')[0] == 'numba' "
             "or m == 'golden._kernels')); sys.exit(rc)")
    assert r.returncode == 0, r.stderr
    assert "LOADED []" in r.stdout, r.stdout
    assert out.exists()


def test_lazy_golden_api_still_works():
    """The numba-backed functions load on first use and are the real functions."""
    r = _run("import golden, numpy as np; "
             "mx = golden.quantize(np.ones((1, 4), np.float32), 'fp4_e2m1', block_size=4); "
             "print(int(mx.scales[0, 0]), golden.dot.__module__, "
             "callable(golden.dot_blocks), 'quantize' in dir(golden))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["125", "golden.dot_product", "True", "True"]
