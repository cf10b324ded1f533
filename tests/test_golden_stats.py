"""golden.quantization_error against values worked by hand (exact Fractions)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import golden


def test_statistics_worked_by_hand():
    """fp8_e4m3, k = 4.  Block 0: amax 500, e = floor(log2 500) - 8 = 0, so 1 and 3 are exact,
    0.1f rounds to 13 * 2^-7 and -500 saturates to -448.  Block 1 is all zero, block 2 holds a
    NaN (NaN scale: left out of the errors)."""
    x = np.float32([[1.0, 3.0, 0.1, -500.0], [0, 0, 0, 0], [np.nan, 1, 1, 1]])
    mx = golden.quantize(x, "fp8_e4m3", block_size=4)
    s = golden.quantization_error(x, mx)
    e01 = Fraction(13, 128) - Fraction(float(np.float32(0.1)))
    sq = e01 ** 2 + 52 ** 2
    assert (s.elements, s.blocks) == (12, 3)
    assert s.mse == pytest.approx(float(sq / 8), rel=1e-15)  # 8 elements in non-NaN blocks
    signal = 1 + 9 + Fraction(float(np.float32(0.1))) ** 2 + 500 ** 2
    assert s.sqnr_db == pytest.approx(10 * math.log10(signal / sq), rel=1e-12)
    assert s.max_abs_error == 52.0 and s.max_rel_error == pytest.approx(52 / 500, rel=1e-15)
    assert (s.saturated, s.zero_blocks, s.nan_blocks) == (1, 1, 1)
    assert (s.scale_clamped_low, s.scale_clamped_high) == (0, 0)
    assert s.block_mse.shape == mx.scales.shape == (3, 1)
    assert s.block_mse[0, 0] == pytest.approx(float(sq / 4), rel=1e-15)
    assert s.block_mse[1, 0] == 0.0 and np.isnan(s.block_mse[2, 0])
    assert s.block_max_abs_error[0, 0] == 52.0
    assert s.block_saturated.ravel().tolist() == [1, 0, 0]
    assert "1 saturated" in str(s) and s.as_dict()["nan_blocks"] == 1


def test_exact_quantization_has_infinite_sqnr():
    x = np.float32([0.5, -1.5, 4.0, 0.0])  # on the fp4 grid at scale 2^0
    s = golden.quantization_error(x, golden.quantize(x, "fp4_e2m1", block_size=4))
    assert s.mse == 0 and s.sqnr_db == math.inf and s.max_abs_error == 0


@pytest.mark.parametrize("scale_mode", ["floor", "rceil"])
def test_scales_clamped_at_each_end(scale_mode):
    """float64 blocks whose exponent rule leaves E8M0's range: amax 2^-140 (fp8_e4m3: e = -148
    floor, ceil(-140 - log2 448) = -148 rceil) is clamped to 2^-127; amax 2^200 (e = 192) to
    2^127, where every element above 448 * 2^127 saturates; 1.0 is in range."""
    x = np.float64([[2.0**-140, 0], [2.0**200, 2.0**190], [1.0, 0.5]])
    mx = golden.quantize(x, "fp8_e4m3", block_size=2, scale_mode=scale_mode)
    assert mx.scales.ravel().tolist()[:2] == [0, 254]
    s = golden.quantization_error(x, mx, scale_mode=scale_mode)
    assert s.block_clamp.ravel().tolist() == [-1, 1, 0]
    assert (s.scale_clamped_low, s.scale_clamped_high) == (1, 1)
    assert s.block_saturated.ravel().tolist() == [0, 2, 0]


def test_rceil_clamp_boundary_int8():
    """int8 (max 127/64), rceil: amax 2^-128 gives ceil(log2(2^-128 * 64/127)) = -128 (clamped);
    amax 127/64 * 2^-127 gives exactly -127 (not clamped)."""
    x = np.float64([2.0**-128, 0, 127 / 64 * 2.0**-127, 0])
    mx = golden.quantize(x, "int8", block_size=2, scale_mode="rceil")
    s = golden.quantization_error(x, mx, scale_mode="rceil")
    assert s.block_clamp.tolist() == [-1, 0]


def test_bad_arguments_one_line():
    x = np.ones(4, np.float32)
    mx = golden.quantize(x, "int8", block_size=4)
    with pytest.raises(ValueError, match=r"x has shape \(5,\), but the MXArray holds"):
        golden.quantization_error(np.ones(5, np.float32), mx)
    with pytest.raises(TypeError, match="takes an MXArray"):
        golden.quantization_error(x, x)
    with pytest.raises(ValueError, match="unknown scale_mode"):
        golden.quantization_error(x, mx, scale_mode="ceil")
