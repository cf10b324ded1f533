"""golden for members of the element-format family beyond the six OCP formats, against
independent oracles only: ml_dtypes where it has the type (every code decoded, the RNE cast of
every bf16 value in range), tests/oracle's Fraction arithmetic for the rest (decode,
quantize, dequantize, the exact dot of mixed pairs), and the storage layout built here from its
definition (a contiguous LSB-first bit stream).
"""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import oracle
import pytest

import golden
from golden.mx import pack_codes, unpack_codes
from golden.stimulus import dot_accumulators, dot_random_blocks

SEED = 20261127

# Members checked against ml_dtypes' RNE cast (its float types; name -> ml_dtypes type).
ML_FLOATS = {"float8_e3m4": ml_dtypes.float8_e3m4, "float8_e4m3": ml_dtypes.float8_e4m3,
             "float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
             "float6_e2m3fn": ml_dtypes.float6_e2m3fn, "float6_e3m2fn": ml_dtypes.float6_e3m2fn,
             "float4_e2m1fn": ml_dtypes.float4_e2m1fn}
# Members checked against the Fraction oracle (no ml_dtypes type).
ORACLE_ONLY = ["e3m3", "e2m2", "e4m2", "e5m1", "e6m1", "e2m5", "e1m1", "e3m0", "e7m0", "int4",
               "int2", "int5", "e3m4fn_bias5"]


def oracle_fmt(name):
    """The oracle's own definition of a member (never golden's)."""
    defined = {"e3m4fn_bias5": oracle.spec(3, 4, "fn", 5),
               "float8_e4m3fn": oracle.spec(4, 3, "fn"), "float8_e5m2": oracle.spec(5, 2, "ieee"),
               "float6_e2m3fn": oracle.spec(2, 3), "float6_e3m2fn": oracle.spec(3, 2),
               "float4_e2m1fn": oracle.spec(2, 1)}
    return defined.get(name) or oracle.fmt_of(name)


def all_bf16() -> np.ndarray:
    """Every finite bf16 value."""
    x = np.arange(1 << 16, dtype=np.uint16)
    return x[(x & 0x7F80) != 0x7F80].view(ml_dtypes.bfloat16)


@pytest.mark.parametrize("name", ML_FLOATS)
def test_rne_cast_of_every_bf16_value_in_range_equals_ml_dtypes(name):
    ml = ML_FLOATS[name]
    fmt = golden.element_format(name)
    x = all_bf16()
    xf = x.astype(np.float64)
    x = x[np.abs(xf) <= float(ml_dtypes.finfo(ml).max)]
    want = x.astype(ml).astype(np.float64)
    got = golden.decode(golden.encode(x, fmt), fmt)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    # The same cast through quantize: a block [2^emax, x] has shared exponent 0 (scale 2^0).
    anchor = np.full(x.shape, 2.0 ** fmt.emax, np.float32).astype(ml_dtypes.bfloat16)
    mx = golden.quantize(np.stack([anchor, x], axis=1), fmt, block_size=2)
    assert np.all(mx.scales == 127)
    q = golden.decode(mx.codes[:, 1], fmt)
    np.testing.assert_array_equal(q, want)
    np.testing.assert_array_equal(np.signbit(q), np.signbit(want))


@pytest.mark.parametrize("name", ORACLE_ONLY + list(ML_FLOATS))
def test_every_code_decodes_like_the_oracle(name):
    fmt, spec = golden.element_format(name), oracle_fmt(name)
    assert fmt.bits == spec.bits
    got = golden.decode(np.arange(1 << fmt.bits), fmt)
    for c, g in enumerate(got.tolist()):
        want = oracle.code_value(spec, c)
        if want is oracle.NAN:
            assert np.isnan(g), (name, c)
        elif isinstance(want, str):
            assert g == (-np.inf if want == "-inf" else np.inf), (name, c)
        else:
            assert Fraction(g) == want, (name, c)
    assert fmt.max_normal == oracle.max_normal(spec)
    assert fmt.emax == spec.emax
    assert fmt.lsb_units_max == oracle.units_max(spec) or fmt.is_int


@pytest.mark.parametrize("name", ORACLE_ONLY)
def test_rne_cast_of_bf16_values_in_range_equals_the_oracle(name):
    fmt, spec = golden.element_format(name), oracle_fmt(name)
    x = all_bf16()
    xf = x.astype(np.float64)
    top = float(oracle.max_normal(spec))
    x = x[(np.abs(xf) <= top) & ((np.abs(xf) >= 2.0 ** (spec.lsb_exp - 3)) | (xf == 0))]
    rng = np.random.default_rng(SEED)
    print("seed", SEED)
    x = x[rng.permutation(x.size)[:3000]]
    codes = golden.encode(x, fmt)
    for v, c in zip(oracle.decode_input(x), codes.tolist(), strict=True):
        neg, mag = v
        want = oracle.encode_magnitude(spec, neg, oracle.round_to_grid(spec, mag, "rne"))
        assert c == want, (name, neg, mag)


def _random_input(rng, fmt_spec, shape):
    """Values spread over the format's range and beyond, with zeros and subnormal inputs."""
    top = oracle.floor_log2(oracle.max_normal(fmt_spec))
    e = rng.integers(fmt_spec.lsb_exp - 4, top + 3, shape)
    x = rng.standard_normal(shape) * np.exp2(e)
    x[rng.random(shape) < 0.05] = 0.0
    x[rng.random(shape) < 0.02] *= 2.0 ** -140
    return x.astype(np.float32)


@pytest.mark.parametrize("name", ORACLE_ONLY)
@pytest.mark.parametrize("rounding, scale_mode", [("rne", "floor"), ("rna", "rceil"),
                                                  ("rtz", "floor"), ("stochastic", "rceil")])
