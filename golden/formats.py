"""Element formats, input formats and the E8M0 scale, described as data.

Every numeric routine in :mod:`golden` (and every RTL unit in :mod:`hw`) is driven by these
descriptions; there is no per-format code.

One internal view serves all six element formats: a sign and a magnitude code ``E.M`` with
``ebits`` exponent bits, ``mbits`` mantissa bits and a bias, IEEE-style (exponent field 0 means
subnormal).  int8 fits this view exactly as a sign-magnitude "E1M6" with bias 1: its magnitudes
``n * 2^-6`` for ``n`` in 0..127 are subnormals ``0.M * 2^0`` (n < 64) and normals ``1.M * 2^0``
(n >= 64), and the magnitude code *is* ``n``.  Only the outer encoding differs (two's complement
instead of a sign bit), so the rounding, saturation and decoding logic is shared.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fractions import Fraction

import ml_dtypes
import numpy as np

__all__ = [
    "ElementFormat",
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
class ElementFormat:
    """An MX element format.

    Parameters
    ----------
    name : str
        Canonical name, e.g. ``"fp8_e4m3"``.
    bits : int
        Width of one element code.
    ebits, mbits, bias : int
        The sign-magnitude ``E.M`` view used by all arithmetic (int8: 1, 6, 1; see module doc).
    emax : int
        Exponent of the largest normal binade, as in the OCP tables (int8: 0).
    max_code : int
        Magnitude code of the largest finite value (saturation target).
    nan_codes, inf_codes : tuple of int
        Magnitude codes (sign bit clear) that decode to NaN / infinity.
    twos_complement : bool
        True for int8: codes are two's complement integers rather than sign-magnitude.
    aliases : tuple of str
        Other accepted names.
    ml_dtype : numpy dtype or None
        The matching ml_dtypes type, used only by tests and benchmarks as an oracle.
    """

    name: str
    bits: int
    ebits: int
    mbits: int
    bias: int
    emax: int
    max_code: int
    nan_codes: tuple = ()
    inf_codes: tuple = ()
    twos_complement: bool = False
    aliases: tuple = ()
    ml_dtype: object = None

    # -- derived properties -------------------------------------------------------------------
    @property
    def emin(self) -> int:
        """Exponent of the smallest normal binade (``1 - bias``)."""
        return 1 - self.bias

    @property
    def lsb_exp(self) -> int:
        """Exponent of the smallest subnormal: every value is an integer multiple of this power."""
        return self.emin - self.mbits

    @property
    def sign_bit(self) -> int:
        return self.bits - 1

    @property
    def code_mask(self) -> int:
        return (1 << self.bits) - 1

    @property
    def is_int(self) -> bool:
        return self.twos_complement

    @property
    def max_normal(self) -> Fraction:
        """Largest finite magnitude, exactly."""
        return self.magnitude_value(self.max_code)

    @property
    def max_significand(self) -> int:
        """Integer significand ``1.M`` of the largest finite value, as ``2^mbits + M``."""
        return (1 << self.mbits) | (self.max_code & ((1 << self.mbits) - 1))

    @property
    def lsb_units_max(self) -> int:
        """Largest finite magnitude in units of ``2^lsb_exp`` (the fixed-point integer width)."""
        return int(self.max_normal / Fraction(2) ** self.lsb_exp)

    def magnitude_value(self, mag: int) -> Fraction:
        """Exact value of a magnitude code (no NaN/Inf interpretation)."""
        e = mag >> self.mbits
        m = mag & ((1 << self.mbits) - 1)
        if e == 0:
            return Fraction(m) * Fraction(2) ** self.lsb_exp
        return Fraction((1 << self.mbits) | m) * Fraction(2) ** (e - self.bias - self.mbits)

    def __str__(self) -> str:
        return self.name


def _f(name, bits, ebits, mbits, bias, emax, max_code, **kw) -> ElementFormat:
    return ElementFormat(name, bits, ebits, mbits, bias, emax, max_code, **kw)


FP8_E4M3 = _f("fp8_e4m3", 8, 4, 3, 7, 8, 0x7E, nan_codes=(0x7F,),
              aliases=("mxfp8_e4m3", "e4m3", "fp8", "e4m3fn", "float8_e4m3fn"),
              ml_dtype=ml_dtypes.float8_e4m3fn)
FP8_E5M2 = _f("fp8_e5m2", 8, 5, 2, 15, 15, 0x7B, nan_codes=(0x7D, 0x7E, 0x7F), inf_codes=(0x7C,),
              aliases=("mxfp8_e5m2", "e5m2", "float8_e5m2"), ml_dtype=ml_dtypes.float8_e5m2)
FP6_E3M2 = _f("fp6_e3m2", 6, 3, 2, 3, 4, 0x1F, aliases=("mxfp6_e3m2", "e3m2", "float6_e3m2fn"),
              ml_dtype=ml_dtypes.float6_e3m2fn)
FP6_E2M3 = _f("fp6_e2m3", 6, 2, 3, 1, 2, 0x1F, aliases=("mxfp6_e2m3", "e2m3", "float6_e2m3fn"),
              ml_dtype=ml_dtypes.float6_e2m3fn)
FP4_E2M1 = _f("fp4_e2m1", 4, 2, 1, 1, 2, 0x7, aliases=("mxfp4_e2m1", "e2m1", "fp4", "mxfp4",
              "float4_e2m1fn"), ml_dtype=ml_dtypes.float4_e2m1fn)
INT8 = _f("int8", 8, 1, 6, 1, 0, 0x7F, twos_complement=True, aliases=("mxint8",))

#: All element formats, by canonical name, in the contract's order.
FORMATS: dict[str, ElementFormat] = {
    f.name: f for f in (FP8_E4M3, FP8_E5M2, FP6_E3M2, FP6_E2M3, FP4_E2M1, INT8)
}
_ALIASES = {a: f for f in FORMATS.values() for a in (f.name, *f.aliases)}


def element_format(fmt: str | ElementFormat) -> ElementFormat:
    """Look up an element format by name or alias (case-insensitive, ``-`` or ``_``)."""
    if isinstance(fmt, ElementFormat):
        return fmt
    if not isinstance(fmt, str):
        raise TypeError(f"element format must be a name or ElementFormat, not {type(fmt).__name__}")
    key = fmt.strip().lower().replace("-", "_")
    try:
        return _ALIASES[key]
    except KeyError:
        raise ValueError(
            f"unknown element format {fmt!r}; expected one of {', '.join(FORMATS)} "
            f"(aliases: {', '.join(sorted(a for f in FORMATS.values() for a in f.aliases))})"
        ) from None


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
