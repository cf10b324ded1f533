"""Stimulus of the NVFP4 dot units (MXDot and MXDotGeneral ``--format nvfp4``) and golden's
results for it: UE4M3 scale bytes, e2m1 codes, accumulators near the block terms and the
epilogue's ``alpha``.

Expected values come from golden alone: ``golden.dot_blocks(..., scale_format="ue4m3")`` for
the block steps and :func:`golden.nvfp4_dot.epilogue` for ``f(alpha * sum)``.  A scale byte
with bit 7 set is not UE4M3; the units read it as NaN, as golden's table does, so golden
gets 0x7F in its place (:func:`tb.coverage.nvfp4_dot.readable_scales`).
"""

from __future__ import annotations

import numpy as np

import golden
from golden.nvfp4_dot import block_terms, epilogue
from golden.stimulus import random_fp32

from .coverage.dot_gpu import GPU_NAN
from .coverage.nvfp4_dot import readable_scales

__all__ = ["SCALE_SPREAD", "FP4", "code_of", "random_scales", "random_codes",
           "accumulators", "random_alpha", "step_results", "run_result", "directed_cases",
           "epilogue_runs"]

FP4 = golden.element_format("fp4_e2m1")
_TABLE = golden.decode_table(FP4)

#: The scale bytes of the directed code-pair sweep: zero, the subnormals' ends, 2^-6 (the
#: smallest normal), around 1 (0x38), 1.875 (0x3F, the largest significand), the largest
#: (0x7E, 448), NaN (0x7F) and two bytes with bit 7 set.
SCALE_SPREAD = np.array([0x00, 0x01, 0x07, 0x08, 0x37, 0x38, 0x39, 0x3F, 0x40, 0x77, 0x7E,
                         0x7F, 0x80, 0xB8], np.uint8)


def code_of(value: float) -> int:
    """The e2m1 code of an exactly representable value (-0.0: 0x8)."""
    hits = np.flatnonzero((_TABLE == value) & (np.signbit(_TABLE) == np.signbit(value)))
    if not hits.size:
        raise ValueError(f"{value} is not an e2m1 value")
    return int(hits[0])


def random_scales(rng, n: int) -> np.ndarray:
    """UE4M3 bytes: mostly around 1 (0x28..0x4F), any normal one, subnormal and zero ones,
    the largest, NaN and a few bytes with bit 7 set."""
    kind = rng.random(n)
    s = rng.integers(0x28, 0x50, n)
    s = np.where(kind < 0.15, rng.integers(0x08, 0x7F, n), s)
    s = np.where((kind >= 0.15) & (kind < 0.25), rng.integers(0, 8, n), s)
    s = np.where((kind >= 0.25) & (kind < 0.27), 0x7F, s)
    s = np.where((kind >= 0.27) & (kind < 0.28), rng.integers(0x80, 0x100, n), s)
    s = np.where((kind >= 0.28) & (kind < 0.31), 0x7E, s)
    return s.astype(np.uint8)


def random_codes(rng, n: int, k: int) -> np.ndarray:
    """e2m1 codes ``(n, k)``; a quarter of the blocks mostly zero (sparse sums)."""
    codes = rng.integers(0, 16, (n, k)).astype(np.uint8)
    sparse = (rng.random(n) < 0.25)[:, None] & (rng.random((n, k)) < 0.8)
    return np.where(sparse, 0, codes).astype(np.uint8)


def accumulators(rng, ca, sa, cb, sb) -> np.ndarray:
    """fp32 bits of ``c`` per block: near ``-T`` (cancellation, exact zero at offset 0), near
    ``T`` scaled by 2^-40..2^40, +-0, subnormal, random (specials included) and +-FLT_MAX."""
    n = len(sa)
    with np.errstate(invalid="ignore"):
        t = block_terms(ca[:, None], readable_scales(sa)[:, None], cb[:, None],
                        readable_scales(sb)[:, None])[:, 0]
    t = np.where(np.isfinite(t), t, 1.0)
    kind = rng.integers(0, 16, n)
    near = (-t).astype(np.float32).view(np.uint32).astype(np.int64) + rng.integers(-3, 4, n)
    scaled = (t * np.exp2(rng.integers(-40, 41, n))).astype(np.float32).view(np.uint32)
    out = random_fp32(rng, n)
    out = np.where(kind < 5, near.astype(np.uint32), out)
    out = np.where((kind >= 5) & (kind < 9), scaled, out)
    out = np.where(kind == 9, rng.integers(0, 2, n).astype(np.uint32) << 31, out)
    out = np.where(kind == 10, rng.integers(1, 1 << 23, n).astype(np.uint32)
                   | (rng.integers(0, 2, n).astype(np.uint32) << 31), out)
    out = np.where(kind == 11, 0x7F7FFFFF | (rng.integers(0, 2, n).astype(np.uint32) << 31), out)
    return out.astype(np.uint32)


