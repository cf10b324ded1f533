"""Format-agnostic arithmetic pieces of the MX units, written as gates where it matters.

* :func:`wire` -- name a value (or a dict/list nesting of values, as one struct signal).
* :func:`less_than_const`, :func:`greater_than`, :func:`compare` -- comparisons.
* :func:`leading_zeros`, :func:`reduce_significand` -- normalization.
* :func:`increment_gates`, :func:`negate_gates` -- ``v + 1`` and ``-v`` without a carry chain.
* :func:`max_tree_levels` -- levels of a radix-2 or radix-4 maximum tree (the quantizer's
  block max); :func:`max_tree_compare` and :func:`max_tree_select`, its two halves, and
  :func:`max_tree_wins`, the winners a pipeline may register between them.
* :func:`kept`, :func:`any_of_kept` -- a net, an OR of terms, that synthesis maps as written.
* :func:`add_with_carry` -- ``a + b + carry`` as one carry chain.
* :func:`partial_products`, :func:`pair_sums`, :func:`pair_sum_tree`,
  :func:`partial_product_sum` -- the dot unit's LUT multiplier: its rows, one level of its
  tree of carry chains, the rest of the tree, the whole product.

Several helpers avoid Amaranth's ``<``, ``>`` and ``*`` on purpose: on ECP5 yosys maps a
comparison to a carry chain and a multiply to a DSP block, both slower here than a few LUT
levels (see the functions).
"""

from __future__ import annotations

import itertools

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data
from amaranth.utils import bits_for, ceil_log2

__all__ = ["wire", "less_than_const", "greater_than", "compare", "leading_zeros",
           "reduce_significand", "increment_gates", "negate_gates", "max_tree_levels",
           "max_tree_compare", "max_tree_wins", "max_tree_select",
           "kept", "any_of_kept", "add_with_carry",
           "partial_products", "pair_sums", "pair_sum_tree",
           "partial_product_sum"]


def _layout_of(tree):
    """The shape of a value, or the struct/array layout of a dict/list nesting of values."""
    if isinstance(tree, dict):
        return data.StructLayout({k: _layout_of(v) for k, v in tree.items()})
    if isinstance(tree, list | tuple):
        shapes = [_layout_of(v) for v in tree]
        if any(s != shapes[0] for s in shapes):
            raise TypeError(f"the elements of a list must share one shape, got {shapes}")
        return data.ArrayLayout(shapes[0], len(shapes))
    if isinstance(tree, data.View):
        return tree.shape()
    return Value.cast(tree).shape()


def _drive(m: Module, target, tree):
    if isinstance(tree, dict):
        for k, v in tree.items():
            _drive(m, target[k], v)
    elif isinstance(tree, list | tuple):
        for i, v in enumerate(tree):
            _drive(m, target[i], v)
    else:
        m.d.comb += target.eq(tree)


def wire(m: Module, value, name: str):
    """``value`` as a named combinational signal.

    Amaranth expressions are trees: a Value used twice is converted twice.  Every helper here
    names a value it reuses, so the generated netlist grows linearly (not exponentially) with
    nesting, and the names show up in waveforms.

    ``value`` may also be a dict (a struct) or a list (an array, elements of one shape) of
    Values, Views and such nestings: it becomes one signal with the matching
    :class:`~amaranth.lib.data.StructLayout` / ``ArrayLayout``, returned as a
    :class:`~amaranth.lib.data.View` (``view.field``, ``view[i]``).  Entries that are None
    (nothing to carry) are dropped.
    """
    if isinstance(value, dict | list | tuple):
        value = _prune(value)
        sig = Signal(_layout_of(value), name=name)
        _drive(m, sig, value)
        return sig
    value = Value.cast(value)
    sig = Signal(value.shape(), name=name)
    m.d.comb += sig.eq(value)
    return sig


def _prune(tree):
    if isinstance(tree, dict):
        return {k: _prune(v) for k, v in tree.items() if v is not None}
    if isinstance(tree, list | tuple):
        return [_prune(v) for v in tree]
    return tree


