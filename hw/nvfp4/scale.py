"""The NVFP4 quantizer's block path: amax, ``b = f(amax / 6)``, two level ``f(b / P)`` and the
UE4M3 cast of the clamped value (``r = f(R / s)``: :mod:`hw.nvfp4.reciprocal`).

Each f() is one fp32 RNE rounding, reproduced exactly: every division is exact (a restoring
division's quotient and its remainder), rounded once by :func:`hw.rounding.round_increment`.
``f(amax / 6)`` and ``f(b / P)`` are rounded with an unbounded
exponent: a value below fp32's normal range is below the clamp's 2^-6 either way (P at most
2^119, golden's range), and one above it above 448.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Value

import golden

from ..arith import leading_zeros
from ..maxtree import max_tree_levels
from ..nets import wire
from ..rounding import RNE, round_increment
from .divide import divide_over_sections
from .sections import DIV3_PER_SECTION, DIV3_STEPS, PDIV_PER_SECTION, PDIV_STEPS

__all__ = ["block_scale", "signed", "magnitude_fields", "significand_leading_zeros",
           "CLAMP_LO_BYTE", "CLAMP_HI_BYTE", "MANTISSA_COPIES"]

_FP32 = golden.float_format("fp32")
#: UE4M3 bytes of the clamp's ends: 2^-6 and 448.
CLAMP_LO_BYTE, CLAMP_HI_BYTE = 0x08, 0x7E
_E4_EMIN, _E4_EMAX = -6, 8  # UE4M3's normal binades
#: Registered copies of the scale's mantissa bits, each selecting a part of r's eight
#: candidates (34 bits each: one copy was the critical path, `scale` -> `rsel`, 4.79 ns of
#: routing, depth 63, seed 3).
MANTISSA_COPIES = 3


def signed(v):
    """``v`` (unsigned) as a signed value one bit wider."""
    v = Value.cast(v)
    return Cat(v, Const(0, 1)).as_signed()


def magnitude_fields(v, mbits: int) -> tuple[Value, Value]:
    """An IEEE magnitude ``v`` (its exponent and fraction fields, ``mbits`` fraction bits):
    ``(sig, exp)``, the significand with its hidden bit (set by a non-zero exponent field)
    and the exponent field, 1 for a subnormal (the two share a binade)."""
    v = Value.cast(v)
    e = v[mbits:]
    return Cat(v[:mbits], e.any()), Mux(e.any(), e, 1)


def significand_leading_zeros(m, v, mbits: int, name: str):
    """The leading zeros of :func:`magnitude_fields`' ``sig`` of ``v``: 0 when the exponent
    field is non-zero, else those of the fraction field below a zero hidden bit (``mbits +
    1`` for zero).  The count does not wait for the exponent field's OR, which selects it."""
    v = Value.cast(v)
    lz = leading_zeros(m, Cat(v[:mbits], Const(0, 1)), name=name)
    return Mux(v[mbits:].any(), 0, lz)


def _round_decision(m, q, hi, extra_sticky, tops, name) -> dict:
    """RNE of a quotient ``q`` whose top bit is ``q[-1]`` (``hi``) or ``q[-2]`` to 24 bits,
    its first section: the 24 kept bits ``n``, the increment ``up`` (its guard and sticky
    bits: the OR of the bits below, ``extra_sticky`` the remainder's), whether ``n`` is all
    ones (``full``: the increment carries into the next binade) and ``tops``, the result's
    exponent without and with that carry."""
    w = len(q)
    n = Mux(hi, q[w - 24:], q[w - 25:w - 1])
    guard = Mux(hi, q[w - 25], q[w - 26])
    sticky = Mux(hi, q[:w - 25].any(), q[:w - 26].any()) | extra_sticky
    return {"n": n, "up": round_increment(m, guard, sticky, n[0], RNE, name=f"{name}_up"),
            "full": n.all(), "top": tops[0], "top_up": tops[1]}


def _round_add(m, x, name) -> dict:
    """The second section of :func:`_round_decision`'s rounding on its view ``x``: ``sig``
    normalized and ``top``.  The carry into the next binade is ``up & full``, from the
    registers: the exponent is a select beside the increment's carry chain, not an add after
    it."""
    carry = x.up & x.full
    s = wire(m, x.n + x.up, f"{name}_sum")  # 25 bits
    return {"sig": wire(m, Mux(carry, 1 << 23, s[:24]), f"{name}_sig"),
            "top": Mux(carry, x.top_up, x.top)}


