"""Rounding of the MX units: one rounding decision and one align-and-round onto a grid.

* :func:`round_increment` -- the decision: round a magnitude up by one unit in the last place
  or truncate it, under RNE, RNA, RTZ or stochastic rounding (mode ids of
  :data:`golden.formats.ROUNDING_IDS`), fixed at elaboration or chosen at run time.  The
  quantizer's element rounding, the dequantizer's bf16/fp16 rounding and the dot unit's final
  fp32 rounding all call it.
* :func:`align_to_grid`, :func:`round_aligned` -- shift a normalized significand onto an
  IEEE-style ``E.M`` grid (subnormals included) and round it there: two halves, so a pipeline
  register can sit between them (the dequantizer).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Value
from amaranth.utils import bits_for

from golden.formats import ROUNDING_IDS

from .arith import smax, wire

__all__ = ["RNE", "RNA", "RTZ", "STOCHASTIC", "round_increment", "align_to_grid",
           "round_aligned"]

#: Rounding-mode ids (the encoding of a runtime ``rounding`` field; golden.formats).
RNE, RNA, RTZ, STOCHASTIC = (ROUNDING_IDS[r] for r in ("rne", "rna", "rtz", "stochastic"))


def round_increment(m: Module, frac, sticky, lsb, rounding, rand=None, name: str = "up"):
    """The increment of one rounding: 1 to round the magnitude up, 0 to truncate.

    Parameters
    ----------
    m : Module
    frac : Value
        The ``f`` discarded bits right below the last kept place (the top one is the guard
        bit); ``f`` = R for stochastic rounding, 1 suffices otherwise.
    sticky : Value
        OR of every discarded bit below ``frac``.
    lsb : Value
        The last kept bit (RNE's tie breaker).
    rounding : int or Value
        :data:`RNE`, :data:`RNA`, :data:`RTZ` or :data:`STOCHASTIC`: an int builds only that
        mode's logic; a 2-bit Value selects at run time (stochastic only if ``rand`` is given).
    rand : Value, optional
        ``f`` random bits: stochastic rounding rounds up iff ``frac + rand >= 2^f``.
    name : str
        Prefix of the generated signals.

    Returns
    -------
    Signal
        1 bit: RNE ``guard & (below | lsb)``, RNA ``guard``, RTZ 0, stochastic the carry out
        of ``frac + rand`` (``below``: any discarded bit under the guard bit).
    """
    frac = Value.cast(frac)
    f = len(frac)
    guard = frac[f - 1]
    below = wire(m, frac[:f - 1].any() | sticky if f > 1 else Value.cast(sticky), f"{name}_below")

    def up_for(mode):
        if mode == RNE:
            return guard & (below | lsb)
        if mode == RNA:
            return guard
        if mode == RTZ:
            return Const(0, 1)
        if mode == STOCHASTIC:
            if rand is None:
                raise ValueError("stochastic rounding needs random bits")
            return (frac + Value.cast(rand)[:f])[f]  # carry out: frac + rand >= 2^f
        raise ValueError(f"unknown rounding id {mode!r}")

    if isinstance(rounding, int):
        return wire(m, up_for(rounding), name)
    # The last mode is the default arm: with random bits the four modes fill the 2-bit field;
    # without, the unused stochastic code gets rtz's arm (R = 0 stochastic rounding is
    # truncation).  A separate constant default was never selected (an equivalent mutant
    # showed it, docs/verification.md).
    modes = (RNE, RNA, RTZ, STOCHASTIC) if rand is not None else (RNE, RNA, RTZ)
    up = up_for(modes[-1])
    for mode in modes[:-1]:
        up = Mux(rounding == mode, up_for(mode), up)
    return wire(m, up, name)


def align_to_grid(m: Module, sig, top, *, emin: int, mbits: int, frac_bits: int = 1,
                  name: str = "rnd"):
    """Shift ``sig * 2^(top - len(sig) + 1)`` onto the grid of an ``E.M`` format.

    The grid is IEEE-style: binades ``>= emin`` hold ``mbits`` fraction bits, below ``emin``
    the spacing stays ``2^(emin - mbits)`` (subnormals).  There is no upper limit here: the
    caller saturates or overflows to infinity by comparing the code of :func:`round_aligned`.

    Parameters
    ----------
    m : Module
    sig : Value
        Normalized significand (its top bit set; or zero, which yields code 0).
    top : Value
        Signed exponent of ``sig``'s top bit, i.e. ``floor(log2(value))``.
    emin, mbits : int
        Target format: exponent of the smallest normal binade and fraction bits.
    frac_bits : int
        Bits of the discarded fraction kept exactly below the last place.
    name : str
        Prefix of the generated signals.

    Returns
    -------
    View
        Fields ``n`` (the kept significand, hidden bit included for a normal result),
        ``frac`` (``frac_bits`` bits below its last place), ``sticky`` (OR of everything
        further down) and ``binade`` (``max(top - emin, 0)``): narrow fields, so a pipeline
        register can sit between this and :func:`round_aligned`.
    """
    sig = Value.cast(sig)
    top = wire(m, top, f"{name}_top")
    if len(sig) - 1 < mbits:  # the grid is finer than sig: pad so the shift below is a right shift
        sig = Cat(Const(0, mbits - len(sig) + 1), sig)
    p, f = len(sig), frac_bits
    w = p + f
    # Bits of sig below the grid's last place: p-1-mbits in a normal binade, more below emin.
    sub = smax(m, emin - top, 0, name=f"{name}_sub")
    drop_max = w  # a larger shift leaves n = 0, frac = 0, sticky = (sig != 0): same as w
    drop = Mux(sub > drop_max - (p - 1 - mbits), drop_max, sub + (p - 1 - mbits))
    drop = wire(m, drop.as_unsigned()[:bits_for(drop_max)], f"{name}_drop")
    # One shifter gives the kept bits (upper half) and everything shifted out (lower half).
    ext = Cat(Const(0, w), Const(0, f), sig)
    shifted = wire(m, (ext >> drop)[:2 * w], f"{name}_shifted")
    kept = shifted[w:]
    binade = smax(m, top - emin, 0, name=f"{name}_binade").as_unsigned()
    return wire(m, {"n": kept[f:], "frac": kept[:f], "sticky": shifted[:w].any(),
                    "binade": binade}, f"{name}_aligned")


def round_aligned(m: Module, aligned, *, mbits: int, rounding, rand=None, name: str = "rnd"):
    """Round the result of :func:`align_to_grid`: the code ``(binade << mbits) + n + up``.

    ``up`` is :func:`round_increment` (same ``rounding``/``rand`` arguments).  The result is the
    unsigned IEEE-style magnitude code ``E.M``; a carry out of the significand lands on the
    next binade by itself.  Wide enough never to wrap.
    """
    n = aligned.n
    up = round_increment(m, aligned.frac, aligned.sticky, n[0], rounding, rand, name=f"{name}_up")
    return wire(m, (aligned.binade << mbits) + n + up, name)
