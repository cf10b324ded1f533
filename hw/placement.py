"""Where a unit's pipeline registers go: placement on per-section delay estimates.

A unit's datapath is a sequence of combinational sections, each with an estimated delay (ns);
:func:`place_registers` chooses which of the boundaries after them hold a register, so that
the largest summed delay between two registers (the critical stage) is as small as possible.
:class:`hw.pipeline.Pipeline` builds the registers where it says, a wide one in parts that
load on enable copies of their own (:func:`enable_parts`).  A delay estimate with its
provenance is an :class:`Estimate` (the units' ``ESTIMATES`` tables).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .params import check_stages

__all__ = ["Estimate", "place_registers", "stage_sections", "stage_delays", "critical_stage",
           "registered_boundaries", "default_stages", "enable_parts"]


@dataclass(frozen=True)
class Estimate:
    """An estimated section delay and what it was measured on.

    Attributes
    ----------
    ns : float
        The section's own delay on ECP5 speed 8, in ns, as
        :func:`place_registers` weighs it.
    provenance : str
        One line: the configuration, depth and nextpnr seeds of the measurement the value
        comes from.
    """

    ns: float
    provenance: str


def place_registers(delays: Sequence[float], stages: int) -> tuple[bool, ...]:
    """Which of the boundaries after ``len(delays)`` sections hold a register.

    The last boundary (the output) is always registered.  The others are placed so that the
    largest summed delay between two registers (the unit's critical stage) is as small as
    possible; ties go to the earliest such placement (lexicographically smallest boundary
    indices).  ``stages = len(delays)`` registers every boundary.

    Parameters
    ----------
    delays : sequence of float
        Estimated delay of each section, in datapath order (ns).
    stages : int
        Registers to place, ``1..len(delays)``.

    Returns
    -------
    tuple of bool
        One flag per boundary, ``stages`` of them True, the last True.
    """
    n = len(delays)
    check_stages(stages, n)
    # best[j][i]: (worst stage delay, cut list) covering sections [0, i) with j registers,
    # the last one after section i - 1 (min: smallest worst delay, then the earliest cuts).
    best = [{0: (0, ())}] + [{} for _ in range(stages)]
    for j in range(1, stages + 1):
        for i in range(j, n + 1):
            cands = [(max(cost, sum(delays[p:i])), cuts + (i,))
                     for p, (cost, cuts) in best[j - 1].items() if p < i]
            if cands:
                best[j][i] = min(cands)
    cuts = set(best[stages][n][1])
    return tuple(i + 1 in cuts for i in range(n))


def stage_sections(sections: Mapping[str, float], stages: int) -> tuple[tuple[str, ...], ...]:
    """The names of the sections in each stage when :func:`place_registers` places ``stages``
    registers on ``sections`` (name -> delay, in datapath order)."""
    groups, current = [], []
    flags = place_registers(list(sections.values()), stages)
    for name, registered in zip(sections, flags, strict=True):
        current.append(name)
        if registered:
            groups.append(tuple(current))
            current = []
    return tuple(groups)


def stage_delays(delays: Sequence[float], stages: int) -> tuple[float, ...]:
    """The summed section delay of each stage when :func:`place_registers` places ``stages``
    registers after sections of ``delays`` (their maximum is the estimated critical stage)."""
    groups = stage_sections(dict(enumerate(delays)), stages)
    return tuple(sum(delays[i] for i in group) for group in groups)


def critical_stage(delays: Sequence[float], stages: int) -> float:
    """The estimated critical stage: the largest summed section delay between two registers
    when :func:`place_registers` places ``stages`` registers after sections of ``delays``."""
    return max(stage_delays(delays, stages))


def default_stages(delays: Sequence[float]) -> int:
    """A unit's default depth: the fewest registers whose placement (:func:`place_registers`)
    has the estimated critical stage of the deepest pipeline, i.e. the largest single section
    delay.  A register beyond it adds a cycle of latency and a stage of flip-flops but, by the
    estimates, no clock: the quantizer measured so (docs/quantizer.md, default depth)."""
    delays = list(delays)
    worst = max(delays)
    # the estimates are sums of a few decimals: compare with a tolerance, not exactly
    return next(stages for stages in range(1, len(delays) + 1)
                if critical_stage(delays, stages) <= worst + 1e-9)


def registered_boundaries(sections: Mapping[str, float], stages: int) -> tuple[str, ...]:
    """Names of the registered boundaries of a unit with ``sections`` (name -> delay, in
    datapath order) at depth ``stages``, in datapath order (the sidecar's
    ``registered_boundaries``)."""
    flags = place_registers(list(sections.values()), stages)
    return tuple(name for name, reg in zip(sections, flags, strict=True) if reg)


def enable_parts(width: int, enable_load: int | None) -> tuple[tuple[int, int], ...]:
    """The bit ranges ``(lo, hi)`` of a ``width``-bit stage register that load on one copy
    of its stage enable each (:class:`hw.pipeline.Pipeline`'s ``enable_load``): the fewest
    equal parts of at most ``enable_load`` bits, in bit order (one part for None)."""
    if enable_load is None or width <= enable_load:
        return ((0, width),)
    parts = -(-width // enable_load)
    return tuple((c * width // parts, (c + 1) * width // parts) for c in range(parts))
