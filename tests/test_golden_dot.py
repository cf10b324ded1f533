"""golden.dot_blocks / golden.dot against the exact Fraction oracle (docs/numerics.md section 5).

The oracle decodes every element exactly, sums the products as a Fraction, applies the two
scales, adds c and rounds once with its own binary32 RNE (tests/oracle).  Results are
compared as fp32 bit patterns.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import oracle
import pytest

import golden

FORMATS = list(oracle.FORMATS)
PAIRS = list(itertools.product(FORMATS, FORMATS))
QNAN = 0x7FC00000
PINF, NINF = 0x7F800000, 0xFF800000


def f32_fields(bits):
    bits = int(bits)
    s, e, m = bits >> 31, (bits >> 23) & 0xFF, bits & 0x7FFFFF
    v = np.array([bits], np.uint32).view(np.float32)[0]
    return f"0x{bits:08x} (s={s} e={e} m=0x{m:06x} = {float(v)!r})"


def f32_bits(values):
    return np.asarray(values, np.float32).view(np.uint32)


def finite_codes(fmt):
    v = golden.decode(np.arange(1 << golden.element_format(fmt).bits), fmt)
    return np.flatnonzero(np.isfinite(v)).astype(np.uint8)


def check_dot(fa, fb, ac, asc, bc, bsc, acc=None):
    """golden.dot_blocks vs oracle.dot_chain on every row; returns golden's fp32 bits."""
    ac, bc = np.asarray(ac, np.uint8), np.asarray(bc, np.uint8)
    asc, bsc = np.asarray(asc, np.uint8), np.asarray(bsc, np.uint8)
    got = golden.dot_blocks(ac, asc, bc, bsc, fa, fb, acc)
    assert got.dtype == np.float32 and got.shape == ac.shape[:-2]
    gbits = got.view(np.uint32)
    lead = ac.shape[:-2]
    cb = np.zeros(lead, np.uint32) if acc is None else np.broadcast_to(f32_bits(acc), lead)
    for idx in np.ndindex(*lead):
        want = oracle.dot_chain(fa, ac[idx].tolist(), asc[idx].tolist(), fb, bc[idx].tolist(),
                                bsc[idx].tolist(), int(cb[idx]))
        if int(gbits[idx]) != want:
            ea = golden.decode(ac[idx], fa)
            eb = golden.decode(bc[idx], fb)
            raise AssertionError(
                f"{fa} x {fb} row {idx}: golden {f32_fields(gbits[idx])}, oracle "
                f"{f32_fields(want)}; c={f32_fields(cb[idx])}, scales a {asc[idx].tolist()} "
                f"b {bsc[idx].tolist()}, a {ea.tolist()}, b {eb.tolist()}")
    return gbits


# --- random blocks over all 36 format pairs --------------------------------------------------
@pytest.mark.parametrize("fa,fb", PAIRS)
def test_random_all_pairs(fa, fb, rng):
    rows, n, k = 12, 3, 32
    ca, cb = finite_codes(fa), finite_codes(fb)
    ac = rng.choice(ca, (rows, n, k))
    bc = rng.choice(cb, (rows, n, k))
    # Scales: mostly near 2^0, some anywhere in the E8M0 range.
    asc = np.where(rng.random((rows, n)) < 0.8, rng.integers(110, 145, (rows, n)),
                   rng.integers(0, 255, (rows, n)))
    bsc = np.where(rng.random((rows, n)) < 0.8, rng.integers(110, 145, (rows, n)),
                   rng.integers(0, 255, (rows, n)))
    acc = (rng.standard_normal(rows) * np.exp2(rng.integers(-30, 30, rows))).astype(np.float32)
    acc[:2] = 0.0
    check_dot(fa, fb, ac, asc, bc, bsc, acc)
    check_dot(fa, fb, ac, asc, bc, bsc)  # no accumulator: +0


@pytest.mark.parametrize("fa,fb", PAIRS)
def test_random_with_specials_all_pairs(fa, fb, rng):
    """Every code (NaN and Inf codes included), scales anywhere including 255, random c with
    NaN/Inf: exercises the precedence of section 4.1-4.2 against the oracle."""
    rows, n, k = 24, 2, 4
    na, nb = 1 << golden.element_format(fa).bits, 1 << golden.element_format(fb).bits
    ac = rng.integers(0, na, (rows, n, k))
    bc = rng.integers(0, nb, (rows, n, k))
    asc = np.where(rng.random((rows, n)) < 0.05, 255, rng.integers(100, 160, (rows, n)))
    bsc = np.where(rng.random((rows, n)) < 0.05, 255, rng.integers(100, 160, (rows, n)))
    acc = rng.choice(np.array([0.0, -0.0, 1.5, -3e-3, np.inf, -np.inf, np.nan, 7e30],
                              np.float32), rows)
    check_dot(fa, fb, ac, asc, bc, bsc, acc)


