"""The truncating step's terms (``accumulation="tcgen05.mxf8f6f4"``, ``docs/numerics.md``
section 8): sections ``decode``, ``multiply_lo``, ``multiply``, ``emax1``..., ``frame``,
``gap``, ``distance``, ``align_hi`` and ``align``, each about three LUT levels or one carry
chain (:data:`hw.dot.truncated_sections.ESTIMATES`).

Each product ``a_i * b_i`` has the alignment exponent ``x_i = x_base + l_i`` with
``l_i = shift_a + shift_b`` (the decoder's ``max(E, 1) - 1`` of each element) and ``x_base``
the scales' exponents plus both formats' ``1 - bias``; its significand is ``p_i / 2^(ma+mb)``
(``p_i`` the product of the decoder's unnormalized significands).  ``e_max`` is the largest of
the non-zero products' exponents (a radix-2 maximum tree over ``l_i``, one level per section,
:mod:`hw.maxtree`), ``c``'s
(``max(E, 1) - 127``) and the floor ``-133``; each term is then truncated toward zero to a
multiple of ``2^(e_max - 25)``: product ``i`` is ``p_i << (25 - ma - mb)`` shifted right by
``d_i = G - l_i`` (``G = e_max - x_base``), ``c`` is its 24-bit significand ``<< 2`` shifted
right by ``e_max - x_c``.  Each term's magnitude is truncated, its sign kept: a negative term
enters the sum as its ones' complement, and the count of those is one more term
(:mod:`hw.dot.truncated_sum`).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux
from amaranth.lib import data

from golden.formats import SCALE_BIAS, SCALE_NAN

from ..arith import (
    less_than_const,
    max_tree_compare,
    max_tree_levels,
    max_tree_select,
    pair_sum_tree,
    pair_sums,
    partial_products,
    wire,
)
from ..elements import decode_element
from .products import level_values
from .step import FusedStep
from .truncated_sections import (
    EXPONENT_BITS,
    FRACTION_BITS,
    SUM_BITS,
    TERM_BITS,
    ZERO_EXPONENT,
    emax_tree_radices,
)

__all__ = ["decode", "multiply", "emax", "frame", "gap", "distance", "align"]


def _exp(value):
    """A signed exponent integer, :data:`EXPONENT_BITS` bits."""
    return value.as_signed()[:EXPONENT_BITS].as_signed()


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


def _halves(flags):
    """Whether a flag is set in each half of ``flags`` (two bits)."""
    h = len(flags) // 2
    return Cat(Cat(*flags[:h]).any(), Cat(*flags[h:]).any())


def _product_width(ln) -> int:
    """Bits of the signed product of ``Cat(sig_a, 0)`` and ``sig_b``
    (:func:`hw.arith.partial_product_sum`)."""
    return len(ln.sig_a) + 1 + len(ln.sig_b)


def multiply_lo(step: FusedStep, s):
    """Section ``multiply_lo``: the first level of each lane's significand product's pair
    sums (:func:`hw.arith.pair_sums`; with ``"dsp"`` multipliers the product ``*`` itself);
    the lane specials reduced, ``c``'s fields, ``x_base`` and the count of negative terms."""
    m, g, k = step.m, step.geometry, step.block_size
    lanes = [s.lanes[i] for i in range(k)]
    rows = []
    for i, ln in enumerate(lanes):
        width = _product_width(ln)
        if step.multipliers == "lut":
            level = partial_products(Cat(ln.sig_a, Const(0, 1)).as_signed(), ln.sig_b)
            if len(level) > 1:
                level = pair_sums(m, level, width, step.name(f"sig_prod{i}"))
            rows.append(level_values(level, width))
        else:  # "dsp": `*`, which yosys maps to DSP multipliers
            rows.append([(ln.sig_a * ln.sig_b).as_signed()[:width].as_signed()])
    cbits = s.c
    c_exp = cbits[23:31]
    negs = [ln.neg for ln in lanes] + [cbits[31]]
    offsets = g.fmt_a.lsb_exp + g.fmt_a.mbits + g.fmt_b.lsb_exp + g.fmt_b.mbits
    return step.cross({
        "rows": rows, "neg": Cat(*(ln.neg for ln in lanes)), "l": [ln.l for ln in lanes],
        "nz": Cat(*(ln.nz for ln in lanes)),
        # the lane specials in halves, ORed in multiply
        "nan": _halves([ln.nan for ln in lanes]), "scale_nan": s.scale_nan,
        "pinf": _halves([ln.pinf for ln in lanes]), "ninf": _halves([ln.ninf for ln in lanes]),
        "c_nan": (c_exp == 0xFF) & cbits[:23].any(),
        "c_inf": (c_exp == 0xFF) & ~cbits[:23].any(),
        "c_neg": cbits[31], "c_nz": cbits[:31].any(),
        "c_sig": Cat(cbits[:23], c_exp.any()),
        "c_x": _exp(Mux(c_exp == 0, 1 - 127, c_exp - 127)),
        "x_base": _exp(s.scale_sum + (offsets - 2 * SCALE_BIAS)),
        "counts": _count_groups(negs),
        "side": step.side(s),
    }, "multiply_lo")


