"""Quantization error statistics of an MX tensor against the data it was quantized from.

Per tensor and per block, in exact float64 arithmetic on the input and on the MX values, like
pychop's ``statistics()``: MSE, SQNR, maximum absolute and relative error, saturated elements,
zero and NaN blocks, and the blocks whose shared exponent was clamped to the E8M0 range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .fake_quant import exact_values
from .formats import SCALE_EMAX, SCALE_EMIN, ScaleMode
from .interop import to_numpy
from .mx import MXArray

__all__ = ["QuantizationStats", "quantization_error"]


@dataclass(frozen=True)
class QuantizationStats:
    """What quantization did to a tensor; see :func:`quantization_error` for the definitions.

    Per-tensor members are numbers; ``block_*`` members are arrays of the MXArray's
    ``scales.shape`` (NaN-scale blocks hold NaN errors and 0 saturated elements).
    """

    elements: int
    blocks: int
    mse: float
    sqnr_db: float
    max_abs_error: float
    max_rel_error: float
    saturated: int
    zero_blocks: int
    nan_blocks: int
    scale_clamped_low: int
    scale_clamped_high: int
    block_mse: np.ndarray
    block_max_abs_error: np.ndarray
    block_saturated: np.ndarray
    block_clamp: np.ndarray  #: -1 clamped to 2^-127, +1 clamped to 2^127, 0 otherwise

    def as_dict(self) -> dict:
        """The per-tensor figures as a plain dict (JSON-ready)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__
                if not k.startswith("block_")}

    def __str__(self) -> str:
        return (f"{self.elements} elements in {self.blocks} blocks: MSE {self.mse:.6g}, "
                f"SQNR {self.sqnr_db:.2f} dB, max abs error {self.max_abs_error:.6g}, "
                f"max rel error {self.max_rel_error:.6g}, {self.saturated} saturated, "
                f"{self.zero_blocks} zero / {self.nan_blocks} NaN blocks, scale clamped "
                f"{self.scale_clamped_low} low / {self.scale_clamped_high} high")


def _blocked(v: np.ndarray, mx: MXArray, fill) -> np.ndarray:
    """``v`` (original shape) as ``scales.shape + (block_size,)``, padding with ``fill``."""
    v = np.moveaxis(v, mx.axis, -1)
    pad = mx.n_blocks * mx.block_size - v.shape[-1]
    v = np.pad(v, [(0, 0)] * (v.ndim - 1) + [(0, pad)], constant_values=fill)
    return v.reshape(*v.shape[:-1], mx.n_blocks, mx.block_size)


