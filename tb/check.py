"""``python -m tb check``: the project's verification suite on anyone's RTL.

Usage::

    python -m tb check --sidecar unit.json unit.v [more.v ...] [--seed N] [--blocks N]
                       [--build-dir DIR]

The sidecar (schema 1, :mod:`hw.sidecar`; written by ``python -m hw generate`` or by hand for
your own design) says which unit the Verilog implements, its parameters and latency, and which
Verilog port plays which role.  The check validates the sidecar, compares its ports with the
Verilog (as Verilator elaborates it), wraps the module in the project's bulk wrapper
(:mod:`tb.bulk`) and runs the unit's standard testbench (:mod:`tb.standard_tests`) against
``golden``: the stream test under idle cycles and backpressure, reset with data in flight
(except the dot units), and the bulk sets (random, directed, exhaustive; throughput).  It
prints the summary table and, on failure, the decoded mismatch reports.  Exit status 0 when
every test passed, 1 when one failed, 2 for a usage error (a missing file, an invalid
sidecar, ports that do not match) or a failed build (its errors printed, nothing else).
Everything reported comes from this run: the logs and results of an earlier run in the same
build directory are removed before the build.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
from pathlib import Path

from hw.verilog import VERILOG_SUFFIXES

from .failures import failure_reports

__all__ = ["CheckError", "TESTBENCHES", "MODELS", "VERILOG_SUFFIXES", "load_sidecar",
           "check_fields", "check_ports", "failure_reports", "probe_timing", "run_check",
           "main"]

#: The cocotb testbench module of each unit.
TESTBENCHES = {"quantizer": "tb.quantizer", "dequantizer": "tb.dequantizer", "dot": "tb.dot",
               "dot-general": "tb.dot", "gemm": "tb.gemm",
               "nvfp4-dequantizer": "tb.nvfp4_dequantizer",
               "nvfp4-quantizer": "tb.nvfp4_quantizer"}

#: The testbench model class of each unit, in its :data:`TESTBENCHES` module.
MODELS = {"quantizer": "QuantizerModel", "dequantizer": "DequantizerModel", "dot": "DotModel",
          "dot-general": "DotModel", "gemm": "GemmModel", "nvfp4-dequantizer": "NVFP4Model",
          "nvfp4-quantizer": "NVFP4QuantizerModel"}

#: Default blocks budget (``MX_BLOCKS``) of a check.
DEFAULT_BLOCKS = 200



class CheckError(Exception):
    """A problem with the check's inputs, reported as one line (exit status 2)."""


def load_sidecar(path: Path) -> dict:
    """Read and validate a schema-1 sidecar file."""
    from hw.sidecar import SidecarError, validate

    path = Path(path)
    if not path.is_file():
        raise CheckError(f"no such file: {path}")
    try:
        meta = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise CheckError(f"{path}: not JSON ({e})") from None
    try:
        return validate(meta)
    except SidecarError as e:
        raise CheckError(f"{path}: {e}") from None


def check_ports(meta: dict, verilog_ports: dict[str, tuple[str, int | None]]) -> None:
    """Every sidecar port exists in the Verilog with its direction and width, and the
    Verilog has no other port; raises :class:`CheckError` listing every difference."""
    problems = []
    for port in meta["ports"]:
        name = port["name"]
        if name not in verilog_ports:
            problems.append(f"{name} ({port['role']}) is not a port of the Verilog")
            continue
        direction, width = verilog_ports[name]
        if direction != port["direction"]:
            problems.append(f"{name} is '{direction}' in the Verilog, '{port['direction']}' "
                            "in the sidecar")
        if width is not None and width != port["width"]:
            problems.append(f"{name} is {width} bits in the Verilog, {port['width']} in the "
                            "sidecar")
    extra = sorted(set(verilog_ports) - {p["name"] for p in meta["ports"]})
    if extra:
        problems.append(f"Verilog ports not in the sidecar: {', '.join(extra)}")
    if problems:
        raise CheckError(f"ports of {meta['module']} do not match the sidecar: "
                         + "; ".join(problems))


def _fields_text(fields) -> str:
    return ", ".join(f"{name} ({width} bits)" for name, width in fields)