# --- special values (section 4.1, 4.2, 4.4) ------------------------------------------------
def one(fa, fb, a_vals, b_vals, sa=127, sb=127, c=0.0):
    """A single block from values (encoded exactly at scale 2^0), checked against the oracle."""
    ac = golden.encode(np.array(a_vals, np.float64), fa) if not isinstance(a_vals[0], int) \
        else np.array(a_vals)
    bc = golden.encode(np.array(b_vals, np.float64), fb) if not isinstance(b_vals[0], int) \
        else np.array(b_vals)
    return int(check_dot(fa, fb, ac[None], [sa], bc[None], [sb], np.float32(c))[()])


def test_nan_scales():
    for fa, fb in PAIRS:
        assert one(fa, fb, [1.0, 1.0], [1.0, 1.0], sa=255) == QNAN
        assert one(fa, fb, [0.0, 0.0], [0.0, 0.0], sb=255) == QNAN
        assert one(fa, fb, [1.0, 0.0], [1.0, 0.0], sa=255, sb=255, c=np.inf) == QNAN


def test_nan_codes_any_lane():
    for fmt, nans in (("fp8_e4m3", [0x7F, 0xFF]), ("fp8_e5m2", [0x7D, 0x7E, 0x7F, 0xFD, 0xFE])):
        for other in FORMATS:
            for lane in range(4):
                for nan in nans:
                    a = [0x38] * 4  # 1.0 in e4m3 / 1.5 in e5m2
                    a[lane] = nan
                    b = golden.encode(np.array([0.0, 1.0, -2.0, 0.5]), other).tolist()
                    assert one(fmt, other, a, b) == QNAN
                    assert one(other, fmt, b, a) == QNAN  # either operand


def test_nan_accumulator():
    for fa, fb in PAIRS:
        assert one(fa, fb, [1.0, 0.0], [1.0, 0.0], c=np.nan) == QNAN
        assert one(fa, fb, [0.0, 0.0], [0.0, 0.0], c=-np.nan) == QNAN  # canonical, sign dropped


def test_e5m2_infinities():
    P, N = 0x7C, 0xFC  # +Inf, -Inf
    one_e5 = 0x3C  # 1.0
    z = 0x00
    for other in FORMATS:
        o1 = int(golden.encode(np.array([1.0]), other)[0])
        om1 = int(golden.encode(np.array([-1.0]), other)[0])
        oz = int(golden.encode(np.array([0.0]), other)[0])
        # Inf * finite non-zero -> Inf of the product's sign, whatever the finite rest.
        assert one("fp8_e5m2", other, [P, one_e5], [o1, o1]) == PINF
        assert one("fp8_e5m2", other, [P, one_e5], [om1, o1]) == NINF
        assert one("fp8_e5m2", other, [N, z], [o1, oz], c=-1e38) == NINF
        # Inf * 0 -> NaN (also with a -0 code on the other side).
        assert one("fp8_e5m2", other, [P, one_e5], [oz, o1]) == QNAN
        neg0 = int(golden.encode(np.array([-0.0]), other)[0])
        assert one(other, "fp8_e5m2", [neg0, o1], [N, one_e5]) == QNAN
        # Opposite Infs among the products -> NaN; equal Infs -> that Inf.
        assert one("fp8_e5m2", other, [P, P], [o1, om1]) == QNAN
        assert one("fp8_e5m2", other, [P, N], [o1, om1]) == PINF
        # Against c: opposite -> NaN, same -> Inf; c = Inf with finite products -> c.
        assert one("fp8_e5m2", other, [P, z], [o1, oz], c=-np.inf) == QNAN
        assert one("fp8_e5m2", other, [P, z], [o1, oz], c=np.inf) == PINF
        assert one("fp8_e5m2", other, [one_e5, z], [o1, oz], c=-np.inf) == NINF
        # NaN outranks everything: a NaN code next to an Inf product.
        assert one("fp8_e5m2", other, [P, 0x7F], [o1, o1]) == QNAN
    # Inf * Inf.
    assert one("fp8_e5m2", "fp8_e5m2", [P, z], [N, z]) == NINF
    assert one("fp8_e5m2", "fp8_e5m2", [N, z], [N, z]) == PINF


