"""The dot unit's LUT multiplier: partial products summed by a balanced tree of carry chains.

* :func:`partial_products` -- the rows of ``x * y``.
* :func:`pair_sums` -- one level of the tree of carry chains.
* :func:`pair_sum_tree` -- the rest of the tree; :func:`partial_product_sum`, the whole
  product.

Not ``*``: yosys maps a multiply of 2 bits or more to a DSP block on ECP5, slower here than
these few bits (see :func:`partial_product_sum`).
"""

from __future__ import annotations

import itertools

from amaranth.hdl import Module, Mux, Signal, Value, signed

from .nets import wire

__all__ = ["partial_products", "pair_sums", "pair_sum_tree", "partial_product_sum"]


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
