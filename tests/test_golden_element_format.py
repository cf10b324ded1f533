"""The element-format family: the six OCP formats against the spec table, derived constants,
validation, names, and every ml_dtypes-named member's value set against ml_dtypes itself.

Expected values are typed here from the OCP MX v1.0 table (docs/numerics.md section 1,
../shared/mx-numerics.md) and from ml_dtypes; none is read from golden.
"""

from __future__ import annotations

import pickle
from fractions import Fraction as F

import ml_dtypes
import numpy as np
import oracle
import pytest

import golden
from golden import ElementFormat, element_format

# name: bits, E, M, bias, emax, max normal, min normal, min subnormal, Inf mags, NaN mags,
# max_code (magnitude code of max normal), two's complement.  The OCP v1.0 table; int8 in its
# sign-magnitude view E1M6, bias 1 (magnitude code = |n|, value n * 2^-6).
SPEC = {
    "fp8_e4m3": (8, 4, 3, 7, 8, F(448), F(1, 2**6), F(1, 2**9), (), (0x7F,), 0x7E, False),
    "fp8_e5m2": (8, 5, 2, 15, 15, F(57344), F(1, 2**14), F(1, 2**16), (0x7C,),
                 (0x7D, 0x7E, 0x7F), 0x7B, False),
    "fp6_e3m2": (6, 3, 2, 3, 4, F(28), F(1, 4), F(1, 16), (), (), 0x1F, False),
    "fp6_e2m3": (6, 2, 3, 1, 2, F(15, 2), F(1), F(1, 8), (), (), 0x1F, False),
    "fp4_e2m1": (4, 2, 1, 1, 2, F(6), F(1), F(1, 2), (), (), 0x7, False),
    "int8": (8, 1, 6, 1, 0, F(127, 64), F(1), F(1, 64), (), (), 0x7F, True),
}


@pytest.mark.parametrize("name", SPEC)
def test_ocp_formats_match_the_spec_table(name):
    bits, e, m, bias, emax, top, min_n, min_s, inf, nan, max_code, twos = SPEC[name]
    f = golden.FORMATS[name]
    assert (f.name, f.bits, f.ebits, f.mbits, f.bias, f.emax) == (name, bits, e, m, bias, emax)
    assert (f.max_normal, f.min_normal, f.min_subnormal) == (top, min_n, min_s)
    assert (f.inf_codes, f.nan_codes, f.max_code) == (inf, nan, max_code)
    assert (f.twos_complement, f.is_int) == (twos, twos)
    assert (f.emin, f.lsb_exp) == (1 - bias, 1 - bias - m)
    assert F(2) ** f.lsb_exp == min_s
    assert (f.sign_bit, f.code_mask) == (bits - 1, 2**bits - 1)
    assert f.lsb_units_max == top / min_s
    assert f.max_significand == top / F(2) ** (emax - m)
    assert f.magnitude_value(max_code) == top
    assert element_format(name) is f
    assert getattr(golden, name.upper()) is f


@pytest.mark.parametrize("name", SPEC)
def test_oracle_table_matches_the_spec_table(name):
    """tests/oracle derives its formats from the contract's definitions: hold them against
    the same typed table (the oracle's emax and max normal come from decoding every code)."""
    bits, e, m, bias, emax, top, min_n, min_s, inf, nan, max_code, twos = SPEC[name]
    f = oracle.FORMATS[name]
    assert (f.name, f.bits, f.is_int, f.emax) == (name, bits, twos, emax)
    assert (f.inf_mags, f.nan_mags) == (inf, nan)
    assert oracle.max_normal(f) == top
    assert oracle.value_table(f)[0][1] == min_s  # the smallest non-zero magnitude
    assert oracle.pow2(f.lsb_exp) == min_s
    if not twos:
        assert (f.ebits, f.mbits, f.bias) == (e, m, bias)
        assert oracle.value_table(f)[1][-1] == max_code
        assert min(v for v in oracle.value_table(f)[0] if v >= min_n) == min_n
    assert list(oracle.FORMATS) == list(SPEC)


def test_formats_is_the_six_ocp_formats_in_order():
    assert list(golden.FORMATS) == list(SPEC)


# (E, M, convention, bias): Inf and NaN magnitude codes, max code, emax -- worked by hand.
DERIVED = [
    ((3, 4, "ieee", 3), (0x70,), tuple(range(0x71, 0x80)), 0x6F, 3),  # float8_e3m4, max 15.5
    ((4, 3, "ieee", 7), (0x78,), tuple(range(0x79, 0x80)), 0x77, 7),  # float8_e4m3, max 240
    ((3, 3, "finite", 3), (), (), 0x3F, 4),
    ((2, 2, "finite", 1), (), (), 0x0F, 2),
    ((6, 1, "finite", 31), (), (), 0x7F, 32),
    ((5, 1, "fn", 15), (), (0x3F,), 0x3E, 16),
    ((2, 0, "finite", 1), (), (), 0x3, 2),
    ((3, 2, "finite", 1), (), (), 0x1F, 6),  # a non-default bias
]


