"""The terms of the ``tcgen05.mxf4`` step (``docs/numerics.md`` section 8), one block of 32
fp4_e2m1 pairs per step (MXDot): sections ``decode``, ``scale_lanes`` (UE4M3 scales),
``multiply_lo``, ``multiply``, ``group0``... (``e_max`` and the distances chosen beside the
sums), ``align_hi`` and ``align``; the sum and result are :mod:`hw.dot.truncated_sum`'s.
Over a run (MXDotGeneral, MXGemm) the step also takes the groups of its earlier blocks from
the run's state (:mod:`hw.dot.chained_f4`): ``decode``'s ``last``.

The block's 32 products form two groups of 16, each summed exactly (``S_g``, in units of
``2^(lsb_a + lsb_b)``); a group's exponent is the scales' alone, ``x_s = sa + sb - 254``
(-139 for a group of zero products; a group that cancels to zero keeps ``x_s``).  ``e_max`` is
the largest of the groups', ``c``'s and -139; each group's magnitude ``|S_g| << (35 + lsb_a +
lsb_b)`` is shifted right by ``e_max - x_s`` (truncated), ``c``'s significand ``<< 12`` by
``e_max - x_c``; a negative term enters the sum as its ones' complement, and the count of those
is one more term.  A step of one block equals golden's step of that block and an all-zero
second block (zero groups sit at the floor), which is how ``golden.dot_blocks`` steps a single
block (an odd last block).

``tcgen05.mxf4nvf4`` with UE4M3 scales (NVFP4, one block of 16 per step, one group): each scale
byte's low seven bits decode as UE4M3 (its sign bit ignored; :func:`hw.dot.nvfp4_scale.
scale_fields`, 0x7F NaN), ``sig * 2^(x - 127)``.  A lane's product is ``sig_a * sig_b * P``
(``P = sig_a_scale * sig_b_scale``): one of ``0, P, 3P, 9P`` shifted (``scale_lanes``), so
the group sum is ``P`` times golden's; its exponent is the scales'
alone, ``x_a + x_b - 254 + 6`` (each significand's three fraction bits), and a zero ``P`` puts
the group at the floor.
"""

from __future__ import annotations

import functools

from amaranth.hdl import Array, Cat, Const, Mux, Signal, signed
from amaranth.lib import data

from golden.formats import SCALE_BIAS, SCALE_NAN

from ..arith import partial_product_sum, wire
from ..elements import decode_element
from .chained_f4 import chain_layout, close_and_count, group_value_bits
from .geometry import units_max
from .nvfp4_scale import SCALE_COPIES, scale_fields, scale_multiples
from .step import FusedStep
from .truncated_sections import (
    EXPONENT_BITS,
    F4_FRACTION_BITS,
    F4_GROUP,
    F4_GROUP_BITS,
    F4_SUM_BITS,
    F4_TERM_BITS,
    F4_ZERO_EXPONENT,
)

__all__ = ["decode", "scale_lanes", "multiply_lo", "multiply", "group_sums", "align_hi", "align"]


#: A UE4M3 scale's significand fraction bits: ``sig * 2^(x - 127)`` has the alignment
#: exponent ``x - 127 + 3`` (golden's ``max(e, 1) - 7``).
_UE4M3_FRACTION_BITS = 3


def _exp(value):
    return value.as_signed()[:EXPONENT_BITS].as_signed()


def _group_bits(step: FusedStep) -> int:
    """Bits of a group sum's magnitude in units of ``2^(lsb_a + lsb_b)``: 16 products of the
    largest codes times the largest ``P`` (:data:`F4_GROUP_BITS` for E8M0, 19 for UE4M3)."""
    g = step.geometry
    return (F4_GROUP * units_max(g.fmt_a) * units_max(g.fmt_b)
            * g.scale_sig_max ** 2).bit_length()


