"""golden.quantize against the exact Fraction oracle (tests/oracle).

Random blocks over many magnitudes in every input dtype, and crafted blocks for each corner of
docs/numerics.md section 3: scale boundaries, subnormal inputs, zeros, non-finite lanes, exact
ties at every grid boundary, the E8M0 clamps, saturation, block sizes and axes
(golden.dequantize's every code at every scale: tests/test_golden_dequantize.py).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import ml_dtypes
import numpy as np
import oracle
import pytest

import golden

FORMATS = list(oracle.FORMATS)
MODES = ["floor", "rceil"]
ROUNDINGS = ["rne", "rna", "rtz", "stochastic"]
BF16 = ml_dtypes.bfloat16
DTYPES = {"fp32": np.float32, "fp16": np.float16, "bf16": BF16, "fp64": np.float64}
# Exponent range of each input dtype's finite non-zero values (min subnormal .. max binade).
EXP_RANGE = {np.float32: (-149, 127), np.float16: (-24, 15), BF16: (-133, 127),
             np.float64: (-300, 300)}


def fields(fmt, code):
    v = golden.decode(np.array([code]), fmt)[0]
    return f"0x{int(code):02x}={v!r}"


def check_quantize(x, fmt, *, block_size=32, axis=-1, scale_mode="floor", rounding="rne",
                   random=None):
    """Quantize with golden and with the oracle; assert identical scales and codes."""
    kw = dict(block_size=block_size, axis=axis, scale_mode=scale_mode, rounding=rounding,
              random=random)
    mx = golden.quantize(x, fmt, **kw)
    s, c = oracle.quantize(x, fmt, **kw)
    assert mx.scales.shape == s.shape and mx.codes.shape == c.shape
    if np.array_equal(mx.scales, s) and np.array_equal(mx.codes, c):
        return mx
    # Locate and decode the first mismatching block for a readable report.
    gc, gs = mx.blocks()
    oc = np.moveaxis(c, axis, -1).reshape(gc.shape)
    os_ = np.moveaxis(s, axis, -1)
    xb = np.moveaxis(np.asarray(x), axis, -1)
    for idx in np.ndindex(*gs.shape):
        if gs[idx] != os_[idx] or not np.array_equal(gc[idx], oc[idx]):
            b = idx[-1]
            vals = xb[idx[:-1]][b * block_size:(b + 1) * block_size]
            lanes = [i for i in range(block_size) if gc[idx][i] != oc[idx][i]]
            detail = "; ".join(
                f"lane {i}: x={float(vals[i]) if i < len(vals) else 0.0!r} golden "
                f"{fields(fmt, gc[idx][i])} oracle {fields(fmt, oc[idx][i])}" for i in lanes[:6])
            raise AssertionError(
                f"{fmt} {kw} block {idx}: scale golden {gs[idx]} oracle {os_[idx]}; "
                f"input {[float(v) for v in vals]!r}; {detail}")
    raise AssertionError("mismatch not located")


def random_bits_for(x, rounding, rng, random_bits=8):
    return rng.integers(0, 1 << random_bits, np.shape(x)) if rounding == "stochastic" else None


def random_blocks(rng, dtype, nblocks, k):
    """Blocks whose magnitudes span the dtype's whole range: a random base exponent per block,
    a random spread inside the block (up to 40 binades), random signs, some zero lanes."""
    lo, hi = EXP_RANGE[dtype]
    base = rng.integers(lo, hi + 1, (nblocks, 1))
    spread = rng.integers(0, 41, (nblocks, 1))
    expo = base - rng.random((nblocks, k)) * spread
    mant = rng.uniform(1, 2, (nblocks, k)) * rng.choice([-1.0, 1.0], (nblocks, k))
    x = mant * np.exp2(np.maximum(np.floor(expo), lo))
    x[rng.random((nblocks, k)) < 0.05] = 0.0
    x[rng.random((nblocks, k)) < 0.02] = -0.0
    x = np.clip(x, -float(ml_dtypes.finfo(dtype).max), float(ml_dtypes.finfo(dtype).max))
    return x.astype(dtype)


# --- random blocks -------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("scale_mode", MODES)
@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_random_blocks_all_dtypes(fmt, scale_mode, rounding, rng):
    for dtype in DTYPES.values():
        k = int(rng.choice([2, 4, 8, 16, 32, 64]))
        x = random_blocks(rng, dtype, 512 // k + 3, k).reshape(-1)
        x = x[: x.size - int(rng.integers(0, k))]  # trailing partial block
        check_quantize(x, fmt, block_size=k, scale_mode=scale_mode, rounding=rounding,
                       random=random_bits_for(x, rounding, rng))


@pytest.mark.parametrize("fmt", FORMATS)
def test_random_stochastic_rbits(fmt, rng):
    x = random_blocks(rng, np.float32, 16, 32)
    for random_bits in (1, 3, 12, 24):
        r = rng.integers(0, 1 << random_bits, x.shape)
        mx = golden.quantize(x, fmt, rounding="stochastic", random=r, random_bits=random_bits)
        s, c = oracle.quantize(x, fmt, rounding="stochastic", random=r, random_bits=random_bits)
        assert np.array_equal(mx.scales, s) and np.array_equal(mx.codes, c), random_bits


# --- crafted blocks ------------------------------------------------------------------------
def ulp_step(x, d):
    """The neighbour of positive finite x one ulp away (d = +-1), by stepping its bit pattern
    (works for bfloat16 too, which np.nextafter does not support)."""
    u = golden.float_format(x.dtype).uint
    return (x.view(u) + u.type(1) if d > 0 else x.view(u) - u.type(1)).view(x.dtype)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("scale_mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64])
def test_amax_at_scale_boundaries(fmt, scale_mode, dtype):
    """amax exactly a power of two, one ulp below and above it; amax exactly max_normal*2^j
    and one ulp either side (the rceil boundary); across the dtype's whole exponent range."""
    mxn = float(golden.element_format(fmt).max_normal)
    lo, hi = EXP_RANGE[dtype]
    rows = []
    for j in range(max(lo + 1, -140), min(hi, 130), 5):
        for anchor in (2.0**j, mxn * 2.0 ** (j - 8)):
            with np.errstate(over="ignore"):
                a = np.array([anchor], dtype)
            if not np.isfinite(a[0]) or a[0] == 0:
                continue
            for amax in (a, ulp_step(a, -1), ulp_step(a, +1)):
                if not np.isfinite(amax[0]):
                    continue
                # amax with a few smaller companions: half, a third, its negation, tiny.
                v = float(amax[0])
                rows.append([v, -v / 2, v / 3, -v * 0.7, v / 1024, 0.0, -0.0, v * 0.999])
    x = np.array(rows, np.float64).astype(dtype)
    for rounding in ("rne", "rtz"):
        check_quantize(x, fmt, block_size=8, scale_mode=scale_mode, rounding=rounding)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16])