def test_finite_accumulator_inf_is_not_nan():
    # Inf in c with NaN-free, Inf-free products: result is c whatever the scales (not 255).
    assert one("fp4_e2m1", "int8", [6.0, -6.0], [1.0, 1.0], sa=254, sb=254, c=-np.inf) == NINF


# --- zeros, cancellation, signs ------------------------------------------------------------
def test_exact_zero_is_positive():
    for fa, fb in PAIRS:
        assert one(fa, fb, [0.0, -0.0], [-0.0, -0.0]) == 0
        assert one(fa, fb, [0.0, 0.0], [1.0, 1.0], c=-0.0) == 0  # -0 in c is not kept
        assert one(fa, fb, [1.0, -1.0], [1.0, 1.0]) == 0  # cancellation
        assert one(fa, fb, [1.0, 0.0], [-1.0, 0.0], c=1.0 * 2.0**0) == 0  # c + T = 0
        assert one(fa, fb, [-0.5, 0.0], [1.0, 0.0], c=0.5) == 0


def test_negative_underflow_gives_negative_zero():
    """Interpretation (docs/numerics.md): a non-zero result that rounds to zero keeps its
    sign (IEEE RNE), so a negative one gives -0; only an exact zero is +0."""
    # int8: (-1/64) * (1/64) * 2^(0-127) * 2^(115-127) = -2^-151: below half the least
    # subnormal 2^-149, so it rounds to zero.
    assert one("int8", "int8", [-1 / 64, 0.0], [1 / 64, 0.0], sa=0, sb=115) == 0x80000000
    assert one("int8", "int8", [1 / 64, 0.0], [1 / 64, 0.0], sa=0, sb=115) == 0x00000000
    # Exactly half the least subnormal (-2^-150): a tie, to even (zero), sign kept.
    assert one("int8", "int8", [-1 / 64, 0.0], [1 / 64, 0.0], sa=0, sb=116) == 0x80000000
    # -3 * 2^-151 is above half: rounds away from zero to the least subnormal.
    assert one("int8", "int8", [-3 / 64, 0.0], [1 / 64, 0.0], sa=0, sb=115) == 0x80000001
    # The oracle's own rounding agrees on these by construction of the test (check_dot), and
    # directly:
    assert oracle.rne_fp32_bits(Fraction(-1, 2**151)) == 0x80000000
    assert oracle.rne_fp32_bits(Fraction(-1, 2**150)) == 0x80000000
    assert oracle.rne_fp32_bits(Fraction(-3, 2**151)) == 0x80000001
    assert oracle.rne_fp32_bits(Fraction(0)) == 0


# --- the final rounding: subnormals, overflow, ties ----------------------------------------
def test_oracle_rounding_matches_ieee_float32(rng):
    """The oracle's from-scratch fp32 RNE against numpy's float64 -> float32 cast (a correct
    IEEE cast) on values that float64 holds exactly: a check of the checker."""
    x = rng.standard_normal(3000) * np.exp2(rng.integers(-160, 130, 3000))
    x = np.concatenate([x, [2.0**-150, -(2.0**-150), 3 * 2.0**-151, 2.0**128, -(2.0**128),
                            float(np.finfo(np.float32).max) * (1 + 2.0**-25),
                            float(np.finfo(np.float32).max) * (1 + 2.0**-24)]])
    with np.errstate(over="ignore"):
        want = x.astype(np.float32).view(np.uint32)
    got = [oracle.rne_fp32_bits(Fraction(v)) for v in x.tolist()]
    assert got == want.tolist()


def test_subnormal_results(rng):
    """Products scaled into fp32's subnormal range (and just above and below it)."""
    for fa, fb in PAIRS:
        rows = 16
        ac = rng.choice(finite_codes(fa), (rows, 1, 8))
        bc = rng.choice(finite_codes(fb), (rows, 1, 8))
        # 2^(sa+sb-254) from 2^-254 to about 2^-110: results from 0 through subnormals to normals.
        asc = rng.integers(0, 30, (rows, 1))
        bsc = rng.integers(0, 128, (rows, 1))
        check_dot(fa, fb, ac, asc, bc, bsc)
        check_dot(fa, fb, ac, asc, bc, bsc, np.float32(2.0**-149) * rng.integers(-9, 9, rows))


