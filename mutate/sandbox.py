"""A throwaway copy of the repository in which mutants are generated and simulated.

The real ``hw/`` is never edited: :class:`Sandbox` copies the source packages and the pytest
configuration under ``build/mutate/<name>/`` (its ``build/`` directory, with the Verilator
builds, survives between campaigns), writes one mutant at a time into the copy and runs
subprocesses there with ``PYTHONPATH`` pointing at it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from .regression import SimConfig

__all__ = ["Sandbox", "SimOutcome", "COPIED"]

#: What a sandbox holds of the repository (the packages, the tests and pytest's settings;
#: formal: tests/depths.py reads the units' probes from formal.units; docs:
#: tests/test_sidecar.py, the judge of sidecar-only mutants, reads the schema and the example
#: there).
COPIED = ("golden", "hw", "tb", "tests", "mutate", "formal", "docs", "pyproject.toml")


@dataclass(frozen=True)
class SimOutcome:
    """Result of simulating one configuration.

    Attributes
    ----------
    status : str
        ``"pass"``, ``"fail"`` or ``"timeout"``.
    seconds : float
        Wall time of the pytest run (build and simulation).
    message : str
        The failure's first line of explanation (empty on a pass).
    """

    status: str
    seconds: float
    message: str = ""


def _kill_group(process: subprocess.Popen) -> None:
    """End a subprocess started with ``start_new_session`` and everything it started."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


class Sandbox:
    """A copy of the repository's sources under ``build/mutate/<name>``.

    Parameters
    ----------
    repo : Path
        The repository root (the sources are copied from here, never modified).
    name : str
        Subdirectory of ``build/mutate``.
    sim_seed : int
        ``SEED`` of every simulation run (the same for the baseline and every mutant).
    """

    def __init__(self, repo: Path, name: str, sim_seed: int):
        self.repo = Path(repo).resolve()
        self.root = self.repo / "build" / "mutate" / name
        self.sim_seed = sim_seed
        self.root.mkdir(parents=True, exist_ok=True)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        for item in COPIED:
            src, dst = self.repo / item, self.root / item
            if dst.is_dir():
                shutil.rmtree(dst)
            if src.is_dir():
                shutil.copytree(src, dst, ignore=ignore)
            else:
                shutil.copy2(src, dst)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("SIM_FULL", "BLOCKS", "WAVES", "PYTEST_ADDOPTS")}
        env.update(PYTHONPATH=str(self.root), SEED=str(self.sim_seed),
                   PYTHONDONTWRITEBYTECODE="1")
        return env

    # -- mutants -----------------------------------------------------------------------------
    def write(self, relpath: str, text: str) -> None:
        """Replace a file of the copy (a mutant, or the original text to restore it)."""
        (self.root / relpath).write_text(text)

    # -- generation --------------------------------------------------------------------------
    def fingerprints(self, configs: list[SimConfig], timeout: float) -> dict:
        """Generate every configuration in a subprocess; returns what
        :mod:`mutate.fingerprint` prints (fingerprints and sizes per node id), or
        ``{"error": message}`` if elaboration raised or timed out."""
        request = json.dumps([[c.nodeid, c.unit, list(c.argv)] for c in configs])
        process = subprocess.Popen([sys.executable, "-m", "mutate.fingerprint"],
                                   cwd=self.root, env=self.env(), stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
        try:
            out, err = process.communicate(request, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            return {"error": f"generation took over {timeout:.0f} s"}
        if process.returncode:
            lines = [ln for ln in err.strip().splitlines() if ln.strip()]
            return {"error": lines[-1] if lines else f"exit status {process.returncode}"}
        return json.loads(out)

    # -- simulation --------------------------------------------------------------------------
    def simulate(self, config: SimConfig, timeout: float) -> SimOutcome:
        """Run one configuration's default simulation test (pytest, ``SEED`` fixed)."""
        report = self.root / "build" / "mutate-junit.xml"
        report.unlink(missing_ok=True)
        log = self.root / "build" / "mutate-last.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        with open(log, "w") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                 f"--junitxml={report}", config.nodeid],
                cwd=self.root, env=self.env(), stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill_group(process)
                return SimOutcome("timeout", time.monotonic() - t0,
                                  f"no result within {timeout:.0f} s")
        seconds = time.monotonic() - t0
        if process.returncode == 0:
            return SimOutcome("pass", seconds)
        return SimOutcome("fail", seconds, _failure_message(report, log))


#: What says why a simulation failed, in order of preference: the testbench's own messages
#: (a mismatch, a timeout), then any assertion or other error.
_REASONS = (r"MISMATCH .*", r"timeout waiting .*", r"bulk: .*", r"AssertionError: .*",
            r"\w+Error: .*")


def _failure_message(report: Path, log: Path) -> str:
    """Why the run failed: the first testbench message in the log (a mismatch, a timeout, a
    failed assertion), else the first line of the failure in pytest's JUnit XML."""
    text = log.read_text(errors="replace")
    for pattern in _REASONS:
        found = re.search(pattern, text)
        if found:
            return " ".join(found.group(0).split())[:300]
    try:
        for case in ET.parse(report).getroot().iter("testcase"):
            for tag in ("failure", "error"):
                node = case.find(tag)
                if node is not None:
                    return (node.get("message") or node.text or tag).strip().splitlines()[0]
    except (ET.ParseError, OSError):
        pass
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "pytest failed"
