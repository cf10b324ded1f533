"""The building blocks of hw, each against an independent model written here: the gate-level
comparisons (Python's < and >), the rounding decision (an integer model of RNE/RNA/RTZ and
stochastic rounding), the element decoder (the spec values of tests/oracle), the register
placement (brute force), and the import hygiene of the hw modules."""

from __future__ import annotations

import ast
import itertools
from fractions import Fraction
from pathlib import Path

import oracle
import pytest
from amaranth_drive import simulate_pipeline

import golden

HW = Path(__file__).resolve().parent.parent / "hw"


def _run_comb(m, inputs, outputs, cases):
    """Drive every tuple of ``cases`` onto ``inputs``; return the outputs' values per case."""
    from amaranth.sim import Simulator

    got = []

    async def bench(ctx):
        for case in cases:
            for sig, val in zip(inputs, case, strict=True):
                ctx.set(sig, val)
            got.append([ctx.get(o) for o in outputs])

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    return got


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
    got = _run_comb(m, [v], outs, [(x,) for x in range(lo, hi + 1)])
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
    got = _run_comb(m, [v], outs, [(x,) for x in range(1 << width)])
    for x, row in enumerate(got):
        tz = (x & -x).bit_length() - 1 if x else width
        assert row == [width - x.bit_length(), tz], (width, x)


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
    got = _run_comb(m, [v], [inc, neg], [(x,) for x in range(1 << width)])
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
    got = _run_comb(m, [a, b], [gt], cases)
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
    got = _run_comb(m, [x, y], [prod], cases)
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
    got = _run_comb(m, [x, y], [prod], cases)
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
    got = _run_comb(m, [*keys, *flags], [key, flag, key_only], cases)
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
    got = _run_comb(m, keys, [picked.double, picked.position], cases)
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
    got = _run_comb(m, [*keys, *flags], [key, flag, by_wins], cases)
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
    got = _run_comb(m, [*keys, *flags], [*by4[0], *by2[0]], cases)
    for case, (k4, f4, k2, f2) in zip(cases, got, strict=True):
        assert (k4, f4) == (k2, f2) == (max(case[:16]), int(any(
            f for k, f in zip(case[:16], case[16:], strict=True) if k == max(case[:16])))), case


# -- the rounding decision, exhaustively against an integer model --------------------------
def _model_round_up(mode: str, frac: int, f: int, sticky: int, lsb: int, rand: int) -> int:
    """Round the magnitude ``q + d`` to an integer (``q`` with last bit ``lsb``), where the
    discarded part ``d`` is ``frac / 2^f`` plus, if ``sticky``, something nonzero below
    ``2^-f``; stochastic: up iff ``frac + rand >= 2^f`` (contract 2.5)."""
    d = Fraction(frac, 1 << f) + (Fraction(1, 1 << (f + 2)) if sticky else 0)
    half = Fraction(1, 2)
    if mode == "rne":
        return int(d > half or (d == half and lsb == 1))
    if mode == "rna":
        return int(d >= half)
    if mode == "rtz":
        return 0
    assert mode == "stochastic"
    return int(frac + rand >= 1 << f)


@pytest.mark.parametrize("f", [1, 2, 3])
def test_round_increment_exhaustive(f):
    from amaranth.hdl import Module, Signal

    from hw.rounding import round_increment

    modes = ("rne", "rna", "rtz", "stochastic")
    m = Module()
    frac, sticky, lsb, rand = Signal(f), Signal(), Signal(), Signal(f)
    mode = Signal(2)
    fixed = [round_increment(m, frac, sticky, lsb, golden.formats.ROUNDING_IDS[r], rand,
                             name=f"up_{r}") for r in modes]
    runtime = round_increment(m, frac, sticky, lsb, mode, rand, name="up_rt")
    cases = list(itertools.product(range(1 << f), (0, 1), (0, 1), range(1 << f),
                                   range(len(modes))))
    got = _run_comb(m, [frac, sticky, lsb, rand, mode], [*fixed, runtime],
                    [(fr, st, lb, rd, golden.formats.ROUNDING_IDS[modes[i]])
                     for fr, st, lb, rd, i in cases])
    for (fr, st, lb, rd, i), row in zip(cases, got, strict=True):
        want = [_model_round_up(r, fr, f, st, lb, rd) for r in modes]
        assert row[:4] == want, (fr, st, lb, rd)
        assert row[4] == want[i], (modes[i], fr, st, lb, rd)


@pytest.mark.parametrize("ebits,mbits,every_n", [(3, 1, True), (3, 2, True), (5, 2, True),
                                                 (5, 3, True), (8, 23, False)])
