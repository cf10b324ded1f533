"""NVFP4 test vectors for ``python -m golden vectors --format nvfp4`` (see :mod:`golden.vectors`).

The same files as the MX sets with UE4M3 scale bytes; a two-level quantizer or dequantizer set
adds ``in_tensor_scale`` (the fp32 P of the set, one tensor) and ``in_tensor_scale_recip``
(``f(1/P)``, the run-time input a unit multiplies by).  Dot lines are one block step each,
``f(c + T)`` (docs/numerics.md section 7): the tensor scales are the epilogue's, not the step's.
"""

from __future__ import annotations

import numpy as np

from . import stimulus as S
from .format_names import FP4_E2M1
from .formats import float_format
from .mx import MXArray, quantize
from .nvfp4 import check_tensor_scale, is_nvfp4
from .nvfp4_dot import dot_nvfp4
from .scale_format import UE4M3

__all__ = ["nvfp4_set", "nvfp4_quantizer_vectors", "nvfp4_dequantizer_vectors",
           "nvfp4_dot_vectors", "directed_nvfp4_blocks"]


def directed_nvfp4_blocks(k: int, ff) -> np.ndarray:
    """NVFP4 corner blocks as raw ``ff`` bits: each e2m1 tie at scale 1, a tie moved by the
    fp32 product (scale 0x0F), saturation at 6, the clamps at 2^-6 and 448, zero, -0."""
    s = np.float32(15 * 2**-9)
    rows = [[6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.25, -0.75, -1.25, -1.75, -2.5, -3.5,
             -5.0, -0.0],
            [6 * s, 1.25 * s, np.nextafter(np.float32(0.75) * s, np.float32(0))],
            [6.375, -6.375, 6.0, 5.9], [1e-6, -3e-7], [3e4, 1.0, -2.0], [0.0], [-0.0]]
    out = np.zeros((len(rows), k), np.float32)
    for i, r in enumerate(rows):
        r = np.asarray(r, np.float32)[:k]
        out[i, :len(r)] = r
    return out.astype(ff.dtype).view(ff.uint)