def multiply(step: FusedStep, s):
    """Section ``multiply``: the unsigned significand products ``p_i`` (the pair sums' last
    levels); beside them the maximum tree's first level over the keys ``(nz_i, l_i)`` (a
    non-zero product's above every zero one's) and each candidate of ``e_max``'s distance to
    ``x_base`` and to ``x_c``, made before ``e_max`` is known; the specials with ``c``'s in
    their order (NaN; opposite Infs; Inf)."""
    m, g, k = step.m, step.geometry, step.block_size
    pbits = g.fmt_a.mbits + g.fmt_b.mbits + 2
    prods = []
    for i in range(k):
        width = len(s.rows[i][0])
        level = [(s.rows[i][j], None) for j in range(len(s.rows[i]))]
        p = pair_sum_tree(m, level, width, step.name(f"sig_prod{i}"), first_depth=1)
        prods.append(p.as_unsigned()[:pbits])
    keys = [Cat(s.l[i], s.nz[i]) for i in range(k)]
    level = max_tree_levels(m, [(key, None) for key in keys], 1, step.name("emax"),
                            radix=emax_tree_radices(k)[0])
    floor = Const(ZERO_EXPONENT, EXPONENT_BITS).as_signed()
    pinf = s.pinf.any() | (s.c_inf & ~s.c_neg)
    ninf = s.ninf.any() | (s.c_inf & s.c_neg)
    return step.cross({
        "prods": prods, "keys": [key for key, _ in level], "neg": s.neg, "l": s.l,
        "c_neg": s.c_neg, "c_sig": s.c_sig, "c_nz": s.c_nz, "counts": _count_level(s.counts),
        "nan": s.nan.any() | s.scale_nan | s.c_nan | (pinf & ninf), "inf": pinf | ninf,
        "inf_neg": ninf,
        # e_max's candidates but P (= x_base + l_max): their distances to x_base and x_c
        "gap_f": _exp(floor - s.x_base), "gap_c": _exp(s.c_x - s.x_base),
        # e_top (section gap) of each candidate, P's less l_max
        "top_p": _exp(s.x_base + _TOP), "top_c": _exp(s.c_x + _TOP),
        "side": step.side(s),
    }, "multiply")


#: ``e_top - e_max``: the result's top bit is ``2^(e_max - 25 + SUM_BITS - 1 - lz)``, 126
#: above fp32's emin (:mod:`hw.dot.truncated_sum`).
_TOP = SUM_BITS - 1 - FRACTION_BITS + 126


def _carried(step: FusedStep, s) -> dict:
    """What passes the maximum tree and ``frame`` unchanged (the count of negative terms
    summed one level further)."""
    return {"prods": s.prods, "neg": s.neg, "l": s.l, "c_neg": s.c_neg, "c_sig": s.c_sig,
            "counts": _count_level(s.counts), "nan": s.nan, "inf": s.inf, "inf_neg": s.inf_neg,
            "side": step.side(s)}


