"""The NVFP4 quantizer's lanes: ``y = f(x * r)``, ``clamp(y, -6, 6)``, e2m1 RNE, the sign
from x's sign bit.

The product of x's significand (subnormals as they are) and r's is exact (a tree of carry
chains, :func:`hw.multiply.pair_sum_sections`; or ``multipliers="mult18x18d"``, MULT18X18D blocks,
:mod:`hw.nvfp4.products`), normalized, and rounded to 24 bits by
:func:`hw.rounding.round_increment` with an unbounded exponent: a product below fp32's normal
range gives e2m1 code 0 either way, and one above it saturates either way.  That value is
then rounded onto the e2m1 grid (:class:`hw.rounding.Grid`, :func:`hw.rounding.round_aligned`):
two roundings in series, as the contract's ``f(x * r)`` then e2m1.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Value

import golden

from ..arith import leading_zeros
from ..multiply import pair_sum_sections, partial_products
from ..nets import wire
from ..rounding import RNE, Grid, round_aligned, round_increment
from .products import dsp_products
from .scale import signed
from .sections import MUL_LEVELS_PER_SECTION

__all__ = ["quantize_lanes", "NAN_BLOCK_BYTE"]

#: The scale byte of a block holding a NaN or an Inf (UE4M3's NaN); its codes are 0.
NAN_BLOCK_BYTE = golden.scale_format("ue4m3").nan_code
_FP32 = golden.float_format("fp32")
_E2M1 = golden.element_format("fp4_e2m1")


def quantize_lanes(scope, g, x, data):
    """Sections ``mul_<j>`` (LUT products; MULT18X18D blocks: ``operands`` to ``psum``,
    :func:`hw.nvfp4.products.dsp_products`) to ``output`` on the ``rround`` view ``x`` and
    the block's values ``data`` (a Value, value i at bits ``[w*i, w*(i+1))``, as after
    ``rround``); returns the view after ``output``: ``scale`` (the UE4M3 byte) and
    ``codes``."""
    m, f, k = scope.module, g.input_format, g.block_size
    mb, w = g.mbits, g.width
    rbits = Value.cast(x.r)
    r_e = rbits[_FP32.mbits:]
    sig_r = Cat(rbits[:_FP32.mbits], r_e.any())
    r_lsb = signed(Mux(r_e.any(), r_e, 1)) - (_FP32.bias + _FP32.mbits)
    blk = {"nonfinite": x.nonfinite, "byte": x.byte}
    lanes = []
    for i in range(k):
        v = data[w * i:w * (i + 1)]
        e = v[mb:w - 1]
        sig_x = Cat(v[:mb], e.any())
        lsb = signed(Mux(e.any(), e, 1)) - (f.bias + mb) + r_lsb
        lanes.append({"neg": v[w - 1], "lsb": lsb, "sig": sig_x})
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
    # -- plz: normalize the product ----------------------------------------------------
    pw = 24 + mb + 1
    out = []
    for i, ln in enumerate(lanes):
        prod = Value.cast(ln["prod"])[:pw]
        lz = leading_zeros(m, prod, name=scope.name(f"lane{i}_plz"))
        out.append({"neg": ln["neg"], "zero": ~prod.any(), "sig": (prod << lz)[:pw],
                    "top": ln["lsb"] + (pw - 1) - lz})
    y = scope.cross({**blk, "lanes": out}, "plz")
    blk = {name: getattr(y, name) for name in blk}
    # -- yround: f(x * r) to 24 bits ----------------------------------------------------
    out = []
    for i, ln in enumerate(y.lanes):
        n = ln.sig[pw - 24:]
        up = round_increment(m, ln.sig[pw - 25], ln.sig[:pw - 25].any(), n[0], RNE,
                             name=scope.name(f"lane{i}_yup"))
        s = wire(m, n + up, scope.name(f"lane{i}_ysum"))
        carry = s[24]
        out.append({"neg": ln.neg, "zero": ln.zero, "sig": Mux(carry, 1 << 23, s[:24]),
                    "top": ln.top + carry})
    y = scope.cross({**blk, "lanes": out}, "yround")
    blk = {name: getattr(y, name) for name in blk}
    # -- epos, ealign, eround: e2m1 RNE of f(x * r), saturated at 6 ----------------------
    emin = 1 - _E2M1.bias
    grid = Grid(sig_width=24, emin=emin, mbits=_E2M1.mbits)
    out = [{"neg": ln.neg, "zero": ln.zero, "sig": ln.sig,
            "position": grid.position(m, ln.top - emin, emin - ln.top,
                                      name=scope.name(f"lane{i}_e"))}
           for i, ln in enumerate(y.lanes)]
    y = scope.cross({**blk, "lanes": out}, "epos")
    blk = {name: getattr(y, name) for name in blk}
    out = [{"neg": ln.neg, "zero": ln.zero,
            "grid": grid.align(m, ln.sig, ln.position, name=scope.name(f"lane{i}_e"))}
           for i, ln in enumerate(y.lanes)]
    y = scope.cross({**blk, "lanes": out}, "ealign")
    blk = {name: getattr(y, name) for name in blk}
    out = []
    for i, ln in enumerate(y.lanes):
        code = round_aligned(m, ln.grid, mbits=_E2M1.mbits, rounding=RNE,
                             name=scope.name(f"lane{i}_e"))
        sat = code[_E2M1.bits - 1:].any()  # above 6 (0b111)
        mag = Mux(ln.zero, 0, Mux(sat, _E2M1.max_code, code[:_E2M1.bits - 1]))
        out.append({"neg": ln.neg, "mag": mag})
    y = scope.cross({**blk, "lanes": out}, "eround")
    # -- output: the sign; a NaN/Inf block's scale byte and zero codes ----------------------
    codes = [Mux(y.nonfinite, 0, Cat(ln.mag, ln.neg)) for ln in y.lanes]
    return scope.cross({"scale": Mux(y.nonfinite, NAN_BLOCK_BYTE, y.byte), "codes": codes},
                       "output")
