"""Validation of unit parameters, one wording for every unit.

Each function returns the value it accepts and raises ``TypeError`` (wrong type) or
``ValueError`` (out of range, unknown name) with a one-line message naming the parameter; the
CLI prints that line as its error.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["check_int", "check_power_of_two", "check_block_size", "check_choice", "check_stages",
           "MAX_BLOCK"]

#: Largest block size of every unit.
MAX_BLOCK = 64


def check_int(name: str, value, lo: int, hi: int) -> int:
    """``value``, an int (not a bool) in ``lo..hi``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be in {lo}..{hi}, got {value}")
    return value


def check_power_of_two(name: str, value, lo: int, hi: int) -> int:
    """``value``, an int power of two in ``lo..hi`` (block sizes, context counts)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not lo <= value <= hi or value & (value - 1):
        raise ValueError(f"{name} must be a power of two in {lo}..{hi}, got {value}")
    return value


def check_block_size(value) -> int:
    """A block size: a power of two in ``2..MAX_BLOCK``."""
    return check_power_of_two("block_size", value, 2, MAX_BLOCK)


def check_choice(name: str, value, choices: Iterable[str]) -> str:
    """``value``, one of ``choices`` (names)."""
    choices = tuple(choices)
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; expected one of {', '.join(choices)}")
    return value


def check_stages(value, max_stages: int) -> int:
    """A pipeline depth: registered boundaries, ``1..max_stages``."""
    return check_int("stages", value, 1, max_stages)
