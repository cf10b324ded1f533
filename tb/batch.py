"""A batch of stimulus with its golden expectation: the unit of work of every testbench.

The stream tests send a batch through :class:`tb.stream.StreamTB` (its scoreboard compares
each output and asks the batch to describe a mismatch); the bulk tests run it through the
bulk wrapper (:mod:`tb.bulk`) and compare all rows at once with :meth:`Batch.check`, the one
batch-check loop of the project.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from . import coverage

__all__ = ["Batch", "MAX_REPORTS", "Verdict"]

#: Mismatches per batch reported in full (decoded); the rest are only counted.
MAX_REPORTS = 5


@dataclass
class Verdict:
    """What comparing a batch's outputs found: the number of mismatching rows, decoded reports
    of the first ones, and the batch's coverage counts (empty when no coverage is active).
    Plain data, so that a host process (:func:`tb.bulk.run_jobs`) can send it back."""

    mismatches: int
    reports: list[str] = field(default_factory=list)
    coverage: dict = field(default_factory=dict)

    def record(self, log: logging.Logger) -> int:
        """Log the reports, add the coverage counts to the active coverage; return
        :attr:`mismatches`."""
        for report in self.reports:
            log.error("MISMATCH %s", report)
        coverage.sample(self.coverage)
        return self.mismatches


class Batch:
    """Input payload rows, expected output rows and how to explain a wrong output.

    Parameters
    ----------
    stim : ndarray of uint8, shape (n, input payload bytes)
        Input payloads (:class:`tb.stream.BitLayout` byte matrix).
    exp : ndarray of uint8, shape (m, output payload bytes)
        Expected output payloads, in output order.
    blocks : int, optional
        Blocks the batch checks (for the summary table); default ``n``.

    A unit's model subclasses this and overrides :meth:`describe`.  Units with one output per
    input have ``m == n``; others (a dot product over runs of blocks) set ``m`` and the bulk
    runner then expects exactly ``m`` outputs (:attr:`out_count`).
    """

    def __init__(self, stim: np.ndarray, exp: np.ndarray, *, blocks: int | None = None):
        stim, exp = np.asarray(stim), np.asarray(exp)
        if stim.ndim != 2 or exp.ndim != 2 or stim.dtype != np.uint8 or exp.dtype != np.uint8:
            raise ValueError("stim and exp must be 2-d uint8 payload byte matrices, got "
                             f"{stim.dtype}{stim.shape} and {exp.dtype}{exp.shape}")
        self.stim = stim
        self.exp = exp
        self.blocks = stim.shape[0] if blocks is None else int(blocks)

    def __len__(self) -> int:
        return self.blocks

    @property
    def out_count(self) -> int | None:
        """Outputs the batch must produce, or None when it is one per input row."""
        return None if self.exp.shape[0] == self.stim.shape[0] else self.exp.shape[0]

    def coverage_counts(self) -> dict:
        """Bin hit counts of the batch's stimulus and golden results
        (``{cover point: {bin: count}}``, :mod:`tb.coverage`); subclasses classify."""
        return {}

    def sample_coverage(self) -> None:
        """Add the batch to the active coverage (:func:`tb.coverage.sample`), if any."""
        if coverage.active() is not None:
            coverage.sample(self.coverage_counts())

    def describe(self, row: int, got: np.ndarray) -> str:
        """Human-readable report of output ``row`` that came out as ``got`` (one payload row)
        instead of ``exp[row]``; subclasses decode the fields."""
        return (f"output {row}: expected 0x{self.exp[row][::-1].tobytes().hex()}, "
                f"got 0x{np.asarray(got)[::-1].tobytes().hex()}")

    def verdict(self, got: np.ndarray, max_reports: int = MAX_REPORTS) -> Verdict:
        """Compare all output rows at once: the mismatch count, decoded reports of the first
        ``max_reports`` mismatches, and the batch's coverage counts if coverage is active."""
        if got.shape != self.exp.shape:
            raise AssertionError(f"got {got.shape[0]} output rows of {got.shape[1]} bytes, "
                                 f"expected {self.exp.shape[0]} of {self.exp.shape[1]}")
        bad = np.flatnonzero((got != self.exp).any(axis=1))
        return Verdict(int(bad.size), [self.describe(int(row), got[row])
                                       for row in bad[:max_reports]],
                       self.coverage_counts() if coverage.active() is not None else {})

    def check(self, got: np.ndarray, log: logging.Logger,
              max_reports: int = MAX_REPORTS) -> int:
        """:meth:`verdict`, recorded: log the reports, sample the batch into the active
        coverage; returns the number of mismatching rows."""
        return self.verdict(got, max_reports).record(log)