def _span(step: FusedStep) -> int:
    """The largest ``G = e_max - x_base`` that matters: ``lmax + TERM_BITS`` (beyond, every
    product vanishes; below 0 there is no non-zero product)."""
    g = step.geometry
    return (1 << g.fmt_a.ebits) - 2 + (1 << g.fmt_b.ebits) - 2 + TERM_BITS


def _clamp_tests(step: FusedStep, gap, tag: str) -> dict:
    """The tests of the clamp of a candidate's ``G`` to ``0.._span`` (the sign, and gates
    against the constant, :func:`hw.compare.less_than_const`: a carry chain's carry out into
    the fabric was this section's critical path, 15 cells, 5.3 ns) and ``G - TERM_BITS``,
    side by side (:func:`_clamped` selects)."""
    above = ~less_than_const(step.m, gap, _span(step) + 1, step.name(f"{tag}_hi"), tree=True)
    return {f"{tag}_lo": gap[-1], f"{tag}_hi": above,
            f"{tag}_less": (gap - TERM_BITS).as_signed()[:EXPONENT_BITS].as_signed()}


def _clamped(step: FusedStep, s, gap, tag: str) -> dict:
    """A candidate's ``G`` clamped to ``0.._span`` and the same less ``TERM_BITS`` (whether
    a term vanishes, section ``distance``), from :func:`_clamp_tests`."""
    span = _span(step)
    fine = span.bit_length()
    lo, hi = getattr(s, f"{tag}_lo"), getattr(s, f"{tag}_hi")
    less = getattr(s, f"{tag}_less")
    return {f"{tag}_cl": Mux(lo, 0, Mux(hi, span, gap[:fine]))[:fine],
            f"{tag}_less_cl": Mux(lo, -TERM_BITS, Mux(hi, span - TERM_BITS, less))
            .as_signed()[:fine + 1].as_signed()}


def _greater(m, a, b, name: str):
    """``a > b`` for unsigned ``a`` and ``b`` on a carry chain
    (:func:`hw.maxtree.max_tree_compare`'s comparison of a pair)."""
    return max_tree_compare(m, [b, a], 2, name)[0][0][0]


def _last_level(step: FusedStep, s, name: str) -> list:
    """The maximum tree's last level (radix 2), its keys' comparisons with the other
    candidates of ``e_max`` made beside its own and selected with the key
    (:func:`hw.maxtree.max_tree_select` of Views): ``l > G_floor`` and ``G_c > l`` on the
    clamped distances (:func:`_clamped`; ``G_floor < 0``, where every ``l`` is above it,
    section ``frame`` adds)."""
    m = step.m
    keys = [s.keys[0], s.keys[1]]
    comparisons = max_tree_compare(m, keys, 2, name)
    layout = data.StructLayout({"key": len(keys[0]), "gt_f": 1, "gt_c": 1})
    entries = []
    for i, key in enumerate(keys):
        l_key = key[:-1]
        entries.append((data.View(layout, Cat(
            key, _greater(m, l_key, s.gap_f_cl, f"{name}_f{i}"),
            _greater(m, s.gap_c_cl, l_key, f"{name}_c{i}"))), None))
    return max_tree_select(m, entries, comparisons, 2, name)


def emax(step: FusedStep, s):
    """Sections ``emax1``, ...: the maximum tree's levels after the first, one per section,
    to the largest key ``K = (any, l_max)`` (``any``: some product is non-zero), the last
    one with its comparisons with the floor's and ``c``'s distances to ``x_base``
    (:func:`_last_level`); beside the first two, those distances clamped
    (:func:`_clamp_tests`, :func:`_clamped`)."""
    m = step.m
    levels = len(emax_tree_radices(step.block_size)) - 1
    if levels < 2:
        raise ValueError(f"the truncating step takes blocks of 32, not {step.block_size}")
    names = ("gap_f", "gap_c", "top_p", "top_c", "c_nz")
    for j in range(1, levels + 1):
        fields = {name: getattr(s, name) for name in names}
        if j == 1:
            fields.update(**_clamp_tests(step, s.gap_f, "gap_f"),
                          **_clamp_tests(step, s.gap_c, "gap_c"))
        elif j == 2:
            fields.update(**_clamped(step, s, s.gap_f, "gap_f"),
                          **_clamped(step, s, s.gap_c, "gap_c"))
        else:
            fields.update({f"gap_{t}{x}": getattr(s, f"gap_{t}{x}")
                           for t in "fc" for x in ("_cl", "_less_cl")})
        if j > 1:
            fields["gap_f_lo"] = s.gap_f_lo
        name = step.name(f"emax{j}")
        if j < levels:
            level = max_tree_levels(m, [(s.keys[i], None) for i in range(len(s.keys))], 1,
                                    name, radix=2)
            fields["keys"] = [key for key, _ in level]
        else:
            fields["last"] = _last_level(step, s, name)[0][0]
        s = step.cross({**_carried(step, s), **fields}, f"emax{j}")
    return s


