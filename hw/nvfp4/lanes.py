"""The NVFP4 quantizer's lanes: ``y = f(x * r)``, ``clamp(y, -6, 6)``, e2m1 RNE, the sign
from x's sign bit.

Both factors are normalized before the product: x's significand as the block enters, in the
block path's first two sections beside it (:func:`normalized_values`: a subnormal x's
leading zeros, then the shift), r's after ``rround`` (:func:`hw.nvfp4.reciprocal.
scale_reciprocal`).  The product is exact (a tree of carry chains,
:func:`hw.multiply.pair_sum_sections`; or ``multipliers="mult18x18d"``, MULT18X18D blocks,
:mod:`hw.nvfp4.products`), its top bit one of two places (``plz``), and it is rounded to 24
bits by
:func:`hw.rounding.round_increment` with an unbounded exponent: a product below fp32's normal
range gives e2m1 code 0 either way, and one above it saturates either way.  That value is
then rounded onto the e2m1 grid (:class:`hw.rounding.Grid`, :func:`hw.rounding.round_aligned`):
two roundings in series, as the contract's ``f(x * r)`` then e2m1.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Value

import golden

from ..multiply import pair_sum_sections, partial_products
from ..nets import wire
from ..rounding import RNE, Grid, round_aligned, round_increment
from .products import dsp_products
from .scale import magnitude_fields, signed, significand_leading_zeros
from .sections import MUL_LEVELS_PER_SECTION

__all__ = ["normalized_values", "quantize_lanes", "NAN_BLOCK_BYTE"]

#: The scale byte of a block holding a NaN or an Inf (UE4M3's NaN); its codes are 0.
NAN_BLOCK_BYTE = golden.scale_format("ue4m3").nan_code
_FP32 = golden.float_format("fp32")
_E2M1 = golden.element_format("fp4_e2m1")


def normalized_values(scope, g, data, names):
    """The input values normalized over the boundaries ``names[0]`` and ``names[1]`` (the
    block path's first two, crossed beside it in ``scope``): per value its sign ``neg``,
    ``sig`` (the significand, top bit set unless x is +-0) and ``lsb`` (the exponent of its
    last bit).  ``data`` is the beat's values (value i at bits ``[w*i, w*(i+1))``).  Returns
    the view after ``names[1]`` (field ``lanes``)."""
    m, f, mb, w = scope.module, g.input_format, g.mbits, g.width
    data = Value.cast(data)
    out = []
    for i in range(len(data) // w):
        v = data[w * i:w * (i + 1)]
        sig, exp = magnitude_fields(v[:w - 1], mb)
        out.append({"neg": v[w - 1], "exp": exp, "sig": sig,
                    "lz": significand_leading_zeros(m, v[:w - 1], mb, scope.name(f"x{i}_lz"))})
    x = scope.cross({"lanes": out}, names[0])
    return scope.cross({"lanes": [
        {"neg": v.neg, "sig": (v.sig << v.lz)[:mb + 1],
         "lsb": signed(v.exp) - (f.bias + mb) - v.lz} for v in x.lanes]}, names[1])


def quantize_lanes(scope, g, x, values):
    """Sections ``mul_<j>`` (LUT products; MULT18X18D blocks: ``operands`` to ``psum``,
    :func:`hw.nvfp4.products.dsp_products`) to ``output`` on the ``rnorm`` view ``x`` (the
    block's byte, nonfinite flag and r normalized) and the block's ``values`` (a list of
    :func:`normalized_values`' lanes as after ``rnorm``); returns the view after
    ``output``: ``scale`` (the UE4M3 byte) and ``codes``."""
    m, k, mb = scope.module, g.block_size, g.mbits
    sig_r = x.sig
    blk = {"nonfinite": x.nonfinite, "byte": x.byte}
    lanes = [{"neg": v.neg, "lsb": v.lsb + x.lsb, "sig": v.sig} for v in values]
    if g.multipliers == "lut":
        # sections mul_<j>: each lane's product sig_x * sig_r in a tree of carry chains
        lanes, blk = pair_sum_sections(
            scope, [{"neg": ln["neg"], "lsb": ln["lsb"],
                     "rows": partial_products(Cat(sig_r, Const(0, 1)).as_signed(), ln["sig"])}
                    for ln in lanes], blk, width=24 + 1 + mb + 1,
            names=[scope.name(f"lane{i}_mul") for i in range(k)],
            sections=[f"mul_{j}" for j in range(g.mul_sections)],
            levels_per_section=MUL_LEVELS_PER_SECTION)
    else:
        lanes, blk = dsp_products(scope, sig_r, lanes, blk)
    # -- plz: normalize the product of two normalized significands: its top bit at pw - 1
    # or pw - 2, or zero (x is +-0) -----------------------------------------------------
    pw = 24 + mb + 1
    out = []
    for ln in lanes:
        prod = Value.cast(ln["prod"])[:pw]
        hi = prod[pw - 1]
        out.append({"neg": ln["neg"], "zero": ~(hi | prod[pw - 2]),
                    "sig": Mux(hi, prod, prod << 1)[:pw], "top": ln["lsb"] + (pw - 2) + hi})
    y = scope.cross({**blk, "lanes": out}, "plz")
    blk = {name: getattr(y, name) for name in blk}
    # -- yup, yround: f(x * r) to 24 bits: the increment, then its add (the e2m1 grid's
    # differences for the result's binade and the next one formed beside the increment:
    # no add follows the carry; ``epos`` selects by it) -----------------------------------
    emin = 1 - _E2M1.bias
    grid = Grid(sig_width=24, emin=emin, mbits=_E2M1.mbits)
    out = []
    for i, ln in enumerate(y.lanes):
        n = ln.sig[pw - 24:]
        out.append({"neg": ln.neg, "zero": ln.zero, "n": n, "at": grid.position_inputs(ln.top),
                    "up": round_increment(m, ln.sig[pw - 25], ln.sig[:pw - 25].any(), n[0],
                                          RNE, name=scope.name(f"lane{i}_yup"))})
    y = scope.cross({**blk, "lanes": out}, "yup")
    blk = {name: getattr(y, name) for name in blk}
    out = []
    for i, ln in enumerate(y.lanes):
        s = wire(m, ln.n + ln.up, scope.name(f"lane{i}_ysum"))
        carry = s[24]
        out.append({"neg": ln.neg, "zero": ln.zero, "sig": Mux(carry, 1 << 23, s[:24]),
                    "at": ln.at, "carry": carry})
    y = scope.cross({**blk, "lanes": out}, "yround")
    blk = {name: getattr(y, name) for name in blk}
    # -- epos, ealign, eround: e2m1 RNE of f(x * r), saturated at 6 (the shift keeps 3 of
    # the 24 bits: a shifter over the 4 drops e2m1's grid takes, beside a fixed OR) -------
    out = [{"neg": ln.neg, "zero": ln.zero, "sig": ln.sig,
            "position": grid.position_of_either(m, ln.at, ln.carry,
                                                name=scope.name(f"lane{i}_e"))}
           for i, ln in enumerate(y.lanes)]
    y = scope.cross({**blk, "lanes": out}, "epos")
    blk = {name: getattr(y, name) for name in blk}
    out = [{"neg": ln.neg, "zero": ln.zero,
            "grid": grid.align(m, ln.sig, ln.position, name=scope.name(f"lane{i}_e"),
                               excess_shift=True)}
           for i, ln in enumerate(y.lanes)]
    y = scope.cross({**blk, "lanes": out}, "ealign")
    blk = {name: getattr(y, name) for name in blk}
    out = []
    for i, ln in enumerate(y.lanes):
        code = round_aligned(m, ln.grid, mbits=_E2M1.mbits, rounding=RNE,
                             name=scope.name(f"lane{i}_e"), saturate_at=_E2M1.max_code)
        mag = Mux(ln.zero, 0, code[:_E2M1.bits - 1])
        out.append({"neg": ln.neg, "mag": mag})
    y = scope.cross({**blk, "lanes": out}, "eround")
    # -- output: the sign; a NaN/Inf block's scale byte and zero codes ----------------------
    codes = [Mux(y.nonfinite, 0, Cat(ln.mag, ln.neg)) for ln in y.lanes]
    return scope.cross({"scale": Mux(y.nonfinite, NAN_BLOCK_BYTE, y.byte), "codes": codes},
                       "output")