def test_quantize_and_dequantize_equal_the_oracle(name, rounding, scale_mode):
    fmt, spec = golden.element_format(name), oracle_fmt(name)
    rng = np.random.default_rng(SEED)
    print("seed", SEED)
    x = _random_input(rng, spec, (24, 16))
    x[3, 5] = np.inf
    rand = rng.integers(0, 1 << 5, x.shape) if rounding == "stochastic" else None
    kw = dict(block_size=8, scale_mode=scale_mode, rounding=rounding, random=rand)
    mx = golden.quantize(x, fmt, **kw, random_bits=5)
    s_want, c_want = oracle.quantize(x, spec, **kw, random_bits=5)
    np.testing.assert_array_equal(mx.scales, s_want)
    np.testing.assert_array_equal(mx.codes, c_want)
    out = golden.dequantize(mx)
    for (r, i), v in np.ndenumerate(out):
        s = int(s_want[r, i // 8])
        want = oracle.code_value(spec, int(c_want[r, i]))
        if s == 255 or want is oracle.NAN:
            assert np.isnan(v)
        else:
            assert Fraction(float(v)) == want * oracle.pow2(s - 127), (name, r, i)


@pytest.mark.parametrize("bits", range(2, 9))
def test_packing_is_a_contiguous_lsb_first_bit_stream(bits):
    fmt = golden.element_format(f"int{bits}")
    rng = np.random.default_rng(SEED + bits)
    print("seed", SEED + bits)
    for n in (1, 2, 3, 7, 8, 9, 33):
        codes = rng.integers(0, 1 << bits, (1, n)).astype(np.uint8)
        stream = sum(int(c) << (bits * i) for i, c in enumerate(codes[0].tolist()))
        per = 8 if bits % 2 else (4 if bits % 4 else (2 if bits == 4 else 1))
        nbytes = -(-n // per) * per * bits // 8  # whole groups of codes that fill whole bytes
        mx = golden.MXArray(np.zeros((1, 1), np.uint8), codes, fmt, n, 1, (1, n)) \
            if n & (n - 1) == 0 and n > 1 else None
        packed = pack_codes(codes[0], fmt)
        assert packed.tobytes() == stream.to_bytes(nbytes, "little"), (bits, n)
        assert np.array_equal(unpack_codes(packed, fmt, n), codes[0])
        if mx is not None:
            assert mx.pack().tobytes() == packed.tobytes()


# Pairs for the exact dot: (e5m2, e6m1) and (e6m1, e6m1) overflow a fixed 40-bit limb split
# (the limbs are sized from the pair); (e7m0, e7m0) spans 2^260 lsb units.
DOT_PAIRS = [("fp8_e5m2", "e6m1"), ("e6m1", "e6m1"), ("e7m0", "e7m0"), ("e7m0", "int4"),
             ("float8_e3m4", "e2m2"), ("int4", "int2"), ("e4m2", "e5m1"), ("e3m3", "e2m5"),
             ("float8_e4m3", "fp4_e2m1"), ("e5m1", "int8")]


@pytest.mark.parametrize("fa, fb", DOT_PAIRS)
def test_mixed_pair_dot_equals_fraction_sums(fa, fb):
    ga, gb = golden.element_format(fa), golden.element_format(fb)
    oa, ob = oracle_fmt(fa), oracle_fmt(fb)
    rng = np.random.default_rng(SEED)
    print("seed", SEED)
    k, n = 16, 120
    ca, sa, cb, sb = dot_random_blocks(rng, ga, gb, n, k)
    c = dot_accumulators(rng, ga, gb, ca, sa, cb, sb)
    # Directed: every lane at the largest magnitude (both signs), scales at the extremes.
    top_a = np.full(k, (1 << (ga.bits - 1)) if ga.is_int else ga.max_code, np.uint8)
    top_b = np.full(k, (1 << (gb.bits - 1)) if gb.is_int else gb.max_code, np.uint8)
    ca = np.concatenate([ca, top_a[None], top_a[None]])
    cb = np.concatenate([cb, top_b[None], top_b[None] ^ np.uint8(1 << (gb.bits - 1))])
    sa = np.concatenate([sa, [254, 0]]).astype(np.uint8)
    sb = np.concatenate([sb, [254, 0]]).astype(np.uint8)
    c = np.concatenate([c, [0x3F800000, 0x80000001]]).astype(np.uint32)
    got = golden.dot_blocks(ca[:, None], sa[:, None], cb[:, None], sb[:, None], ga, gb,
                            acc=c.view(np.float32)).view(np.uint32)
    for i in range(len(ca)):
        want = oracle.dot_block(oa, ca[i].tolist(), int(sa[i]), ob, cb[i].tolist(), int(sb[i]),
                                int(c[i]))
        assert int(got[i]) == want, (fa, fb, i)


def test_dot_pair_that_overflowed_a_fixed_limb_split_is_exact():
    """e5m2 x e6m1 at their largest magnitudes: the block sum needs more than 100 bits."""
    ga, gb = golden.element_format("fp8_e5m2"), golden.element_format("e6m1")
    k = 32
    ca = np.full((1, 1, k), ga.max_code, np.uint8)
    cb = np.full((1, 1, k), gb.max_code, np.uint8)
    cb[0, 0, 1] |= 1 << (gb.bits - 1)  # one negative product: the sum is (k - 2) products
    s = np.full((1, 1), 100, np.uint8)
    got = int(golden.dot_blocks(ca, s, cb, s, ga, gb).view(np.uint32)[0])
    t = (k - 2) * Fraction(57344) * Fraction(3, 2) * 2**32 * oracle.pow2(2 * (100 - 127))
    assert got == oracle.rne_fp32_bits(t)
