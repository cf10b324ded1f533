"""Values of the quantizer's sections as struct fields and back, and small lane helpers.

A section's state crosses its boundary as one struct (:func:`hw.arith.wire`: dicts and lists
of Values become a ``StructLayout`` / ``ArrayLayout`` signal, read back as a ``data.View``).
The block-max tree's entries and comparisons are lists of tuples in :mod:`hw.arith`; these
functions turn them into fields and the registered fields back into entries.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Value
from amaranth.lib import data

from ..arith import negate_gates, wire

__all__ = ["comparison_fields", "comparison_entries", "tree_fields", "tree_complements",
           "tree_entries", "binade_key", "pad_to_grid", "above_max_normal"]


def comparison_fields(comparisons) -> list:
    """A tree level's comparisons (:func:`hw.arith.max_tree_compare`) as struct fields."""
    return [[{"greater": g, "equal": e} for g, e in group] for group in comparisons]


def comparison_entries(fields, rceil_built: bool) -> list:
    """:func:`comparison_fields` back as comparisons (``equal`` only with rceil's flags)."""
    return [[(c.greater, c.equal if rceil_built else None) for c in group]
            for group in fields]


def tree_fields(tree, complements: bool = False) -> list:
    """A tree level's (key, flag) entries as struct fields; from the last level's comparisons
    on, an entry carries its scale candidate (a View, field ``cand``) instead of its key.
    With ``complements``, before a level's comparisons: each unsigned key's complement too
    (``nkey``), the second operand of its carry chains (:func:`hw.arith.max_tree_compare`)."""
    field = "cand" if isinstance(tree[0][0], data.View) else "key"
    nkey = (complements and field == "key"
            and not Value.cast(tree[0][0]).shape().signed)
    return [{field: value, "nkey": ~Value.cast(value) if nkey else None, "flag": flag}
            for value, flag in tree]


def tree_complements(fields):
    """The ``nkey`` fields of :func:`tree_fields`, or None where they were not carried."""
    return [t.nkey for t in fields] if "nkey" in fields[0].shape().members else None


def tree_entries(fields, rceil_built: bool) -> list:
    """:func:`tree_fields` back as (key or candidate, flag) entries."""
    field = "cand" if "cand" in fields[0].shape().members else "key"
    return [(t[field], t.flag if rceil_built else None) for t in fields]


def binade_key(m, e, nz_e, lzf, name: str):
    """A lane's binade key: ``E`` for a normal lane, ``-lzf`` for a subnormal one."""
    return wire(m, Mux(nz_e, e, negate_gates(lzf)), name)


def pad_to_grid(sig, mb: int):
    """A significand shorter than the element grid (``mb + 1`` bits: finer than the input)
    padded with zeros below."""
    return Cat(Const(0, mb + 1 - len(sig)), sig) if len(sig) < mb + 1 else sig


def above_max_normal(m, sig, fmt, name: str):
    """rceil: whether ``1.f > max_normal's 1.g`` (``sig`` MSB-aligned, hidden bit on top)."""
    mb = fmt.mbits
    sig = pad_to_grid(sig, mb)
    top, rest = sig[-(mb + 1):], sig[:-(mb + 1)]
    at_max = (top == fmt.max_significand) & (rest.any() if len(rest) else 0)
    # where max_normal's significand is top's all ones (every format but those of the fn
    # convention with M >= 1, whose is 1.1..10) no top is above it (and a constant
    # comparison would be a lint warning)
    above = (top > fmt.max_significand
             if fmt.max_significand < (1 << len(top)) - 1 else 0)
    return wire(m, above | at_max, name)