@pytest.mark.parametrize("params, inf, nan, max_code, emax", DERIVED)
def test_derived_constants(params, inf, nan, max_code, emax):
    f = ElementFormat(*params)
    assert (f.inf_codes, f.nan_codes, f.max_code, f.emax) == (inf, nan, max_code, emax)
    assert f.bits == 1 + params[0] + params[1]


@pytest.mark.parametrize("n", range(2, 9))
def test_int_n(n):
    f = element_format(f"int{n}")
    assert (f.bits, f.ebits, f.mbits, f.bias, f.emax, f.twos_complement) == (n, 1, n - 2, 1, 0,
                                                                           True)
    assert f.max_code == 2 ** (n - 1) - 1
    assert f.max_normal == F(2 ** (n - 1) - 1, 2 ** (n - 2))
    assert f.lsb_exp == -(n - 2)
    assert f == ElementFormat.integer(n) and f.spec == {"name": f"int{n}", "int": n}


@pytest.mark.parametrize("args, kwargs, exc, words", [
    ((0, 3), {}, ValueError, "ebits"),
    ((8, 0), {}, ValueError, "ebits"),
    ((4, 7), {}, ValueError, "mbits"),
    ((5, 3), {}, ValueError, "2..8"),
    ((4, 3, "nan"), {}, ValueError, "convention"),
    ((1, 3, "ieee"), {}, ValueError, "ieee"),
    ((3, 0, "ieee"), {}, ValueError, "ieee"),
    ((1, 0, "fn"), {}, ValueError, "no normal"),
    ((4, 3, "fn", 99), {}, ValueError, "bias"),
    ((4.0, 3), {}, TypeError, "ebits"),
    ((4, "3"), {}, TypeError, "mbits"),
    ((4, 3, "fn", 7.0), {}, TypeError, "bias"),
    ((4, 3), {"name": ""}, TypeError, "name"),
])
def test_invalid_parameters_say_which(args, kwargs, exc, words):
    with pytest.raises(exc, match=words):
        ElementFormat(*args, **kwargs)


@pytest.mark.parametrize("n", [1, 9, "4"])
def test_invalid_int_width(n):
    with pytest.raises((ValueError, TypeError), match="intN"):
        ElementFormat.integer(n)


def test_read_only_equal_by_value_hashable_picklable():
    f = ElementFormat(4, 3, "fn", name="mine")
    with pytest.raises(AttributeError):
        f.bias = 3
    assert f == golden.FP8_E4M3 and hash(f) == hash(golden.FP8_E4M3)
    assert f != ElementFormat(4, 3, "ieee") and f != ElementFormat(4, 3, "fn", 8)
    assert len({f, golden.FP8_E4M3, element_format("e4m3fn")}) == 1
    g = pickle.loads(pickle.dumps(f))
    assert g == f and g.name == "mine"


@pytest.mark.parametrize("fmt", [*golden.FORMATS, "e3m3", "e6m1", "int4", "int2", "float8_e4m3",
                                 "e3m4fn_bias5", "e2m5ieee"])
def test_spec_round_trip(fmt):
    f = element_format(fmt)
    spec = f.spec
    assert all(isinstance(v, (str, int)) for v in spec.values())
    g = element_format(dict(spec))
    assert g == f and g.name == f.name and g.spec == spec
    assert element_format(f.name) == f  # the name it prints as resolves back


@pytest.mark.parametrize("spec, exc", [
    ({"ebits": 4}, ValueError), ({"int": 4, "ebits": 1}, ValueError),
    ({"ebits": 4, "mbits": 3, "sign": 1}, ValueError), ({"int": 9}, ValueError),
    (4, TypeError), (None, TypeError),
])
def test_bad_spec(spec, exc):
    with pytest.raises(exc):
        element_format(spec)


