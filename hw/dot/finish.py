"""The fp32 result of the fused step: sections ``round`` (RNE at the fixed place, overflow)
and ``finish`` (the rounded code, overflow to Inf, then the special cases in order).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal

from golden.formats import FP32

from ..arith import wire
from ..rounding import RNE, overflows, round_increment
from .step import FusedStep

__all__ = ["round_result", "finish"]


def round_result(step: FusedStep, s):
    """Section ``round``: RNE at the fixed place; a carry out of the significand bumps the
    exponent.  Overflow beside it, from ``e0`` alone (:func:`hw.rounding.overflows`: ``e0``
    is the binade of round_aligned's code with mbits 23, 0 for a subnormal result).

    The code's fields with and without the increment come from three short carry chains that
    start at the registers: the fraction plus one, and the exponent plus the hidden bit, plus
    one more where the fraction's increment carries out; the increment then picks among them
    (as the code's carry in, it waited for the increment's LUT: shift_lo -> round, 34 cells,
    2.1 ns logic + 3.0 ns routing at fp8_e4m3, 19 stages).  The exponent's two sums add
    different operands, so that synthesis does not build one from the other (it did, for
    code and code + 1: 9 cells, 5.3 ns).
    """
    m = step.m
    up = round_increment(m, s.guard, s.sticky, s.sig[0], RNE, name=step.name("round_up"))
    hidden = s.sig[23]
    # the fraction plus one in two halves of 6 carry cells each, the high half's chosen by
    # the low half's carry out (one 23-bit chain, 12 cells, then the selects is a worst
    # path: shift_lo -> round, 24 cells, 1.8 ns logic + 2.3-2.6 ns routing)
    frac_lo = wire(m, s.sig[:12] + 1, step.name("round_frac_lo"))  # bit 12: the carry out
    frac_hi = wire(m, s.sig[12:23] + 1, step.name("round_frac_hi"))  # bit 11: the carry out
    frac_up = Cat(frac_lo[:12], Mux(frac_lo[12], frac_hi[:11], s.sig[12:23]))
    carry = frac_lo[12] & frac_hi[11]
    exp = wire(m, s.e0 + hidden, step.name("round_exp"))
    exp_up = wire(m, s.e0 + Cat(~hidden, hidden), step.name("round_exp_up"))  # e0 + hidden + 1
    # the increment's selects are finish's, before its own (here, after the chains, they
    # are a worst path: shift_lo -> round, 14-15 cells, 1.7 ns logic + 2.6-2.8 ns routing)
    overflow = overflows(m, s.e0, ebits=FP32.ebits, name=step.name("round_overflow"))
    # The shift stops at mag's leading one or before it, so it loses no bit: the normalized
    # bits are all zero iff the window sum is (exact cancellation).
    zero = ~(s.sig.any() | s.guard | s.sticky)
    return step.cross({**step.specials(s), "t_zero": s.t_zero, "neg": s.neg, "zero": zero,
                       "up": up, "up_carry": up & carry, "frac": s.sig[:23],
                       "frac_up": frac_up, "exp": exp, "exp_up": exp_up,
                       "overflow": overflow}, "round")


def finish(step: FusedStep, s, *, hold_last: bool = False):
    """Section ``finish``: the rounded code, overflow to Inf, then the special cases in
    order (NaN, Inf, T = 0: c unchanged, exact cancellation: +0).  With ``hold_last``
    (MXDotGeneral) only blocks whose side field ``last`` is set wait for the output
    (:meth:`hw.pipeline.Pipeline.hold_when`)."""
    m = step.m
    rounded = Cat(Mux(s.up, s.frac_up, s.frac), Mux(s.up_carry, s.exp_up, s.exp))
    code = Mux(s.overflow, FP32.inf_bits, rounded[:31])[:31]
    c_in = s.c
    result = Signal(32, name=step.name("result"))
    with m.If(s.nan):
        m.d.comb += result.eq(FP32.qnan_bits)
    with m.Elif(s.inf):
        m.d.comb += result.eq(Cat(Const(FP32.inf_bits, 31), s.inf_neg))
    with m.Elif(s.t_zero):  # T = 0: c passes unchanged, a zero c becomes +0
        m.d.comb += result.eq(Mux(s.c_zero, 0, c_in))
    with m.Elif(s.zero):  # exact cancellation: +0
        m.d.comb += result.eq(0)
    with m.Else():
        m.d.comb += result.eq(Cat(code, s.neg))
    if hold_last:
        step.scope.hold_when(s.side.last)
    return step.cross({"result": result, "side": step.side(s)}, "finish")
