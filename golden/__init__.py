"""golden: the bit-exact reference model of the OCP Microscaling (MX) v1.0 numerics.

The single source of numerical truth for this project (see ``docs/numerics.md``)::

    import numpy as np, golden
    mx = golden.quantize(np.random.randn(4, 64).astype(np.float32), "fp8_e4m3")
    mx.scales, mx.codes          # E8M0 scale codes, element codes (uint8)
    golden.dequantize(mx)        # back to float32
    golden.dot(mx, mx)           # fp32 dot products over the block axis
"""

from .codec import decode, decode_scale, decode_table, encode, encode_scale
from .dot import dot, dot_blocks
from .formats import (
    BF16,
    FORMATS,
    FP4_E2M1,
    FP6_E2M3,
    FP6_E3M2,
    FP8_E4M3,
    FP8_E5M2,
    FP16,
    FP32,
    FP64,
    INT8,
    ElementFormat,
    FloatFormat,
    Rounding,
    ScaleMode,
    element_format,
    float_format,
)
from .mx import MXArray, dequantize, quantize

__all__ = [
    "quantize", "dequantize", "dot", "dot_blocks", "MXArray",
    "encode", "decode", "encode_scale", "decode_scale", "decode_table",
    "ElementFormat", "FloatFormat", "ScaleMode", "Rounding", "element_format", "float_format",
    "FORMATS", "FP8_E4M3", "FP8_E5M2", "FP6_E3M2", "FP6_E2M3", "FP4_E2M1", "INT8",
    "FP32", "BF16", "FP16", "FP64",
]
