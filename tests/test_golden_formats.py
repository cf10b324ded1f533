"""Element formats: every code decoded, every value cast, against independent oracles.

Oracles: ml_dtypes' types (decoding and its RNE cast), int8 by its definition ``n * 2^-6``
with numpy's ``rint`` (ties to even), and the Fraction reference in ``tests/oracle``.
"""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import oracle
import pytest

import golden

FP_FORMATS = ["fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1"]
ALL_FORMATS = FP_FORMATS + ["int8"]
ML = {
    "fp8_e4m3": ml_dtypes.float8_e4m3fn,
    "fp8_e5m2": ml_dtypes.float8_e5m2,
    "fp6_e3m2": ml_dtypes.float6_e3m2fn,
    "fp6_e2m3": ml_dtypes.float6_e2m3fn,
    "fp4_e2m1": ml_dtypes.float4_e2m1fn,
}

# The contract's table (section 1): max normal with its magnitude code, min normal, min
# subnormal, and the special magnitude codes.
TABLE = {
    "fp8_e4m3": (448, 0x7E, 2.0**-6, 2.0**-9, (), (0x7F,)),
    "fp8_e5m2": (57344, 0x7B, 2.0**-14, 2.0**-16, (0x7C,), (0x7D, 0x7E, 0x7F)),
    "fp6_e3m2": (28, 0x1F, 2.0**-2, 2.0**-4, (), ()),
    "fp6_e2m3": (7.5, 0x1F, 1.0, 2.0**-3, (), ()),
    "fp4_e2m1": (6, 0x7, 1.0, 2.0**-1, (), ()),
}


def all_codes(fmt):
    return np.arange(1 << golden.element_format(fmt).bits, dtype=np.uint8)


def ml_cast_codes(x, fmt):
    """ml_dtypes' RNE cast after clamping to +-max normal (ml_dtypes maps overflow to NaN/Inf
    or saturates depending on the type; the contract saturates).  Returns uint8 codes."""
    m = TABLE[fmt][0]
    x = np.clip(x, -m, m)
    return x.astype(ML[fmt]).view(np.uint8)