def test_overflows_is_the_rounded_code_reaching_inf(ebits, mbits, every_n):
    """hw.rounding.overflows decides from the binade alone what the rounded code decides:
    for every binade (to one bit beyond the grid), every significand n the normalization can
    give (below 2^mbits only at binade 0; the edges for fp32) and both increments,
    Mux(overflows, inf, code) equals min(code, inf) of the integer code."""
    from amaranth.hdl import Module, Signal, unsigned

    from hw.rounding import overflows

    m = Module()
    binade = Signal(unsigned(ebits + 1))
    out = overflows(m, binade, ebits=ebits, name="ovf")
    binades = range(1 << (ebits + 1))
    got = _run_comb(m, [binade], [out], [(b,) for b in binades])
    inf_code = ((1 << ebits) - 1) << mbits
    top = 1 << mbits  # the hidden bit
    ns = (range(2 * top) if every_n
          else sorted({0, 1, top - 1, top, top + 1, 2 * top - 2, 2 * top - 1}))
    for b, (ovf,) in zip(binades, got, strict=True):
        for n in ns:
            if b > 0 and n < top:
                continue  # a normal binade's significand has its hidden bit
            for up in (0, 1):
                code = (b << mbits) + n + up
                assert (inf_code if ovf else code) == min(code, inf_code), (b, n, up)


@pytest.mark.parametrize("top_min", [None, -150], ids=["clamped", "bounded"])
def test_grid_position_with_a_biased_below(top_min):
    """Grid.position with ``below_biased`` (``below = -above + drop_normal``, the offset
    folded in by the caller) gives the shift amount and binade of an integer model, ``drop =
    min(drop_normal + max(emin - top, 0), drop_max)`` and ``binade = max(top - emin, 0)``, and
    the same as ``below = -above``: for every ``top`` from three binades above ``emin`` down
    to ``top_min`` (clamped grid: ``drop_max`` and beyond)."""
    from amaranth.hdl import Module, Signal, signed

    from hw.rounding import Grid

    grid = Grid(sig_width=26, emin=-126, mbits=23, top_min=top_min)
    assert (grid.drop_reach < grid.drop_max) == (top_min is not None)  # both branches
    m = Module()
    above, below, biased = Signal(signed(10)), Signal(signed(10)), Signal(signed(10))
    plain = grid.position(m, above, below, name="plain")
    folded = grid.position(m, above, biased, name="folded", below_biased=True)
    low = top_min if top_min is not None else grid.emin - grid.drop_max - 3
    tops = range(low, grid.emin + 3)
    cases = [(t - grid.emin, grid.emin - t, grid.emin - t + grid.drop_normal) for t in tops]
    got = _run_comb(m, [above, below, biased],
                    [folded.drop, folded.binade, plain.drop, plain.binade], cases)
    for t, row in zip(tops, got, strict=True):
        drop = min(grid.drop_normal + max(grid.emin - t, 0), grid.drop_max)
        assert row[:2] == [drop, max(t - grid.emin, 0)], t
        assert row[2:] == row[:2], t
    with pytest.raises(ValueError, match="below_biased needs below"):
        grid.position(Module(), above, name="bad", below_biased=True)
    with pytest.raises(ValueError, match="clamped needs below_biased"):
        grid.position(Module(), above, below, name="bad", clamped=above[-1])


@pytest.mark.parametrize("sig_width,emin,mbits", [(24, 0, 1), (28, -126, 23)],
                         ids=["e2m1", "fp32"])
@pytest.mark.parametrize("clamp", [True, False], ids=["clamp-inputs", "clamp-here"])
def test_grid_position_of_either_is_the_position_of_top_plus_one(sig_width, emin, mbits,
                                                                clamp):
    """Grid.position_of_either on Grid.position_inputs(top) and a carry gives the shift amount
    and binade of the integer model at ``top + carry``, for every top from three binades
    above ``emin`` to beyond ``drop_max`` below it and both carries."""
    from amaranth.hdl import Module, Signal, signed
    from amaranth.lib import data

    from hw.rounding import Grid

    grid = Grid(sig_width=sig_width, emin=emin, mbits=mbits)
    m = Module()
    top, carry = Signal(signed(10)), Signal()
    inputs = grid.position_inputs(top, clamp=clamp)
    at = Signal(data.StructLayout({k: v.shape() for k, v in inputs.items()}))
    m.d.comb += [getattr(at, k).eq(v) for k, v in inputs.items()]
    pos = grid.position_of_either(m, at, carry, name="either")
    tops = range(emin - grid.drop_max - 3, emin + 3)
    cases = [(t, c) for t in tops for c in (0, 1)]
    got = _run_comb(m, [top, carry], [pos["drop"], pos["binade"]], cases)
    for (t, c), row in zip(cases, got, strict=True):
        e = t + c
        drop = min(grid.drop_normal + max(emin - e, 0), grid.drop_max)
        assert row == [drop, max(e - emin, 0)], (t, c)