def _scale_fields(step: FusedStep, a, b) -> dict:
    """The scales' exponent sum (``x_s + 254``), NaN flag and, UE4M3, ``P``'s multiples and
    whether ``P`` is non-zero."""
    if not step.ue4m3:
        return {"scale_sum": a.scale + b.scale,
                "scale_nan": (a.scale == SCALE_NAN) | (b.scale == SCALE_NAN)}
    f = scale_fields(step.m, Cat(a.scale[:7], Const(0, 1)), Cat(b.scale[:7], Const(0, 1)),
                     step.name("scale"), halves=True, multiples=_MULTIPLES)
    # P = 0 exactly when a byte's seven bits are zero (a significand is zero only for 0x00):
    # read from the bytes, not from P's adds
    return {"scale_sum": f["exp_a"] + f["exp_b"] + 2 * _UE4M3_FRACTION_BITS,
            "scale_nan": f["nan"], "multiples": {k: f[k] for k in _MULTIPLE_NAMES},
            "scale_nz": a.scale[:7].any() & b.scale[:7].any()}


def _chained(s) -> bool:
    """Whether the step carries a run's pending groups (:mod:`hw.dot.chained_f4`)."""
    return "pending" in s.shape().members


def _pending(s) -> dict:
    """The pending groups, carried to ``emax`` (chained steps only)."""
    return {"pending": s.pending} if _chained(s) else {}


def decode(step: FusedStep, a, b, c, side, *, last=None):
    """Section ``decode``: per lane the two significands, the sum of their shifts, the
    product's sign and whether it is non-zero; the scales' sum and whether one is NaN.

    With ``last`` (a run's, MXDotGeneral and MXGemm), ``c`` is the run's state
    (:func:`hw.dot.chained_f4.chain_layout`): its pending groups ride to ``emax``; its ``c``,
    the count of the step's blocks after this one, the NaN flag (the pending blocks' or this
    one's scale) and whether this block closes the step ride in ``side["chain"]``."""
    m, g = step.m, step.geometry
    lanes = []
    for i in range(step.block_size):
        x = decode_element(m, a.codes[i], g.fmt_a, step.name(f"a{i}"))
        y = decode_element(m, b.codes[i], g.fmt_b, step.name(f"b{i}"))
        lanes.append({"sig_a": x.sig, "sig_b": y.sig, "shift": x.shift + y.shift,
                      "neg": x.neg ^ y.neg, "nz": ~x.zero & ~y.zero})
    scales = _scale_fields(step, a, b)
    if last is None:
        return step.cross({"lanes": lanes, **scales, "c": c, "side": side}, "decode")
    state = data.View(chain_layout(step.block_size, step.geometry.scale_format), c)
    scales["scale_nan"] = scales["scale_nan"] | state.nan
    chain = {**close_and_count(state, last, step.block_size), "nan": scales["scale_nan"]}
    return step.cross({"lanes": lanes, **scales, "c": state.c,
                       "side": {**(side or {}), "chain": chain}, "pending": state.groups},
                      "decode")


#: The multiples of ``P`` a UE4M3 step forms once per block, and their fields.
_MULTIPLES = (1, 3, 9)
_MULTIPLE_NAMES = tuple(f"p{n}" for n in _MULTIPLES)

#: ``sig_a * sig_b`` of two fp4_e2m1 significands (0..3) as ``m * 2^j`` with ``m`` one of
#: 1, 3, 9: per product (0 omitted) the index of ``m`` among ``P, 3P, 9P`` (1, 2, 3; 0 for no
#: product) and ``j``.
_SIG_PRODUCTS = {(1, 1): (1, 0), (1, 2): (1, 1), (2, 1): (1, 1), (1, 3): (2, 0),
                 (3, 1): (2, 0), (2, 2): (1, 2), (2, 3): (2, 1), (3, 2): (2, 1), (3, 3): (3, 0)}


