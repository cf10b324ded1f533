"""NVFP4 in golden: dequantize (every code at a spread of scales), the dot product and its
accumulation in K order, and pack, against the Fraction oracle (tests/oracle, ``nvfp4_*``).

Quantization is tests/test_golden_nvfp4.py's.
"""

from __future__ import annotations

import numpy as np
import oracle as O
import pytest

import golden
from golden.scale_format import UE4M3

F32 = np.float32


# -- dequantize, dot, pack ------------------------------------------------------------------------
@pytest.mark.parametrize("out", ["fp32", "bf16", "fp16"])
#: P = 3.4388022... (fp32) makes 108 of the code x scale products round differently in bf16 or
#: fp16 when they are rounded to fp32 first (double rounding): the test can tell.
@pytest.mark.parametrize("p", [None, 2.0**-7 * 1.3125, 3.4388022422790527])
def test_dequantize_every_code_and_scale(out, p):
    p = None if p is None else float(F32(p))
    codes = np.tile(np.arange(16, dtype=np.uint8), (128, 1))
    scales = np.arange(128, dtype=np.uint8)[:, None]
    mx = golden.MXArray(scales, codes, "fp4_e2m1", 16, 1, (128, 16), "ue4m3", p)
    got = golden.dequantize(mx, out)
    eb, mb, u = {"fp32": (8, 23, np.uint32), "bf16": (8, 7, np.uint16),
                 "fp16": (5, 10, np.uint16)}[out]
    qnan = {"fp32": 0x7FC00000, "bf16": 0x7FC0, "fp16": 0x7E00}[out]
    for s in range(128):
        for c in range(16):
            v = O.nvfp4_dequantize_value(c, s, p)
            want = qnan if v is O.NAN else O.rne_float_bits(v, eb, mb)
            if v is not O.NAN and v == 0 and c & 8:
                want |= 1 << (eb + mb)  # -0 from a negative code
            assert int(got[s, c:c + 1].view(u)[0]) == want, (hex(s), c)


def test_dot_against_the_oracle(rng):
    n, k = 5, 16
    for pa, pb, c in ((None, None, None), (F32(0.75), None, None), (F32(3e-3), F32(7.0), 1.5),
                      (None, F32(2.0**-100), -2.0**-90)):
        ac = rng.integers(0, 16, (3, n * k), dtype=np.uint8)
        bc = rng.integers(0, 16, (3, n * k), dtype=np.uint8)
        sa = rng.integers(0, 0x7F, (3, n), dtype=np.uint8)  # subnormal and 0 scales included
        sb = rng.integers(0x30, 0x7F, (3, n), dtype=np.uint8)
        a = golden.MXArray(sa, ac, "fp4_e2m1", k, 1, (3, n * k), "ue4m3", pa)
        b = golden.MXArray(sb, bc, "fp4_e2m1", k, 1, (3, n * k), "ue4m3", pb)
        acc = None if c is None else np.full(3, c, F32)
        got = golden.dot(a, b, acc).view(np.uint32)
        for r in range(3):
            cb = 0 if c is None else int(np.array([c], F32).view(np.uint32)[0])
            want = O.nvfp4_dot(ac[r], sa[r], None if pa is None else float(pa), bc[r], sb[r],
                               None if pb is None else float(pb), cb)
            assert int(got[r]) == want, (r, hex(int(got[r])), hex(want))
    sa[0, 2] = 0x7F
    a = golden.MXArray(sa, ac, "fp4_e2m1", k, 1, (3, n * k), "ue4m3")
    assert golden.dot(a, b).view(np.uint32)[0] == 0x7FC00000
    sa[0, 2] = 0x10
    got = golden.dot(a, b, np.array([np.inf, np.nan, -0.0], F32)).view(np.uint32)
    assert got[:2].tolist() == [0x7F800000, 0x7FC00000]
    assert int(got[2]) == O.nvfp4_dot(ac[2], sa[2], None, bc[2], sb[2], float(pb), 0x80000000)


def test_dot_of_quantized_arrays_accumulates_in_k_order(rng):
    x = rng.standard_normal((2, 128)).astype(F32)
    w = rng.standard_normal((2, 128)).astype(F32)
    a = golden.quantize(x, "nvfp4", tensor_scale="dynamic")
    b = golden.quantize(w, "nvfp4", tensor_scale="dynamic")
    got = golden.dot(a, b)
    want = [O.nvfp4_dot(a.codes[r], a.scales[r], float(a.tensor_scale), b.codes[r],
                        b.scales[r], float(b.tensor_scale)) for r in range(2)]
    assert got.view(np.uint32).tolist() == want
    # and it is the dot of the dequantized values, up to fp32 roundings (one per block, the
    # epilogue's, the dequantizer's f(P * s)): not of x and w, which 4-bit elements move by
    # up to a quarter each
    products = (golden.dequantize(a).astype(np.float64)
                * golden.dequantize(b).astype(np.float64))
    assert np.all(np.abs(got - products.sum(1)) <= 2.0**-20 * np.abs(products).sum(1))


def test_pack_is_two_codes_per_byte_and_unpacks():
    m = golden.quantize(np.array([[6.0, 0.5, -1.0, 3.0] + [0.0] * 12 + [1.0] * 16],
                                 np.float32), "nvfp4", tensor_scale=0.5)
    packed = m.pack()
    assert packed[:2].tolist() == [m.codes[0, 0] | m.codes[0, 1] << 4,
                                   m.codes[0, 2] | m.codes[0, 3] << 4]
    back = golden.MXArray.unpack(packed, m.scales, "nvfp4", m.shape, block_size=16,
                                 tensor_scale=m.tensor_scale)
    assert np.array_equal(back.codes, m.codes) and back.scale_format is UE4M3
    assert back.tensor_scale == m.tensor_scale and "nvfp4" in repr(back)