def nvfp4_quantizer_vectors(rng, count, k, input_format, tensor_scale, recipe, field):
    """(params, fields, formats) of an NVFP4 quantizer set; ``field`` is vectors.Field."""
    ff = float_format(input_format)
    directed = np.concatenate([S.quantizer_directed_blocks(k, ff, FP4_E2M1, rng),
                               directed_nvfp4_blocks(k, ff)])
    take = min(len(directed), count // 2)
    raw = np.concatenate([directed[rng.permutation(len(directed))[:take]],
                          S.quantizer_random_blocks(rng, count - take, k, ff)])
    raw = raw[rng.permutation(len(raw))]
    mx = quantize(raw.view(ff.dtype), "nvfp4", block_size=k, tensor_scale=tensor_scale,
                  recipe=recipe)
    fields = [field("in_data", "input", k, ff.bits, raw,
                    f"k={k} {ff.name} values (IEEE bit patterns)")]
    fields += _tensor_scale_fields(mx.tensor_scale, len(raw), field)
    fields += [field("expected_scale", "expected", 1, 8, mx.scales.reshape(-1, 1),
                     "UE4M3 scale byte (0x7F NaN)"),
               field("expected_codes", "expected", k, 4, mx.codes, "fp4_e2m1 element codes")]
    params = {"format": "nvfp4", "block_size": k, "input": ff.name, "recipe": recipe,
              "tensor_scale": _p(mx.tensor_scale), "tensor_scale_mode": _mode(tensor_scale)}
    return params, fields, {"format": FP4_E2M1.spec}


def nvfp4_dequantizer_vectors(rng, count, k, output_format, tensor_scale, field):
    """(params, fields, formats) of an NVFP4 dequantizer set (every scale byte x every code
    among the directed rows)."""
    if isinstance(tensor_scale, str):
        raise ValueError("a dequantizer set takes --tensor-scale as a number (P), not dynamic")
    ff = float_format(output_format)
    s_all = np.repeat(np.arange(0x80), 2)
    c_all = np.resize(np.arange(16), (len(s_all), k))
    c_all[1::2] = np.resize(np.arange(15, -1, -1), (len(s_all) // 2, k))
    take = min(len(s_all), count // 2)
    pick = rng.permutation(len(s_all))[:take]
    scales = np.concatenate([s_all[pick], rng.integers(0, 0x80, count - take)]).astype(np.uint8)
    codes = np.concatenate([c_all[pick], rng.integers(0, 16, (count - take, k))]).astype(np.uint8)
    perm = rng.permutation(count)
    scales, codes = scales[perm], codes[perm]
    mx = MXArray(scales.reshape(-1, 1), codes, FP4_E2M1, k, 1, codes.shape, UE4M3,
                 tensor_scale)
    out = mx.dequantize(ff.dtype).view(ff.uint)
    fields = [field("in_scale", "input", 1, 8, scales.reshape(-1, 1), "UE4M3 scale byte"),
              field("in_codes", "input", k, 4, codes, "fp4_e2m1 element codes")]
    fields += _tensor_scale_fields(mx.tensor_scale, count, field)
    fields.append(field("expected_data", "expected", k, ff.bits, out,
                        f"{ff.name} e2m1(code) * f(P * s), one RNE (every NaN canonical)"))
    params = {"format": "nvfp4", "block_size": k, "output": ff.name,
              "tensor_scale": _p(mx.tensor_scale)}
    return params, fields, {"format": FP4_E2M1.spec}


def nvfp4_dot_vectors(rng, count, k, field):
    """(params, fields, formats) of an NVFP4 dot set: one block step ``f(c + T)`` per line."""
    ca = rng.integers(0, 16, (count, k)).astype(np.uint8)
    cb = rng.integers(0, 16, (count, k)).astype(np.uint8)
    sa = rng.integers(0, 0x7F, count).astype(np.uint8)
    sb = rng.integers(0, 0x7F, count).astype(np.uint8)
    nan = rng.random(count) < 0.02
    sa[nan] = 0x7F
    c = S.random_fp32(rng, count)
    a = MXArray(sa.reshape(-1, 1), ca, FP4_E2M1, k, 1, ca.shape, UE4M3)
    b = MXArray(sb.reshape(-1, 1), cb, FP4_E2M1, k, 1, cb.shape, UE4M3)
    res = dot_nvfp4(a, b, c.view(np.float32)).view(np.uint32)
    fields = [field("in_scale_a", "input", 1, 8, sa[:, None], "UE4M3 scale of A"),
              field("in_codes_a", "input", k, 4, ca, "fp4_e2m1 codes of A"),
              field("in_scale_b", "input", 1, 8, sb[:, None], "UE4M3 scale of B"),
              field("in_codes_b", "input", k, 4, cb, "fp4_e2m1 codes of B"),
              field("in_c", "input", 1, 32, c[:, None], "fp32 accumulator input c"),
              field("expected_result", "expected", 1, 32, res[:, None],
                    "fp32 RNE(c + sa*sb * sum a_i*b_i); NaN is 0x7FC00000")]
    return ({"format_a": "nvfp4", "format_b": "nvfp4", "block_size": k}, fields,
            {"format_a": FP4_E2M1.spec, "format_b": FP4_E2M1.spec})


def _tensor_scale_fields(p, n, field):
    if p is None:
        return []
    recip = np.float32(np.float32(1.0) / p)
    return [field("in_tensor_scale", "input", 1, 32,
                  np.full((n, 1), np.float32(p).view(np.uint32), np.uint64),
                  "fp32 tensor scale P (the same on every line: one tensor)"),
            field("in_tensor_scale_recip", "input", 1, 32,
                  np.full((n, 1), recip.view(np.uint32), np.uint64), "fp32 f(1 / P)")]


def _p(p):
    return None if p is None else float(p)


def _mode(tensor_scale):
    return "none" if tensor_scale is None else "dynamic" if tensor_scale == "dynamic" else "given"


def nvfp4_set(unit, rng, count, fmt, fmt_b, k, input_format, output_format, tensor_scale,
              recipe, mx_modes, field):
    """Validate an NVFP4 request and build its set: (params, fields, formats, scale_format)."""
    if not is_nvfp4(fmt) or (fmt_b is not None and not is_nvfp4(fmt_b)):
        raise ValueError("the NVFP4 dot takes nvfp4 x nvfp4 only (--format nvfp4 and no other "
                         "--format-b)")
    if mx_modes != ("rne", "floor"):
        raise ValueError("nvfp4 has no --rounding or --scale-mode (its rules are fixed)")
    if isinstance(tensor_scale, str) and tensor_scale != "dynamic":
        try:
            tensor_scale = float(tensor_scale)
        except ValueError:
            raise ValueError(f"--tensor-scale must be a number or 'dynamic', got "
                             f"{tensor_scale!r}") from None
    check_tensor_scale(tensor_scale, recipe)
    if unit == "quantizer":
        out = nvfp4_quantizer_vectors(rng, count, k, input_format, tensor_scale, recipe, field)
    elif unit == "dequantizer":
        out = nvfp4_dequantizer_vectors(rng, count, k, output_format, tensor_scale, field)
    else:
        if tensor_scale is not None:
            raise ValueError("a dot set is one block step per line: the tensor scales are "
                             "the epilogue's (no --tensor-scale)")
        out = nvfp4_dot_vectors(rng, count, k, field)
    return (*out, UE4M3.spec)
