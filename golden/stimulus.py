"""Stimulus generators shared by the testbenches and by ``python -m golden vectors``.

Pure numpy: random and directed (corner-case) inputs for the quantizer, the dequantizer and
the dot product. Every function takes its randomness from a caller's ``numpy.random.Generator``
so a seed reproduces a run exactly. Expected outputs always come from :mod:`golden` itself.
"""

from __future__ import annotations

import numpy as np

import golden
from golden.formats import FloatFormat

from .jitcache import njit

__all__ = [
    "from_float", "quantizer_random_blocks", "quantizer_directed_blocks",
    "quantizer_sweep_blocks", "sweep_anchors", "dequantizer_random_inputs",
    "dequantizer_exhaustive_inputs", "SPECIAL_SCALES", "finite_codes", "special_codes",
    "random_fp32", "dot_random_blocks", "dot_accumulators", "dot_directed_blocks",
]

#: E8M0 codes every dequantizer run includes: the clamps, 2^0, the largest, NaN.
SPECIAL_SCALES = np.array([0, 1, 127, 254, 255])


# -- quantizer ----------------------------------------------------------------------------------

def quantizer_random_blocks(rng: np.random.Generator, n: int, k: int,
                            ff: FloatFormat) -> np.ndarray:
    """Raw input bits ``(n, k)`` spread over the whole exponent range, with specials.

    Per block: a base exponent anywhere in the format, a per-lane spread (0..30 binades below
    it), random mantissas, some truncated to a tie at a random position; then zeros of both
    signs, subnormals, max-magnitude values, Inf and NaN sprinkled in.
    """
    base = rng.integers(0, (1 << ff.ebits) - 1, n)
    spread = rng.choice(np.array([0, 1, 3, 8, 30]), n)
    raw = np.empty((n, k), np.int64)
    _random_lanes(rng.integers(0, 1 << 63, (n, k), dtype=np.int64), base, spread, ff.ebits,
                  ff.mbits, raw)
    mag_mask = (1 << (ff.bits - 1)) - 1
    inf = ((1 << ff.ebits) - 1) << ff.mbits
    special = rng.random(n) < 0.03  # one Inf/NaN lane in ~3 % of the blocks
    lane = rng.integers(0, k, n)
    kind = rng.integers(0, 3, n)
    val = np.select([kind == 0, kind == 1], [inf, inf | 1], inf | (1 << (ff.mbits - 1)))
    rows = np.nonzero(special)[0]
    raw[rows, lane[rows]] = (raw[rows, lane[rows]] & ~mag_mask) | val[rows]
    return raw.astype(ff.uint)


@njit(cache=True, nogil=True)
def _random_lanes(words, base, spread, ebits, mbits, raw):
    """The lanes of :func:`quantizer_random_blocks`, each cut from one 63-bit random word
    (one pass, no temporaries: the testbench's stimulus cost).  Bits 0-15: the special-value
    draw (in 65536ths); 16-31: the spread draw; 32-54: the mantissa; 55-56: the tie draw;
    57: the sign; 58-62: the tie position."""
    n, k = words.shape
    top_field = (1 << ebits) - 2
    inf = ((1 << ebits) - 1) << mbits
    man_mask = (1 << mbits) - 1
    sign_at = ebits + mbits
    for b in range(n):
        for i in range(k):
            x = words[b, i]
            draw = x & 0xFFFF
            e = base[b] - ((((x >> 16) & 0xFFFF) * (spread[b] + 1)) >> 16)
            e = min(max(e, 0), top_field)
            m = (x >> 32) & man_mask
            if ((x >> 55) & 3) == 0:  # a quarter of the lanes: a tie (or exact) at bit t
                t = 1 + ((((x >> 58) & 31) * mbits) >> 5)
                m = ((m >> t) << t) | (1 << (t - 1))
            sign = ((x >> 57) & 1) << sign_at
            if draw < 1311:  # +-0 (2 %)
                raw[b, i] = sign
            elif draw < 2621:  # subnormal (2 %)
                raw[b, i] = sign | m
            elif draw < 2949:  # +-max finite (0.5 %)
                raw[b, i] = sign | (inf - 1)
            else:
                raw[b, i] = sign | (e << mbits) | m


