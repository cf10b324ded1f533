"""Format-agnostic arithmetic pieces of the MX units, written as gates where it matters.

* :func:`increment_gates`, :func:`negate_gates` -- ``v + 1`` and ``-v`` without a carry chain.
* :func:`leading_zeros`, :func:`trailing_zeros`, :func:`shift_left_parts`,
  :func:`reduce_significand` -- normalization.
* :func:`add_with_carry` -- ``a + b + carry`` as one carry chain.

The other pieces have modules of their own, and their names are here too, for the units:
:mod:`hw.nets` (:func:`wire`, :func:`kept`, :func:`any_of_kept`), :mod:`hw.compare`
(:func:`less_than_const`, :func:`greater_than`, :func:`compare`), :mod:`hw.maxtree` (the
block max's tree) and :mod:`hw.multiply` (the dot unit's LUT multiplier).

Several helpers avoid Amaranth's ``<``, ``>`` and ``*`` on purpose: on ECP5 yosys maps a
comparison to a carry chain and a multiply to a DSP block, both slower here than a few LUT
levels (see the functions).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.utils import bits_for, ceil_log2

from .compare import compare, greater_than, less_than_const
from .maxtree import max_tree_compare, max_tree_levels, max_tree_select, max_tree_wins
from .multiply import pair_sum_tree, pair_sums, partial_product_sum, partial_products
from .nets import any_of_kept, kept, wire

__all__ = ["wire", "less_than_const", "greater_than", "compare", "leading_zeros",
           "trailing_zeros", "trailing_zero_parts", "join_trailing_zero_parts",
           "shift_left_parts",
           "reduce_significand", "increment_gates", "negate_gates", "max_tree_levels",
           "max_tree_compare", "max_tree_wins", "max_tree_select",
           "kept", "any_of_kept", "add_with_carry",
           "partial_products", "pair_sums", "pair_sum_tree",
           "partial_product_sum"]


def increment_gates(v) -> Value:
    """``v + 1`` modulo ``2**len(v)`` as gates (bit ``j`` is ``v[j]`` XOR the AND of the bits
    below it): yosys maps ``+`` to a carry chain, which for a short lane-local value costs
    more than the LUT level or two this takes (see :func:`less_than_const`)."""
    v = Value.cast(v)
    bits, carry = [], Const(1, 1)
    for j in range(len(v)):
        bits.append(v[j] ^ carry)
        carry = carry & v[j]
    return Cat(*bits)


def negate_gates(v) -> Value:
    """``-v`` as gates, for the bit pattern of ``v``: bit ``j`` is ``v[j]`` XOR the OR of the
    bits below it, and one bit more on top (set for a non-zero ``v``), so an unsigned ``v``
    comes out its signed negation one bit wider; of a signed ``v`` the low ``len(v)`` bits
    are right.  No carry chain (see :func:`increment_gates`)."""
    v = Value.cast(v)
    bits, seen = [], Const(0, 1)
    for j in range(len(v)):
        bits.append(v[j] ^ seen)
        seen = seen | v[j]
    return Cat(*bits, seen).as_signed()


def leading_zeros(m: Module, v, name: str = "lzc") -> Signal:
    """Number of leading zeros of ``v`` (``len(v)`` for zero), as a log-depth tree.

    Parameters
    ----------
    m : Module
    v : Value
        Unsigned bit vector of any width >= 1.
    name : str
        Prefix of the generated signals.

    Returns
    -------
    Signal
        Unsigned, ``bits_for(len(v))`` bits.
    """
    v = Value.cast(v)
    w = len(v)
    p = 1 << ceil_log2(w)
    # Pad below with ones: the count of a zero input then stops at exactly w.
    padded = Cat(Const((1 << (p - w)) - 1, p - w), v) if p > w else v
    padded = wire(m, padded, f"{name}_in")

    def tree(x, tag):  # (count, all_zero) of a power-of-two-wide vector
        if len(x) == 1:
            return ~x[0], ~x[0]
        h = len(x) // 2
        c_hi, z_hi = tree(x[h:], tag + "h")
        c_lo, z_lo = tree(x[:h], tag + "l")
        z_hi = wire(m, z_hi, f"{name}_z{tag}h")
        count = wire(m, Mux(z_hi, h + c_lo, c_hi), f"{name}_c{tag}")
        return count, z_hi & z_lo

    count, _ = tree(padded, "")
    return wire(m, count.as_unsigned()[:bits_for(w)], name)


def trailing_zeros(m: Module, v, name: str = "tzc") -> Signal:
    """Number of trailing zeros of ``v`` (``len(v)`` for zero): :func:`leading_zeros` of its
    bits reversed (the same tree, no logic of its own)."""
    return leading_zeros(m, Value.cast(v)[::-1], name=name)


def trailing_zero_parts(m: Module, v, parts: int, name: str) -> Value:
    """The first step of ``v``'s trailing-zero count over two pipeline sections: the
    :func:`trailing_zeros` of each of ``parts`` equal parts of ``v`` (from the lsb; a power of
    two of bits each), as one Value to cross a boundary; :func:`join_trailing_zero_parts` ends
    the count after it (a 24-bit count in one section, five LUT levels, was a critical path in
    context)."""
    v = Value.cast(v)
    size = len(v) // parts
    if parts < 1 or size * parts != len(v) or size & (size - 1):
        raise ValueError(f"{len(v)} bits do not split into {parts} parts of a power of two")
    return Cat(*(trailing_zeros(m, v[c * size:(c + 1) * size], name=f"{name}_{c}")
                 for c in range(parts)))


def join_trailing_zero_parts(counts, width: int, parts: int) -> Value:
    """The trailing zeros of a ``width``-bit value from its parts' counts
    (:func:`trailing_zero_parts`): the first part's that is not all zeros, above the parts
    below it (``width`` for zero)."""
    size = width // parts
    step = bits_for(size)
    count = [Value.cast(counts)[c * step:(c + 1) * step] for c in range(parts)]
    total = count[-1] + size * (parts - 1)
    for c in reversed(range(parts - 1)):  # a part below ``size`` zeros ends the count
        total = Mux(count[c][-1], total, Cat(count[c][:-1], Const(c, bits_for(parts))))
    return total


def shift_left_parts(value, amounts):
    """``value << amount`` at ``value``'s width, in ``len(amounts)`` parts of its bits, part
    ``c`` shifted by ``amounts[c]`` (copies of one amount in registers of their own, each
    driving a part's muxes: from one register, the amount's fan-out to a wide shifter is a
    unit's critical path, as in the NVFP4 dequantizer's ``pnorm``)."""
    value = Value.cast(value)
    width = len(value)
    bounds = [c * width // len(amounts) for c in range(len(amounts) + 1)]
    return Cat(*((value << a)[lo:hi] for a, lo, hi in zip(amounts, bounds[:-1], bounds[1:],
                                                          strict=True)))


def reduce_significand(m: Module, sig, lz, keep: int, name: str = "red"):
    """Normalize ``sig`` (``sig << lz``) and keep only its top ``keep`` bits plus a sticky bit.

    Returns ``Cat(sticky, (sig << lz)[-keep:])`` (``keep + 1`` bits) when ``len(sig) > keep + 1``,
    else ``sig << lz`` itself.  The sticky bit (OR of the normalized bits below the kept ones)
    is computed from ``sig`` and ``lz`` directly (a mask), in parallel with the shift.
    """
    sig, lz = Value.cast(sig), Value.cast(lz)
    p = len(sig)
    norm = wire(m, (sig << lz)[:p], f"{name}_norm")
    if p <= keep + 1:
        return norm
    low = p - keep  # normalized bits [0, low) fold into the sticky bit
    # normalized bit j comes from sig bit j - lz: sig bit i lands below `low` iff i + lz < low
    # (lz < low - i as gates, not carry chains: see less_than_const)
    sticky = 0
    for i in range(low):
        sticky = sticky | (sig[i] & less_than_const(m, lz, low - i, f"{name}_below{i}",
                                                    tree=True))
    return wire(m, Cat(sticky, norm[low:]), f"{name}_red")


def add_with_carry(a, b, carry):
    """``a + b + carry`` (``carry`` one bit), ``max(len(a), len(b)) + 1`` bits, as one carry
    chain: the carry enters below bit 0, ``(2a + carry) + (2b + 1)``, whose bit 0 carries
    ``carry`` into bit 1.  Written ``a + b + carry``, yosys builds two chains in series (the
    dot's window add: 38 cells where one chain of 18 does)."""
    a, b, carry = Value.cast(a), Value.cast(b), Value.cast(carry)
    if len(carry) != 1:
        raise ValueError(f"carry must be one bit, not {len(carry)}")
    width = max(len(a), len(b)) + 1
    return (Cat(carry, a) + Cat(Const(1, 1), b))[1:width + 1]
