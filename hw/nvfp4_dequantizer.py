"""NVFP4 dequantizer: one UE4M3 block scale, k e2m1 codes and, two level, the fp32 tensor
scale P -> k fp32, bf16 or fp16 values.

Implements the dequantization of docs/numerics.md section 7 (NVFP4) bit for bit
(``golden.dequantize`` of an nvfp4 ``MXArray`` is the reference): ``e2m1(code) * f(P * s)``
with one RNE rounding into the output format, ``f(P * s)`` the fp32 RNE product of P and the
scale's value (single level: ``s`` itself, exact).  Architecture: docs/nvfp4.md.

The datapath: (two level) the 24 x 4-bit product of P's and the scale's significands,
normalized and rounded onto the fp32 grid by :class:`hw.rounding.Grid` and
:func:`hw.rounding.round_aligned` (subnormal and zero products, overflow to Inf); then the
block's significand S and 3 * S, once per block (an e2m1 value is ``1 * 2^b`` or
``1.5 * 2^b``, so every lane's product is S or 3 * S shifted: no multiplier per lane); then
per lane :func:`hw.elements.decode_element` and :func:`hw.elements.element_binade` and the
MX dequantizer's output sections (:func:`hw.dequantizer.output_lanes`).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Value, unsigned
from amaranth.lib import data

import golden

from .arith import leading_zeros, shift_left_parts, wire
from .dequantizer import OUTPUTS, align_parts, output_lanes
from .dot.sections import Estimate
from .elements import decode_element, element_binade
from .params import check_block_size, check_choice
from .pipeline import registered_boundaries
from .registry import UnitSpec
from .rounding import RNE, Grid, overflows, round_aligned
from .unit import Unit

__all__ = ["NVFP4Dequantizer", "nvfp4_dequantize_step", "nvfp4_layout", "nvfp4_sections",
           "TENSOR_ESTIMATES", "BLOCK_ESTIMATES", "LANE_ESTIMATES", "LEVELS", "cli_units",
           "lane_grid"]

#: The element format: fp4_e2m1.
FMT = golden.element_format("fp4_e2m1")
#: Single level (no tensor scale) and two level (P a field of the input payload).
LEVELS = (1, 2)
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
    "pnorm": Estimate(3.5, "the normalizing shift and the product's binade (estimate)"),
    "pposition": Estimate(3.0, "the product's fp32 binade and shift amount (estimate)"),
    "palign": Estimate(3.5, "the shift onto the fp32 grid and its sticky OR (estimate)"),
    "pround": Estimate(3.5, "the increment of f(P * s), its overflow beside it (estimate)"),
    "bnorm": Estimate(3.5, "f(P * s)'s fields and the leading-zero count of its 24-bit "
                      "significand (a subnormal f(P * s)); with the shift in one section it "
                      "was the unit's critical path, 7.9-8.6 ns over 16-19 cells (3 seeds)"),
}
#: The block's sections, both levels: its significand S (normalized) and 3 * S.
BLOCK_ESTIMATES = {
    "block": Estimate(3.5, "the normalizing shift of f(P * s) (single level: the scale's "
                      "fields, its 4-bit leading-zero count and shift) and the block's binade "
                      "(estimate)"),
    "triple": Estimate(2.5, "3 * S (one carry chain of 26 bits) and the trailing zeros of S "
                       "(estimate; with the normalization in one section it was the unit's "
                       "critical path, 5.8-6.2 ns over 8-10 cells, 3 seeds)"),
    "tnorm": Estimate(1.5, "3 * S's one-bit normalization: a select on the registered carry "
                      "(estimate)"),
}
#: The lanes' sections: decode, then :func:`hw.dequantizer.output_lanes`' four.
LANE_ESTIMATES = {
    "decode": Estimate(2.5, "the e2m1 fields and binade (tables) and the S / 3 * S select "
                       "(estimate)"),
    "position": Estimate(3.0, "the lane's binade added to the block's, both signs; shift "
                         "amount as a select, the grid's constant offset in the block's "
                         "below (as the MX dequantizer's position)"),
    "align": Estimate(3.5, "the shift and its sticky OR (as the MX dequantizer's align)"),
    "round": Estimate(3.5, "the increment and the code, overflow beside them (as the MX "
                      "dequantizer's round)"),
    "output": Estimate(0.5, "Inf, zero and NaN selects on registered flags"),
}

#: Registers of each lane's shift amount at the ``position`` boundary, each driving a part of
#: the lane's 26-bit shifter (:func:`hw.dequantizer.output_lanes`): in one register, its bits'
#: fan-out to the shifter is the unit's critical path (``position`` -> ``align``, 5 cells,
#: 4.2-4.4 ns of routing, 3 seeds); in two and in three, still a worst path (5.1-5.3 ns, 3.8-4.0
#: ns of routing, 3 seeds).
POSITION_COPIES = 3

#: Registers of f(P * s)'s shift amounts, the leading-zero count at ``pcount`` and the drop at
#: ``pposition``, each driving a part of the 28-bit product's shifter: from one register
#: each was a worst path (``pcount`` -> ``pnorm`` 5.1 ns, ``pposition`` -> ``palign`` 5.3 ns,
#: 3.8-4.2 ns of routing, seeds 1-3).
TENSOR_COPIES = 2


def nvfp4_sections(levels: int) -> dict[str, float]:
    """The sections (name -> estimated delay, ns, in datapath order) of a ``levels`` build."""
    estimates = {**(TENSOR_ESTIMATES if levels == 2 else {}), **BLOCK_ESTIMATES,
                 **LANE_ESTIMATES}
    return {name: e.ns for name, e in estimates.items()}


def nvfp4_layout(block_size: int, levels: int) -> data.StructLayout:
    """The input payload: ``scale`` (UE4M3 byte), ``codes`` (``block_size`` e2m1 codes,
    element i at bits ``[4*i, 4*(i+1))``) and, two level, ``tensor_scale`` (P's fp32 bits)."""
    fields = {"scale": unsigned(8), "codes": data.ArrayLayout(unsigned(FMT.bits), block_size)}
    if levels == 2:
        fields["tensor_scale"] = unsigned(32)
    return data.StructLayout(fields)


class NVFP4Dequantizer(Unit):
    """Dequantize one NVFP4 block per clock.

    Parameters
    ----------
    block_size : int
        k, a power of two in 2..64 (16 is NVFP4's; golden takes any).
    output_format : {"fp32", "bf16", "fp16"}
        One RNE rounding of ``e2m1(code) * f(P * s)``, IEEE subnormals, overflow to +-Inf.
    levels : {1, 2}
        1: single level, ``e2m1(code) * s``; 2: two level, the fp32 tensor scale P is the
        input field ``tensor_scale``, given with every block (it changes per tensor).
    stages : int, optional
        Pipeline registers, ``1..len(sections)`` (8 single level, 16 two level); default
        :func:`hw.pipeline.default_stages` of the estimates (:data:`TENSOR_ESTIMATES`,
        :data:`BLOCK_ESTIMATES`, :data:`LANE_ESTIMATES`).

    Members
    -------
    i : In(stream.Signature(StructLayout))
        Fields ``scale`` (UE4M3: bit 7 clear; a byte with bit 7 set is not UE4M3 and reads
        as NaN, as golden's table), ``codes`` and, two level, ``tensor_scale`` (P's fp32
        bits; golden's MXArray takes a positive finite P, and any other P computes IEEE
        arithmetic: NaN in NaN out, ``0 * Inf`` NaN, the sign of P in every result).
    o : Out(stream.Signature(StructLayout))
        Field ``data``: k values, element i at bits ``[w*i, w*(i+1))``.  Scale 0x7F gives the
        canonical quiet NaN (0x7FC00000, 0x7FC0, 0x7E00); an overflowing ``f(P * s)`` is Inf,
        so its zero codes give NaN and the others +-Inf.

    Latency is ``stages`` cycles, one block per clock; flow control is
    :class:`hw.pipeline.Pipeline`'s (``i.ready`` a register, a skid register at the output).
    Two level, k = 16, fp32, default 16 stages: 5,548 LUT4, 5,620 FF, 196.0 MHz on ECP5
    (188.7-198.1, 3 seeds; docs/performance.md).
    """

    def __init__(self, block_size=16, output_format="fp32", levels=2, *, stages=None):
        self.block_size = check_block_size(block_size)
        self.output_format = golden.float_format(check_choice("output format", output_format,
                                                              OUTPUTS))
        if levels not in LEVELS or isinstance(levels, bool):
            raise ValueError(f"levels must be 1 or 2, got {levels!r}")
        self.levels = levels
        self._sections = nvfp4_sections(levels)
        self._choose_stages(stages, self._sections)
        super().__init__(nvfp4_layout(self.block_size, levels), data.StructLayout({
            "data": data.ArrayLayout(self.output_format.bits, self.block_size),
        }))

    @property
    def sections(self) -> dict[str, float]:
        """Section name -> estimated delay (ns), in datapath order."""
        return dict(self._sections)

    @property
    def module_name(self) -> str:
        return (f"nvfp4_dequantizer_l{self.levels}_k{self.block_size}"
                f"_{self.output_format.name}_s{self.stages}")

    @property
    def parameters(self) -> dict:
        return {"format": FMT.name, "scale_format": "ue4m3", "block_size": self.block_size,
                "output": self.output_format.name, "levels": self.levels,
                "tensor_scale": "tensor_scale" if self.levels == 2 else None,
                "stages": self.stages,
                "registered_boundaries": list(registered_boundaries(self._sections,
                                                                    self.stages))}

    def elaborate(self, platform):
        m = Module()
        pipe = self.pipeline(m, "d")
        res = nvfp4_dequantize_step(pipe.scope(), self.output_format, self.block_size,
                                    self.levels, self.i.payload)
        m.d.comb += self.o.payload.eq(res)
        pipe.connect(i_valid=self.i.valid, i_ready=self.i.ready,
                     o_valid=self.o.valid, o_ready=self.o.ready)
        return m


def _signed(v):
    """``v`` (unsigned) as a signed value one bit wider."""
    v = Value.cast(v)
    return Cat(v, Const(0, 1)).as_signed()


def _ue4m3(m, scale, name):
    """The scale byte's significand (4 bits, not normalized for a subnormal), the exponent of
    its last bit (signed, -9..5) and NaN (0x7F, or bit 7 set)."""
    scale = Value.cast(scale)
    e, normal = scale[3:7], scale[3:7].any()
    return wire(m, {"sig": Cat(scale[:3], normal),
                    "lsb": _signed(Mux(normal, e, 1)) - 10,
                    "nan": (scale[:7] == _UE4M3_NAN) | scale[7]}, name)


def tensor_scale_product(scope, payload):
    """Sections ``scale`` to ``pround``: ``f(P * s)``, P the payload's ``tensor_scale``.

    Returns the view after ``pround``: ``codes``, ``code`` (the fp32 magnitude code of
    ``f(P * s)``, valid unless a flag is set), ``zero``, ``nan``, ``inf`` and ``neg`` (P's
    sign)."""
    m = scope.module
    s = _ue4m3(m, payload.scale, scope.name("s"))
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
                       "tz_p": leading_zeros(m, psig[::-1], name=scope.name("p_tz")),
                       "tz_s": leading_zeros(m, s.sig[::-1], name=scope.name("s_tz")),
                       "lsb": _signed(Mux(p_normal, pe, 1)) - (_FP32.bias + _FP32.mbits)
                       + s.lsb,
                       "nan": s.nan | p_nan | (p_inf & s_zero), "inf": p_inf,
                       "neg": p[31]}, "scale")
    flags = {"codes": blk.codes, "lsb": blk.lsb, "nan": blk.nan, "inf": blk.inf,
             "neg": blk.neg}
    blk = scope.cross({**flags, "q": (blk.lo + blk.hi)[:_P_BITS + _S_BITS],
                       "tz": blk.tz_p + blk.tz_s}, "pproduct")

    # -- pcount, pnorm: normalize the product, its binade above fp32's lowest normal one ---
    width = _P_BITS + _S_BITS
    flags = {"codes": blk.codes, "lsb": blk.lsb, "tz": blk.tz, "nan": blk.nan,
             "inf": blk.inf, "neg": blk.neg}
    lz = leading_zeros(m, blk.q, name=scope.name("p_lz"))
    blk = scope.cross({**flags, "q": blk.q, "lz": lz}, "pcount")
    lzs = [blk.lz, *scope.replicate(lz, "pcount", TENSOR_COPIES - 1)]
    lz = blk.lz
    above = blk.lsb + (width - 1 - _FP32_EMIN) - lz
    blk = scope.cross({"codes": blk.codes, "sig": shift_left_parts(blk.q, lzs), "tz": blk.tz + lz,
                       "above": above, "below": lz - (width - 1 - _FP32_EMIN) - blk.lsb,
                       "zero": ~blk.q.any(), "nan": blk.nan, "inf": blk.inf, "neg": blk.neg},
                      "pnorm")

    # -- pposition, palign, pround: f(P * s) on the fp32 grid (subnormals included) --------
    grid = Grid(sig_width=width, emin=_FP32_EMIN, mbits=_FP32.mbits,
                top_min=(_FP32_EMIN - _FP32.mbits) - 9)
    flags = {"codes": blk.codes, "zero": blk.zero, "nan": blk.nan, "inf": blk.inf,
             "neg": blk.neg}
    position = grid.position(m, blk.above, blk.below, name=scope.name("p_rnd"))
    blk = scope.cross({**flags, "sig": blk.sig, "tz": blk.tz, "position": position},
                      "pposition")
    drops = [blk.position.drop, *scope.replicate(position.drop, "pposition",
                                                 TENSOR_COPIES - 1)]
    flags = {f: getattr(blk, f) for f in flags}
    blk = scope.cross({**flags, "grid": align_parts(m, grid, blk, drops, scope.name("p_rnd"),
                                                    trailing_zeros=True)}, "palign")
    flags = {f: getattr(blk, f) for f in flags}
    ebits = _FP32.bits - 1 - _FP32.mbits
    overflow = overflows(m, blk.grid.binade, ebits=ebits, name=scope.name("p_overflow"))
    code = round_aligned(m, blk.grid, mbits=_FP32.mbits, rounding=RNE,
                         name=scope.name("p_rnd"))
    return scope.cross({**flags, "inf": blk.inf | (overflow & ~blk.zero),
                        "code": code[:_FP32.bits - 1]}, "pround")


