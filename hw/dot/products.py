"""The lane products of the fused step: sections ``multiply`` (with ``multiply_lo``, or
``operands`` and ``drain`` around MULT18X18D blocks) and ``product`` (with ``lane_shift``).

``multiply`` builds the signed lane products ``+-sig_a*sig_b`` (not yet shifted), in LUTs
and carry chains (:func:`hw.arith.partial_product_sum`) or DSPs, and reduces the lane
specials over the block; ``product`` shifts each into place, an exact signed term in units
of ``2^(lsb_a + lsb_b)``.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Value

from ..arith import pair_sum_tree, pair_sums, partial_products, wire
from ..dsp import mult18x18d
from .sections import SPLIT_LANE_SHIFT_BITS
from .step import FusedStep

__all__ = ["multiply", "product", "level_values"]


def level_values(level, width: int) -> list:
    """The values of a level of pair sums (:func:`hw.arith.pair_sums`), each ``width`` bits
    signed, to cross a boundary as one array: an odd last term, which passes the level
    unsummed, gets its carry (a two's complement factor's top row) added and is
    sign-extended or cut to ``width`` (its value fits: it is a partial product of the
    ``width``-bit product)."""
    out = []
    for value, carry in level:
        value = Value.cast(value)
        if carry is not None:
            value = value.as_signed() + carry
        if len(value) != width:
            value = value.as_signed()
            value = Cat(value, value[-1].replicate(max(0, width - len(value))))[:width]
            value = value.as_signed()
        out.append(value)
    return out


def _registered_level(ln):
    """A level of pair sums after a boundary: (sum, no carry) pairs."""
    return [(ln.level[j], None) for j in range(len(ln.level))]


def _flags(step: FusedStep, s) -> dict:
    """The block's specials so far and c, carried from ``multiply`` to ``product``."""
    return {"nan": s.nan, "pinf": s.pinf, "ninf": s.ninf, "c_nan": s.c_nan,
            "c_inf": s.c_inf, "c": s.c, "a_t": s.a_t, "side": step.side(s)}


def _block_specials(s, lanes, early: bool) -> dict:
    """The block's specials, reduced over the lanes (or from ``factors``' groups), and c's."""
    if early:
        return {"nan": s.flags.nan.any() | s.scale_nan, "pinf": s.flags.pinf.any(),
                "ninf": s.flags.ninf.any(), "c_nan": s.c_nan, "c_inf": s.c_inf}
    return {
        "nan": Cat(*(ln.nan for ln in lanes)).any() | s.scale_nan,
        "pinf": Cat(*(ln.pinf for ln in lanes)).any(),
        "ninf": Cat(*(ln.ninf for ln in lanes)).any(),
        # c's specials, here rather than with the lane terms (which they once delayed: the
        # product stage's worst path, 5 cells, ended at inf_neg)
        "c_nan": (s.c[23:31] == 0xFF) & s.c[:23].any(),
        "c_inf": (s.c[23:31] == 0xFF) & ~s.c[:23].any()}


def multiply(step: FusedStep, s):
    """Sections ``operands`` (MULT18X18D), ``multiply_lo`` (where split), ``multiply`` and
    ``drain`` (MULT18X18D): the signed lane products and the block's specials.

    LUT products of 4 or more rows (:func:`hw.dot.sections.dot_sections`) have the boundary
    ``multiply_lo``: one level of their tree of carry chains before it (for int8 x int8 the
    second, where decode summed the first), the rest after it.  (Built so at every depth: the
    register-bypass proof then compares like with like; a SAT solver does not settle two
    different multipliers in minutes.)  MULT18X18D blocks (:mod:`hw.dsp`): the boundary
    ``operands`` is the route to the DSP column, ending in the blocks' own input registers,
    ``multiply`` their output registers, and ``drain`` the route back into the fabric.
    """
    m, scope, k = step.m, step.scope, step.block_size
    signed_codes, in_block = step.signed_codes, step.in_block
    early = "factors" in scope.names  # the block's specials reduced in factors

    def early_flags(s):  # carried from factors to multiply
        return {"flags": s.flags, "c_nan": s.c_nan, "c_inf": s.c_inf} if early else {}

    def lane_fields(ln):
        flags = {} if early else {"nan": ln.nan, "pinf": ln.pinf, "ninf": ln.ninf}
        return {"shift_a": None if signed_codes else ln.shift_a,
                "shift_b": None if signed_codes else ln.shift_b, **flags}

    lanes = [s.lanes[i] for i in range(k)]
    if signed_codes and step.multipliers == "lut":
        tree = [_registered_level(ln) for ln in lanes]
        product_width = step.geometry.code_product_bits
        depth = 1
    elif step.multipliers == "lut":
        tree = [partial_products(ln.wide, ln.narrow) for ln in lanes]
        product_width = len(lanes[0].wide) + len(lanes[0].narrow)
        depth = 0
    if in_block:
        factors = [(ln.wide, ln.narrow) for ln in lanes]
        s = step.cross({"lanes": [lane_fields(ln) for ln in lanes], "scale_nan": s.scale_nan,
                        **early_flags(s), "c": s.c, "a_t": s.a_t,
                        "side": step.side(s)}, "operands")
        lanes = [s.lanes[i] for i in range(k)]
    if "multiply_lo" in scope.names:
        s = step.cross({
            "lanes": [{"level": level_values(pair_sums(m, tree[i], product_width,
                                                       step.name(f"sig_prod{i}"), depth),
                                             product_width),
                       **lane_fields(ln)}
                      for i, ln in enumerate(lanes)],
            "scale_nan": s.scale_nan, **early_flags(s), "c": s.c, "a_t": s.a_t,
            "side": step.side(s),
        }, "multiply_lo")
        lanes = [s.lanes[i] for i in range(k)]
        tree = [_registered_level(ln) for ln in lanes]
        depth += 1
    if step.multipliers == "lut":
        prods = [pair_sum_tree(m, tree[i], product_width, step.name(f"sig_prod{i}"), depth)
                 for i in range(k)]
    elif step.multipliers == "dsp":  # `*`: yosys maps each to a DSP multiplier
        prods = [wire(m, (ln.wide * ln.narrow)[:len(ln.wide) + len(ln.narrow)].as_signed(),
                      step.name(f"sig_prod{i}")) for i, ln in enumerate(lanes)]
    s = step.cross({
        "prods": None if in_block else prods,
        "shifts": None if signed_codes else [ln.shift_a + ln.shift_b for ln in lanes],
        **_block_specials(s, lanes, early),
        "c": s.c, "a_t": s.a_t, "side": step.side(s),
    }, "multiply")
    return _drain(step, s, factors) if in_block else s


