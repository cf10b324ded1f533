"""The element-format family: one type, every constant derived from (E, M, convention, bias).

A float member is a sign bit and a magnitude ``E.M`` with ``ebits`` exponent bits, ``mbits``
mantissa bits and a bias (``2^(E-1) - 1`` unless given), IEEE-style: exponent field 0 holds the
subnormals ``0.M * 2^(1 - bias)``.  The convention says which magnitude codes are special:

``finite``
    none: every code is a number (OCP fp6 and fp4);
``fn``
    the all-ones magnitude is NaN, nothing is Inf (OCP fp8 e4m3, ml_dtypes' ``*fn`` types);
``ieee``
    the all-ones exponent field: mantissa 0 is Inf, the rest NaN (OCP fp8 e5m2).

``intN`` (N = 2..8) is a two's-complement integer ``n`` with value ``n * 2^-(N-2)`` (int8 is OCP
MXINT8, int4 is MXINT4).  It keeps the sign-magnitude view "E1M(N-2), bias 1": its magnitudes
``n * 2^-(N-2)`` for ``n < 2^(N-2)`` are the subnormals ``0.M * 2^0`` and the rest the normals
``1.M * 2^0``, and the magnitude code *is* ``|n|``.  Only the outer encoding differs (two's
complement instead of a sign bit), so every rounding, saturation and decoding routine is shared.
The quantizer writes the symmetric range ``+-(2^(N-1) - 1)``; code ``-2^(N-1)`` decodes to -2.

Codes are 2 to 8 bits wide.  Every constant (``emax``, ``max_code``, ``nan_codes``, ...) is
derived here from the parameters, once, the way ml_dtypes derives ``finfo``.
"""

from __future__ import annotations

from fractions import Fraction

__all__ = ["ElementFormat", "CONVENTIONS", "MIN_BITS", "MAX_BITS"]

#: The special-value conventions of the family.
CONVENTIONS = ("finite", "fn", "ieee")
#: Element code widths the family covers (sign included).
MIN_BITS, MAX_BITS = 2, 8