# name -> (E, M, convention, bias) or ("int", N): typed from the OCP table, ml_dtypes' docs and
# the naming rules of docs/numerics.md.
NAMES = {
    "fp8_e4m3": (4, 3, "fn", 7), "mxfp8": (4, 3, "fn", 7), "mxfp8_e4m3": (4, 3, "fn", 7),
    "float8_e4m3fn": (4, 3, "fn", 7), "e4m3": (4, 3, "fn", 7), "FP8-E4M3": (4, 3, "fn", 7),
    "fp8_e5m2": (5, 2, "ieee", 15), "mxfp8_e5m2": (5, 2, "ieee", 15),
    "float8_e5m2": (5, 2, "ieee", 15),
    "float8_e4m3": (4, 3, "ieee", 7), "float8_e3m4": (3, 4, "ieee", 3),
    "fp6_e2m3": (2, 3, "finite", 1), "mxfp6": (2, 3, "finite", 1),
    "mxfp6_e2m3": (2, 3, "finite", 1), "float6_e2m3fn": (2, 3, "finite", 1),
    "fp6_e3m2": (3, 2, "finite", 3), "mxfp6_e3m2": (3, 2, "finite", 3),
    "float6_e3m2fn": (3, 2, "finite", 3),
    "fp4_e2m1": (2, 1, "finite", 1), "mxfp4": (2, 1, "finite", 1),
    "float4_e2m1fn": (2, 1, "finite", 1),
    "int8": ("int", 8), "mxint8": ("int", 8), "int4": ("int", 4), "mxint4": ("int", 4),
    "int2": ("int", 2), "int5": ("int", 5),
    "e3m3": (3, 3, "finite", 3), "e2m2": (2, 2, "finite", 1), "e4m2": (4, 2, "finite", 7),
    "e5m1": (5, 1, "finite", 15), "e6m1": (6, 1, "finite", 31), "e2m5": (2, 5, "finite", 1),
    "e3m4": (3, 4, "finite", 3), "e1m1": (1, 1, "finite", 0), "e7m0": (7, 0, "finite", 63),
    "e3m4fn": (3, 4, "fn", 3), "e3m2_bias1": (3, 2, "finite", 1),
}


@pytest.mark.parametrize("name", NAMES)
def test_names(name):
    want = NAMES[name]
    f = element_format(name)
    if want[0] == "int":
        assert f.twos_complement and f.bits == want[1]
    else:
        assert not f.twos_complement
        assert (f.ebits, f.mbits, f.convention, f.bias) == want


@pytest.mark.parametrize("bad", ["fp7", "int9", "int1", "e4m4", "e0m2", "float8_e8m0fnu", "",
                                 "e3m2_bias99"])
def test_unknown_name_lists_what_is_accepted(bad):
    with pytest.raises(ValueError) as ei:
        element_format(bad)
    msg = str(ei.value)
    assert "\n" not in msg
    for word in ("fp8_e4m3", "float8_e3m4", "mxint4", "int2..int8", "e<E>m<M>"):
        assert word in msg


# ml_dtypes' names and types; int4/int2 are ml_dtypes' integers n, golden's intN is n*2^-(N-2).
ML = {"float8_e3m4": ml_dtypes.float8_e3m4, "float8_e4m3": ml_dtypes.float8_e4m3,
      "float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
      "float6_e2m3fn": ml_dtypes.float6_e2m3fn, "float6_e3m2fn": ml_dtypes.float6_e3m2fn,
      "float4_e2m1fn": ml_dtypes.float4_e2m1fn, "int4": ml_dtypes.int4, "int2": ml_dtypes.int2}


def ml_values(dtype, bits):
    """float64 value of every code 0..2^bits-1 as ml_dtypes decodes it."""
    codes = np.arange(1 << bits, dtype=np.uint8)
    if np.dtype(dtype).kind in "iu":  # ml_dtypes' intN: sign-extend the low bits
        n = np.where(codes >= 1 << (bits - 1), codes.astype(np.int64) - (1 << bits), codes)
        return np.array([float(np.array(v).astype(dtype)) for v in n])
    return codes.view(dtype).astype(np.float64)


@pytest.mark.parametrize("name", ML)
def test_value_set_equals_ml_dtypes_every_code(name):
    f = element_format(name)
    assert f.ml_dtype is ML[name]
    want = ml_values(ML[name], f.bits)
    if f.twos_complement:
        want = want * 2.0 ** -(f.bits - 2)
    got = golden.decode(np.arange(1 << f.bits), f)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got, want)  # Inf where ml_dtypes has Inf, signs of zeros too
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    fi = ml_dtypes.finfo(ML[name]) if not f.twos_complement else None
    if fi is not None:
        assert float(fi.max) == f.max_normal
        assert float(fi.smallest_normal) == f.min_normal
        assert float(fi.smallest_subnormal) == f.min_subnormal


@pytest.mark.parametrize("name, inf_at, nan_at", [
    ("float8_e4m3", [0x78, 0xF8], list(range(0x79, 0x80)) + list(range(0xF9, 0x100))),
    ("float8_e3m4", [0x70, 0xF0], list(range(0x71, 0x80)) + list(range(0xF1, 0x100))),
])
def test_ieee_like_inf_and_nan_exactly_where_ml_dtypes_has_them(name, inf_at, nan_at):
    codes = np.arange(256, dtype=np.uint8)
    ml = codes.view(ML[name]).astype(np.float64)
    got = golden.decode(codes, name)
    assert np.flatnonzero(np.isinf(ml)).tolist() == inf_at == np.flatnonzero(np.isinf(got)).tolist()
    assert np.flatnonzero(np.isnan(ml)).tolist() == nan_at == np.flatnonzero(np.isnan(got)).tolist()