def _sig_product_choice(m, sig_a, sig_b, name: str):
    """``sig_a * sig_b`` (2-bit significands) as the index of its multiple of ``P`` among
    ``0, P, 3P, 9P`` (2 bits) and that multiple's shift (2 bits): :data:`_SIG_PRODUCTS`."""
    choice, shift = Signal(2, name=f"{name}_choice"), Signal(2, name=f"{name}_pshift")
    with m.Switch(Cat(sig_a, sig_b)):
        for (a, b), (index, j) in _SIG_PRODUCTS.items():
            with m.Case(a | b << 2):
                m.d.comb += [choice.eq(index), shift.eq(j)]
        with m.Default():  # a zero significand: no product
            m.d.comb += [choice.eq(0), shift.eq(0)]
    return choice, shift


def scale_lanes(step: FusedStep, s):
    """Section ``scale_lanes`` (UE4M3 scales; E8M0: none, ``s`` returned): per block the last
    add of ``P``, ``3P`` and ``9P`` (``decode`` holds their partial products' first level,
    :func:`hw.dot.nvfp4_scale.scale_fields`); per lane ``sig_a * sig_b`` as a multiple of
    ``P`` (``0, P, 3P, 9P``) and the shift of it (the multiple's and the lane's), so that
    ``multiply_lo`` holds a choice and a shift, no carry chain per lane.

    Returns the view after the boundary and the multiples'
    :data:`~hw.dot.nvfp4_scale.SCALE_COPIES` registers (the view's ``multiples`` the first),
    each for a part of the lanes; E8M0: ``s`` and None."""
    if not step.ue4m3:
        return s, None
    m = step.m
    lanes = []
    for i, ln in enumerate(s.lanes):
        choice, j = _sig_product_choice(m, ln.sig_a, ln.sig_b, step.name(f"lane{i}"))
        # the lane's shift is at most 4 (two binades of 2 each), the multiple's 2: 3 bits
        lanes.append({"choice": choice, "shift": (ln.shift + j)[:3], "neg": ln.neg,
                      "nz": ln.nz})
    multiples = wire(m, scale_multiples(m, s.multiples, step.name("scale"), _MULTIPLES),
                     step.name("scale_multiples"))
    carried = {name: getattr(s, name) for name in ("c", "scale_sum", "scale_nan", "scale_nz")}
    s = step.cross({"lanes": lanes, "multiples": multiples, **carried,
                    "side": step.side(s), **_pending(s)}, "scale_lanes")
    # P's multiples in SCALE_COPIES registers, each for a part of the lanes (from one, their
    # route to the 16 lanes' choices was most of the scale_lanes -> multiply_lo path)
    return s, [s.multiples, *step.scope.replicate(multiples, "scale_lanes", SCALE_COPIES - 1)]


