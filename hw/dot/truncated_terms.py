"""The truncating step's terms (``accumulation="tcgen05.mxf8f6f4"``, ``docs/numerics.md``
section 8): sections ``decode``, ``multiply``, ``emax``, ``frame``, ``distance`` and
``align``.

Each product ``a_i * b_i`` has the alignment exponent ``x_i = x_base + l_i`` with
``l_i = shift_a + shift_b`` (the decoder's ``max(E, 1) - 1`` of each element) and ``x_base``
the scales' exponents plus both formats' ``1 - bias``; its significand is ``p_i / 2^(ma+mb)``
(``p_i`` the product of the decoder's unnormalized significands).  ``e_max`` is the largest of
the non-zero products' exponents (a maximum tree over ``l_i``, :mod:`hw.maxtree`), ``c``'s
(``max(E, 1) - 127``) and the floor ``-133``; each term is then truncated toward zero to a
multiple of ``2^(e_max - 25)``: product ``i`` is ``p_i << (25 - ma - mb)`` shifted right by
``d_i = G - l_i`` (``G = e_max - x_base``), ``c`` is its 24-bit significand ``<< 2`` shifted
right by ``e_max - x_c``.  Each term's magnitude is truncated, its sign kept: a negative term
enters the sum as its ones' complement, and the count of those is one more term
(:mod:`hw.dot.truncated_sum`).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux

from golden.formats import SCALE_BIAS, SCALE_NAN

from ..arith import max_tree_levels, partial_product_sum, wire
from ..elements import decode_element
from .step import FusedStep
from .truncated_sections import (
    EXPONENT_BITS,
    FRACTION_BITS,
    SUM_BITS,
    TERM_BITS,
    ZERO_EXPONENT,
)

__all__ = ["decode", "multiply", "emax", "frame", "gap", "distance", "align"]


def _exp(value):
    """A signed exponent integer, :data:`EXPONENT_BITS` bits."""
    return value.as_signed()[:EXPONENT_BITS].as_signed()


def _max_tree_radices(count: int) -> list[int]:
    """Radices of the maximum tree's levels over ``count`` keys (radix 4 while the count
    allows, then 2)."""
    radices = []
    while count > 1:
        radix = 4 if count % 4 == 0 else 2
        radices.append(radix)
        count //= radix
    return radices


def _lane(step: FusedStep, a, b, i: int) -> dict:
    m, g = step.m, step.geometry
    x = decode_element(m, a.codes[i], g.fmt_a, step.name(f"a{i}"))
    y = decode_element(m, b.codes[i], g.fmt_b, step.name(f"b{i}"))
    neg = x.neg ^ y.neg
    inf = x.inf | y.inf
    return {"sig_a": x.sig, "sig_b": y.sig, "l": x.shift + y.shift, "neg": neg,
            "nz": ~x.zero & ~y.zero,
            # Inf * 0 and NaN codes give NaN; an Inf operand a signed Inf
            "nan": x.nan | y.nan | (x.inf & y.zero) | (y.inf & x.zero),
            "pinf": inf & ~neg, "ninf": inf & neg}


def decode(step: FusedStep, a, b, c, side):
    """Section ``decode``: per lane the two significands, ``l_i``, the product's sign, whether
    it is non-zero, and its specials; the scales' sum and whether one is NaN."""
    lanes = [_lane(step, a, b, i) for i in range(step.block_size)]
    return step.cross({"lanes": lanes, "scale_sum": a.scale + b.scale,
                       "scale_nan": (a.scale == SCALE_NAN) | (b.scale == SCALE_NAN),
                       "c": c, "side": side}, "decode")


