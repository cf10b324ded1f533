"""The truncating steps' sum and result (``accumulation="tcgen05.mxf8f6f4"``,
``"tcgen05.mxf4"``; the mode's :class:`hw.dot.truncated_sections.TruncatedKind`): sections
``tree0``... (the truncated terms added exactly, one adder-tree level per section),
``magnitude``, ``lzc``, ``lzc_select``, ``normalize``, ``position``, ``shift_hi``, ``shift``,
``round`` and ``finish`` (:data:`hw.dot.truncated_sections.SUM_SECTIONS`): each about three
LUT levels or one carry chain, as the exact step's sections.

The sum ``S`` is in units of ``2^(e_max - F)`` (F = 25, or 35 for mxf4); it is rounded
toward zero to fp32 by the units' rounder (:class:`hw.rounding.Grid` and
:func:`hw.rounding.round_aligned` in RTZ mode): ``|S|`` normalized (a leading-zero count and a
left shift, each in two parts: whole chunks, then the rest), then placed on fp32's grid,
whose subnormals keep their spacing (the shift from comparisons of the count made beside the
normalizing shift, then applied in two parts).  A magnitude
``>= 2^128`` is Inf (:func:`hw.rounding.overflows`: RTZ adds no carry, so the test on the
binade alone is exact); every zero result is +0; NaN results are 0x7FFFFFFF; the special
cases override the sum.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Mux, Signal
from amaranth.utils import bits_for

from golden.formats import FP32

from ..arith import leading_zeros, wire
from ..rounding import RTZ, Grid, overflows, round_aligned
from .step import FusedStep
from .truncated_sections import TruncatedKind

__all__ = ["GPU_NAN", "LZC_CHUNK", "sum_terms", "magnitude", "lzc", "lzc_select", "normalize",
           "position", "shift_hi", "shift", "round_rtz", "finish"]

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


#: Bits of the chunks of ``|S|`` whose leading zeros section ``lzc`` counts side by side.
LZC_CHUNK = 8
#: The low bits of the shift onto fp32's grid that section ``shift`` shifts by; ``shift_hi``
#: shifts by the others.
_LOW_SHIFT_BITS = 3


def _chunks(mag) -> list:
    """``mag`` padded below with zeros to whole :data:`LZC_CHUNK`-bit chunks, as its chunks
    from the top."""
    pad = -len(mag) % LZC_CHUNK
    padded = Cat(Const(0, pad), mag)
    top = len(padded)
    return [padded[top - LZC_CHUNK * (j + 1):top - LZC_CHUNK * j]
            for j in range(top // LZC_CHUNK)]


def lzc(step: FusedStep, s, kind: TruncatedKind):
    """Section ``lzc``: per chunk of ``|S|`` (:func:`_chunks`) its leading zeros and whether
    it is the first with a one (one-hot; none for ``S = 0``); beside them the bounds on
    ``lz`` that :func:`position` compares with (:func:`_bounds`)."""
    m = step.m
    chunks = _chunks(s.mag)
    counts = [leading_zeros(m, chunk, step.name(f"lzc{j}"))[:LZC_CHUNK.bit_length() - 1]
              for j, chunk in enumerate(chunks)]
    return step.cross({**_specials(s), **_bounds(s.e_top, _grid(kind)), "e_top": s.e_top,
                       "neg": s.neg, "mag": s.mag, "counts": counts,
                       "first": Cat(*(chunk.any() & ~Cat(*chunks[:j]).any() if j else chunk.any()
                                      for j, chunk in enumerate(chunks))),
                       "side": step.side(s)}, "lzc")


def _bounds(e_top, grid: Grid) -> dict:
    """What :meth:`hw.rounding.Grid.position` computes from ``above = e_top - lz`` and
    ``below = -above``, as bounds ``lz`` is compared with (the sign of a difference, one
    carry chain): ``above < 0`` (a subnormal result) is ``lz >= e_top + 1``; the clamp
    ``below > drop_max - drop_normal`` is ``lz >= e_top + drop_max - drop_normal + 1``;
    ``below + drop_normal`` is ``lz - (e_top - drop_normal)``."""
    return {"under_at": e_top + 1, "clamp_at": e_top + (grid.drop_max - grid.drop_normal + 1),
            "drop_at": e_top - grid.drop_normal}


def lzc_select(step: FusedStep, s):
    """Section ``lzc_select``: ``|S|`` shifted left by whole chunks, its first chunk with a one
    on top, and the leading zeros of ``|S|``: that chunk's index and its own count."""
    chunks = _chunks(s.mag)
    width = len(chunks) * LZC_CHUNK
    padded = Cat(*reversed(chunks))
    coarse = Const(0, width)
    fine = Const(0, LZC_CHUNK.bit_length() - 1)
    index = Const(0, max(1, (len(chunks) - 1).bit_length()))
    for j in range(len(chunks)):
        hit = s.first[j]
        coarse = coarse | ((padded << (LZC_CHUNK * j))[:width] & hit.replicate(width))
        fine = fine | (s.counts[j] & hit.replicate(len(fine)))
        index = index | (Const(j, len(index)) & hit.replicate(len(index)))
    return step.cross({**_specials(s), "e_top": s.e_top, "under_at": s.under_at,
                       "clamp_at": s.clamp_at, "drop_at": s.drop_at, "neg": s.neg,
                       "coarse": coarse, "fine": fine, "lz": Cat(fine, index),
                       "side": step.side(s)}, "lzc_select")


