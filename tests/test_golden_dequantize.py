"""golden.dequantize against the exact Fraction oracle (tests/oracle): every code of every
format at every scale, to fp32, bf16 and fp16 (docs/numerics.md section 4)."""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import oracle
import pytest

import golden

FORMATS = list(oracle.FORMATS)
BF16 = ml_dtypes.bfloat16


@pytest.mark.parametrize("fmt", FORMATS)
def test_dequantize_every_code_at_every_scale(fmt):
    """Every code at every scale (255 included), to fp32 exactly (Inf beyond its range), and
    to bf16/fp16 by one RNE cast of the exact value."""
    f = oracle.FORMATS[fmt]
    ncode = 1 << f.bits
    k = 1 << (f.bits - 1) if f.bits > 4 else 16  # power-of-two block size >= 2
    codes = np.tile(np.arange(ncode, dtype=np.uint8), 256).reshape(-1, k)
    per_scale = codes.shape[0] // 256
    scales = np.repeat(np.arange(256, dtype=np.uint8), per_scale)
    mx = golden.MXArray(scales, codes.reshape(-1), golden.element_format(fmt), k, 0,
                        (codes.size,))
    # Build the exact values with the oracle: decode(code) * 2^(s-127), as Fractions.
    want = []
    for b in range(codes.shape[0]):
        s = int(scales[b])
        for c in codes[b].tolist():
            neg, mag = oracle.decode_code(f, c)
            if s == 255 or mag is oracle.NAN:
                want.append(np.nan)
            elif mag is oracle.INF:
                want.append(-np.inf if neg else np.inf)
            else:
                want.append((neg, mag * Fraction(2) ** (s - 127)))
    for dt in (np.float32, BF16, np.float16):
        with np.errstate(over="ignore"):
            got = golden.dequantize(mx, dt)
        assert got.dtype == np.dtype(dt) and got.shape == (codes.size,)
        ref = np.empty(codes.size, np.float64)
        for i, v in enumerate(want):
            if isinstance(v, tuple):
                neg, mag = v
                fv = float(mag)  # exact: at most 8 significant bits, |exponent| < 200
                assert Fraction(fv) == mag
                ref[i] = -fv if neg else fv  # keeps -0
            else:
                ref[i] = v
        if dt is BF16:  # exact value -> fp32 (exact or out of range) -> one RNE to bf16
            with np.errstate(over="ignore"):
                ref_dt = ref.astype(np.float32).astype(BF16)
        else:
            with np.errstate(over="ignore"):
                ref_dt = ref.astype(dt)  # numpy casts float64 -> float32/float16 with RNE
        g = got.astype(np.float64)
        r = ref_dt.astype(np.float64)
        ok = (np.isnan(g) & np.isnan(r)) | ((g == r) & (np.signbit(g) == np.signbit(r)))
        bad = np.flatnonzero(~ok)
        assert bad.size == 0, [(int(mx.codes[i]), int(scales[i // k]), g[i], r[i])
                               for i in bad[:5]]
