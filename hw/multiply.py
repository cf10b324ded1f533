"""The dot unit's LUT multiplier: partial products summed by a balanced tree of carry chains.

* :func:`partial_products` -- the rows of ``x * y``.
* :func:`pair_sums` -- one level of the tree of carry chains.
* :func:`pair_sum_tree` -- the rest of the tree; :func:`partial_product_sum`, the whole
  product.
* :func:`pair_sum_sections` -- the tree over pipeline sections, a few levels in each.

Not ``*``: yosys maps a multiply of 2 bits or more to a DSP block on ECP5, slower here than
these few bits (see :func:`partial_product_sum`).
"""

from __future__ import annotations

import itertools

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed

from .nets import wire

__all__ = ["partial_products", "pair_sums", "pair_sum_tree", "partial_product_sum",
           "pair_sum_sections"]


def partial_products(x, y, *, y_signed: bool = False) -> list[tuple[Value, Value | None]]:
    """The partial products of ``x * y`` for a signed ``x`` and an unsigned ``y`` (or a two's
    complement one, ``y_signed``): one row ``y_j * 2^j * x`` per bit of ``y``, each a
    ``(row, carry)`` pair whose carry (None: none) adds at bit 0; the rows and carries sum to
    ``x * y`` in ``len(x) + len(y)`` bits.

    A two's complement ``y``'s top bit weighs ``-2^j``: its row is ``-(x << j)``, written as
    ``~(x << j)`` with carry ``y_j`` (``-v = ~v + 1``), so that no row needs a negation of its
    own: the ``+1`` is the carry into the chain that adds the row (:func:`pair_sums`).
    """
    x, y = Value.cast(x).as_signed(), Value.cast(y)
    top = len(y) - 1
    return [(Mux(y[j], ~(x << j), 0).as_signed(), y[j]) if y_signed and j == top
            else (Mux(y[j], x << j, 0).as_signed(), None) for j in range(len(y))]


def pair_sums(m: Module, level, width: int, name: str, depth: int = 0):
    """One level of a balanced tree of carry chains: ``level`` (``(value, carry)`` pairs, as
    :func:`partial_products` gives them) added in pairs, each sum with the one carry of its
    two terms; an odd last term passes on (with its carry).  Each sum is a ``width``-bit
    signed signal ``<name>_l<depth>_<i>`` marked ``keep`` (see :func:`partial_product_sum`).
    Returns the next level, ``(sum, None)`` pairs."""
    out = []
    for i in range(0, len(level) - 1, 2):
        (a, carry_a), (b, carry_b) = level[i], level[i + 1]
        if carry_a is not None and carry_b is not None:
            raise ValueError("two carries into one chain")
        carry = carry_a if carry_b is None else carry_b
        pair = Signal(signed(width), name=f"{name}_l{depth}_{i // 2}", attrs={"keep": 1})
        m.d.comb += pair.eq(a + b if carry is None else a + b + carry)
        out.append((pair, None))
    return out + level[len(out) * 2:]


def partial_product_sum(m: Module, x, y, name: str, *, y_signed: bool = False):
    """``x * y`` for a signed ``x`` and an unsigned ``y`` (or a two's complement one,
    ``y_signed``), ``len(x) + len(y)`` bits, signed, as a sum of the shifted partial products
    (:func:`partial_products`), one per bit of ``y``, added in pairs (:func:`pair_sums`): a
    balanced tree of carry chains.

    Not ``*``: yosys maps every multiply of 2 bits or more to a MULT18X18D on ECP5, whose round
    trip through the DSP column is slower than these few bits (significands are 4 bits for
    fp8 e4m3, at most 7 for int8).  Each pair sum is a signal marked ``keep``: otherwise yosys
    (``alumacc``) merges the additions into one carry-save tree in LUTs before one chain,
    which at fp8_e4m3 x fp8_e4m3, k = 32, takes five LUT levels and is the unit's worst
    path (decode -> multiply, 5.9 ns); as two levels of chains, whose partial-product muxes
    sit in the carry cells' own LUTs, the unit has 427 fewer LUT4 (docs/dot.md).
    """
    return pair_sum_tree(m, partial_products(x, y, y_signed=y_signed), len(x) + len(y), name)