def _drain(step: FusedStep, s, factors):
    """Section ``drain``: the MULT18X18D blocks' products (``factors``: each lane's wide and
    narrow factor before ``operands``) routed back into the fabric."""
    m, scope, signed_codes = step.m, step.scope, step.signed_codes
    width = len(factors[0][0]) + len(factors[0][1])
    enables = {key: scope.enable(key) if scope.registers(key) else None
               for key in ("operands", "multiply")}
    prods = [mult18x18d(m, wide, narrow if signed_codes else
                        Cat(narrow, Const(0, 1)).as_signed(), step.name(f"lane_mult{i}"),
                        input_enable=enables["operands"],
                        output_enable=enables["multiply"])[:width].as_signed()
             for i, (wide, narrow) in enumerate(factors)]
    return step.cross({"prods": prods, "shifts": None if signed_codes else s.shifts,
                       **_flags(step, s)}, "drain")


def product(step: FusedStep, s):
    """Sections ``lane_shift`` (where split) and ``product``: exact signed lane terms in
    units of ``2^(lsb_a + lsb_b)``; c's fields and the block's specials with c's.

    Each term is the signed significand product, shifted (sign-extended) into place.  A wide
    shift (:func:`hw.dot.sections.dot_sections`) has the boundary ``lane_shift``: its low
    bits shift the narrow product before it, its high bits the wider result after it.
    """
    k, wp, n = step.block_size, step.geometry.product_bits, step.window_bits
    signed_codes = step.signed_codes
    prods = [s.prods[i] for i in range(k)]
    shifts = None if signed_codes else [s.shifts[i] for i in range(k)]
    if "lane_shift" in step.scope.names:
        low = SPLIT_LANE_SHIFT_BITS
        s = step.cross({"prods": [(prods[i] << shifts[i][:low]).as_signed() for i in range(k)],
                        "shifts": [shifts[i][low:] for i in range(k)], **_flags(step, s)},
                       "lane_shift")
        prods = [s.prods[i] for i in range(k)]
        shifts = [Cat(Const(0, low), s.shifts[i]) for i in range(k)]
    terms = [(prods[i] if signed_codes else prods[i] << shifts[i]).as_signed()[:wp + 1]
             .as_signed() for i in range(k)]
    # The last lane's term enters the tree as t - 1 (the spine, hw.dot.block_sum): the
    # complement of its -t, which the lane shift's LUTs compute instead of -t; int8 x int8
    # codes have no sign to swap and no shift, so their p - 1 is a short chain in this
    # section, which they otherwise pass through.
    terms[-1] = (terms[-1] - 1 if signed_codes else ~terms[-1])[:wp + 1].as_signed()
    pinf, ninf, c_nan, c_inf = s.pinf, s.ninf, s.c_nan, s.c_inf
    cbits = s.c
    c_neg, c_exp = cbits[31], cbits[23:31]
    nan = s.nan | c_nan | (pinf & ninf) | (c_inf & Mux(c_neg, pinf, ninf))
    # c = C * 2^eC with its 24-bit field's top at cTop (-126 for exponent field 0); the
    # frame when c anchors puts that top at window bit n-2: aC = cTop - (n-3).
    a_c = Mux(c_exp == 0, -126 - (n - 3),
              c_exp - (127 + n - 3))[:step.geometry.frame_bits].as_signed()
    return step.cross({
        "terms": terms, "nan": nan, "inf": pinf | ninf | c_inf,
        "inf_neg": ninf | (c_inf & c_neg), "c": cbits,
        # for finish, where the test of 31 bits before its selects was four LUT levels
        "c_zero": ~cbits[:31].any(),
        "a_t": s.a_t, "a_c": a_c, "side": step.side(s),
    }, "product")
