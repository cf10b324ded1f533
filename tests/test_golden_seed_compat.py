"""The int8 seed options of golden.quantize (rounding='rnu', int8_range='asymmetric') against
hand-worked vectors and an exact Fraction reference."""

from __future__ import annotations

from fractions import Fraction
from math import floor

import ml_dtypes
import numpy as np
import oracle
import pytest

import golden


def _signed(codes):
    return np.asarray(codes, np.uint8).view(np.int8).astype(int).tolist()


@pytest.mark.parametrize("rounding,want", [("rne", [64, 2, -2, -2]), ("rna", [64, 3, -3, -2]),
                                           ("rnu", [64, 3, -2, -1]), ("rtz", [64, 2, -2, -1])])
def test_ties_by_hand(rounding, want):
    """amax 1.0: e = 0, so an element's code is x * 64 rounded: 2.5, -2.5 and -1.5 are ties."""
    x = np.float32([1.0, 2.5 / 64, -2.5 / 64, -1.5 / 64])
    mx = golden.quantize(x, "int8", block_size=4, rounding=rounding)
    assert mx.scales.tolist() == [127] and _signed(mx.codes) == want


@pytest.mark.parametrize("rounding", ["rne", "rna", "rnu"])
def test_minus_128_by_hand(rounding):
    """amax 127.75/64: e = 0; -127.75 rounds to -128, which only the asymmetric range keeps
    (code 0x80); +127.75 saturates to 127 in both ranges."""
    x = np.float32([-127.75 / 64, 127.75 / 64, 0.0, 1.0])
    sym = golden.quantize(x, "int8", block_size=4, rounding=rounding)
    asym = golden.quantize(x, "int8", block_size=4, rounding=rounding, int8_range="asymmetric")
    assert _signed(sym.codes)[:2] == [-127, 127]
    assert asym.codes.tolist()[:2] == [0x80, 0x7F]
    assert golden.dequantize(asym)[0] == -2.0


