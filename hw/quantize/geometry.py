"""The constants a quantizer datapath is built from, derived once from its parameters.

:class:`QuantizeGeometry` holds a quantizer's choices (formats, block size, rounding, scale
mode, the block-max tree's shape and the scale path's copies) and the widths and offsets the
sections derive from them; every step of :mod:`hw.quantize` reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from golden.formats import ElementFormat, FloatFormat

__all__ = ["QuantizeGeometry"]


@dataclass(frozen=True)
class QuantizeGeometry:
    """A quantizer's parameters and the constants of its datapath.

    Parameters
    ----------
    fmt : golden.ElementFormat
        The element format.
    input_format : golden.FloatFormat
    block_size : int
        k.
    rounding : str
        ``rne``, ``rna``, ``rtz``, ``stochastic`` or ``runtime``.
    scale_mode : str
        ``floor``, ``rceil`` or ``runtime``.
    random_bits : int
        R (0 without stochastic rounding).
    exponent_field_tree : bool
        :func:`hw.quantize.sections.exponent_field_tree`.
    tree_radices : tuple of int
        :func:`hw.quantize.sections.max_tree_radices`.
    tree_split : bool
        :func:`hw.quantize.sections.max_tree_split`.
    scale_copies_at : str or None
        The scale path's last registered boundary before ``cmp``, where it is replicated.
    scale_copies : int
        Copies of the scale path from there on.
    """

    fmt: ElementFormat
    input_format: FloatFormat
    block_size: int
    rounding: str
    scale_mode: str
    random_bits: int
    exponent_field_tree: bool
    tree_radices: tuple
    tree_split: bool
    scale_copies_at: str | None
    scale_copies: int

    @property
    def stochastic(self) -> bool:
        """Stochastic rounding is built in (fixed or at run time): the ``random`` field."""
        return self.rounding in ("stochastic", "runtime")

    @property
    def runtime_rounding(self) -> bool:
        return self.rounding == "runtime"

    @property
    def runtime_scale(self) -> bool:
        return self.scale_mode == "runtime"

    @property
    def rceil_built(self) -> bool:
        """The rceil scale mode is built in (fixed or at run time): the trees carry flags."""
        return self.scale_mode != "floor"

    @property
    def mag_w(self) -> int:
        """IEEE magnitude bits of an input value."""
        return self.input_format.ebits + self.input_format.mbits

    @property
    def mb(self) -> int:
        """The element format's mantissa bits."""
        return self.fmt.mbits

    @property
    def f(self) -> int:
        """Fraction bits kept below the element grid: R with stochastic rounding, else 1."""
        return self.random_bits if self.stochastic else 1

    @property
    def keep(self) -> int:
        """Normalized significand bits that can reach the code or the fraction below it."""
        return self.mb + 1 + self.f

    @property
    def key_bias(self) -> int:
        """A lane's binade key is ``floor(log2 |v|) + key_bias`` (signed): ``E`` for a
        normal, ``-lzf`` for a subnormal (``lzf``: leading zeros of the fraction)."""
        return self.input_format.bias

    @property
    def zero_key(self) -> int:
        """The key of a zero: ``1 - p`` (``p``: input significand bits, hidden bit included)."""
        return 1 - (self.input_format.mbits + 1)

    @property
    def e_max_key(self) -> int:
        """The key of an Inf or NaN: the exponent field all ones."""
        return (1 << self.input_format.ebits) - 1

    @property
    def b_ovf(self) -> int:
        """Element exponent fields run 0 .. ``b_ovf + 1`` (the field of ``max_code``, rounded
        up: a code with field ``b_ovf + 1`` is at least ``max_code``); ``b_ovf + 1`` sets the
        field's width."""
        return -(-self.fmt.max_code // (1 << self.mb)) - 1

    @property
    def e0(self) -> int:
        """The block's scale exponent is ``clamp(key_max - e0 + a, -127, 127)``."""
        return self.key_bias + self.fmt.emax

    @property
    def e_key_off(self) -> int:
        """A lane's element binade is ``key - (e + e_key_off)``: the scale ``e`` travels as
        ``e_key = e + e_key_off``."""
        return self.fmt.emin + self.key_bias

    def ctl_fields(self, x, scale_mode: bool = True) -> dict:
        """The control fields a section carries beside its lanes, read from the view ``x``
        of the section before: the runtime rounding and scale modes (the scale mode only
        while ``scale_mode``, up to the ``scale`` section) and the random bits, where built;
        None (no field) where not.  Values fixed at elaboration are never fields."""
        return {"rounding": x.rounding if self.runtime_rounding else None,
                "scale_mode": x.scale_mode if self.runtime_scale and scale_mode else None,
                "random": x.random if self.stochastic else None}
