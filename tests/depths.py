"""Pipeline depths for test configurations, chosen by what a configuration is for.

A depth picked for a reason (the block-max tree unsplit, a DSP block's input registers used,
every boundary registered) is found from the unit's own interface -- its ``max_stages``,
``sections`` and ``parameters`` through ``python -m hw generate``'s argument parsing -- so
that a change of the sections moves the depth with them, and a depth that no longer exists
fails with a message saying which.
"""

from __future__ import annotations

from collections.abc import Callable

from hw.cli import units
from hw.pipeline import registered_boundaries


def build(unit: str, argv: list[str], stages: int | None = None):
    """The component ``python -m hw generate <unit> <argv> [--stages stages]`` would write."""
    return units()[unit].build_from([*argv, *([] if stages is None else
                                              ["--stages", str(stages)])])


def max_stages(unit: str, argv: list[str]) -> int:
    """The deepest pipeline of the configuration (every boundary registered)."""
    return build(unit, argv).max_stages


def depth_where(unit: str, argv: list[str], predicate: Callable, what: str, *,
                deepest: bool = False, at_least: int = 1) -> int:
    """The fewest (``deepest``: the most) stages, from ``at_least``, at which
    ``predicate(component)`` holds; LookupError naming the configuration and ``what`` if no
    depth has it."""
    depths = range(at_least, max_stages(unit, argv) + 1)
    for stages in (reversed(depths) if deepest else depths):
        if predicate(build(unit, argv, stages)):
            return stages
    raise LookupError(f"{unit} {' '.join(argv)}: no depth in {at_least}..{depths.stop - 1} "
                      f"{what}; the unit's sections changed: choose the configuration again")


def unsplit_tree(unit: str, argv: list[str], **kwargs) -> int:
    """A quantizer depth whose block-max tree is not split (``max_tree_split`` false)."""
    return depth_where(unit, argv, lambda c: not c.parameters["max_tree_split"],
                       "has the block-max tree unsplit", **kwargs)


def registering(unit: str, argv: list[str], boundaries: dict[str, bool], **kwargs) -> int:
    """A depth at which each of ``boundaries`` holds a register iff its value is true (the
    sidecar's ``registered_boundaries``)."""
    def holds(comp):
        registered = registered_boundaries(comp.sections, comp.stages)
        return all((name in registered) == want for name, want in boundaries.items())

    return depth_where(unit, argv, holds, f"registers exactly {boundaries}", **kwargs)


def dsp_registers(unit: str, argv: list[str], inputs: bool, output: bool, **kwargs) -> int:
    """A depth of a unit with MULT18X18D blocks that uses the blocks' input registers iff
    ``inputs`` and their output register iff ``output`` (the boundaries they are, as the
    proofs declare them: :data:`formal.units.MULT18X18D_BLOCKS`)."""
    from formal.units import MULT18X18D_BLOCKS

    return registering(unit, argv, {MULT18X18D_BLOCKS[0][1]: inputs,
                                    MULT18X18D_BLOCKS[-1][1]: output}, **kwargs)