def frame(step: FusedStep, s):
    """Section ``frame``: which of the candidates is ``e_max`` (the products' ``P``, ``c``'s
    ``x_c`` or :data:`ZERO_EXPONENT`'s floor), from the comparisons of ``l_max = P - x_base``
    with the others' distances to ``x_base`` (``c``'s exponent, at least -126, is always
    above the floor); beside them ``P``'s distance to ``x_c``, its ``e_top`` and its ``G``
    less ``TERM_BITS``: nothing waits for the choice (section ``gap`` selects)."""
    key = s.last.key
    l_max = key[:-1]
    signed_l = Cat(l_max, Const(0, 1)).as_signed()
    use_p = key[-1] & (s.gap_f_lo | s.last.gt_f)  # P above the floor; else the floor, or c
    use_c = s.c_nz & (~use_p | s.last.gt_c)
    less_p = (signed_l - TERM_BITS).as_signed()[:len(s.gap_f_less_cl)].as_signed()
    return step.cross({
        **_carried(step, s), "use_p": use_p, "use_c": use_c, "l_max": l_max,
        "gap_f": s.gap_f_cl, "gap_c": s.gap_c_cl, "less_f": s.gap_f_less_cl,
        "less_c": s.gap_c_less_cl, "less_p": less_p,
        "dc_p": _exp(signed_l - s.gap_c), "top_p": _exp(s.top_p + l_max), "top_c": s.top_c,
    }, "frame")


def gap(step: FusedStep, s):
    """Section ``gap``: ``G = e_max - x_base`` selected among the candidates' clamped
    distances, and ``G - TERM_BITS`` likewise; ``c``'s distance ``e_max - x_c`` clamped to 31
    (0 when ``c`` is ``e_max``; when the floor is, ``c`` is zero and its distance any), and
    ``e_top = e_max + SUM_BITS + 100`` for the result's exponent
    (:mod:`hw.dot.truncated_sum`)."""
    fine = len(s.gap_f)
    dc_p = Mux(s.dc_p[5:].any(), 31, s.dc_p[:5])[:5]
    floor_top = Const(ZERO_EXPONENT + _TOP, EXPONENT_BITS).as_signed()
    less = Mux(s.use_c, s.less_c, Mux(s.use_p, s.less_p, s.less_f))
    return step.cross({
        **_carried(step, s),
        "gap": Mux(s.use_c, s.gap_c, Mux(s.use_p, s.l_max, s.gap_f))[:fine],
        "less": less.as_signed()[:fine + 1].as_signed(),
        "c_dist": Mux(s.use_c, 0, Mux(s.use_p, dc_p, 31))[:5],
        "e_top": _exp(Mux(s.use_c, s.top_c, Mux(s.use_p, s.top_p, floor_top))),
    }, "gap")


def _specials(s) -> dict:
    return {"nan": s.nan, "inf": s.inf, "inf_neg": s.inf_neg, "e_top": s.e_top}


#: Negative terms counted side by side in groups of this many (one LUT level), the counts
#: then added in pairs, a level per section (:func:`_count_level`).
_COUNT_GROUP = 4