def _lane_product(step: FusedStep, s, i: int, multiples):
    """Lane ``i``'s unsigned significand product, shifted (units ``2^(lsb_a + lsb_b)``): with
    UE4M3 scales ``scale_lanes``' multiple of ``P`` (from ``multiples``' copy for its part of
    the lanes), else ``sig_a * sig_b``."""
    ln = s.lanes[i]
    if step.ue4m3:
        p = multiples[i * len(multiples) // step.block_size]
        multiple = Array([Const(0, len(p.p9)), p.p1, p.p3, p.p9])[ln.choice]
        return (multiple << ln.shift).as_unsigned()
    if step.multipliers == "lut":
        p = partial_product_sum(step.m, Cat(ln.sig_a, Const(0, 1)).as_signed(), ln.sig_b,
                                step.name(f"sig_prod{i}"))
    else:
        p = ln.sig_a * ln.sig_b
    return (p.as_unsigned()[:len(ln.sig_a) + len(ln.sig_b)] << ln.shift).as_unsigned()


def multiply_lo(step: FusedStep, s, multiples=None):
    """Section ``multiply_lo``: each lane's unsigned significand product shifted, its sign;
    per group whether a product is non-zero; ``c``'s fields and the specials (NaN: a NaN scale
    or ``c``; Inf: ``c``).  ``multiples``: with UE4M3 scales, :func:`scale_lanes`' copies of
    ``P``'s multiples."""
    k = step.block_size
    prods = [_lane_product(step, s, i, multiples) for i in range(k)]
    cbits, c_exp = s.c, s.c[23:31]
    c_nan = (c_exp == 0xFF) & cbits[:23].any()
    c_inf = (c_exp == 0xFF) & ~cbits[:23].any()
    group_nz = Cat(*(Cat(*(s.lanes[i].nz for i in range(j, j + F4_GROUP))).any()
                     for j in range(0, k, F4_GROUP)))
    if step.ue4m3:  # a zero scale significand: every group at the floor
        group_nz = group_nz & s.scale_nz.replicate(len(group_nz))
    return step.cross({
        "prods": prods,
        "neg": Cat(*(s.lanes[i].neg for i in range(k))),
        "group_nz": group_nz,
        "nan": s.scale_nan | c_nan, "inf": c_inf, "inf_neg": c_inf & cbits[31],
        "c_neg": cbits[31], "c_nz": cbits[:31].any(),
        "c_sig": Cat(cbits[:23], c_exp.any()),
        "c_x": _exp(Mux(c_exp == 0, 1 - 127, c_exp - 127)),
        "x_s": _exp(s.scale_sum - 2 * SCALE_BIAS), "side": step.side(s), **_pending(s),
    }, "multiply_lo")


def multiply(step: FusedStep, s):
    """Section ``multiply``: each lane's exact signed product in units of
    ``2^(lsb_a + lsb_b)`` (negated where negative, a short chain); the rest carried."""
    terms = []
    for i in range(step.block_size):
        p = s.prods[i]
        terms.append(Mux(s.neg[i], -p, p).as_signed())
    carried = ("group_nz", "nan", "inf", "inf_neg", "c_neg", "c_nz", "c_sig", "c_x", "x_s")
    return step.cross({"terms": terms, **{name: getattr(s, name) for name in carried},
                       "side": step.side(s), **_pending(s)}, "multiply")


def _carried(step: FusedStep, s) -> dict:
    return {"nan": s.nan, "inf": s.inf, "inf_neg": s.inf_neg, "c_neg": s.c_neg,
            "c_sig": s.c_sig, "side": step.side(s)}


def _top_offset(sum_bits: int) -> int:
    """``e_top - e_max``: the result's top bit is ``2^(e_max - 35 + sum_bits - 1 - lz)``, 126
    above fp32's emin (:mod:`hw.dot.truncated_sum`; ``sum_bits`` the back end's,
    :func:`hw.dot.chained_f4.chained_kind`)."""
    return sum_bits - 1 - F4_FRACTION_BITS + 126


def _candidates(s) -> list:
    """The candidates of ``e_max`` but the floor, each ``(x, counts)``: the block's groups
    (one exponent), the pending groups (chained steps), ``c``; each is also a term."""
    pending = [(s.pending[i].x, s.pending[i].nz) for i in range(len(s.pending))] \
        if _chained(s) else []
    cands = [(s.x_s, s.group_nz.any()), *pending, (s.c_x, s.c_nz)]
    return [(_exp(x + Const(0, signed(EXPONENT_BITS))), nz) for x, nz in cands]


def _emax_frame(s, top_offset: int) -> dict:
    """Section ``group0``'s share of ``e_max``: every difference ``x_i - x_j`` of two
    candidates (a distance, and by its sign a comparison), the floor's ``-139 - x_j``, and
    each candidate's ``e_top``, side by side (nothing waits for ``e_max``)."""
    cands = _candidates(s)
    n = len(cands)
    floor = Const(F4_ZERO_EXPONENT, EXPONENT_BITS).as_signed()
    return {"valid": Cat(*(v for _, v in cands)),
            "diff": {f"{i}_{j}": _exp(cands[i][0] - cands[j][0])
                     for i in range(n) for j in range(n) if i != j},
            "floor": [_exp(floor - x) for x, _ in cands],
            "top": [_exp(x + top_offset) for x, _ in cands]}


def _clamp(d):
    """A distance clamped to 63 (6 bits; a negative one, where the term is zero, any)."""
    return Mux(d[6:].any() & ~d[-1], 63, d[:6])[:6]


def _emax_choose(f) -> dict:
    """Section ``group1``'s share: which candidate is ``e_max`` (one-hot, none for the floor):
    one that counts, above the floor, above each earlier one that counts and not below each
    later one, from the differences' signs; beside it every distance clamped."""
    n = len(f.floor)
    wins = []
    for i in range(n):
        w = f.valid[i] & f.floor[i][-1]
        for j in range(n):
            if j < i:
                w = w & (~f.valid[j] | f.diff[f"{j}_{i}"][-1])
            elif j > i:
                w = w & (~f.valid[j] | ~f.diff[f"{i}_{j}"][-1])
        wins.append(w)
    return {"win": Cat(*wins), "top": f.top,
            "diff": {key: _clamp(f.diff[key]) for key in f.diff.shape().members},
            "floor": [_clamp(f.floor[j]) for j in range(n)]}


def _emax_select(f, top_offset: int) -> dict:
    """Section ``group2``'s share: each term's distance ``e_max - x_j`` (0 for ``e_max``'s
    own) and ``e_top``, selected one-hot by the choice."""
    n = len(f.floor)
    floor_won = ~f.win.any()
    dists = []
    for j in range(n):
        d = floor_won.replicate(6) & f.floor[j]
        for i in range(n):
            if i != j:
                d = d | (f.win[i].replicate(6) & f.diff[f"{i}_{j}"])
        dists.append(d)
    floor_top = Const(F4_ZERO_EXPONENT + top_offset, signed(EXPONENT_BITS)).as_unsigned()
    top = floor_won.replicate(EXPONENT_BITS) & floor_top
    for i in range(n):
        top = top | (f.win[i].replicate(EXPONENT_BITS) & f.top[i].as_unsigned())
    pending = {"pending_dist": dists[1:-1]} if n > 2 else {}
    return {"dist": dists[0], **pending, "c_dist": dists[-1], "e_top": top.as_signed()}


def group_sums(step: FusedStep, s, sum_bits: int = F4_SUM_BITS):
    """Sections ``group0``...: each group's 16 products added in pairs, one level per
    section (``F4_GROUP_BITS + 1`` bits signed at the end); beside the first three, ``e_max``
    (the counting candidates' exponents and -139) and each term's distance from it, clamped
    to 63, and ``e_top = e_max + sum_bits - 1 - 35 + 126`` for the result's exponent: the
    differences, the choice, the selection (:func:`_emax_frame`, :func:`_emax_choose`,
    :func:`_emax_select`)."""
    k = step.block_size
    groups = [[s.terms[i] for i in range(j, j + F4_GROUP)] for j in range(0, k, F4_GROUP)]
    chained = {"x_s": s.x_s, "group_nz": s.group_nz, **_pending(s)} if _chained(s) else {}
    top_offset = _top_offset(sum_bits)
    emax_fields = _emax_frame(s, top_offset)
    shares = (_emax_choose, functools.partial(_emax_select, top_offset=top_offset), None)
    for level in range((F4_GROUP - 1).bit_length()):
        groups = [[(grp[i] + grp[i + 1]).as_signed() for i in range(0, len(grp), 2)]
                  for grp in groups]
        s = step.cross({**_carried(step, s), **chained, "emax": emax_fields, "terms": groups},
                       f"group{level}")
        chained = {"x_s": s.x_s, "group_nz": s.group_nz, **_pending(s)} if _chained(s) else {}
        share = shares[level] if level < len(shares) else None
        emax_fields = share(s.emax) if share else s.emax
        groups = [[s.terms[j][i] for i in range(len(groups[0]))] for j in range(len(groups))]
    return s


#: The low bits of a distance that section ``align`` shifts by; ``align_hi`` by the others.
_LOW_SHIFT_BITS = 3


def _coarse(value, dist):
    """``value`` shifted right by the high bits of ``dist``."""
    return value >> Cat(Const(0, _LOW_SHIFT_BITS), dist[_LOW_SHIFT_BITS:])


def align_hi(step: FusedStep, s):
    """Section ``align_hi``: each group's magnitude placed at ``2^(e_max - 35)`` units and
    shifted right by the high bits of its distance, ``c``'s likewise; their signs."""
    g = step.geometry
    left = F4_FRACTION_BITS + g.lsb_exp  # |S_g| * 2^(lsb_a + lsb_b) at 2^(x_s - 35) units
    group_bits = F4_GROUP_BITS
    if step.ue4m3:  # |S_g| * P * 2^(lsb_a + lsb_b - 6)
        left -= 2 * _UE4M3_FRACTION_BITS
        group_bits = _group_bits(step)
    e = s.emax
    sums = [s.terms[j][0] for j in range(len(s.terms))]
    groups = [(total, e.dist) for total in sums]
    side = step.side(s)
    if _chained(s):  # the pending groups at their own distances; the state's next groups
        groups += [(s.pending[i].val, e.pending_dist[i]) for i in range(len(s.pending))]
        side = _next_groups(step, s, sums)
    coarse, fine, negs = [], [], []
    for total, dist in groups:
        neg = total[-1]
        mag = Mux(neg, -total, total).as_unsigned()[:group_bits]
        coarse.append(_coarse(Cat(Const(0, left), mag), dist))
        fine.append(dist[:_LOW_SHIFT_BITS])
        negs.append(neg)
    c_left = F4_FRACTION_BITS - 23
    return step.cross({
        "nan": s.nan, "inf": s.inf, "inf_neg": s.inf_neg, "e_top": e.e_top,
        "coarse": coarse, "fine": fine, "neg": Cat(*negs),
        "c_coarse": _coarse(Cat(Const(0, c_left), s.c_sig), e.c_dist),
        "c_fine": e.c_dist[:_LOW_SHIFT_BITS], "c_neg": s.c_neg, "side": side}, "align_hi")


def align(step: FusedStep, s):
    """Section ``align``: each term shifted right by the low bits of its distance
    (truncated); signed terms (a negative one as its ones' complement) and the count of
    negative ones."""
    m, g = step.m, step.geometry
    term_bits = F4_TERM_BITS
    if step.ue4m3:
        term_bits = _group_bits(step) + F4_FRACTION_BITS + g.lsb_exp \
            - 2 * _UE4M3_FRACTION_BITS
    width = term_bits + 1
    terms = []
    for j in range(len(s.coarse)):
        t = wire(m, (s.coarse[j] >> s.fine[j])[:term_bits], step.name(f"group_term{j}"))
        t = Cat(t, Const(0, 1))
        terms.append(Mux(s.neg[j], ~t, t).as_signed())
    c_bits = 23 + 1 + F4_FRACTION_BITS - 23
    c_mag = wire(m, (s.c_coarse >> s.c_fine)[:c_bits], step.name("term_c"))
    c_term = Cat(c_mag, Const(0, width - len(c_mag)))
    terms.append(Mux(s.c_neg, ~c_term, c_term).as_signed())
    negs = [s.neg[j] for j in range(len(s.neg))] + [s.c_neg]
    count = negs[0]
    for n in negs[1:]:
        count = count + n
    terms.append(Cat(count, Const(0, width - len(count))).as_signed())
    return step.cross({"nan": s.nan, "inf": s.inf, "inf_neg": s.inf_neg, "e_top": s.e_top,
                       "terms": terms, "side": step.side(s)}, "align")


def _next_groups(step: FusedStep, s, sums) -> dict:
    """The side values with ``groups``: the pending groups but the oldest ``k / 16`` (empty
    ones: a step holds at most ``64 / k - 1`` blocks before its last), then this block's, for
    the state a non-closing block leaves (:func:`hw.dot.chained_f4.next_state`)."""
    width = group_value_bits(step.geometry.scale_format) + 1
    x = _exp(s.x_s + Const(0, signed(EXPONENT_BITS)))  # sign-extended to the state's x
    own = [{"val": sums[j].as_signed()[:width].as_signed(), "x": x, "nz": s.group_nz[j]}
           for j in range(len(sums))]
    kept = [s.pending[i] for i in range(len(own), len(s.pending))]
    side = {name: s.side[name] for name in s.side.shape().members}
    return {**side, "groups": kept + own}