def test_subnormal_inputs(dtype):
    """Blocks made only of the dtype's subnormals (never flushed), and mixed with normals."""
    f = golden.float_format(np.dtype(dtype))
    u = f.uint.type
    mbits = f.mbits
    subs = np.array([1, 2, 3, (1 << mbits) - 1, 1 << (mbits - 1), 5, 0x55 & ((1 << mbits) - 1),
                     (1 << mbits) - 2], dtype=u).view(dtype)
    min_norm = np.array([1 << mbits], u).view(dtype)
    blocks = [subs, -subs, subs * np.array([1, -1] * 4, dtype).astype(dtype)]
    blocks.append(np.concatenate([subs[:7], min_norm]))
    x = np.stack(blocks).astype(dtype)
    for fmt, mode, rnd in itertools.product(FORMATS, MODES, ["rne", "rna", "rtz"]):
        mx = check_quantize(x, fmt, block_size=8, scale_mode=mode, rounding=rnd)
        if dtype != np.float16 and mode == "floor":  # fp32/bf16 subnormals: e < -127
            assert mx.scales[0, 0] == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64])
@pytest.mark.parametrize("rounding", ["rne", "rna", "rtz"])
def test_both_element_paths(dtype, rounding, rng):
    """golden has two element paths: blocks of normal inputs and zeros take a branch-free one
    (``golden._kernels.round_normal_element``), blocks holding a subnormal input the general
    one.  The same random blocks go through each (the second time with the dtype's smallest
    subnormal in lane 0, which leaves every other lane's code alone) and both are checked
    against the oracle, in every format and scale mode, at k = 32 and 8."""
    x = random_blocks(rng, dtype, 32, 32)
    tiny = np.finfo(dtype).smallest_subnormal if dtype != BF16 else \
        np.array([1], np.uint16).view(BF16)[0]
    normal = np.where(np.abs(x) < np.finfo(np.float32 if dtype == BF16 else dtype).tiny,
                      dtype(0) if dtype != BF16 else BF16(0), x).astype(dtype)
    with_sub = normal.copy()
    with_sub[:, 0] = tiny
    for fmt, mode, k in itertools.product(FORMATS, MODES, (32, 8)):
        check_quantize(normal, fmt, block_size=k, scale_mode=mode, rounding=rounding)
        check_quantize(with_sub, fmt, block_size=k, scale_mode=mode, rounding=rounding)


