"""Stimulus and golden expectations of the NVFP4 quantizer (:mod:`hw.nvfp4_quantizer`).

Shared by its cocotb testbench (:mod:`tb.nvfp4_quantizer`) and its Amaranth-simulation test
(``tests/test_hw_nvfp4_quantizer.py``).  The expectation is ``golden.quantize(x, "nvfp4",
tensor_scale=P, recipe="torchao")``, one call per tensor scale P (golden takes one P per
array; the unit takes P and f(1/P) with every block), bit for bit.
"""

from __future__ import annotations

import numpy as np

import golden

__all__ = ["DIRECTED_P", "DIRECTED", "TIE_MOVED", "EXHAUSTIVE_AMAX", "expected",
           "reciprocal_bits", "random_p", "random_blocks", "random_inputs", "directed_inputs",
           "exhaustive_inputs"]

_F32 = np.float32
#: Directed tensor scales (fp32 bits): 1, golden's range ends 2^-120 and 2^119, a P with every
#: mantissa bit set, and two irregular ones.
DIRECTED_P = tuple(int(b) for b in np.array([
    1.0, 2.0 ** -120, 2.0 ** 119, float(_F32(1.9999999)), float(_F32(0.3)),
    float(_F32(1234.567)),
], dtype=np.float32).view(np.uint32))

#: docs/numerics.md's "A tie moved by the fp32 product" example, single level: the block amax
#: 6 * 15 * 2^-9 gives the scale s = 15 * 2^-9 (0x0F); x = 1.25 * s is an exact e2m1 tie of
#: x / s, but f(x * r) = 1.2500001 (code 0x3); the fp32 value just below 0.75 * s gives
#: f(x * r) = 0.75 exactly (code 0x2).  (amax, x values).
TIE_MOVED = (6 * 15 * 2.0 ** -9, (1.25 * 15 * 2.0 ** -9,
                                  float(np.nextafter(_F32(0.75 * 15 * 2.0 ** -9), _F32(0)))))
_TIES = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)
_GRID = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
#: The directed groups: (name, block amax, other lanes' values); blocks of each group hold its
#: amax in lane 0 and its values in the others (module docstring of :mod:`tb.nvfp4_quantizer`).
DIRECTED = (
    ("e2m1 ties at s = 1", 6.0, _TIES + tuple(-t for t in _TIES)),
    ("e2m1 grid and near ties at s = 1", 6.0,
     _GRID + (-0.0, -0.1, 0.1, 0.2499, 0.2501, 0.7499, 0.7501, 4.99, 5.01, -5.01, -2.51)),
    ("a tie moved by the fp32 product", TIE_MOVED[0],
     TIE_MOVED[1] + tuple(-v for v in TIE_MOVED[1])
     + tuple(t * 15 * 2.0 ** -9 for t in _TIES)),
    ("scale clamped at 2^-6", 2.0 ** -10, (2.0 ** -11, -2.0 ** -12, 2.0 ** -14, 2.0 ** -13)),
    ("scale clamped at 2^-6 by f(amax / 6)", float(_F32(6 * 2.0 ** -6) * (1 - 2.0 ** -24)),
     (2.0 ** -6, 0.05, -0.07)),
    ("scale at 2^-6, not clamped", 6 * 2.0 ** -6, (2.0 ** -6, 0.05, -0.07)),
    ("scale clamped at 448", 10752.0, (10752.0 / 7, 5000.0, -9000.0, 448.0, 2688.0)),
    ("scale 448 exactly", 2688.0, (448.0, 1000.0, -2100.0, 2240.0)),
    ("scale clamped at 448, large", 60000.0, (40000.0, -50000.0, 30000.0)),
    ("UE4M3 ties of f(amax / 6)", 6 * 1.0625, (6.0, 6.3, -6.375, 3.1875)),
    ("UE4M3 ties of f(amax / 6), up", 6 * 1.1875, (7.0, -7.125, 3.5)),
    ("saturation at 6", 6.375, (6.375, 6.2, -6.3, 5.9)),
    ("zero block", 0.0, (0.0, -0.0, 0.0)),
    ("negative zero block", -0.0, (-0.0, -0.0)),
    ("subnormal inputs", 2.0 ** -130, (2.0 ** -131, -2.0 ** -133, 2.0 ** -135)),
    ("a normal amax over subnormals", 2.0 ** -126, (2.0 ** -127, -2.0 ** -128, 2.0 ** -133)),
    ("fp16 subnormal inputs", 2.0 ** -15, (2.0 ** -16, -2.0 ** -20, 2.0 ** -24)),
    ("NaN", float("nan"), (1.0, -2.0)),
    ("+Inf", float("inf"), (1.0, 0.0)),
    ("-Inf", -float("inf"), (3.0, -0.5)),
)

