"""Coverage of the dot units' GPU accumulation modes (``tcgen05.mxf8f6f4``, ``tcgen05.mxf4``):
what distinguishes them from the exact mode (``docs/numerics.md`` section 8), per MXDot block.
A term is a product (mxf8f6f4) or a group of 16 products summed exactly (mxf4).

Cover point ``gpu`` (configuration class: format pair and mode), bins:

``term_truncated_away``   a non-zero term or ``c`` whose truncated term is 0;
``negative_term_up``      a negative term that lost bits, and the result above ``c + T``;
``zero_floor``            ``c = +-0`` and every non-zero term's exponent below the floor
                          (-133, mxf4 -139): ``e_max`` is the floor;
``cancellation_wipes_c``  a non-zero ``c`` truncated away and a +0 result (the products
                          cancel);
``flt_max_not_inf``       ``|c + T| >= 2^128 - 2^103`` (where RNE overflows) and a finite
                          result (FLT_MAX);
``overflow_at_2_128``     finite inputs and a +-Inf result;
``negative_zero_plus``    a +0 result where ``c + T < 0`` or ``c = -0``;
``gpu_nan``               a NaN result, 0x7FFFFFFF.

The terms are computed from the decoded values in float64, exactly (products of at most
8-bit significands scaled by powers of two); ``c + T`` exactly where a bin needs it
(:func:`tb.coverage.dot.exact_sum`).

``tcgen05.mxf4nvf4`` with UE4M3 scales (MXDot nvfp4, :func:`gpu_nvfp4_model`): the same
``gpu`` bins, a group's value times both scales' values and its exponent the scales'
(``max(e, 1) - 7`` each) from each byte's low seven bits, but not ``zero_floor``,
``flt_max_not_inf`` and ``overflow_at_2_128`` (:data:`NVFP4_EXCLUDED`); and cover point
``ue4m3``: ``nan_scale`` (0x7F), ``sign_bit_scale`` (bit 7 set, ignored), ``zero_scale``,
``subnormal_scale`` (0x01..0x07), ``max_scale`` (both 0x7E).

MXDotGeneral in ``tcgen05.mxf4`` / ``tcgen05.mxf4nvf4`` (a step per 64 elements, ``64 / k``
blocks of a run, :func:`gpu_general_model`), cover point ``steps`` beside the run shapes, per
run of ``n`` blocks (:func:`classify_steps`): ``step_closed_mid_run`` (``n`` above ``64 / k``:
a step closed by its block count before the run's end, its state's groups cleared),
``short_last_step`` (``n`` not a multiple of ``64 / k``: ``last`` closes a step of fewer
blocks), ``full_last_step`` (a multiple).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

import golden
from golden.formats import FP32, SCALE_BIAS, SCALE_NAN
from golden.scale_format import UE4M3

from .dot import classify_dot, dot_general_model, dot_model, exact_sum
from .model import CoverageModel, point
from .nvfp4_dot import nvfp4_dot_model

__all__ = ["GPU_BINS", "GPU_NAN", "UE4M3_BINS", "NVFP4_EXCLUDED", "STEP_BINS", "gpu_dot_model",
           "gpu_nvfp4_model", "gpu_general_model", "classify_gpu", "classify_dot_gpu",
           "classify_nvfp4_gpu", "classify_steps"]

GPU_BINS = ("term_truncated_away", "negative_term_up", "zero_floor", "cancellation_wipes_c",
            "flt_max_not_inf", "overflow_at_2_128", "negative_zero_plus", "gpu_nan")
#: The NaN of the GPU modes.
GPU_NAN = 0x7FFFFFFF
#: Per mode: fraction bits below e_max, the exponent of a zero term.
_MODES = {"tcgen05.mxf8f6f4": (25, -133), "tcgen05.mxf4": (35, -139),
          "tcgen05.mxf4nvf4": (35, -139)}
#: tcgen05.mxf4: products per group.
_GROUP = 16
#: Where RNE to fp32 overflows.
_RNE_OVERFLOW = Fraction(2 ** 128 - 2 ** 103)
#: The scale bytes' bins of MXDot nvfp4 in the GPU mode.
UE4M3_BINS = ("nan_scale", "sign_bit_scale", "zero_scale", "subnormal_scale", "max_scale")
#: The ``gpu`` bins UE4M3 scales cannot reach, and why.
NVFP4_EXCLUDED = {
    "zero_floor": "a non-zero group's exponent is at least -12 (two UE4M3 scales' -6), far "
                  "above the -139 floor",
    "flt_max_not_inf": "|T| <= 16 * 36 * 448^2 < 2^27: c + T never reaches 2^128 - 2^103 from "
                       "a finite c",
    "overflow_at_2_128": "|T| < 2^27: finite inputs never sum to 2^128",
}


def gpu_dot_model(fmt_a, fmt_b, accumulation: str) -> CoverageModel:
    """MXDot's cover points in a GPU mode: ``block`` (:func:`tb.coverage.dot.dot_model`'s
    bins) and ``gpu``."""
    block = dot_model(fmt_a, fmt_b)
    mode = accumulation.replace(".", "_")
    return CoverageModel("dot", f"{block.config_class}-{mode}",
                         (*block.points, point("gpu", GPU_BINS, {})))


#: MXDotGeneral's step shapes in the mxf4 modes.
STEP_BINS = ("step_closed_mid_run", "short_last_step", "full_last_step")
#: Elements per mxf4 / mxf4nvf4 step.
_STEP = 64


def gpu_general_model(fmt_a, fmt_b, contexts: int, accumulation: str) -> CoverageModel:
    """MXDotGeneral's cover points in a GPU mode: the run shapes
    (:func:`tb.coverage.dot.dot_general_model`) and, mxf4 and mxf4nvf4, ``steps``."""
    runs = dot_general_model(fmt_a, fmt_b, contexts)
    if accumulation == "tcgen05.mxf8f6f4":
        return runs
    return CoverageModel(runs.unit, f"{runs.config_class}-{accumulation.replace('.', '_')}",
                         (*runs.points, point("steps", STEP_BINS, {})))


def classify_steps(first, last, ctx, block_size: int) -> dict:
    """Bin hit counts ``{"steps": {bin: count}}`` of a DotGeneral stream's runs (arrays as
    :func:`tb.coverage.dot.classify_runs`') in the mxf4 modes."""
    first, last = np.asarray(first).astype(bool), np.asarray(last).astype(bool)
    ctx = np.asarray(ctx).astype(np.int64)
    per_step = _STEP // block_size
    lengths = []
    for c in np.unique(ctx):
        idx = np.flatnonzero(ctx == c)
        lengths += (np.flatnonzero(last[idx]) - np.flatnonzero(first[idx]) + 1).tolist()
    n = np.array(lengths, np.int64)
    bins = {"step_closed_mid_run": n > per_step, "short_last_step": n % per_step != 0,
            "full_last_step": n % per_step == 0}
    return {"steps": {b: int(m.sum()) for b, m in bins.items() if m.any()}}


