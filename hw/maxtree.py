"""The maximum tree of the quantizer's block max, radix 2 or 4, in halves a pipeline may
split.

* :func:`max_tree_levels` -- levels of a radix-2 or radix-4 maximum tree over (key, flag)
  entries; :func:`max_tree_compare` and :func:`max_tree_select`, its two halves, and
  :func:`max_tree_wins`, the winners a pipeline may register between them.
"""

from __future__ import annotations

import itertools

from amaranth.hdl import Cat, Const, Module, Mux, Value
from amaranth.lib import data

from .compare import compare
from .nets import wire

__all__ = ["max_tree_levels", "max_tree_compare", "max_tree_wins", "max_tree_select"]


def max_tree_levels(m: Module, level, levels: int, name: str = "mt", radix: int = 2):
    """``levels`` levels of a maximum tree over ``level`` (a list of ``(key, flag)``).

    Each level merges groups of ``radix`` (2 or 4) entries into one (the list's length must
    stay a multiple of ``radix`` while levels remain).  The flag of a merged group is the OR of
    the flags of the leaves whose key equals the group's maximum (flags may be None: no flag
    logic).  Call repeatedly, with pipeline registers in between, until one ``(key, flag)`` is
    left: the maximum key and whether a leaf at that maximum has its flag.

    A level is :func:`max_tree_compare` followed by :func:`max_tree_select`; a pipeline may
    register the comparisons between the two (a split level).  A radix-2 level is one
    comparison and a 2:1 select per pair.  A radix-4 level does the work of two radix-2 levels
    with its six comparisons in parallel: one comparison's depth plus a one-hot select, not
    two comparisons and two selects in series.
    """
    level = list(level)
    for _ in range(levels):
        if len(level) == 1:
            break
        comparisons = max_tree_compare(m, [key for key, _ in level], radix, name,
                                       equal=level[0][1] is not None)
        level = max_tree_select(m, level, comparisons, radix, name)
    return level


def max_tree_compare(m: Module, keys, radix: int, name: str = "mt", *, equal: bool = False,
                     complements=None):
    """The comparisons of one maximum-tree level over ``keys`` (their count a multiple of
    ``radix``, 2 or 4): per group of ``radix`` keys, a list of ``(key_q > key_p, key_q ==
    key_p)`` for every pair ``p < q`` in ``itertools.combinations`` order.  The equalities are
    None unless ``equal`` (only flags need them).

    Unsigned keys compare on carry chains: ``a > b`` is the carry out of ``a + ~b``, one
    chain and no LUT level after it (the chain's own LUTs take ``~b``; ``complements``, the
    keys' complements where the caller has them in a register, spare even that).  As gate
    trees (:func:`compare`, which signed keys and the equalities still use) the tree's
    comparisons took four LUT levels on ECP5, where a 250 MHz stage holds three
    (docs/quantizer.md, 'Toward 250 MHz').
    """
    if radix not in (2, 4):
        raise ValueError(f"radix must be 2 or 4, got {radix}")
    if len(keys) % radix:
        raise ValueError(f"{len(keys)} keys do not form groups of {radix}")
    if complements is not None and len(complements) != len(keys):
        raise ValueError(f"{len(complements)} complements for {len(keys)} keys")
    out = []
    for j in range(0, len(keys), radix):
        tag = f"{name}_l{len(keys)}_{j // radix}"
        group = []
        for p, q in itertools.combinations(range(radix), 2):
            a, b = Value.cast(keys[j + q]), Value.cast(keys[j + p])
            if a.shape().signed or b.shape().signed:
                greater, eq = compare(m, a, b, f"{tag}_gt{q}{p}")
            else:
                nb = ~b if complements is None else complements[j + p]
                w = max(len(a), len(b))
                ones = w - len(b)  # ~b of b zero-extended to w bits
                total = (Cat(a, Const(0, w + 1 - len(a)))
                         + Cat(nb, Const((1 << ones) - 1, ones), Const(0, 1)))
                greater = wire(m, total[w], f"{tag}_gt{q}{p}")  # the carry out
                eq = compare(m, a, b, f"{tag}_eq{q}{p}")[1] if equal else None
            group.append((greater, eq if equal else None))
        out.append(group)
    return out


