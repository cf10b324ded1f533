"""Dot-product coverage: the cases of ``docs/numerics.md`` section 5 per MXDot block, and the
run shapes of MXDotGeneral, classified from the stimulus and golden's results.

MXDot, cover point ``block`` (configuration class: format pair), bins:

``exact_zero``        c + T is exactly zero (result +0);
``subnormal_result``  a non-zero fp32 subnormal result;
``overflow``          finite inputs whose result is +-Inf;
``nan_scale``         sa or sb is 255;
``nan_code``          a NaN element code;
``nan_accumulator``   c is NaN;
``inf_times_zero``    a lane multiplies an Inf code by a zero;
``opposite_infs``     Infs of both signs among the products and c;
``inf_accumulator``   c is +-Inf;
``final_tie``         finite c + T exactly halfway between two fp32 values (the one RNE);
``cancellation``      terms (products and c) of both signs whose non-zero sum has its
                      leading bit at least 8 places below the largest term's;
``scale_sum_near_0``, ``scale_sum_near_508``  finite scales with sa + sb <= 8 or >= 500;
``c_pos_zero``, ``c_neg_zero``  c = +0 or -0.

MXDotGeneral, cover point ``runs`` (class: format pair and single/multiple contexts), bins:
``single_block_run`` (first = last on one block), ``multi_block_run`` (2 to
:data:`LONG_RUN` - 1 blocks), ``long_run`` (>= :data:`LONG_RUN` blocks),
``interleaved_contexts`` (another context's block between a run's first and last),
``single_context_run`` (a run of several blocks with no other context's block inside it).
"""

from __future__ import annotations

import numpy as np

import golden
from golden.formats import FP32, SCALE_BIAS, SCALE_NAN

from .model import CoverageModel, point

__all__ = ["BLOCK_BINS", "RUN_BINS", "LONG_RUN", "SCALE_SUM_NEAR", "dot_model",
           "dot_general_model", "classify_dot", "classify_runs", "exact_sum"]

BLOCK_BINS = ("exact_zero", "subnormal_result", "overflow", "nan_scale", "nan_code",
              "nan_accumulator", "inf_times_zero", "opposite_infs", "inf_accumulator",
              "final_tie", "cancellation", "scale_sum_near_0", "scale_sum_near_508",
              "c_pos_zero", "c_neg_zero")
RUN_BINS = ("single_block_run", "multi_block_run", "long_run", "interleaved_contexts",
            "single_context_run")
#: Blocks from which a DotGeneral run counts as long.
LONG_RUN = 256
#: Distance of sa + sb from 0 or 508 that counts as near.
SCALE_SUM_NEAR = 8
#: Leading bits that must cancel for the ``cancellation`` bin.
CANCELLED_BITS = 8

#: Split of the integer element values so the limb products fit int64 (see exact_sum).
_LIMB = 16


def _pair_class(fmt_a, fmt_b) -> str:
    return f"{golden.element_format(fmt_a).name}-x-{golden.element_format(fmt_b).name}"


def dot_model(fmt_a, fmt_b) -> CoverageModel:
    """MXDot's cover point for a format pair."""
    fa, fb = golden.element_format(fmt_a), golden.element_format(fmt_b)
    no_inf = None if fa.inf_codes or fb.inf_codes else (
        f"Inf products need an Inf code, which neither {fa.name} nor {fb.name} has; c alone is "
        "a single Inf")
    why = {"nan_code": None if fa.nan_codes or fb.nan_codes else
           f"neither {fa.name} nor {fb.name} has NaN codes",
           "inf_times_zero": no_inf, "opposite_infs": no_inf}
    return CoverageModel("dot", _pair_class(fa, fb), (point("block", BLOCK_BINS, why),))


def dot_general_model(fmt_a, fmt_b, contexts: int) -> CoverageModel:
    """MXDotGeneral's run-shape cover point for a format pair and context count."""
    if contexts < 1:
        raise ValueError(f"contexts must be >= 1, got {contexts}")
    why = {"interleaved_contexts": "one context: runs cannot interleave"
           if contexts == 1 else None}
    return CoverageModel("dot_general",
                         f"{_pair_class(fmt_a, fmt_b)}-{'multi' if contexts > 1 else 'one'}_ctx",
                         (point("runs", RUN_BINS, why),))


def _integers(codes, fmt) -> tuple[np.ndarray, np.ndarray]:
    """Element values in units of the format's min subnormal: (sign +-1, magnitude) int64;
    NaN/Inf codes give 0 (the caller excludes their blocks)."""
    v = golden.decode(np.asarray(codes).astype(np.int64), fmt)
    v = np.where(np.isfinite(v), v, 0.0)
    return np.where(v < 0, -1, 1), np.abs(np.ldexp(v, -fmt.lsb_exp)).astype(np.int64)