@pytest.mark.parametrize("fmt", FORMATS)
def test_zero_blocks_both_signs(fmt):
    f = golden.element_format(fmt)
    neg0 = 0 if f.twos_complement else 1 << (f.bits - 1)
    for dtype in DTYPES.values():
        x = np.array([[0.0, -0.0, 0.0, -0.0], [-0.0] * 4, [0.0] * 4], dtype)
        for mode, rnd in itertools.product(MODES, ROUNDINGS):
            r = np.full(x.shape, 255) if rnd == "stochastic" else None
            mx = check_quantize(x, fmt, block_size=4, scale_mode=mode, rounding=rnd,
                                random=r)
            # Contract 2.2: s = 0 and each code the signed zero of its input (int8: 0).
            assert mx.scales.tolist() == [[0], [0], [0]]
            assert mx.codes.tolist() == [[0, neg0, 0, neg0], [neg0] * 4, [0] * 4]


@pytest.mark.parametrize("fmt", FORMATS)
def test_largest_finite_inputs(fmt):
    rows = []
    for dtype in (np.float32, np.float16, BF16):
        m = float(float(ml_dtypes.finfo(dtype).max))
        rows.append(np.array([m, -m, m / 2, 1.0, -(2.0**-20), 0.0, m, -m], dtype))
    for x in rows:
        for mode, rnd in itertools.product(MODES, ROUNDINGS[:3]):
            check_quantize(x, fmt, block_size=8, scale_mode=mode, rounding=rnd)


@pytest.mark.parametrize("fmt", FORMATS)
def test_non_finite_in_every_lane(fmt):
    """A NaN or Inf in any lane: s = 255 and every code 0, in that block only."""
    k = 8
    for dtype in DTYPES.values():
        for special in (np.nan, np.inf, -np.inf):
            x = np.tile(np.linspace(-3, 5, k), (k, 2)).astype(dtype)  # two blocks per row
            for lane in range(k):
                x[lane, lane] = special
            mx = check_quantize(x, fmt, block_size=k)
            assert (mx.scales[:, 0] == 255).all() and (mx.codes[:, :k] == 0).all()
            assert (mx.scales[:, 1] != 255).all()  # the neighbouring block is unaffected


def grid_points(fmt):
    """Every finite magnitude of the format, the exact midpoint and quarter points between
    neighbours, and the same beyond max normal (one step of the top binade further)."""
    mags = list(oracle.value_table(fmt)[0])
    ext = mags + [2 * mags[-1] - mags[-2]]
    mids = [(a + b) / 2 for a, b in zip(ext[:-1], ext[1:], strict=True)]
    quarters = [(3 * a + b) / 4 for a, b in zip(ext[:-1], ext[1:], strict=True)]
    return mags, mids, quarters


