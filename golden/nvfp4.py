"""NVFP4: fp4 e2m1 elements, a UE4M3 block scale and an optional fp32 tensor scale.

The numerics are docs/numerics.md's NVFP4 section, bit for bit with torchao 0.18's
``nvfp4_quantize`` (``recipe="torchao"``) or TransformerEngine's reference quantizer
(``recipe="te"``).  Every step is one IEEE fp32 operation (numpy float32 arithmetic rounds each
operation to nearest even and keeps subnormals), the scale cast is :meth:`UE4M3.encode
<golden.scale_format.ScaleFormat.encode>` and the element cast golden's own e2m1 RNE
(:func:`golden.encode`).
"""

from __future__ import annotations

import operator

import ml_dtypes
import numpy as np

from .codec import decode_table, encode
from .format_names import FP4_E2M1
from .interop import to_numpy
from .mx import MXArray, check_block_size
from .scale_format import UE4M3

__all__ = ["NAME", "RECIPES", "is_nvfp4", "check_tensor_scale", "dynamic_tensor_scale",
           "te_encode_scale", "quantize_blocks", "quantize_nvfp4", "dequantize_nvfp4",
           "describe", "round_to_output", "TENSOR_SCALE_MIN", "TENSOR_SCALE_MAX"]

#: The name :func:`golden.quantize` takes for this format.
NAME = "nvfp4"
#: The quantization recipes.
RECIPES = ("torchao", "te")
#: The range of a given tensor scale P: f(1/P) / s and P * s stay finite fp32 normals for every
#: finite UE4M3 scale s in [2^-6, 448].
TENSOR_SCALE_MIN, TENSOR_SCALE_MAX = 2.0 ** -120, 2.0 ** 119

_F32 = np.float32
_SIX, _E4M3_MAX, _CLAMP_LO = _F32(6.0), _F32(448.0), _F32(2.0 ** -6)
_AMAX_DIV = _F32(2688.0)  # 448 * 6, exact
_FLT_MAX = np.finfo(np.float32).max


def is_nvfp4(fmt) -> bool:
    """True when ``fmt`` names NVFP4 (``"nvfp4"``, any case)."""
    return isinstance(fmt, str) and fmt.strip().lower() == NAME


def check_tensor_scale(tensor_scale, recipe):
    """Validate ``tensor_scale`` and ``recipe`` (one-line errors); returns
    ``(None | "dynamic" | np.float32, recipe)``."""
    if recipe not in RECIPES:
        raise ValueError(f"unknown recipe {recipe!r}; expected 'torchao' or 'te'")
    if isinstance(tensor_scale, str):
        if tensor_scale != "dynamic":
            raise ValueError(f"tensor_scale must be None, a float or 'dynamic', got "
                             f"{tensor_scale!r}")
        return "dynamic", recipe
    if recipe == "te":
        raise ValueError("recipe='te' computes its tensor scale from the data (TransformerEngine"
                         "'s global amax): pass tensor_scale='dynamic'")
    if tensor_scale is None:
        return None, recipe
    if isinstance(tensor_scale, bool) or not isinstance(tensor_scale, (int, float, np.floating,
                                                                      np.integer)):
        raise TypeError(f"tensor_scale must be None, a float or 'dynamic', got "
                        f"{type(tensor_scale).__name__}")
    p = float(tensor_scale)
    if not TENSOR_SCALE_MIN <= p <= TENSOR_SCALE_MAX or float(_F32(p)) != p:
        raise ValueError(f"tensor_scale must be an fp32 value in [2^-120, 2^119] (exactly "
                         f"representable in float32), got {tensor_scale!r}")
    return _F32(p), recipe


