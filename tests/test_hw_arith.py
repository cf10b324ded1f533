"""The arithmetic building blocks of hw, each against an independent model written here: the
gate-level comparisons and zero counts (Python's < and >), the LUT multiplier's partial-product
sums (Python's *), the block-max tree (max() and the OR of the flags at the max), the dot
unit's window adds and kept nets (Python's integers), and the restoring division's steps
(divmod)."""

from __future__ import annotations

import itertools

import pytest
from amaranth_drive import simulate_comb, simulate_pipeline


# -- gate-level comparisons, exhaustively against Python's < and > --------------------------
@pytest.mark.parametrize("tree", [False, True], ids=["chain", "tree"])
@pytest.mark.parametrize("shape", ["unsigned", "signed"])
def test_less_than_const_exhaustive(shape, tree):
    from amaranth.hdl import Module, Signal, signed, unsigned

    from hw.arith import less_than_const

    w = 5
    m = Module()
    v = Signal(signed(w) if shape == "signed" else unsigned(w))
    lo, hi = (-16, 15) if shape == "signed" else (0, 31)
    consts = range(lo - 2, hi + 3)  # includes the always-false and always-true constants
    outs = [less_than_const(m, v, c, f"lt{i}", tree=tree) for i, c in enumerate(consts)]
    got = simulate_comb(m, [v], outs, [(x,) for x in range(lo, hi + 1)])
    for x, row in zip(range(lo, hi + 1), got, strict=True):
        assert row == [int(x < c) for c in consts], x


@pytest.mark.parametrize("width", [1, 2, 5, 8])
def test_leading_and_trailing_zeros_exhaustive(width):
    """Both counts of every ``width``-bit value against Python's bit arithmetic (``width``
    for zero)."""
    from amaranth.hdl import Module, Signal

    from hw.arith import leading_zeros, trailing_zeros

    m = Module()
    v = Signal(width)
    outs = [leading_zeros(m, v, "lz"), trailing_zeros(m, v, "tz")]
    got = simulate_comb(m, [v], outs, [(x,) for x in range(1 << width)])
    for x, row in enumerate(got):
        tz = (x & -x).bit_length() - 1 if x else width
        assert row == [width - x.bit_length(), tz], (width, x)


@pytest.mark.parametrize("width, parts", [(12, 3), (8, 2), (8, 4), (6, 6)])
def test_trailing_zeros_in_parts_exhaustive(width, parts):
    """hw.arith.trailing_zero_parts then join_trailing_zero_parts (the count over two
    sections) of every ``width``-bit value against Python's bit arithmetic (``width`` for
    zero)."""
    from amaranth.hdl import Module, Signal

    from hw.arith import join_trailing_zero_parts, trailing_zero_parts

    m = Module()
    v, out = Signal(width), Signal(8)
    m.d.comb += out.eq(join_trailing_zero_parts(trailing_zero_parts(m, v, parts, "tz"),
                                                width, parts))
    got = simulate_comb(m, [v], [out], [(x,) for x in range(1 << width)])
    for x, (count,) in enumerate(got):
        assert count == ((x & -x).bit_length() - 1 if x else width), (width, parts, x)


@pytest.mark.parametrize("width", [1, 3, 5])
def test_increment_and_negate_gates_exhaustive(width):
    """Every value of an unsigned ``width``-bit signal: ``increment_gates`` is ``(v + 1) mod
    2**width``; ``negate_gates`` is ``-v`` as a signed value one bit wider, and of the same
    bits read as a signed ``v`` its low ``width`` bits are those of ``-v``."""
    from amaranth.hdl import Module, Signal

    from hw.arith import increment_gates, negate_gates, wire

    m = Module()
    v = Signal(width)
    inc = wire(m, increment_gates(v), "inc")
    neg = wire(m, negate_gates(v), "neg")
    got = simulate_comb(m, [v], [inc, neg], [(x,) for x in range(1 << width)])
    for x, (i, n) in zip(range(1 << width), got, strict=True):
        assert i == (x + 1) % (1 << width), x
        assert n == -x, x
        as_signed = x - (1 << width) if x >> (width - 1) else x
        assert n % (1 << width) == -as_signed % (1 << width), x


