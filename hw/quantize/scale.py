"""The quantizer's scale path: the block's scale from its maximum key, in copies.

The block's scale is ``e = clamp(key_max - (key_bias + emax) + a, -127, 127)`` for ``a = 0``
(floor) and ``a = 1`` (rceil's one binade up), carried as ``e_key = e + e_key_off``, the
offset of the lanes' element binades.  It is worked out for each of the four (or two)
candidates of the block-max tree's last level, beside that level's comparisons, so its select
picks the answer ready (:func:`hw.arith.max_tree_select` moves a View whole): the comparisons
with the clamp bounds, the addition and the clamp muxes are off the path from the tree to the
lanes.  The scale code, e_key's constant apart, is made in ``cmp`` (off that path too), where
a zero block (the key tree's ``zero_key``) and a NaN/Inf block override it.

From its last register before ``cmp`` (the unit's ``scale_copies_at``) on, the scale path is
built once per group of lanes, each on a copy of that register
(:meth:`hw.pipeline.Pipeline.replicate`), so no one net carries e_key to all k lanes
(:data:`hw.quantize.sections.SCALE_COPIES`).
"""

from __future__ import annotations

from amaranth.hdl import Mux

from golden.formats import SCALE_EMAX, SCALE_EMIN, SCALE_MODE_IDS

from ..arith import less_than_const, wire

__all__ = ["scale_candidate", "scale_candidates", "cross_tails", "scale_section"]


def scale_candidate(scope, g, key, name: str):
    """The scale of a block whose maximum key is ``key``: ``e_key0`` (floor) and, with rceil
    built, ``e_key1`` (one binade up), both clamped; whether the block is NaN/Inf
    (``nonfinite``) and, over keys, all zero (``zero``).  One struct signal ``name``."""
    m = scope.module
    e0, e_key_off = g.e0, g.e_key_off
    fields = {"nonfinite": key == g.e_max_key,
              # over exponent fields the zero block's code is the clamp's
              "zero": None if g.exponent_field_tree else key == g.zero_key}
    for a in ((0, 1) if g.rceil_built else (0,)):
        lo = less_than_const(m, key, e0 - a + SCALE_EMIN, scope.name(f"{name}_lo{a}"),
                             tree=True)
        hi = ~less_than_const(m, key, e0 - a + SCALE_EMAX + 1, scope.name(f"{name}_hi{a}"),
                              tree=True)
        fields[f"e_key{a}"] = Mux(lo, SCALE_EMIN + e_key_off,
                                  Mux(hi, SCALE_EMAX + e_key_off,
                                      key + (a - e0 + e_key_off)))
    return wire(m, fields, scope.name(name))


def scale_candidates(scope, g, tree, name: str) -> list:
    """The last tree level's (key, flag) entries with each key replaced by its
    :func:`scale_candidate` (``<name>_c<i>``)."""
    return [(scale_candidate(scope, g, key, f"{name}_c{i}"), flag)
            for i, (key, flag) in enumerate(tree)]


def cross_tails(scope, g, fields, tails, name: str):
    """Carry a section's ``fields`` and the scale path's part of it, ``tails`` (one entry per
    copy; one before the replicas), over the boundary ``name``.  At ``scale_copies_at`` the
    one tail becomes ``scale_copies`` registers; elsewhere the tails cross as a field
    ``copies``.  Returns the view of ``fields`` and the list of tails after the boundary."""
    if name == g.scale_copies_at:
        x = scope.cross(fields, name)
        return x, scope.replicate(wire(scope.module, tails[0],
                                       scope.signal_name(f"{name}_tail")),
                                  name, g.scale_copies)
    x = scope.cross({**fields, "copies": tails}, name)
    return x, list(x.copies)


def scale_section(scope, g, x, lanes, amax):
    """The ``scale`` section (with rceil built; else no section, the same values as one
    signal): per copy of the tree's outputs ``amax``, the floor's or one binade up's
    ``e_key``, beside the lanes and the block's NaN/Inf and zero flags.  ``x`` is the view
    after the tree's last boundary, ``lanes`` its lanes.  Returns the view and the ``e_key``
    of each copy."""
    m = scope.module
    e_keys = []
    for c in range(len(amax)):
        e_key = amax[c].cand.e_key0
        if g.rceil_built:
            above = amax[c].above
            if g.runtime_scale:
                above = above & (x.scale_mode == SCALE_MODE_IDS["rceil"])
            e_key = Mux(above, amax[c].cand.e_key1, e_key)
        e_keys.append(e_key)
    y = {"lanes": lanes, **g.ctl_fields(x, scale_mode=False),
         "nonfinite": amax[0].cand.nonfinite,
         "zero": None if g.exponent_field_tree else amax[0].cand.zero}
    if g.rceil_built:
        return cross_tails(scope, g, y, e_keys, "scale")
    return wire(m, y, scope.signal_name("scale_in")), e_keys
