"""The NVFP4 quantizer's geometry and sections (name -> :class:`hw.placement.Estimate`).

The datapath (docs/nvfp4.md, quantizer): the block-max tree over full magnitudes (``amax1``..),
the amax's normalization (``alz``, ``anorm``), ``f(amax / 6)`` as a restoring division by 3
(``div3_<j>``) and its rounding (``bround``); two level ``f(b / P)``, a restoring division of
24-bit significands (``pdiv_<j>``) and its rounding (``pround``); the UE4M3 cast (``scale``);
``r = f(R / s)``: the quotients by all eight 4-bit significands computed beside the block path
(:mod:`hw.nvfp4.reciprocal`), the scale's selected (``rsel``) and rounded onto the fp32 grid
(``rpos``, ``ralign``, ``rup``, ``rround``) and normalized for the lanes (``rlz``,
``rnorm``); per lane (x normalized beside the first two sections) the product ``x * r``
(``mul_<j>``; in MULT18X18D blocks ``operands``, ``multiply``, ``drain``, ``psum``), its
one-bit normalization (``plz``) and fp32 rounding (``yround``), the e2m1 rounding
(``epos``, ``ealign``, ``eround``) and ``output``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..placement import Estimate

__all__ = ["NVQGeometry", "ESTIMATES", "nvq_sections", "DIV3_STEPS", "PDIV_STEPS",
           "DIV3_PER_SECTION", "PDIV_PER_SECTION", "MUL_LEVELS_PER_SECTION"]

#: Quotient bits of the block path's divisions: ``floor(sig_A * 2^K / 3)`` over 29 dividend
#: bits, ``floor(sig_b * 2^25 / sig_P)`` (26 bits).
DIV3_STEPS, PDIV_STEPS = 29, 26
#: Division steps per section.
DIV3_PER_SECTION, PDIV_PER_SECTION = 4, 1
#: Levels of the product's tree of carry chains per ``mul`` section.
MUL_LEVELS_PER_SECTION = 2

_EST = "estimate by analogy with the MX units' measured sections, not measured on this unit"
#: The sections' delay estimates (ns, ECP5 speed 8), by kind.
ESTIMATES = {
    "amax": Estimate(3.2, "a 31-bit comparison on a carry chain and a 2:1 select (a radix-4 "
                     "level's six comparisons and one-hot select were the critical path, 7.95 "
                     "ns over 37 cells, 5.17 ns of it routing, at 125.7 MHz, levels 2 from "
                     "fp32 with MULT18X18D products, depth 59, seed 1); " + _EST),
    "alz": Estimate(3.5, "the amax's fields and its 24-bit leading-zero count beside the "
                    "exponent field's OR (with the shift and the binade's subtract in one "
                    "section it was the critical path, 8.0 ns over 13 cells, 5.74 ns of it "
                    "routing, at 124.5 MHz, levels 2 from fp32 with MULT18X18D products, depth "
                    "58, seed 1; the count behind the OR, 6.82 ns at 146.7 MHz, depth 62, seed "
                    "1); " + _EST),
    "anorm": Estimate(3.5, "the amax's normalizing shift and its binade; " + _EST),
    "div3": Estimate(4.0, "four steps of a division by 3 (2-bit remainders; ten steps a section "
                     "were the critical path, 9.7 ns over 14 cells, 6.8 ns of it routing, at "
                     "103.0 MHz, levels 2 from fp32 with MULT18X18D products, depth 53, seed "
                     "1); " + _EST),
    "bround": Estimate(3.5, "the 24-bit increment, the exponent selected by its carry (`up` "
                      "and the kept bits all ones, from the registers); " + _EST),
    "pdiv": Estimate(4.5, "one step of a 24-bit restoring division (a carry chain and its "
                     "select; two steps a section were the critical path, 11.85 ns over 14 "
                     "cells, 8.65 ns of it routing, at 84.3 MHz, levels 2 from fp32 with "
                     "MULT18X18D products, seed 1; P's hidden bit as the OR of its exponent "
                     "field in front of the first step, 7.59 ns at 131.8 MHz, depth 62, seed "
                     "1; the step's comparison apart from its subtraction, a 5-level LUT "
                     "tree, 6.66 ns at 150.2 MHz); " + _EST),
    "pround": Estimate(3.5, "the 24-bit increment, the exponent selected by its carry (with "
                      "the exponent's add after the increment's carry chain it was the "
                      "critical path, `pup` -> `pround`, 7.96 ns at 125.6 MHz, depth 62, "
                      "seed 1); " + _EST),
    "sclamp": Estimate(3.0, "the clamp comparisons, the UE4M3 exponent field and the rounding "
                       "decision side by side; " + _EST),
    "scale": Estimate(3.0, "the UE4M3 code's increment and the clamp's select (with the "
                      "comparisons in one section it was the critical path, `pround` -> "
                      "`scale`, 8.13 ns over 12 cells, 5.09 ns of it routing, at 122.9 MHz, "
                      "levels 2 from fp32 with MULT18X18D products, depth 61, seed 1); "
                      + _EST),
    "rsel": Estimate(3.5, "the 8:1 select of the 28-bit quotient and its trailing zeros by the "
                     "scale's mantissa bits, "
                     "beside it the position inputs and clamp flags, one subtraction or "
                     "comparison each (the quotients computed beside the block path: "
                     "four restoring steps a section were 13.5 ns, 22 cells, at 74.0 MHz, "
                     "seed 1; with the exponent's add after the select, 7.60 ns at 131.6 MHz, "
                     "depth 61, seed 1; with the differences a chain of adds from R's "
                     "exponent and the clamp compare after it, 8.59 ns at 116.5 MHz, depth "
                     "62, seed 1); " + _EST),
    "rpos": Estimate(3.0, "both shift amounts and binades, selected by the quotient's top "
                     "bit (an add of that bit before one position was 8.75 ns at 114.3 MHz, "
                     "depth 61, seed 1; the quotient's trailing zeros beside them were the "
                     "critical path, 7.12 ns at 140.4 MHz, depth 62: they are counted before "
                     "the select); " + _EST),
    "ralign": Estimate(3.5, "the shift onto the fp32 grid, its sticky bit a comparison of the "
                       "trailing zeros with the shift beside it (the OR of the shifted-out bits "
                       "after the shifter was the critical path, 6.70 ns over 7 cells, 5.05 "
                       "ns of it routing, at 149.2 MHz, depth 62, seed 1); " + _EST),
    "rup": Estimate(3.0, "the rounding's increment bit, its carry out of the kept bits and "
                    "the select of the last bit's exponent by that carry (the code's 31-bit "
                    "add, its exponent field's OR and offset in series were 6.61 ns at 149.2 "
                    "MHz, depth 62, seed 1); " + _EST),
    "rround": Estimate(2.5, "the 23-bit increment of f(R / s) (with the decision in one "
                       "section, 6 LUT levels, 6.68 ns at 140.4 MHz, depth 62, seed 2); "
                       + _EST),
    "rlz": Estimate(3.5, "r's 24-bit leading-zero count; " + _EST),
    "rnorm": Estimate(3.5, "r's normalizing shift and its exponent; " + _EST),
    "mul": Estimate(4.5, "partial products and two levels of the tree of carry chains; "
                    + _EST),
    "dsp_operands": Estimate(3.5, "the route into the DSP column (MXDot's `operands` with "
                             "MULT18X18D blocks: 1.3 ns logic + 3.9 ns routing); " + _EST),
    "dsp_multiply": Estimate(3.5, "the MULT18X18D between its own registers: 3.46 ns"),
    "dsp_drain": Estimate(3.5, "the route back from the DSP column (MXDot's `drain`: 1.5 ns "
                          "logic + 4.5 ns routing); " + _EST),
    "psum": Estimate(4.5, "two carry chains in series: the middle chunk products' sum, "
                     "then its add into the outer ones' concatenation; " + _EST),
    "plz": Estimate(1.5, "the product's one-bit normalization, both factors normalized (its "
                    "48-bit leading-zero count and shift were the critical path, 12.35 ns over "
                    "14 cells, 9.43 ns of it routing, at 81.0 MHz, levels 2 from fp32 with "
                    "MULT18X18D products, depth 48, seed 1); " + _EST),
    "round_up": Estimate(3.5, "a 24-bit RNE's decision: the kept bits' select, the guard bit and "
                         "the sticky OR (with the 24-bit increment in one section it was the "
                         "critical path, `pdiv_25` -> `pround`, 10.6 ns over 48 cells, 6.9 ns of "
                         "it routing, at 94.5 MHz, levels 2 from fp32 with MULT18X18D products, "
                         "depth 50, seed 1); " + _EST),
    "yround": Estimate(3.5, "the 24-bit increment of f(x * r) and its carry; " + _EST),
    "epos": Estimate(2.0, "both e2m1 binades and shift amounts (their differences and "
                     "clamps formed in `yup`), selected by the rounding's carry (the carry's "
                     "add, then the position, was the critical path, 7.69 ns at 130.0 MHz, "
                     "depth 62, seed 1; the position's clamp comparison 7.59 ns at 131.8 "
                     "MHz); " + _EST),
    "ealign": Estimate(3.0, "the shift onto the e2m1 grid over the four drops it takes "
                       "(`Grid.align(excess_shift=True)`) and its sticky OR (the full 25-bit "
                       "shifter and sticky tree were the critical path, 7.24 ns, 7 LUT levels, "
                       "at 138.2 MHz, depth 62, seed 1); " + _EST),
    "eround": Estimate(2.5, "the increment and the saturation at 6, read off the binade beside "
                       "the code's add (the OR of the sum's upper bits after its carry chain "
                       "was the critical path, 8.30 ns at 120.5 MHz, depth 62, seed 1); "
                       + _EST),
    "output": Estimate(1.0, "the sign, zero and NaN/Inf-block selects; " + _EST),
}


@dataclass(frozen=True)
class NVQGeometry:
    """An NVFP4 quantizer's parameters and the shape of its datapath.

    Parameters
    ----------
    input_format : golden.FloatFormat
    block_size : int
    levels : int
        1 or 2.
    multipliers : {"lut", "mult18x18d"}
        The lane products in LUTs and carry chains, or in MULT18X18D blocks
        (:mod:`hw.nvfp4.products`).
    """

    input_format: object
    block_size: int
    levels: int
    multipliers: str = "lut"

    @property
    def width(self) -> int:
        """Bits of one input value."""
        return self.input_format.bits

    @property
    def mbits(self) -> int:
        """Fraction bits of the input format."""
        return self.input_format.mbits

    @property
    def tree_radices(self) -> tuple[int, ...]:
        """The radix of each block-max tree level: 2, one 31-bit comparison and a 2:1 select a
        section (a radix-4 level's six comparisons and one-hot select over full magnitudes
        were the critical path at 7.95 ns)."""
        return (2,) * (self.block_size - 1).bit_length()

    @property
    def mul_levels(self) -> int:
        """Levels of the product's tree of carry chains (one row per input significand
        bit)."""
        rows = self.mbits + 1
        return (rows - 1).bit_length()

    @property
    def mul_sections(self) -> int:
        return max(1, -(-self.mul_levels // MUL_LEVELS_PER_SECTION))


def _chunks(steps: int, per: int) -> int:
    return -(-steps // per)


def nvq_sections(g: NVQGeometry) -> dict[str, Estimate]:
    """The sections of a quantizer of geometry ``g``, in datapath order."""
    e = ESTIMATES
    out = {f"amax{j}": e["amax"] for j in range(1, len(g.tree_radices) + 1)}
    out["alz"] = e["alz"]
    out["anorm"] = e["anorm"]
    out.update({f"div3_{j}": e["div3"] for j in range(_chunks(DIV3_STEPS, DIV3_PER_SECTION))})
    out["bup"] = e["round_up"]
    out["bround"] = e["bround"]
    if g.levels == 2:
        out.update({f"pdiv_{j}": e["pdiv"]
                    for j in range(_chunks(PDIV_STEPS, PDIV_PER_SECTION))})
        out["pup"] = e["round_up"]
        out["pround"] = e["pround"]
    out["sclamp"] = e["sclamp"]
    out["scale"] = e["scale"]
    for name in ("rsel", "rpos", "ralign", "rup", "rround", "rlz", "rnorm"):
        out[name] = e[name]
    if g.multipliers == "lut":
        out.update({f"mul_{j}": e["mul"] for j in range(g.mul_sections)})
    else:
        out.update(operands=e["dsp_operands"], multiply=e["dsp_multiply"],
                   drain=e["dsp_drain"], psum=e["psum"])
    out["plz"] = e["plz"]
    out["yup"] = e["round_up"]
    for name in ("yround", "epos", "ealign", "eround", "output"):
        out[name] = e[name]
    return out
