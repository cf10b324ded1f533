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

from amaranth.hdl import Cat, Const, Module, Mux, unsigned
from amaranth.lib import data

import golden

from .arith import leading_zeros, trailing_zeros
from .dequantizer import OUTPUTS, output_lanes
from .dot.sections import Estimate
from .elements import decode_element, element_binade
from .nvfp4_tensor_scale import (
    SHIFT_LOW_BITS,
    TENSOR_ESTIMATES,
    signed_wider,
    tensor_scale_product,
    ue4m3_fields,
)
from .params import check_block_size, check_choice
from .pipeline import registered_boundaries
from .registry import UnitSpec
from .rounding import Grid
from .unit import Unit

__all__ = ["NVFP4Dequantizer", "nvfp4_dequantize_step", "nvfp4_layout", "nvfp4_sections",
           "TENSOR_ESTIMATES", "BLOCK_ESTIMATES", "LANE_ESTIMATES", "LEVELS", "cli_units",
           "lane_grid"]

#: The element format: fp4_e2m1.
FMT = golden.element_format("fp4_e2m1")
#: Single level (no tensor scale) and two level (P a field of the input payload).
LEVELS = (1, 2)
_FP32 = golden.float_format("fp32")
_FP32_EMIN = 1 - _FP32.bias
_S_BITS = 4  # UE4M3's significand, hidden bit included

#: The block's sections, both levels: its significand S (normalized) and 3 * S.
BLOCK_ESTIMATES = {
    "block": Estimate(3.5, "the normalizing shift of f(P * s) by the count's low bits "
                      "(single level: the scale's fields, its 4-bit leading-zero count and "
                      "shift, and the block's binade) (estimate)"),
    "triple": Estimate(2.5, "3 * S (one carry chain of 26 bits) and the trailing zeros of S "
                       "(estimate; with the normalization in one section it was the unit's "
                       "critical path, 5.8-6.2 ns over 8-10 cells, 3 seeds)"),
    "tnorm": Estimate(1.5, "3 * S's one-bit normalization, a select on the registered carry, "
                      "and beside it each lane's e2m1 fields and binade (tables of the code) "
                      "(estimate)"),
}
#: The lanes' sections: decode, then :func:`hw.dequantizer.output_lanes`' four.
LANE_ESTIMATES = {
    "decode": Estimate(2.5, "the S / 3 * S selects on a registered flag per lane (estimate; "
                       "with the e2m1 tables here, tnorm -> decode was the unit's critical "
                       "path: 3 cells, 1.22 ns logic + 4.2-4.3 ns routing, 2 of 3 seeds)"),
    "position": Estimate(3.0, "the lane's binade added to the block's, both signs; shift "
                         "amount as a select, the grid's constant offset in the block's "
                         "below (as the MX dequantizer's position)"),
    "align_hi": Estimate(2.5, "the shift by the amount's high bits (0, 8, 16 or 24 places) "
                         "and the sticky bit, a comparison of the trailing zeros beside it "
                         "(estimate; with the whole shift in one section, position -> align "
                         "was the unit's critical path: 5 cells, 1.3 ns logic + 3.8-4.0 ns "
                         "routing, 3 seeds)"),
    "align": Estimate(2.5, "the shift by the amount's low bits, 0..7 places (estimate)"),
    "round": Estimate(3.5, "the increment and the code, overflow beside them (as the MX "
                      "dequantizer's round)"),
    "output": Estimate(0.5, "Inf, zero and NaN selects on registered flags"),
}