def gpu_nvfp4_model(general: bool = False, epilogue: bool = False) -> CoverageModel:
    """MXDot nvfp4's cover points in ``tcgen05.mxf4nvf4``: ``gpu`` (without
    :data:`NVFP4_EXCLUDED`) and ``ue4m3``; MXDotGeneral nvfp4's: its exact mode's (the run
    shapes and, with the epilogue, ``epilogue``, :func:`tb.coverage.nvfp4_dot.
    nvfp4_dot_model`) and ``steps``."""
    if general:
        runs = nvfp4_dot_model(True, epilogue)
        return CoverageModel(runs.unit, f"{runs.config_class}-tcgen05_mxf4nvf4",
                             (*runs.points, point("steps", STEP_BINS, {})))
    return CoverageModel("dot", "nvfp4-tcgen05_mxf4nvf4",
                         (point("gpu", GPU_BINS, NVFP4_EXCLUDED), point("ue4m3", UE4M3_BINS, {})))


def _scales(sa, sb, scale_format: str):
    """Per block ``(factor, x, nan)``: the two scales' product, their alignment exponent
    (E8M0: the product's; UE4M3: ``max(e, 1) - 7`` of each byte's low seven bits) and
    whether one is NaN."""
    if scale_format == "e8m0":
        x = sa + sb - 2 * SCALE_BIAS
        return np.ldexp(1.0, x), x, (sa == SCALE_NAN) | (sb == SCALE_NAN)
    low_a, low_b = sa & 0x7F, sb & 0x7F
    nan = (low_a == UE4M3.nan_code) | (low_b == UE4M3.nan_code)
    table = UE4M3.table()
    factor = np.where(nan, 0.0, table[np.where(nan, 0, low_a)] * table[np.where(nan, 0, low_b)])
    return factor, np.maximum(low_a >> 3, 1) + np.maximum(low_b >> 3, 1) - 14, nan