def nvfp4_dequantize_step(scope, output_format, block_size: int, levels: int, payload):
    """Place the NVFP4 dequantizer's sections through ``scope`` (a
    :class:`hw.pipeline.PipelineScope`): ``scale`` to ``pround`` and ``bnorm`` (two level
    only), ``block``, ``triple``, ``tnorm``, ``decode`` and :func:`hw.dequantizer.output_lanes`'
    ``position`` to ``output``.

    ``payload`` is the input block (:func:`nvfp4_layout`); returns the view after ``output``:
    ``data``, the values in ``output_format``.
    """
    m, k = scope.module, block_size
    emin_out = 1 - output_format.bias
    grid = lane_grid(output_format, levels)
    # the lanes' grid's constant shift (hw.rounding.Grid.position) is in the block's below
    drop_normal = grid.drop_normal

    # -- block: the block's value f(P * s) (single level: s) as a normalized significand S
    # and its binade (top - emin_out, top = lsb + w - 1 - lz) above the output's lowest
    # normal binade, in both signs (below plus drop_normal): the part without lz is formed
    # before (two level: in bnorm, beside the count), so only one add of lz lies beside the
    # shift ----------------------------------------------------------------------------------
    if levels == 2:
        blk = tensor_scale_product(scope, payload)
        fe, ff = blk.code[_FP32.mbits:], blk.code[:_FP32.mbits]
        sig = Cat(ff, fe.any())
        w = len(sig)
        lsb = _signed(Mux(fe.any(), fe, 1)) - (_FP32.bias + _FP32.mbits)
        flags = {"zero": blk.zero | ~sig.any(), "nan": blk.nan, "inf": blk.inf,
                 "neg": blk.neg}
        blk = scope.cross({**flags, "codes": blk.codes, "sig": sig,
                           "above0": lsb + (w - 1 - emin_out),
                           "below0": (emin_out - (w - 1) + drop_normal) - lsb,
                           "lz": leading_zeros(m, sig, name=scope.name("b_lz"))}, "bnorm")
        flags = {f: getattr(blk, f) for f in flags}
        sig, above0, below0, lz = blk.sig, blk.above0, blk.below0, blk.lz
    else:
        blk = payload
        s = _ue4m3(m, payload.scale, scope.name("s"))
        sig = s.sig
        w = len(sig)
        above0 = s.lsb + (w - 1 - emin_out)
        below0 = (emin_out - (w - 1) + drop_normal) - s.lsb
        flags = {"zero": ~sig.any(), "nan": s.nan, "inf": Const(0, 1), "neg": Const(0, 1)}
        lz = leading_zeros(m, sig, name=scope.name("b_lz"))
    blk = scope.cross({**flags, "codes": blk.codes, "sig": (sig << lz)[:w],
                       "above": above0 - lz, "below": below0 + lz}, "block")

    # -- triple: 3 * S (its top bit is S's plus 1 or 2: the carry out says which) and the
    # trailing zeros of S and 3 * S (3 is odd: 3 * S has S's), from which every lane takes
    # its sticky bit ------------------------------------------------------------------------
    flags = {f: getattr(blk, f) for f in ("zero", "nan", "inf", "neg")}
    tz = leading_zeros(m, blk.sig[::-1], name=scope.name("b_tz"))
    blk = scope.cross({**flags, "codes": blk.codes, "sig": blk.sig,
                       "t": (blk.sig + (blk.sig << 1))[:w + 2], "tz": tz,
                       "above": blk.above, "below": blk.below}, "triple")

    # -- tnorm: 3 * S normalized, a select on the registered carry, and its binade ----------
    flags = {f: getattr(blk, f) for f in flags}
    t, carry = blk.t, blk.t[w + 1]
    blk = scope.cross({**flags, "codes": blk.codes, "s1": Cat(Const(0, 2), blk.sig),
                       "s3": Mux(carry, t, t << 1)[:w + 2],
                       "tz1": blk.tz + 2, "tz3": blk.tz + ~carry,
                       "above1": blk.above, "below1": blk.below,
                       # both candidates beside each other, the carry selects
                       "above3": Mux(carry, blk.above + 1, blk.above),
                       "below3": Mux(carry, blk.below - 1, blk.below)}, "tnorm")

    # -- decode: per lane, e2m1 value = 2^b (S) or 1.5 * 2^b (3 * S, one binade down) ------
    lanes = []
    for i in range(k):
        el = decode_element(m, blk.codes[i], FMT, scope.name(f"lane{i}"))
        three = el.sig.all()  # normal with the mantissa bit set: 1.5 * 2^b
        lanes.append({"neg": el.neg ^ blk.neg, "zero": el.zero | blk.zero,
                      "nan": blk.nan | (blk.inf & el.zero), "inf": blk.inf,
                      "sig": Mux(three, blk.s3, blk.s1),
                      "tz": Mux(three, blk.tz3, blk.tz1),
                      "above": Mux(three, blk.above3, blk.above1),
                      "below": Mux(three, blk.below3, blk.below1),
                      "binade": element_binade(m, el.mag, FMT, scope.name(f"lane{i}_binade"))})
    lanes = scope.cross(lanes, "decode")

    placed = [{"neg": ln.neg, "zero": ln.zero, "nan": ln.nan, "inf": ln.inf, "sig": ln.sig,
               "tz": ln.tz, "above": ln.above + ln.binade, "below": ln.below - ln.binade}
              for ln in lanes]
    return output_lanes(scope, grid, output_format, placed, trailing_zeros=True,
                        position_copies=POSITION_COPIES, below_biased=True)


