"""Widths of the dot units' fused step, derived from the element formats, and their ports.

* :class:`DotGeometry` -- product, sum and window widths for a format pair and block size.
* :func:`units_max` -- an element format's largest magnitude in units of its lsb.
* :func:`width_table` -- the width table of ``docs/dot.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import golden
from golden.formats import ElementFormat

__all__ = ["GUARD", "DotGeometry", "units_max", "width_table"]

#: Guard bits of the alignment window below the lowest bit of T: the fewest for which one sticky
#: bit keeps ``c + T`` exact to round (docs/dot.md, "The exact c + T"; 26 was one more than
#: needed, shown by an equivalent mutant, docs/verification.md).
GUARD = 25


def units_max(fmt: ElementFormat) -> int:
    """Largest element magnitude in units of ``2^lsb_exp`` (int8: 128, from code 0x80)."""
    if fmt.twos_complement:
        return 1 << (fmt.bits - 1)
    return fmt.lsb_units_max


@dataclass(frozen=True)
class DotGeometry:
    """Widths of the fused step for a format pair and block size, derived from the formats.

    Attributes
    ----------
    fmt_a, fmt_b : ElementFormat
    block_size : int
    product_bits : int
        Bits of the largest product magnitude ``units_max(a) * units_max(b)``.
    sum_bits : int
        ``W``: bits of the largest block-sum magnitude ``k * units_max(a) * units_max(b)``;
        the signed sum is ``W + 1`` bits.
    window_bits : int
        ``N = W + GUARD + 2``: the exact alignment window of ``c + T`` (bit 0 is the sticky
        position, bit ``N - 1`` the carry).
    lsb_exp : int
        Exponent of the block sum's unit before scaling (``lsb_a + lsb_b``).
    narrow_bits : int
        Bits of the narrower of the two significands.
    """

    fmt_a: ElementFormat
    fmt_b: ElementFormat
    block_size: int

    @property
    def product_bits(self) -> int:
        return (units_max(self.fmt_a) * units_max(self.fmt_b)).bit_length()

    @property
    def sum_bits(self) -> int:
        return (self.block_size * units_max(self.fmt_a) * units_max(self.fmt_b)).bit_length()

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
