"""Functional coverage of the testbenches (``docs/verification.md``, Functional coverage).

* :mod:`~tb.coverage.model` -- cover points, bins, exclusions; :class:`Coverage`, the exact
  counts and cocotb-coverage's database;
* :mod:`~tb.coverage.quantizer`, :mod:`~tb.coverage.dequantizer`, :mod:`~tb.coverage.dot`,
  :mod:`~tb.coverage.stream` -- each unit's cover points and its vectorised classifier
  (stimulus and golden's results -> bin hit counts of a whole batch);
* :mod:`~tb.coverage.report` -- merging the databases of many runs and the coverage table.

One simulator process runs one configuration: :func:`start` makes its :class:`Coverage`
the active one, batches add their counts with :func:`sample` and :func:`save` writes the
database to the directory named by ``MX_COVERAGE_DIR`` (set by :func:`tb.runner.run_unit`);
without it (benchmarks) nothing is classified.
"""

from __future__ import annotations

import os
from pathlib import Path

from .model import Coverage, CoverageModel

__all__ = ["COVERAGE_ENV", "enabled", "start", "active", "sample", "save"]

#: Environment variable naming the directory a run writes its coverage database to.
COVERAGE_ENV = "MX_COVERAGE_DIR"

_active: Coverage | None = None


def enabled() -> bool:
    """Whether this run records coverage (``$MX_COVERAGE_DIR`` names where to): runs that
    do not (benchmarks) skip the classification."""
    return bool(os.environ.get(COVERAGE_ENV))


def start(model: CoverageModel, log=None) -> Coverage:
    """Make ``model``'s coverage the process's active one (kept if it is already active, so
    the tests of one configuration accumulate); returns it."""
    global _active
    if _active is None or _active.model != model:
        _active = Coverage(model, log)
    return _active


def active() -> Coverage | None:
    return _active


def sample(counts) -> None:
    """Add one batch's bin counts to the active coverage (nothing when none is active)."""
    if _active is not None:
        _active.add(counts)


def save() -> Path | None:
    """Write the active coverage under ``$MX_COVERAGE_DIR`` (if set); returns the directory."""
    directory = os.environ.get(COVERAGE_ENV)
    if _active is None or not directory:
        return None
    return _active.write(Path(directory))
