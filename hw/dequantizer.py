"""MX dequantizer: one E8M0 scale and k element codes -> k fp32, bf16 or fp16 values.

Implements section 3 of the numerics contract bit for bit (``golden.dequantize`` is the
reference); NaN results are the canonical quiet NaN of the output format (0x7FC00000, 0x7FC0,
0x7E00).  Architecture and verification: ``docs/quantizer.md``.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

import golden
from golden.formats import SCALE_BIAS, SCALE_NAN

from .common import RNE, StreamPipeline, align_to_grid, leading_zeros, round_aligned, wire
from .quantizer import _check_block_size, _check_choice, _check_stages, registered_boundaries

__all__ = ["MXDequantizer", "DEQUANTIZER_BOUNDARIES", "cli_units"]

OUTPUTS = ("fp32", "bf16", "fp16")
#: Stage boundaries in datapath order, and the order in which ``stages`` registers fill them.
DEQUANTIZER_BOUNDARIES = ("input", "decode", "align", "output")
_FILL_ORDER = ("output", "decode", "align", "input")


class MXDequantizer(wiring.Component):
    """Dequantize one MX block per clock.

    Parameters
    ----------
    fmt : str or golden.ElementFormat
        Element format.
    block_size : int
        k, a power of two in 2..64.
    output_format : {"fp32", "bf16", "fp16"}
        fp32 is exact (overflow to +-Inf only from codes no fp32 quantizer writes); bf16 and
        fp16 round to nearest even, with IEEE subnormals and overflow to +-Inf.
    stages : int
        Pipeline registers, 1..4 (default 3); they fill the boundaries ``output``, ``decode``,
        ``align``, ``input`` in that order.  Sections: decode (fields, leading-zero count,
        the result's exponent), align (the shift onto the output grid, subnormal results
        included), round (increment, overflow, specials).

    Members
    -------
    i : In(stream.Signature(StructLayout))
        Payload fields ``scale`` (E8M0 code) and ``codes`` (k element codes).
    o : Out(stream.Signature(StructLayout))
        Payload field ``data``: k values, element i at bits ``[w*i, w*(i+1))``.  A scale of 255,
        an fp8_e4m3 NaN code or an fp8_e5m2 NaN code give the canonical quiet NaN.

    Latency is ``stages`` cycles, one block per clock; ``i.ready`` depends combinationally on
    ``o.ready``.
    """

    def __init__(self, fmt="fp8_e4m3", block_size=32, output_format="fp32", *, stages=3):
        self.fmt = golden.element_format(fmt)
        self.block_size = _check_block_size(block_size)
        _check_choice("output format", output_format, OUTPUTS)
        self.output_format = golden.float_format(output_format)
        self.stages = _check_stages(stages, len(DEQUANTIZER_BOUNDARIES))
        self.latency = self.stages
        k = self.block_size
        self.in_layout = data.StructLayout({
            "scale": unsigned(8),
            "codes": data.ArrayLayout(self.fmt.bits, k),
        })
        self.out_layout = data.StructLayout({
            "data": data.ArrayLayout(self.output_format.bits, k),
        })
        super().__init__({
            "i": In(stream.Signature(self.in_layout)),
            "o": Out(stream.Signature(self.out_layout)),
        })

    @property
    def module_name(self) -> str:
        return (f"mx_dequantizer_{self.fmt.name}_k{self.block_size}_{self.output_format.name}"
                f"_s{self.stages}")

    @property
    def parameters(self) -> dict:
        return {"format": self.fmt.name, "block_size": self.block_size,
                "output": self.output_format.name, "stages": self.stages,
                "registered_boundaries": [b for b, r in zip(
                    DEQUANTIZER_BOUNDARIES, self._registered(), strict=True) if r]}

    def _registered(self):
        return registered_boundaries(self.stages, DEQUANTIZER_BOUNDARIES, _FILL_ORDER)

    def elaborate(self, platform):
        m = Module()
        fmt, fo, k = self.fmt, self.output_format, self.block_size
        pipe = StreamPipeline(m, self._registered(), name="d")

        p = pipe.boundary(self.i.payload.as_value(), "input")
        payload = self.in_layout(p)
        scale = payload.scale

        # -- decode: sign, magnitude code, normalized significand and exponent ----------------
        lanes = []
        for i in range(k):
            c = payload.codes[i]
            neg = c[fmt.bits - 1]
            if fmt.twos_complement:  # |n|, 0..128 (code 0x80 is -2.0: magnitude 128)
                mag = wire(m, Mux(neg, -c, c)[:fmt.bits], f"lane{i}_mag")
            else:
                mag = c[:fmt.bits - 1]
            e, frac = mag[fmt.mbits:], mag[:fmt.mbits]
            sig = wire(m, Cat(frac, e != 0), f"lane{i}_sig")
            lz = leading_zeros(m, sig, name=f"lane{i}_lz")
            norm = (sig << lz)[:len(sig)]
            top = Mux(e == 0, 1, e) - fmt.bias - lz + (scale - SCALE_BIAS)
            nan = scale == SCALE_NAN
            for x in fmt.nan_codes:
                nan = nan | (mag == x)
            inf = 0
            for x in fmt.inf_codes:
                inf = inf | (mag == x)
            lanes.append({"neg": neg, "zero": mag == 0, "sig": norm, "top": top,
                          "nan": nan, "inf": inf})
        lanes = pipe.boundary(lanes, "decode")

        # -- align onto the output grid (a right shift only for subnormal results) -----------
        lanes = pipe.boundary([{**{k: v for k, v in ln.items() if k not in ("sig", "top")},
                                "grid": align_to_grid(m, ln["sig"], ln["top"], emin=1 - fo.bias,
                                                      mbits=fo.mbits, name=f"lane{i}_rnd")}
                               for i, ln in enumerate(lanes)], "align")

        # -- round to the output format (exact for fp32), overflow, specials -----------------
        inf_code, qnan = fo.inf_bits, fo.qnan_bits
        out = []
        for i, ln in enumerate(lanes):
            code = round_aligned(m, ln["grid"], mbits=fo.mbits, rounding=RNE,
                                 name=f"lane{i}_rnd")
            mag = Mux(ln["inf"] | (code >= inf_code), inf_code, code)
            mag = Mux(ln["zero"], 0, mag)[:fo.bits - 1]
            out.append(Mux(ln["nan"], qnan, Cat(mag, ln["neg"])))
        res = pipe.boundary(Cat(*out), "output")

        m.d.comb += self.o.payload.data.as_value().eq(res)
        pipe.connect(i_valid=self.i.valid, i_ready=self.i.ready,
                     o_valid=self.o.valid, o_ready=self.o.ready)
        return m


def _add_arguments(p):
    p.add_argument("--format", required=True, help="element format (fp8_e4m3, ..., int8)")
    p.add_argument("--block-size", type=int, default=32, help="k, power of two 2..64")
    p.add_argument("--output", dest="output_format", default="fp32",
                   help="output format: fp32, bf16 or fp16")
    p.add_argument("--stages", type=int, default=3, help="pipeline registers, 1..4")


def _build(a):
    return MXDequantizer(a.format, a.block_size, a.output_format, stages=a.stages)


def cli_units():
    from .cli import UnitSpec

    defaults = [["--format", f] for f in golden.FORMATS]
    return [UnitSpec("dequantizer", "E8M0 scale + k element codes -> k fp32/bf16/fp16 values",
                     _add_arguments, _build, defaults)]
