"""The project lints clean: its Python under ruff (the rules in pyproject.toml) and within the
size limits of functions and files, and every default generated module under
``verilator --lint-only -Wall``."""

from __future__ import annotations

import ast
import subprocess
import sys

import depths
import pytest

import golden
from hw.cli import to_verilog, units
from hw.dsp import simulation_models
from tb.runner import ROOT
from tb.verilator import verilator_environ, verilator_executable

WAIVERS = ROOT / "hw" / "lint_waivers.vlt"

#: The project's Python packages, checked by ruff.
PYTHON_SOURCES = ("golden", "hw", "tb", "tests", "bench", "formal", "mutate")


def test_python_lint_clean():
    # In make test, not only make lint: CI runs make test.
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache",
                        *(str(ROOT / path) for path in PYTHON_SOURCES)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


#: The longest function (lines from ``def`` to its last line, decorators excluded) in the
#: project's Python, and the longest file in :data:`SIZED_PACKAGES` (lines): one concept per
#: function and per module (ruff has no such rule).
MAX_FUNCTION_LINES = 120
MAX_FILE_LINES = 450
#: The packages whose files :data:`MAX_FILE_LINES` bounds.
SIZED_PACKAGES = ("hw", "tb", "golden")


def _python_files():
    for package in (*PYTHON_SOURCES, "scripts", "examples"):
        yield from sorted((ROOT / package).rglob("*.py"))


def _long_functions(source: str, name: str) -> list[str]:
    """``name:line function: length`` of each function in ``source`` over
    :data:`MAX_FUNCTION_LINES` lines."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    return found


def test_function_and_file_sizes():
    long_functions, long_files = [], []
    for path in _python_files():
        source = path.read_text()
        name = path.relative_to(ROOT)
        lines = source.count("\n")
        if name.parts[0] in SIZED_PACKAGES and lines > MAX_FILE_LINES:
            long_files.append(f"{name}: {lines} lines")
        long_functions += _long_functions(source, str(name))
    assert not long_functions, (f"functions over {MAX_FUNCTION_LINES} lines (split them along "
                                f"concepts): {long_functions}")
    assert not long_files, (f"files in {', '.join(SIZED_PACKAGES)} over {MAX_FILE_LINES} "
                            f"lines (one concept per module): {long_files}")


def test_size_check_finds_a_long_method():
    # The check above can fail: a method one line over the limit is found, one at it is not.
    def source(lines):
        body = "\n".join(f"        x{i} = {i}" for i in range(lines - 1))
        return f"class C:\n    def f(self):\n{body}\n"

    assert _long_functions(source(MAX_FUNCTION_LINES), "at.py") == []
    assert _long_functions(source(MAX_FUNCTION_LINES + 1), "over.py") == [
        f"over.py:2 f: {MAX_FUNCTION_LINES + 1} lines"]


def _at(depth, unit: str, argv: list[str], *args) -> list[str]:
    """``argv`` with ``--stages`` at the depth ``depth(unit, argv, *args)`` (tests/depths.py)."""
    return [*argv, "--stages", str(depth(unit, argv, *args))]


_BF16 = ["--format", "fp8_e4m3", "--input", "bf16"]
_DSP = ["--format", "int8", "--multipliers", "mult18x18d"]
#: Beside the defaults: the quantizer's radix-4 block-max tree unsplit (its deepest such
#: depth), with and without the rceil flag logic (fp4_e2m1 with rceil: its
#: ``top > max_significand`` test must not compare with top's all ones, a CMPCONST warning).
EXTRA = {"quantizer": [_at(lambda u, a: depths.unsplit_tree(u, a, deepest=True), "quantizer",
                           _BF16),
                       ["--format", "fp4_e2m1", "--input", "fp32", "--scale-mode", "rceil"]],
         # instantiated MULT18X18D blocks, linted with their model (hw/models/MULT18X18D.v);
         # MXDotGeneral's at a depth using the blocks' input registers only
         "dot": [["--format", "fp8_e4m3", "--multipliers", "mult18x18d"],
                 # the GPU mode with UE4M3 scales (the truncating step's nvfp4 decode)
                 ["--format", "nvfp4", "--accumulation", "tcgen05.mxf4nvf4"]],
         "dot-general": [_at(lambda u, a: depths.dsp_registers(u, a, True, False),
                             "dot-general", _DSP),
                         # a run's mxf4 steps: the accumulators hold the chained state
                         ["--format", "fp4_e2m1", "--accumulation", "tcgen05.mxf4",
                          "--contexts", "2"],
                         # nvfp4's: the pending groups' UE4M3 values, the epilogue after
                         ["--format", "nvfp4", "--accumulation", "tcgen05.mxf4nvf4",
                          "--contexts", "2"]],
         "gemm": [["--format", "fp4_e2m1", "--block-size", "16", "--accumulation",
                   "tcgen05.mxf4nvf4", "--accumulators", "memory"]],
         # two blocks a beat side by side (a small block: the pairing, not the block path)
         "nvfp4-quantizer": [["--levels", "2", "--block-size", "4", "--blocks", "2"],
                             # the lane products in MULT18X18D blocks, with their model
                             ["--levels", "2", "--block-size", "4", "--multipliers",
                              "mult18x18d"]]}


#: Every element format with the run-time choices (both rounding and scale mode in the
#: payload, so every rounder and both scale rules are built), at k = 8 and the fewest stages
#: from 2 with the radix-4 tree unsplit and at every boundary (the split tree): the logic the
#: default configurations (rne, floor) leave out.  ``make test`` lints each format at one of the two
#: depths, alternating (both tree shapes, every format); the other half is marked ``slow``
#: (``make sim-full``), to keep ``make test`` inside its 20 minutes.
def _runtime(fmt: str) -> list[str]:
    return ["--format", fmt, "--input", "fp32", "--block-size", "8", "--rounding", "runtime",
            "--scale-mode", "runtime"]


RUNTIME = [(_at(depth, "quantizer", _runtime(fmt)), (i + j) % 2 == 1)
           for i, fmt in enumerate(golden.FORMATS)
           for j, depth in enumerate((lambda u, a: depths.unsplit_tree(u, a, at_least=2),
                                      depths.max_stages))]


def _defaults():
    for spec in units().values():
        extra = [(argv, False) for argv in EXTRA.get(spec.name, [])]
        if spec.name == "quantizer":
            extra += RUNTIME
        for argv, slow in [(argv, False) for argv in spec.defaults] + extra:
            yield pytest.param(spec, argv, id=f"{spec.name}:{' '.join(argv)}",
                               marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("spec,argv", list(_defaults()))
def test_verilator_lint_clean(spec, argv, tmp_path):
    comp = spec.build_from(argv)
    v = tmp_path / f"{comp.module_name}.v"
    v.write_text(to_verilog(comp))
    env = verilator_environ()
    exe = verilator_executable(env)
    models = [str(model) for model in simulation_models(comp.primitives)]
    cmd = [exe, "--lint-only", "-Wall", "--top-module", comp.module_name, str(v), *models]
    if WAIVERS.exists():
        cmd.insert(1, str(WAIVERS))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "%Warning" not in r.stderr, r.stderr