def test_overflow_and_extreme_scales(rng):
    for fa, fb in PAIRS:
        rows = 12
        ac = rng.choice(finite_codes(fa), (rows, 1, 8))
        bc = rng.choice(finite_codes(fb), (rows, 1, 8))
        hi = rng.integers(240, 255, (rows, 1))  # sa + sb near 508: overflow to Inf
        check_dot(fa, fb, ac, hi, bc, rng.integers(230, 255, (rows, 1)))
        lo = rng.integers(0, 3, (rows, 1))  # sa + sb near 0: 2^-254, everything underflows
        check_dot(fa, fb, ac, lo, bc, rng.integers(0, 3, (rows, 1)),
                  np.float32(1e-45) * rng.integers(-3, 3, rows))
        # Around the fp32 overflow threshold: c near FLT_MAX plus a product near its ulp.
        c = np.float32(np.finfo(np.float32).max) * rng.choice([-1, 1], rows).astype(np.float32)
        check_dot(fa, fb, ac, rng.integers(190, 240, (rows, 1)), bc,
                  rng.integers(190, 240, (rows, 1)), c)
    # FLT_MAX + half its ulp (2^103) is a tie: to even rounds up, to 2^128 = Inf.
    m = np.float32(np.finfo(np.float32).max)
    assert one("int8", "int8", [1.0, 0.0], [1.0, 0.0], sa=127 + 103, sb=127, c=m) == PINF
    # Just below half an ulp: stays FLT_MAX.
    assert one("int8", "int8", [63 / 64, 0.0], [1.0, 0.0], sa=127 + 103, sb=127, c=m) == \
        int(f32_bits(m))


def test_final_rounding_ties(rng):
    """c + T exactly halfway between two fp32 neighbours (ties to even), and a hair either
    side of it (a tiny extra product provides the sticky bit)."""
    for fa, fb in [("int8", "int8"), ("fp8_e4m3", "fp4_e2m1"), ("fp6_e2m3", "fp8_e5m2")]:
        one_a = int(golden.encode(np.array([1.0]), fa)[0])
        one_b = int(golden.encode(np.array([1.0]), fb)[0])
        for _ in range(40):
            c = np.float32(rng.uniform(1, 2) * 2.0 ** int(rng.integers(-60, 60)))
            ulp_exp = int(np.frexp(c)[1]) - 1 - 23
            # T = 2^(ulp_exp - 1) (half an ulp of c), from 1 * 1 at scales summing to it.
            sa = 127 + (ulp_exp - 1) // 2
            sb = 127 + (ulp_exp - 1) - (ulp_exp - 1) // 2
            for sign in (1, -1):
                b1 = one_b if sign > 0 else int(golden.encode(np.array([-1.0]), fb)[0])
                ac = np.array([[[one_a, 0, 0, 0]]], np.uint8)
                bc = np.array([[[b1, 0, 0, 0]]], np.uint8)
                check_dot(fa, fb, ac, [[sa]], bc, [[sb]], c)  # exact tie
                lsb = 2.0 ** golden.element_format(fa).lsb_exp  # least subnormal of fa
                tiny_a = int(golden.encode(np.array([lsb]), fa)[0])
                ac2 = np.array([[[one_a, tiny_a, 0, 0]]], np.uint8)
                for tb in (one_b, int(golden.encode(np.array([-1.0]), fb)[0])):
                    bc2 = np.array([[[b1, tb, 0, 0]]], np.uint8)
                    check_dot(fa, fb, ac2, [[sa]], bc2, [[sb]], c)  # tie broken by sticky
    # A worked case: 1 + 2^-24 is a tie between 1 and 1 + 2^-23: to even, 1.0.
    assert one("int8", "int8", [1.0, 0.0], [1.0, 0.0], sa=127 - 12, sb=127 - 12, c=1.0) == \
        int(f32_bits(1.0))
    # (1 + 2^-23) + 2^-24 is a tie between odd 1 + 2^-23 and even 1 + 2^-22: up.
    c = np.float32(1 + 2.0**-23)
    assert one("int8", "int8", [1.0, 0.0], [1.0, 0.0], sa=127 - 12, sb=127 - 12, c=c) == \
        int(f32_bits(1 + 2.0**-22))


