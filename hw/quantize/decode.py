"""The quantizer's first sections: ``input``, ``decode`` and ``norm``, per lane.

``decode`` splits each input value into sign, exponent field and fraction and counts the
fraction's leading zeros; ``norm`` forms the lane's binade key and its normalized significand
``s2`` (the top ``keep`` bits and a sticky bit).  Where the block maximum is taken over
exponent fields (:func:`hw.quantize.sections.exponent_field_tree`), the tree's first level is
here too: its comparisons in ``decode``, its selects in ``norm``.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux

from ..arith import leading_zeros, max_tree_compare, max_tree_select, reduce_significand, wire
from .fields import (
    above_max_normal,
    binade_key,
    comparison_entries,
    comparison_fields,
    pad_to_grid,
    tree_fields,
)
from .scale import scale_candidates
from .sections import NORM_SHIFT_BITS, subnormal_shift_bits

__all__ = ["decode_section", "norm_section", "late_lanes", "late_shift_bits"]


def decode_section(scope, g, payload):
    """The ``input`` and ``decode`` sections: per lane (of ``payload``'s ``data``) the sign,
    the exponent field ``e``, ``e != 0``, the fraction and its leading zeros ``lzf``; the
    control fields beside them.  Returns the view after the ``decode`` boundary."""
    m, input_format = scope.module, g.input_format
    payload = scope.boundary(payload, "input")
    lanes = []
    for i in range(g.block_size):
        w = payload.data[i]
        e, frac = w[input_format.mbits:g.mag_w], w[:input_format.mbits]
        lanes.append({"neg": w[g.mag_w], "e": e, "nz_e": e != 0, "frac": frac,
                      "lzf": leading_zeros(m, frac, name=scope.name(f"lane{i}_lz"))})
    # the block-max tree's first level over exponent fields: its comparisons here, beside
    # the leading-zero counts (exponent_field_tree); its selects in norm
    first = None
    if g.exponent_field_tree:
        first = comparison_fields(max_tree_compare(m, [ln["e"] for ln in lanes], 2,
                                                   scope.name("amax0"), equal=g.rceil_built))
    return scope.cross({"lanes": lanes, "first": first, **g.ctl_fields(payload)}, "decode")


def late_shift_bits(g) -> int:
    """Bits of a subnormal lane's shift that move past the ``norm`` register: where the shift
    (:func:`hw.quantize.sections.subnormal_shift_bits`) has more than
    :data:`hw.quantize.sections.NORM_SHIFT_BITS` bits and no rceil flag is taken from ``s2``
    (the exponent-field tree), norm keeps ``2^late - 1`` more bits and the first section after
    it shifts by the rest; else 0."""
    sub_shift = subnormal_shift_bits(g.fmt, g.input_format, g.keep)
    return (sub_shift - NORM_SHIFT_BITS
            if g.exponent_field_tree and sub_shift > NORM_SHIFT_BITS else 0)


def norm_section(scope, g, x):
    """The ``norm`` section on the ``decode`` view ``x``: per lane the binade key (or, over
    exponent fields, its parts: the tree does not need it, and cmp is its first use), the
    normalized significand ``s2``, the zero flag and the late shift bits; over exponent
    fields the tree's first level's selects (:func:`hw.quantize.amax.amax_tree` goes on from
    them).  Returns the view after the ``norm`` boundary.

    A normal's significand 1.frac is already normalized; a subnormal's frac moves up by
    lzf + 1 (lzf = its leading zeros), i.e. (frac << 1) << lzf, by lzf's low bits only
    where the lanes beyond them can only be shifted out whole (``subnormal_shift_bits``).
    """
    m, fmt, input_format = scope.module, g.fmt, g.input_format
    sub_shift = subnormal_shift_bits(fmt, input_format, g.keep)
    late_bits = late_shift_bits(g)
    kept = g.keep + (1 << late_bits) - 1
    lanes = []
    for i in range(g.block_size):
        ln = x.lanes[i]
        e, nz_e, frac, lzf = ln.e, ln.nz_e, ln.frac, ln.lzf
        key = ({"e": e, "nz_e": nz_e, "lzf": lzf} if g.exponent_field_tree else
               {"key": binade_key(m, e, nz_e, lzf, scope.name(f"lane{i}_key"))})
        sub = reduce_significand(m, Cat(Const(0, 1), frac),
                                 Cat(Const(0, late_bits), lzf[late_bits:sub_shift]), kept,
                                 name=scope.name(f"lane{i}_s"))
        nrm = reduce_significand(m, Cat(frac, Const(1, 1)), Const(0, 1), kept,
                                 name=scope.name(f"lane{i}_n"))
        s2 = pad_to_grid(wire(m, Mux(nz_e, nrm, sub), scope.name(f"lane{i}_s2")), g.mb)
        # zero: key == zero_key, tested on E and lzf directly (not after the -lzf carry chain)
        zero = wire(m, ~nz_e & (lzf == input_format.mbits), scope.name(f"lane{i}_zero"))
        late = Mux(nz_e, 0, lzf[:late_bits]) if late_bits else None
        lanes.append({"neg": ln.neg, "zero": zero, "s2": s2, **key, "late": late})

    # the tree's leaves (key, rceil flag): the first level's selects over exponent fields,
    # where a normal lane's flag comes from its fraction (a subnormal's cannot matter:
    # exponent_field_tree)
    tree = None
    if g.exponent_field_tree:
        leaves = [(x.lanes[i].e,
                   above_max_normal(m, Cat(x.lanes[i].frac, Const(1, 1)), fmt,
                                    scope.name(f"lane{i}_gt")) if g.rceil_built else None)
                  for i in range(g.block_size)]
        if not g.tree_radices:  # this is the tree's only level (k = 2)
            leaves = scale_candidates(scope, g, leaves, "amax0")
        tree = tree_fields(max_tree_select(m, leaves,
                                           comparison_entries(x.first, g.rceil_built), 2,
                                           scope.name("amax0")), complements=True)
    return scope.cross({"lanes": lanes, "tree": tree, **g.ctl_fields(x)}, "norm")


def late_lanes(scope, g, x) -> list[dict]:
    """The lanes of the ``norm`` view ``x`` in the section after it: the subnormal shift's
    low bits, if past the register (exact, since the leading one is then within the top
    ``2^late`` bits and the sticky bit stays below the kept ones), and over exponent fields
    the binade key.  Returns per lane ``neg``, ``zero``, ``s2`` and ``key``."""
    m = scope.module
    late_bits = late_shift_bits(g)
    lanes = []
    for i, ln in enumerate(x.lanes):
        s2 = ln.s2
        if late_bits:
            s2 = wire(m, reduce_significand(m, s2, ln.late, g.keep,
                                            name=scope.name(f"lane{i}_late")),
                      scope.name(f"lane{i}_s2late"))
        key = (binade_key(m, ln.e, ln.nz_e, ln.lzf, scope.name(f"lane{i}_key"))
               if g.exponent_field_tree else ln.key)
        lanes.append({"neg": ln.neg, "zero": ln.zero, "s2": s2, "key": key})
    return lanes