def multiply(step: FusedStep, s):
    """Section ``multiply``: the unsigned significand products ``p_i``; beside them the
    maximum tree's first level over the keys ``l_i + 1`` of the non-zero products (0 for a
    zero product); the lane specials reduced, ``c``'s fields and ``x_base``."""
    m, g, k = step.m, step.geometry, step.block_size
    lanes = [s.lanes[i] for i in range(k)]
    pbits = g.fmt_a.mbits + g.fmt_b.mbits + 2
    prods = []
    for i, ln in enumerate(lanes):
        if step.multipliers == "lut":
            p = partial_product_sum(m, Cat(ln.sig_a, Const(0, 1)).as_signed(), ln.sig_b,
                                    step.name(f"sig_prod{i}"))
        else:  # "dsp": `*`, which yosys maps to DSP multipliers
            p = ln.sig_a * ln.sig_b
        prods.append(p.as_unsigned()[:pbits])
    keys = [wire(m, Mux(ln.nz, ln.l + 1, 0), step.name(f"emax_key{i}"))
            for i, ln in enumerate(lanes)]
    level = max_tree_levels(m, [(key, None) for key in keys], 1, step.name("emax"),
                            radix=_max_tree_radices(k)[0])
    cbits = s.c
    c_exp = cbits[23:31]
    offsets = g.fmt_a.lsb_exp + g.fmt_a.mbits + g.fmt_b.lsb_exp + g.fmt_b.mbits
    return step.cross({
        "prods": prods, "keys": [key for key, _ in level],
        "neg": Cat(*(ln.neg for ln in lanes)), "l": [ln.l for ln in lanes],
        "nan": Cat(*(ln.nan for ln in lanes)).any() | s.scale_nan,
        "pinf": Cat(*(ln.pinf for ln in lanes)).any(),
        "ninf": Cat(*(ln.ninf for ln in lanes)).any(),
        "c_nan": (c_exp == 0xFF) & cbits[:23].any(),
        "c_inf": (c_exp == 0xFF) & ~cbits[:23].any(),
        "c_neg": cbits[31], "c_nz": cbits[:31].any(),
        "c_sig": Cat(cbits[:23], c_exp.any()),
        "c_x": _exp(Mux(c_exp == 0, 1 - 127, c_exp - 127)),
        "x_base": _exp(s.scale_sum + (offsets - 2 * SCALE_BIAS)),
        "side": step.side(s),
    }, "multiply")


def _carried(step: FusedStep, s) -> dict:
    """What passes ``emax`` and ``frame`` unchanged."""
    return {"prods": s.prods, "neg": s.neg, "l": s.l, "c_neg": s.c_neg, "c_sig": s.c_sig,
            "side": step.side(s)}


def emax(step: FusedStep, s):
    """Section ``emax``: the maximum tree's last levels (the largest key ``K``; 0: every
    product is zero) and ``P = x_base + K - 1``, the largest product exponent; the specials
    with ``c``'s in their order (NaN; opposite Infs; Inf)."""
    m = step.m
    radices = _max_tree_radices(step.block_size)[1:]
    level = [(s.keys[i], None) for i in range(len(s.keys))]
    for j, radix in enumerate(radices):
        level = max_tree_levels(m, level, 1, step.name(f"emax{j + 1}"), radix=radix)
    key = level[0][0]
    pinf = s.pinf | (s.c_inf & ~s.c_neg)
    ninf = s.ninf | (s.c_inf & s.c_neg)
    return step.cross({
        **_carried(step, s), "c_nz": s.c_nz, "c_x": s.c_x, "x_base": s.x_base,
        "any_prod": key.any(), "p_max": _exp(s.x_base + key - 1),
        "nan": s.nan | s.c_nan | (pinf & ninf), "inf": pinf | ninf, "inf_neg": ninf,
    }, "emax")


def frame(step: FusedStep, s):
    """Section ``frame``: which of the candidates is ``e_max`` (the products' ``P``, ``c``'s
    ``x_c`` or :data:`ZERO_EXPONENT`'s floor), from three comparisons side by side, and each
    candidate's distance to ``x_base`` and to ``x_c`` beside them: the subtractions do not
    wait for the choice (section ``gap`` selects and clamps)."""
    floor = Const(ZERO_EXPONENT, EXPONENT_BITS).as_signed()
    use_p = s.any_prod & (s.p_max > floor)  # else the floor, unless c is above both
    use_c = s.c_nz & Mux(use_p, s.c_x > s.p_max, s.c_x > floor)
    return step.cross({
        **_carried(step, s), "nan": s.nan, "inf": s.inf, "inf_neg": s.inf_neg,
        "c_x": s.c_x, "use_p": use_p, "use_c": use_c,
        "gap_p": _exp(s.p_max - s.x_base), "gap_f": _exp(floor - s.x_base),
        "gap_c": _exp(s.c_x - s.x_base),
        "dc_p": _exp(s.p_max - s.c_x), "dc_f": _exp(floor - s.c_x),
        "e_p": _exp(s.p_max), "e_f": floor,
    }, "frame")