def dynamic_tensor_scale(x32: np.ndarray, recipe: str) -> np.float32:
    """The dynamic tensor scale P (a decode scale) of fp32 data, from the amax ``A`` of its
    finite elements: torchao ``P = max(f(A / 2688), 2^-120)``; TE ``P = f(1 / S)`` with
    TE's encode scale ``S`` (:func:`te_encode_scale`)."""
    a = np.abs(x32[np.isfinite(x32)])
    amax = _F32(a.max()) if a.size else _F32(0.0)
    if recipe == "torchao":
        return max(_F32(amax / _AMAX_DIV), _F32(TENSOR_SCALE_MIN))
    return _F32(_F32(1.0) / te_encode_scale(amax))


def te_encode_scale(amax) -> np.float32:
    """TransformerEngine's global encode scale ``S = f(2688 / A)``; ``FLT_MAX`` where that is
    Inf (``A = 0``), 1 where it is 0."""
    with np.errstate(divide="ignore", over="ignore"):
        s = _F32(_AMAX_DIV / _F32(amax))
    s = min(s, _FLT_MAX)
    return _F32(1.0) if s == 0 else _F32(s)


def quantize_blocks(x32: np.ndarray, p, recipe: str, te_s=None):
    """Quantize fp32 blocks ``(rows, k)`` (non-finite blocks excluded by the caller: they are
    all-zero here and overwritten).  ``p`` is the tensor scale (torchao: None for single
    level); ``te_s`` TE's encode scale S (``p`` is then ``f(1 / S)``).

    Returns (UE4M3 scale bytes ``(rows,)``, e2m1 codes ``(rows, k)``).
    """
    with np.errstate(divide="ignore", over="ignore", invalid="ignore", under="ignore"):
        amax = np.max(np.abs(x32), axis=1)
        if recipe == "torchao":
            b = amax / _SIX
            if p is not None:
                b = b / p
            s = UE4M3.encode(np.clip(b, _CLAMP_LO, _E4M3_MAX).astype(_F32))
            sv = UE4M3.decode(s).astype(_F32)
            num = _F32(1.0) if p is None else _F32(_F32(1.0) / p)
            r = num / sv
        else:
            mult = _F32(te_s * _F32(_F32(1.0) / _SIX))
            d = np.minimum(amax * mult, _FLT_MAX)
            s = UE4M3.encode(np.minimum(d, _E4M3_MAX).astype(_F32))
            sv = UE4M3.decode(s).astype(_F32)
            r = np.minimum(_F32(1.0) / (sv * p), _FLT_MAX)
        y = np.clip(x32 * r[:, None].astype(_F32), -_SIX, _SIX).astype(_F32)
    if recipe == "te":
        y = np.where(y == 0, _F32(0.0), y)  # TE's cast compares values: -0 gives code 0x0
    return s, encode(y, FP4_E2M1)


def _input_f32(x) -> np.ndarray:
    if isinstance(x, MXArray):
        raise TypeError("input is already an MXArray; dequantize it first")
    a = to_numpy(x)
    if a.dtype not in (np.dtype(np.float32), np.dtype(np.float16),
                       np.dtype(ml_dtypes.bfloat16)):
        raise TypeError(f"nvfp4 takes float32, bfloat16 or float16 data, not dtype {a.dtype}")
    if a.ndim == 0:
        raise ValueError("quantize needs at least a 1-d array")
    return a.astype(np.float32)  # exact widening


