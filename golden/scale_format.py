"""Block scale formats: what ``MXArray.scales`` holds and how a scale byte decodes.

Two members, one byte per block each:

``e8m0``
    The OCP MX scale: value ``2^(s - 127)`` for ``s = 0..254``, ``s = 255`` is NaN; no zero, no
    infinity (docs/numerics.md section 2).  Every OCP and ExMy/intN format uses it.
``ue4m3``
    NVFP4's block scale: an unsigned e4m3 (4 exponent bits, 3 mantissa bits, bias 7,
    subnormals ``m * 2^-9``) in the low seven bits of the byte, bit 7 clear.  ``0x7F`` (the
    all-ones magnitude of OCP e4m3) is NaN; ``0x00`` is zero; the largest value is ``0x7E`` =
    448.  Bytes with bit 7 set are not UE4M3 codes (docs/numerics.md, NVFP4).

Decoding is exact in float64; :meth:`ScaleFormat.encode` is the fp32 -> scale RNE cast the
NVFP4 quantizer uses (``E4(.)`` in docs/numerics.md).
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

__all__ = ["ScaleFormat", "E8M0", "UE4M3", "SCALE_FORMATS", "scale_format"]


class ScaleFormat:
    """A block scale format (one byte per block).

    Parameters
    ----------
    name : {"e8m0", "ue4m3"}
        The member (module docstring); use the module constants :data:`E8M0` and
        :data:`UE4M3` or :func:`scale_format`.
    """

    __slots__ = ("_name",)

    def __init__(self, name):
        if name not in ("e8m0", "ue4m3"):
            raise ValueError(f"unknown scale format {name!r}; expected e8m0 or ue4m3")
        object.__setattr__(self, "_name", name)

    def __setattr__(self, attr, value):
        raise AttributeError(f"ScaleFormat is read-only (cannot set {attr!r})")

    def __eq__(self, other):
        return isinstance(other, ScaleFormat) and other._name == self._name

    def __hash__(self):
        return hash(("ScaleFormat", self._name))

    def __reduce__(self):
        return scale_format, (self._name,)

    def __repr__(self) -> str:
        return f"golden.scale_format({self._name!r})"

    def __str__(self) -> str:
        return self._name

    @property
    def name(self) -> str:
        return self._name

    @property
    def bits(self) -> int:
        """Width of one scale code (both members: 8)."""
        return 8

    @property
    def nan_code(self) -> int:
        """The code that decodes to NaN (E8M0: 255; UE4M3: 0x7F)."""
        return 255 if self._name == "e8m0" else 0x7F

    @property
    def max_code(self) -> int:
        """Largest valid code (E8M0: 255; UE4M3: 0x7F, bit 7 is never set)."""
        return 255 if self._name == "e8m0" else 0x7F

    @property
    def spec(self) -> dict:
        """Plain-dict description (JSON-ready): the vectors manifest and sidecars record it."""
        if self._name == "e8m0":
            return {"name": "e8m0", "ebits": 8, "mbits": 0, "bias": 127, "signed": False,
                    "nan_code": 255, "value": "2^(s-127)"}
        return {"name": "ue4m3", "ebits": 4, "mbits": 3, "bias": 7, "signed": False,
                "nan_code": 0x7F, "max": 448.0, "min_normal": 2.0 ** -6,
                "min_subnormal": 2.0 ** -9,
                "value": "e=s>>3, m=s&7: e=0: m*2^-9; else (8+m)*2^(e-10); 0x7F NaN"}

    def table(self) -> np.ndarray:
        """float64 value of every byte 0..255 (NaN for the NaN code and for invalid codes)."""
        return _table(self._name)

    def check(self, codes) -> np.ndarray:
        """``codes`` as an int64 array after checking they are valid codes of this format."""
        s = np.asarray(codes)
        if not np.issubdtype(s.dtype, np.integer):
            raise TypeError(f"scale codes must be integers, got dtype {s.dtype}")
        if s.size and (s.min() < 0 or s.max() > self.max_code):
            raise ValueError(f"{self._name.upper()} scale codes must be in 0..{self.max_code}"
                             + (" (bit 7 is never set)" if self._name == "ue4m3" else ""))
        return s.astype(np.int64)

    def decode(self, codes) -> np.ndarray:
        """Scale codes to their exact float64 values (the NaN code to NaN)."""
        return self.table()[self.check(codes)]

    def encode(self, values) -> np.ndarray:
        """UE4M3 only: the RNE cast of non-negative fp32 values in ``[0, 448]`` (subnormals
        kept, ties to even), NaN to 0x7F.  E8M0 has no rounding rule (:func:`golden.encode_scale`
        takes exact powers of two)."""
        if self._name != "ue4m3":
            raise ValueError("e8m0 has no rounding rule: use golden.encode_scale for exact "
                             "powers of two")
        v = np.asarray(values)
        if v.dtype != np.float32:
            raise TypeError(f"UE4M3 encode takes float32 values, got dtype {v.dtype}")
        if np.any(v < 0) or np.any(v > 448):
            raise ValueError("UE4M3 encode takes values in [0, 448] (clamp first)")
        # float32 -> float8_e4m3fn is one RNE (ml_dtypes converts directly, subnormals kept);
        # -0 cannot reach here as a distinct code because the sign bit is cleared.
        return (v.astype(ml_dtypes.float8_e4m3fn).view(np.uint8) & 0x7F).astype(np.uint8)


@functools.cache
def _table(name: str) -> np.ndarray:
    s = np.arange(256)
    if name == "e8m0":
        t = np.where(s == 255, np.nan, np.ldexp(1.0, s - 127))
    else:
        e, m = s >> 3 & 15, s & 7
        t = np.where(e == 0, np.ldexp(m.astype(np.float64), -9),
                     np.ldexp((8 + m).astype(np.float64), e - 10))
        t[(s & 0x7F) == 0x7F] = np.nan
        t[s >= 0x80] = np.nan
    t.flags.writeable = False
    return t


E8M0 = ScaleFormat("e8m0")
UE4M3 = ScaleFormat("ue4m3")
#: The scale formats, by name.
SCALE_FORMATS = {"e8m0": E8M0, "ue4m3": UE4M3}


def scale_format(name) -> ScaleFormat:
    """The scale format named ``name`` (``"e8m0"``, ``"ue4m3"``; also ``"ue8m0"``, ``"e4m3"``),
    or its :attr:`ScaleFormat.spec` dict, or a ScaleFormat (returned as is)."""
    if isinstance(name, ScaleFormat):
        return name
    if isinstance(name, dict):
        name = name.get("name")
    if not isinstance(name, str):
        raise TypeError(f"scale format must be a name, a spec dict or a ScaleFormat, not "
                        f"{type(name).__name__}")
    key = {"ue8m0": "e8m0", "e4m3": "ue4m3"}.get(name.strip().lower(), name.strip().lower())
    if key not in SCALE_FORMATS:
        raise ValueError(f"unknown scale format {name!r}; expected e8m0 or ue4m3")
    return SCALE_FORMATS[key]
