"""golden: the bit-exact reference model of the OCP Microscaling (MX) v1.0 numerics.

The single source of numerical truth for this project (see ``docs/numerics.md``)::

    import numpy as np, golden
    mx = golden.quantize(np.random.randn(4, 64).astype(np.float32), "fp8_e4m3")
    mx.scales, mx.codes          # E8M0 scale codes, element codes (uint8)
    golden.dequantize(mx)        # back to float32
    golden.dot(mx, mx)           # fp32 dot products over the block axis
    golden.fake_quantize(x, "fp4_e2m1")       # quantize + dequantize, x's dtype and shape
    golden.quantization_error(x, mx)          # MSE, SQNR, saturation, clamped scales
    golden.quantize(x, "nvfp4", tensor_scale="dynamic")  # UE4M3 scales, fp32 tensor scale

torch tensors (bfloat16 included) and JAX arrays are taken as they are, and results come back
in the caller's type where asked (``like=``): :mod:`golden.interop`; numpy stays the only
array library golden needs.

Any member of the element-format family works: ``golden.element_format("e3m3")``, ``"int4"``,
``"float8_e4m3"`` or ``golden.ElementFormat(ebits, mbits, convention, bias)``.

The format table (:mod:`golden.formats`: formats, mode ids, E8M0 and IEEE special patterns) is
loaded eagerly and needs only numpy and ml_dtypes.  The codec itself runs on numba kernels,
which load (and JIT-compile on first use) only when one of its functions is first used, so
a tool that needs only the table -- ``python -m hw`` writing Verilog -- never imports numba.
The compiled kernels are cached per user (:mod:`golden.jitcache`), not in the package.
"""

import importlib

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
    NAMED_FORMATS,
    ElementFormat,
    FloatFormat,
    Rounding,
    ScaleMode,
    element_format,
    float_format,
)
from .scale_format import E8M0, UE4M3, ScaleFormat, scale_format

#: The numba-backed public functions, by the submodule that defines them (loaded on first use).
_LAZY = {
    "decode": "codec", "decode_scale": "codec", "decode_table": "codec", "encode": "codec",
    "encode_scale": "codec",
    "dot": "dot_product", "dot_blocks": "dot_product",
    "matmul": "matrix_product", "matmul_path": "matrix_product",
    "MXArray": "mx", "dequantize": "mx", "quantize": "mx",
    "fake_quantize": "fake_quant", "quantization_error": "stats",
    "QuantizationStats": "stats",
}


__all__ = [
    "quantize", "dequantize", "dot", "dot_blocks", "matmul", "matmul_path", "MXArray",
    "fake_quantize", "quantization_error", "QuantizationStats",
    "encode", "decode", "encode_scale", "decode_scale", "decode_table",
    "ElementFormat", "FloatFormat", "ScaleMode", "Rounding", "element_format", "float_format",
    "FORMATS", "NAMED_FORMATS", "FP8_E4M3", "FP8_E5M2", "FP6_E3M2", "FP6_E2M3", "FP4_E2M1", "INT8",
    "FP32", "BF16", "FP16", "FP64",
    "ScaleFormat", "scale_format", "E8M0", "UE4M3",
]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'golden' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