@pytest.mark.parametrize("sig_width,mbits,frac_bits", [(5, 5, 1), (6, 3, 2)],
                         ids=["padded", "unpadded"])
def test_grid_align_sticky_forms(sig_width, mbits, frac_bits):
    """Grid.align's three sticky bits, the OR of the shifted-out bits, ``trailing_zeros``
    compared with the shift and ``sticky_limit`` (:meth:`Grid.sticky_limit` of the count),
    and its kept bits, against an integer model for every non-zero significand and every
    shift amount up to ``drop_max`` (a grid whose significands are padded and one not)."""
    from types import SimpleNamespace

    from amaranth.hdl import Module, Signal

    from hw.rounding import Grid

    grid = Grid(sig_width=sig_width, emin=-2, mbits=mbits, frac_bits=frac_bits)
    p, f = grid.padded_width, grid.frac_bits
    assert (p > sig_width) == (mbits + 1 > sig_width)
    m = Module()
    sig, tz = Signal(sig_width), Signal(4)
    limit = Signal(5)
    position = SimpleNamespace(drop=Signal(range(grid.drop_max + 1)), binade=Signal(2))
    m.d.comb += limit.eq(grid.sticky_limit(tz))
    forms = [grid.align(m, sig, position, name="or"),
             grid.align(m, sig, position, name="tz", trailing_zeros=tz),
             grid.align(m, sig, position, name="limit", sticky_limit=limit)]
    cases = [(v, (v & -v).bit_length() - 1, d) for v in range(1, 1 << sig_width)
             for d in range(grid.drop_max + 1)]
    got = _run_comb(m, [sig, tz, position.drop],
                    [x for a in forms for x in (a.n, a.frac, a.sticky)], cases)
    for (v, _, d), row in zip(cases, got, strict=True):
        ext = v << (p - sig_width + f)
        kept = ext >> d
        want = [kept >> f, kept & ((1 << f) - 1), int(ext & ((1 << d) - 1) != 0)]
        assert row == want * 3, (v, d)
    with pytest.raises(ValueError, match="trailing_zeros or sticky_limit, not both"):
        grid.align(m, sig, position, trailing_zeros=tz, sticky_limit=limit)


def test_round_increment_rejects_stochastic_without_random_bits():
    from amaranth.hdl import Module, Signal

    from hw.rounding import STOCHASTIC, round_increment

    with pytest.raises(ValueError, match="random bits"):
        round_increment(Module(), Signal(2), Signal(), Signal(), STOCHASTIC)


# -- the element decoder and encoder against the spec values of tests/oracle -------------
@pytest.mark.parametrize("name", list(oracle.FORMATS))
def test_decode_element_every_code(name):
    from amaranth.hdl import Module, Signal

    from hw.elements import decode_element

    spec = oracle.FORMATS[name]
    # the unit of the significand: 2^-6 for int8 (contract: n * 2^-6), else 2^(1-bias-mbits)
    lsb_exp = -6 if spec.is_int else 1 - spec.bias - spec.mbits
    m = Module()
    code = Signal(spec.bits)
    el = decode_element(m, code, golden.element_format(name), "el")
    outs = [el.neg, el.sig, el.shift, el.zero, el.nan, el.inf]
    got = _run_comb(m, [code], outs, [(c,) for c in range(1 << spec.bits)])
    for c, (neg, sig, shift, zero, nan, inf) in zip(range(1 << spec.bits), got, strict=True):
        want_neg, want = oracle.decode_code(spec, c)
        assert (nan, inf) == (int(want is oracle.NAN), int(want is oracle.INF)), hex(c)
        if want in (oracle.NAN, oracle.INF):
            assert neg == int(want_neg), hex(c)
            continue
        assert Fraction(sig) * Fraction(2) ** (shift + lsb_exp) == want, hex(c)
        assert zero == int(want == 0), hex(c)
        if want:
            assert neg == int(want_neg), hex(c)


def test_signed_significand_every_int8_code():
    """int8's signed significand, read from the code and negated or not, times 2^shift (the
    decoder's) is the spec value of every code in lsb units, with the sign flipped where
    negated; only two's complement formats have one."""
    from amaranth.hdl import Module, Signal

    from hw.elements import decode_element, signed_significand

    spec, fmt = oracle.FORMATS["int8"], golden.element_format("int8")
    m = Module()
    code, negate = Signal(fmt.bits), Signal()
    signed_sig = signed_significand(code, fmt, negate)
    assert len(signed_sig) == fmt.mbits + 2 and signed_sig.shape().signed
    el = decode_element(m, code, fmt, "el")
    cases = list(itertools.product(range(1 << fmt.bits), (0, 1)))
    got = _run_comb(m, [code, negate], [signed_sig, el.shift], cases)
    for (c, neg), (sig, shift) in zip(cases, got, strict=True):
        want_neg, want = oracle.decode_code(spec, c)
        assert Fraction(sig * 2 ** shift, 64) == (-want if want_neg ^ neg else want), hex(c)
    with pytest.raises(ValueError, match="not a two's complement"):
        signed_significand(code, golden.element_format("fp8_e4m3"), negate)


