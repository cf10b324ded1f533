"""Idle and backpressure patterns: infinite generators of bool, True = "hold off this cycle".

A :class:`~tb.stream.drivers.StreamSource` consults its pattern once per cycle in which a new
item could start (True inserts an idle cycle); a :class:`~tb.stream.drivers.StreamSink` once
per cycle (True holds ``ready`` low).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

__all__ = ["never", "always", "random_pattern", "bursty_pattern"]


def never() -> Iterator[bool]:
    """Never idle / never stall."""
    return itertools.repeat(False)


def always() -> Iterator[bool]:
    """Always idle / always stall."""
    return itertools.repeat(True)


def random_pattern(rng: np.random.Generator, p: float, chunk: int = 4096) -> Iterator[bool]:
    """Independent cycles, each idle with probability ``p``."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"probability p must be in [0, 1], got {p}")

    def cycles():
        while True:
            yield from (rng.random(chunk) < p).tolist()
    return cycles()


def bursty_pattern(rng: np.random.Generator, max_run: int = 16) -> Iterator[bool]:
    """Alternating runs of busy and idle cycles of random length 1..max_run."""
    if max_run < 1:
        raise ValueError(f"max_run must be >= 1, got {max_run}")

    def cycles():
        state = False
        while True:
            yield from itertools.repeat(state, int(rng.integers(1, max_run + 1)))
            state = not state
    return cycles()


