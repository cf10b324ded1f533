"""golden's argument handling and its numba cache: the project's own dtype names, MXArray's
members checked against each other, and compiled kernels cached per user, not in the package."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import golden

REPO = Path(__file__).resolve().parent.parent


BF16 = ml_dtypes.bfloat16


@pytest.mark.parametrize("name,dtype", [("bf16", BF16), ("bfloat16", BF16), ("fp16", np.float16),
                                        ("fp32", np.float32), ("float32", np.float32)])
def test_dequantize_takes_the_project_names(name, dtype):
    x = np.float32([1.0, -0.375, 3.5, 0.0078125])  # exact in fp8_e4m3 at one scale
    mx = golden.quantize(x, "fp8_e4m3", block_size=4)
    out = golden.dequantize(mx, name)
    assert out.dtype == np.dtype(dtype)
    assert out.astype(np.float32).tolist() == [1.0, -0.375, 3.5, 0.0078125]


@pytest.mark.parametrize("bad", ["fp64", "int8", "fp8_e4m3", np.int32, "nonsense"])
def test_dequantize_refuses_other_outputs_in_one_line(bad):
    mx = golden.quantize(np.ones(4, np.float32), "fp8_e4m3", block_size=4)
    with pytest.raises(ValueError, match=r"^dequantize writes fp32, bf16 or fp16 .*, not "):
        golden.dequantize(mx, bad)


def _mx4():
    return golden.quantize(np.float32([[1, 2, 3, 4]]), "fp8_e4m3", block_size=4)


def test_mxarray_shape_must_match_its_codes():
    mx = _mx4()
    with pytest.raises(ValueError, match=r"codes have shape \(1, 4\), but shape=\(1, 5\) with "
                                         r"block_size=4 along axis 1 needs \(1, 8\)"):
        golden.MXArray(mx.scales, mx.codes, mx.fmt, 4, 1, (1, 5))
    with pytest.raises(ValueError, match=r"scales have shape \(1, 1\).* needs \(1, 2\)"):
        golden.MXArray(mx.scales, np.zeros((1, 4), np.uint8), mx.fmt, 2, 1, (1, 4))


def test_mxarray_block_size_3_names_the_allowed_sizes():
    mx = _mx4()
    with pytest.raises(ValueError, match=r"block_size must be a power of two >= 2 "
                                         r"\(2, 4, 8, 16, 32, 64, \.\.\.; .*got 3"):
        golden.MXArray(mx.scales, mx.codes, mx.fmt, 3, 1, (1, 4))
    with pytest.raises(ValueError, match="got 3"):
        golden.quantize(np.ones(6, np.float32), "int8", block_size=3)


def test_mxarray_members_are_normalized_and_checked():
    mx = _mx4()
    m = golden.MXArray(mx.scales, mx.codes, "mxfp8_e4m3", np.int64(4), -1, [1, 4])
    assert (m.fmt, m.block_size, m.axis, m.shape) == (golden.FP8_E4M3, 4, 1, (1, 4))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        golden.MXArray(mx.scales, mx.codes, mx.fmt, 4, 2, (1, 4))
    with pytest.raises(TypeError, match="codes must be a uint8 ndarray, got int64"):
        golden.MXArray(mx.scales, mx.codes.astype(np.int64), mx.fmt, 4, 1, (1, 4))


def _run(code, env):
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def _env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(XDG_CACHE_HOME=str(tmp_path / "xdg"), **extra)
    return env


@pytest.mark.parametrize("numba_first", [False, True], ids=["golden-first", "numba-first"])
def test_numba_cache_goes_to_the_user_cache(tmp_path, numba_first):
    """With NUMBA_CACHE_DIR unset, a kernel decorated with golden's njit (as golden's own are;
    here a small one in a scratch module, so the test compiles in a second) caches in
    $XDG_CACHE_HOME/ocp-mx-hdl/numba, and nothing is written beside the module's source."""
    mod = tmp_path / "src" / "tiny_kernel.py"
    mod.parent.mkdir()
    mod.write_text("from golden.jitcache import njit\n\n@njit(cache=True)\n"
                   "def f(x):\n    return x + 1\n")
    imports = "import numba, golden" if numba_first else "import golden, numba"
    out = _run(f"""
        import sys; sys.path.insert(0, {str(mod.parent)!r})
        {imports}
        import tiny_kernel
        assert tiny_kernel.f(1) == 2
        print(numba.config.CACHE_DIR)
        """, _env(tmp_path))
    cache = tmp_path / "xdg" / "ocp-mx-hdl" / "numba"
    assert out == str(cache)
    assert any(p.suffix == ".nbi" for p in cache.rglob("*")), sorted(cache.rglob("*"))
    assert not list(mod.parent.rglob("*.nbi")) and not list(mod.parent.rglob("*.nbc"))


def test_numba_cache_dir_set_by_the_user_is_kept(tmp_path):
    mine = tmp_path / "mine"
    out = _run("import golden.mx, numba, os; print(numba.config.CACHE_DIR, "
               "os.environ['NUMBA_CACHE_DIR'])", _env(tmp_path, NUMBA_CACHE_DIR=str(mine)))
    assert out == f"{mine} {mine}"


def test_golden_kernels_leave_the_environment_alone(tmp_path):
    """Importing golden loads no numba; loading its kernels sets numba's cache in numba's own
    configuration and changes no environment variable (a subprocess started after it sees
    the caller's environment)."""
    out = _run("import os, sys; before = dict(os.environ); import golden; "
               "print('numba' in sys.modules); import golden.mx, numba; "
               "print(dict(os.environ) == before, numba.config.CACHE_DIR)", _env(tmp_path))
    assert out.split("\n") == ["False", f"True {tmp_path / 'xdg' / 'ocp-mx-hdl' / 'numba'}"]