def fits_fp32(p: Fraction) -> bool:
    with np.errstate(over="ignore"):
        v = np.float32(float(p))
    return bool(np.isfinite(v)) and Fraction(float(v)) == p


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("scale_mode", MODES)
@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_ties_at_every_boundary(fmt, scale_mode, rounding, rng):
    """Exact midpoints between every pair of adjacent grid values (subnormal range and the
    saturation boundary included), at several shared exponents, both signs.  Each block holds
    an anchor max_normal * 2^e so the block's scale is e (rceil may go one up when a point
    beyond max normal is present, and that case is in the mix too)."""
    mags, mids, quarters = grid_points(fmt)
    top = mags[-1]
    points = mids + quarters + mags[1:]
    rows = []
    for e in (-127, -100, -3, 0, 5, 60, 127):
        for dtype in (np.float32, np.float64):
            pts = [p * Fraction(2) ** e for p in points]
            anchor = top * Fraction(2) ** e
            vals = [float(p) for p in pts]
            if dtype == np.float32:  # keep only the points fp32 holds exactly
                if not fits_fp32(anchor):
                    continue
                vals = [v for v, p in zip(vals, pts, strict=True) if fits_fp32(p)]
            k = 16
            per = k - 1
            for i in range(0, len(vals), per):
                chunk = vals[i:i + per]
                chunk = chunk + [0.0] * (per - len(chunk))
                signs = rng.choice([-1.0, 1.0], per)
                row = [float(anchor)] + [s * v for s, v in zip(signs, chunk, strict=True)]
                rows.append((dtype, row))
    for dtype in (np.float32, np.float64):
        x = np.array([r for d, r in rows if d == dtype], dtype)
        # Shuffle lanes so the anchor is not always lane 0.
        x = np.take_along_axis(x, rng.permuted(np.tile(np.arange(16), (len(x), 1)), axis=1), 1)
        check_quantize(x, fmt, block_size=16, scale_mode=scale_mode, rounding=rounding,
                       random=random_bits_for(x, rounding, rng))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_scale_clamps(fmt, rounding, rng):
    """e < -127 (fp32 subnormals, float64 tiny values) clamps to s = 0; e > 127 (float64
    2^200) clamps to s = 254 and saturates every large element."""
    # amax <= 2^-129: below every format's clamp in both modes.  The second fp32 row (amax just
    # under 2^-126) is compared with the oracle only: int8 under rceil gets s = 1 there.
    rows32 = [np.array([1, 7, 2**19, 2**20, 3, 0, 2**18 + 5, 9], np.uint32).view(np.float32)]
    extra32 = np.array([2**23 - 1, 2**22, 1, 0, 5, 2**21 + 1, 3, 2**31 + 7], np.uint32) \
        .view(np.float32).reshape(1, -1)
    rows64 = [np.array([2.0**-300, -(2.0**-1000), 2.0**-140, 0.0, 2.0**-130, 3 * 2.0**-135,
                        -(2.0**-128), 2.0**-129]),
              np.array([2.0**200, -(2.0**199), 3 * 2.0**150, 2.0**135, 2.0**128, 1.0, -0.0,
                        -(2.0**300)])]
    for mode in MODES:
        for x in rows32 + rows64:
            x = x.reshape(1, -1)
            mx = check_quantize(x, fmt, block_size=8, scale_mode=mode, rounding=rounding,
                                random=random_bits_for(x, rounding, rng))
            big = float(np.abs(x).max()) > 1
            assert mx.scales[0, 0] == (254 if big else 0)
        check_quantize(extra32, fmt, block_size=8, scale_mode=mode, rounding=rounding,
                       random=random_bits_for(extra32, rounding, rng))
        big = golden.quantize(rows64[1], fmt, block_size=8, scale_mode=mode)
        f = golden.element_format(fmt)
        top = golden.decode(big.codes[:1], fmt)[0]
        assert top == float(f.max_normal)  # 2^200 * 2^-127 = 2^73 saturates


def test_e4m3_saturation_and_ties_at_scale_one():
    """fp8_e4m3 at s = 127 (e = 0): 485 -> 448, 464 -> 448 (saturation), 400 is the midpoint of
    384 and 416: 384 under rne (even mantissa), 416 under rna."""
    x = np.array([485.0, 464.0, 400.0, -400.0, 256.0, 480.0, -500.0, 300.0], np.float32)
    want_rne = [448, 448, 384, -384, 256, 448, -448, 288]
    want_rna = [448, 448, 416, -416, 256, 448, -448, 288]
    for rounding, want in (("rne", want_rne), ("rna", want_rna)):
        mx = check_quantize(x, "fp8_e4m3", block_size=8, rounding=rounding)
        assert mx.scales.tolist() == [127]
        assert golden.decode(mx.codes, "fp8_e4m3").tolist() == want
    mx = check_quantize(x, "fp8_e4m3", block_size=8, rounding="rtz")
    assert golden.decode(mx.codes, "fp8_e4m3").tolist()[:4] == [448, 448, 384, -384]
    # rceil never saturates: 485 gives e = 1 and 485 / 2 = 242.5 -> 240.
    mx = check_quantize(x, "fp8_e4m3", block_size=8, scale_mode="rceil")
    assert mx.scales.tolist() == [128]
    assert golden.decode(mx.codes, "fp8_e4m3")[0] * 2 == 480