def random_alpha(rng, n: int) -> np.ndarray:
    """fp32 bits of the epilogue's ``alpha``: 1, ``f(Pa * Pb)`` of two positive normal P,
    huge (overflow), tiny (subnormal and underflowing results) and random fp32 (signs,
    zeros, subnormals, Inf and NaN)."""
    kind = rng.integers(0, 8, n)
    e = rng.integers(100, 150, n).astype(np.uint32)
    typical = (rng.integers(0, 1 << 23, n).astype(np.uint32) | (e << 23))
    out = random_fp32(rng, n)
    out = np.where(kind == 0, np.uint32(0x3F800000), out)
    out = np.where((kind >= 1) & (kind < 4), typical, out)
    out = np.where(kind == 4, rng.integers(0, 1 << 23, n).astype(np.uint32)
                   | (rng.integers(230, 255, n).astype(np.uint32) << 23), out)
    out = np.where(kind == 5, rng.integers(0, 1 << 23, n).astype(np.uint32)
                   | (rng.integers(0, 20, n).astype(np.uint32) << 23), out)
    return out.astype(np.uint32)


def step_results(ca, sa, cb, sb, c_bits, accumulation: str = "exact") -> np.ndarray:
    """fp32 bits of golden's block step ``f(c + T)`` of each block (MXDot nvfp4), or its
    ``accumulation`` step (``"tcgen05.mxf4nvf4"``: a scale byte's sign bit is ignored, so
    golden gets its low seven bits)."""
    if accumulation == "exact":
        sa, sb = readable_scales(sa), readable_scales(sb)
    else:
        sa, sb = np.asarray(sa, np.uint8) & 0x7F, np.asarray(sb, np.uint8) & 0x7F
    return golden.dot_blocks(ca[:, None], sa[:, None], cb[:, None], sb[:, None], FP4, FP4,
                             acc=np.asarray(c_bits, np.uint32).view(np.float32),
                             accumulation=accumulation, scale_format="ue4m3").view(np.uint32)


def run_result(ca, sa, cb, sb, c0_bits: int, alpha_bits=None,
               accumulation: str = "exact") -> tuple[int, int]:
    """``(sum, result)`` fp32 bits of one run: ``c0`` chained through its blocks (golden's
    ``accumulation``: ``"tcgen05.mxf4nvf4"`` steps of four blocks, a scale byte's sign bit
    ignored), then (``alpha_bits`` given) golden's epilogue ``f(alpha * sum)`` (a GPU
    result's NaN 0x7FFFFFFF)."""
    acc = np.array([c0_bits], np.uint32).view(np.float32)
    if accumulation == "exact":
        sa, sb = readable_scales(sa), readable_scales(sb)
    else:
        sa, sb = np.asarray(sa, np.uint8) & 0x7F, np.asarray(sb, np.uint8) & 0x7F
    chained = golden.dot_blocks(ca[None], sa[None], cb[None], sb[None], FP4, FP4, acc=acc,
                                accumulation=accumulation, scale_format="ue4m3")
    total = int(np.asarray(chained, np.float32).reshape(1).view(np.uint32)[0])
    if alpha_bits is None:
        return total, total
    alpha = np.array([alpha_bits], np.uint32).view(np.float32)[0]
    nan = {} if accumulation == "exact" else {"nan_bits": GPU_NAN}
    out = epilogue(np.asarray(chained, np.float32).reshape(1), alpha, **nan)
    return total, int(out.view(np.uint32)[0])