def same_float(a, b):
    """Elementwise equality that treats NaN == NaN and tells -0 from +0."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (np.isnan(a) & np.isnan(b)) | ((a == b) & (np.signbit(a) == np.signbit(b)))


def show(fmt, code, got, want):
    f = golden.element_format(fmt)
    if f.twos_complement:
        fields = f"n={code - 256 if code >= 128 else code}"
    else:
        e = (code >> f.mbits) & ((1 << f.ebits) - 1)
        m = code & ((1 << f.mbits) - 1)
        fields = f"s={code >> (f.bits - 1)} e={e:0{f.ebits}b} m={m:0{f.mbits}b}"
    return f"{fmt} code 0x{code:02x} ({fields}): golden {got!r}, oracle {want!r}"


# --- decoding ------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FP_FORMATS)
def test_decode_every_code_matches_ml_dtypes(fmt):
    codes = all_codes(fmt)
    # ml_dtypes stores fp6/fp4 values in one byte each, the code in the low bits: viewing the
    # code bytes as the type gives the value (checked here on +-1 and the sign bit).
    ml = codes.view(ML[fmt]).astype(np.float64)
    got = golden.decode(codes, fmt)
    assert got.dtype == np.float64
    bad = np.flatnonzero(~same_float(got, ml))
    assert bad.size == 0, "; ".join(show(fmt, int(c), got[c], ml[c]) for c in bad[:8])


def test_ml_dtypes_sub_byte_layout():
    # The view convention the test above relies on: code in the low bits, sign at bit bits-1.
    assert np.array([1.0, -1.0], np.float32).astype(ml_dtypes.float4_e2m1fn).view(np.uint8) \
        .tolist() == [0b0010, 0b1010]
    assert np.array([1.0, -1.0], np.float32).astype(ml_dtypes.float6_e2m3fn).view(np.uint8) \
        .tolist() == [0b001000, 0b101000]
    assert np.array([1.0, -1.0], np.float32).astype(ml_dtypes.float6_e3m2fn).view(np.uint8) \
        .tolist() == [0b001100, 0b101100]


@pytest.mark.parametrize("fmt", ALL_FORMATS)
def test_decode_every_code_matches_fraction_oracle(fmt):
    f = oracle.FORMATS[fmt]
    got = golden.decode(all_codes(fmt), fmt)
    for c in range(1 << f.bits):
        want = oracle.code_value(f, c)
        g = got[c]
        if want is oracle.NAN:
            assert np.isnan(g), show(fmt, c, g, want)
        elif isinstance(want, str):
            assert np.isinf(g) and (g < 0) == (want == "-inf"), show(fmt, c, g, want)
        else:
            assert Fraction(float(g)) == want, show(fmt, c, g, want)
            if want == 0:  # fp formats have both zeros; int8 only +0
                neg = not f.is_int and bool(c >> (f.bits - 1))
                assert bool(np.signbit(g)) == neg, show(fmt, c, g, want)


def test_decode_int8_by_definition():
    codes = np.arange(256, dtype=np.uint8)
    want = codes.view(np.int8).astype(np.float64) * 2.0**-6
    got = golden.decode(codes, "int8")
    assert np.array_equal(got, want)
    assert got[0x80] == -2.0 and got[0x7F] == 127 / 64 and got[0x81] == -127 / 64
    assert not np.signbit(got[0])  # int8 has one zero


@pytest.mark.parametrize("fmt", FP_FORMATS)
def test_format_table(fmt):
    mx, mx_code, min_norm, min_sub, infs, nans = TABLE[fmt]
    f = golden.element_format(fmt)
    assert f.max_normal == mx and f.max_code == mx_code
    assert float(f.max_normal) == golden.decode(np.array([mx_code]), fmt)[0]
    assert 2.0**f.emin == min_norm and 2.0**f.lsb_exp == min_sub
    assert tuple(f.inf_codes) == infs and tuple(f.nan_codes) == nans
    vals = golden.decode(all_codes(fmt), fmt)
    pos = vals[np.isfinite(vals) & (vals > 0)]
    assert pos.max() == mx and pos.min() == min_sub
    assert min(v for v in pos if v >= min_norm) == min_norm
    sign = 1 << (f.bits - 1)
    # Specials: exactly the listed codes, both signs, and nothing else.
    assert set(np.flatnonzero(np.isnan(vals)).tolist()) == {c | s for c in nans for s in (0, sign)}
    assert np.flatnonzero(vals == np.inf).tolist() == list(infs)
    assert np.flatnonzero(vals == -np.inf).tolist() == [c | sign for c in infs]


def test_int8_table():
    f = golden.element_format("int8")
    assert f.max_normal == Fraction(127, 64) and f.twos_complement
    assert not f.nan_codes and not f.inf_codes


def test_special_codes_spelled_out():
    d = golden.decode
    assert np.isnan(d(np.array([0x7F, 0xFF]), "fp8_e4m3")).all()
    assert d(np.array([0x7E, 0xFE]), "fp8_e4m3").tolist() == [448.0, -448.0]
    assert d(np.array([0x7C, 0xFC]), "fp8_e5m2").tolist() == [np.inf, -np.inf]
    assert np.isnan(d(np.array([0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF]), "fp8_e5m2")).all()
    assert d(np.array([0x7B]), "fp8_e5m2").tolist() == [57344.0]
    for fmt in ("fp6_e3m2", "fp6_e2m3", "fp4_e2m1", "int8"):
        assert np.isfinite(d(all_codes(fmt), fmt)).all()


# --- encode(decode(c)) == c ----------------------------------------------------------------
@pytest.mark.parametrize("fmt", ALL_FORMATS)
@pytest.mark.parametrize("rounding", ["rne", "rna", "rtz"])
def test_encode_decode_round_trip(fmt, rounding):
    f = golden.element_format(fmt)
    codes = all_codes(fmt)
    # Every code's value from the oracle's decoding of the contract's definition.
    spec = oracle.FORMATS[fmt]
    vals = np.array([{oracle.NAN: np.nan, "+inf": np.inf, "-inf": -np.inf}.get(v, v)
                     if isinstance(v, str) else float(v)
                     for v in (oracle.code_value(spec, int(c)) for c in codes)])
    neg_zero = [c for c in codes.tolist() if not f.twos_complement and c == 1 << (f.bits - 1)]
    vals[neg_zero] = -0.0
    fin = np.isfinite(vals)
    back = golden.encode(vals[fin], fmt, rounding=rounding)
    want = codes[fin].copy()
    if f.twos_complement:
        # 0x80 decodes to -2.0, which the symmetric quantizer saturates to -127 (0x81).
        assert vals[0x80] == -2.0
        assert golden.encode(np.array([-2.0]), fmt, rounding=rounding)[0] == 0x81
        want[want == 0x80] = 0x81
    else:
        # -0 round-trips to the negative-zero code (sign bit set), not to +0.
        neg0 = 1 << (f.bits - 1)
        assert golden.encode(np.array([-0.0]), fmt, rounding=rounding)[0] == neg0
    bad = np.flatnonzero(back != want)
    assert bad.size == 0, [show(fmt, int(want[i]), int(back[i]), int(want[i])) for i in bad[:8]]
    # Inf codes have no finite value: encode() refuses non-finite input (see docs).
    if f.inf_codes:
        with pytest.raises(ValueError):
            golden.encode(vals[~fin & ~np.isnan(vals)], fmt)


# --- element rounding vs ml_dtypes (RNE) and the int8 definition ---------------------------
def all_bf16():
    x = np.arange(1 << 16, dtype=np.uint16).view(ml_dtypes.bfloat16)
    return x[np.isfinite(x.astype(np.float32))]


def all_fp16():
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    return x[np.isfinite(x)]


def random_fp32(rng, n):
    """n finite float32 values with uniformly random bit patterns: every exponent, both signs,
    subnormals and zeros included (plus values near the formats' ranges, which dominate the
    interesting cases)."""
    bits = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x = x[np.isfinite(x)]
    # Half of them again, but with exponents in [-30, 20] where every format's grid lives.
    near = (rng.uniform(1, 2, n // 2) * np.exp2(rng.integers(-30, 20, n // 2))
            * rng.choice([-1, 1], n // 2)).astype(np.float32)
    return np.concatenate([x, near])


def check_codes(fmt, x, got, want):
    bad = np.flatnonzero(got != want)
    if bad.size:
        i = bad[0]
        v = float(x[i])
        raise AssertionError(f"{bad.size} mismatches; first: input {v!r} ({v.hex()}): "
                             + show(fmt, int(want[i]), int(got[i]), int(want[i])))


@pytest.mark.parametrize("fmt", FP_FORMATS)
def test_encode_rne_every_bf16_and_fp16_vs_ml_dtypes(fmt):
    for x in (all_bf16(), all_fp16()):
        check_codes(fmt, x, golden.encode(x, fmt), ml_cast_codes(x.astype(np.float32), fmt))


@pytest.mark.parametrize("fmt", FP_FORMATS)
def test_encode_rne_random_fp32_vs_ml_dtypes(fmt, rng):
    x = random_fp32(rng, 1_000_000)
    assert x.size >= 1_000_000
    check_codes(fmt, x, golden.encode(x, fmt), ml_cast_codes(x, fmt))


def int8_reference(x):
    """Independent int8 element cast: RNE (np.rint) on the 2^-6 grid, clipped to +-127."""
    n = np.clip(np.rint(x.astype(np.float64) * 64), -127, 127).astype(np.int64)
    return (n & 0xFF).astype(np.uint8)


def test_encode_int8_every_bf16_fp16_and_random_fp32(rng):
    for x in (all_bf16(), all_fp16(), random_fp32(rng, 1_000_000)):
        check_codes("int8", x, golden.encode(x, "int8"), int8_reference(x))


@pytest.mark.parametrize("fmt", ALL_FORMATS)
@pytest.mark.parametrize("rounding", ["rne", "rna", "rtz", "stochastic"])
def test_encode_vs_fraction_oracle(fmt, rounding, rng):
    """Every rounding mode at scale 2^0 against the Fraction oracle, on a sample of bf16
    values and on every exact midpoint between adjacent grid values (ties)."""
    f = oracle.FORMATS[fmt]
    mags = list(oracle.value_table(fmt)[0])
    ext = mags + [2 * mags[-1] - mags[-2]]
    mids = [(a + b) / 2 for a, b in zip(ext[:-1], ext[1:], strict=True)]
    quarter = [(3 * a + b) / 4 for a, b in zip(ext[:-1], ext[1:], strict=True)]
    exact = [float(m) for m in mags + mids + quarter]
    assert all(Fraction(v) == m for v, m in zip(exact, mags + mids + quarter, strict=True))  # exact
    x = np.concatenate([np.array(exact), -np.array(exact)])
    sample = rng.choice(all_bf16(), 3000, replace=False).astype(np.float64)
    x = np.concatenate([x, sample])
    r = rng.integers(0, 256, x.shape) if rounding == "stochastic" else None
    got = golden.encode(x, fmt, rounding=rounding, random=r)
    want = np.empty_like(got)
    for i, v in enumerate(x.tolist()):
        neg = bool(np.signbit(v))
        m = oracle.round_to_grid(fmt, abs(Fraction(v)), rounding, 0 if r is None else int(r[i]))
        want[i] = oracle.encode_magnitude(f, neg, m)
    check_codes(fmt, x, got, want)