@pytest.mark.parametrize("fmt", FORMATS)
def test_one_huge_among_tiny(fmt, rng):
    for dtype in (np.float32, np.float16, BF16, np.float64):
        hi = {np.float16: 2.0**15, np.float64: 2.0**200}.get(dtype, 2.0**100)
        tiny = {np.float16: 2.0**-24, np.float64: 2.0**-200}.get(dtype, 2.0**-100)
        x = (rng.uniform(1, 2, (8, 32)) * tiny * rng.choice([-1, 1], (8, 32)))
        x[np.arange(8), rng.integers(0, 32, 8)] = hi * rng.choice([-1, 1], 8)
        x = x.astype(dtype)
        for mode, rnd in itertools.product(MODES, ROUNDINGS):
            mx = check_quantize(x, fmt, scale_mode=mode, rounding=rnd,
                                random=random_bits_for(x, rnd, rng))
            if rnd != "stochastic":
                vals = golden.decode(mx.codes, fmt)
                small = np.abs(x.astype(np.float64)) < hi / 2
                # The tiny lanes flush to zeros that keep their sign (int8: plain 0).
                assert (vals[small] == 0).all()
                if not golden.element_format(fmt).twos_complement:
                    x64 = x.astype(np.float64)
                    assert (np.signbit(vals[small]) == np.signbit(x64[small])).all()


@pytest.mark.parametrize("fmt", FORMATS)
def test_all_equal_blocks(fmt, rng):
    v = rng.uniform(1, 2, 24) * np.exp2(rng.integers(-40, 40, 24)) * rng.choice([-1, 1], 24)
    x = np.repeat(v[:, None], 16, axis=1).astype(np.float32)
    for mode, rnd in itertools.product(MODES, ROUNDINGS):
        mx = check_quantize(x, fmt, block_size=16, scale_mode=mode, rounding=rnd,
                            random=random_bits_for(x, rnd, rng))
        if rnd != "stochastic":
            assert (mx.codes == mx.codes[:, :1]).all()