def _check_int(value, what: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int in {lo}..{hi}, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise ValueError(f"{what} must be in {lo}..{hi}, got {value}")
    return value


class ElementFormat:
    """An MX element format: a member of the ExMy / intN family.

    Parameters
    ----------
    ebits : int
        Exponent bits E, 1..7.
    mbits : int
        Mantissa bits M, 0..6; ``1 + E + M`` (the code width) must be 2..8.
    convention : {"finite", "fn", "ieee"}
        Which magnitude codes are NaN or Inf (module docstring).
    bias : int, optional
        Exponent bias, ``2^(E-1) - 1`` when omitted; any integer in ``-2^E .. 2^(E+1)``.
    name : str, optional
        The name it prints as (the family's generic name ``e<E>m<M>[fn|ieee][_bias<b>]`` when
        omitted).  Two formats with the same parameters are equal whatever their names.

    Use :meth:`integer` for the two's-complement ``intN`` members, :func:`golden.element_format`
    to look a format up by name, and :attr:`spec` for a lossless plain-dict form.
    """

    __slots__ = ("_ebits", "_mbits", "_convention", "_bias", "_int", "_name", "_aliases",
                 "_ml_dtype")

    def __init__(self, ebits, mbits, convention="finite", bias=None, *, name=None,
                 aliases=(), ml_dtype=None):
        _check_int(ebits, "ebits (exponent bits)", 1, MAX_BITS - 1)
        _check_int(mbits, "mbits (mantissa bits)", 0, MAX_BITS - 2)
        width = 1 + ebits + mbits
        if not MIN_BITS <= width <= MAX_BITS:
            raise ValueError(f"a code of 1 + ebits + mbits = {width} bits is outside "
                             f"{MIN_BITS}..{MAX_BITS}")
        if convention not in CONVENTIONS:
            raise ValueError(f"convention must be one of {', '.join(CONVENTIONS)}, "
                             f"got {convention!r}")
        if convention == "ieee" and (ebits < 2 or mbits < 1):
            raise ValueError("convention 'ieee' needs ebits >= 2 and mbits >= 1 (an Inf and a "
                             f"NaN code besides the normals), got e{ebits}m{mbits}")
        if bias is None:
            bias = (1 << (ebits - 1)) - 1
        _check_int(bias, "bias", -(1 << ebits), 1 << (ebits + 1))
        self._init(ebits, mbits, convention, bias, None, name, aliases, ml_dtype)
        if self.max_code >> mbits == 0:
            raise ValueError(f"e{ebits}m{mbits} with convention {convention!r} has no normal "
                             "finite value")

    def _init(self, ebits, mbits, convention, bias, int_bits, name, aliases, ml_dtype):
        self._ebits, self._mbits, self._convention, self._bias = ebits, mbits, convention, bias
        self._int = int_bits
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise TypeError(f"name must be a non-empty str, got {name!r}")
        self._name = name if name is not None else self._generic_name()
        self._aliases = tuple(aliases)
        self._ml_dtype = ml_dtype

    @classmethod
    def integer(cls, bits, *, name=None, aliases=(), ml_dtype=None) -> ElementFormat:
        """The two's-complement ``int<bits>`` member: value ``n * 2^-(bits-2)``, bits 2..8."""
        _check_int(bits, "bits of an intN format", MIN_BITS, MAX_BITS)
        fmt = cls.__new__(cls)
        fmt._init(1, bits - 2, "finite", 1, bits, name, aliases, ml_dtype)
        return fmt

    def _generic_name(self) -> str:
        if self._int is not None:
            return f"int{self._int}"
        conv = "" if self._convention == "finite" else self._convention
        default_bias = (1 << (self._ebits - 1)) - 1
        tail = "" if self._bias == default_bias else f"_bias{self._bias}"
        return f"e{self._ebits}m{self._mbits}{conv}{tail}"

    # -- identity ---------------------------------------------------------------------------
    @property
    def key(self) -> tuple:
        """The parameters that define the value set: equality and hashing use only these."""
        if self._int is not None:
            return ("int", self._int)
        return (self._ebits, self._mbits, self._convention, self._bias)

    def __eq__(self, other):
        if not isinstance(other, ElementFormat):
            return NotImplemented
        return self.key == other.key

    def __hash__(self):
        return hash(self.key)

    def __reduce__(self):
        from .format_names import element_format

        return element_format, (self.spec,)

    def __setattr__(self, attr, value):
        if attr in ElementFormat.__slots__ and not hasattr(self, attr):
            object.__setattr__(self, attr, value)  # set once, by _init
            return
        raise AttributeError(f"ElementFormat is read-only (cannot set {attr!r})")

    def __str__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        if self._int is not None:
            return f"ElementFormat.integer({self._int}, name={self._name!r})"
        return (f"ElementFormat({self._ebits}, {self._mbits}, {self._convention!r}, "
                f"bias={self._bias}, name={self._name!r})")

    @property
    def spec(self) -> dict:
        """Lossless plain-dict form (JSON-ready); ``golden.element_format(spec)`` rebuilds it.

        ``{"name", "ebits", "mbits", "convention", "bias"}`` for a float member,
        ``{"name", "int": N}`` for ``intN``.
        """
        if self._int is not None:
            return {"name": self._name, "int": self._int}
        return {"name": self._name, "ebits": self._ebits, "mbits": self._mbits,
                "convention": self._convention, "bias": self._bias}

    # -- parameters -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """Name, e.g. ``"fp8_e4m3"``."""
        return self._name

    @property
    def aliases(self) -> tuple:
        """Other names :func:`golden.element_format` accepts for this format."""
        return self._aliases

    @property
    def ml_dtype(self):
        """The ml_dtypes type with exactly this value set, or None (tests and benchmarks only)."""
        return self._ml_dtype

    @property
    def convention(self) -> str:
        """``"finite"``, ``"fn"`` or ``"ieee"`` (intN: ``"finite"``)."""
        return self._convention

    @property
    def ebits(self) -> int:
        """Exponent bits of the sign-magnitude view (intN: 1)."""
        return self._ebits

    @property
    def mbits(self) -> int:
        """Mantissa bits of the sign-magnitude view (intN: N - 2)."""
        return self._mbits

    @property
    def bias(self) -> int:
        """Exponent bias of the sign-magnitude view (intN: 1)."""
        return self._bias

    @property
    def bits(self) -> int:
        """Width of one element code."""
        return 1 + self._ebits + self._mbits

    @property
    def twos_complement(self) -> bool:
        """True for intN: codes are two's complement integers rather than sign-magnitude."""
        return self._int is not None

    @property
    def is_int(self) -> bool:
        return self._int is not None

    # -- derived constants ------------------------------------------------------------------
    @property
    def sign_bit(self) -> int:
        return self.bits - 1

    @property
    def code_mask(self) -> int:
        return (1 << self.bits) - 1

    @property
    def _all_ones(self) -> int:
        return (1 << (self.bits - 1)) - 1

    @property
    def inf_codes(self) -> tuple:
        """Magnitude codes (sign bit clear) that decode to infinity."""
        if self._convention == "ieee":
            return (((1 << self._ebits) - 1) << self._mbits,)
        return ()

    @property
    def nan_codes(self) -> tuple:
        """Magnitude codes (sign bit clear) that decode to NaN."""
        if self._convention == "fn":
            return (self._all_ones,)
        if self._convention == "ieee":
            return tuple(range(self.inf_codes[0] + 1, self._all_ones + 1))
        return ()

    @property
    def max_code(self) -> int:
        """Magnitude code of the largest finite value (saturation target)."""
        if self._convention == "fn":
            return self._all_ones - 1
        if self._convention == "ieee":
            return self.inf_codes[0] - 1
        return self._all_ones

    @property
    def emax(self) -> int:
        """Exponent of the largest normal binade, as in the OCP tables (intN: 0)."""
        return (self.max_code >> self._mbits) - self._bias

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal binade (``1 - bias``)."""
        return 1 - self._bias

    @property
    def lsb_exp(self) -> int:
        """Exponent of the smallest subnormal: every value is an integer multiple of this power."""
        return self.emin - self._mbits

    @property
    def max_normal(self) -> Fraction:
        """Largest finite magnitude, exactly."""
        return self.magnitude_value(self.max_code)

    @property
    def min_normal(self) -> Fraction:
        """Smallest normal magnitude, exactly (``2^emin``)."""
        return Fraction(2) ** self.emin

    @property
    def min_subnormal(self) -> Fraction:
        """Smallest non-zero magnitude, exactly (``2^lsb_exp``)."""
        return Fraction(2) ** self.lsb_exp

    @property
    def max_significand(self) -> int:
        """Integer significand ``1.M`` of the largest finite value, as ``2^mbits + M``."""
        return (1 << self._mbits) | (self.max_code & ((1 << self._mbits) - 1))

    @property
    def lsb_units_max(self) -> int:
        """Largest finite magnitude in units of ``2^lsb_exp`` (the fixed-point integer width)."""
        return int(self.max_normal / Fraction(2) ** self.lsb_exp)

    @property
    def magnitude_units_max(self) -> int:
        """Largest magnitude any code decodes to, in units of ``2^lsb_exp`` (intN: ``2^(N-1)``,
        the code ``-2^(N-1)``; floats: :attr:`lsb_units_max`)."""
        return 1 << (self.bits - 1) if self._int is not None else self.lsb_units_max

    def magnitude_value(self, mag: int) -> Fraction:
        """Exact value of a magnitude code (no NaN/Inf interpretation)."""
        e = mag >> self._mbits
        m = mag & ((1 << self._mbits) - 1)
        if e == 0:
            return Fraction(m) * Fraction(2) ** self.lsb_exp
        return Fraction((1 << self._mbits) | m) * Fraction(2) ** (e - self._bias - self._mbits)
