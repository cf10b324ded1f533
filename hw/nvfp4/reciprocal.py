"""The NVFP4 quantizer's ``r = f(R / s)``, its division done beside the block path.

R (1 single level, else the payload's ``f(1/P)``) is known when a block enters; the scale s
is known only at the ``scale`` section, but its significand ``sig_s`` is one of eight values,
8..15 (UE4M3: ``1.mmm``).  So the quotient ``floor(sig_R * 2^6 / d)`` and its remainder are
computed for all eight d while the block path runs its amax tree and divisions, each a
restoring division by a constant (:func:`hw.nvfp4.divide.restoring_steps`: with a constant
divisor a step is a function of the 4-bit remainder and one dividend bit), in the last
sections before ``scale`` but two (:func:`rcp_schedule`): R waits in a delay line before
them (:func:`hw.delay_line.delay_line`; eight growing quotients in the stage registers of
every section were a third of the unit's flip-flops, on the latest enable nets).  In the two
sections before ``scale`` each quotient is normalized (its top bit at 27 of 28, the
remainder's OR as the last bit), then its trailing zeros are counted.  Section ``rsel``
then selects the one of the scale's three mantissa bits, ``rpos``, ``ralign``, ``rup``,
``rround`` round it onto the fp32 grid (it may be subnormal, two level), and ``rlz``,
``rnorm`` normalize it for the lanes' products.

Single level R = 1: the eight quotients are constants, computed here at elaboration (the
same integer division), and ``rsel`` is a function of the three mantissa bits.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Mux, Value

import golden

from ..arith import leading_zeros, trailing_zeros
from ..delay_line import delay_line
from ..nets import wire
from ..rounding import RNE, Grid, round_increment
from .divide import restoring_steps
from .scale import signed

__all__ = ["RCP_STEPS", "RCP_STEPS_PER_SECTION", "lsb_candidates", "rcp_candidates",
           "rcp_schedule", "rounded_fields", "rounding_decision", "scale_reciprocal"]

_FP32 = golden.float_format("fp32")
#: Quotient bits of ``floor(sig_R * 2^6 / d)``: sig_R's top 3 bits are the first remainder
#: (below 8 <= d), then its other 21 bits and six zeros.
RCP_STEPS = 27
#: Division steps a section, at least: two table steps are a function of the remainder and
#: two dividend bits (six inputs), one LUT level and a PFUMX.
RCP_STEPS_PER_SECTION = 2
#: The scale significands d = 8 + m, m the UE4M3 byte's three mantissa bits.
DIVISORS = tuple(range(8, 16))
#: The fp32 grid r is rounded onto, from the normalized quotient (28 bits, sticky last).
R_GRID = Grid(sig_width=RCP_STEPS + 1, emin=1 - _FP32.bias, mbits=_FP32.mbits)
#: r's top bit is 2^(top_R - top_s - 1 + hi), top_s = e_s - 7 (e_s the UE4M3 byte's exponent
#: field): ``top_R + R_TOP_BASE - e_s + hi``.
R_TOP_BASE = 6
#: Bits of a candidate's trailing-zero count (a normalized quotient is never zero).
TZ_WIDTH = (RCP_STEPS + 1).bit_length()


def rcp_schedule(sections_before_scale: int) -> tuple[int, int]:
    """``(wait, per)``: the sections before ``scale`` over which R only waits, then ``per``
    division steps in each of the others (all 27 done by the last of them)."""
    per = max(RCP_STEPS_PER_SECTION, -(-RCP_STEPS // sections_before_scale))
    return sections_before_scale - -(-RCP_STEPS // per), per


def _normalized(q, rem_nonzero):
    """``Cat(sticky, q)`` (28 bits) shifted so its top bit is at 27, and whether it was
    there (``hi``: the quotient's top bit at 26)."""
    hi = q[RCP_STEPS - 1]
    sig = Cat(rem_nonzero, q)
    return {"sig": Mux(hi, sig, sig << 1)[:RCP_STEPS + 1], "hi": hi}


def _constant_candidates() -> list[dict]:
    """Single level (R = 1, sig_R = 2^23): the eight normalized quotients of constants and
    their trailing zeros."""
    out = []
    for q, rem in (divmod(1 << 29, d) for d in DIVISORS):
        cand = _normalized(Const(q, RCP_STEPS), Const(rem != 0, 1))
        sig = (q << 1 | (rem != 0)) << (1 - (q >> (RCP_STEPS - 1)))
        out.append({**cand, "tz": Const((sig & -sig).bit_length() - 1, TZ_WIDTH)})
    return out


def rcp_candidates(scope, rcp, names: list[str]):
    """The eight normalized quotients of ``sig_R * 2^6 / d`` and the offsets of r's position on
    the fp32 grid, for section ``rsel``.

    Parameters
    ----------
    scope : hw.scope.PipelineScope
        A scope beside the block path's (its own registers), on the same sections.
    rcp : Value or None
        f(1/P)'s fp32 bits (a positive normal value: P in golden's range); None single level.
    names : list of str
        The block path's sections up to and including ``scale``, in datapath order; the
        block path has crossed them.

    Returns
    -------
    view or dict
        ``cands`` (eight of ``sig``, ``hi`` and ``tz``, its trailing zeros, by d = 8..15) and
        ``at``
        (:meth:`~hw.rounding.Grid.difference_offsets` of ``top_R + R_TOP_BASE``: r's top less
        the scale's exponent field).
    """
    if rcp is None:
        return {"cands": _constant_candidates(),
                "at": R_GRID.difference_offsets(Const(R_TOP_BASE, 4).as_signed())}
    m = scope.module
    # the last two sections before ``scale``: the quotients normalized, then their trailing
    # zeros (a count after the select was the critical path, `rsel` -> `rpos`, 7.12 ns)
    wait, per = rcp_schedule(len(names) - 3)
    rcp = Value.cast(rcp)
    if wait:
        rcp = delay_line(scope.pipeline, rcp, names[:wait], scope.name("wait"))
    sig_r = Cat(rcp[:23], Const(1, 1))
    state = {"top_base": signed(rcp[23:31]) + (R_TOP_BASE - _FP32.bias),
             "rest": Cat(Const(0, 6), sig_r[:21]),
             "div": [{"rem": Cat(sig_r[21:], Const(0, 1)), "q": Const(0, 0)} for _ in DIVISORS]}
    for name in names[wait:-3]:
        rest = Value.cast(state["rest"])
        take = min(per, len(rest))
        div = []
        for d, c in zip(DIVISORS, state["div"], strict=True):
            rem, q = (restoring_steps(m, c["rem"], Const(d, 4), rest[len(rest) - take:],
                                      scope.name(f"rcp{d}_{name}"))
                      if take else (c["rem"], Const(0, 0)))
            div.append({"rem": rem, "q": Cat(q, c["q"])})
        fields = {"top_base": state["top_base"], "div": div}
        if len(rest) > take:
            fields["rest"] = rest[:len(rest) - take]
        x = scope.cross(fields, name)
        state = {"top_base": x.top_base, "rest": x.rest if len(rest) > take else Const(0, 0),
                 "div": [{"rem": c.rem, "q": c.q} for c in x.div]}
    x = scope.cross({"at": R_GRID.difference_offsets(state["top_base"]),
                     "cands": [_normalized(Value.cast(c["q"]), Value.cast(c["rem"]).any())
                               for c in state["div"]]}, names[-3])
    x = scope.cross({"at": x.at, "cands": [
        {"sig": c.sig, "hi": c.hi,
         "tz": trailing_zeros(m, c.sig, scope.name(f"rcp{d}_tz"))}
        for d, c in zip(DIVISORS, x.cands, strict=True)]}, names[-2])
    x = scope.cross({"at": x.at, "cands": [{"sig": c.sig, "hi": c.hi, "tz": c.tz}
                                           for c in x.cands]}, names[-1])
    return {"cands": [{"sig": c.sig, "hi": c.hi, "tz": c.tz} for c in x.cands], "at": x.at}


def lsb_candidates(binade):
    """The three exponents r's last bit can have after :func:`rounded_fields`' increment,
    formed from the binade a section ahead: ``binade + k - 150``, k = 0, 1, 2 (the exponent
    field is ``binade`` plus the hidden bit plus the increment's carry, 1 where that is 0)."""
    return [signed(binade) + (k - _FP32.bias - _FP32.mbits) for k in range(3)]


def rounding_decision(m, grid, lsbs, name: str) -> dict:
    """r's RNE rounding from the aligned ``grid``, all but the increment (section ``rup``):
    ``fraction`` (the 23 kept fraction bits), ``up``, ``exp_nonzero`` (the rounded exponent
    field's OR) and ``lsb``, the exponent of the rounded value's last bit, selected from
    :func:`lsb_candidates`.  :func:`rounded_fields` ends it a section later.

    The code ``(binade << 23) + n + up`` is not formed: its fraction field is the 23-bit
    increment, and its exponent field ``binade + n[23] + carry`` (carry: ``up`` and the
    fraction all ones) only selects an ``lsb``, so no add follows the increment's carry (the
    code's 31-bit add, the exponent's OR and its offset in series were 6.61 ns)."""
    mb = _FP32.mbits
    n = Value.cast(grid.n)
    up = round_increment(m, grid.frac, grid.sticky, n[0], RNE, name=f"{name}_up")
    carry = wire(m, up & n[:mb].all(), f"{name}_carry")
    hidden = n[mb]
    exp_nonzero = Value.cast(grid.binade).any() | hidden | carry
    # candidate hidden + carry, or 1 for a zero exponent field (read as 1)
    lsb = Mux(hidden & carry, lsbs[2], Mux(exp_nonzero & ~(hidden | carry), lsbs[0], lsbs[1]))
    return {"fraction": n[:mb], "up": up, "exp_nonzero": exp_nonzero, "lsb": lsb}


def rounded_fields(decision) -> dict:
    """r rounded (section ``rround``) from :func:`rounding_decision`'s fields (a dict, or a
    view after a register): ``sig`` (24 bits, the hidden bit on top) and ``lsb`` (the decision
    and the increment in one section were 6 LUT levels, 6.68 ns, depth 62, seed 2)."""
    mb = _FP32.mbits
    fraction = Value.cast(decision["fraction"])
    return {"sig": Cat((fraction + decision["up"])[:mb], decision["exp_nonzero"]),
            "lsb": decision["lsb"]}


def _selected(cands, field: str, mant):
    """The candidate's ``field`` that the mantissa bits ``mant`` select."""
    return Array(Value.cast(c[field]) for c in cands)[mant]


def scale_reciprocal(scope, x, mant_copies, rcp):
    """Sections ``rsel`` to ``rnorm``: ``r = f(R / s)`` from the ``scale`` view ``x``, the
    copies of its mantissa bits (:func:`hw.nvfp4.scale.block_scale`; three, each selecting
    a part of the candidates) and :func:`rcp_candidates`' ``rcp``, then normalized for the
    lanes' products (two level r may be subnormal).  Returns the view after ``rnorm``:
    ``nonfinite``, ``byte``, ``sig`` (r's significand, top bit set) and ``lsb`` (the
    exponent of its last bit)."""
    m = scope.module
    byte = x.byte
    half = (RCP_STEPS + 1) // 2
    cands = [{"sig_lo": Value.cast(c["sig"])[:half], "sig_hi": Value.cast(c["sig"])[half:],
              "hi": c["hi"], "tz": c["tz"]} for c in rcp["cands"]]
    sel_lo, sel_hi, sel_rest = mant_copies
    sig = Cat(_selected(cands, "sig_lo", sel_lo), _selected(cands, "sig_hi", sel_hi))
    hi = _selected(cands, "hi", sel_rest)
    tz = _selected(cands, "tz", sel_rest)
    # r's top bit: 2^(top + hi), top = top_R + R_TOP_BASE - e_s.  The grid's constants are
    # folded into top_R + R_TOP_BASE a section ahead (``rcp["at"]``), so beside the 8:1
    # selects each position input and clamp flag is one subtraction or comparison with e_s;
    # both shift positions in ``rpos``, and the selected hi picks one: no carry chain
    # follows a select (the select into the exponent's add was the critical path).
    blk = {"nonfinite": x.nonfinite, "byte": byte}
    # the quotient's trailing zeros, counted before the select: the alignment's sticky bit is
    # then a comparison beside its shifter, not an OR after it (the critical path, 6.70 ns)
    y = scope.cross({**blk, "sig": sig, "hi": hi, "tz": tz,
                     "at": R_GRID.position_inputs_of_difference(rcp["at"], byte[3:7])},
                    "rsel")
    blk = {name: getattr(y, name) for name in blk}
    x = scope.cross({**blk, "sig": y.sig, "tz": y.tz,
                     "position": R_GRID.position_of_either(m, y.at, y.hi,
                                                           name=scope.name("r_rnd"))}, "rpos")
    blk = {name: getattr(x, name) for name in blk}
    grid = R_GRID.align(m, x.sig, x.position, name=scope.name("r_rnd"), trailing_zeros=x.tz)
    x = scope.cross({**blk, "grid": grid, "lsbs": lsb_candidates(x.position.binade)},
                    "ralign")
    blk = {name: getattr(x, name) for name in blk}
    x = scope.cross({**blk, **rounding_decision(m, x.grid, x.lsbs, scope.name("r_rnd"))},
                    "rup")
    blk = {name: getattr(x, name) for name in blk}
    x = scope.cross({**blk, **rounded_fields(x)}, "rround")
    # -- rlz, rnorm: r's leading zeros, then the shift ----------------------------------
    blk = {name: getattr(x, name) for name in blk}
    lz = leading_zeros(m, x.sig, name=scope.name("r_lz"))
    x = scope.cross({**blk, "sig": x.sig, "lsb": x.lsb, "lz": lz}, "rlz")
    blk = {name: getattr(x, name) for name in blk}
    return scope.cross({**blk, "sig": (x.sig << x.lz)[:_FP32.mbits + 1], "lsb": x.lsb - x.lz},
                       "rnorm")