@pytest.mark.parametrize("sa,sb", [("u4", "u4"), ("s4", "s4"), ("u3", "s4"), ("s5", "u2")])
def test_greater_than_exhaustive(sa, sb):
    from amaranth.hdl import Module, Signal, signed, unsigned

    from hw.arith import greater_than

    def sig(spec):
        w = int(spec[1:])
        shape = signed(w) if spec[0] == "s" else unsigned(w)
        rng = range(-(1 << (w - 1)), 1 << (w - 1)) if spec[0] == "s" else range(1 << w)
        return Signal(shape), rng

    (a, ra), (b, rb) = sig(sa), sig(sb)
    m = Module()
    gt = greater_than(m, a, b, "gt")
    cases = [(x, y) for x in ra for y in rb]
    got = simulate_comb(m, [a, b], [gt], cases)
    assert [row[0] for row in got] == [int(x > y) for x, y in cases]


# -- the LUT multiplier, exhaustively against Python's * -------------------------------------
@pytest.mark.parametrize("xbits,ybits", [(5, 4), (4, 1), (6, 3), (8, 7)])
def test_partial_product_sum_exhaustive(xbits, ybits):
    """Signed x times unsigned y for every pair: fp8_e4m3's 5 x 4 bits (two levels of pair
    sums), one row, an odd row count, and int8's 8 x 7 bits (three levels, one row unpaired)."""
    from amaranth.hdl import Module, Signal, signed, unsigned

    from hw.arith import partial_product_sum

    m = Module()
    x, y = Signal(signed(xbits)), Signal(unsigned(ybits))
    prod = partial_product_sum(m, x, y, "prod")
    assert len(prod) == xbits + ybits and prod.shape().signed
    xs = range(-(1 << (xbits - 1)), 1 << (xbits - 1))
    cases = list(itertools.product(xs, range(1 << ybits)))
    got = simulate_comb(m, [x, y], [prod], cases)
    assert [row[0] for row in got] == [a * b for a, b in cases]


@pytest.mark.parametrize("xbits,ybits", [(8, 8), (5, 4), (4, 1), (6, 3), (3, 2)])
def test_signed_partial_product_sum_exhaustive(xbits, ybits):
    """Signed x times two's complement y for every pair: int8 x int8 (eight rows, the top one
    negative through its carry, -128 * -128 included), an even and an odd row count, a lone
    negative row, and the top row paired as the first term of a chain."""
    from amaranth.hdl import Module, Signal, signed

    from hw.arith import partial_product_sum

    m = Module()
    x, y = Signal(signed(xbits)), Signal(signed(ybits))
    prod = partial_product_sum(m, x, y, "prod", y_signed=True)
    assert len(prod) == xbits + ybits and prod.shape().signed
    xs = range(-(1 << (xbits - 1)), 1 << (xbits - 1))
    ys = range(-(1 << (ybits - 1)), 1 << (ybits - 1))
    cases = list(itertools.product(xs, ys))
    got = simulate_comb(m, [x, y], [prod], cases)
    assert [row[0] for row in got] == [a * b for a, b in cases]


def test_one_chain_takes_one_carry():
    from amaranth.hdl import Module, Signal

    from hw.arith import pair_sums

    rows = [(Signal(4), Signal()), (Signal(4), Signal())]
    with pytest.raises(ValueError, match="two carries into one chain"):
        pair_sums(Module(), rows, 5, "p")


def _sections_tree(xbits: int, ybits: int, sections, levels):
    """A pipeline of ``sections`` (every boundary registered) whose tree of carry chains
    (:func:`hw.multiply.pair_sum_sections`) multiplies an unsigned ``x`` and ``y``, ``y`` and
    a lane field riding along; returns (module, x, y, product, ridden y, ridden lane field)."""
    from amaranth.hdl import Cat, Const, Module, Signal

    from hw.multiply import pair_sum_sections, partial_products
    from hw.pipeline import Pipeline

    m = Module()
    x, y = Signal(xbits), Signal(ybits)
    pipe = Pipeline(m, {name: 1.0 for name in sections}, len(sections), name="t")
    (lane,), ride = pair_sum_sections(
        pipe.scope(), [{"rows": partial_products(Cat(x, Const(0, 1)).as_signed(), y),
                        "tag": x[0]}], {"y": y, "nothing": None}, width=xbits + ybits + 1,
        names=["prod"], sections=sections, levels_per_section=levels)
    assert ride["nothing"] is None
    outs = [Signal(xbits + ybits), Signal(ybits), Signal()]
    m.d.comb += [outs[0].eq(lane["prod"]), outs[1].eq(ride["y"]), outs[2].eq(lane["tag"])]
    pipe.connect(i_valid=Const(1), i_ready=Signal(), o_valid=Signal(), o_ready=Const(1))
    return m, x, y, outs