def check_fields(meta: dict) -> None:
    """The sidecar's payload fields are the unit's interface (names and widths: the unit's
    testbench model, :meth:`tb.standard_tests.UnitModel.interface`), checked before anything
    is built; raises :class:`CheckError` naming every wrong, missing or extra field."""
    import importlib

    from .standard_tests import UnitConfig

    unit = meta["unit"]
    model_class = getattr(importlib.import_module(TESTBENCHES[unit]), MODELS[unit])
    try:
        model = model_class(UnitConfig(sidecar=meta, seed=0, label=meta["module"], blocks=1,
                                       full=False, sweeps=False))
        stated = model.interface()
    except (ValueError, KeyError, TypeError) as e:
        raise CheckError(f"the sidecar's payload fields do not fit the {unit}: {e}") from None
    problems = []
    for (role, layout), fields in zip((("i.payload", model.in_layout),
                                       ("o.payload", model.out_layout)), stated, strict=True):
        found = {f["name"]: f["width"] for f in layout.fields.values()}
        want = dict(fields)
        unknown = [(n, w) for n, w in found.items() if n not in want]
        missing = [(n, w) for n, w in want.items() if n not in found]
        wrong = [f"{n} is {found[n]} bits, the interface's {w}" for n, w in want.items()
                 if n in found and found[n] != w]
        if unknown:
            problems.append(f"{role} has {_fields_text(unknown)}, not a field of the {unit}")
        if missing:
            problems.append(f"{role} lacks {_fields_text(missing)}")
        problems += [f"{role} field {w}" for w in wrong]
    if problems:
        raise CheckError(f"payload fields of {meta['module']} differ from the {unit}'s "
                         f"interface (docs/sidecar.md, Fields): {'; '.join(problems)}")
    try:
        model.check_interface()  # the generator's own units: the documented order too
    except AssertionError as e:
        raise CheckError(f"payload fields of {meta['module']}: {e}") from None


def run_check(sidecar_path: Path, verilog: list[Path], *, seed: int, blocks: int = DEFAULT_BLOCKS,
              build_dir: Path | None = None, out=print) -> bool:
    """Check the RTL in ``verilog`` against the schema-1 sidecar at ``sidecar_path``.

    Builds under ``build_dir`` (default ``build/check/<module>`` in the working directory),
    runs the unit's standard testbench and the timing probe (:mod:`tb.flow_control`) and
    prints (through ``out``) the summary table, the functional coverage table (database in
    ``build_dir/coverage-report``: not ``coverage``, which the simulator's Python would
    import as the coverage.py package, being on its path) and, on failure, which tests failed
    and the decoded mismatch reports.  Returns True if every test passed; raises
    :class:`CheckError` for bad inputs and for a failed build.
    """
    meta = load_sidecar(sidecar_path)
    check_fields(meta)
    verilog = _verilog_files(verilog)
    module = meta["module"]
    build_dir = Path(build_dir or Path("build") / "check" / module).resolve()
    _check_verilog(meta, verilog, build_dir, out)
    from .bulk import wrap_unit

    sources, top = wrap_unit(meta, [v.resolve() for v in verilog], build_dir / "rtl")
    forget_earlier_run(build_dir)
    out(f"checking {module} ({meta['unit']}, {', '.join(map(str, verilog))}) against golden: "
        f"seed {seed}, {blocks} blocks; build and log in {build_dir}")
    # the probe first: it builds the model, and a run with WAVES keeps the tests' trace
    timing = probe_timing(meta, sidecar_path, sources, top, build_dir, seed, out)
    rows, coverage_dirs = [], []
    passed = _run_tests(meta, sidecar_path, sources, top, build_dir, seed, blocks, rows,
                        coverage_dirs, out)
    _report(meta, build_dir, rows, coverage_dirs, timing, passed, out)
    passed = passed and not timing
    out("PASS" if passed else "FAIL")
    return passed