def normalize(step: FusedStep, s, kind: TruncatedKind):
    """Section ``normalize``: ``|S| << lz`` (the chunk's own leading zeros after the whole
    chunks), and beside it ``top + 126 = e_top - lz`` and the comparisons of ``lz`` with its
    bounds (:func:`_bounds`), each one carry chain."""
    m = step.m
    width = len(s.coarse)
    norm = wire(m, (s.coarse << s.fine)[width - kind.sum_bits:width], step.name("norm"))
    return step.cross({**_specials(s), "neg": s.neg, "norm": norm,
                       "above": (s.e_top - s.lz).as_signed(), "under": ~(s.lz - s.under_at)[-1],
                       "clamp": ~(s.lz - s.clamp_at)[-1], "drop": (s.lz - s.drop_at).as_signed(),
                       "side": step.side(s)}, "normalize")


def position(step: FusedStep, s, kind: TruncatedKind):
    """Section ``position``: the shift onto fp32's grid and the binade, as
    :meth:`hw.rounding.Grid.position` has them (``drop_normal`` for a normal result, the
    subnormal's ``below + drop_normal`` clamped to ``drop_max``), from the comparisons made
    before: two selects."""
    grid = _grid(kind)
    if not grid.clamps:
        raise ValueError("the truncating steps' grids clamp the shift (drop_reach = drop_max)")
    drop = Mux(s.under, Mux(s.clamp, grid.drop_max, s.drop), grid.drop_normal)
    return step.cross({**_specials(s), "neg": s.neg, "norm": s.norm,
                       "drop": drop.as_unsigned()[:bits_for(grid.drop_reach)],
                       "binade": Mux(s.under, 0, s.above).as_unsigned()[:len(s.above) - 1],
                       "side": step.side(s)}, "position")


def shift_hi(step: FusedStep, s):
    """Section ``shift_hi``: the normalized magnitude, one fraction bit below it as in
    :meth:`hw.rounding.Grid.align`, shifted right by the high bits of the shift."""
    low = _LOW_SHIFT_BITS
    placed = Cat(Const(0, 1), s.norm)
    coarse = (placed >> Cat(Const(0, low), s.drop[low:]))[:len(placed)]
    return step.cross({**_specials(s), "neg": s.neg, "coarse": coarse, "fine": s.drop[:low],
                       "binade": s.binade, "side": step.side(s)}, "shift_hi")


def shift(step: FusedStep, s):
    """Section ``shift``: the shift by its low bits: ``n``, the kept significand
    (:meth:`hw.rounding.Grid.align`'s, whose shift leaves it below ``2^(FP32.mbits + 1)``:
    the shift is at least ``Grid.drop_normal``)."""
    n = wire(step.m, (s.coarse >> s.fine)[1:FP32.mbits + 2], step.name("rz_n"))
    return step.cross({**_specials(s), "neg": s.neg, "n": n, "binade": s.binade,
                       "side": step.side(s)}, "shift")


def round_rtz(step: FusedStep, s):
    """Section ``round``: the code rounded toward zero (:func:`hw.rounding.round_aligned`,
    RTZ), whether it overflows to Inf (:func:`hw.rounding.overflows`) and whether it is
    zero."""
    m = step.m
    aligned = SimpleNamespace(n=s.n, frac=Const(0, 1), sticky=Const(0, 1), binade=s.binade)
    code = round_aligned(m, aligned, mbits=FP32.mbits, rounding=RTZ, name=step.name("rz"))
    overflow = overflows(m, s.binade, ebits=FP32.ebits, name=step.name("rz_overflow"))
    return step.cross({**_specials(s), "neg": s.neg, "code": code[:31], "overflow": overflow,
                       "zero": s.n == 0, "side": step.side(s)}, "round")


def finish(step: FusedStep, s, *, hold_last: bool = False):
    """Section ``finish``: the special cases in order over the code (NaN 0x7FFFFFFF, +-Inf,
    every zero +0, Inf from ``2^128``).  With ``hold_last`` (MXDotGeneral) only blocks whose
    side field ``last`` is set wait for the output."""
    m = step.m
    result = Signal(32, name=step.name("result"))
    with m.If(s.nan):
        m.d.comb += result.eq(GPU_NAN)
    with m.Elif(s.inf):
        m.d.comb += result.eq(Cat(Const(FP32.inf_bits, 31), s.inf_neg))
    # n = 0: a zero sum, or one truncated to nothing below 2^-149 (a non-zero normal result
    # has n's hidden bit); every zero is +0.  Before the overflow: a zero sum's binade is
    # e_max's, which at large scales lies beyond fp32's
    with m.Elif(s.zero):
        m.d.comb += result.eq(0)
    with m.Elif(s.overflow):
        m.d.comb += result.eq(Cat(Const(FP32.inf_bits, 31), s.neg))
    with m.Else():
        m.d.comb += result.eq(Cat(s.code, s.neg))
    if hold_last:
        step.scope.hold_when(s.side.last)
    return step.cross({"result": result, "side": step.side(s)}, "finish")
