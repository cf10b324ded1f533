"""An exact reference for the MX numerics contract, written from scratch on Fractions.

This package is the *independent* oracle the golden-model tests compare against.  It restates
the numerics contract (``docs/numerics.md``, sections 1-6) as literally as possible,
in plain Python:

* every value is a :class:`fractions.Fraction` (or one of the markers ``NAN``/``INF``); no
  floating-point operation touches a value on its way to a result;
* element formats are described here again from the contract's definitions (E, M, bias and
  the special-value convention, or a two's-complement width; not imported from ``golden``):
  every value, emax and max normal comes from decoding codes by those definitions, and an
  element is encoded by *searching the format's value table*;
* the final fp32 rounding of the dot product is this package's own RNE on Fractions.

It is deliberately slow and simple: per element a handful of exact operations, so a reviewer
can check it line by line against the contract.

Modules: :mod:`.formats` (element formats and IEEE inputs), :mod:`.mx` (quantization, the block
dot product and its chaining, the matrix product), :mod:`.gpu` (the tcgen05 accumulation
modes) and :mod:`.nvfp4` (the NVFP4 recipes, dequantization and dot); every public name is
available from the package.
"""

from .formats import (
    EXTRA,
    FORMATS,
    INF,
    NAN,
    TWO,
    Fmt,
    ceil_log2,
    code_value,
    decode_code,
    decode_float_bits,
    decode_input,
    encode_magnitude,
    floor_log2,
    fmt_of,
    int_spec,
    max_normal,
    pow2,
    significand,
    spec,
    units_max,
    value_table,
)
from .gpu import (
    GPU_KINDS,
    GPU_NAN,
    rz_fp32_bits,
    tcgen05_chain,
    tcgen05_f4_step,
    tcgen05_f8f6f4_step,
)
from .mx import (
    FP32_QNAN,
    dot_block,
    dot_chain,
    fp32_bits_value,
    matmul,
    product_specials,
    quantize,
    quantize_block,
    rne_float_bits,
    rne_fp32_bits,
    round_to_grid,
    shared_exponent,
)
from .nvfp4 import (
    E2M1,
    F32_INF,
    FLT_MAX,
    UE4M3_MAGS,
    f32,
    f32_div,
    nvfp4_block,
    nvfp4_dequantize_value,
    nvfp4_dot,
    nvfp4_matmul,
    nvfp4_quantize,
    nvfp4_tcgen05_dot,
    nvfp4_tensor_scale,
    ue4m3_code,
    ue4m3_value,
)

__all__ = [
    "TWO", "NAN", "INF", "pow2", "floor_log2", "ceil_log2", "Fmt", "spec", "int_spec",
    "FORMATS", "EXTRA", "fmt_of", "decode_code", "code_value", "value_table", "max_normal",
    "units_max", "significand", "encode_magnitude", "decode_float_bits", "decode_input",
    "shared_exponent", "round_to_grid", "quantize_block", "quantize", "FP32_QNAN",
    "rne_float_bits", "rne_fp32_bits", "fp32_bits_value", "product_specials", "dot_block",
    "dot_chain", "matmul", "GPU_NAN", "GPU_KINDS", "rz_fp32_bits", "tcgen05_f8f6f4_step",
    "tcgen05_f4_step", "tcgen05_chain", "E2M1", "UE4M3_MAGS", "F32_INF", "FLT_MAX", "f32",
    "f32_div", "ue4m3_code", "ue4m3_value", "nvfp4_tensor_scale", "nvfp4_block",
    "nvfp4_quantize", "nvfp4_dequantize_value", "nvfp4_dot", "nvfp4_tcgen05_dot",
    "nvfp4_matmul",
]
