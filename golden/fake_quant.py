"""Fake quantization: quantize and dequantize in one call, in the input's dtype and shape.

The operation QAT and PTQ tools run on weights and activations (AMD Quark's MXFixNeuron,
pychop's ``mx_quantize``): the values an MX tensor holds, as an ordinary array.
"""

from __future__ import annotations

import numpy as np

from .codec import decode_scale, decode_table
from .interop import array_kind, from_numpy, to_numpy
from .mx import MXArray, dequantize, quantize

__all__ = ["fake_quantize", "exact_values"]


def exact_values(mx: MXArray) -> np.ndarray:
    """The exact value of every element of ``mx`` as float64 (original shape; NaN for NaN
    codes and NaN blocks).  Every MX value fits float64 exactly."""
    codes, scales = mx.blocks()
    if mx.scale_format.name != "e8m0":  # NVFP4: e2m1 * f(P * s), exact in float64
        ps = mx.scale_format.decode(scales).astype(np.float32)
        scale = ps if mx.tensor_scale is None else (ps * mx.tensor_scale).astype(np.float32)
    else:
        scale = decode_scale(scales)
    with np.errstate(invalid="ignore", over="ignore"):
        v = decode_table(mx.fmt)[codes] * scale.astype(np.float64)[..., None]
    v = v.reshape(*scales.shape[:-1], -1)[..., : mx.shape[mx.axis]]
    return np.ascontiguousarray(np.moveaxis(v, -1, mx.axis))


def fake_quantize(x, fmt, *, block_size=None, axis=-1, scale_mode="floor", rounding="rne",
                  random=None, random_bits=8, int8_range="symmetric", like=None):
    """``dequantize(quantize(x, ...))`` in ``x``'s dtype, shape and array type.

    Parameters
    ----------
    x : array_like, torch.Tensor or jax.Array
        float32, bfloat16, float16 or float64.
    fmt, block_size, axis, scale_mode, rounding, random, random_bits, int8_range
        As :func:`golden.quantize`.
    like : {None, "numpy", "torch", "jax"} or array, optional
        The array type of the result; ``None`` returns ``x``'s type (a torch tensor on ``x``'s
        device, a JAX array, or numpy).

    Returns
    -------
    array
        fp32, bf16 and fp16 inputs: bit for bit ``golden.dequantize(golden.quantize(x, ...),
        x.dtype)`` (every NaN the canonical quiet NaN).  float64 inputs: the exact values
        (:func:`exact_values`; dequantize writes no float64).
    """
    a = to_numpy(x)
    mx = quantize(a, fmt, block_size=block_size, axis=axis, scale_mode=scale_mode,
                  rounding=rounding, random=random, random_bits=random_bits,
                  int8_range=int8_range)
    out = exact_values(mx) if a.dtype == np.float64 else dequantize(mx, a.dtype)
    return from_numpy(out, x if like is None and array_kind(x) != "numpy" else like)