def pair_sum_tree(m: Module, level, width: int, name: str, first_depth: int = 0):
    """The sum of ``level`` (``(value, carry)`` pairs), ``width`` bits signed, named ``name``:
    :func:`pair_sums` level after level (their names from ``first_depth`` on) until one is
    left."""
    for depth in itertools.count(first_depth):
        if len(level) == 1:
            value, carry = level[0]
            if carry is not None:
                value = value + carry
            return wire(m, value.as_signed()[:width].as_signed(), name)
        level = pair_sums(m, level, width, name, depth)


def _widen(row, width: int):
    """A non-negative partial product or sum as ``width`` bits."""
    row = Value.cast(row).as_unsigned()
    return Cat(row, Const(0, width - len(row))) if len(row) < width else row[:width]


def pair_sum_sections(scope, lanes: list[dict], ride: dict, *, width: int, names, sections,
                      levels_per_section):
    """Trees of carry chains over pipeline sections: per lane :func:`pair_sums`,
    ``levels_per_section`` levels in each of ``sections`` (boundary names of ``scope``, a
    :class:`hw.scope.PipelineScope`), every lane's rows crossing each boundary as
    ``width``-bit values, until one row (the product) is left.

    Parameters
    ----------
    scope : hw.scope.PipelineScope
    lanes : list of dict
        Per lane ``rows`` (non-negative ``(value, carry)`` pairs whose carries are None, as
        :func:`partial_products` gives them for an unsigned ``y``) and the lane's values that
        ride along beside them.
    ride : dict
        Values that ride along beside the lanes (None: nothing).
    width : int
        Bits of every sum: the product's.
    names : list of str
        Per lane the name of its sums (``<name>_l<depth>_<i>``).
    sections : sequence of str
        The boundaries, in order; the tree must end by the last one.
    levels_per_section : int or tuple of int
        Levels in every section, or per section (one entry per boundary of ``sections``).

    Returns
    -------
    (lanes, ride)
        After the last boundary: per lane a dict of its riding values and ``prod`` (``width``
        bits, unsigned), and ``ride``'s values (None where ``ride`` had None).
    """
    m = scope.module
    lanes = [dict(lane) for lane in lanes]
    levels = (tuple(levels_per_section) if isinstance(levels_per_section, (tuple, list))
              else (levels_per_section,) * len(sections))
    if len(levels) != len(sections):
        raise ValueError(f"{len(levels)} levels per section for {len(sections)} sections")
    depth = 0
    for section, per_section in zip(sections, levels, strict=True):
        for lane, name in zip(lanes, names, strict=True):
            for d in range(per_section):
                if len(lane["rows"]) > 1:
                    lane["rows"] = pair_sums(m, lane["rows"], width, name, depth + d)
        depth += per_section
        y = scope.cross({**ride, "lanes": [
            {**{k: v for k, v in lane.items() if k != "rows"},
             "rows": [_widen(row, width) for row, _ in lane["rows"]]} for lane in lanes]},
            section)
        ride = {k: None if v is None else getattr(y, k) for k, v in ride.items()}
        lanes = [{**{k: getattr(view, k) for k in lane if k != "rows"},
                  "rows": [(row.as_signed(), None) for row in view.rows]}
                 for lane, view in zip(lanes, y.lanes, strict=True)]
    if any(len(lane["rows"]) > 1 for lane in lanes):
        raise ValueError(f"{len(sections)} sections of {levels_per_section} levels do not end "
                         f"the tree")
    return [{**{k: v for k, v in lane.items() if k != "rows"}, "prod": lane["rows"][0][0]}
            for lane in lanes], ride