def directed_cases(k: int) -> list[tuple]:
    """MXDot nvfp4 corner cases: ``(codes_a, sa, codes_b, sb, c bits, label)``."""
    one, six, half, zero = code_of(1.0), code_of(6.0), code_of(0.5), 0
    ones, sixes, zeros = [one] * k, [six] * k, [zero] * k
    lone = [one] + [zero] * (k - 1)

    def f32(x):
        return int(np.float32(x).view(np.uint32))

    big_t = k * 36 * 448.0 * 448.0
    cases = [
        (ones, 0x38, ones, 0x38, f32(-k), "cancellation to exact zero: +0"),
        (ones, 0x38, ones, 0x38, f32(1.5), "c + k"),
        (zeros, 0x38, zeros, 0x38, 0x80000000, "T = 0, c = -0: +0"),
        (ones, 0x00, ones, 0x38, 0x80000000, "zero scale, c = -0: +0"),
        (ones, 0x38, ones, 0x00, f32(-2.5), "zero scale: c passes"),
        ([half] * k, 0x01, [half] * k, 0x01, 0, "subnormal scales 2^-9 x 2^-9"),
        ([half] * k, 0x07, [half] * k, 0x01, f32(1e-3), "subnormal scales with c"),
        (sixes, 0x7E, sixes, 0x7E, 0, "the largest T: 448 x 448 x 36 k"),
        (sixes, 0x7E, sixes, 0x7E, 0x7F7FFFFF, "FLT_MAX + the largest T: no overflow"),
        (sixes, 0x7E, [code_of(-6.0)] * k, 0x7E, f32(big_t), "c - the largest T: +0"),
        (sixes, 0x3F, sixes, 0x3F, f32(np.pi), "P = 225"),
        (ones, 0x7F, ones, 0x38, 0, "NaN scale"),
        (ones, 0x38, ones, 0x7F, 0x7F800000, "NaN scale, c = +Inf"),
        (ones, 0x80, ones, 0x38, 0, "bit 7 set: NaN"),
        (zeros, 0x38, zeros, 0xB8, 0, "bit 7 set, T = 0: NaN"),
        (ones, 0xFF, ones, 0xFF, f32(1.0), "0xFF: NaN"),
        (ones, 0x38, ones, 0x38, 0x7FC00001, "c NaN (payload): canonical NaN"),
        (ones, 0x38, ones, 0x38, 0xFF800000, "c = -Inf"),
        (ones, 0x00, ones, 0x00, 0x7F800000, "c = +Inf, zero scales"),
        (lone, 0x38, lone, 0x38, 0x4B800000, "2^24 + 1: tie to even (down)"),
        (lone, 0x38, lone, 0x38, 0x4B800001, "2^24 + 2 + 1: tie to even (up)"),
        (lone, 0x38, [code_of(-1.0)] + zeros[1:], 0x38, 0xCB800000, "-2^24 - 1: tie"),
        (zeros, 0x38, zeros, 0x38, 0x00000001, "T = 0, subnormal c passes"),
        (lone, 0x01, [half] + zeros[1:], 0x01, 0x80000003, "subnormal c + 2^-19"),
        ([code_of(0.5)] + zeros[1:], 0x01, [code_of(-0.5)] + zeros[1:], 0x01,
         f32(2.0 ** -20), "c - 2^-20: exact zero"),
        ([code_of(-0.0)] * k, 0x38, ones, 0x38, 0x80000000, "-0 codes, c = -0: +0"),
    ]
    return cases


def epilogue_runs(k: int) -> list[tuple]:
    """Runs of one block aimed at each bin of the epilogue ``f(alpha * sum)``
    (:func:`tb.coverage.nvfp4_dot.classify_epilogue`) in either accumulation mode:
    ``(ca (1, k), sa (1,), cb (1, k), sb (1,), c0 bits, alpha bits, label)``.

    The sums are exact in both modes but one: ``2^20 - 65 * 2^-10`` (``c0 = 2^20``, a group
    of -65 at scales ``2^-9 * 2^-1``) is ``2^20 - 2^-4`` rounded to nearest and ``2^20 - 2^-3``
    truncated (``tcgen05.mxf4nvf4``), and ``alpha = 5 * 2^-149`` takes both into fp32's
    subnormals, where they differ by one ulp."""
    def run(lanes, sa, sb, c0, alpha, label):
        ca, cb = np.zeros((1, k), np.uint8), np.zeros((1, k), np.uint8)
        for i, (x, y) in enumerate(lanes):
            ca[0, i], cb[0, i] = code_of(x), code_of(y)
        return ca, np.array([sa], np.uint8), cb, np.array([sb], np.uint8), c0, alpha, label

    one, tiny = [(1.0, 1.0)], [(0.5, 0.5)]  # 1 at scales 1; 2^-20 at scales 2^-9 * 2^-9
    neg65 = [(-6.0, 6.0), (-6.0, 4.0), (-2.0, 2.0), (-1.0, 1.0)]  # -36 - 24 - 4 - 1
    c_one, c_big = 0x3F800000, 0x49800000  # 1.0, 2^20
    return [
        run(one, 0x38, 0x38, c_one, 0x7FC00001, "alpha NaN (payload), sum 2: NaN"),
        run([], 0x38, 0x38, 0, 0xFFC00000, "alpha -NaN, sum +0: NaN"),
        run(tiny, 0x01, 0x01, 0, 0x08000000, "2^-20 * 2^-111: subnormal 2^-131"),
        run(neg65, 0x01, 0x30, c_big, 0x00000005,
            "(2^20 - 65 * 2^-10) * 5 * 2^-149: subnormal from the truncated sum"),
        run(tiny, 0x01, 0x01, 0, 0x80000001, "2^-20 * -2^-149: underflow to -0"),
        run([], 0x38, 0x38, 0, 0x7F800000, "alpha +Inf, sum +0: NaN"),
        run(one, 0x38, 0x38, c_one, 0x7F7FFFFF, "2 * FLT_MAX: overflow to +Inf"),
        run([(1.5, 2.0)], 0x38, 0x38, 0, 0x3EAAAAAB, "3 * f(1/3): rounded"),
        run(one, 0x38, 0x38, c_one, 0xBFC00000, "2 * -1.5: -3"),
    ]