def _verilog_files(verilog) -> list[Path]:
    verilog = [Path(v) for v in verilog]
    if not verilog:
        raise CheckError("no Verilog files given")
    for v in verilog:
        if not v.is_file():
            raise CheckError(f"no such file: {v}")
        if v.suffix not in VERILOG_SUFFIXES:
            raise CheckError(f"{v}: a Verilog file's name must end in "
                             f"{', '.join(VERILOG_SUFFIXES)}")
    return verilog


def _check_verilog(meta: dict, verilog: list[Path], build_dir: Path, out) -> None:
    """The build directory can be made, Verilator reads the module, its ports are the
    sidecar's; a note when the sidecar's hash matches none of the files."""
    from hw.dsp import simulation_models
    from hw.sidecar import verilog_sha256

    from .verilator import VerilogError, module_ports

    module = meta["module"]
    if build_dir.exists() and not build_dir.is_dir():
        raise CheckError(f"--build-dir {build_dir}: not a directory")
    try:
        build_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CheckError(f"cannot use --build-dir {build_dir}: {e.strerror or e}") from None
    try:
        models = simulation_models(meta.get("primitives", ()))
        ports = module_ports([*verilog, *models], module, build_dir / "ports")
    except VerilogError as e:
        raise CheckError(f"Verilator cannot read {module} from "
                         f"{', '.join(map(str, verilog))}: {e}") from None
    check_ports(meta, ports)
    recorded = meta.get("verilog_sha256")
    if recorded and all(verilog_sha256(v.read_text()) != recorded for v in verilog):
        out(f"note: the sidecar's verilog_sha256 matches none of the Verilog files "
            f"(it was written for another version of {module})")


def _run_tests(meta, sidecar_path, sources, top, build_dir, seed, blocks, rows, coverage_dirs,
               out) -> bool:
    """Build and run the unit's standard tests; print which failed.  Returns True if every
    test passed; raises :class:`CheckError` if the build failed."""
    from .failures import format_outcomes, read_outcomes
    from .runner import run_testbench

    module, log_file = meta["module"], build_dir / "sim.log"
    failure = None
    try:
        run_testbench(sources, top, Path(sidecar_path), test_module=TESTBENCHES[meta["unit"]],
                      build_dir=build_dir, seed=seed, label=module, blocks=blocks,
                      record=lambda **row: rows.append(row), log_dir=build_dir,
                      coverage=coverage_dirs.append)
    except AssertionError as e:
        failure = str(e)
    except SystemExit as e:
        # cocotb's runner exits instead of returning when the simulator fails, and when a test
        # fails while PYTEST_CURRENT_TEST is set (the check run from a pytest test)
        failure = (f"cocotb's runner stopped with exit status {e.code} (a failed test or a "
                   "simulator error)")
    except Exception as e:  # cocotb's runner raises RuntimeError when a command fails
        if not log_file.exists():  # the simulation never started: the build failed
            raise build_failure(module, build_log=build_dir / "build.log", error=e,
                                out=out) from None
        failure = f"{type(e).__name__}: {e}"
    if failure is None:
        return True
    outcomes = read_outcomes(build_dir / "results.xml")
    if any(why is not None for _, why in outcomes):
        for line in format_outcomes(module, outcomes, seed):
            out(line)
    else:
        out(f"FAILED: {module}: {failure}")
    return False


def probe_timing(meta: dict, sidecar_path: Path, sources, top: str, build_dir: Path,
                 seed: int, out) -> list[str]:
    """Build the wrapped unit in ``build_dir`` and run :mod:`tb.flow_control` on it: the
    sidecar's latency and ``flow_control.i_ready`` against what the design does.  Returns
    the differences (report lines; empty: both claims hold); raises :class:`CheckError` if
    the build failed (its log: ``build_dir/flow-control/build.log``)."""
    from .bulk import VERILATOR_ARGS
    from .flow_control import FLOW_FILE_ENV, judge
    from .options import env_flag
    from .runner import run_cocotb

    directory = build_dir / "flow-control"
    directory.mkdir(exist_ok=True)
    result_file = directory / "result.json"
    try:
        run_cocotb(sources=sources, toplevel=top, test_module="tb.flow_control",
                   name=build_dir.name, build_dir=build_dir, seed=seed,
                   build_args=VERILATOR_ARGS, log_dir=directory, waves=env_flag("WAVES"),
                   extra_env={FLOW_FILE_ENV: result_file, "MX_SEED": seed,
                              "MX_SIDECAR": Path(sidecar_path).resolve()})
        result = json.loads(result_file.read_text())
    except (AssertionError, SystemExit, Exception) as e:  # any failure of the probe
        if not (directory / "sim.log").exists():  # the simulation never started
            raise build_failure(meta["module"], build_log=directory / "build.log", error=e,
                                out=out) from None
        return [f"timing probe: it did not run to its end (log: {directory / 'sim.log'})"]
    return judge(meta, result)