def quantize_nvfp4(x, *, block_size=16, axis=-1, tensor_scale=None, recipe="torchao"):
    """NVFP4 quantization (docs/numerics.md, NVFP4): :func:`golden.quantize` with ``"nvfp4"``.

    Returns an :class:`~golden.MXArray` with fp4_e2m1 ``codes``, UE4M3 ``scales`` and the fp32
    ``tensor_scale`` P (None for single level).  A block holding a NaN or Inf gets scale 0x7F
    (NaN) and codes 0.
    """
    k = check_block_size(block_size)
    p, recipe = check_tensor_scale(tensor_scale, recipe)
    a = _input_f32(x)
    ax = operator.index(axis)
    if not -a.ndim <= ax < a.ndim:
        raise ValueError(f"axis {axis} is out of range for a {a.ndim}-d array")
    ax %= a.ndim
    v = np.moveaxis(a, ax, -1)
    nb = -(-v.shape[-1] // k)
    v = np.pad(v, [(0, 0)] * (v.ndim - 1) + [(0, nb * k - v.shape[-1])])
    lead = v.shape[:-1]
    blocks = v.reshape(-1, k)
    bad = ~np.all(np.isfinite(blocks), axis=1)
    te_s = None
    if isinstance(p, str):  # "dynamic"
        if recipe == "te":
            fin = blocks[np.isfinite(blocks)]
            te_s = te_encode_scale(np.max(np.abs(fin)) if fin.size else 0.0)
            p = np.float32(np.float32(1.0) / te_s)
        else:
            p = dynamic_tensor_scale(blocks, recipe)
    scales, codes = quantize_blocks(np.where(bad[:, None], np.float32(0), blocks), p, recipe,
                                    te_s)
    scales[bad], codes[bad] = UE4M3.nan_code, 0
    codes = np.moveaxis(codes.reshape(*lead, nb * k), -1, ax)
    scales = np.moveaxis(scales.reshape(*lead, nb), -1, ax)
    return MXArray(np.ascontiguousarray(scales), np.ascontiguousarray(codes), FP4_E2M1, k, ax,
                   a.shape, UE4M3, p)


def round_to_output(v64: np.ndarray, dt) -> np.ndarray:
    """One RNE of exact float64 values into float32, bfloat16 or float16 (through fp32 with
    round-to-odd, which has two more bits than either narrow type, so no double rounding)."""
    with np.errstate(over="ignore"):
        f = v64.astype(np.float32)
    if dt == np.dtype(np.float32):
        return f
    inexact = np.isfinite(f) & (f.astype(np.float64) != v64) & ~np.isnan(v64)
    bits = f.view(np.uint32)
    bits = np.where(inexact & (bits & 1 == 0),
                    np.where(np.abs(f.astype(np.float64)) > np.abs(v64), bits - 1, bits + 1),
                    bits).astype(np.uint32)
    with np.errstate(over="ignore"):
        return bits.view(np.float32).astype(dt)


def dequantize_nvfp4(mx: MXArray, dt) -> np.ndarray:
    """NVFP4 to ``dt``: ``e2m1(code) * f(P * s)`` rounded once (P = 1 for single level); a NaN
    scale gives the canonical quiet NaN."""
    codes, scales = mx.blocks()
    sv = UE4M3.decode(scales).astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):  # f(P * s) may overflow to Inf
        ps = sv if mx.tensor_scale is None else (sv * mx.tensor_scale).astype(np.float32)
        v = decode_table(FP4_E2M1)[codes] * ps.astype(np.float64)[..., None]  # exact
    out = round_to_output(v, dt)
    out[np.isnan(v)] = np.nan  # numpy's NaN is the canonical quiet NaN of each type
    out = out.reshape(*scales.shape[:-1], -1)[..., : mx.shape[mx.axis]]
    return np.ascontiguousarray(np.moveaxis(out, -1, mx.axis))


def describe(mx: MXArray) -> str:
    """The one-line repr of an NVFP4 MXArray."""
    v = UE4M3.table()[mx.scales.astype(np.int64)]
    fin = v[~np.isnan(v)]
    rng = f"scales {fin.min():g}..{fin.max():g}" if fin.size else "no finite scale"
    nan = int(np.count_nonzero(np.isnan(v)))
    p = "" if mx.tensor_scale is None else f", tensor_scale={float(mx.tensor_scale)!r}"
    return (f"MXArray(nvfp4, shape={mx.shape}, block_size={mx.block_size}, axis={mx.axis}, "
            f"{v.size} block{'s' if v.size != 1 else ''}, {rng}{p}"
            + (f", {nan} NaN block{'s' if nan != 1 else ''}" if nan else "") + ")")