def _count_groups(bits) -> list:
    """The number of set ``bits`` in each group of :data:`_COUNT_GROUP`, each as wide as the
    count of all of them."""
    width = len(bits).bit_length()
    out = []
    for j in range(0, len(bits), _COUNT_GROUP):
        total = Const(0, width)
        for bit in bits[j:j + _COUNT_GROUP]:
            total = total + bit
        out.append(total[:width])
    return out


def _count_level(counts) -> list:
    """One level of the sum of ``counts`` (a list, or an array of a View): added in pairs,
    an odd last one passed on; a single count passes unchanged."""
    counts = [counts[i] for i in range(len(counts))]
    width = len(counts[0])
    return [(counts[i] + counts[i + 1])[:width] if i + 1 < len(counts) else counts[i]
            for i in range(0, len(counts), 2)]


def distance(step: FusedStep, s):
    """Section ``distance``: per lane ``d_i = G - l_i`` and whether the term vanishes,
    ``d_i >= TERM_BITS``, as the sign of ``(G - TERM_BITS) - l_i`` (a negative ``d_i`` only
    for a zero product, whose term is 0 whatever its shift): two carry chains side by
    side."""
    k = step.block_size
    dists = [(s.gap - s.l[i])[:5] for i in range(k)]
    gone = [~(s.less - s.l[i]).as_signed()[-1] for i in range(k)]
    return step.cross({**_specials(s), "prods": s.prods, "neg": s.neg, "c_neg": s.c_neg,
                       "c_sig": s.c_sig, "count": _count_level(s.counts)[0], "dist": dists,
                       "gone": Cat(*gone), "c_dist": s.c_dist, "side": step.side(s)},
                      "distance")


#: The low bits of a distance that section ``align`` shifts by; ``align_hi`` shifts by the
#: others.
_LOW_SHIFT_BITS = 3


def align_hi(step: FusedStep, s):
    """Section ``align_hi``: each product ``p_i << (25 - ma - mb)`` shifted right by the high
    bits of ``d_i``, 0 where the term vanishes; ``c``'s significand ``<< 2`` shifted by the
    high bits of its distance."""
    g, k, low = step.geometry, step.block_size, _LOW_SHIFT_BITS
    pad = FRACTION_BITS - g.fmt_a.mbits - g.fmt_b.mbits
    coarse = []
    for i in range(k):
        placed = Cat(Const(0, pad), s.prods[i])
        shifted = (placed >> Cat(Const(0, low), s.dist[i][low:]))[:TERM_BITS]
        coarse.append(Mux(s.gone[i], 0, shifted)[:TERM_BITS])
    c_placed = Cat(Const(0, 2), s.c_sig)
    c_coarse = (c_placed >> Cat(Const(0, low), s.c_dist[low:]))[:TERM_BITS - 1]
    return step.cross({**_specials(s), "coarse": coarse, "c_coarse": c_coarse,
                       "fine": [s.dist[i][:low] for i in range(k)], "c_fine": s.c_dist[:low],
                       "neg": s.neg, "c_neg": s.c_neg, "count": s.count,
                       "side": step.side(s)}, "align_hi")


def align(step: FusedStep, s):
    """Section ``align``: each term shifted right by the low bits of its distance
    (truncated); each as a signed term, a negative one as its ones' complement; and the
    count of those (made in ``multiply_lo``)."""
    m, k = step.m, step.block_size
    terms = []
    for i in range(k):
        mag = wire(m, (s.coarse[i] >> s.fine[i])[:TERM_BITS], step.name(f"term{i}"))
        terms.append(Mux(s.neg[i], ~Cat(mag, Const(0, 1)), Cat(mag, Const(0, 1))).as_signed())
    c_mag = wire(m, (s.c_coarse >> s.c_fine)[:TERM_BITS - 1], step.name("term_c"))
    c_term = Cat(c_mag, Const(0, 2))
    terms.append(Mux(s.c_neg, ~c_term, c_term).as_signed())
    count = s.count
    terms.append(Cat(count, Const(0, TERM_BITS + 1 - len(count)))[:TERM_BITS + 1].as_signed())
    return step.cross({**_specials(s), "terms": terms, "side": step.side(s)}, "align")
