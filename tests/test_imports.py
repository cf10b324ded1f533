"""Import hygiene: the format table and Verilog generation need neither numba nor the kernels,
and no hw module imports a private name of another."""

from __future__ import annotations

import ast
import subprocess
import sys

from tb.runner import ROOT

HW = ROOT / "hw"


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


# -- import hygiene: no hw module imports a private name of another ------------------------
def test_no_hw_module_imports_a_private_name():
    offenders = []
    for path in sorted(HW.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                internal = node.level > 0 or (node.module or "").split(".")[0] in ("hw", "golden")
                for alias in node.names:
                    if internal and alias.name.startswith("_") and alias.name != "__future__":
                        offenders.append(f"{path.relative_to(HW.parent)}: {alias.name}")
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                    and not node.attr.startswith("__") and isinstance(node.value, ast.Name) \
                    and node.value.id in ("hw", "golden", "quantizer", "dequantizer", "dot"):
                offenders.append(f"{path.relative_to(HW.parent)}: {node.value.id}.{node.attr}")
    assert not offenders, offenders