def test_wide_sums_exact_before_rounding(rng):
    """Products spanning the whole range of both formats in one block: the sum must be exact
    (no intermediate rounding) before the one fp32 rounding."""
    for fa, fb in PAIRS:
        ta = golden.decode(finite_codes(fa), fa)
        tb = golden.decode(finite_codes(fb), fb)
        big_a = finite_codes(fa)[np.argmax(ta)]
        big_b = finite_codes(fb)[np.argmax(tb)]
        small_a = finite_codes(fa)[np.argmin(np.where(ta > 0, ta, np.inf))]
        small_b = finite_codes(fb)[np.argmin(np.where(tb > 0, tb, np.inf))]
        neg_big_b = finite_codes(fb)[np.argmin(tb)]
        # big*big - big*big + small*small: only the tiny product survives.
        ac = np.array([[[big_a, big_a, small_a, 0]]], np.uint8)
        bc = np.array([[[big_b, neg_big_b, small_b, 0]]], np.uint8)
        check_dot(fa, fb, ac, [[127]], bc, [[127]])
        check_dot(fa, fb, ac, [[127]], bc, [[127]], np.float32(1.0))


# --- chaining over blocks ------------------------------------------------------------------
@pytest.mark.parametrize("fa,fb", [("fp8_e4m3", "fp8_e4m3"), ("int8", "fp4_e2m1"),
                                   ("fp6_e3m2", "fp8_e5m2"), ("fp4_e2m1", "fp6_e2m3")])
def test_multi_block_chaining(fa, fb, rng):
    rows, n, k = 8, 6, 16
    ac = rng.choice(finite_codes(fa), (rows, n, k))
    bc = rng.choice(finite_codes(fb), (rows, n, k))
    asc = rng.integers(100, 150, (rows, n))
    bsc = rng.integers(100, 150, (rows, n))
    check_dot(fa, fb, ac, asc, bc, bsc, rng.standard_normal(rows).astype(np.float32))


def test_chaining_rounds_once_per_block_in_order():
    """Block order matters: 2^24 + 1 - 2^24 is 0 when the 1 is absorbed into 2^24 first (one
    rounding per block), but 1 if the two big blocks met first."""
    one_c = 0x40  # int8 1.0
    z = [0] * 4
    a = np.array([[[one_c] + z[1:], [one_c] + z[1:], [0xC0] + z[1:]]], np.uint8)  # 1, 1, -1
    b = np.array([[[one_c] + z[1:]] * 3], np.uint8)
    # Scales: 2^24 * 1, then 1 * 1, then 2^24 * -1.
    asc = np.array([[127 + 24, 127, 127 + 24]])
    bsc = np.array([[127, 127, 127]])
    got = check_dot("int8", "int8", a, asc, b, bsc)
    assert got[0] == 0  # (2^24 + 1 -> 2^24) - 2^24 = +0
    a2, asc2 = a[:, [0, 2, 1]], asc[:, [0, 2, 1]]
    assert check_dot("int8", "int8", a2, asc2, b, bsc)[0] == f32_bits(1.0)


def test_nan_propagates_through_chain():
    a = np.zeros((1, 3, 2), np.uint8)
    asc = np.array([[127, 255, 127]])
    assert check_dot("fp8_e4m3", "fp8_e4m3", a, asc, a, [[127] * 3])[0] == QNAN


def test_dot_of_mx_arrays(rng):
    """golden.dot on quantized arrays, mixed formats, another axis, partial blocks."""
    x = (rng.standard_normal((4, 70, 3)) * 3).astype(np.float32)
    y = (rng.standard_normal((4, 70, 3)) * 0.1).astype(np.float32)
    for fa, fb in [("fp8_e4m3", "int8"), ("fp4_e2m1", "fp6_e3m2")]:
        ma = golden.quantize(x, fa, block_size=16, axis=1)
        mb = golden.quantize(y, fb, block_size=16, axis=1)
        acc = rng.standard_normal((4, 3)).astype(np.float32)
        got = golden.dot(ma, mb, acc)
        assert got.shape == (4, 3) and got.dtype == np.float32
        # The oracle's own quantization, cut into blocks by the layout's definition: along
        # axis 1, padded to 80 = 5 blocks of 16.
        a_s, a_c = oracle.quantize(x, fa, block_size=16, axis=1)
        b_s, b_c = oracle.quantize(y, fb, block_size=16, axis=1)
        assert np.array_equal(ma.codes, a_c) and np.array_equal(mb.codes, b_c)

        def blocks(codes, i, j):
            return codes[i, :, j].reshape(5, 16).tolist()

        want = np.array([[oracle.dot_chain(fa, blocks(a_c, i, j), a_s[i, :, j].tolist(), fb,
                                           blocks(b_c, i, j), b_s[i, :, j].tolist(),
                                           int(f32_bits(acc[i, j])))
                          for j in range(3)] for i in range(4)], np.uint32)
        assert np.array_equal(got.view(np.uint32), want)


