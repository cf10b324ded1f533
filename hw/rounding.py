"""Rounding of the MX units: one rounding decision and one align-and-round onto a grid.

* :func:`round_increment` -- the decision: round a magnitude up by one unit in the last place
  or truncate it, under RNE, RNA, RTZ or stochastic rounding (mode ids of
  :data:`golden.formats.ROUNDING_IDS`), fixed at elaboration or chosen at run time.  The
  quantizer's element rounding, the dequantizer's bf16/fp16 rounding and the dot unit's final
  fp32 rounding all call it.
* :class:`Grid`, :func:`round_aligned` -- shift a normalized significand onto an IEEE-style
  ``E.M`` grid (subnormals included) and round it there: the shift amount, the shift and the
  rounding are three steps, so pipeline registers can sit between them (the dequantizer).
* :func:`overflows` -- whether such a rounded code reaches Inf, decided from the binade alone,
  beside the increment (the dequantizer's and the dot unit's overflow to Inf).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Value
from amaranth.utils import bits_for

from golden.formats import ROUNDING_IDS

from .arith import less_than_const, wire

__all__ = ["RNE", "RNA", "RTZ", "STOCHASTIC", "round_increment", "Grid", "round_aligned",
           "overflows"]

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
    # truncation).  A separate constant default would never be selected (an equivalent
    # mutant, docs/verification.md).
    modes = (RNE, RNA, RTZ, STOCHASTIC) if rand is not None else (RNE, RNA, RTZ)
    up = up_for(modes[-1])
    for mode in modes[:-1]:
        up = Mux(rounding == mode, up_for(mode), up)
    return wire(m, up, name)


class Grid:
    """An IEEE-style ``E.M`` grid and the shift of a normalized significand onto it.

    The grid's binades ``>= emin`` hold ``mbits`` fraction bits; below ``emin`` the spacing
    stays ``2^(emin - mbits)`` (subnormals).  There is no upper limit here: the caller
    saturates or overflows to infinity by comparing the code of :func:`round_aligned`.

    The shift is two steps, so a pipeline register can sit between them (the dequantizer):
    :meth:`position` (the shift amount and the binade, from the exponent alone) and
    :meth:`align` (the shift itself and its sticky bit).

    Parameters
    ----------
    sig_width : int
        Width of the normalized significands to align (top bit set, or zero).
    emin, mbits : int
        Exponent of the smallest normal binade and fraction bits of the grid.
    frac_bits : int
        Bits of the discarded fraction kept exactly below the last place (1 for RNE).
    top_min : int, optional
        The smallest exponent a non-zero significand's top bit can have.  It bounds the shift
        (a narrower shift amount and shifter, and no sticky logic where nothing reachable is
        shifted out); a zero significand yields code 0 whatever its exponent.
    """

    def __init__(self, *, sig_width: int, emin: int, mbits: int, frac_bits: int = 1,
                 top_min: int | None = None):
        self.sig_width, self.emin, self.mbits, self.frac_bits = sig_width, emin, mbits, frac_bits
        # The grid is finer than sig: sig is padded so the shift below is a right shift.
        self.padded_width = max(sig_width, mbits + 1)
        p, w = self.padded_width, self.padded_width + frac_bits
        # A larger shift leaves n = 0, frac = 0, sticky = (sig != 0): the same as w.
        self.drop_max = w
        # Bits of sig below the grid's last place in a normal binade (more below emin).
        self.drop_normal = p - 1 - mbits
        reach = w if top_min is None else max(emin - top_min, 0) + self.drop_normal
        #: The largest shift a non-zero significand needs; at most ``drop_max``.
        self.drop_reach = min(reach, w)
        #: Whether a shift can exceed ``drop_max`` (then it is clamped there): exactly when
        #: the top is below ``clamp_limit`` (``below > drop_max``).  A narrower grid does not
        #: clamp.
        self.clamps = self.drop_reach >= self.drop_max
        self.clamp_limit = emin + self.drop_normal - self.drop_max

    def position(self, m: Module, above, below=None, name: str = "rnd", *,
                 below_biased: bool = False, clamped=None):
        """The shift amount ``drop`` and the ``binade`` of a significand whose top bit has the
        exponent ``top`` (``floor(log2(value))``), from ``above = top - emin`` (signed).

        ``below`` is ``-above``, if the caller computes it beside ``above`` (then no adder is
        in series here: both results are a select on ``above``'s sign).  With
        ``below_biased``, ``below`` is ``-above + drop_normal``: the caller folded the grid's
        constant offset in where it is formed once for many significands (a block's), and the
        shift amount is a select on ``above``'s sign, without an add.  ``clamped``, with
        ``below_biased``, is ``below > drop_max`` formed by the caller (a comparison of the
        exponent with a constant, :meth:`position_inputs`): then no comparison is here either.
        """
        if clamped is not None and not below_biased:
            raise ValueError("clamped needs below_biased (below > drop_max of a biased below)")
        above = wire(m, Value.cast(above).as_signed(), f"{name}_above")
        if below is None:
            if below_biased:
                raise ValueError("below_biased needs below (-above + drop_normal)")
            below = -above
        below = wire(m, Value.cast(below).as_signed(), f"{name}_below")
        under = above[-1]  # top < emin: a subnormal result, shifted right by emin - top more
        sub = Mux(under, below, 0).as_unsigned()
        if below_biased:
            # sub + drop_normal, the add the caller's (below is positive where under)
            biased = Mux(under, below, self.drop_normal)
            if not self.clamps:
                drop = biased
            else:
                over = biased > self.drop_max if clamped is None else clamped
                drop = Mux(over, self.drop_max, biased)
        elif not self.clamps:
            # top_min bounds sub: no clamp.  A zero significand (one below top_min) may wrap
            # the narrow drop; it shifts zeros either way.
            drop = sub + self.drop_normal
        else:
            drop = Mux(sub > self.drop_max - self.drop_normal, self.drop_max,
                       sub + self.drop_normal)
        return wire(m, {
            "drop": drop[:bits_for(self.drop_reach)],
            "binade": Mux(under, 0, above).as_unsigned()[:len(above) - 1],
        }, f"{name}_position")

    def position_inputs(self, top, *, clamp: bool = True) -> dict:
        """The differences :meth:`position_of_either` takes, for a significand whose top bit
        has the exponent ``top`` or ``top + 1`` (the last a carry not yet known): ``above<k>
        = top + k - emin``, ``below<k>`` its negation plus ``drop_normal`` and ``clamped<k>``
        whether that exceeds ``drop_max`` (``top + k`` below a constant; without ``clamp``
        :meth:`position` compares, for a ``top`` that is itself a chain of adds).  A section
        ahead of the carry forms them, so no add or comparison follows the carry."""
        top = Value.cast(top)
        above = top - self.emin
        limit = self.clamp_limit
        out = {"above0": above, "above1": above + 1,
               "below0": self.drop_normal - above, "below1": self.drop_normal - 1 - above}
        if clamp and self.clamps:
            out.update(clamped0=top < limit, clamped1=top < limit - 1)
        return out

    def difference_offsets(self, base) -> dict:
        """For a top ``base - minus`` whose ``minus`` is known a section after ``base``: the
        grid's constants folded into ``base`` (one add each), for
        :meth:`position_inputs_of_difference` to finish with one subtraction or comparison
        per field."""
        base = Value.cast(base)
        out = {"above0": base - self.emin, "above1": base + (1 - self.emin),
               "below0": (self.drop_normal + self.emin) - base,
               "below1": (self.drop_normal - 1 + self.emin) - base}
        if self.clamps:
            limit = self.clamp_limit
            out.update(clamped0=base - limit, clamped1=base + (1 - limit))
        return out

    def position_inputs_of_difference(self, offsets, minus) -> dict:
        """:meth:`position_inputs` of ``top = base - minus`` (``minus`` unsigned) from
        :meth:`difference_offsets`' ``offsets`` (a view of them after a register, or the
        dict of constants): each difference one subtraction, each clamp flag one comparison
        (``top < clamp_limit`` is ``base - clamp_limit < minus``)."""
        minus = Value.cast(minus).as_unsigned()
        out = {"above0": offsets["above0"] - minus, "above1": offsets["above1"] - minus,
               "below0": offsets["below0"] + minus, "below1": offsets["below1"] + minus}
        if self.clamps:
            out.update(clamped0=offsets["clamped0"] < minus,
                       clamped1=offsets["clamped1"] < minus)
        return out

    def position_of_either(self, m: Module, inputs, plus_one, name: str = "rnd") -> dict:
        """:meth:`position` of ``top + plus_one`` from :meth:`position_inputs`' ``inputs``
        (a view of them after a register): both positions side by side, ``plus_one``
        selects (one LUT level after the carry that decides it)."""
        both = [self.position(m, getattr(inputs, f"above{k}"), getattr(inputs, f"below{k}"),
                              name=f"{name}{k}", below_biased=True,
                              clamped=getattr(inputs, f"clamped{k}", None)) for k in (0, 1)]
        return {field: Mux(plus_one, both[1][field], both[0][field])
                for field in ("drop", "binade")}

    def sticky_limit(self, trailing_zeros):
        """``trailing_zeros`` (of a ``sig_width``-bit significand) plus the grid's padding
        and fraction bits: :meth:`align`'s sticky bit is ``limit < drop``.  A caller that
        has the count a section ahead of the shift passes the limit (``sticky_limit``) and
        leaves only the comparison beside the shifter."""
        pad = self.padded_width - self.sig_width
        return Value.cast(trailing_zeros) + pad + self.frac_bits

    def align(self, m: Module, sig, position, name: str = "rnd", trailing_zeros=None, *,
              sticky_limit=None, excess_shift: bool = False):
        """Shift ``sig`` by ``position.drop`` (from :meth:`position`) onto the grid.

        ``trailing_zeros``, if given, is ``sig``'s count of trailing zero bits (``len(sig)``
        or more for zero), computed where it is cheaper than here (once per block for a
        significand that many lanes share): the sticky bit is then ``trailing_zeros <
        drop - frac_bits``, a comparison beside the shifter, and the shifter only forms the
        kept bits (for a zero ``sig`` the sticky bit is then unspecified, which no rounding of
        a zero kept part and fraction turns into an increment under RNE; the callers' zero
        flags decide such lanes).  Without it the sticky bit is the OR of the shifted-out
        bits.  ``sticky_limit``, instead of ``trailing_zeros``, is
        :meth:`sticky_limit` of the count.

        ``excess_shift`` builds the shifter for the drops :meth:`position` gives a normalized
        ``sig`` (``drop_normal`` to ``drop_max``) only: the kept bits are then sig's top
        ``mbits + 1 + frac_bits`` shifted by ``drop - drop_normal``, and the sticky bit the
        OR of the bits below them (formed without the drop) and of those shifted out of them.
        For a grid much narrower than ``sig`` (e2m1 from 24 bits: 3 kept bits, 4 shifts) it
        is a few LUTs where the full shifter is a tree of every bit.

        Returns
        -------
        View
            Fields ``n`` (the kept significand, hidden bit included for a normal result),
            ``frac`` (``frac_bits`` bits below its last place), ``sticky`` (OR of everything
            further down) and ``binade``: narrow fields, so a pipeline register can sit
            between this and :func:`round_aligned`.
        """
        sig = Value.cast(sig)
        if len(sig) != self.sig_width:
            raise ValueError(f"the grid aligns {self.sig_width}-bit significands, "
                             f"not {len(sig)}-bit")
        p, f = self.padded_width, self.frac_bits
        w = p + f
        pad = p - len(sig)
        sig = Cat(Const(0, pad), sig)
        if trailing_zeros is not None and sticky_limit is not None:
            raise ValueError("trailing_zeros or sticky_limit, not both")
        if excess_shift:
            if trailing_zeros is not None or sticky_limit is not None:
                raise ValueError("excess_shift forms its own sticky bit: no trailing_zeros "
                                 "or sticky_limit")
            return self._align_excess(m, Cat(Const(0, f), sig), position, name)
        if trailing_zeros is not None or sticky_limit is not None:
            # the bits shifted out are sig's below bit drop - f: some is non-zero exactly when
            # the lowest set bit (at trailing_zeros + pad) lies below it
            limit = self.sticky_limit(trailing_zeros) if sticky_limit is None else sticky_limit
            kept = wire(m, (Cat(Const(0, f), sig) >> position.drop)[:w], f"{name}_kept")
            return wire(m, {"n": kept[f:], "frac": kept[:f], "sticky": limit < position.drop,
                            "binade": position.binade}, f"{name}_aligned")
        # One shifter gives the kept bits (upper half) and everything shifted out (lower half).
        ext = Cat(Const(0, w), Const(0, f), sig)
        shifted = wire(m, (ext >> position.drop)[:2 * w], f"{name}_shifted")
        kept = shifted[w:]
        return wire(m, {"n": kept[f:], "frac": kept[:f], "sticky": shifted[:w].any(),
                        "binade": position.binade}, f"{name}_aligned")


    def _align_excess(self, m: Module, ext, position, name: str):
        """:meth:`align` with ``excess_shift``: ``ext`` is the padded ``sig`` with
        ``frac_bits`` zeros below."""
        dn, f = self.drop_normal, self.frac_bits
        top = ext[dn:]  # mbits + 1 + frac_bits bits: what a drop of drop_normal keeps
        tw = len(top)
        # drop - drop_normal is in 0..drop_max - drop_normal: its low bits, modulo their width
        excess = wire(m, (position.drop - dn)[:bits_for(self.drop_max - dn)], f"{name}_excess")
        shifted = wire(m, (Cat(Const(0, tw), top) >> excess)[:2 * tw], f"{name}_shifted")
        kept = shifted[tw:]
        return wire(m, {"n": kept[f:], "frac": kept[:f],
                        "sticky": ext[:dn].any() | shifted[:tw].any(),
                        "binade": position.binade}, f"{name}_aligned")


def round_aligned(m: Module, aligned, *, mbits: int, rounding, rand=None, name: str = "rnd",
                  saturate_at: int | None = None):
    """Round the result of :meth:`Grid.align`: the code ``(binade << mbits) + n + up``.

    ``up`` is :func:`round_increment` (same ``rounding``/``rand`` arguments).  The result is the
    unsigned IEEE-style magnitude code ``E.M``; a carry out of the significand lands on the
    next binade by itself.  Wide enough never to wrap.

    ``saturate_at``, a code whose mantissa field is all ones (the largest finite code of a
    format without Inf: e2m1's ``0b111``), is the result for every larger code.  Whether the
    code is larger is read off ``binade``, ``n`` and ``up`` (the binade above the code's, or
    the code's with ``n`` all ones and an increment) beside the add, not from its sum.
    """
    n = aligned.n
    up = round_increment(m, aligned.frac, aligned.sticky, n[0], rounding, rand, name=f"{name}_up")
    code = wire(m, (aligned.binade << mbits) + n + up, name)
    if saturate_at is None:
        return code
    ones = (1 << mbits) - 1
    if saturate_at & ones != ones or saturate_at >> mbits < 1:
        raise ValueError(f"saturate_at must be a normal code with an all-ones mantissa, not "
                         f"{saturate_at:#x}")
    b_sat = (saturate_at >> mbits) - 1  # n's hidden bit adds one to the binade's exponent
    binade = aligned.binade
    over = wire(m, (binade > b_sat) | ((binade == b_sat) & Value.cast(n)[:mbits + 1].all() & up),
                f"{name}_saturates")
    return wire(m, Mux(over, saturate_at, code), f"{name}_saturated")


def overflows(m: Module, binade, *, ebits: int, name: str):
    """Whether ``code = (binade << mbits) + n + up`` (:func:`round_aligned`'s code, ``n`` with
    its hidden bit set whenever ``binade > 0``) must become Inf on a grid whose Inf code has the
    exponent field all ones (``ebits`` bits) and a zero fraction.

    The code's exponent field is ``binade`` plus ``n``'s hidden bit plus the rounding's carry.
    Without the carry the field is all ones or more exactly when ``binade >= 2^ebits - 2``; with
    it ``binade`` is at most ``2^ebits - 3`` and the code at most the largest finite code plus
    one, which is Inf's code itself.  So ``Mux(overflows(...), inf_code, code)`` equals
    ``Mux(code >= inf_code, inf_code, code)``, and the test is on ``binade`` alone: gates beside
    the increment's carry chain instead of a comparison after it.

    ``name`` names the generated comparison ``binade < 2^ebits - 2``; the result is its
    complement.
    """
    return ~less_than_const(m, binade, (1 << ebits) - 2, name)