def exact_sum(ca, sa, cb, sb, c_bits, fmt_a, fmt_b, rows) -> list[tuple[int, int]]:
    """``c + T`` of blocks ``rows`` exactly, as ``(N, X)`` with value ``N * 2^X`` (ints).

    The products are summed as integers in units of ``2^(lsb_a + lsb_b)`` in two int64 limbs
    (element magnitudes are below 2^32, so a limb product is below 2^48 and a sum of 64 of
    them below 2^54); only the final combination with ``c`` uses Python integers.
    """
    fa, fb = golden.element_format(fmt_a), golden.element_format(fmt_b)
    sign_a, ia = _integers(np.asarray(ca)[rows], fa)
    sign_b, ib = _integers(np.asarray(cb)[rows], fb)
    sign = sign_a * sign_b
    hi = (sign * (ia >> _LIMB) * ib).sum(axis=1)
    lo = (sign * (ia & ((1 << _LIMB) - 1)) * ib).sum(axis=1)
    e_t = (fa.lsb_exp + fb.lsb_exp + np.asarray(sa).astype(np.int64)[rows]
           + np.asarray(sb).astype(np.int64)[rows] - 2 * SCALE_BIAS)
    c = np.asarray(c_bits).astype(np.int64)[rows]
    c_exp = (c >> FP32.mbits) & 0xFF
    c_man = np.where(c_exp > 0, (c & 0x7FFFFF) | 0x800000, c & 0x7FFFFF)
    c_man = np.where(c >> 31, -c_man, c_man)
    c_e = np.maximum(c_exp, 1) - FP32.bias - FP32.mbits
    out = []
    for h, low, et, cm, ce in zip(hi.tolist(), lo.tolist(), e_t.tolist(), c_man.tolist(),
                                  c_e.tolist(), strict=True):
        x = min(et, ce)
        out.append(((((h << _LIMB) + low) << (et - x)) + (cm << (ce - x)), x))
    return out


def _is_fp32_tie(n: int, x: int) -> bool:
    """Whether ``n * 2^x`` (n != 0) lies exactly halfway between two adjacent fp32 values."""
    n = abs(n)
    binade = n.bit_length() - 1 + x
    drop = max(binade, 1 - FP32.bias) - FP32.mbits - x  # bits of n below fp32's last place
    return drop >= 1 and n & ((1 << drop) - 1) == 1 << (drop - 1)


