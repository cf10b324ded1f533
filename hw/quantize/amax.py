"""The quantizer's block maximum: a max tree over the lanes' keys or exponent fields.

Each level after the first in ``decode``/``norm`` (:func:`hw.quantize.sections.max_tree_radices`)
is one section ``amax<j>``, or two where a radix-4 level is split
(:func:`hw.quantize.sections.max_tree_split`): its comparisons' winners registered in
``amax<j>_cmp`` (with rceil's flags, the comparisons themselves), then the select.  With
rceil built every entry carries a flag, whether its significand is above the element's
largest normal's.  The last level's entries carry scale candidates
(:func:`hw.quantize.scale.scale_candidates`) in place of keys, so the tree's output is the
block's scale, per copy of the scale path.
"""

from __future__ import annotations

from ..arith import max_tree_compare, max_tree_select, max_tree_wins, wire
from .fields import (
    above_max_normal,
    comparison_entries,
    comparison_fields,
    tree_complements,
    tree_entries,
    tree_fields,
)
from .scale import cross_tails, scale_candidates

__all__ = ["amax_tree"]


def _leaves(scope, g, x, lanes):
    """The tree's entries before its own sections, and their key complements: over exponent
    fields the first level's selects (``x.tree``, from ``norm``), else one leaf per lane
    (key, flagged from its normalized significand)."""
    if g.exponent_field_tree:
        return tree_entries(x.tree, g.rceil_built), tree_complements(x.tree)
    tree = [(lanes[i]["key"],
             above_max_normal(scope.module, lanes[i]["s2"], g.fmt, scope.name(f"lane{i}_gt"))
             if g.rceil_built else None) for i in range(g.block_size)]
    return tree, None


def amax_tree(scope, g, x, lanes):
    """The block-max tree's sections after ``norm`` (view ``x``), carrying ``lanes``
    (:func:`hw.quantize.decode.late_lanes`) and the control fields along.

    Returns the view after the tree's last boundary (``x`` itself where the tree's only level
    is in norm, k = 2), its lanes, and the tree's outputs as one net ``amax``: per copy of
    the scale path (``scale_copies`` entries at every depth, the one path's repeated where it
    has no replicas, so that the net compares across depths; formal/units.py cuts the
    datapath there) the scale candidate ``cand`` and, with rceil, the flag ``above``.
    """
    m, rceil_built = scope.module, g.rceil_built
    tree, complements = _leaves(scope, g, x, lanes)
    # where the tree's only level is in norm (k = 2): its register's entry
    tails = [x.tree] if not g.tree_radices else None
    for j, radix in enumerate(g.tree_radices, 1):  # one or two sections per level
        name = scope.name(f"amax{j}")
        comparisons = max_tree_compare(m, [key for key, _ in tree], radix, name,
                                       equal=rceil_built, complements=complements)
        if j == len(g.tree_radices):
            tree = scale_candidates(scope, g, tree, f"amax{j}")
        levels = [(tree, comparisons, None)]  # per copy: entries, comparisons, wins
        if g.tree_split and radix == 4:
            split = ({"cmp": comparison_fields(comparisons)} if rceil_built else
                     {"wins": max_tree_wins(m, comparisons, radix, name)})
            x, tails = cross_tails(scope, g, {"lanes": lanes, **g.ctl_fields(x)},
                                   [{"tree": tree_fields(tree), **split}], f"amax{j}_cmp")
            lanes = x.lanes
            levels = [(tree_entries(t.tree, rceil_built),
                       comparison_entries(t.cmp, rceil_built) if rceil_built else None,
                       None if rceil_built else [list(group) for group in t.wins])
                      for t in tails]
        selects = [max_tree_select(m, entries, cmps, radix,
                                   name + (f"_r{c}" if len(levels) > 1 else ""), wins=wins)
                   for c, (entries, cmps, wins) in enumerate(levels)]
        x, tails = cross_tails(scope, g, {"lanes": lanes, **g.ctl_fields(x)},
                               [tree_fields(s, complements=True) for s in selects],
                               f"amax{j}")
        lanes = x.lanes
        tree = tree_entries(tails[0], rceil_built)
        complements = tree_complements(tails[0])
    amax = wire(m, [{"cand": t[0].cand, "above": t[0].flag if rceil_built else None}
                    for t in tails * (g.scale_copies // len(tails))], scope.name("amax"))
    return x, lanes, amax
