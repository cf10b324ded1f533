"""int8 options that reproduce the seeds' MXINT8 (AMD Quark, pychop): golden only, not the RTL.

The OCP rules (and every RTL unit) write int8 codes in the symmetric range [-127, 127] and round
with the runtime modes rne, rna, rtz and stochastic.  Two seeds differ, and a model calibrated
with them may need their exact codes:

* ``rounding="rnu"``: round to nearest, ties toward +Inf (``floor(q + 1/2)``): Quark's
  integer ``rounding_mode=1``.  So ``2.5 -> 3`` but ``-2.5 -> -2`` (in units of 2^-6).
* ``int8_range="asymmetric"``: saturate to [-128, 127] (code 0x80 = -128 * 2^-6 = -2.0 is
  written), as pychop and Quark's MXFixNeuron clip.  Only a negative element whose scaled
  magnitude rounds to 2.0 can reach it.

The shared scale is the OCP one (the options change element codes only).  These modes run in
numpy here (exact float64 arithmetic on the scaled input), not in the numba kernels.
"""

from __future__ import annotations

import numpy as np

from .formats import INT8, element_format

__all__ = ["SEED_ROUNDINGS", "INT8_RANGES", "needs_seed_path", "int8_codes"]

#: Rounding modes golden offers only for int8 seed compatibility (not runtime RTL modes).
SEED_ROUNDINGS = ("rnu",)
#: ``int8_range`` values: the OCP range [-127, 127], or [-128, 127].
INT8_RANGES = ("symmetric", "asymmetric")


def needs_seed_path(fmt, rounding, int8_range, random) -> bool:
    """Validate the seed options; True when they ask for more than the OCP int8 rules."""
    if int8_range not in INT8_RANGES:
        raise ValueError(f"int8_range must be 'symmetric' ([-127, 127], the OCP range) or "
                         f"'asymmetric' ([-128, 127], as pychop and Quark), got {int8_range!r}")
    seed = rounding in SEED_ROUNDINGS or int8_range == "asymmetric"
    if not seed:
        return False
    if element_format(fmt) is not INT8:
        raise ValueError(f"rounding={rounding!r} and int8_range={int8_range!r} are int8 "
                         f"options (the seeds' MXINT8); {element_format(fmt).name} rounds "
                         f"with rne, rna, rtz or stochastic")
    if rounding == "stochastic" or random is not None:
        raise ValueError("int8_range='asymmetric' does not combine with stochastic rounding "
                         "(random= is for rounding='stochastic')")
    return True


def _round(q: np.ndarray, rounding: str) -> np.ndarray:
    """Round exact float64 values to integers (every step exact in float64)."""
    if rounding == "rne":
        return np.rint(q)
    if rounding == "rtz":
        return np.trunc(q)
    if rounding == "rna":
        m = np.abs(q)
        n = np.floor(m)
        return np.copysign(n + (m - n >= 0.5), q)  # m - n is exact (same binade or below)
    if rounding == "rnu":
        n = np.floor(q)
        return n + (q - n >= 0.5)
    raise ValueError(f"unknown rounding {rounding!r}; expected one of rne, rna, rtz, "
                     f"stochastic, or rnu (int8 only)")


def int8_codes(x: np.ndarray, scales: np.ndarray, *, block_size: int, axis: int, rounding: str,
               int8_range: str) -> np.ndarray:
    """int8 codes (uint8, the MXArray's padded layout) of ``x`` at the given E8M0 ``scales``.

    ``x`` is the quantizer's numpy input (float32/bfloat16/float16/float64), ``axis``
    non-negative; NaN-scale blocks get code 0, as in the OCP rules.
    """
    v = np.moveaxis(np.asarray(x).astype(np.float64), axis, -1)
    n = v.shape[-1]
    pad = (-n) % block_size
    if pad:
        v = np.pad(v, [(0, 0)] * (v.ndim - 1) + [(0, pad)])
    s = np.moveaxis(scales, axis, -1).astype(np.int64)
    nan_block = np.repeat(s == 255, block_size, axis=-1)
    e = np.repeat(np.where(s == 255, 0, s - 127), block_size, axis=-1)
    with np.errstate(invalid="ignore"):
        q = np.ldexp(np.where(nan_block, 0.0, v), 6 - e)  # in units of 2^-6: exact
        lo = -128 if int8_range == "asymmetric" else -127
        k = np.clip(_round(q, rounding), lo, 127)
    codes = k.astype(np.int64).astype(np.uint8)  # two's complement byte
    return np.ascontiguousarray(np.moveaxis(codes, -1, axis))