@pytest.mark.parametrize("k", [2, 4, 8, 16, 32, 64])
def test_block_sizes_and_partial_blocks(k, rng):
    for fmt in FORMATS:
        n = 3 * k + int(rng.integers(1, k)) if k > 2 else 7
        x = random_blocks(rng, np.float32, 3, n)
        mx = check_quantize(x, fmt, block_size=k, scale_mode=str(rng.choice(MODES)))
        nb = -(-n // k)
        assert mx.scales.shape == (3, nb) and mx.codes.shape == (3, nb * k)
        assert (mx.codes[:, n:] == 0).all()  # padding codes are +0
        # Padding never changes the scale: the oracle's scale of the partial block's values
        # alone (no padding) is golden's scale of the padded block.
        full = golden.quantize(x, fmt, block_size=k)
        tail = x[:, (nb - 1) * k:]
        for r in range(3):
            vals = oracle.decode_input(tail[r])
            s_tail, _ = oracle.quantize_block(fmt, vals)
            assert full.scales[r, -1] == s_tail


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2])
def test_other_axes(axis, rng):
    x = random_blocks(rng, np.float32, 1, 5 * 6 * 7).reshape(5, 6, 7)
    for fmt in ("fp8_e4m3", "fp4_e2m1", "int8"):
        mx = check_quantize(x, fmt, block_size=4, axis=axis)
        ax = axis % 3
        assert mx.axis == ax and mx.shape == x.shape
        # The blocks are runs of 4 along the axis (the layout's definition): block j of the
        # line at index idx holds elements 4j..4j+3 of that line, quantized by the oracle.
        xl = np.moveaxis(x, ax, -1)
        sl, cl = np.moveaxis(mx.scales, ax, -1), np.moveaxis(mx.codes, ax, -1)
        for idx in [(0, 0), (xl.shape[0] - 1, xl.shape[1] - 1)]:
            line = np.concatenate([xl[idx], np.zeros((-xl.shape[-1]) % 4, np.float32)])
            for j in range(line.size // 4):
                s, c = oracle.quantize_block(fmt, oracle.decode_input(line[4 * j:4 * j + 4]))
                assert sl[idx][j] == s and cl[idx][4 * j:4 * j + 4].tolist() == c
        r = rng.integers(0, 256, x.shape)
        check_quantize(x, fmt, block_size=4, axis=axis, rounding="stochastic", random=r)


def test_rceil_can_round_up_to_2_pow_128():
    """rceil picks e so that amax <= max_normal * 2^e, but the element rounding can still
    carry amax up to the next power of two: an fp32 amax just below 2^128 becomes exactly
    2^128 (s = 247, fp8_e4m3 code 0x78 = 256), which dequantizes to fp32 +Inf.  Floor mode
    saturates instead and stays finite.  (docs/numerics.md, Interpretations.)"""
    x = np.zeros(16, np.float32)
    x[-1] = np.float32(3.2964854e38)  # 0x7F780000 = 1.9375 * 2^127
    # e = ceil(log2(1.9375 * 2^127 / 448)) = 120, q = 248: the tie between 240 (odd mantissa)
    # and 256 (even), so RNE goes up to 256 and 256 * 2^120 = 2^128.
    mx = check_quantize(x, "fp8_e4m3", block_size=16, scale_mode="rceil")
    assert mx.scales.tolist() == [247] and mx.codes[-1] == 0x78
    with np.errstate(over="ignore"):
        assert golden.dequantize(mx)[-1] == np.inf
    mx = check_quantize(x, "fp8_e4m3", block_size=16, scale_mode="floor")
    assert np.isfinite(golden.dequantize(mx)).all()


def test_int8_rceil_upper_clamp_from_fp32():
    """The one fp32 case with e > 127: int8 in rceil mode, amax above 127/64 * 2^127 (FLT_MAX)
    gives e = 128, clamped to 127, and the element saturates to 127 (0x7F)."""
    m = np.finfo(np.float32).max
    x = np.array([m, -m, 1.0, -(2.0**127)], np.float32)
    for mode in MODES:
        mx = check_quantize(x, "int8", block_size=4, scale_mode=mode)
        assert mx.scales.tolist() == [254]
        assert mx.codes.tolist() == [0x7F, 0x81, 0x00, 0xC0]


# Hand-worked blocks for both fp6 emax values (docs/numerics.md section 1: fp6_e3m2 has bias 3,
# emax 4, max 28; fp6_e2m3 has bias 1, emax 2, max 7.5), floor scale, rne:
#   fp6_e3m2 [28, 1, -0.3, 0.1]: amax 28 = 1.11b * 2^4, e = 4 - emax = 0 (s = 127);
#     28 = 0 111 11; 1 = 0 011 00; 0.3 in [2^-2, 2^-1), last place 2^-4: 4.8 -> 5 = 1.01b *
#     2^-2 = 0 001 01, negative 0x25; 0.1 subnormal (< 2^-2), last place 2^-4: 1.6 -> 2 = 0 000 10.
#   fp6_e3m2 [100, 3, 0, -28]: amax 100 in [2^6, 2^7), e = 2 (s = 129); 25 in [16, 32), last
#     place 4: 6.25 -> 6 = 1.10b * 2^4 = 0 111 10; 0.75 = 1.10b * 2^-1 = 0 010 10; 0; -7 = 1.11b
#     * 2^2 = 0 101 11, negative 0x37.
#   fp6_e2m3 [7.5, -1, 0.3, 6.4]: amax 7.5 = 1.111b * 2^2, e = 0 (s = 127); 7.5 = 0 11 111;
#     -1 = 1 01 000; 0.3 subnormal (< 1), last place 2^-3: 2.4 -> 2 = 0 00 010; 6.4 in [4, 8),
#     last place 2^-1: 12.8 -> 13 = 1.101b * 2^2 = 0 11 101.
#   fp6_e2m3 [30, 0.5, -3, 2.25]: amax 30 in [16, 32), e = 4 - 2 = 2 (s = 129); 7.5 = 0 11 111;
#     0.125 = 0 00 001; -0.75 = 0 00 110, negative 0x26; 0.5625 = 4.5 * 2^-3 -> tie, to even 4:
#     0 00 100.
FP6_HAND = [
    ("fp6_e3m2", [28.0, 1.0, -0.3, 0.1], 127, [0x1F, 0x0C, 0x25, 0x02]),
    ("fp6_e3m2", [100.0, 3.0, 0.0, -28.0], 129, [0x1E, 0x0A, 0x00, 0x37]),
    ("fp6_e2m3", [7.5, -1.0, 0.3, 6.4], 127, [0x1F, 0x28, 0x02, 0x1D]),
    ("fp6_e2m3", [30.0, 0.5, -3.0, 2.25], 129, [0x1F, 0x01, 0x26, 0x04]),
]


@pytest.mark.parametrize("fmt, x, scale, codes", FP6_HAND)
def test_fp6_hand_worked_blocks(fmt, x, scale, codes):
    mx = golden.quantize(np.array([x], np.float32), fmt, block_size=4)
    assert mx.scales.tolist() == [[scale]] and mx.codes.tolist() == [codes]
    s, c = oracle.quantize_block(fmt, oracle.decode_input(np.array(x, np.float32)))
    assert (s, c) == (scale, codes)