#: Registers of each lane's shift amounts, the high bits at the ``position`` boundary and the
#: low ones at ``align_hi``, each driving a part of the lane's shifter
#: (:func:`hw.dequantizer.output_lanes`).  With the whole shift in one section: in one
#: register, its bits' fan-out to the shifter was the unit's critical path (``position`` ->
#: ``align``, 5 cells, 4.2-4.4 ns of routing, 3 seeds); in two and in three, still a worst
#: path (5.1-5.3 ns, 3.8-4.0 ns of routing, 3 seeds).
POSITION_COPIES = 3

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
        Pipeline registers, ``1..len(sections)`` (9 single level, 20 two level); default
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
    Two level, k = 16, fp32, default 20 stages: 4,630 LUT4, 6,741 FF, 205.0 MHz on ECP5
    (201.6-206.5, 3 seeds; docs/performance.md).
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
        normal = fe.any()
        sig = Cat(ff, normal)
        w = len(sig)
        # lsb = max(fe, 1) - (bias + mbits): both binades as adds straight from the
        # registered field, the select on normal after them (not an OR before a carry chain)
        up = w - 1 - emin_out - (_FP32.bias + _FP32.mbits)
        down = emin_out - (w - 1) + drop_normal + (_FP32.bias + _FP32.mbits)
        flags = {"zero": blk.zero | ~sig.any(), "nan": blk.nan, "inf": blk.inf,
                 "neg": blk.neg}
        blk = scope.cross({**flags, "codes": blk.codes, "sig": sig,
                           "above0": Mux(normal, signed_wider(fe) + up, 1 + up),
                           "below0": Mux(normal, down - signed_wider(fe), down - 1),
                           "lz": leading_zeros(m, sig, name=scope.name("b_lz"))}, "bnorm")
        flags = {f: getattr(blk, f) for f in flags}
        # block_hi: the shift by the count's high bits and the binade; block: by its low bits
        low = SHIFT_LOW_BITS
        blk = scope.cross({**flags, "codes": blk.codes,
                           "sig": (blk.sig << Cat(Const(0, low), blk.lz[low:]))[:w],
                           "fine": blk.lz[:low], "above": blk.above0 - blk.lz,
                           "below": blk.below0 + blk.lz}, "block_hi")
        flags = {f: getattr(blk, f) for f in flags}
        sig, lz, above, below = blk.sig, blk.fine, blk.above, blk.below
    else:
        blk = payload
        s = ue4m3_fields(m, payload.scale, scope.name("s"))
        sig = s.sig
        w = len(sig)
        above0 = s.lsb + (w - 1 - emin_out)
        below0 = (emin_out - (w - 1) + drop_normal) - s.lsb
        flags = {"zero": ~sig.any(), "nan": s.nan, "inf": Const(0, 1), "neg": Const(0, 1)}
        lz = leading_zeros(m, sig, name=scope.name("b_lz"))
        above, below = above0 - lz, below0 + lz
    blk = scope.cross({**flags, "codes": blk.codes, "sig": (sig << lz)[:w],
                       "above": above, "below": below}, "block")

    # -- triple: 3 * S (its top bit is S's plus 1 or 2: the carry out says which) and the
    # trailing zeros of S and 3 * S (3 is odd: 3 * S has S's), from which every lane takes
    # its sticky bit ------------------------------------------------------------------------
    flags = {f: getattr(blk, f) for f in ("zero", "nan", "inf", "neg")}
    tz = trailing_zeros(m, blk.sig, name=scope.name("b_tz"))
    blk = scope.cross({**flags, "codes": blk.codes, "sig": blk.sig,
                       "t": (blk.sig + (blk.sig << 1))[:w + 2], "tz": tz,
                       "above": blk.above, "below": blk.below}, "triple")

    # -- tnorm: 3 * S normalized, a select on the registered carry, and its binade; beside
    # it each lane's e2m1 fields (tables of the code), so that decode's selects of S or 3 * S
    # hang off a register per lane ---------------------------------------------------------
    flags = {f: getattr(blk, f) for f in flags}
    t, carry = blk.t, blk.t[w + 1]
    codes = []
    for i in range(k):
        el = decode_element(m, blk.codes[i], FMT, scope.name(f"lane{i}"))
        codes.append({"neg": el.neg, "zero": el.zero,
                      "three": el.sig.all(),  # normal with the mantissa bit set: 1.5 * 2^b
                      "binade": element_binade(m, el.mag, FMT, scope.name(f"lane{i}_binade"))})
    blk = scope.cross({**flags, "codes": codes, "s1": Cat(Const(0, 2), blk.sig),
                       "s3": Mux(carry, t, t << 1)[:w + 2],
                       "tz1": blk.tz + 2, "tz3": blk.tz + ~carry,
                       "above1": blk.above, "below1": blk.below,
                       # both candidates beside each other, the carry selects
                       "above3": Mux(carry, blk.above + 1, blk.above),
                       "below3": Mux(carry, blk.below - 1, blk.below)}, "tnorm")

    # -- decode: per lane, e2m1 value = 2^b (S) or 1.5 * 2^b (3 * S, one binade down) ------
    lanes = []
    for i in range(k):
        el = blk.codes[i]
        lanes.append({"neg": el.neg ^ blk.neg, "zero": el.zero | blk.zero,
                      "nan": blk.nan | (blk.inf & el.zero), "inf": blk.inf,
                      "sig": Mux(el.three, blk.s3, blk.s1),
                      "tz": Mux(el.three, blk.tz3, blk.tz1),
                      "above": Mux(el.three, blk.above3, blk.above1),
                      "below": Mux(el.three, blk.below3, blk.below1), "binade": el.binade})
    lanes = scope.cross(lanes, "decode")

    placed = [{"neg": ln.neg, "zero": ln.zero, "nan": ln.nan, "inf": ln.inf, "sig": ln.sig,
               "tz": ln.tz, "above": ln.above + ln.binade, "below": ln.below - ln.binade}
              for ln in lanes]
    return output_lanes(scope, grid, output_format, placed, trailing_zeros=True,
                        position_copies=POSITION_COPIES, below_biased=True,
                        shift_low_bits=SHIFT_LOW_BITS)


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