def reciprocal_bits(p_bits):
    """f(1/P)'s fp32 bits for each P's bits."""
    p = np.asarray(p_bits, np.uint32).view(np.float32)
    return (_F32(1.0) / p).astype(np.float32).view(np.uint32)


def expected(x_bits, p_bits, input_format, k: int):
    """(scale bytes ``(n,)``, codes ``(n, k)``) of golden's quantization of each block
    (``x_bits``: the input values' bits ``(n, k)``) with its tensor scale (``p_bits``: fp32
    bits per block, or None for single level)."""
    ff = golden.float_format(input_format)
    x = np.asarray(x_bits).astype(ff.uint).view(ff.dtype)
    n = x.shape[0]
    scales = np.zeros(n, np.uint8)
    codes = np.zeros((n, k), np.uint8)
    groups = [(None, np.arange(n))] if p_bits is None else \
        [(p, np.flatnonzero(p_bits == p)) for p in np.unique(p_bits)]
    for p, rows in groups:
        ts = None if p is None else float(np.uint32(p).view(np.float32))
        mx = golden.quantize(x[rows], "nvfp4", block_size=k, tensor_scale=ts)
        scales[rows] = mx.scales.reshape(rows.size)
        codes[rows] = mx.codes.reshape(rows.size, k)
    return scales, codes


def random_p(rng, n: int) -> np.ndarray:
    """``n`` tensor scales in golden's range (fp32 bits): exponents 2^-120..2^119 alike,
    random mantissas; a quarter directed (:data:`DIRECTED_P`)."""
    e = rng.integers(127 - 120, 127 + 119, n, dtype=np.uint32)
    p = (e << 23) | rng.integers(0, 1 << 23, n, dtype=np.uint32)
    pick = rng.random(n) < 0.25
    p[pick] = rng.choice(np.array(DIRECTED_P, np.uint32), int(pick.sum()))
    return p.astype(np.uint32)


def random_blocks(rng, n: int, k: int, input_format) -> np.ndarray:
    """``n`` random blocks of bits ``(n, k)``: per block a top binade (half of the blocks
    anywhere in the format's range, so subnormal and huge values occur; half in 2^-8..2^12,
    where the single-level scale is not clamped) and a spread of up to 12 binades below it,
    random signs and mantissas; one block in 16 with a NaN or an Inf, one in 16 all zero
    (signed zeros)."""
    ff = golden.float_format(input_format)
    eb = ff.bits - 1 - ff.mbits
    near = rng.integers(max(ff.bias - 8, 1), min(ff.bias + 13, (1 << eb) - 1), (n, 1))
    top = np.where(rng.random((n, 1)) < 0.5, near, rng.integers(0, (1 << eb) - 1, (n, 1)))
    spread = rng.integers(0, 12, (n, 1))
    e = np.clip(top - rng.integers(0, spread + 1, (n, k)), 0, (1 << eb) - 2)
    bits = ((rng.integers(0, 2, (n, k)) << (ff.bits - 1)) | (e << ff.mbits)
            | rng.integers(0, 1 << ff.mbits, (n, k)))
    special = rng.integers(0, 16, n)
    lane = rng.integers(0, k, n)
    inf = ((1 << eb) - 1) << ff.mbits
    bits[special == 0, lane[special == 0]] = inf | rng.integers(0, 2, int((special == 0).sum()))
    bits[special == 1] &= 1 << (ff.bits - 1)
    return bits.astype(np.uint64)


def _p_near(rng, x_bits, input_format) -> np.ndarray:
    """Per block a P near its amax's ``f(amax / 2688)`` (times ``2^u``, u in [-1, 15]), so
    ``b / P = 448 * 2^-u`` lands in and around the scale's range; fp32 bits, 1.0 for blocks
    without a finite non-zero amax, clipped to golden's range."""
    ff = golden.float_format(input_format)
    with np.errstate(invalid="ignore"):
        x = np.asarray(x_bits).astype(ff.uint).view(ff.dtype).astype(np.float64)
        amax = np.max(np.abs(np.where(np.isfinite(x), x, 0)), axis=1)
    p = amax / 2688 * 2.0 ** rng.uniform(-1, 15, len(amax))
    p = np.clip(np.where(amax > 0, p, 1.0), 2.0 ** -120, 2.0 ** 119).astype(np.float32)
    return p.view(np.uint32)


