"""hw.rounding against an independent integer model written here: the rounding decision of
RNE/RNA/RTZ and stochastic rounding, the overflow to Inf, and Grid's position, the position of
a top known up to a final carry, and the aligned sticky forms."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from amaranth_drive import simulate_comb

import golden


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
    got = simulate_comb(m, [frac, sticky, lsb, rand, mode], [*fixed, runtime],
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
    got = simulate_comb(m, [binade], [out], [(b,) for b in binades])
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
    got = simulate_comb(m, [above, below, biased],
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
@pytest.mark.parametrize("form", ["clamp-inputs", "clamp-here", "difference"])
def test_grid_position_of_either_is_the_position_of_top_plus_one(sig_width, emin, mbits,
                                                                form):
    """Grid.position_of_either on Grid.position_inputs(top) (the clamp flags formed there or
    left to the position), or on Grid.position_inputs_of_difference of
    Grid.difference_offsets(base) and a 4-bit ``minus`` (``top = base - minus``, every
    minus), and a carry gives the shift amount and binade of the integer model at ``top +
    carry``, for every top from three binades above ``emin`` to beyond ``drop_max`` below it
    and both carries."""
    from amaranth.hdl import Module, Signal, signed
    from amaranth.lib import data

    from hw.rounding import Grid

    def registered(m, fields, name):  # the fields as a struct, as a pipeline register has them
        view = Signal(data.StructLayout({k: v.shape() for k, v in fields.items()}), name=name)
        m.d.comb += [getattr(view, k).eq(v) for k, v in fields.items()]
        return view

    grid = Grid(sig_width=sig_width, emin=emin, mbits=mbits)
    m = Module()
    top, carry, minus = Signal(signed(10)), Signal(), Signal(4)
    if form == "difference":
        offsets = registered(m, grid.difference_offsets(top), "offsets")
        inputs = grid.position_inputs_of_difference(offsets, minus)
    else:
        inputs = grid.position_inputs(top, clamp=form == "clamp-inputs")
    pos = grid.position_of_either(m, registered(m, inputs, "at"), carry, name="either")
    tops = range(emin - grid.drop_max - 3, emin + 3)
    minuses = range(16) if form == "difference" else (0,)
    cases = [(t + d, c, d) for t in tops for c in (0, 1) for d in minuses]
    got = simulate_comb(m, [top, carry, minus], [pos["drop"], pos["binade"]], cases)
    for (base, c, d), row in zip(cases, got, strict=True):
        e = base - d + c
        drop = min(grid.drop_normal + max(emin - e, 0), grid.drop_max)
        assert row == [drop, max(e - emin, 0)], (base, d, c)


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
    got = simulate_comb(m, [sig, tz, position.drop],
                    [x for a in forms for x in (a.n, a.frac, a.sticky)], cases)
    for (v, _, d), row in zip(cases, got, strict=True):
        ext = v << (p - sig_width + f)
        kept = ext >> d
        want = [kept >> f, kept & ((1 << f) - 1), int(ext & ((1 << d) - 1) != 0)]
        assert row == want * 3, (v, d)
    with pytest.raises(ValueError, match="trailing_zeros or sticky_limit, not both"):
        grid.align(m, sig, position, trailing_zeros=tz, sticky_limit=limit)


@pytest.mark.parametrize("sig_width,mbits,frac_bits", [(10, 1, 1), (8, 3, 2), (5, 5, 1)],
                         ids=["e2m1-like", "two-frac", "padded"])
def test_grid_align_excess_shift(sig_width, mbits, frac_bits):
    """Grid.align with ``excess_shift`` (the shifter for drops ``drop_normal..drop_max``
    only) against the integer model, for every normalized significand (top bit set) and
    zero, at every drop :meth:`Grid.position` gives; it takes no trailing-zero count."""
    from types import SimpleNamespace

    from amaranth.hdl import Module, Signal

    from hw.rounding import Grid

    grid = Grid(sig_width=sig_width, emin=-2, mbits=mbits, frac_bits=frac_bits)
    p, f = grid.padded_width, grid.frac_bits
    m = Module()
    sig = Signal(sig_width)
    position = SimpleNamespace(drop=Signal(range(grid.drop_max + 1)), binade=Signal(2))
    a = grid.align(m, sig, position, name="excess", excess_shift=True)
    assert len(a.n) == mbits + 1 and len(a.frac) == f
    sigs = [0, *range(1 << (sig_width - 1), 1 << sig_width)]
    cases = [(v, d) for v in sigs for d in range(grid.drop_normal, grid.drop_max + 1)]
    got = simulate_comb(m, [sig, position.drop], [a.n, a.frac, a.sticky], cases)
    for (v, d), row in zip(cases, got, strict=True):
        ext = v << (p - sig_width + f)
        kept = ext >> d
        assert row == [kept >> f, kept & ((1 << f) - 1), int(ext & ((1 << d) - 1) != 0)], (v, d)
    with pytest.raises(ValueError, match="excess_shift forms its own sticky bit"):
        grid.align(m, sig, position, trailing_zeros=Signal(4), excess_shift=True)


@pytest.mark.parametrize("mbits,saturate_at", [(1, 0b111), (2, 0b1011), (3, 0b1111)])
def test_round_aligned_saturates_at_a_code(mbits, saturate_at):
    """round_aligned with ``saturate_at`` is min(code, saturate_at) of the integer model (RNE)
    for every binade up to three above the saturating code's, every kept ``n`` an aligned
    normalized significand has there (hidden bit set above binade 0), every fraction and
    sticky bit; a code whose mantissa is not all ones is rejected."""
    from types import SimpleNamespace

    from amaranth.hdl import Module, Signal

    from hw.rounding import RNE, round_aligned

    m = Module()
    aligned = SimpleNamespace(n=Signal(mbits + 1), frac=Signal(), sticky=Signal(),
                              binade=Signal(4))
    code = round_aligned(m, aligned, mbits=mbits, rounding=RNE, saturate_at=saturate_at)
    b_top = (saturate_at >> mbits) + 2
    cases = [(n, f, st, b) for b in range(b_top + 1)
             for n in (range(1 << (mbits + 1)) if b == 0 else range(1 << mbits, 1 << (mbits + 1)))
             for f in (0, 1) for st in (0, 1)]
    got = simulate_comb(m, [aligned.n, aligned.frac, aligned.sticky, aligned.binade], [code],
                        cases)
    for (n, f, st, b), (c,) in zip(cases, got, strict=True):
        up = _model_round_up("rne", f, 1, st, n & 1, 0)
        assert c == min((b << mbits) + n + up, saturate_at), (n, f, st, b)
    with pytest.raises(ValueError, match="all-ones mantissa, not 0x7e"):
        round_aligned(Module(), aligned, mbits=3, rounding=RNE, saturate_at=0x7E)


def test_round_increment_rejects_stochastic_without_random_bits():
    from amaranth.hdl import Module, Signal

    from hw.rounding import STOCHASTIC, round_increment

    with pytest.raises(ValueError, match="random bits"):
        round_increment(Module(), Signal(2), Signal(), Signal(), STOCHASTIC)
