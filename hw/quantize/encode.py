"""The quantizer's lane sections after the scale: ``cmp``, ``shift``, ``align``, ``round``
and ``output``.

Each lane's element binade ``br = key - e_key`` (``cmp``) sets its exponent field and its
alignment shift (``shift``); the normalized significand is shifted onto the element grid with
a sticky bit (``align``), rounded and saturated (``round``) and encoded, with the block's
zero and NaN/Inf cases (``output``).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux
from amaranth.utils import bits_for

from golden.formats import ROUNDING_IDS, SCALE_BIAS, SCALE_EMAX, SCALE_EMIN, SCALE_NAN

from ..arith import increment_gates, less_than_const, negate_gates, wire
from ..elements import encode_element
from ..rounding import round_increment

__all__ = ["cmp_section", "shift_section", "align_section", "round_section",
           "output_section"]


def _block_fields(g, x) -> dict:
    """The block's fields every section from ``cmp`` to ``align`` carries beside its lanes."""
    return {**g.ctl_fields(x, scale_mode=False), "scale": x.scale, "nonfinite": x.nonfinite}


def cmp_section(scope, g, y, e_keys):
    """``cmp``: per lane the element binade ``br = key - e_key`` (negative: element
    subnormal), with its group's copy of ``e_keys``; beside the lanes the scale code
    ``e + 127`` (0 for a zero block, 255 for a NaN/Inf one).  ``y`` is the view after the
    scale.

    This is the only per-lane use of a block-wide value, and e_key's register drives all k
    lanes, spread over the die: its routing alone takes about half a 200 MHz cycle.  So this
    section is one subtraction per lane and nothing else (a carry chain whose sum bits feed
    the cmp register directly); every test of br comes after the register, in shift, on
    lane-local values.  br's exact range (key in [zero_key, e_max_key], e_key within the
    clamp) sets its width: 10 bits for bf16/fp32 input.
    """
    m, k, e_key_off = scope.module, g.block_size, g.e_key_off
    br_lo = g.zero_key - (SCALE_EMAX + e_key_off)
    br_hi = g.e_max_key - (SCALE_EMIN + e_key_off)
    bw = max(bits_for(br_lo, True), bits_for(br_hi, True))
    lanes = []
    for i in range(k):
        ln = y.lanes[i]
        e_key = e_keys[i * len(e_keys) // k]  # its group's copy
        br = wire(m, (ln.key - e_key)[:bw].as_signed(), scope.name(f"lane{i}_br"))
        lanes.append({"neg": ln.neg, "zero": ln.zero, "s2": ln.s2, "br": br})
    scale = (e_keys[0] + (SCALE_BIAS - e_key_off))[:8]
    if not g.exponent_field_tree:
        scale = Mux(y.zero, 0, scale)
    scale = Mux(y.nonfinite, SCALE_NAN, scale)
    return scope.cross({"lanes": lanes, **g.ctl_fields(y, scale_mode=False), "scale": scale,
                        "nonfinite": y.nonfinite}, "cmp")


def shift_section(scope, g, y):
    """``shift``: per lane the exponent field (0 below emin) and the alignment shift.

    Two range tests of br (br < 0: element subnormal; br < -keep: nothing reaches n) and the
    low bits of br + 1 and -br, in parallel.  No test for br above the element's range: the
    block's scale puts the largest lane in the top normal binade or below (br <= emax - emin;
    the scale's clamp at 2^127 only ever raises br of rceil's a = 1 back to that of a = 0),
    so br + 1 <= b_ovf + 1 always fits the field, and codes above max_code are clamped by the
    round section's ``sat`` test.
    """
    m, keep = scope.module, g.keep
    fw, sw = bits_for(g.b_ovf + 1), bits_for(keep)
    lanes = []
    for i in range(g.block_size):
        ln = y.lanes[i]
        br = ln.br
        under = br[-1]  # br < 0
        # gates, not carry chains: see less_than_const
        gone = less_than_const(m, br, -keep, scope.name(f"lane{i}_gone"), tree=True)
        field = Mux(under, 0, increment_gates(br[:fw]))  # (br + 1)[:fw]
        field = wire(m, field, scope.name(f"lane{i}_field"))
        sh = wire(m, Mux(~under, 0, Mux(gone, keep, negate_gates(br[:sw])[:sw])),
                  scope.name(f"lane{i}_sh"))  # (-br)[:sw]
        lanes.append({"neg": ln.neg, "zero": ln.zero, "s2": ln.s2, "sh": sh, "field": field})
    return scope.cross({"lanes": lanes, **_block_fields(g, y)}, "shift")


def align_section(scope, g, z):
    """``align``: per lane the right shift onto the grid: ``n`` (hidden bit included), the
    fraction bits below it and the sticky bit."""
    m, mb, f = scope.module, g.mb, g.f
    lanes = []
    for i in range(g.block_size):
        ln = z.lanes[i]
        d0 = len(ln.s2) - 1 - mb  # bits of s2 below the grid in a normal binade
        v = Cat(Const(0, f), ln.s2)  # s2 with f fraction bits below
        kept = wire(m, v[d0:] >> ln.sh, scope.name(f"lane{i}_kept"))  # keep bits
        sticky = 0
        for j in range(d0):  # v[j] is shifted out when j < d0 + sh
            sticky = sticky | v[j]
        for j in range(d0, len(v)):  # sh > j - d0, as gates (see less_than_const)
            out = ~less_than_const(m, ln.sh, j - d0 + 1, scope.name(f"lane{i}_out{j}"),
                                   tree=True)
            sticky = sticky | (v[j] & out)
        lanes.append({"neg": ln.neg, "zero": ln.zero, "field": ln.field,
                      "n": kept[f:f + mb], "frac": kept[:f],
                      "sticky": wire(m, sticky, scope.name(f"lane{i}_sticky"))})
    return scope.cross({"lanes": lanes, **_block_fields(g, z)}, "align")


def round_section(scope, g, z):
    """``round``: per lane the increment and the saturation (code + 1 and both saturation
    tests in parallel), to the code's magnitude."""
    m, fmt = scope.module, g.fmt
    rounding = z.rounding if g.runtime_rounding else ROUNDING_IDS[g.rounding]
    lanes = []
    for i in range(g.block_size):
        ln = z.lanes[i]
        n, frac = ln.n, ln.frac
        code = wire(m, Cat(n, ln.field), scope.name(f"lane{i}_code"))  # E.M, unrounded
        # the even neighbour of a tie (docs/numerics.md section 1): the code's lsb; for
        # M = 0 every normal significand is 1 (odd) and only zero is even
        lsb = n[0] if fmt.mbits else ln.field.any()
        up = round_increment(m, frac, ln.sticky, lsb, rounding,
                             z.random[i] if g.stochastic else None,
                             name=scope.name(f"lane{i}_up"))
        sat_inc = ~less_than_const(m, code, fmt.max_code - 1, scope.name(f"lane{i}_sat_inc"),
                                   tree=True)
        sat = ~less_than_const(m, code, fmt.max_code, scope.name(f"lane{i}_sat"), tree=True)
        inc = Mux(sat_inc, fmt.max_code, code + 1)
        same = Mux(sat, fmt.max_code, code)
        mag = wire(m, Mux(up, inc, same)[:fmt.bits], scope.name(f"lane{i}_mag"))
        zero = ln.zero
        if fmt.twos_complement:  # a NaN/Inf block's codes are a zero lane's (see output)
            zero = wire(m, zero | z.nonfinite, scope.name(f"lane{i}_zero_code"))
        lanes.append({"neg": ln.neg, "zero": zero, "mag": mag})
    return scope.cross({"lanes": lanes, "scale": z.scale,
                        "nonfinite": None if fmt.twos_complement else z.nonfinite}, "round")


def output_section(scope, g, z):
    """``output``: per lane the code, with zero, the sign and a NaN/Inf block.

    A NaN/Inf block's codes are all 0.  Sign-magnitude: a select after the encoding.  Two's
    complement has no signed zero, so there the block's codes are its zero lanes' (round ORs
    the flag into each lane's): a select of 0 after the negation's carry chain, in front of
    the output register, would become the register's synchronous reset in yosys, its
    condition ANDed with the stage enable in a LUT driving every LSR (bf16 -> int8:
    q_output_en -> q_output, 1 cell, 0.9 ns logic + 4.2-4.4 ns routing).
    """
    m, fmt = scope.module, g.fmt
    codes = []
    for i in range(g.block_size):
        ln = z.lanes[i]
        code = encode_element(m, ln.neg, Mux(ln.zero, 0, ln.mag), fmt, scope.name(f"lane{i}_out"))
        codes.append(code if fmt.twos_complement else Mux(z.nonfinite, 0, code))
    return scope.cross({"scale": z.scale, "codes": codes}, "output")
