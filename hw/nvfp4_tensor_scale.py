"""f(P * s), the NVFP4 dequantizer's tensor-scale product (two level): the fp32 RNE product
of the tensor scale P (fp32 bits) and a UE4M3 block scale s, in the sections ``scale`` to
``pround`` of :class:`hw.nvfp4_dequantizer.NVFP4Dequantizer` (docs/nvfp4.md).

The exact 24 x 4-bit product of the significands, normalized (leading-zero count, then the
shift in two sections) and shifted onto the fp32 grid (:class:`hw.rounding.Grid`, the shift
in two sections: :func:`hw.dequantizer.align_high`, :func:`hw.dequantizer.align_low`), rounded
once (:func:`hw.rounding.round_aligned`), overflow to Inf from the binade.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Value
from amaranth.utils import bits_for

import golden

from .arith import leading_zeros, shift_left_parts, trailing_zeros, wire
from .dequantizer import align_high, align_low
from .dot.sections import Estimate
from .rounding import RNE, Grid, overflows, round_aligned

__all__ = ["tensor_scale_product", "ue4m3_fields", "signed_wider", "TENSOR_ESTIMATES",
           "TENSOR_COPIES", "SHIFT_LOW_BITS"]

_UE4M3_NAN = golden.scale_format("ue4m3").nan_code
_FP32 = golden.float_format("fp32")
_FP32_EMIN = 1 - _FP32.bias
_P_BITS = 24  # P's significand, hidden bit included
_S_BITS = 4  # UE4M3's significand, hidden bit included

#: The sections of the tensor-scale product, two level only, in datapath order (ns, ECP5 speed
#: 8).  Estimates by analogy with the MX dequantizer's measured sections (hw.dequantizer), not
#: measured on this unit.
TENSOR_ESTIMATES = {
    "scale": Estimate(3.5, "UE4M3 and fp32 fields, the 24 x 4-bit product's two partial "
                      "sums side by side (estimate; with the third add here it was the "
                      "critical path, 5.8-6.1 ns over 9-11 cells, 3 seeds)"),
    "pproduct": Estimate(2.5, "the third add of the product (estimate)"),
    "pcount": Estimate(3.5, "the leading-zero count of the 28-bit product (estimate; with "
                       "the shift in one section it was the critical path, 7.2-7.5 ns over "
                       "8-16 cells, 3 seeds)"),
    "pnorm_hi": Estimate(2.5, "the normalizing shift by the count's high bits (0, 8, 16 or 24 "
                         "places), the product's binade and trailing zeros beside it "
                         "(estimate; with the whole shift in one section, pcount -> pnorm was "
                         "a worst path: 5 cells, 1.3 ns logic + 3.8 ns routing)"),
    "pnorm": Estimate(2.5, "the shift by the count's low bits, 0..7 places (estimate)"),
    "pposition": Estimate(3.0, "the product's fp32 binade and shift amount (estimate)"),
    "palign_hi": Estimate(2.5, "the shift onto the fp32 grid by the drop's high bits and "
                          "the sticky compare (estimate; with the whole shift in one section, "
                          "pposition -> palign was the critical path: 5 cells, 1.29 ns logic + "
                          "3.71 ns routing)"),
    "palign": Estimate(2.5, "the shift by the drop's low bits, 0..7 places (estimate)"),
    "pround": Estimate(3.5, "the increment of f(P * s), its overflow beside it (estimate)"),
    "bnorm": Estimate(3.5, "f(P * s)'s fields and the leading-zero count of its 24-bit "
                      "significand (a subnormal f(P * s)); with the shift in one section it "
                      "was the unit's critical path, 7.9-8.6 ns over 16-19 cells (3 seeds)"),
    "block_hi": Estimate(2.5, "the normalizing shift of f(P * s) by the count's high bits "
                         "(0, 8 or 16 places) and the block's binade beside it (estimate; with "
                         "the whole shift in block, bnorm -> block was a worst path: 5 cells, "
                         "1.3 ns logic + 3.9 ns routing)"),
}

#: The low bits of each shift amount by which a shift's second section shifts, the first by
#: the others: each lane's onto the output grid (``align_hi``, ``align``;
#: :func:`hw.dequantizer.output_lanes`' ``shift_low_bits``), f(P * s)'s normalization
#: (``pnorm_hi``, ``pnorm``) and its shift onto the fp32 grid (``palign_hi``, ``palign``).
SHIFT_LOW_BITS = 3

#: Registers of f(P * s)'s shift amounts, the leading-zero count at ``pcount`` and the drop at
#: ``pposition``, each driving a part of the 28-bit product's shifter: from one register
#: each was a worst path (``pcount`` -> ``pnorm`` 5.1 ns, ``pposition`` -> ``palign`` 5.3 ns,
#: 3.8-4.2 ns of routing, seeds 1-3).
TENSOR_COPIES = 2


def signed_wider(v):
    """``v`` (unsigned) as a signed value one bit wider."""
    v = Value.cast(v)
    return Cat(v, Const(0, 1)).as_signed()


def ue4m3_fields(m, scale, name):
    """The scale byte's significand (4 bits, not normalized for a subnormal), the exponent of
    its last bit (signed, -9..5) and NaN (0x7F, or bit 7 set)."""
    scale = Value.cast(scale)
    e, normal = scale[3:7], scale[3:7].any()
    return wire(m, {"sig": Cat(scale[:3], normal),
                    "lsb": signed_wider(Mux(normal, e, 1)) - 10,
                    "nan": (scale[:7] == _UE4M3_NAN) | scale[7]}, name)


def tensor_scale_product(scope, payload):
    """Sections ``scale`` to ``pround``: ``f(P * s)``, P the payload's ``tensor_scale``.

    Returns the view after ``pround``: ``codes``, ``code`` (the fp32 magnitude code of
    ``f(P * s)``, valid unless a flag is set), ``zero``, ``nan``, ``inf`` and ``neg`` (P's
    sign)."""
    m = scope.module
    s = ue4m3_fields(m, payload.scale, scope.name("s"))
    p = Value.cast(payload.tensor_scale)
    pf, pe = p[:23], p[23:31]
    p_normal = pe.any()
    psig = Cat(pf, p_normal)
    # the exact product of the significands: four partial products, two adds side by side
    # here, the third in pproduct
    pp = [Mux(s.sig[j], psig << j, 0) for j in range(_S_BITS)]
    special = pe.all()
    p_nan, p_inf = special & pf.any(), special & ~pf.any()
    s_zero = ~s.sig.any()
    # q's trailing zeros are its factors' (their sum): the sticky bit of f(P * s)'s alignment
    blk = scope.cross({"codes": payload.codes, "lo": pp[0] + pp[1], "hi": pp[2] + pp[3],
                       "tz_p": trailing_zeros(m, psig, name=scope.name("p_tz")),
                       "tz_s": trailing_zeros(m, s.sig, name=scope.name("s_tz")),
                       "lsb": signed_wider(Mux(p_normal, pe, 1)) - (_FP32.bias + _FP32.mbits)
                       + s.lsb,
                       "nan": s.nan | p_nan | (p_inf & s_zero), "inf": p_inf,
                       "neg": p[31]}, "scale")
    flags = {"codes": blk.codes, "lsb": blk.lsb, "nan": blk.nan, "inf": blk.inf,
             "neg": blk.neg}
    blk = scope.cross({**flags, "q": (blk.lo + blk.hi)[:_P_BITS + _S_BITS],
                       "tz": blk.tz_p + blk.tz_s}, "pproduct")

    # -- pcount, pnorm: normalize the product, its binade above fp32's lowest normal one ---
    width = _P_BITS + _S_BITS
    grid = Grid(sig_width=width, emin=_FP32_EMIN, mbits=_FP32.mbits,
                top_min=(_FP32_EMIN - _FP32.mbits) - 9)
    # the binade above fp32's lowest normal one is top - lz; its negation ``below``, from
    # which grid.position forms a subnormal f(P * s)'s shift ``below + drop_normal``, clamped
    # where ``below > drop_max - drop_normal``: the constants go into top here (beside the
    # count), so that each is one carry chain from lz in pnorm_hi and pposition two selects
    top = blk.lsb + (width - 1 - _FP32_EMIN)
    flags = {"codes": blk.codes, "top": top, "base": top - grid.drop_normal,
             "lim": top + (grid.drop_max - grid.drop_normal + 1), "tz": blk.tz,
             "nan": blk.nan, "inf": blk.inf, "neg": blk.neg}
    lz = leading_zeros(m, blk.q, name=scope.name("p_lz"))
    blk = scope.cross({**flags, "q": blk.q, "lz": lz}, "pcount")
    lzs = [blk.lz, *scope.replicate(lz, "pcount", TENSOR_COPIES - 1)]
    lz, low = blk.lz, SHIFT_LOW_BITS
    flags = {"codes": blk.codes, "tz": blk.tz + lz, "above": blk.top - lz,
             "clamp": ~(lz - blk.lim)[-1], "biased": lz - blk.base, "zero": ~blk.q.any(),
             "nan": blk.nan, "inf": blk.inf, "neg": blk.neg}
    # the shift by the count's high bits, then by its low ones
    blk = scope.cross({**flags, "sig": shift_left_parts(blk.q, [Cat(Const(0, low), c[low:])
                                                           for c in lzs]),
                       "fine": lz[:low]}, "pnorm_hi")
    fines = [blk.fine, *scope.replicate(lz[:low], "pnorm_hi", TENSOR_COPIES - 1)]
    flags = {f: getattr(blk, f) for f in flags}
    blk = scope.cross({**flags, "sig": shift_left_parts(blk.sig, fines)}, "pnorm")

    # -- pposition, palign, pround: f(P * s) on the fp32 grid (subnormals included) --------
    flags = {"codes": blk.codes, "zero": blk.zero, "nan": blk.nan, "inf": blk.inf,
             "neg": blk.neg}
    under = blk.above[-1]  # a subnormal f(P * s)
    drop = Mux(under, Mux(blk.clamp, grid.drop_max, blk.biased), grid.drop_normal)
    position = wire(m, {"drop": drop.as_unsigned()[:bits_for(grid.drop_reach)],
                        "binade": Mux(under, 0, blk.above).as_unsigned()[:len(blk.above) - 1]},
                    scope.name("p_rnd_position"))
    blk = scope.cross({**flags, "sig": blk.sig, "tz": blk.tz, "position": position},
                      "pposition")
    drops = [blk.position.drop, *scope.replicate(position.drop, "pposition",
                                                 TENSOR_COPIES - 1)]
    flags = {f: getattr(blk, f) for f in flags}
    high = align_high(m, grid, blk, drops, SHIFT_LOW_BITS, scope.name("p_rnd"))
    blk = scope.cross({**flags, "part": high}, "palign_hi")
    fines = [blk.part.fine, *scope.replicate(high.fine, "palign_hi", TENSOR_COPIES - 1)]
    flags = {f: getattr(blk, f) for f in flags}
    blk = scope.cross({**flags, "grid": align_low(m, grid, blk.part, fines,
                                                  scope.name("p_rnd"))}, "palign")
    flags = {f: getattr(blk, f) for f in flags}
    ebits = _FP32.bits - 1 - _FP32.mbits
    overflow = overflows(m, blk.grid.binade, ebits=ebits, name=scope.name("p_overflow"))
    code = round_aligned(m, blk.grid, mbits=_FP32.mbits, rounding=RNE,
                         name=scope.name("p_rnd"))
    return scope.cross({**flags, "inf": blk.inf | (overflow & ~blk.zero),
                        "code": code[:_FP32.bits - 1]}, "pround")