def gap(step: FusedStep, s):
    """Section ``gap``: ``e_max`` selected, ``G = e_max - x_base`` clamped to
    ``0..lmax + TERM_BITS`` (beyond, every product vanishes; below 0 there is no non-zero
    product), ``c``'s distance ``e_max - x_c`` clamped to 31 (0 when ``c`` is ``e_max``), and
    ``e_top = e_max + SUM_BITS + 100`` for the result's exponent
    (:mod:`hw.dot.truncated_sum`)."""
    g = step.geometry
    lmax = (1 << g.fmt_a.ebits) - 2 + (1 << g.fmt_b.ebits) - 2
    span = lmax + TERM_BITS
    fine = (span).bit_length()
    e_max = wire(step.m, _exp(Mux(s.use_c, s.c_x, Mux(s.use_p, s.e_p, s.e_f))),
                 step.name("emax_value"))
    gap = wire(step.m, _exp(Mux(s.use_c, s.gap_c, Mux(s.use_p, s.gap_p, s.gap_f))),
               step.name("emax_gap"))
    dc = _exp(Mux(s.use_c, 0, Mux(s.use_p, s.dc_p, s.dc_f)))
    return step.cross({
        **_carried(step, s), "nan": s.nan, "inf": s.inf, "inf_neg": s.inf_neg,
        "gap": Mux(gap < 0, 0, Mux(gap > span, span, gap[:fine]))[:fine],
        "c_dist": Mux(dc > 31, 31, dc[:5])[:5],
        # the result's top bit is 2^(e_max - 25 + SUM_BITS - 1 - lz), 126 above fp32's emin
        "e_top": _exp(e_max + (SUM_BITS - 1 - FRACTION_BITS + 126)),
    }, "gap")


def _specials(s) -> dict:
    return {"nan": s.nan, "inf": s.inf, "inf_neg": s.inf_neg, "e_top": s.e_top}


def _count(bits):
    """The number of set ``bits``, as a balanced tree of narrow sums."""
    level = list(bits)
    while len(level) > 1:
        level = [level[i] + level[i + 1] if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
    return level[0]


def distance(step: FusedStep, s):
    """Section ``distance``: per lane ``d_i = G - l_i`` and whether the term vanishes
    (``d_i >= TERM_BITS``; a negative ``d_i`` only for a zero product, whose term is 0
    whatever its shift)."""
    k = step.block_size
    dists, gone = [], []
    for i in range(k):
        d = (s.gap - s.l[i]).as_signed()
        dists.append(d[:5])
        gone.append(d >= TERM_BITS)
    return step.cross({**_carried(step, s), **_specials(s), "dist": dists,
                       "gone": Cat(*gone), "c_dist": s.c_dist}, "distance")


def align(step: FusedStep, s):
    """Section ``align``: each product ``p_i << (25 - ma - mb)`` shifted right by ``d_i``
    (truncated), ``c``'s significand ``<< 2`` shifted right by its distance; each as a signed
    term, a negative one as its ones' complement; and the count of those."""
    m, g, k = step.m, step.geometry, step.block_size
    low = FRACTION_BITS - g.fmt_a.mbits - g.fmt_b.mbits
    terms, negs = [], []
    for i in range(k):
        placed = Cat(Const(0, low), s.prods[i])
        mag = Mux(s.gone[i], 0, placed >> s.dist[i])[:TERM_BITS]
        mag = wire(m, mag, step.name(f"term{i}"))
        terms.append(Mux(s.neg[i], ~Cat(mag, Const(0, 1)), Cat(mag, Const(0, 1))).as_signed())
        negs.append(s.neg[i])
    c_mag = wire(m, (Cat(Const(0, 2), s.c_sig) >> s.c_dist)[:TERM_BITS - 1],
                 step.name("term_c"))
    c_term = Cat(c_mag, Const(0, 2))
    terms.append(Mux(s.c_neg, ~c_term, c_term).as_signed())
    negs.append(s.c_neg)
    count = _count(negs)
    terms.append(Cat(count, Const(0, TERM_BITS + 1 - len(count)))[:TERM_BITS + 1].as_signed())
    return step.cross({**_specials(s), "terms": terms, "side": step.side(s)}, "align")