@pytest.mark.parametrize("xbits,ybits,sections,levels", [
    (5, 4, ("a", "b"), 1),  # 4 rows: one level a section
    (6, 7, ("a", "b"), 2),  # 7 rows, three levels: the last section's one
    (4, 5, ("a",), 3),  # 5 rows: the whole tree in one section
    (5, 8, ("a", "b"), (1, 2)),  # 8 rows, three levels: one, then two
    (4, 7, ("a", "b", "c"), (1, 2, 2)),  # 7 rows, three levels: the last section has none
])
def test_pair_sum_sections_exhaustive(xbits, ybits, sections, levels):
    """The tree of carry chains over registered sections: every product of an unsigned x and
    y comes out ``len(sections)`` cycles later, with the values that ride beside it."""
    m, x, y, outs = _sections_tree(xbits, ybits, sections, levels)
    cases = list(itertools.product(range(1 << xbits), range(1 << ybits)))
    got = simulate_pipeline(m, [((x, a), (y, b)) for a, b in cases],
                            lambda ctx: tuple(ctx.get(o) for o in outs), len(sections))
    assert got[:len(cases)] == [(a * b, b, a & 1) for a, b in cases]


def test_pair_sum_sections_must_end_the_tree():
    with pytest.raises(ValueError, match="1 sections of 2 levels do not end the tree"):
        _sections_tree(4, 5, ("a",), 2)  # 5 rows: three levels
    with pytest.raises(ValueError, match=r"2 sections of \(2, 1\) levels do not end"):
        _sections_tree(4, 9, ("a", "b"), (2, 1))  # 9 rows: four levels


def test_pair_sum_sections_levels_per_section():
    with pytest.raises(ValueError, match="3 levels per section for 2 sections"):
        _sections_tree(4, 5, ("a", "b"), (1, 1, 1))


# -- the block-max tree: radix 2 and 4, against max() and the OR of the flags at the max ----
def _max_and_flag(case, radix):
    """A tree group's answer from its keys and flags (``case``: the keys, then the flags):
    the maximum key, and the OR of the flags of the keys equal to it."""
    ks, fs = case[:radix], case[radix:]
    top = max(ks)
    return top, int(any(f for k, f in zip(ks, fs, strict=True) if k == top))


@pytest.mark.parametrize("radix", [2, 4])
def test_max_tree_level_exhaustive(radix):
    """Every 2-bit signed key combination of one group (keys collide often: ties), with every
    flag combination; the key is the maximum and the flag the OR of the flags at it."""
    from amaranth.hdl import Module, Signal, signed

    from hw.arith import max_tree_levels

    m = Module()
    keys = [Signal(signed(2), name=f"key{i}") for i in range(radix)]
    flags = [Signal(name=f"flag{i}") for i in range(radix)]
    (key, flag), = max_tree_levels(m, list(zip(keys, flags, strict=True)), 1, radix=radix)
    (key_only, none), = max_tree_levels(m, [(k, None) for k in keys], 1, name="nf",
                                        radix=radix)
    assert none is None
    cases = [(*ks, *fs) for ks in itertools.product(range(-2, 2), repeat=radix)
             for fs in itertools.product((0, 1), repeat=radix)]
    got = simulate_comb(m, [*keys, *flags], [key, flag, key_only], cases)
    for case, row in zip(cases, got, strict=True):
        top, flag = _max_and_flag(case, radix)
        assert row == [top, flag, top], case


