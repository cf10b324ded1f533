"""Normalization of the window sum: sections ``pick`` (its sign and magnitude), ``lzc`` (the
leading chunk) and ``shift_hi``/``shift_lo`` (the left shift, by whole chunks and then by
the leading chunk's own count, clamped at ``lim`` so that subnormal results come out
denormalized).

The window sum is read in chunks of :data:`hw.dot.geometry.CHUNK_BITS` bits from the top, padded
below to whole chunks (:attr:`hw.dot.step.FusedStep.padded_bits`).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux
from amaranth.utils import exact_log2

from ..arith import any_of_kept, kept, leading_zeros, wire
from .geometry import CHUNK_BITS
from .step import FusedStep

__all__ = ["pick", "lzc", "shift"]


def pick(step: FusedStep, s):
    """Section ``pick``: the window sum's sign and magnitude, picked by the signs and the
    borrow.

    Beside it, which chunks of ``mag | marker`` are nonzero, read off the three sums
    directly: per chunk, the OR of each sum's chunk gated by the choice of that sum, then
    their OR with the marker's flag (any_of_kept: each gated OR is mapped on its own, two LUT
    levels by design, then one LUT).  Read after the pick, as the first step of lzc, the flags
    take 5 LUTs and make pick -> lzc fp8_e4m3's worst path at 18 stages (1.6 ns logic +
    3.7-4.0 ns routing); read off the sums, pick is on no seed's worst path at 20 stages.
    """
    m, n = step.m, step.window_bits
    dn = ~s.diff_pos
    mag = wire(m, Mux(s.same, s.total, Mux(dn, s.back, s.diff[:n])), step.name("pick_mag"))
    choices = [(s.same, s.total), (~s.same & dn, s.back), (~s.same & ~dn, s.diff)]

    # Per chunk, the OR of each sum's two half chunks (one LUT each), then three kept terms
    # of one LUT each, a choice and its halves (the marker's flag rides in the first), then
    # their OR: three levels (as gated chunk ORs, any_of_kept, four).
    def halves(value, j):
        lo, hi = max(0, n - CHUNK_BITS * (j + 1)), n - CHUNK_BITS * j
        mid = max(lo, hi - 4)
        return [kept(m, Cat(*(value[i] for i in range(a, b))).any(), step.name(f"pick_h{j}_{a}"))
                for a, b in ((mid, hi), (lo, mid)) if b > a]
    nz = []
    for j in range(step.chunks):
        terms = [chosen & Cat(*halves(value, j)).any() for chosen, value in choices]
        terms[0] = terms[0] | s.marker_nz[j]
        nz.append(any_of_kept(m, terms, step.name(f"chunk_nz{j}")))
    return step.cross({
        **step.specials(s), "lim": s.lim, "t_zero": s.t_zero,
        "neg": Mux(~s.same & dn, s.v_neg, s.u_neg),
        "mag": mag, "mag_marked": mag | s.marker, "nz": Cat(*nz),
    }, "pick")


def lzc(step: FusedStep, s):
    """Section ``lzc``: the normalization shift ``min(leading zeros, lim)`` = leading zeros
    of ``mag | marker`` (a one at bit ``n-1-lim``), coarse: the first nonzero chunk, one-hot
    (``oh``) and as its index ``hz`` (none: the last chunk), with each chunk's own
    leading-zero count."""
    m, np_, nc = step.m, step.padded_bits, step.chunks
    pad = np_ - step.window_bits
    mp = Cat(Const(0, pad), s.mag_marked)
    cb = CHUNK_BITS
    clz = [leading_zeros(m, wire(m, mp[np_ - cb * (j + 1):np_ - cb * j], step.name(f"chunk{j}")),
                         step.name(f"clz{j}"))[:exact_log2(cb)] for j in range(nc)]
    oh = [s.nz[0], *(s.nz[j] & ~s.nz[:j].any() for j in range(1, nc - 1)), ~s.nz[:nc - 1].any()]
    hz = Const(nc - 1, step.geometry.chunk_index_bits)
    for j in reversed(range(nc - 1)):
        hz = Mux(s.nz[j], j, hz)
    return step.cross({
        **step.specials(s), "lim": s.lim, "t_zero": s.t_zero, "neg": s.neg,
        "mag": Cat(Const(0, pad), s.mag), "hz": hz, "oh": Cat(*oh), "clz": clz,
        "mag_nz": Cat(*(step.chunk_any(s.mag, j) for j in range(nc))),
    }, "lzc")


def shift(step: FusedStep, s):
    """Sections ``shift_hi`` and ``shift_lo``.

    ``shift_hi``: shift by ``8*hz`` and pick the fine count of the leading chunk, both as an
    AND-OR of the one-hot choices (3 LUT levels; a mux tree on hz takes 4, and the stage
    measured 5 LUTs, lzc -> shift_hi 1.3 ns logic + 3.8 ns routing).  Beside them, the
    sticky bit of the chunks that the shift takes below the round bit's chunk: the fourth
    chunk below the leading one and all below it (in shift_lo, as an OR of the shifted bits,
    5 LUTs, shift_hi -> shift_lo 4.8 ns).

    ``shift_lo``: shift by the fine count; round bit, sticky, exponent field ``e0 = lim - s``
    (top + 126: 0 for a subnormal result, whose leading bit stays below the top).
    """
    m, np_, nc = step.m, step.padded_bits, step.chunks
    # no frame integer wraps (DotGeometry.frame_bound); e0 lies in 0..lim
    bits = step.geometry.frame_bits
    low = exact_log2(CHUNK_BITS)  # bits of a shift within a chunk
    shifted, fine = Const(0, np_), Const(0, low)
    for j in range(nc):
        shifted = shifted | Mux(s.oh[j], (s.mag << (CHUNK_BITS * j))[:np_], 0)
        fine = fine | Mux(s.oh[j], s.clz[j], 0)
    below = [s.mag_nz[j] & s.oh[:j - 3].any() for j in range(4, nc)]
    s = step.cross({
        **step.specials(s), "t_zero": s.t_zero, "neg": s.neg, "mag": shifted, "fine": fine,
        "lim": (s.lim - Cat(Const(0, low), s.hz))[:bits].as_signed(),
        "sticky": Cat(*below).any(),
    }, "shift_hi")
    p1, fine = s.mag, s.fine
    norm = wire(m, (p1 << fine)[:np_], step.name("norm"))
    # (p1[:np - 32], the bits below the fourth chunk, are in shift_hi's sticky)
    sticky = s.sticky | (p1[np_ - 32:np_ - 25] & (Const(0x7F, 7) >> fine)).any()
    return step.cross({
        **step.specials(s), "t_zero": s.t_zero, "neg": s.neg,
        "sig": norm[np_ - 24:], "guard": norm[np_ - 25], "sticky": sticky,
        "e0": (s.lim - fine)[:bits - 1],
    }, "shift_lo")