def random_inputs(rng, n: int, k: int, input_format, levels: int):
    """``n`` random blocks (:func:`random_blocks`) and, two level, P per block: half from a
    pool of 8 (:func:`random_p`), half near the block's amax (so the scale is mostly not
    clamped).  Returns (x bits ``(n, k)``, p bits ``(n,)`` or None)."""
    x = random_blocks(rng, n, k, input_format)
    if levels == 1:
        return x, None
    pool = random_p(rng, 8)
    p = pool[rng.integers(0, len(pool), n)]
    near = rng.random(n) < 0.5
    p[near] = _p_near(rng, x[near], input_format)
    return x, p


def _blocks(amax, values, k: int, ff, scale: float = 1.0) -> list:
    """Blocks of ``k`` input bits: lane 0 ``amax``, the others ``values`` (cycled)."""
    vals = [v * scale for v in values] or [0.0]
    out = []
    for start in range(0, len(vals), max(k - 1, 1)):
        lanes = [amax * scale] + [vals[(start + j) % len(vals)] for j in range(k - 1)]
        with np.errstate(over="ignore", invalid="ignore"):
            x = np.array(lanes[:k], np.float64).astype(np.float32).astype(ff.dtype)
        out.append(x.view(ff.uint).astype(np.uint64))
    return out


def directed_inputs(k: int, input_format, levels: int):
    """The :data:`DIRECTED` groups as blocks; two level under each P of :data:`DIRECTED_P`,
    each group also scaled by P (so the scale lands where single level puts it).

    Returns (x bits ``(n, k)``, p bits ``(n,)`` or None)."""
    ff = golden.float_format(input_format)
    if levels == 1:
        rows = [b for _, amax, vals in DIRECTED for b in _blocks(amax, vals, k, ff)]
        return np.array(rows, np.uint64), None
    rows, ps = [], []
    for p in DIRECTED_P:
        pv = float(np.uint32(p).view(np.float32))
        for scale in (1.0, pv):
            for _, amax, vals in DIRECTED:
                blocks = _blocks(amax, vals, k, ff, scale)
                rows += blocks
                ps += [p] * len(blocks)
    return np.array(rows, np.uint64), np.array(ps, np.uint32)


#: The block amaxes of the exhaustive set, before the values (``6 * 2^e * m``).
EXHAUSTIVE_AMAX = tuple(6 * 2.0 ** e * mm for e in (-12, -6, 0, 6, 12)
                        for mm in (1, 1.1015625, 1.3125, 1.5078125, 1.9921875))


def exhaustive_inputs(k: int, input_format, levels: int):
    """Every finite value of a 16-bit input format (from fp32: every finite bf16 value) at
    each block amax of :data:`EXHAUSTIVE_AMAX` that it does not exceed, lane 0 holding that
    amax; two level with P = f(amax_tensor / 2688) of the amax (golden's dynamic P) and with
    P = 1.

    Returns (x bits ``(n, k)``, p bits ``(n,)`` or None)."""
    ff = golden.float_format(input_format)
    src = golden.float_format("bf16" if ff.bits == 32 else input_format)
    every = np.arange(1 << 16, dtype=np.uint32).astype(src.uint).view(src.dtype)
    with np.errstate(invalid="ignore"):
        every = every[np.isfinite(every)].astype(np.float64)
    rows, ps = [], []
    for amax in EXHAUSTIVE_AMAX:
        a = float(np.float64(amax).astype(np.float32).astype(ff.dtype))
        vals = every[np.abs(every) <= a]
        blocks = _blocks(a, list(vals), k, ff)
        rows += blocks
        if levels == 2:
            dyn = int(np.array(_F32(a) / _F32(2688.0), np.float32).view(np.uint32))
            ps += [dyn] * len(blocks)
            rows += blocks
            ps += [int(np.array(1.0, np.float32).view(np.uint32))] * len(blocks)
    return np.array(rows, np.uint64), (np.array(ps, np.uint32) if levels == 2 else None)