def _clamps(amax: np.ndarray, mx: MXArray, scale_mode: str) -> np.ndarray:
    """-1/0/+1 per block: the shared exponent rule's e below -127 / in range / above 127."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if ScaleMode(scale_mode) is ScaleMode.FLOOR:  # e = floor(log2(amax)) - emax
            _, ex = np.frexp(amax)
            e = ex - 1 - mx.fmt.emax
            low, high = e < SCALE_EMIN, e > SCALE_EMAX
        else:  # e = ceil(log2(amax / max_normal)), compared exactly against the bounds
            maxn = float(mx.fmt.max_normal)
            low = amax <= math.ldexp(maxn, SCALE_EMIN - 1)
            high = amax > math.ldexp(maxn, SCALE_EMAX)
    ok = np.isfinite(amax) & (amax > 0)
    return np.where(ok & low, -1, np.where(ok & high, 1, 0)).astype(np.int8)


def quantization_error(x, mx: MXArray, *, scale_mode="floor") -> QuantizationStats:
    """Error statistics of ``mx`` against ``x``, the data it was quantized from.

    Parameters
    ----------
    x : array_like, torch.Tensor or jax.Array
        The quantizer's input (its shape must be ``mx.shape``).
    mx : MXArray
    scale_mode : {"floor", "rceil"}
        The rule ``mx``'s scales were chosen by (needed to tell clamped scales).

    Notes
    -----
    With ``x`` and the MX value ``q`` of each element exact in float64, over the elements of
    the blocks whose scale is not NaN (padding excluded):

    * ``mse = mean((x - q)^2)``; ``sqnr_db = 10 log10(sum x^2 / sum (x - q)^2)`` (``inf`` when
      the error is 0);
    * ``max_abs_error = max |x - q|``; ``max_rel_error = max |x - q| / |x|`` over ``x != 0``;
    * ``saturated``: elements with ``|x| > max_normal * 2^e`` (``e`` the block's exponent):
      clamped to the largest finite value;
    * ``zero_blocks``: blocks whose elements are all zero; ``nan_blocks``: NaN scale (the block
      held a NaN or an Inf);
    * ``scale_clamped_low`` / ``_high``: blocks whose exponent rule gave ``e < -127`` /
      ``e > 127`` and was clamped to the E8M0 range.
    """
    if not isinstance(mx, MXArray):
        raise TypeError(f"quantization_error takes an MXArray, got {type(mx).__name__}")
    if mx.scale_format.name != "e8m0":
        raise ValueError("quantization_error covers E8M0-scaled arrays, not nvfp4")
    a = to_numpy(x)
    if a.shape != mx.shape:
        raise ValueError(f"x has shape {a.shape}, but the MXArray holds shape {mx.shape}")
    if a.dtype.kind in "biucOUS":  # (ml_dtypes' bfloat16 has kind "V")
        raise TypeError(f"x must be a float array, got dtype {a.dtype}")
    if scale_mode not in ("floor", "rceil"):
        raise ValueError(f"unknown scale_mode {scale_mode!r}; expected 'floor' or 'rceil'")
    with np.errstate(invalid="ignore", over="ignore"):
        xb = _blocked(a.astype(np.float64), mx, 0.0)
        qb = _blocked(exact_values(mx), mx, 0.0)
        valid = _blocked(np.ones(mx.shape, bool), mx, False)
        _, scales = mx.blocks()
        nan_block = scales == 255
        err = np.where(valid & ~nan_block[..., None], xb - qb, 0.0)
        sq = err * err
        live = valid & ~nan_block[..., None]
        n_live = live.sum(axis=-1)
        block_mse = np.where(nan_block, np.nan, sq.sum(axis=-1) / np.maximum(n_live, 1))
        block_max = np.where(nan_block, np.nan, np.abs(err).max(axis=-1))
        e = scales.astype(np.int64) - 127
        limit = np.ldexp(float(mx.fmt.max_normal), np.where(nan_block, 0, e))[..., None]
        sat = live & (np.abs(xb) > limit)
        amax = np.where(nan_block, np.nan, np.abs(np.where(valid, xb, 0.0)).max(axis=-1))
        rel = np.where(live & (xb != 0), np.abs(err) / np.where(xb != 0, np.abs(xb), 1.0), 0.0)
        total_err = float(sq.sum())
        signal = float(np.where(live, xb * xb, 0.0).sum())
    count = int(live.sum())
    sqnr = math.inf if total_err == 0 else 10 * math.log10(signal / total_err)
    clamp = _clamps(amax, mx, scale_mode)
    return QuantizationStats(
        elements=int(np.prod(mx.shape)), blocks=int(scales.size),
        mse=total_err / count if count else math.nan, sqnr_db=sqnr,
        max_abs_error=float(np.abs(err).max(initial=0.0)),
        max_rel_error=float(rel.max(initial=0.0)),
        saturated=int(sat.sum()), zero_blocks=int(np.count_nonzero(~nan_block & (amax == 0))),
        nan_blocks=int(nan_block.sum()), scale_clamped_low=int((clamp < 0).sum()),
        scale_clamped_high=int((clamp > 0).sum()),
        block_mse=np.moveaxis(block_mse, -1, mx.axis),
        block_max_abs_error=np.moveaxis(block_max, -1, mx.axis),
        block_saturated=np.moveaxis(sat.sum(axis=-1), -1, mx.axis),
        block_clamp=np.moveaxis(clamp, -1, mx.axis))
