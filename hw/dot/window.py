"""The window of ``c + T``: sections ``place`` (``|S|``, and the anchoring operand U and the
one to shift, V, in the window), ``align_hi`` and ``align_lo`` (``V >> dist``, the bits
shifted out folded into a sticky bit) and ``add`` (with ``add_lo`` where split: the window sum
``U +- V'`` as three sums, whose pick is :func:`hw.dot.normalize.pick`'s).

``docs/dot.md`` ("The exact c + T") shows that the window is exact to round.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux

from ..arith import add_with_carry, kept, less_than_const, wire
from .geometry import GUARD
from .sections import SIGN_COPY_BITS
from .step import FusedStep

__all__ = ["place", "align", "add"]


def place(step: FusedStep, s, ssum, minus, signs):
    """Section ``place``: ``|S|`` chosen bit by bit from ``S`` (``ssum``) and ``-S = ~(S - 1)``
    (``minus``) by the copies of S's sign (``signs``); U and V in the window."""
    m, n, w = step.m, step.window_bits, step.geometry.sum_bits
    t_neg = wire(m, ssum < 0, step.name("t_neg"))
    t_mag = wire(m, Cat(*(Mux(signs[i // SIGN_COPY_BITS], ~minus[i], ssum[i]) for i in range(w))),
                 step.name("t_mag"))  # |S|: -S = ~(S - 1)
    c_sig = Cat(s.c[:23], s.c[23:31].any())
    t_win = wire(m, Cat(Const(0, GUARD + 1), t_mag, Const(0, n - GUARD - 1 - w)),
                 step.name("t_win"))
    c_win = wire(m, Cat(Const(0, n - 25), c_sig, Const(0, 1)), step.name("c_win"))
    ta = s.t_anchors
    return step.cross({
        **step.specials(s), "dist": s.dist, "lim": s.lim,
        # T = 0 in two steps: groups of up to 16 bits here (two LUT levels), their NOR in
        # align_hi (as one OR of 43 bits here, place was four levels deep)
        "t_nz": Cat(*(ssum[i:i + 16].any() for i in range(0, len(ssum), 16))),
        "lim_small": s.lim_small,
        "u": Mux(ta, t_win, c_win), "v": Mux(ta, c_win, t_win),
        "u_neg": Mux(ta, t_neg, s.c[31]), "v_neg": Mux(ta, s.c[31], t_neg),
        # the window bits that end at or below V's bit 0, i <= dist (their OR is the bit
        # after the shift, sticky included): thermometer gates of the registered distance
        "below": Cat(Const(1, 1), *(~less_than_const(m, s.dist, i, step.name(f"below{i}"))
                                    for i in range(1, n))),
    }, "place")


def _window(s) -> dict:
    """U and the frame, carried through align."""
    return {"lim": s.lim, "u": s.u, "u_neg": s.u_neg, "v_neg": s.v_neg}


def align(step: FusedStep, s):
    """Sections ``align_hi`` and ``align_lo``: ``V >> dist``, the high bits of the distance
    first; bits shifted out of the window folded into a sticky bit.

    V's bit 0 after the shift is the OR of V's bits at or below dist (the bit that lands
    there and the sticky of those shifted out): OR of ``V & below`` in groups of 32 bits in
    align_hi (three LUT levels), their OR in align_lo.  (As the high shift's chunk sticky in
    align_hi and the low shift's in align_lo, each stage was four levels deep.)
    """
    m, n, nb = step.m, step.window_bits, step.shift_bits
    v_below = s.v & s.below
    bit0 = [kept(m, v_below[i:i + 32].any(), step.name(f"align_bit0_{i}")) for i in range(0, n, 32)]
    v = s.v
    for b in reversed(range(nb // 2, nb)):
        shift = 1 << b
        shifted = Const(0, n) if shift >= n else v >> shift
        v = wire(m, Mux(s.dist[b], shifted, v), step.name(f"align_hi_s{b}"))
    s = step.cross({**step.specials(s), **_window(s), "t_zero": ~s.t_nz.any(), "dist": s.dist,
                    "lim_small": s.lim_small, "v": v, "bit0": Cat(*bit0)}, "align_hi")
    v = s.v
    for b in reversed(range(nb // 2)):
        v = wire(m, Mux(s.dist[b], v >> (1 << b), v), step.name(f"align_lo_s{b}"))
    return step.cross({
        **step.specials(s), **_window(s), "t_zero": s.t_zero, "v": Cat(s.bit0.any(), v[1:]),
        "marker": Mux(s.lim_small, Const(1 << (n - 1), n) >> s.lim[:nb], 0),
    }, "align_lo")


def add(step: FusedStep, s):
    """Sections ``add_lo`` (where the window is split) and ``add``: the window sum ``U +- V'``
    as sign and magnitude (both < ``2^(n-1)``: no overflow): ``U + V'``, ``U - V'`` and
    ``V' - U`` in parallel, the magnitude picked (:func:`hw.dot.normalize.pick`) by the signs
    and the borrow.

    Where ``add_lo`` holds a register, the low halves are summed before it and their carry
    bits cross it into the high halves' sums; where it does not, one carry chain per sum is
    faster (two halves in one stage, fp8_e4m3 at 15 of 16 boundaries: 114.3 MHz, median of
    nextpnr seeds 1-3, against 164.2 with one chain).  The three sums cross the boundary as
    they leave their carry chains; the pick, which waits for the top of the difference's
    chain and fans out to every bit, has a section of its own (in one stage, chain, pick and
    fan-out took 5.9 ns at fp8_e4m3, its worst path; as the first step of lzc, 6.5 ns).
    Beside the chains: which chunks of the marker are nonzero.
    """
    m, scope, n = step.m, step.scope, step.window_bits
    if "add_lo" in scope.names and scope.registers("add_lo"):
        h = n // 2
        u, v = s.u, s.v
        # a - b as a + ~b + 1: each half one carry chain, the carry in of the high half the
        # carry out of the low one (for a difference: set iff the low halves do not borrow)
        s = step.cross({
            **step.specials(s), "lim": s.lim, "t_zero": s.t_zero, "marker": s.marker,
            "u_neg": s.u_neg, "v_neg": s.v_neg, "u_hi": u[h:], "v_hi": v[h:],
            "total_lo": add_with_carry(u[:h], v[:h], Const(0, 1)),
            "diff_lo": add_with_carry(u[:h], ~v[:h], Const(1, 1)),
            "back_lo": add_with_carry(v[:h], ~u[:h], Const(1, 1)),
        }, "add_lo")
        u, v = s.u_hi, s.v_hi
        total_hi = wire(m, add_with_carry(u, v, s.total_lo[h]), step.name("win_total_hi"))
        diff_hi = wire(m, add_with_carry(u, ~v, s.diff_lo[h]), step.name("win_diff_hi"))
        back_hi = wire(m, add_with_carry(v, ~u, s.back_lo[h]), step.name("win_back_hi"))
        total = wire(m, Cat(s.total_lo[:h], total_hi), step.name("win_total"))
        # U >= V' is the high half's carry out, crossed as it leaves the chain (its complement,
        # V' > U, is pick's: an inverter here is a LUT after the chain)
        diff = wire(m, Cat(s.diff_lo[:h], diff_hi[:n - h]), step.name("win_diff"))
        diff_pos = diff_hi[n - h]
        back = wire(m, Cat(s.back_lo[:h], back_hi[:n - h], ~back_hi[n - h]), step.name("win_back"))
    else:
        if "add_lo" in scope.names:
            s = scope.boundary(s, "add_lo")  # not registered: s passes unchanged
        u, v = s.u, s.v
        total = wire(m, u + v, step.name("win_total"))
        diff = wire(m, u - v, step.name("win_diff"))  # n+1 bits: bit n set iff V' > U
        diff_pos = ~diff[n]
        back = wire(m, v - u, step.name("win_back"))
    same = wire(m, s.u_neg == s.v_neg, step.name("same_sign"))
    return step.cross({
        **step.specials(s), "lim": s.lim, "t_zero": s.t_zero, "marker": s.marker,
        "same": same, "u_neg": s.u_neg, "v_neg": s.v_neg,
        "total": total[:n], "diff": diff[:n], "diff_pos": diff_pos, "back": back[:n],
        "marker_nz": Cat(*(step.chunk_any(s.marker, j) for j in range(step.chunks))),
    }, "add")