def lane_grid(output_format, levels: int) -> Grid:
    """The lanes' grid (:class:`hw.rounding.Grid`): ``output_format``'s, for the block's
    normalized significand S (fp32's 24 bits two level, the scale's 4 single level) with two
    bits more (3 * S), a lane's top no lower than the block's lowest (two level: f(P * s)'s
    smallest subnormal; single level: scale 0x01's 2^-9) plus e2m1's last place."""
    w = _FP32.mbits + 1 if levels == 2 else _S_BITS
    top_min = _FP32_EMIN - _FP32.mbits if levels == 2 else -9
    return Grid(sig_width=w + 2, emin=1 - output_format.bias, mbits=output_format.mbits,
                top_min=top_min + FMT.lsb_exp)


def _add_arguments(p):
    p.add_argument("--block-size", type=int, default=16, help="k, a power of two 2..64")
    p.add_argument("--output-format", dest="output_format", default="fp32",
                   help=f"output format: {', '.join(OUTPUTS)}")
    p.add_argument("--levels", type=int, choices=LEVELS, default=2,
                   help="1: single level; 2: two level, the fp32 tensor scale P is the input "
                        "field tensor_scale")
    p.add_argument("--stages", type=int, default=None,
                   help="pipeline registers = latency in cycles (default: the estimates')")


def _build(a):
    return NVFP4Dequantizer(a.block_size, a.output_format, a.levels, stages=a.stages)


def cli_units():
    defaults = [["--levels", "2"], ["--levels", "1"]]
    return [UnitSpec("nvfp4-dequantizer", "NVFP4: UE4M3 scale + k e2m1 codes (+ fp32 tensor "
                     "scale P) -> k fp32/bf16/fp16 values", _add_arguments, _build, defaults)]
