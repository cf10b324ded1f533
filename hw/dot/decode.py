"""The first sections of the fused step: ``decode`` (element fields, per lane the product's
two factors, their shifts and the lane's specials), ``scale_product`` (NVFP4: the UE4M3
scales' significand product) and ``factors`` (the wide factor's sign applied, the specials
reduced).

``c`` passes undecoded (in MXDotGeneral it comes from the accumulator's forwarding path).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux

from golden.formats import SCALE_NAN

from ..arith import kept, pair_sums, partial_products, wire
from ..elements import decode_element, signed_significand
from .nvfp4_scale import (
    SCALE_COPIES,
    scale_fields,
    scale_multiples,
    signed_scaled_significand,
)
from .products import level_values
from .step import FusedStep

__all__ = ["decode", "scale_product", "factors"]


def _lane(step: FusedStep, a, b, i: int):
    """Lane ``i``'s fields at the ``decode`` boundary, and the wide factor's format (None for
    two's complement codes on both sides).

    Two's complement codes on both sides (int8 x int8): each code is its own signed
    significand times 2^0 (-128 included, where the decoder gives -64 * 2^1), so the product
    is the codes' and needs no decoding: no magnitude, no negation, no shift.  LUT products
    then start here: the first level of their tree of carry chains is summed from the codes
    (hw.arith.partial_products, a signed multiplier's top row without a negation).
    """
    m, fmt_a, fmt_b, k = step.m, step.geometry.fmt_a, step.geometry.fmt_b, step.block_size
    x = decode_element(m, a.codes[i], fmt_a, step.name(f"a{i}"))
    y = decode_element(m, b.codes[i], fmt_b, step.name(f"b{i}"))
    neg = x.neg ^ y.neg
    # Inf * 0 and NaN codes give NaN; otherwise an Inf operand gives a signed Inf.
    nan = x.nan | y.nan | (x.inf & y.zero) | (y.inf & x.zero)
    # (a NaN lane may also flag an Inf: the block's NaN overrides it)
    inf = x.inf | y.inf
    flags = {"nan": nan, "pinf": inf & ~neg, "ninf": inf & neg}
    if step.signed_codes:
        wide, narrow = a.codes[i].as_signed(), b.codes[i].as_signed()
        if step.multipliers == "lut":
            rows = partial_products(wide, narrow, y_signed=True)
            width = step.geometry.code_product_bits
            level = pair_sums(m, rows, width, step.name(f"sig_prod{i}"))
            return {"level": level_values(level, width), **flags}, None
        return {"wide": wide, "narrow": narrow, **flags}, None
    # The product's factors: the wider significand carries the lane's sign (negated
    # here, so the multiply is one sum), the narrower one gives the partial products.
    # A NaN or Inf lane's product is not zeroed: its flag makes the block's result NaN or
    # Inf, which replaces the sum in the finish section, so the sum's value is unused.
    # A two's complement code (int8 against a float) is its own signed significand, which
    # only the other factor's sign negates: one carry chain after the input, not its
    # magnitude and then the negated magnitude, two in series.
    # The last lane's product is built with the opposite sign, -p, at no cost (a mux's
    # inputs swapped): the product section complements its term to ~(-t) = t - 1, which
    # starts the tree's spine (hw.dot.block_sum).
    wide_op, narrow_op = (fmt_a, a.codes[i], x), (fmt_b, b.codes[i], y)
    if len(y.sig) > len(x.sig):
        wide_op, narrow_op = narrow_op, wide_op
    (wide_fmt, wide_code, wide_dec), narrow_dec = wide_op, narrow_op[2]
    narrow = narrow_dec.sig
    last_lane = i == k - 1
    negate = ~neg if last_lane else neg
    if wide_fmt.twos_complement:
        wide_negate = ~narrow_dec.neg if last_lane else narrow_dec.neg
        wide = wide_code
    else:
        wide_negate = negate
        wide = wide_dec.sig
    # the two shifts are summed in multiply, beside the product: here the sum's chain came
    # after three LUT levels of the element decode (fp8_e5m2, 5.2 ns, with the spine at a
    # leaf)
    return {"wide": wide, "negate": wide_negate, "narrow": narrow,
            "shift_a": x.shift, "shift_b": y.shift, **flags}, wide_fmt


def decode(step: FusedStep, a, b, c, side):
    """Section ``decode``: per lane the product's two factors (or, for two's complement
    codes on both sides with LUT products, the first level of their sum), their shifts and
    the lane's specials; from the scales, the frame when T anchors.

    Returns
    -------
    View, ElementFormat or None
        The view after the boundary, and the wide factor's format (the same in every lane;
        None for two's complement codes on both sides).
    """
    lanes, wide_fmt = [], None
    for i in range(step.block_size):
        lane, wide_fmt = _lane(step, a, b, i)
        lanes.append(lane)
    # the frame when T anchors, aT = sa + sb + lsb - 254 - G (T's lsb at bit G+1): where the
    # factors section follows, the scales' sum here and the constant added there (two chains
    # in one section were input -> decode's deepest path)
    split_frame = "factors" in step.scope.names
    frame_bits = step.geometry.frame_bits
    # UE4M3 scales (NVFP4): their E8M0-like exponents here, and the first level of adds of
    # P = sig_a * sig_b and 3P (the last in scale_product)
    nv = (scale_fields(step.m, a.scale, b.scale, step.name("scale"), halves=True)
          if step.ue4m3 else None)
    sa, sb = (nv["exp_a"], nv["exp_b"]) if nv else (a.scale, b.scale)
    e_t = sa + sb if split_frame else sa + sb + step.frame_offset
    s = step.cross({
        "lanes": lanes,
        "scale_nan": nv["nan"] if nv else (a.scale == SCALE_NAN) | (b.scale == SCALE_NAN),
        "c": c,
        "a_t": e_t[:frame_bits].as_signed() if not split_frame else e_t,
        "side": side, "scale_sig": {"p1": nv["p1"], "p3": nv["p3"]} if nv else None,
    }, "decode")
    return s, wide_fmt


def scale_product(step: FusedStep, s):
    """Section ``scale_product`` (UE4M3 scales, NVFP4): the last add of ``P`` and of ``3P``
    (:func:`hw.dot.nvfp4_scale.scale_multiples`), everything else carried to ``factors``.  In
    ``decode`` with the scale fields and the first level of adds it was the input ->
    ``decode`` path, 7 cells, 1.8 ns logic + 3.8 ns routing.

    Returns the view after the boundary and ``P``'s and ``3P``'s
    :data:`~hw.dot.nvfp4_scale.SCALE_COPIES` registers (the view's ``scale_sig`` the first),
    each for a part of the lanes."""
    multiples = wire(step.m, scale_multiples(step.m, s.scale_sig, step.name("scale_sum")),
                     step.name("scale_multiples"))
    s = step.cross({
        "lanes": s.lanes, "scale_nan": s.scale_nan, "c": s.c, "a_t": s.a_t,
        "side": step.side(s), "scale_sig": multiples,
    }, "scale_product")
    return s, [s.scale_sig, *step.scope.replicate(multiples, "scale_product",
                                                  SCALE_COPIES - 1)]


def factors(step: FusedStep, s, wide_fmt, scale_sigs=None):
    """Section ``factors`` (float wide factors): the wide factor's sign applied, a carry
    chain after decode's LUT levels (in one section with them, input -> decode is a worst
    path, 8-12 cells, 2.0-2.1 ns logic + 2.3-2.5 ns routing, at 20 stages).  NVFP4: the wide
    factor is first scaled by ``P``, lane ``i`` from ``scale_sigs[i * len(scale_sigs) // k]``
    (:func:`scale_product`'s copies)."""
    m, k = step.m, step.block_size

    def signed_wide(i, ln):  # wide_fmt: the wide factor's format, the same in every lane
        if wide_fmt.twos_complement:
            return signed_significand(ln.wide, wide_fmt, ln.negate)
        if step.ue4m3:  # NVFP4: the wide factor times P (hw.dot.nvfp4_scale)
            p = scale_sigs[i * len(scale_sigs) // k]
            return signed_scaled_significand(ln.wide, ln.negate, p.p1, p.p3)
        mag = Cat(ln.wide, Const(0, 1)).as_signed()
        return Mux(ln.negate, -mag, mag)[:len(mag)].as_signed()
    # Beside the chain, the lane specials reduced in groups of 8 lanes and c's specials
    # (in multiply, the specials' OR over 32 lanes and c's tests were 4 LUT levels).
    groups = [range(j, min(j + 8, k)) for j in range(0, k, 8)]
    c_max = kept(m, s.c[23:31] == 0xFF, step.name("c_max"))
    c_frac_nz = kept(m, Cat(kept(m, s.c[:12].any(), step.name("c_frac_nz0")),
                         kept(m, s.c[12:23].any(), step.name("c_frac_nz1"))).any(),
                     step.name("c_frac_nz"))
    lanes_in = [s.lanes[i] for i in range(k)]
    return step.cross({
        "lanes": [{"wide": signed_wide(i, ln), "narrow": ln.narrow, "shift_a": ln.shift_a,
                   "shift_b": ln.shift_b} for i, ln in enumerate(lanes_in)],
        "flags": {f: Cat(*(Cat(*(lanes_in[i][f] for i in g)).any() for g in groups))
                  for f in ("nan", "pinf", "ninf")},
        "c_nan": c_max & c_frac_nz, "c_inf": c_max & ~c_frac_nz,
        "scale_nan": s.scale_nan, "c": s.c,
        "a_t": (s.a_t + step.frame_offset)[:step.geometry.frame_bits].as_signed(),
        "side": step.side(s),
    }, "factors")
