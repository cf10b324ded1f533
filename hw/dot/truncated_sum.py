"""The truncating steps' sum and result (``accumulation="tcgen05.mxf8f6f4"``,
``"tcgen05.mxf4"``; the mode's :class:`hw.dot.truncated_sections.TruncatedKind`): sections
``tree0``... (the truncated terms added exactly, one adder-tree level per section),
``magnitude``, ``lzc``, ``normalize``, ``shift`` and ``finish``.

The sum ``S`` is in units of ``2^(e_max - F)`` (F = 25, or 35 for mxf4); it is rounded
toward zero to fp32 by the units' rounder (:class:`hw.rounding.Grid` and
:func:`hw.rounding.round_aligned` in RTZ mode): ``|S|`` normalized (a leading-zero count and a
left shift), then placed on fp32's grid, whose subnormals keep their spacing.  A magnitude
``>= 2^128`` is Inf (:func:`hw.rounding.overflows`: RTZ adds no carry, so the test on the
binade alone is exact); every zero result is +0; NaN results are 0x7FFFFFFF; the special
cases override the sum.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Mux, Signal

from golden.formats import FP32

from ..arith import leading_zeros, wire
from ..rounding import RTZ, Grid, overflows, round_aligned
from .step import FusedStep
from .truncated_sections import TruncatedKind

__all__ = ["GPU_NAN", "sum_terms", "magnitude", "lzc", "normalize", "shift", "finish"]

#: The NaN of every truncating step.
GPU_NAN = 0x7FFFFFFF


def _grid(kind: TruncatedKind) -> Grid:
    """fp32's grid: normalized ``sum_bits``-bit significands onto 23 fraction bits,
    subnormals kept; the smallest non-zero sum, one unit at the floor, has its top at
    ``2^(zero_exponent - fraction_bits)``."""
    return Grid(sig_width=kind.sum_bits, emin=1 - FP32.bias, mbits=FP32.mbits, frac_bits=1,
                top_min=kind.zero_exponent - kind.fraction_bits)


def _specials(s) -> dict:
    return {"nan": s.nan, "inf": s.inf, "inf_neg": s.inf_neg}


def sum_terms(step: FusedStep, s, kind: TruncatedKind):
    """Sections ``tree0``, ``tree1``, ...: the signed terms added in pairs, one level per
    section (an odd last term passes the level), ``sum_bits + 1`` bits signed at most."""
    level = [s.terms[i] for i in range(len(s.terms))]
    width = kind.sum_bits + 1
    for j in range((len(level) - 1).bit_length()):
        level = [(level[i] + level[i + 1]) if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
        level = [v.as_signed()[:width].as_signed() for v in level]
        # the terms of one level share a shape: an odd last one is sign-extended to it
        level = [Cat(v, v[-1].replicate(len(level[0]) - len(v))).as_signed() for v in level]
        s = step.cross({**_specials(s), "e_top": s.e_top, "terms": level,
                        "side": step.side(s)}, f"tree{j}")
        level = [s.terms[i] for i in range(len(level))]
    return s


def magnitude(step: FusedStep, s, kind: TruncatedKind):
    """Section ``magnitude``: ``|S|`` and its sign."""
    total = s.terms[0]
    neg = total[-1]
    mag = Mux(neg, -total, total).as_unsigned()[:kind.sum_bits]
    return step.cross({**_specials(s), "e_top": s.e_top, "neg": neg, "mag": mag,
                       "side": step.side(s)}, "magnitude")


def lzc(step: FusedStep, s):
    """Section ``lzc``: the leading zeros of ``|S|``."""
    lz = leading_zeros(step.m, s.mag, step.name("lzc"))
    return step.cross({**_specials(s), "e_top": s.e_top, "neg": s.neg, "mag": s.mag,
                       "lz": lz, "side": step.side(s)}, "lzc")


def normalize(step: FusedStep, s, kind: TruncatedKind):
    """Section ``normalize``: ``|S| << lz``, and beside it the position on fp32's grid
    (:meth:`hw.rounding.Grid.position`) from ``top + 126 = e_top - lz``."""
    m = step.m
    grid = _grid(kind)
    norm = wire(m, (s.mag << s.lz)[:kind.sum_bits], step.name("norm"))
    pos = grid.position(m, (s.e_top - s.lz).as_signed(), name=step.name("rz"))
    return step.cross({**_specials(s), "neg": s.neg, "norm": norm, "drop": pos.drop,
                       "binade": pos.binade, "side": step.side(s)}, "normalize")


def shift(step: FusedStep, s, kind: TruncatedKind):
    """Section ``shift``: the normalized magnitude shifted onto fp32's grid
    (:meth:`hw.rounding.Grid.align`)."""
    grid = _grid(kind)
    aligned = grid.align(step.m, s.norm, SimpleNamespace(drop=s.drop, binade=s.binade),
                         name=step.name("rz"))
    return step.cross({**_specials(s), "neg": s.neg, "n": aligned.n,
                       "binade": aligned.binade, "side": step.side(s)}, "shift")


def finish(step: FusedStep, s, *, hold_last: bool = False):
    """Section ``finish``: the code rounded toward zero (:func:`hw.rounding.round_aligned`,
    RTZ), then the special cases in order (NaN 0x7FFFFFFF, +-Inf, every zero +0, Inf from
    ``2^128``, :func:`hw.rounding.overflows`).  With ``hold_last`` (MXDotGeneral) only blocks
    whose side field ``last`` is set wait for the output."""
    m = step.m
    aligned = SimpleNamespace(n=s.n, frac=Const(0, 1), sticky=Const(0, 1))
    aligned.binade = s.binade
    code = round_aligned(m, aligned, mbits=FP32.mbits, rounding=RTZ, name=step.name("rz"))
    overflow = overflows(m, s.binade, ebits=FP32.ebits, name=step.name("rz_overflow"))
    result = Signal(32, name=step.name("result"))
    with m.If(s.nan):
        m.d.comb += result.eq(GPU_NAN)
    with m.Elif(s.inf):
        m.d.comb += result.eq(Cat(Const(FP32.inf_bits, 31), s.inf_neg))
    # n = 0: a zero sum, or one truncated to nothing below 2^-149 (a non-zero normal result
    # has n's hidden bit); every zero is +0.  Before the overflow: a zero sum's binade is
    # e_max's, which at large scales lies beyond fp32's
    with m.Elif(s.n == 0):
        m.d.comb += result.eq(0)
    with m.Elif(overflow):
        m.d.comb += result.eq(Cat(Const(FP32.inf_bits, 31), s.neg))
    with m.Else():
        m.d.comb += result.eq(Cat(code[:31], s.neg))
    if hold_last:
        step.scope.hold_when(s.side.last)
    return step.cross({"result": result, "side": step.side(s)}, "finish")
