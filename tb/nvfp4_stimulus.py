"""Stimulus and golden expectations of the NVFP4 dequantizer (:mod:`hw.nvfp4_dequantizer`).

Shared by its cocotb testbench (:mod:`tb.nvfp4_dequantizer`) and its Amaranth-simulation test
(``tests/test_hw_nvfp4_dequantizer.py``).  The expectation is ``golden.dequantize`` of nvfp4
``MXArray``\\ s, one per tensor scale P (golden takes one P per array; the unit takes P with
every block), bit for bit.

Directed P values (:data:`DIRECTED_P`, fp32 bits): 1; the ends of the quantizer's range
(2^-120, 2^119); a P with every mantissa bit set (``f(P * s)`` rounds); small normal Ps
(1.3 * 2^-126, 1.7 * 2^-135: ``f(P * s)`` subnormal for all but the largest scales, rounded);
subnormal Ps (12345 * 2^-149; 2^-149 itself: ``f(P * s)`` is zero for the scales below 0.5,
and 0.5 * 2^-149 a tie to +-0; 1.5 * 2^-140: a tie in ``f(P * s)`` at the smallest scale); a
P so large that ``f(P * s)`` overflows to Inf for the large scales (a zero code then gives
NaN); FLT_MAX.
"""

from __future__ import annotations

import numpy as np

import golden
from golden.scale_format import UE4M3

__all__ = ["DIRECTED_P", "expected", "exhaustive_inputs", "random_inputs", "random_p"]

_F32 = np.float32
#: The directed tensor scales, fp32 bits (module docstring).
DIRECTED_P = tuple(int(b) for b in np.array([
    1.0, 2.0 ** -120, 2.0 ** 119, float(_F32(1.9999999)), float(_F32(1.3) * _F32(2.0 ** -126)),
    float(_F32(1.7) * _F32(2.0 ** -135)), float(_F32(2.0 ** -149) * 12345),
    float(_F32(2.0 ** -149)), float(_F32(1.5) * _F32(2.0 ** -140)),
    float(_F32(1.5) * _F32(2.0 ** 124)), float(np.finfo(np.float32).max),
], dtype=np.float32).view(np.uint32))


def expected(scales, codes, p_bits, output_format, k: int) -> np.ndarray:
    """Output bits ``(n, k)`` (uint64): golden's dequantization of each block with its tensor
    scale (``p_bits``: fp32 bits per block, or None for single level)."""
    ff = golden.float_format(output_format)
    scales = np.asarray(scales, np.uint8)
    codes = np.asarray(codes, np.uint8)
    n = scales.shape[0]
    out = np.zeros((n, k), np.uint64)
    groups = [(None, np.arange(n))] if p_bits is None else \
        [(p, np.flatnonzero(p_bits == p)) for p in np.unique(p_bits)]
    for p, rows in groups:
        if not rows.size:
            continue
        ts = None if p is None else float(np.uint32(p).view(np.float32))
        mx = golden.MXArray(scales[rows, None], codes[rows], "fp4_e2m1", k, 1, (rows.size, k),
                            UE4M3, ts)
        with np.errstate(over="ignore", invalid="ignore"):
            values = golden.dequantize(mx, ff.dtype)
        out[rows] = values.view(ff.uint).astype(np.uint64)
    return out


def exhaustive_inputs(k: int, p_values=DIRECTED_P):
    """Every e2m1 code at every UE4M3 byte (0x00..0x7F, NaN included) in every lane position
    class, under each P of ``p_values`` (None: single level, one pass).

    Returns (scales (n,), codes (n, k), p_bits (n,) or None)."""
    lanes = np.arange(k)
    rows_s, rows_c = [], []
    for shift in range(0, 16, min(k, 16)):
        for s in range(0x80):
            rows_s.append(s)
            rows_c.append((lanes + shift) % 16)
    for s in range(0x80):  # reversed, so each code meets other lanes
        rows_s.append(s)
        rows_c.append((15 - lanes) % 16)
    scales = np.array(rows_s, np.uint8)
    codes = np.array(rows_c, np.uint8)
    if p_values is None:
        return scales, codes, None
    m = len(p_values)
    return (np.tile(scales, m), np.tile(codes, (m, 1)),
            np.repeat(np.array(p_values, np.uint32), scales.shape[0]))


def random_p(rng, n: int) -> np.ndarray:
    """``n`` positive finite fp32 bit patterns: every exponent field 0..254 alike (subnormal P
    included), random mantissas; a quarter of them directed (:data:`DIRECTED_P`)."""
    p = (rng.integers(0, 255, n, dtype=np.uint32) << 23) | rng.integers(0, 1 << 23, n,
                                                                       dtype=np.uint32)
    p[p == 0] = 1
    pick = rng.random(n) < 0.25
    p[pick] = rng.choice(np.array(DIRECTED_P, np.uint32), int(pick.sum()))
    return p.astype(np.uint32)


def random_inputs(rng, n: int, k: int, levels: int):
    """``n`` random blocks: scales 0x00..0x7F, codes 0..15, and (two level) P per block from a
    pool of 8 (:func:`random_p`), so golden's one-P-per-array takes a few arrays."""
    scales = rng.integers(0, 0x80, n).astype(np.uint8)
    codes = rng.integers(0, 16, (n, k)).astype(np.uint8)
    if levels == 1:
        return scales, codes, None
    pool = random_p(rng, 8)
    return scales, codes, pool[rng.integers(0, len(pool), n)]
