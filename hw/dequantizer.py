"""MX dequantizer: one E8M0 scale and k element codes -> k fp32, bf16 or fp16 values.

Implements section 4 of ``docs/numerics.md`` (dequantization) bit for bit
(``golden.dequantize`` is the reference); NaN results are the canonical quiet NaN of the output
format (0x7FC00000, 0x7FC0, 0x7E00).  Architecture and verification: ``docs/quantizer.md``.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

import golden
from golden.formats import SCALE_BIAS, SCALE_NAN

from .arith import leading_zeros, wire
from .elements import block_layout, decode_element
from .params import check_block_size, check_choice, check_stages
from .pipeline import Pipeline, registered_boundaries
from .rounding import RNE, align_to_grid, round_aligned

__all__ = ["MXDequantizer", "DEQUANTIZER_SECTIONS", "DEFAULT_STAGES", "cli_units"]

OUTPUTS = ("fp32", "bf16", "fp16")

#: Sections in datapath order with their estimated delays (ns, ECP5 speed 8, k = 32 fp8_e4m3
#: -> fp32, in context).  ``input``: no logic, the routing from the ring of port flip-flops.
#: decode (element fields, a 4-bit leading-zero count, the result exponent: a short adder) and
#: align (the subnormal shift and its sticky OR) from their logic depth; the 3-stage build's
#: critical path runs from the exponent through the shift into the sticky bit (3.4 ns logic
#: + 6.3 ns routing, ``docs/performance.md``), split here between align and output (the
#: rounding increment, overflow and specials).
DEQUANTIZER_SECTIONS = {"input": 1.0, "decode": 5.0, "align": 6.0, "output": 5.0}
DEFAULT_STAGES = 3


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
        Pipeline registers, 1..4 (default 3), placed by
        :func:`hw.pipeline.place_registers` on :data:`DEQUANTIZER_SECTIONS` (3: ``decode``,
        ``align``, ``output``; 2: ``decode``, ``output``).  Sections: decode (fields,
        leading-zero count, the result's exponent), align (the shift onto the output grid,
        subnormal results included), output (rounding increment, overflow, specials).

    Members
    -------
    i : In(stream.Signature(StructLayout))
        Payload fields ``scale`` (E8M0 code) and ``codes`` (k element codes).
    o : Out(stream.Signature(StructLayout))
        Payload field ``data``: k values, element i at bits ``[w*i, w*(i+1))``.  A scale of 255,
        an fp8_e4m3 NaN code or an fp8_e5m2 NaN code give the canonical quiet NaN.

    Latency is ``stages`` cycles, one block per clock.  Flow control: the common stall enable
    of :class:`hw.pipeline.Pipeline`; ``i.ready = ~hold | o.ready`` (one gate from
    ``o.ready`` and a register).
    """

    def __init__(self, fmt="fp8_e4m3", block_size=32, output_format="fp32", *,
                 stages=DEFAULT_STAGES):
        self.fmt = golden.element_format(fmt)
        self.block_size = check_block_size(block_size)
        self.output_format = golden.float_format(check_choice("output format", output_format,
                                                              OUTPUTS))
        self.max_stages = len(DEQUANTIZER_SECTIONS)  # the deepest pipeline
        self.stages = check_stages(stages, self.max_stages)
        self.latency = self.stages
        k = self.block_size
        self.in_layout = block_layout(self.fmt, k)
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
                "registered_boundaries": list(registered_boundaries(DEQUANTIZER_SECTIONS,
                                                                    self.stages))}

    def elaborate(self, platform):
        m = Module()
        fmt, output_format, k = self.fmt, self.output_format, self.block_size
        pipe = Pipeline(m, DEQUANTIZER_SECTIONS, self.stages, name="d")

        payload = pipe.boundary(self.i.payload, "input")
        scale = payload.scale

        # -- decode: sign, specials, normalized significand and its exponent -----------------
        lanes = []
        for i in range(k):
            el = decode_element(m, payload.codes[i], fmt, f"lane{i}")
            lz = leading_zeros(m, el.sig, name=f"lane{i}_lz")
            norm = (el.sig << lz)[:len(el.sig)]
            # exponent of norm's top bit: the element's lowest binade is emin = 1 - bias
            top = el.shift + (1 - fmt.bias) - lz + (scale - SCALE_BIAS)
            lanes.append({"neg": el.neg, "zero": el.zero, "sig": norm, "top": top,
                          "nan": el.nan | (scale == SCALE_NAN), "inf": el.inf})
        lanes = pipe.boundary(wire(m, lanes, "d_decode_in"), "decode")

        # -- align onto the output grid (a right shift only for subnormal results) -----------
        aligned = []
        for i in range(k):
            ln = lanes[i]
            aligned.append({
                "neg": ln.neg, "zero": ln.zero, "nan": ln.nan, "inf": ln.inf,
                "grid": align_to_grid(m, ln.sig, ln.top, emin=1 - output_format.bias,
                                      mbits=output_format.mbits, name=f"lane{i}_rnd")})
        lanes = pipe.boundary(wire(m, aligned, "d_align_in"), "align")

        # -- output: round to the output format (exact for fp32), overflow, specials ---------
        inf_code, qnan = output_format.inf_bits, output_format.qnan_bits
        out = []
        for i in range(k):
            ln = lanes[i]
            code = round_aligned(m, ln.grid, mbits=output_format.mbits, rounding=RNE,
                                 name=f"lane{i}_rnd")
            mag = Mux(ln.inf | (code >= inf_code), inf_code, code)
            mag = Mux(ln.zero, 0, mag)[:output_format.bits - 1]
            out.append(Mux(ln.nan, qnan, Cat(mag, ln.neg)))
        res = pipe.boundary(wire(m, {"data": out}, "d_output_in"), "output")

        m.d.comb += self.o.payload.eq(res)
        pipe.connect(i_valid=self.i.valid, i_ready=self.i.ready,
                     o_valid=self.o.valid, o_ready=self.o.ready)
        return m


def _add_arguments(p):
    from .cli import format_help

    p.add_argument("--format", required=True, help=format_help())
    p.add_argument("--block-size", type=int, default=32, help="k, a power of two 2..64")
    p.add_argument("--output", dest="output_format", default="fp32",
                   help=f"output format: {', '.join(OUTPUTS)}")
    p.add_argument("--stages", type=int, default=DEFAULT_STAGES,
                   help="pipeline registers = latency in cycles, 1..4")


def _build(a):
    return MXDequantizer(a.format, a.block_size, a.output_format, stages=a.stages)


def cli_units():
    from .cli import UnitSpec

    defaults = [["--format", f] for f in golden.FORMATS]
    return [UnitSpec("dequantizer", "E8M0 scale + k element codes -> k fp32/bf16/fp16 values",
                     _add_arguments, _build, defaults)]