def block_scale(scope, g, payload):
    """Sections ``amax<j>`` to ``scale``: the UE4M3 byte of the block (``payload``: the
    unit's input; its values wait in a delay line of the unit's, :mod:`hw.delay_line`).
    Returns the view after ``scale`` (``nonfinite`` and ``byte``) and
    :data:`MANTISSA_COPIES` registered copies of the byte's mantissa bits, for the selects of
    r's quotient (:func:`hw.nvfp4.reciprocal.scale_reciprocal`)."""
    m, f = scope.module, g.input_format
    w, mb = g.width, g.mbits
    p_ctl = {"p": payload.tensor_scale} if g.levels == 2 else {}
    # -- amax<j>: the block-max tree over the magnitudes (their unsigned order is the
    # values'), NaN or Inf beside the first level --------------------------------------
    level = [(payload.data[i][:w - 1], None) for i in range(g.block_size)]
    nonfinite = 0
    for i in range(g.block_size):
        nonfinite = nonfinite | payload.data[i][mb:w - 1].all()
    for j, radix in enumerate(g.tree_radices, 1):
        level = max_tree_levels(m, level, 1, scope.name(f"amax{j}"), radix)
        x = scope.cross({"nonfinite": nonfinite, **p_ctl,
                         "keys": [key for key, _ in level]}, f"amax{j}")
        nonfinite = x.nonfinite
        p_ctl = {k: getattr(x, k) for k in p_ctl}
        level = [(key, None) for key in x.keys]
    amax = level[0][0]

    # -- alz, anorm: amax = sig * 2^top, sig normalized (24 bits from fp32, 8 bf16, 11
    # fp16): the leading zeros, then the shift and the binade ------------------------------
    sig, exp = magnitude_fields(amax, mb)
    blk = {"nonfinite": nonfinite, **p_ctl}
    x = scope.cross({**blk, "sig": sig, "exp": exp,
                     "lz": significand_leading_zeros(m, amax, mb, scope.name("a_lz"))}, "alz")
    blk = {name: getattr(x, name) for name in blk}
    x = scope.cross({**blk, "sig": (x.sig << x.lz)[:mb + 1],
                     "top": signed(x.exp) - f.bias - x.lz, "zero": ~x.sig.any()}, "anorm")

    # -- div3_<j>: floor(sig * 2^K / 3), K = 28 - mb, sig * 2^K in [2^28, 2^29) ----------
    blk = {name: getattr(x, name) for name in blk}
    bits = Cat(Const(0, DIV3_STEPS - (mb + 1)), x.sig)
    x = divide_over_sections(scope, Const(0, 2), Const(3, 2), bits, DIV3_PER_SECTION, "div3",
                             {**blk, "top": x.top, "zero": x.zero})

    # -- bup, bround: b = f(amax / 6), the quotient's top bit at 27 or 26 ----------------
    blk = {name: getattr(x, name) for name in blk}
    q = x.q[:28]
    hi = q[27]
    x = scope.cross({**blk, **_round_decision(m, q, hi, x.rem.any(),
                                              (x.top - 3 + hi, x.top - 2 + hi),
                                              scope.name("b_rnd")),
                     "zero": x.zero}, "bup")
    blk = {name: getattr(x, name) for name in blk}
    x = scope.cross({**blk, **_round_add(m, x, scope.name("b_rnd")), "zero": x.zero}, "bround")

    if g.levels == 2:
        x = _over_p(scope, blk, x)
    # -- sclamp, scale: s = E4(clamp(v, 2^-6, 448)): the clamp flags, the exponent field and
    # the rounding decision from the registers (their comparisons side by side), then the
    # increment and the clamp's select (the two in one section were the critical path) -------
    blk = {name: getattr(x, name) for name in blk if name != "p"}
    v, top = x.sig, x.top
    x = scope.cross({**blk,
                     "low": x.zero | (top < _E4_EMIN),
                     "high": (top > _E4_EMAX) | ((top == _E4_EMAX) & (v > (0b111 << 21))),
                     "field": (top - (_E4_EMIN - 1))[:4], "mant": v[20:23],
                     "up": round_increment(m, v[19], v[:19].any(), v[20], RNE,
                                           name=scope.name("s_up"))}, "sclamp")
    blk = {name: getattr(x, name) for name in blk}
    code = Cat(x.mant, x.field) + x.up  # a carry out of the mantissa moves to the next binade
    byte = Mux(x.low, CLAMP_LO_BYTE, Mux(x.high, CLAMP_HI_BYTE, code[:8]))
    x = scope.cross({**blk, "byte": byte}, "scale")
    return x, scope.replicate(byte[:3], "scale", MANTISSA_COPIES)


def _over_p(scope, blk, x):
    """Sections ``pdiv_<j>``, ``pup`` and ``pround``: ``f(b / P)`` from the ``bround`` view ``x``,
    P the payload's ``tensor_scale`` (a positive normal fp32 value, golden's range: its hidden
    bit is a constant, not the OR of its exponent field in front of the first step's compare)."""
    m = scope.module
    blk = {name: getattr(x, name) for name in blk}
    p = Value.cast(blk["p"])
    sig_p = Cat(p[:23], Const(1, 1))
    top_p = signed(p[23:31]) - _FP32.bias
    # floor(sig_b * 2^25 / sig_P): sig_b's top 23 bits are the first remainder (< 2^23)
    rem = Cat(x.sig[1:], Const(0, 1))
    bits = Cat(Const(0, PDIV_STEPS - 1), x.sig[0])
    y = divide_over_sections(scope, rem, sig_p, bits, PDIV_PER_SECTION, "pdiv",
                             {**blk, "top": x.top - top_p, "zero": x.zero})
    blk = {name: getattr(y, name) for name in blk}
    q = y.q  # in (2^24, 2^26)
    hi = q[25]
    y = scope.cross({**blk, **_round_decision(m, Cat(Const(0, 2), q), hi, y.rem.any(),
                                              (y.top - 1 + hi, y.top + hi),
                                              scope.name("v_rnd")),
                     "zero": y.zero}, "pup")
    blk = {name: getattr(y, name) for name in blk}
    return scope.cross({**blk, **_round_add(m, y, scope.name("v_rnd")), "zero": y.zero},
                       "pround")
