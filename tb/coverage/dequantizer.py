"""Dequantizer coverage: the cases of ``docs/numerics.md`` section 4 per lane, classified from
a batch's scales and codes and golden's output values.

One cover point ``element`` (configuration class: element format x output format), bins:

``normal``              a finite non-zero normal result;
``subnormal_result``    a non-zero result in the output's subnormal range;
``subnormal_rounding``  an exact value below the output's min normal that the output cannot
                        hold (one RNE inside the subnormal range, to zero included);
``overflow``            a finite exact value whose result is +-Inf;
``nan_scale``           s = 255 (every lane NaN);
``zero_code``           a +-0 code at a non-NaN scale;
``neg_zero_code``       the -0 code at a non-NaN scale;
``nan_code``, ``inf_code``  a NaN or Inf code at a non-NaN scale (bins only where the format
                        has such codes: ``nan_codes``, ``inf_codes``);
``int_min_code``        an intN's most negative code ``-2^(N-1)`` (-2.0; int8 0x80), decoded but
                        never written by a quantizer (Interpretation 3).
"""

from __future__ import annotations

import numpy as np

import golden
from golden.formats import SCALE_BIAS, SCALE_NAN

from .model import CoverageModel, point

__all__ = ["ELEMENT_BINS", "dequantizer_model", "classify_dequantizer"]

ELEMENT_BINS = ("normal", "subnormal_result", "subnormal_rounding", "overflow", "nan_scale",
                "zero_code", "neg_zero_code", "nan_code", "inf_code", "int_min_code")


def _min_normal(ff) -> float:
    return 2.0 ** (1 - ff.bias)


def dequantizer_model(fmt, output_format) -> CoverageModel:
    """The dequantizer's cover point for element format ``fmt`` and ``output_format``."""
    fmt, ff = golden.element_format(fmt), golden.float_format(output_format)
    # Element values have at most 8 significant bits, which every output's normal range holds;
    # only a last place below the output's subnormal one can need rounding.
    lowest = fmt.lsb_exp - SCALE_BIAS  # last place of the smallest scaled element
    output_lsb = 1 - ff.bias - ff.mbits
    why = {
        "subnormal_rounding": None if lowest < output_lsb else (
            f"every result is exact: {fmt.name} values at scale 2^-127 are multiples of "
            f"2^{lowest}, and {ff.name}'s subnormal last place is 2^{output_lsb}"),
        "neg_zero_code": f"{fmt.name} has no -0 (two's complement)" if fmt.is_int else None,
        "nan_code": None if fmt.nan_codes else f"{fmt.name} has no NaN codes",
        "inf_code": None if fmt.inf_codes else f"{fmt.name} has no Inf codes",
        "int_min_code": None if fmt.is_int else "only intN has the code -2.0 (-2^(N-1))",
    }
    return CoverageModel("dequantizer", f"{fmt.name}-{ff.name}",
                         (point("element", ELEMENT_BINS, why),))


def classify_dequantizer(scales, codes, values, *, fmt, output_format) -> dict:
    """Bin hit counts ``{"element": {bin: count}}`` of a batch.

    Parameters
    ----------
    scales, codes : ndarray (n,), (n, k)
        The batch's input.
    values : ndarray (n, k)
        golden's output bit patterns of ``output_format``.
    """
    fmt, ff = golden.element_format(fmt), golden.float_format(output_format)
    codes = np.asarray(codes).astype(np.int64)
    n, k = codes.shape
    scales = np.asarray(scales).astype(np.int64).reshape(n, 1)
    out = np.asarray(values).astype(ff.uint).view(ff.dtype).astype(np.float64)
    decoded = golden.decode(codes, fmt)
    nan_scale = np.broadcast_to(scales == SCALE_NAN, (n, k))
    scaled = ~nan_scale
    finite_code = scaled & np.isfinite(decoded)
    exact = np.ldexp(np.where(finite_code, decoded, 0.0),
                     np.where(scaled, scales - SCALE_BIAS, 0))  # exact in float64
    live = finite_code & (exact != 0)
    tiny = live & (np.abs(exact) < _min_normal(ff))
    bins = {
        "normal": live & np.isfinite(out) & (np.abs(out) >= _min_normal(ff)),
        "subnormal_result": live & (out != 0) & (np.abs(out) < _min_normal(ff)),
        "subnormal_rounding": tiny & (out != exact),
        "overflow": live & np.isinf(out),
        "nan_scale": nan_scale,
        "zero_code": scaled & (decoded == 0),
        "neg_zero_code": scaled & (decoded == 0) & np.signbit(decoded),
        "nan_code": scaled & np.isnan(decoded),
        "inf_code": scaled & np.isinf(decoded),
        "int_min_code": (scaled & (codes == 1 << (fmt.bits - 1)) if fmt.is_int
                         else np.zeros_like(live)),
    }
    return {"element": {b: int(m.sum()) for b, m in bins.items() if m.any()}}