def _report(meta, build_dir, rows, coverage_dirs, timing, passed, out) -> None:
    """The summary table, the timing claims, the coverage table and the failure reports."""
    from .coverage.report import format_coverage_table, merge_databases
    from .report import format_table

    if rows:
        out("")
        for line in format_table(rows):
            out(line)
    out("")
    if timing:
        for line in timing:
            out(f"FAILED: {line}")
    else:
        out(f"timing: latency {meta['latency']} and i_ready "
            f"{meta['flow_control']['i_ready']}, as the sidecar says")
    coverage = merge_databases(coverage_dirs, build_dir / "coverage-report")
    if coverage:
        out("")
        out(f"functional coverage ({build_dir / 'coverage-report'}):")
        for line in format_coverage_table(coverage):
            out(line)
    log_file = build_dir / "sim.log"
    if not passed and log_file.exists():
        reports = failure_reports(log_file.read_text())
        if reports:
            out("")
            out("first failures (decoded):")
            for report in reports:
                out(report)
        out(f"full log: {log_file}")


#: What a run leaves in its build directory that the report reads: removed before each run, so
#: nothing of an earlier run can be reported as this one's.
RUN_OUTPUTS = ("sim.log", "build.log", "results.xml", "coverage-report", "flow-control")


def forget_earlier_run(build_dir: Path) -> None:
    """Remove the :data:`RUN_OUTPUTS` of an earlier run from ``build_dir`` (the Verilator
    build itself stays, so an unchanged design is not compiled again)."""
    for name in RUN_OUTPUTS:
        path = build_dir / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


#: Lines of the build log shown when the build fails.
BUILD_ERROR_LINES = 20


def build_failure(module: str, *, build_log: Path, error: Exception, out) -> CheckError:
    """The :class:`CheckError` of a failed build (exit status 2): the build log's errors go
    to ``out``, the returned error names the first one and the log."""
    lines = build_log.read_text(errors="replace").splitlines() if build_log.exists() else []
    errors = [i for i, line in enumerate(lines) if line.startswith("%Error")]
    shown = lines[errors[0]:errors[0] + BUILD_ERROR_LINES] if errors else \
        lines[-BUILD_ERROR_LINES:]
    if shown:
        out("the build failed; its log says:")
        out("\n".join(shown))
    first = lines[errors[0]].strip() if errors else f"{type(error).__name__}: {error}"
    return CheckError(f"the Verilator build of {module} failed: {first} (log: {build_log})")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``check`` options."""
    p.add_argument("--sidecar", type=Path, required=True,
                   help="the unit's schema-1 JSON sidecar (docs/sidecar.md)")
    p.add_argument("verilog", type=Path, nargs="+", help="the unit's Verilog files")
    p.add_argument("--seed", type=int, default=None,
                   help="random seed (default: a fresh one, printed)")
    p.add_argument("--blocks", type=int, default=DEFAULT_BLOCKS,
                   help=f"random blocks of the stream test (bulk: 20x; default "
                        f"{DEFAULT_BLOCKS})")
    p.add_argument("--build-dir", type=Path, default=None,
                   help="where to build (default: ./build/check/<module>)")


def main(args: argparse.Namespace, prog: str = "python -m tb check") -> int:
    """Run ``check`` with parsed arguments; returns the exit status."""
    if args.blocks < 1:
        print(f"{prog}: error: --blocks must be >= 1, got {args.blocks}", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    try:
        ok = run_check(args.sidecar, args.verilog, seed=seed, blocks=args.blocks,
                       build_dir=args.build_dir)
    except CheckError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    return 0 if ok else 1