def from_float(values, ff: FloatFormat) -> np.ndarray:
    """float64 values -> raw bits of ff; values must be exactly representable (asserted)."""
    v = np.asarray(values, np.float64)
    x = v.astype(ff.dtype)
    ok = (x.astype(np.float64) == v) | np.isnan(v)
    assert ok.all(), f"not exact in {ff.name}: {v[~ok][:4]}"
    return x.view(ff.uint)


def quantizer_directed_blocks(k: int, ff: FloatFormat, fmt, rng: np.random.Generator) -> np.ndarray:
    """Corner-case blocks ``(n, k)`` of raw bits (see docs/quantizer.md, verification plan)."""
    sign_bit = 1 << (ff.bits - 1)
    inf = ((1 << ff.ebits) - 1) << ff.mbits
    min_exp = 1 - ff.bias  # smallest normal exponent
    max_exp = ff.bias
    blocks = []

    def add(rows):
        rows = np.atleast_2d(np.asarray(rows, np.int64))
        blocks.append(rows.astype(ff.uint))

    z = np.zeros(k, np.int64)
    add(z)  # all +0
    add(z | sign_bit)  # all -0
    add(np.where(np.arange(k) % 2, sign_bit, 0))  # mixed signed zeros
    # subnormal inputs: all subnormal, smallest subnormal, subnormal amax among zeros
    add(rng.integers(1, 1 << ff.mbits, (4, k)) | (rng.integers(0, 2, (4, k)) * sign_bit))
    add(np.full(k, 1))
    add(np.where(np.arange(k) == k - 1, (1 << ff.mbits) - 1, z | sign_bit))
    # amax one ulp below a power of two (and exactly at it), across the exponent range
    for p in np.linspace(min_exp + 1, max_exp, 12).astype(int):
        below = int(from_float(np.ldexp(1.0, p), ff)) - 1
        row = rng.integers(0, below, k)
        row[rng.integers(0, k)] = below
        add(row)
        row = row.copy()
        row[0] = below + 1
        add(row)
    # ties at every element grid boundary, for a few scales (floor mode view)
    mbits, emin, emax = fmt.mbits, fmt.emin, fmt.emax
    for a in (0, 3, min_exp + 20, max_exp - 10):
        scale_e = a - emax
        for b in range(emin - 1, emax + 1):  # binade b (b = emin - 1: subnormal range)
            step = np.ldexp(1.0, max(b, emin) - mbits + scale_e)
            lo = np.ldexp(1.0, b + scale_e) if b >= emin else 0.0
            j = rng.integers(0, 1 << mbits, k - 1)
            ties = lo + (j + 0.5) * step
            row = np.concatenate([[np.ldexp(1.0, a)], ties * rng.choice([-1, 1], k - 1)])
            x = row.astype(ff.dtype).astype(np.float64)
            if np.array_equal(x, row):
                add(from_float(row, ff))
    # saturation (floor mode): amax's significand above max_normal's; all lanes at the edge
    for a in (0, 5, max_exp - 1):
        add(from_float(np.full(k, np.ldexp(2.0 - 2.0 ** -min(ff.mbits, 10), a)), ff))
    # NaN / Inf in every lane position, both signs, quiet and signalling NaN
    base = rng.integers(0, inf, k)
    for lane in range(k):
        for special in (inf, inf | sign_bit, inf | (1 << (ff.mbits - 1)), inf | 1):
            row = base.copy()
            row[lane] = special
            add(row)
    # scale clamps: smallest values (e < -127 for fp32/bf16) and the largest finite values
    add(np.full(k, 1))
    add(np.full(k, inf - 1))
    add(np.where(np.arange(k) == 0, inf - 1, rng.integers(0, inf, k)))
    add(np.full(k, inf - 1) | sign_bit)
    # one huge value among tiny ones; all-equal blocks
    tiny = rng.integers(1, 1 << ff.mbits, k)
    tiny[rng.integers(0, k)] = inf - 1
    add(tiny)
    for v in (1.0, -3.0, 0.75):
        add(from_float(np.full(k, v), ff))
    return np.concatenate(blocks)