def _reference(x, k, rounding, int8_range):
    """Codes from exact Fractions: OCP scales (oracle), q = x / 2^e * 64, round, clip."""
    scales, _ = oracle.quantize(x, "int8", block_size=k)
    lo = -128 if int8_range == "asymmetric" else -127
    out = []
    for i, v in enumerate(x.astype(np.float64).tolist()):
        s = int(scales[i // k])
        q = Fraction(v) * 64 / oracle.pow2(s - 127) if s != 255 else Fraction(0)
        fl = floor(q)
        half = q - fl
        n = {"rne": fl + (half > Fraction(1, 2) or (half == Fraction(1, 2) and fl % 2 == 1)),
             "rna": (fl + (half >= Fraction(1, 2))) if q >= 0 else -floor(-q + Fraction(1, 2)),
             "rnu": fl + (half >= Fraction(1, 2)), "rtz": int(q)}[rounding]
        out.append(min(max(n, lo), 127) & 0xFF)
    return scales, out


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
@pytest.mark.parametrize("rounding", ["rne", "rna", "rnu", "rtz"])
@pytest.mark.parametrize("int8_range", ["symmetric", "asymmetric"])
def test_random_against_fractions(rng, dtype, rounding, int8_range):
    k = 8
    e = rng.integers(-20, 20, 64)
    # Half-integers of 2^-6 at each block's scale (ties in every block) and arbitrary values.
    half = (rng.integers(-255, 256, 512) / 2.0) * np.exp2(np.repeat(e, k) - 6)
    rand = rng.standard_normal(512) * np.exp2(np.repeat(e, k))
    x = np.where(rng.random(512) < 0.5, half, rand).astype(np.float32).astype(dtype)
    x[::37] = -np.abs(x[::37]) * 1.999  # negatives near -2 * 2^e: the -128 code
    mx = golden.quantize(x, "int8", block_size=k, rounding=rounding, int8_range=int8_range)
    scales, codes = _reference(x, k, rounding, int8_range)
    assert mx.scales.tolist() == scales.tolist()
    assert mx.codes.tolist() == codes


def test_seed_options_refused_elsewhere():
    x = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="int8 options"):
        golden.quantize(x, "fp8_e4m3", rounding="rnu")
    with pytest.raises(ValueError, match="int8 options"):
        golden.quantize(x, "fp4", int8_range="asymmetric")
    with pytest.raises(ValueError, match="int8_range must be 'symmetric'"):
        golden.quantize(x, "int8", int8_range="full")
    with pytest.raises(ValueError, match="stochastic"):
        golden.quantize(x, "int8", int8_range="asymmetric", rounding="stochastic",
                        random=np.zeros(4, np.int64))


@pytest.mark.parametrize("axis", [0, 1])
def test_seed_path_layout_matches_the_kernel(rng, axis):
    """Any axis, a padded partial block and a NaN block: the seed path (numpy, asymmetric
    range) writes the kernel's codes except -128 (0x80) where the kernel saturates to -127."""
    x = (rng.standard_normal((21, 13)) * 0.5).astype(np.float32)
    x[2, 3] = np.nan
    x[4, 0::2] = -1.9921875  # -127.5 units at e = 0: -128 in the asymmetric range
    a = golden.quantize(x, "int8", block_size=8, axis=axis)
    b = golden.quantize(x, "int8", block_size=8, axis=axis, int8_range="asymmetric")
    assert 255 in a.scales and 0x80 in b.codes and a.codes.shape == b.codes.shape
    assert np.array_equal(a.scales, b.scales)
    assert np.array_equal(np.where(b.codes == 0x80, 0x81, b.codes), a.codes)


def _quark_mxfixneuron_int8(x, rounding_mode):
    """A transcription of AMD Quark's ONNX MXFixNeuron CPU kernel (MXCPUKernel, int8 path,
    k = 32): shared exponent = the largest IEEE exponent field of the block, element =
    x / 2^shared / 2^-6 rounded by rounding_mode (0 std::round, 1 dpu_round, 2 py3_round),
    clamped to [-128, 127]."""
    b = x.reshape(-1, 32)
    field = (b.view(np.uint32) >> 23) & 0xFF
    shared = np.where(field == 0xFF, 0, field).max(axis=1).astype(np.int64) - 127
    q = b.astype(np.float64) / np.exp2(shared)[:, None] / 2.0**-6
    fl = np.floor(q)
    away = np.copysign(np.floor(np.abs(q) + 0.5), q)  # std::round: ties away from zero
    if rounding_mode == 0:
        r = away
    elif rounding_mode == 1:  # dpu_round: a negative tie goes up (ceil), the rest std::round
        r = np.where((q < 0) & (q - fl == 0.5), np.ceil(q), away)
    else:  # py3_round: ties to even
        r = np.where(q - fl > 0.5, fl + 1,
                     np.where(q - fl == 0.5, fl + (np.abs(fl) % 2 == 1), fl))
    return (np.clip(r, -128, 127) * 2.0**-6 * np.exp2(shared)[:, None]).reshape(x.shape)


@pytest.mark.parametrize("rounding_mode,rounding", [(0, "rna"), (1, "rnu"), (2, "rne")])
def test_matches_quark_mxfixneuron_int8(rng, rounding_mode, rounding):
    """golden's int8 seed options against the transcribed kernel, on normal fp32 data full of
    ties (half-integers of 2^-6 at each block's scale) and -128 candidates."""
    e = np.repeat(rng.integers(-20, 20, 64), 32)
    x = (rng.integers(-255, 256, 64 * 32) / 2.0) * np.exp2(e - 6)
    # Each block's amax: -127.75 units (-128 in every mode), -127.5 (a tie) or +96.
    x[::32] = rng.choice([-1.99609375, -1.9921875, 1.5], 64) * np.exp2(e[::32])
    x[x == 0] = 2.0 ** (e[x == 0] - 7)  # nonzero (normal) everywhere
    x = x.astype(np.float32)
    want = _quark_mxfixneuron_int8(x, rounding_mode)
    got = golden.fake_quantize(x, "int8", rounding=rounding, int8_range="asymmetric")
    assert np.array_equal(got.astype(np.float64), want)
    assert (want == -2.0 * np.exp2(e)).any()  # the -128 code is exercised