def less_than_const(m: Module, v, c: int, name: str, *, tree: bool = False) -> Signal:
    """``v < c`` for a (signed or unsigned) Value ``v`` and an int ``c``, as plain gates.

    Yosys maps a ``<`` of Values to a carry chain (``$alu``), even against a constant; on ECP5
    getting the carry out of a chain back into the fabric costs about 1 ns on its own, more
    than the 2-3 LUT levels the same test takes as a bit-serial AND/OR expression (which abc
    flattens into a LUT tree).  For short lane-local tests next to other logic in a section.

    ``tree``: the gates as a balanced tree instead (``v[hi] < c[hi] | v[hi] == c[hi] &
    v[lo] < c[lo]`` on halves, as :func:`compare`'s).  abc does not flatten the chain fully:
    in the quantizer, whose tests all use the tree, the chain kept cmp -> shift (``gone``)
    at four LUT levels: bf16 -> fp8_e4m3 at 10 stages 225.6 MHz (216.9-235.0) in 3,951 LUT4
    with the chain, 236.0 (225.8-236.4) in 3,848 with the tree (medians of nextpnr seeds 1-3,
    data registers marked ``extract_reset = "no"``; docs/quantizer.md, 'No logic on the
    flip-flops' reset pins').  The dot's and the dequantizer's tests keep the chain until
    they are measured with the tree (placing them again).
    """
    v = Value.cast(v)
    w, is_signed = len(v), v.shape().signed
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if is_signed else (0, (1 << w) - 1)
    if c <= lo:
        return wire(m, Const(0, 1), name)
    if c > hi:
        return wire(m, Const(1, 1), name)
    u = v.as_unsigned()
    if is_signed:  # offset binary: flipping the sign bit adds 2^(w-1) and keeps the order
        u, c = Cat(u[:w - 1], ~u[w - 1]), c + (1 << (w - 1))
    if tree:
        def lt_eq(lo, hi):  # (u[lo:hi] < c[lo:hi], u[lo:hi] == c[lo:hi])
            if hi - lo == 1:
                return (~u[lo], u[lo]) if (c >> lo) & 1 else (Const(0, 1), ~u[lo])
            mid = (lo + hi) // 2
            lt_h, eq_h = lt_eq(mid, hi)
            lt_l, eq_l = lt_eq(lo, mid)
            return lt_h | (eq_h & lt_l), eq_h & eq_l

        return wire(m, lt_eq(0, w)[0], name)
    lt = Const(0, 1)  # u[:j] < c[:j], from the least significant bit up
    for j in range(w):
        lt = (~u[j] | lt) if (c >> j) & 1 else (~u[j] & lt)
    return wire(m, lt, name)


def greater_than(m: Module, a, b, name: str) -> Signal:
    """``a > b`` for two (signed or unsigned) Values, as a log-depth tree of gates.

    The same test as ``a > b`` without the carry chain yosys would map it to (see
    :func:`less_than_const`): per bit ``a_j & ~b_j`` (greater) and ``a_j == b_j`` (equal),
    merged pairwise from the top half down, which abc packs into about log2(width) LUT levels.
    """
    return wire(m, _comparison_tree(m, a, b, name)[0], name)


def compare(m: Module, a, b, name: str) -> tuple[Signal, Signal]:
    """``(a > b, a == b)`` for two (signed or unsigned) Values: :func:`greater_than` and the
    equality its tree computes on the way (the AND of the per-bit equalities), both named.
    """
    gt, eq = _comparison_tree(m, a, b, name)
    return wire(m, gt, name), wire(m, eq, f"{name}_eq")


def _comparison_tree(m: Module, a, b, name: str):
    """The gate tree of :func:`greater_than`: ``(a > b, a == b)`` as Values."""
    a, b = Value.cast(a), Value.cast(b)
    sgn = a.shape().signed or b.shape().signed
    w = max(len(a) + (sgn and not a.shape().signed), len(b) + (sgn and not b.shape().signed))
    ua, ub = Signal(signed(w) if sgn else unsigned(w), name=f"{name}_a"), \
        Signal(signed(w) if sgn else unsigned(w), name=f"{name}_b")
    m.d.comb += [ua.eq(a), ub.eq(b)]  # extended to a common width, sign-aware
    ua, ub = ua.as_unsigned(), ub.as_unsigned()
    if sgn:  # offset binary: flipping both sign bits keeps the order
        ua, ub = Cat(ua[:w - 1], ~ua[w - 1]), Cat(ub[:w - 1], ~ub[w - 1])

    def tree(lo, hi, tag):  # (a[lo:hi] > b[lo:hi], a[lo:hi] == b[lo:hi])
        if hi - lo == 1:
            return ua[lo] & ~ub[lo], ~(ua[lo] ^ ub[lo])
        mid = (lo + hi) // 2
        gt_h, eq_h = tree(mid, hi, tag + "h")
        gt_l, eq_l = tree(lo, mid, tag + "l")
        return (wire(m, gt_h | (eq_h & gt_l), f"{name}_gt{tag}"),
                wire(m, eq_h & eq_l, f"{name}_eq{tag}"))

    return tree(0, w, "")


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


def kept(m: Module, value, name: str) -> Signal:
    """``value`` as a signal marked ``keep``: abc maps the logic before it on its own and
    the logic after it from its output, so a LUT tree keeps the depth it is written with (left
    to itself, abc restructures across such a net, and found four LUT levels for the dot's
    chunk flags where three hold them)."""
    sig = Signal(len(Value.cast(value)), name=name, attrs={"keep": 1})
    m.d.comb += sig.eq(value)
    return sig


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


def any_of_kept(m: Module, terms, name: str):
    """OR of ``terms`` (1-bit values), each first a signal marked ``keep``: synthesis maps each
    term to LUTs of its own, and the OR of their outputs after them, as written (left to
    itself, abc took 5 LUT levels for the pick section's chunk flags, sharing the choice
    terms; kept, they were on no seed's worst path of fp8_e4m3 at 20 stages)."""
    return Cat(*(kept(m, term, f"{name}_{i}") for i, term in enumerate(terms))).any()


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
    which at fp8_e4m3 x fp8_e4m3, k = 32, took five LUT levels and was the unit's worst
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