def quantizer_sweep_blocks(k: int, ff: FloatFormat, source: FloatFormat, anchors) -> np.ndarray:
    """Every 16-bit pattern of ``source`` (bf16 or fp16) as ``ff`` raw bits, k-1 per block
    after an anchor lane (``None``: no anchor, k per block) that sets the scale.  In ``ff =
    source`` every pattern is itself (all NaN payloads); in a wider ``ff`` a NaN becomes the
    quiet NaN with its sign."""
    patterns = np.arange(1 << 16, dtype=np.int64)
    if source is ff:
        return anchored_blocks(patterns, k, ff, anchors)
    with np.errstate(invalid="ignore"):
        vals = patterns.astype(np.uint16).view(source.dtype).astype(np.float64)
    src_nan = np.isnan(vals)
    raw = from_float(np.where(src_nan, 0.0, vals), ff).astype(np.int64)
    nan_ff = (((1 << ff.ebits) - 1) << ff.mbits) | (1 << (ff.mbits - 1))
    raw = np.where(src_nan, nan_ff | ((patterns >> 15) << (ff.bits - 1)), raw)
    return anchored_blocks(raw, k, ff, anchors)


def anchored_blocks(raw, k: int, ff: FloatFormat, anchors) -> np.ndarray:
    """The lane values ``raw`` (``ff`` bit patterns) once per anchor: k-1 per block after an
    anchor lane holding the anchor's value (``None``: no anchor lane, k values per block);
    the last block of each anchor is padded with +0."""
    raw = np.asarray(raw, np.int64)
    out = []
    for anchor in anchors:
        per = k if anchor is None else k - 1
        n = -(-raw.size // per)
        body = np.zeros(n * per, np.int64)
        body[:raw.size] = raw
        body = body.reshape(n, per)
        if anchor is not None:
            a = np.full((n, 1), int(from_float(anchor, ff)), np.int64)
            body = np.concatenate([a, body], axis=1)
        out.append(body)
    return np.concatenate(out).astype(ff.uint)


def sweep_anchors(ff: FloatFormat):
    import ml_dtypes

    info = ml_dtypes.finfo(ff.dtype)
    return [None, float(info.max), 1.0, float(info.smallest_normal), 2.0 ** (ff.bias // 3)]


def exponent_anchors(ff: FloatFormat) -> list:
    """``None`` (no anchor: the block's own maximum sets the scale) and ``+2^t`` for every
    exponent ``t`` of ``ff``, from its smallest subnormal to its largest binade.

    A lane value ``v`` can occur at every shared exponent some block maximum ``>= |v|`` of
    ``ff`` gives; the anchors run through all of them, in both scale modes (rceil moves a
    block to the next exponent only when amax's significand exceeds the element's max normal,
    and the anchors' neighbours cover that exponent too).
    """
    lowest = 1 - ff.bias - ff.mbits
    highest = (1 << ff.ebits) - 2 - ff.bias
    return [None] + [2.0 ** t for t in range(lowest, highest + 1)]


def fp32_significand_sweep(fmt, random_bits: int) -> tuple[np.ndarray, float]:
    """The fp32 lane values that reach every distinct element outcome, and their anchor.

    Returns ``(raw, anchor)``: fp32 bit patterns of ``+-1.f * 2^b`` and the anchor
    ``2^emax``, which gives the block the shared exponent 0 in both scale modes (its
    significand 1.0 never exceeds max normal's), so ``q = V``.  The set, derived in
    docs/verification.md ("Exhaustive element domains"):

    * ``b`` from ``emin - mbits - R - 1`` to ``emax`` (``emin = 1 - bias``; R =
      ``random_bits``): below ``emin - mbits - R`` every bit of ``q`` lies beyond the R bits
      stochastic rounding reads and past the guard bit, so every mode gives zero (one binade
      of it is kept as the witness); above ``emax`` the value would be the block maximum and
      move the scale;
    * ``f``: every pattern of its first ``mbits + R`` bits (the bits a normal element keeps,
      then the R bits ``f_R`` is made of, the guard bit first), with the remaining
      ``23 - mbits - R`` bits either all zero or only the last one set (the sticky bit's two
      values: rne breaks a tie only when they are zero).  Further patterns of those bits change
      no mode's outcome, and lower binades keep fewer bits, so they are covered too.
    """
    f = golden.element_format(fmt)
    if not 1 <= random_bits <= 22 - f.mbits:  # at least one bit left for the sticky tail
        raise ValueError(f"random_bits must be in 1..{22 - f.mbits} for {f.name}; "
                         f"got {random_bits}")
    top = f.mbits + random_bits
    heads = np.arange(1 << top, dtype=np.int64) << (23 - top)
    fractions = np.concatenate([heads, heads | 1])
    emin = 1 - f.bias
    binades = np.arange(emin - f.mbits - random_bits - 1, f.emax + 1)
    exponent_fields = binades + 127
    mags = ((exponent_fields[:, None] << 23) | fractions[None, :]).ravel()
    raw = np.concatenate([mags, mags | (1 << 31)]).astype(np.uint32)
    return raw, 2.0 ** f.emax


# -- dequantizer --------------------------------------------------------------------------------
def dequantizer_random_inputs(rng, n, fmt, k):
    """Random codes (every code equally likely) and scales (uniform plus the specials)."""
    codes = rng.integers(0, 1 << golden.element_format(fmt).bits, (n, k))
    scales = rng.integers(0, 256, n)
    pick = rng.random(n) < 0.2
    scales[pick] = rng.choice(SPECIAL_SCALES, int(pick.sum()))
    return scales, codes


def dequantizer_exhaustive_inputs(fmt, k):
    """Every code at every scale 0..255 (all 256 scales, 0, 127, 254, 255 included)."""
    codes = np.arange(1 << golden.element_format(fmt).bits)
    per = -(-codes.size // k)
    lanes = np.resize(codes, per * k).reshape(per, k)
    scales = np.repeat(np.arange(256), per)
    return scales, np.tile(lanes, (256, 1))


# -- dot product --------------------------------------------------------------------------------
def finite_codes(fmt) -> np.ndarray:
    f = golden.element_format(fmt)
    return np.flatnonzero(np.isfinite(golden.decode_table(f))).astype(np.uint8)


def special_codes(fmt) -> np.ndarray:
    f = golden.element_format(fmt)
    return np.flatnonzero(~np.isfinite(golden.decode_table(f))).astype(np.uint8)


def random_fp32(rng, n) -> np.ndarray:
    """fp32 bit patterns: zeros, subnormals, normals of all magnitudes, Inf and NaN."""
    kind = rng.integers(0, 16, n)
    bits = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    out = bits.copy()
    out[kind == 0] = 0
    out[kind == 1] = 0x80000000
    sub = kind == 2
    out[sub] &= 0x807FFFFF
    out[kind == 3] = (bits[kind == 3] & 0x80000000) | 0x7F800000
    nan = kind == 4
    out[nan] = bits[nan] | 0x7F800001
    mid = kind >= 8  # moderate magnitudes, where results meet c most often
    e = rng.integers(100, 160, n).astype(np.uint32)
    out[mid] = (bits[mid] & 0x807FFFFF) | (e[mid] << 23)
    return out


def dot_random_blocks(rng, fa, fb, n, k, *, specials=0.03):
    """``(a_codes, sa, b_codes, sb)`` random blocks: finite codes, with a few NaN/Inf codes and
    NaN scales, a few blocks of all-equal or one-huge-among-tiny elements, extreme scales."""
    # Per-lane draws are bytes (indices into <= 256 finite codes, 1/256 probability steps):
    # a testbench builds these while the simulator runs, and 8-byte draws of (n, k) arrays
    # would be most of that memory traffic.
    fin_a, fin_b = finite_codes(fa), finite_codes(fb)
    ca = fin_a[rng.integers(0, len(fin_a), (n, k), dtype=np.int16)]
    cb = fin_b[rng.integers(0, len(fin_b), (n, k), dtype=np.int16)]
    # Sparse blocks (few non-zero lanes) give sums with few bits: ties and exact results.
    sparse = np.flatnonzero(rng.random(n) < 0.25)
    keep = rng.integers(0, 256, (sparse.size, k), dtype=np.uint8) < 38  # about 0.15
    ca[sparse] = np.where(keep, ca[sparse], 0)
    # All-equal blocks and one huge among tiny ones.
    eq = rng.random(n) < 0.05
    ca[eq] = ca[eq, :1]
    huge = np.flatnonzero(rng.random(n) < 0.05)
    ca[huge] = rng.choice(fin_a[:4], (huge.size, k))
    ca[huge, rng.integers(0, k, huge.size)] = fin_a[len(fin_a) // 2 - 1]
    for codes, fmt in ((ca, fa), (cb, fb)):
        sp = special_codes(fmt)
        if len(sp):
            hit = rng.random((n, k), dtype=np.float32) < specials / k
            codes[hit] = rng.choice(sp, int(hit.sum()))
    sa = np.clip(rng.normal(127, 12, n), 0, 254).astype(np.uint8)
    sb = np.clip(rng.normal(127, 12, n), 0, 254).astype(np.uint8)
    ext = rng.random(n) < 0.05  # extreme scale pairs: sums near 0 and near 508
    lo = rng.random(n) < 0.5
    sa[ext & lo], sb[ext & lo] = rng.integers(0, 4), rng.integers(0, 4)
    sa[ext & ~lo], sb[ext & ~lo] = rng.integers(251, 255), rng.integers(251, 255)
    nan = rng.random(n) < specials / 3
    sa[nan & lo] = 255
    sb[nan & ~lo] = 255
    return ca.astype(np.uint8), sa, cb.astype(np.uint8), sb


def dot_accumulators(rng, fa, fb, ca, sa, cb, sb):
    """c per block: random fp32 (all kinds), or the negated block sum plus a tiny offset
    (cancellation to zero or to a few bits, subnormal results, final-rounding ties)."""
    n = len(sa)
    c = random_fp32(rng, n)
    t = golden.dot_blocks(ca[:, None], sa[:, None], cb[:, None], sb[:, None], fa, fb)
    tb = t.view(np.uint32)
    kind = rng.integers(0, 4, n)
    fin = np.isfinite(t)
    neg = fin & (kind == 0)
    c[neg] = tb[neg] ^ 0x80000000  # exact cancellation (T representable) or nearly
    near = fin & (kind == 1)
    c[near] = (tb[near] ^ 0x80000000) + rng.integers(-3, 4, int(near.sum())).astype(np.uint32)
    return c


def dot_directed_blocks(fa, fb, k):
    """Hand-built corner cases: list of ``(codes_a, sa, codes_b, sb, c, label)``."""
    f_a, f_b = golden.element_format(fa), golden.element_format(fb)

    def enc(vals, f):
        vals = np.zeros(k) if vals is None else np.asarray(vals, np.float64)
        out = np.zeros(k, np.uint8)
        vals = vals[:k]  # tiny blocks keep what fits
        out[:len(vals)] = golden.encode(vals, f)
        return out

    def fp32(x):
        return int(np.array([x], np.float32).view(np.uint32)[0])

    one_a, one_b = enc([1.0], f_a), enc([1.0], f_b)
    z = np.zeros(k, np.uint8)
    neg_zero_a = z.copy()
    if not f_a.twos_complement:
        neg_zero_a[:] = 1 << (f_a.bits - 1)
    cases = [
        (z, 127, z, 127, 0, "all zero, c=+0"),
        (neg_zero_a, 127, z, 127, 0x80000000, "-0 elements, c=-0 -> +0"),
        (z, 127, z, 127, fp32(-3.5), "T=0 passes c"),
        (z, 127, z, 127, 0x80000001, "T=0 passes a subnormal c"),
        (one_a, 127, one_b, 127, fp32(-1.0), "cancellation to +0"),
        (one_a, 127, one_b, 127 - 24, fp32(1.0), "tie 1 + 2^-24 -> 1"),
        (enc([1.0, 1.0, 1.0], f_a), 127, one_b, 127 - 23, fp32(1.0), "1 + 2^-23"),
        (enc([1.5], f_a), 127, one_b, 127 - 23, fp32(1.0), "tie 1 + 3*2^-24 -> up"),
        (one_a, 0, one_b, 0, 0, "sa+sb=0: 2^-254 -> +0"),
        (one_a, 0, one_b, 104, 0, "2^-150: tie to +0"),
        (enc([1.5], f_a), 0, one_b, 104, 0, "1.5*2^-150 rounds up to min subnormal"),
        (one_a, 0, one_b, 105, 0x80000001, "2^-149 + -2^-149 = +0"),
        (one_a, 254, one_b, 254, 0, "2^254 -> +Inf"),
        (one_a, 254, one_b, 128, fp32(-3e38), "2^128 - 3e38"),
        (one_a, 255, one_b, 127, 0, "NaN scale a"),
        (one_a, 127, one_b, 255, 0, "NaN scale b"),
        (one_a, 127, one_b, 127, 0x7FC12345, "NaN c"),
        (one_a, 127, one_b, 127, 0x7F800000, "+Inf c"),
        (one_a, 127, one_b, 127, 0xFF800000, "-Inf c"),
        (z, 127, z, 127, 0xFF800000, "-Inf c, T=0"),
    ]
    big_a = np.full(k, f_a.max_code, np.uint8)
    big_b = np.full(k, f_b.max_code, np.uint8)
    cases.append((big_a, 254, big_b, 254, 0, "all max, max scales"))
    cases.append((big_a, 0, big_b, 0, 0, "all max, min scales"))
    if not f_b.twos_complement:
        neg_big_b = big_b | (1 << (f_b.bits - 1))
        cases.append((big_a, 130, neg_big_b, 130, fp32(1e10), "all -max"))
    # The largest block sum |S| (int8: -128 * -128 in every lane) with c of the same sign and
    # size: the window sum's carry into its top bit, the one bit of the window above both
    # operands (docs/dot.md: N = W + G + 2).
    top_a = np.full(k, 1 << (f_a.bits - 1) if f_a.twos_complement else f_a.max_code, np.uint8)
    top_b = np.full(k, 1 << (f_b.bits - 1) if f_b.twos_complement else f_b.max_code, np.uint8)
    t_bits = int(golden.dot_blocks(top_a[None, None], np.array([[127]], np.uint8),
                                   top_b[None, None], np.array([[127]], np.uint8),
                                   f_a, f_b).view(np.uint32)[0])
    below_lead = (t_bits & 0xFF800000) - 1  # the largest fp32 below T's leading power of two
    for c_bits, what in ((t_bits, "c = T"), (t_bits + 1, "c one ulp above T"),
                         (t_bits - 1, "c one ulp below T"),
                         (below_lead, "c just below T's leading power of two")):
        cases.append((top_a, 127, top_b, 127, c_bits, f"largest |S|, {what}: window carry"))
    for f, side in ((f_a, "a"), (f_b, "b")):
        for code in (*f.nan_codes, *f.inf_codes):
            for neg in (0, 1):
                sp = np.zeros(k, np.uint8)
                sp[0] = code | (neg << (f.bits - 1))
                other_one = one_b if side == "a" else one_a
                other_zero = z
                for other, what in ((other_one, "x 1"), (other_zero, "x 0")):
                    a, b = (sp, other) if side == "a" else (other, sp)
                    cases.append((a, 127, b, 127, 0, f"{side} code {int(sp[0]):#x} {what}"))
                a, b = (sp, one_b) if side == "a" else (one_a, sp)
                cases.append((a, 127, b, 127, 0xFF800000, f"{side} code {int(sp[0]):#x}, -Inf c"))
    inf_a = [c for c in f_a.inf_codes]
    if inf_a:
        a = np.zeros(k, np.uint8)
        a[0], a[1] = inf_a[0], inf_a[0] | (1 << (f_a.bits - 1))
        b = np.zeros(k, np.uint8)
        b[:2] = one_b[0]
        cases.append((a, 127, b, 127, 0, "opposite Infs among products"))
    return cases
