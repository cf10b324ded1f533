"""golden's public API: argument validation, format names, pack/unpack, the E8M0 codec."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import oracle
import pytest

import golden
from golden.mx import pack_codes, unpack_codes

NAMES = ["fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1", "int8"]
X = np.linspace(-3, 3, 64, dtype=np.float32).reshape(2, 32)


# --- format names --------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda f: golden.element_format(f),
    lambda f: golden.quantize(X, f),
    lambda f: golden.encode(np.array([1.0]), f),
    lambda f: golden.decode(np.array([1]), f),
    lambda f: golden.dot_blocks(np.zeros((1, 2), np.uint8), [0], np.zeros((1, 2), np.uint8), [0],
                                f),
])
def test_unknown_format_lists_valid_names(call):
    for bad in ("fp7", "e4m4", "", "float32"):
        with pytest.raises(ValueError) as ei:
            call(bad)
        msg = str(ei.value)
        assert all(n in msg for n in NAMES), msg


def test_aliases():
    expect = {
        "fp8_e4m3": ["mxfp8_e4m3", "e4m3", "fp8", "E4M3", "MXFP8-E4M3", "float8_e4m3fn"],
        "fp8_e5m2": ["mxfp8_e5m2", "e5m2", "FP8_E5M2", "float8_e5m2"],
        "fp6_e3m2": ["mxfp6_e3m2", "e3m2", "fp6-e3m2"],
        "fp6_e2m3": ["mxfp6_e2m3", "e2m3"],
        "fp4_e2m1": ["mxfp4_e2m1", "e2m1", "fp4", "mxfp4", "MXFP4"],
        "int8": ["mxint8", "INT8", " int8 "],
    }
    for name, aliases in expect.items():
        f = golden.element_format(name)
        assert f.name == name and golden.FORMATS[name] is f
        assert golden.element_format(f) is f
        ref_scales, ref_codes = oracle.quantize(X, name)
        for a in aliases:
            assert golden.element_format(a) is f, a
            mx = golden.quantize(X, a)
            assert mx.fmt is f
            assert np.array_equal(mx.codes, ref_codes) and np.array_equal(mx.scales, ref_scales)


def test_format_argument_type():
    with pytest.raises(TypeError):
        golden.element_format(8)
    with pytest.raises(TypeError):
        golden.quantize(X, None)


# --- input validation ------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [
    np.arange(32), np.arange(32, dtype=np.uint8), np.ones(32, bool), np.ones(32, np.complex64),
    np.array([1.0] * 32, dtype=object), np.array(["a"] * 32), [1] * 32,
])
def test_non_float_input_is_type_error(bad):
    with pytest.raises(TypeError):
        golden.quantize(bad, "fp8_e4m3")
    with pytest.raises(TypeError):
        golden.encode(bad, "fp8_e4m3")


def test_accepted_input_dtypes():
    for dt in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64):
        x = np.array([1.0, -2.0, 0.5, 3.0], dt)
        mx = golden.quantize(x, "fp8_e4m3", block_size=4)
        assert mx.scales.tolist() == [127 + 1 - 8]  # amax 3: floor(log2 3) - emax = -7
        assert golden.encode(x, "int8").dtype == np.uint8


def test_mxarray_input_rejected():
    mx = golden.quantize(X, "fp8_e4m3")
    with pytest.raises(TypeError):
        golden.quantize(mx, "fp8_e4m3")
    with pytest.raises(TypeError):
        golden.dequantize(X)
    with pytest.raises(TypeError):
        golden.dot(X, mx)


@pytest.mark.parametrize("k", [0, 1, 3, 6, 48, -2, -32])
def test_bad_block_size(k):
    with pytest.raises(ValueError):
        golden.quantize(X, "fp8_e4m3", block_size=k)


@pytest.mark.parametrize("k", [2.0, "32", True])
def test_block_size_type(k):
    with pytest.raises(TypeError):
        golden.quantize(X, "fp8_e4m3", block_size=k)


def test_block_size_none_is_the_formats_default():
    x = np.arange(64, dtype=np.float32).reshape(2, 32)
    for fmt, k in (("fp8_e4m3", 32), ("int8", 32), ("e3m3", 32), ("nvfp4", 16)):
        default, none = golden.quantize(x, fmt), golden.quantize(x, fmt, block_size=None)
        given = golden.quantize(x, fmt, block_size=k)
        assert default.block_size == none.block_size == given.block_size == k
        assert np.array_equal(none.scales, given.scales)
        assert np.array_equal(none.codes, given.codes)
    assert golden.fake_quantize(x, "nvfp4").dtype == np.float32
    assert np.array_equal(golden.fake_quantize(x, "fp4_e2m1"),
                          golden.fake_quantize(x, "fp4_e2m1", block_size=32))


def test_bad_scale_mode_rounding_axis():
    with pytest.raises(ValueError, match="floor"):
        golden.quantize(X, "fp8_e4m3", scale_mode="ceil")
    with pytest.raises(ValueError, match="rne"):
        golden.quantize(X, "fp8_e4m3", rounding="nearest")
    with pytest.raises(ValueError, match="rne"):
        golden.encode(np.array([1.0]), "fp8_e4m3", rounding="RNZ")
    for ax in (2, -3, 17):
        with pytest.raises(ValueError, match="axis"):
            golden.quantize(X, "fp8_e4m3", axis=ax)
    with pytest.raises(ValueError):
        golden.quantize(np.float32(1.0), "fp8_e4m3")  # 0-d


def test_stochastic_random_bits_validation():
    q = golden.quantize
    with pytest.raises(ValueError, match="random"):
        q(X, "fp8_e4m3", rounding="stochastic")
    with pytest.raises(ValueError, match="shape"):
        q(X, "fp8_e4m3", rounding="stochastic", random=np.zeros((2, 31), int))
    with pytest.raises(ValueError):
        q(X, "fp8_e4m3", rounding="stochastic", random=np.full(X.shape, 256))
    with pytest.raises(ValueError):
        q(X, "fp8_e4m3", rounding="stochastic", random=np.full(X.shape, -1))
    with pytest.raises(TypeError):
        q(X, "fp8_e4m3", rounding="stochastic", random=np.zeros(X.shape))
    with pytest.raises(ValueError):
        q(X, "fp8_e4m3", rounding="rne", random=np.zeros(X.shape, int))
    for random_bits in (0, 25, 2.5):
        with pytest.raises(ValueError):
            q(X, "fp8_e4m3", rounding="stochastic", random=np.zeros(X.shape, int),
              random_bits=random_bits)
    # Valid: 12 random bits, values up to 2^12 - 1.
    mx = q(X, "fp8_e4m3", rounding="stochastic", random=np.full(X.shape, 4095), random_bits=12)
    assert mx.codes.shape == X.shape


def test_encode_rejects_non_finite():
    for v in (np.nan, np.inf, -np.inf):
        with pytest.raises(ValueError):
            golden.encode(np.array([1.0, v]), "fp8_e5m2")


def test_decode_validation():
    with pytest.raises(ValueError):
        golden.decode(np.array([16]), "fp4_e2m1")
    with pytest.raises(ValueError):
        golden.decode(np.array([64]), "fp6_e3m2")
    with pytest.raises(ValueError):
        golden.decode(np.array([-1]), "int8")
    with pytest.raises(TypeError):
        golden.decode(np.array([1.0]), "int8")


def test_dequantize_validation():
    mx = golden.quantize(X, "fp8_e4m3")
    for dt in (np.float64, np.int32, ml_dtypes.float8_e4m3fn):
        with pytest.raises(ValueError):
            golden.dequantize(mx, dt)
    for dt in (np.float32, np.float16, ml_dtypes.bfloat16):
        assert golden.dequantize(mx, dt).dtype == np.dtype(dt)
        assert mx.dequantize(dt).shape == X.shape


def test_dot_validation():
    a = golden.quantize(X, "fp8_e4m3")
    b = golden.quantize(X[:, :16], "fp8_e4m3", block_size=16)
    with pytest.raises(ValueError):
        golden.dot(a, b)
    with pytest.raises(ValueError):
        golden.dot(a, golden.quantize(X, "fp8_e4m3", block_size=16))
    with pytest.raises(ValueError):
        golden.dot(a, a, acc=np.float64(0.1))  # not exactly representable in fp32
    assert golden.dot(a, a, acc=np.float64(0.5)).dtype == np.float32  # exact: accepted
    with pytest.raises(ValueError):
        golden.dot(a, a, acc=np.zeros(3, np.float32))  # does not broadcast to (2,)
    with pytest.raises(TypeError):
        golden.dot(a, a, acc=np.ones(2, np.complex64))
    c = np.zeros((1, 2), np.uint8)
    with pytest.raises(ValueError):
        golden.dot_blocks(c, [0], np.zeros((1, 4), np.uint8), [0], "int8")
    with pytest.raises(ValueError):
        golden.dot_blocks(c + 16, [0], c, [0], "fp4_e2m1")  # code outside 4 bits
    with pytest.raises(ValueError):
        golden.dot_blocks(np.zeros((1, 3), np.uint8), [0], np.zeros((1, 3), np.uint8), [0],
                          "int8")  # block size 3
    with pytest.raises(ValueError):
        golden.dot_blocks(c, [0, 0], c, [0], "int8")  # scales shape


# --- E8M0 codec ------------------------------------------------------------------------------
def test_scale_codec_round_trip():
    s = np.arange(256, dtype=np.uint8)
    v = golden.decode_scale(s)
    assert np.isnan(v[255]) and np.isnan(v).sum() == 1
    assert v[127] == 1.0 and v[0] == 2.0**-127 and v[254] == 2.0**127
    assert np.array_equal(v[:255], np.exp2(np.arange(255) - 127.0))
    assert np.array_equal(golden.encode_scale(v), s)
    assert golden.encode_scale(v).dtype == np.uint8


@pytest.mark.parametrize("bad", [0.0, -1.0, 3.0, 0.75, 2.0**128, 2.0**-128, np.inf, -np.inf,
                                 -(2.0**-3)])
def test_encode_scale_rejects_non_e8m0(bad):
    with pytest.raises(ValueError):
        golden.encode_scale(np.array([1.0, bad]))


def test_decode_scale_validation():
    with pytest.raises(ValueError):
        golden.decode_scale(np.array([256]))
    with pytest.raises(ValueError):
        golden.decode_scale(np.array([-1]))
    with pytest.raises(TypeError):
        golden.decode_scale(np.array([1.0]))


# --- storage layout (docs/numerics.md section 6) -------------------------------------------------
def test_pack_fp4_hand_worked():
    # Two codes per byte, the even element in the low nibble.
    codes = np.array([0x1, 0xA, 0x7, 0xF, 0x3], np.uint8)
    packed = pack_codes(codes, golden.element_format("fp4_e2m1"))
    assert packed.tolist() == [0xA1, 0xF7, 0x03]
    assert unpack_codes(packed, golden.element_format("fp4_e2m1"), 5).tolist() == codes.tolist()


def test_pack_fp6_hand_worked():
    # Four codes in three bytes: code j in bits [6j, 6j+6) of the little-endian 24-bit word.
    # [0x01, 0x02, 0x03, 0x3F] -> 0x01 | 0x02<<6 | 0x03<<12 | 0x3F<<18 = 0xFC3081.
    # [0x2A, 0x15, 0x00, 0x21] -> 0x2A | 0x540 | 0 | 0x840000 = 0x84056A.
    f = golden.element_format("fp6_e2m3")
    codes = np.array([0x01, 0x02, 0x03, 0x3F, 0x2A, 0x15, 0x00, 0x21, 0x3F], np.uint8)
    packed = pack_codes(codes, f)
    assert packed.tolist() == [0x81, 0x30, 0xFC, 0x6A, 0x05, 0x84, 0x3F, 0x00, 0x00]
    assert unpack_codes(packed, f, 9).tolist() == codes.tolist()


def test_pack_bytes_formats_identity():
    for name in ("fp8_e4m3", "fp8_e5m2", "int8"):
        codes = np.array([0x00, 0x80, 0x7F, 0xFF, 0x12], np.uint8)
        packed = pack_codes(codes, golden.element_format(name))
        assert packed.tolist() == codes.tolist()


@pytest.mark.parametrize("fmt", NAMES)
@pytest.mark.parametrize("axis", [0, -1])
def test_pack_unpack_round_trip(fmt, axis, rng):
    f = golden.element_format(fmt)
    x = (rng.standard_normal((6, 45)) * 4).astype(np.float32)
    mx = golden.quantize(x, fmt, block_size=8, axis=axis)
    packed = mx.pack()
    assert packed.dtype == np.uint8
    n = mx.codes.size
    assert packed.size == {8: n, 6: -(-n // 4) * 3, 4: -(-n // 2)}[f.bits]
    back = golden.MXArray.unpack(packed, mx.scales, fmt, x.shape, block_size=8, axis=axis)
    assert back.fmt is f and back.shape == x.shape and back.axis == mx.axis
    assert np.array_equal(back.codes, mx.codes) and np.array_equal(back.scales, mx.scales)
    # The layout's definition (docs/numerics.md section 6): blocks in order with the block axis
    # last, C order, the codes one contiguous LSB-first bit stream padded to whole bytes.
    order = np.moveaxis(mx.codes, axis, -1).reshape(-1).tolist()
    stream = sum(c << (f.bits * i) for i, c in enumerate(order))
    assert packed.tobytes() == stream.to_bytes(packed.size, "little")
    # Every code of the format survives packing, at every position in a group.
    all_codes = np.tile(np.arange(1 << f.bits, dtype=np.uint8), 3)
    for shift in range(4):
        c = np.roll(all_codes, shift)
        assert np.array_equal(unpack_codes(pack_codes(c, f), f, c.size), c)
    with pytest.raises(ValueError):
        golden.MXArray.unpack(packed[:-1], mx.scales, fmt, x.shape, block_size=8, axis=axis)
    with pytest.raises(ValueError):
        golden.MXArray.unpack(packed, mx.scales.reshape(-1)[:1], fmt, x.shape, block_size=8,
                              axis=axis)


def test_mxarray_fields():
    x = np.ones((3, 70), np.float32)
    mx = golden.quantize(x, "fp6_e3m2", block_size=32)
    assert mx.scales.shape == (3, 3) and mx.codes.shape == (3, 96)
    assert mx.scales.dtype == np.uint8 and mx.codes.dtype == np.uint8
    assert mx.n_blocks == 3 and mx.block_size == 32 and mx.axis == 1 and mx.shape == (3, 70)
    c, s = mx.blocks()
    assert c.shape == (3, 3, 32) and s.shape == (3, 3)
    assert golden.dequantize(mx).shape == (3, 70)


def test_non_contiguous_inputs(rng):
    x = rng.standard_normal((8, 64)).astype(np.float32)
    for v in (x[:, ::2], x.T, x[::-1], np.asfortranarray(x)):
        for axis in (0, -1):
            a = golden.quantize(v, "fp4_e2m1", block_size=8, axis=axis)
            s, c = oracle.quantize(np.ascontiguousarray(v), "fp4_e2m1", block_size=8, axis=axis)
            assert np.array_equal(a.codes, c) and np.array_equal(a.scales, s)
            # Dequantized values: the oracle's code values times the oracle's scales.
            scale = np.repeat(np.ldexp(1.0, s.astype(np.int64) - 127), 8, axis=axis)
            scale = np.take(scale, np.arange(v.shape[axis]), axis=axis)
            vals = np.vectorize(lambda x: float(oracle.code_value("fp4_e2m1", int(x))))(
                np.take(c, np.arange(v.shape[axis]), axis=axis))
            assert np.array_equal(golden.dequantize(a), (vals * scale).astype(np.float32))


@pytest.mark.parametrize("dtype,nan_bits", [(np.float32, 0x7FC00000),
                                            (ml_dtypes.bfloat16, 0x7FC0),
                                            (np.float16, 0x7E00)])
@pytest.mark.parametrize("fmt,nan_codes", [("fp8_e4m3", [0x7F, 0xFF]),
                                           ("fp8_e5m2", [0x7D, 0x7E, 0xFE, 0xFF])])
def test_dequantize_writes_one_canonical_nan(dtype, nan_bits, fmt, nan_codes):
    """NaN codes of either sign, and a NaN scale, all give the canonical quiet NaN: the
    encoding the RTL dequantizer writes (bit patterns written by hand)."""
    codes = np.uint8([nan_codes, [0x38] * len(nan_codes)])  # NaN codes; finite codes
    mx = golden.MXArray(np.uint8([[127], [255]]), codes, golden.element_format(fmt),
                        len(nan_codes), 1, codes.shape)
    out = golden.dequantize(mx, dtype)
    bits = out.view(np.uint32 if out.itemsize == 4 else np.uint16)
    assert [int(b) for b in bits.ravel()] == [nan_bits] * codes.size


def test_mxarray_repr_is_a_one_line_summary():
    x = np.zeros((3, 64), np.float32)
    x[0, :32] = 1.0  # block scale 2^(0 - emax) = 2^-8 for fp8_e4m3
    x[1, 32:] = 2.0**20  # 2^12
    x[2, 5] = np.inf  # a NaN block; the other blocks of row 2 are zero blocks (2^-127)
    text = repr(golden.quantize(x, "fp8_e4m3", block_size=32))
    assert "\n" not in text and len(text) < 160
    assert text == ("MXArray(fp8_e4m3, shape=(3, 64), block_size=32, axis=1, 6 blocks, "
                    "scales 2^-127..2^12, 1 NaN block)")
