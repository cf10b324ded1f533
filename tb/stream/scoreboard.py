"""Scoreboard: in-order comparison of a stream's outputs with the model's expectations."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable

__all__ = ["Scoreboard"]


class Scoreboard:
    """In-order comparison of received payloads against expected ones.

    Parameters
    ----------
    describe : callable(index, expected, actual, context) -> str, optional
        Builds a human-readable mismatch report (decoded fields) from the output's index,
        the expected and actual payloads (ints) and the context queued with the expectation.
    max_reports : int
        Mismatch reports logged in full; the rest are only counted.
    log : logging.Logger, optional
    """

    def __init__(self, describe: Callable | None = None, *, max_reports: int = 10, log=None):
        self.expected: deque = deque()
        self.describe = describe
        self.max_reports = max_reports
        self.log = log or logging.getLogger("cocotb.scoreboard")
        self.checked = 0
        self.mismatches = 0
        self.unexpected = 0
        self.reports: list[str] = []
        self._flips: dict[int, int] = {}

    def expect(self, items: Iterable[tuple[int, object]]):
        """Queue ``(expected_payload, context)`` pairs, in output order."""
        self.expected.extend(items)

    def flip_bits(self, index: int, mask: int = 1):
        """Non-vacuity hook: XOR ``mask`` into output ``index`` (counted from 0) as received,
        before the comparison -- that output must then be reported as a mismatch."""
        if index < 0 or mask <= 0:
            raise ValueError(f"need index >= 0 and mask > 0, got {index}, {mask}")
        self._flips[index] = mask

    def clear(self):
        """Forget every outstanding expectation (e.g. the blocks a reset threw away)."""
        self.expected.clear()

    def receive(self, actual: int):
        """Compare one received payload with the oldest expectation (the sink's callback)."""
        if not self.expected:
            self.unexpected += 1
            self.log.error("unexpected output %#x (nothing expected)", actual)
            return
        exp, ctx = self.expected.popleft()
        index = self.checked
        actual ^= self._flips.pop(index, 0)
        self.checked += 1
        if actual != exp:
            self.mismatches += 1
            if self.mismatches <= self.max_reports:
                msg = (self.describe(index, exp, actual, ctx) if self.describe
                       else f"output {index}: expected {exp:#x}, got {actual:#x}")
                self.reports.append(msg)
                self.log.error("MISMATCH %s", msg)

    @property
    def done(self) -> bool:
        """Every expected output arrived."""
        return not self.expected

    def assert_clean(self):
        """Fail on an unexpected output, a missing one or any mismatch."""
        assert self.unexpected == 0, f"{self.unexpected} unexpected outputs"
        assert not self.expected, f"{len(self.expected)} expected outputs never arrived"
        assert self.mismatches == 0, (f"{self.mismatches} of {self.checked} outputs mismatched; "
                                      f"first: {self.reports[:1]}")