def classify_dot(ca, sa, cb, sb, c_bits, results, *, fmt_a, fmt_b) -> dict:
    """Bin hit counts ``{"block": {bin: count}}`` of MXDot blocks.

    Parameters
    ----------
    ca, cb : ndarray (n, k)
        Element codes; ``sa``, ``sb``: scales (n,).
    c_bits, results : ndarray (n,)
        The accumulator input and golden's result, fp32 bit patterns.
    """
    fa, fb = golden.element_format(fmt_a), golden.element_format(fmt_b)
    ca, cb = np.asarray(ca).astype(np.int64), np.asarray(cb).astype(np.int64)
    n = ca.shape[0]
    sa, sb = (np.asarray(s).astype(np.int64).reshape(n) for s in (sa, sb))
    c_bits = np.asarray(c_bits).astype(np.uint32).reshape(n)
    c = c_bits.view(np.float32).astype(np.float64)
    r = np.asarray(results).astype(np.uint32).reshape(n).view(np.float32).astype(np.float64)
    va, vb = golden.decode(ca, fa), golden.decode(cb, fb)

    nan_scale = (sa == SCALE_NAN) | (sb == SCALE_NAN)
    nan_code = np.isnan(va).any(axis=1) | np.isnan(vb).any(axis=1)
    inf_lane = np.isinf(va) | np.isinf(vb)
    inf_zero = ((np.isinf(va) & (vb == 0)) | (np.isinf(vb) & (va == 0))).any(axis=1)
    with np.errstate(invalid="ignore"):
        product_sign = np.sign(va) * np.sign(vb)
    inf_pos = (inf_lane & (product_sign > 0)).any(axis=1) | (c == np.inf)
    inf_neg = (inf_lane & (product_sign < 0)).any(axis=1) | (c == -np.inf)
    finite = (~nan_scale & ~nan_code & ~inf_lane.any(axis=1) & np.isfinite(c))
    both_finite_scales = ~nan_scale
    scale_sum = sa + sb
    bins = {
        "nan_scale": nan_scale, "nan_code": nan_code, "nan_accumulator": np.isnan(c),
        "inf_times_zero": inf_zero, "opposite_infs": inf_pos & inf_neg,
        "inf_accumulator": np.isinf(c),
        "scale_sum_near_0": both_finite_scales & (scale_sum <= SCALE_SUM_NEAR),
        "scale_sum_near_508": both_finite_scales & (scale_sum >= 508 - SCALE_SUM_NEAR),
        "c_pos_zero": c_bits == 0, "c_neg_zero": c_bits == FP32.sign_mask,
        "overflow": finite & np.isinf(r),
        "subnormal_result": finite & (r != 0) & (np.abs(r) < 2.0 ** (1 - FP32.bias)),
    }

    # c + T in float64 decides every block whose bins its error bound cannot flip; the
    # others (candidate zeros, ties and cancellation boundaries) are decided exactly.
    fin = np.flatnonzero(finite)
    exact_zero = np.zeros(n, bool)
    tie = np.zeros(n, bool)
    cancel = np.zeros(n, bool)
    if fin.size:
        # products of at most 8-bit significands: exact in float64, and so is the scaling
        terms = np.ldexp(va[fin] * vb[fin], (sa[fin] + sb[fin] - 2 * SCALE_BIAS)[:, None])
        t64 = terms.sum(axis=1)
        cf = c[fin]
        s64 = cf + t64
        # float64 error bound of the sum (k <= 64 roundings of 2^-53 each), with margin
        err = 2.0 ** -40 * (np.abs(cf) + np.abs(terms).sum(axis=1))
        a = np.abs(s64)
        _, ex = np.frexp(a)
        binade = np.maximum(ex - 1, 1 - FP32.bias)
        ulp = np.ldexp(1.0, binade - FP32.mbits)
        half_off = np.abs(a / ulp - np.floor(a / ulp) - 0.5) * ulp  # distance to a midpoint
        largest = np.maximum(np.abs(terms).max(axis=1), np.abs(cf))
        _, largest_exp = np.frexp(largest)
        bound = np.ldexp(1.0, largest_exp - CANCELLED_BITS)  # |c + T| below: cancellation
        mixed = (((terms > 0).any(axis=1) | (cf > 0)) & ((terms < 0).any(axis=1) | (cf < 0)))
        # (Midpoints are at least a quarter of an ulp from a power of two, so a sum within err
        # of one is no tie even if its float lands in the wrong binade.)
        all_zero = (terms == 0).all(axis=1) & (cf == 0)
        exact_zero[fin] = all_zero
        zero_cand = ~all_zero & (a <= err)
        tie_cand = ~all_zero & ~zero_cand & (half_off <= err)
        cancel_cand = mixed & ~zero_cand & (np.abs(a - bound) <= err)
        cancel[fin] = mixed & ~zero_cand & (a < bound)
        exact_rows = np.flatnonzero(zero_cand | tie_cand | cancel_cand)
        for j, (num, x) in zip(exact_rows.tolist(),
                               exact_sum(ca, sa, cb, sb, c_bits, fa, fb, fin[exact_rows]),
                               strict=True):
            row = fin[j]
            exact_zero[row] = num == 0
            tie[row] = num != 0 and _is_fp32_tie(num, x)
            if cancel_cand[j] or zero_cand[j]:
                sum_exp = abs(num).bit_length() + x  # 2^(sum_exp - 1) <= |c + T| < 2^sum_exp
                cancel[row] = mixed[j] and num != 0 and sum_exp <= largest_exp[j] - CANCELLED_BITS
    bins.update({"exact_zero": exact_zero, "final_tie": tie, "cancellation": cancel})
    return {"block": {b: int(m.sum()) for b, m in bins.items() if m.any()}}


def classify_runs(first, last, ctx) -> dict:
    """Bin hit counts ``{"runs": {bin: count}}`` of a DotGeneral stream of blocks with their
    ``first``/``last`` flags and contexts (arrays (n,), in stream order)."""
    first, last = np.asarray(first).astype(bool), np.asarray(last).astype(bool)
    ctx = np.asarray(ctx).astype(np.int64)
    counts = dict.fromkeys(RUN_BINS, 0)
    for c in np.unique(ctx):
        idx = np.flatnonzero(ctx == c)
        starts, ends = np.flatnonzero(first[idx]), np.flatnonzero(last[idx])
        if starts.size != ends.size:
            raise ValueError(f"context {c}: {starts.size} first flags but {ends.size} last")
        length = ends - starts + 1
        span = idx[ends] - idx[starts] + 1  # stream positions from first to last
        counts["single_block_run"] += int((length == 1).sum())
        counts["multi_block_run"] += int(((length > 1) & (length < LONG_RUN)).sum())
        counts["long_run"] += int((length >= LONG_RUN).sum())
        counts["interleaved_contexts"] += int((span > length).sum())
        counts["single_context_run"] += int(((length > 1) & (span == length)).sum())
    return {"runs": {b: v for b, v in counts.items() if v}}
