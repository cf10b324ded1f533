"""Element formats, input formats and the E8M0 scale, described as data.

Every numeric routine in :mod:`golden` (and every RTL unit in :mod:`hw`) is driven by these
descriptions; there is no per-format code.  The element-format family (one type for every
ExMy and intN member, its constants derived from the parameters) lives in
:mod:`golden.element_format`, its names in :mod:`golden.format_names`; both are re-exported
here with the input formats, the rounding and scale modes and the E8M0 constants.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from .element_format import CONVENTIONS, ElementFormat
from .format_names import (
    FORMATS,
    FP4_E2M1,
    FP6_E2M3,
    FP6_E3M2,
    FP8_E4M3,
    FP8_E5M2,
    INT8,
    NAMED_FORMATS,
    element_format,
)

__all__ = [
    "ElementFormat",
    "CONVENTIONS",
    "NAMED_FORMATS",
    "FloatFormat",
    "ScaleMode",
    "Rounding",
    "FORMATS",
    "INPUT_FORMATS",
    "element_format",
    "float_format",
    "FP8_E4M3",
    "FP8_E5M2",
    "FP6_E3M2",
    "FP6_E2M3",
    "FP4_E2M1",
    "INT8",
    "FP32",
    "BF16",
    "FP16",
    "FP64",
    "SCALE_BIAS",
    "SCALE_NAN",
    "SCALE_EMIN",
    "SCALE_EMAX",
    "ROUNDING_IDS",
    "SCALE_MODE_IDS",
]

#: E8M0 scale: value ``2^(s - SCALE_BIAS)``; code ``SCALE_NAN`` (255) is NaN.
SCALE_BIAS = 127
SCALE_NAN = 255
SCALE_EMIN = -127
SCALE_EMAX = 127


class ScaleMode(str, enum.Enum):
    """How the shared exponent is chosen from a block's largest magnitude.

    ``id`` is the encoding of a runtime ``scale_mode`` field (RTL ports, the golden kernels,
    test vectors, the JSON sidecar): :data:`SCALE_MODE_IDS`.
    """

    #: ``e = floor(log2(amax)) - emax`` (OCP MX v1.0, section 6.3).
    FLOOR = "floor"
    #: ``e = ceil(log2(amax / max_normal))`` (cuBLAS/cuDNN, torchao's RCEIL): never saturates.
    RCEIL = "rceil"

    @property
    def id(self) -> int:
        return SCALE_MODE_IDS[self.value]


class Rounding(str, enum.Enum):
    """Rounding of a scaled element to the element grid.

    ``id`` is the encoding of a runtime ``rounding`` field: :data:`ROUNDING_IDS`.
    """

    RNE = "rne"  #: nearest, ties to even
    RNA = "rna"  #: nearest, ties away from zero
    RTZ = "rtz"  #: toward zero
    STOCHASTIC = "stochastic"  #: up iff ``f_R + r >= 2^R`` with caller-supplied random ``r``

    @property
    def id(self) -> int:
        return ROUNDING_IDS[self.value]


#: Encoding of a runtime ``rounding`` field, by mode name (the one definition: hw, tb, the
#: kernels and the sidecar read it from here).
ROUNDING_IDS: dict[str, int] = {"rne": 0, "rna": 1, "rtz": 2, "stochastic": 3}
#: Encoding of a runtime ``scale_mode`` field, by mode name.
SCALE_MODE_IDS: dict[str, int] = {"floor": 0, "rceil": 1}


@dataclass(frozen=True)
class FloatFormat:
    """An IEEE-754-style binary floating-point format (input of the quantizer, output of the
    dequantizer and of the dot product)."""

    name: str
    ebits: int
    mbits: int
    dtype: object
    uint: object  #: unsigned integer dtype of the same width

    @property
    def bits(self) -> int:
        return 1 + self.ebits + self.mbits

    @property
    def bias(self) -> int:
        return (1 << (self.ebits - 1)) - 1

    @property
    def sign_mask(self) -> int:
        """The sign bit."""
        return 1 << (self.bits - 1)

    @property
    def inf_bits(self) -> int:
        """Bit pattern of +Inf (exponent field all ones, fraction 0); -Inf adds ``sign_mask``."""
        return ((1 << self.ebits) - 1) << self.mbits

    @property
    def qnan_bits(self) -> int:
        """The canonical quiet NaN every unit and golden write: +, fraction MSB only
        (fp32 0x7FC00000, bf16 0x7FC0, fp16 0x7E00)."""
        return self.inf_bits | (1 << (self.mbits - 1))

    def __str__(self) -> str:
        return self.name


FP32 = FloatFormat("fp32", 8, 23, np.dtype(np.float32), np.dtype(np.uint32))
BF16 = FloatFormat("bf16", 8, 7, np.dtype(ml_dtypes.bfloat16), np.dtype(np.uint16))
FP16 = FloatFormat("fp16", 5, 10, np.dtype(np.float16), np.dtype(np.uint16))
FP64 = FloatFormat("fp64", 11, 52, np.dtype(np.float64), np.dtype(np.uint64))

INPUT_FORMATS: dict[str, FloatFormat] = {f.name: f for f in (FP32, BF16, FP16, FP64)}
_FLOAT_ALIASES = {
    "fp32": FP32, "float32": FP32, "f32": FP32,
    "bf16": BF16, "bfloat16": BF16,
    "fp16": FP16, "float16": FP16, "f16": FP16, "half": FP16,
    "fp64": FP64, "float64": FP64, "f64": FP64,
}


def float_format(f) -> FloatFormat:
    """Look up an IEEE format by name (``"fp32"``, ``"bfloat16"``, ...) or numpy dtype."""
    if isinstance(f, FloatFormat):
        return f
    if isinstance(f, str) and f.strip().lower() in _FLOAT_ALIASES:
        return _FLOAT_ALIASES[f.strip().lower()]
    try:
        dt = np.dtype(f)
    except TypeError:
        dt = None
    for ff in INPUT_FORMATS.values():
        if dt == ff.dtype:
            return ff
    raise ValueError(f"unknown float format {f!r}; expected one of fp32, bf16, fp16, fp64")
