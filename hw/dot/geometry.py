"""Widths of the dot units' fused step, derived from the element formats, and their ports.

* :class:`DotGeometry` -- product, sum, window and frame widths for a format pair and block
  size.
* :func:`units_max` -- an element format's largest magnitude in units of its lsb.
* :func:`width_table` -- the width table of ``docs/dot.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import golden
from golden.formats import FP32, SCALE_BIAS, SCALE_NAN, ElementFormat

from .nvfp4_scale import scale_sig_max

__all__ = ["GUARD", "CHUNK_BITS", "DotGeometry", "units_max", "width_table"]

#: Guard bits of the alignment window below the lowest bit of T: the fewest for which one sticky
#: bit keeps ``c + T`` exact to round (docs/dot.md, "The exact c + T", proves 25 enough; a
#: wider guard is an equivalent mutant, docs/verification.md).
GUARD = 25

#: Normalization reads the window sum in chunks of this many bits from the top
#: (:mod:`hw.dot.normalize`).
CHUNK_BITS = 8

#: The chunk index ``hz`` of :mod:`hw.dot.normalize` has at least this many bits: as many as
#: the widest windows of the six OCP formats' pairs need (up to 16 chunks).  A narrower index
#: would compute the same, but would change the netlist of every configuration with a
#: smaller window, which was verified and placed with this one.
CHUNK_INDEX_MIN_BITS = 4


def units_max(fmt: ElementFormat) -> int:
    """Largest magnitude of any finite code in units of ``2^lsb_exp``
    (``fmt.magnitude_units_max``: for a sign-magnitude format the largest finite magnitude
    code's, for a two's complement one the most negative code's, int8: 128 from code 0x80)."""
    return fmt.magnitude_units_max


@dataclass(frozen=True)
class DotGeometry:
    """Widths of the fused step for a format pair and block size, derived from the formats.

    Attributes
    ----------
    fmt_a, fmt_b : ElementFormat
    block_size : int
    scale_format : {"e8m0", "ue4m3"}
        The block scales' format (:mod:`hw.dot.nvfp4_scale`): UE4M3 with fp4_e2m1 codes only.
    product_bits : int
        Bits of the largest product magnitude ``units_max(a) * units_max(b)`` (UE4M3: times
        ``P <= 225``, the scale significands' product).
    sum_bits : int
        ``W``: bits of the largest block-sum magnitude ``k * units_max(a) * units_max(b)``
        (UE4M3: times 225); the signed sum is ``W + 1`` bits.
    window_bits : int
        ``N = W + GUARD + 2``: the exact alignment window of ``c + T`` (bit 0 is the sticky
        position, bit ``N - 1`` the carry).
    lsb_exp : int
        Exponent of the block sum's unit before scaling (``lsb_a + lsb_b``).
    narrow_bits : int
        Bits of the narrower of the two significands.
    code_product_bits : int
        Bits of the product of two two's complement codes.
    frame_bits : int
        Bits of the frame of ``c + T`` (signed): its anchors, distance and ``lim``.
    chunk_index_bits : int
        Bits of the index of a :data:`CHUNK_BITS`-bit chunk of the window.
    """

    fmt_a: ElementFormat
    fmt_b: ElementFormat
    block_size: int
    scale_format: str = "e8m0"

    def __post_init__(self):
        if scale_sig_max(self.scale_format) > 1 and not (
                self.fmt_a == golden.element_format("fp4_e2m1") == self.fmt_b):
            raise ValueError(f"{self.scale_format} scales go with fp4_e2m1 codes on both sides "
                             f"(NVFP4), not {self.fmt_a.name} x {self.fmt_b.name}")

    @property
    def scale_sig_max(self) -> int:
        """The largest scale significand (:func:`hw.dot.nvfp4_scale.scale_sig_max`): 1 for
        E8M0; 15 for UE4M3, whose significands' product ``P`` (<= 225) multiplies every
        lane's product (NVFP4)."""
        return scale_sig_max(self.scale_format)

    @property
    def product_bits(self) -> int:
        return (units_max(self.fmt_a) * units_max(self.fmt_b)
                * self.scale_sig_max ** 2).bit_length()

    @property
    def sum_bits(self) -> int:
        return (self.block_size * units_max(self.fmt_a) * units_max(self.fmt_b)
                * self.scale_sig_max ** 2).bit_length()

    @property
    def window_bits(self) -> int:
        return self.sum_bits + GUARD + 2

    @property
    def lsb_exp(self) -> int:
        return self.fmt_a.lsb_exp + self.fmt_b.lsb_exp

    @property
    def narrow_bits(self) -> int:
        """Bits of the narrower significand (``mbits + 1``; int8: 7): the lane product's
        partial-product rows (:func:`hw.arith.partial_product_sum`)."""
        return min(self.fmt_a.mbits, self.fmt_b.mbits) + 1

    @property
    def code_product_bits(self) -> int:
        """Bits of the signed product of two two's complement codes (``bits_a + bits_b``:
        the most negative codes' product, ``2^(bits_a + bits_b - 2)``, needs them all)."""
        return self.fmt_a.bits + self.fmt_b.bits

    @property
    def frame_bound(self) -> int:
        """An upper bound on the magnitude of every integer of the frame of ``c + T``
        (:mod:`hw.dot.frame`, :mod:`hw.dot.normalize`): the sum of the magnitudes of every
        term they are made of.

        Each is a signed sum of a subset of these terms, each at most once: the two scale
        codes (``aT = sa + sb + lsb - 254 - G``; up to 255 each, the NaN code included,
        whose block's frame is computed but unused), ``lsb_exp``, ``254`` and ``G``; c's
        exponent field (up to 255), ``127`` and ``n - 3`` (``aC = e_c - 127 - (n - 3)``, or
        ``-126 - (n - 3)`` for a subnormal c); ``n + 124`` (``lim = max(aT, aC) + n + 124``,
        and ``d = aT - aC``); the normalization shift, below the padded window
        (``lim - 8*hz - fine``).  The bound is loose (the frames of the OCP pairs stay
        within about a third of it) and cheap to check: no frame integer wraps."""
        n = self.window_bits
        padded = -(-n // CHUNK_BITS) * CHUNK_BITS
        scales = 2 * SCALE_NAN + abs(self.lsb_exp) + 2 * SCALE_BIAS + GUARD
        c = FP32.inf_bits >> FP32.mbits  # c's largest exponent field, 255
        c += FP32.bias + (n - 3)
        return scales + c + n + 124 + padded

    @property
    def frame_bits(self) -> int:
        """Bits of the signed frame integers: ``frame_bound`` and a sign (12 for every
        pair of the six OCP formats).  Their difference ``d = aT - aC`` has one more; the
        result's exponent field ``e0`` (from 0 to ``lim``), one fewer."""
        return self.frame_bound.bit_length() + 1

    @property
    def chunk_index_bits(self) -> int:
        """Bits of the index of a chunk of the padded window, at least
        :data:`CHUNK_INDEX_MIN_BITS`."""
        chunks = -(-self.window_bits // CHUNK_BITS)
        return max((chunks - 1).bit_length(), CHUNK_INDEX_MIN_BITS)


def width_table(block_size: int = 32) -> str:
    """Markdown table of ``product bits / signed sum bits / window bits`` for every format
    pair at ``block_size`` (the table of docs/dot.md is this function's output)."""
    names = list(golden.FORMATS)
    lines = [f"| A \\ B (k = {block_size}) | " + " | ".join(names) + " |",
             "|---" * (len(names) + 1) + "|"]
    for a in names:
        cells = []
        for b in names:
            g = DotGeometry(golden.element_format(a), golden.element_format(b), block_size)
            cells.append(f"{g.product_bits}/{g.sum_bits + 1}/{g.window_bits}")
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