@pytest.mark.parametrize("radix", [2, 4])
def test_max_tree_select_moves_a_view_whole(radix):
    """Every 2-bit signed key combination of one group: the select, given the keys'
    comparisons and a struct worked out from each key in its place, returns a View of that
    struct whose fields are the maximum key's (the earliest of equal maxima: each key's
    struct also carries its position).  Structs of different layouts are refused."""
    from amaranth.hdl import Const, Module, Signal, signed
    from amaranth.lib import data

    from hw.arith import max_tree_compare, max_tree_select, wire

    m = Module()
    keys = [Signal(signed(2), name=f"key{i}") for i in range(radix)]
    views = [wire(m, {"double": key * 2, "position": Const(i, 2)}, f"v{i}")
             for i, key in enumerate(keys)]
    comparisons = max_tree_compare(m, keys, radix)
    (picked, flag), = max_tree_select(m, [(v, None) for v in views], comparisons, radix)
    assert flag is None and isinstance(picked, data.View)
    assert picked.shape() == views[0].shape()
    cases = list(itertools.product(range(-2, 2), repeat=radix))
    got = simulate_comb(m, keys, [picked.double, picked.position], cases)
    for case, (double, position) in zip(cases, got, strict=True):
        top = max(case)
        assert (double, position) == (2 * top, case.index(top)), case
    m = Module()
    mixed = [wire(m, {"position": 1 << i}, f"w{i}") for i in range(radix)]  # 1, 2, .. bits
    with pytest.raises(ValueError, match="one layout"):
        max_tree_select(m, [(v, None) for v in mixed], max_tree_compare(m, keys, radix), radix)


@pytest.mark.parametrize("radix", [2, 4])
def test_max_tree_unsigned_keys_compare_on_carry_chains(radix):
    """Unsigned keys compare as the carry out of ``a + ~b``.  Keys of 3 and 2 bits (so the
    complement is that of a zero-extended key), every key combination with flag patterns:
    the maximum and the flag are those of max() and the OR at it; the select from the wins
    (``max_tree_wins``, what a pipeline registers) of comparisons made from the keys' given
    complements picks the same maximum."""
    from amaranth.hdl import Module, Signal, unsigned

    from hw.arith import max_tree_compare, max_tree_levels, max_tree_select, max_tree_wins

    m = Module()
    keys = [Signal(unsigned(2 if i % 2 else 3), name=f"key{i}") for i in range(radix)]
    flags = [Signal(name=f"flag{i}") for i in range(radix)]
    (key, flag), = max_tree_levels(m, list(zip(keys, flags, strict=True)), 1, radix=radix)
    comparisons = max_tree_compare(m, keys, radix, "c", complements=[~k for k in keys])
    wins = max_tree_wins(m, comparisons, radix, "w")
    (by_wins, none), = max_tree_select(m, [(k, None) for k in keys], None, radix, "w",
                                       wins=wins)
    assert none is None
    patterns = list(itertools.product((0, 1), repeat=radix))[:: 1 if radix == 2 else 5]
    cases = [(*ks, *fs)
             for ks in itertools.product(*[range(1 << len(k)) for k in keys])
             for fs in patterns]
    got = simulate_comb(m, [*keys, *flags], [key, flag, by_wins], cases)
    for case, row in zip(cases, got, strict=True):
        top, flag = _max_and_flag(case, radix)
        assert row == [top, flag, top], case
    with pytest.raises(ValueError, match="flags need the comparisons"):
        max_tree_select(Module(), list(zip(keys, flags, strict=True)), None, radix, "x",
                        wins=wins)


def test_max_tree_radix_4_matches_two_radix_2_levels():
    """16 random 4-bit keys with flags: two radix-4 levels give the same (key, flag) as four
    radix-2 levels."""
    import random

    from amaranth.hdl import Module, Signal, signed

    from hw.arith import max_tree_levels

    m = Module()
    keys = [Signal(signed(4), name=f"key{i}") for i in range(16)]
    flags = [Signal(name=f"flag{i}") for i in range(16)]
    leaves = list(zip(keys, flags, strict=True))
    by4 = max_tree_levels(m, max_tree_levels(m, leaves, 1, "a", 4), 1, "b", 4)
    by2 = max_tree_levels(m, leaves, 4, "c", 2)
    rand = random.Random(4)
    cases = [tuple(rand.randrange(-8, -4) for _ in range(16))  # narrow range: many ties
             + tuple(rand.randrange(2) for _ in range(16)) for _ in range(300)]
    got = simulate_comb(m, [*keys, *flags], [*by4[0], *by2[0]], cases)
    for case, (k4, f4, k2, f2) in zip(cases, got, strict=True):
        assert (k4, f4) == (k2, f2) == (max(case[:16]), int(any(
            f for k, f in zip(case[:16], case[16:], strict=True) if k == max(case[:16])))), case