def _exponents(v, fmt):
    """Alignment exponents ``max(E, 1) - bias`` of decoded element values (finite, non-zero)."""
    _, e = np.frexp(np.abs(v))
    return np.maximum(e - 1, fmt.lsb_exp + fmt.mbits)


def _terms(xa, xb, factor, scale, fa, fb, accumulation, floor):
    """Per block the terms' values (times ``factor``, the scales') and alignment exponents
    (``floor`` for a zero product or an all-zero group or a zero scale), and which are of
    non-zero products."""
    prod = xa * xb
    nz = prod != 0
    if accumulation != "tcgen05.mxf8f6f4":  # groups of 16 summed exactly, at the scales'
        # exponent (mxf4, and mxf4nvf4)
        n, k = prod.shape
        nz = nz.reshape(n, k // _GROUP, _GROUP).any(axis=2) & (factor != 0)
        values = prod.reshape(n, k // _GROUP, _GROUP).sum(axis=2) * factor
        return values, np.where(nz, scale, floor), nz
    x = np.where(nz, _exponents(np.where(nz, xa, 1), fa)
                 + _exponents(np.where(nz, xb, 1), fb) + scale, floor)
    return prod * factor, x, nz


def classify_gpu(ca, sa, cb, sb, c_bits, results, *, fmt_a, fmt_b,
                 accumulation: str = "tcgen05.mxf8f6f4", scale_format: str = "e8m0") -> dict:
    """Bin hit counts ``{"gpu": {bin: count}}`` of MXDot blocks in a GPU mode (arguments as
    :func:`tb.coverage.dot.classify_dot`'s, ``results`` golden's in the mode; ``scale_format``
    ``"ue4m3"``: nvfp4 in ``tcgen05.mxf4nvf4``)."""
    f_bits, e_zero = _MODES[accumulation]
    fa, fb = golden.element_format(fmt_a), golden.element_format(fmt_b)
    ca, cb = np.asarray(ca).astype(np.int64), np.asarray(cb).astype(np.int64)
    n = ca.shape[0]
    sa, sb = (np.asarray(s).astype(np.int64).reshape(n) for s in (sa, sb))
    c_bits = np.asarray(c_bits).astype(np.uint32).reshape(n)
    res = np.asarray(results).astype(np.uint32).reshape(n)
    c = c_bits.view(np.float32).astype(np.float64)
    r = res.view(np.float32).astype(np.float64)
    va, vb = golden.decode(ca, fa), golden.decode(cb, fb)
    factor, scale, scale_nan = _scales(sa, sb, scale_format)
    finite = (~scale_nan & np.isfinite(va).all(axis=1) & np.isfinite(vb).all(axis=1)
              & np.isfinite(c))
    bins = {"gpu_nan": res == GPU_NAN,
            "overflow_at_2_128": finite & np.isinf(r)}
    fin = np.flatnonzero(finite)
    for name in ("term_truncated_away", "negative_term_up", "zero_floor",
                 "cancellation_wipes_c", "flt_max_not_inf", "negative_zero_plus"):
        bins[name] = np.zeros(n, bool)
    if fin.size:
        values, x_prod, nz = _terms(va[fin], vb[fin], factor[fin][:, None],
                                    scale[fin][:, None], fa, fb, accumulation, e_zero)
        cf = c[fin]
        _, ce = np.frexp(np.abs(cf))
        x_c = np.where(cf != 0, np.maximum(ce - 1, -126), e_zero)
        e_max = np.maximum(np.maximum(x_prod.max(axis=1), x_c), e_zero)
        units = np.ldexp(values, f_bits - e_max[:, None])
        trunc = np.trunc(units)
        c_units = np.ldexp(cf, f_bits - e_max)
        c_away = (cf != 0) & (np.trunc(c_units) == 0)
        bins["term_truncated_away"][fin] = (((values != 0) & (trunc == 0)).any(axis=1)
                                            | c_away)
        bins["zero_floor"][fin] = ((cf == 0) & nz.any(axis=1)
                                   & (np.where(nz, x_prod, e_zero - 1) < e_zero).all(axis=1))
        plus_zero = res[fin] == 0
        bins["cancellation_wipes_c"][fin] = c_away & plus_zero
        lost_negative = ((units < 0) & (units != trunc)).any(axis=1) | ((c_units < 0) & (
            c_units != np.trunc(c_units)))
        big = np.abs(cf) + np.abs(values).sum(axis=1) >= 2.0 ** 127
        rows = np.flatnonzero(lost_negative | big | plus_zero)
        if scale_format == "e8m0":
            sums = [Fraction(num) * Fraction(2) ** x
                    for num, x in exact_sum(ca, sa, cb, sb, c_bits, fa, fb, fin[rows])]
        else:  # exact float64 group values (10-bit sums times two 4-bit significands)
            sums = [Fraction(float(cf[j])) + sum(map(Fraction, values[j].tolist()))
                    for j in rows.tolist()]
        for j, exact in zip(rows.tolist(), sums, strict=True):
            row = fin[j]
            got = Fraction(float(r[row])) if np.isfinite(r[row]) else None
            if lost_negative[j] and got is not None and got > exact:
                bins["negative_term_up"][row] = True
            if abs(exact) >= _RNE_OVERFLOW and got is not None:
                bins["flt_max_not_inf"][row] = True
            if plus_zero[j] and (exact < 0 or c_bits[row] == FP32.sign_mask):
                bins["negative_zero_plus"][row] = True
    return {"gpu": {b: int(m.sum()) for b, m in bins.items() if m.any()}}


def classify_nvfp4_gpu(ca, sa, cb, sb, c_bits, results) -> dict:
    """Both cover points of :func:`gpu_nvfp4_model`: ``gpu`` and ``ue4m3``."""
    counts = classify_gpu(ca, sa, cb, sb, c_bits, results, fmt_a="fp4_e2m1",
                          fmt_b="fp4_e2m1", accumulation="tcgen05.mxf4nvf4",
                          scale_format="ue4m3")
    counts["gpu"] = {b: n for b, n in counts["gpu"].items() if b not in NVFP4_EXCLUDED}
    sa, sb = np.asarray(sa).astype(np.int64), np.asarray(sb).astype(np.int64)
    low = np.stack([sa & 0x7F, sb & 0x7F])
    bins = {"nan_scale": (low == UE4M3.nan_code).any(axis=0),
            "sign_bit_scale": ((np.stack([sa, sb]) & 0x80) != 0).any(axis=0),
            "zero_scale": (low == 0).any(axis=0),
            "subnormal_scale": ((low > 0) & (low < 8)).any(axis=0),
            "max_scale": (low == 0x7E).all(axis=0)}
    counts["ue4m3"] = {b: int(m.sum()) for b, m in bins.items() if m.any()}
    return counts


def classify_dot_gpu(ca, sa, cb, sb, c_bits, results, *, fmt_a, fmt_b,
                     accumulation: str = "tcgen05.mxf8f6f4") -> dict:
    """Both cover points of :func:`gpu_dot_model`: ``block`` and ``gpu``."""
    counts = classify_dot(ca, sa, cb, sb, c_bits, results, fmt_a=fmt_a, fmt_b=fmt_b)
    counts.setdefault("block", {})
    counts.update(classify_gpu(ca, sa, cb, sb, c_bits, results, fmt_a=fmt_a, fmt_b=fmt_b,
                               accumulation=accumulation))
    return counts