@pytest.mark.parametrize("name", list(oracle.FORMATS))
def test_encode_element_inverts_the_decoder(name):
    """Every (sign, magnitude) of a finite nonzero spec value encodes to its code."""
    from amaranth.hdl import Module, Signal

    from hw.elements import encode_element

    spec = oracle.FORMATS[name]
    fmt = golden.element_format(name)
    m = Module()
    neg, mag = Signal(), Signal(fmt.bits)
    code = encode_element(m, neg, mag, fmt, "enc")
    mags, codes = oracle.value_table(name)
    cases = [(s, c) for s in (0, 1) for v, c in zip(mags, codes, strict=True) if v]
    got = _run_comb(m, [neg, mag], [code], cases)
    for (s, c), (out,) in zip(cases, got, strict=True):
        assert oracle.decode_code(spec, out) == (bool(s), oracle.decode_code(spec, c)[1])


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
    for (x, y, c), (got,) in zip(cases, _run_comb(m, [a, b, carry], [out], cases),
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
    for case, (got,) in zip(cases, _run_comb(m, bits, [out], cases), strict=True):
        assert got == int((case[0] and case[1]) or case[2] or case[3] or case[4]), case


# -- register placement: the minimax, by brute force, for every unit -----------------------
def _units_sections():
    from hw.dequantizer import DEQUANTIZER_SECTIONS
    from hw.dot import DotGeometry
    from hw.dot.fused_step import dot_sections
    from hw.quantizer import quantizer_sections

    fp8 = golden.element_format("fp8_e4m3")
    yield "dot", dot_sections(DotGeometry(fp8, fp8, 32))
    yield "dequantizer", DEQUANTIZER_SECTIONS
    for k in (2, 4, 32, 64):
        yield f"quantizer k={k}", quantizer_sections("fp8_e4m3", k)
    yield "quantizer int8 k=32", quantizer_sections("int8", 32)
    yield "quantizer k=32 radix 4", quantizer_sections("fp8_e4m3", 32, 5)


@pytest.mark.parametrize("unit,sections", list(_units_sections()),
                         ids=[u for u, _ in _units_sections()])
def test_placement_minimizes_the_worst_stage(unit, sections):
    from hw.pipeline import place_registers, registered_boundaries, stage_delays

    delays = list(sections.values())
    n = len(delays)

    def worst(cuts):  # cuts: boundary indices after which a register sits (the last: n)
        bounds = [0, *cuts]
        return max(sum(delays[a:b]) for a, b in itertools.pairwise(bounds))

    for stages in range(1, n + 1):
        flags = place_registers(delays, stages)
        assert len(flags) == n and sum(flags) == stages and flags[-1], stages
        got = [i + 1 for i in range(n) if flags[i]]
        best = min(worst([*c, n]) for c in itertools.combinations(range(1, n), stages - 1))
        assert worst(got) == best, (unit, stages)
        sums = stage_delays(delays, stages)  # the same stages, summed
        assert len(sums) == stages and max(sums) == pytest.approx(best)
        assert sum(sums) == pytest.approx(sum(delays))
        # the sidecar's names of the registered boundaries: `stages` of them, in datapath
        # order, the last section's among them, and as good a placement as the best
        names = registered_boundaries(sections, stages)
        cuts = [list(sections).index(name) + 1 for name in names]
        assert len(cuts) == stages and cuts == sorted(set(cuts)) and cuts[-1] == n, names
        assert worst(cuts) == best, (unit, stages, names)
    assert all(place_registers(delays, n))
    for bad in (0, n + 1):
        with pytest.raises(ValueError, match=f"stages must be in 1..{n}"):
            place_registers(delays, bad)


# -- import hygiene: no hw module imports a private name of another ------------------------
def test_no_hw_module_imports_a_private_name():
    offenders = []
    for path in sorted(HW.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                internal = node.level > 0 or (node.module or "").split(".")[0] in ("hw", "golden")
                for alias in node.names:
                    if internal and alias.name.startswith("_") and alias.name != "__future__":
                        offenders.append(f"{path.relative_to(HW.parent)}: {alias.name}")
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                    and not node.attr.startswith("__") and isinstance(node.value, ast.Name) \
                    and node.value.id in ("hw", "golden", "quantizer", "dequantizer", "dot"):
                offenders.append(f"{path.relative_to(HW.parent)}: {node.value.id}.{node.attr}")
    assert not offenders, offenders