# -- the dot unit's window adds and kept nets, exhaustively against Python's integers ---------
@pytest.mark.parametrize("wa,wb", [(4, 4), (5, 3), (3, 6)])
def test_add_with_carry_exhaustive(wa, wb):
    """a + b + carry, for every a, b and carry, in max(wa, wb) + 1 bits (no bit lost)."""
    from amaranth.hdl import Module, Signal

    from hw.arith import add_with_carry

    m = Module()
    a, b, carry = Signal(wa), Signal(wb), Signal()
    out = add_with_carry(a, b, carry)
    assert len(out) == max(wa, wb) + 1
    cases = list(itertools.product(range(1 << wa), range(1 << wb), (0, 1)))
    for (x, y, c), (got,) in zip(cases, simulate_comb(m, [a, b, carry], [out], cases),
                                 strict=True):
        assert got == x + y + c, (x, y, c)


def test_add_with_carry_rejects_a_wide_carry():
    from amaranth.hdl import Signal

    from hw.arith import add_with_carry

    with pytest.raises(ValueError, match="one bit"):
        add_with_carry(Signal(4), Signal(4), Signal(2))


def test_any_of_kept_is_the_or_of_its_terms():
    from amaranth.hdl import Module, Signal

    from hw.arith import any_of_kept

    m = Module()
    bits = [Signal(name=f"b{i}") for i in range(5)]
    out = any_of_kept(m, [bits[0] & bits[1], bits[2], bits[3] | bits[4]], "t")
    cases = list(itertools.product((0, 1), repeat=5))
    for case, (got,) in zip(cases, simulate_comb(m, bits, [out], cases), strict=True):
        assert got == int((case[0] and case[1]) or case[2] or case[3] or case[4]), case


# -- the restoring division's steps, exhaustively against Python's divmod ---------------------
@pytest.mark.parametrize("constant", [False, True], ids=["variable", "constant"])
def test_restoring_steps_exhaustive(constant):
    """hw.nvfp4.divide.restoring_steps, three steps, a 4-bit divisor (every divisor 1..15 as
    a signal, or each as a constant) from every remainder below it and every 3 dividend
    bits: the quotient bits and remainder are divmod's of ``rem * 8 + bits``."""
    from amaranth.hdl import Const, Module, Signal

    from hw.nvfp4.divide import restoring_steps

    def build(divisor):
        m = Module()
        rem, bits = Signal(4), Signal(3)
        r, q = restoring_steps(m, rem, divisor, bits, "div")
        return m, rem, bits, r, q

    for d in range(1, 16) if constant else [None]:
        if constant:
            m, rem, bits, r, q = build(Const(d, 4))
            cases = [(a, b) for a in range(d) for b in range(8)]
            got = simulate_comb(m, [rem, bits], [q, r], cases)
            want = [list(divmod(a * 8 + b, d)) for a, b in cases]
        else:
            divisor = Signal(4)
            m, rem, bits, r, q = build(divisor)
            cases = [(a, b, e) for e in range(1, 16) for a in range(e) for b in range(8)]
            got = simulate_comb(m, [rem, bits, divisor], [q, r], cases)
            want = [list(divmod(a * 8 + b, e)) for a, b, e in cases]
        assert got == want, d


@pytest.mark.parametrize("ebits,mbits", [(4, 3), (2, 5), (5, 10)])
def test_significand_leading_zeros_exhaustive(ebits, mbits):
    """hw.nvfp4.scale.significand_leading_zeros of every magnitude ``E.M``: the leading zeros
    of its significand (the hidden bit set by a non-zero exponent field) in ``mbits + 1``
    bits, ``mbits + 1`` for zero."""
    from amaranth.hdl import Module, Signal

    from hw.nvfp4.scale import significand_leading_zeros

    m = Module()
    v = Signal(ebits + mbits)
    lz = significand_leading_zeros(m, v, mbits, "lz")
    cases = [(x,) for x in range(1 << (ebits + mbits))]
    got = simulate_comb(m, [v], [lz], cases)
    for (x,), (n,) in zip(cases, got, strict=True):
        sig = (x & ((1 << mbits) - 1)) | ((x >> mbits != 0) << mbits)
        assert n == mbits + 1 - sig.bit_length(), x