@pytest.mark.parametrize("fa,fb", PAIRS)
def test_largest_sums_and_sticky(fa, fb):
    """k = 64 lanes of max * max (the widest exact sum), with one min-subnormal product
    riding far below it, against c of either sign and far above or below T."""
    ca, cb = finite_codes(fa), finite_codes(fb)
    va, vb = golden.decode(ca, fa), golden.decode(cb, fb)
    amax, bmax = ca[np.argmax(va)], cb[np.argmax(vb)]
    amin = ca[np.argmin(np.where(va > 0, va, np.inf))]
    bmin = cb[np.argmin(np.where(vb > 0, vb, np.inf))]
    bneg = cb[np.argmin(vb)]
    a = np.full((6, 1, 64), amax, np.uint8)
    b = np.full((6, 1, 64), bmax, np.uint8)
    a[:, 0, 0], b[:, 0, 0] = amin, bmin
    b[1::2, 0, 1:] = bneg  # odd rows: the big products are negative
    acc = np.array([0.0, 0.0, 2.0**100, -(2.0**100), 2.0**-140, -1.0], np.float32)
    check_dot(fa, fb, a, [[127]] * 6, b, [[127]] * 6, acc)
    check_dot(fa, fb, a, [[200]] * 6, b, [[30]] * 6, acc)


@pytest.mark.parametrize("fa,fb", PAIRS)
def test_cancellation_against_c(fa, fb, rng):
    """c = -fl(T): the result is the rounding error T - fl(T), exact to the last bit of T."""
    rows, k = 8, 32
    ac = rng.choice(finite_codes(fa), (rows, 1, k))
    bc = rng.choice(finite_codes(fb), (rows, 1, k))
    asc = rng.integers(110, 145, (rows, 1))
    bsc = rng.integers(110, 145, (rows, 1))
    t_bits = [oracle.dot_block(fa, ac[r, 0].tolist(), int(asc[r, 0]), fb, bc[r, 0].tolist(),
                               int(bsc[r, 0])) for r in range(rows)]
    acc = -np.array(t_bits, np.uint32).view(np.float32)
    got = check_dot(fa, fb, ac, asc, bc, bsc, acc)
    assert np.isfinite(got.view(np.float32)).all()


@pytest.mark.parametrize("fa,fb", PAIRS)
def test_c_and_scales_over_full_range(fa, fb, rng):
    """c with uniformly random fp32 bit patterns (every exponent, subnormals, both signs) and
    scales anywhere in 0..254: T and c meet at every relative alignment, from T far below c's
    last place (only a sticky bit survives) to c far below T's."""
    rows, k = 24, 8
    ac = rng.choice(finite_codes(fa), (rows, 1, k))
    bc = rng.choice(finite_codes(fb), (rows, 1, k))
    asc = rng.integers(0, 255, (rows, 1))
    bsc = rng.integers(0, 255, (rows, 1))
    c = rng.integers(0, 1 << 32, rows, dtype=np.uint64).astype(np.uint32).view(np.float32)
    c = np.where(np.isfinite(c), c, np.float32(1.0))
    check_dot(fa, fb, ac, asc, bc, bsc, c)
    # c one fp32 ulp-scale away from -T's rounding: near-total cancellation at every scale.
    t = np.array([oracle.dot_block(fa, ac[r, 0].tolist(), int(asc[r, 0]), fb,
                                   bc[r, 0].tolist(), int(bsc[r, 0])) for r in range(rows)],
                 np.uint32)
    fin = (t & 0x7F800000) != 0x7F800000
    near = (t ^ 0x80000000) + rng.integers(-2, 3, rows).astype(np.uint32)
    near = np.where(fin, near, 0).astype(np.uint32).view(np.float32)
    near = np.where(np.isfinite(near), near, np.float32(0))  # -0 - 2 ulps wraps to NaN bits
    check_dot(fa, fb, ac, asc, bc, bsc, near)