def max_tree_wins(m: Module, comparisons, radix: int, name: str = "mt"):
    """Per group of a maximum-tree level, which of its ``radix`` entries wins, one-hot, from
    the group's ``comparisons`` (:func:`max_tree_compare`): entry ``i`` wins if its key is
    greater than every earlier entry's and at least every later entry's (the earliest of equal
    maxima).  A pipeline may register these in place of the comparisons
    (:func:`max_tree_select` with ``wins``): fewer bits for radix 4, and the select after the
    register is one AND-OR level."""
    out = []
    for g, group_cmp in enumerate(comparisons):
        tag = f"{name}_l{len(comparisons) * radix}_{g}"
        later_greater = _by_pair((gt for gt, _ in group_cmp), radix)
        out.append([wire(m, _all([later_greater[p, i] for p in range(i)]
                                 + _not_below_later(later_greater, i, radix)),
                         f"{tag}_win{i}")
                    for i in range(radix)])
    return out


def _by_pair(values, radix: int) -> dict:
    """One value per pair ``p < q`` of a group, in ``itertools.combinations`` order, by pair."""
    return dict(zip(itertools.combinations(range(radix), 2), values, strict=True))


def _not_below_later(later_greater, i: int, radix: int) -> list:
    """Entry ``i``'s key is at least every later entry's: no later one is greater."""
    return [~later_greater[i, q] for q in range(i + 1, radix)]


def max_tree_select(m: Module, level, comparisons, radix: int, name: str = "mt", *,
                    wins=None):
    """The next level of a maximum tree: each group of ``radix`` entries of ``level`` merged
    into one ``(key, flag)`` by its ``comparisons`` (:func:`max_tree_compare`, or the same
    bits after a pipeline register), or by its ``wins`` (:func:`max_tree_wins`, registered;
    then ``comparisons`` may be None, and the entries may have no flags).

    Exactly one entry of a group wins (:func:`max_tree_wins`): radix 2 is a 2:1 select,
    radix 4 a one-hot AND-OR select (no chain of 2:1 muxes).  The flag needs every entry at
    the maximum, not only the winner: entry ``i`` is at the maximum if its key is at least
    every other's, which for an earlier entry ``p`` is ``key_i > key_p | key_i == key_p``.

    The comparisons are made already, so what the select moves need not be the keys: an
    entry's key may be a :class:`~amaranth.lib.data.View` of values worked out from it (a
    tree's last level selecting its maximum's consequences, made beside its comparisons),
    selected whole; it comes out a View of the same layout.
    """
    if wins is None:
        wins = max_tree_wins(m, comparisons, radix, name)
    elif comparisons is None:
        comparisons = [None] * len(wins)
    nxt = []
    for j, group_cmp, group_wins in zip(range(0, len(level), radix), comparisons, wins,
                                        strict=True):
        tag = f"{name}_l{len(level)}_{j // radix}"
        group = level[j:j + radix]
        layout = group[0][0].shape() if isinstance(group[0][0], data.View) else None
        if layout is not None and any(key.shape() != layout for key, _ in group):
            raise ValueError(f"{tag}: the Views a select moves must have one layout")
        keys = [wire(m, key, f"{tag}_k{i}") for i, (key, _) in enumerate(group)]
        flags = [flag for _, flag in group]
        with_flag = flags[0] is not None
        if with_flag and group_cmp is None:
            raise ValueError(f"{tag}: flags need the comparisons, not only the wins")
        if radix == 2:
            key = Mux(group_wins[1], keys[1], keys[0])
        else:
            width = len(Value.cast(keys[0]))
            key = 0
            for i in range(radix):  # one-hot: OR of the winner's key and zeros
                key = key | (keys[i].as_unsigned() & group_wins[i].replicate(width))
            key = key.as_signed() if keys[0].shape().signed else key
        key = wire(m, key, tag)
        if layout is not None:
            key = layout(key)
        flag = None
        if with_flag:
            later_greater = _by_pair((g for g, _ in group_cmp), radix)
            equal = _by_pair((e for _, e in group_cmp), radix)
            at_max = [_all([later_greater[p, i] | equal[p, i] for p in range(i)]
                           + _not_below_later(later_greater, i, radix))
                      for i in range(radix)]
            flag = wire(m, _any([at_max[i] & flags[i] for i in range(radix)]), f"{tag}_f")
        nxt.append((key, flag))
    return nxt


# A chain of two-input gates, not ``Cat(*terms).all()`` / ``.any()``: the reduction cells map
# worse on ECP5 (measured: the bf16 -> fp8_e4m3 quantizer at k = 32 and 5 stages, radix-4
# tree, 3,767 LUT4 with the reductions against 3,731 with these chains).


def _all(terms):
    out = Const(1, 1)
    for t in terms:
        out = out & t
    return out


def _any(terms):
    out = Const(0, 1)
    for t in terms:
        out = out | t
    return out
