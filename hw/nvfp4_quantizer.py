"""NVFP4 quantizer: a block of k fp32, bf16 or fp16 values -> one UE4M3 scale byte and k e2m1
codes, single or two level (the fp32 tensor scale P and f(1/P) as payload fields); or two
blocks a beat (32 lanes as two blocks of 16), quantized side by side.

Implements the quantization of docs/numerics.md section 7 (NVFP4, torchao recipe) bit for
bit; ``golden.quantize(x, "nvfp4", tensor_scale=..., recipe="torchao")`` is the reference.
Architecture: docs/nvfp4.md (quantizer).  Every f() below is one fp32 RNE rounding, subnormals
kept:

* ``b = f(amax / 6)``; single level ``s = E4(clamp(b, 2^-6, 448))``, ``r = f(1 / s)``; two
  level ``s = E4(clamp(f(b / P), 2^-6, 448))``, ``r = f(f(1 / P) / s)``;
* per element ``y = clamp(f(x * r), -6, 6)``, e2m1 RNE, the sign from x's sign bit;
* a block holding a NaN or an Inf: scale 0x7F, codes 0.

The datapath (:mod:`hw.nvfp4`): the block-max tree (:func:`hw.maxtree.max_tree_levels`) over
the full magnitudes, exact restoring divisions (by 3, by P's significand, by the scale's 4-bit
significand) each rounded once (:func:`hw.rounding.round_increment`, :class:`hw.rounding.Grid`),
and per lane the exact product ``x * r`` (:func:`hw.multiply.pair_sums`), rounded to fp32 and
then onto the e2m1 grid.  Two blocks a beat: the block path twice side by side on one
pipeline (:meth:`hw.pipeline.Pipeline.scope`; the second block's registers ``q_b1_...``),
one flow control and one latency, both blocks under the beat's P.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import data

import golden

from .delay_line import delay_line
from .elements import block_layout
from .nvfp4.lanes import NAN_BLOCK_BYTE, normalized_values, quantize_lanes
from .nvfp4.reciprocal import rcp_candidates, scale_reciprocal
from .nvfp4.scale import block_scale
from .nvfp4.sections import ESTIMATES, NVQGeometry, nvq_sections
from .params import check_block_size, check_choice
from .pipeline import registered_boundaries
from .registry import UnitSpec
from .unit import Unit

__all__ = ["NVFP4Quantizer", "nvq_sections", "ESTIMATES", "LEVELS", "INPUTS", "BLOCKS",
           "MULTIPLIERS", "NAN_BLOCK_BYTE", "cli_units"]

#: The element format: fp4_e2m1.
FMT = golden.element_format("fp4_e2m1")
#: Single level (no tensor scale) and two level (P and f(1/P) payload fields).
LEVELS = (1, 2)
INPUTS = ("fp32", "bf16", "fp16")
#: Blocks a beat.
BLOCKS = (1, 2)
#: The lane products: LUTs and carry chains, or MULT18X18D blocks (:mod:`hw.nvfp4.products`).
MULTIPLIERS = ("lut", "mult18x18d")
#: The vendor cells each way instantiates (simulation needs their models: :mod:`hw.dsp`).
_PRIMITIVES = {"lut": (), "mult18x18d": ("MULT18X18D",)}


class NVFP4Quantizer(Unit):
    """Quantize one block (or two) of ``block_size`` values per clock to NVFP4 (torchao
    recipe).

    Parameters
    ----------
    block_size : int
        k, a power of two in 2..64 (16 is NVFP4's; golden takes any).
    input_format : {"fp32", "bf16", "fp16"}
    levels : {1, 2}
        1: single level; 2: two level, the fp32 tensor scale P and its reciprocal f(1/P)
        are the input fields ``tensor_scale`` and ``tensor_scale_rcp``, given with every beat
        (they change per tensor).
    blocks : {1, 2}
        Blocks a beat: 2 takes ``2 * block_size`` values (32 lanes as two blocks of 16), both
        blocks under the beat's P.
    multipliers : {"lut", "mult18x18d"}
        The lane products ``x * r`` in LUTs and carry chains, or in ECP5 MULT18X18D blocks
        with their own registers (:mod:`hw.nvfp4.products`: four a lane for fp32 input, two
        for bf16 and fp16); the Verilog then instantiates the primitive (``primitives``).
    stages : int, optional
        Pipeline registers, ``1..len(sections)``; default :func:`hw.pipeline.default_stages`
        of the estimates (:data:`hw.nvfp4.sections.ESTIMATES`).

    Members
    -------
    i : In(stream.Signature(StructLayout))
        Fields ``data`` (``blocks * k`` input values, element i at bits ``[w*i, w*(i+1))``;
        block j is elements ``j*k .. j*k + k - 1``) and, two level, ``tensor_scale`` (P's
        fp32 bits) and ``tensor_scale_rcp`` (f(1/P)'s, fp32 RNE of 1 / P).  P is golden's
        range: positive, in [2^-120, 2^119]; other P are outside the contract.
    o : Out(stream.Signature(StructLayout))
        Fields ``scale`` (the UE4M3 byte; 0x7F for a block holding a NaN or an Inf; two
        blocks: an array of two, block j's at bits ``[8j, 8j + 8)``) and ``codes``
        (``blocks * k`` e2m1 codes in the input's order, sign-magnitude: -0 and negative
        values that round to 0 give 0x8).

    Latency is ``stages`` cycles, one block per clock; flow control is
    :class:`hw.pipeline.Pipeline`'s (``i.ready`` a register, a skid register at the output).
    """

    def __init__(self, block_size=16, input_format="fp32", levels=2, *, blocks=1,
                 multipliers="lut", stages=None):
        self.block_size = check_block_size(block_size)
        self.input_format = golden.float_format(check_choice("input format", input_format,
                                                             INPUTS))
        if levels not in LEVELS or isinstance(levels, bool):
            raise ValueError(f"levels must be 1 or 2, got {levels!r}")
        self.levels = levels
        if blocks not in BLOCKS or isinstance(blocks, bool):
            raise ValueError(f"blocks must be 1 or 2 (blocks a beat), got {blocks!r}")
        self.blocks = blocks
        if not isinstance(multipliers, str):
            raise TypeError(f"multipliers must be a str, got {type(multipliers).__name__}")
        self.multipliers = check_choice("multipliers", multipliers, MULTIPLIERS)
        self.primitives = _PRIMITIVES[multipliers]
        self.geometry = NVQGeometry(self.input_format, self.block_size, levels, multipliers)
        self._sections = {n: e.ns for n, e in nvq_sections(self.geometry).items()}
        self._choose_stages(stages, self._sections)
        super().__init__(self._input_layout(blocks), self._output_layout())

    def _input_layout(self, blocks: int, rcp: bool = True) -> data.StructLayout:
        """``blocks`` blocks of values and, two level, P and (``rcp``) f(1/P)."""
        fields = {"data": data.ArrayLayout(self.input_format.bits, blocks * self.block_size)}
        if self.levels == 2:
            fields["tensor_scale"] = unsigned(32)
            if rcp:
                fields["tensor_scale_rcp"] = unsigned(32)
        return data.StructLayout(fields)

    def _output_layout(self) -> data.StructLayout:
        if self.blocks == 1:
            return block_layout(FMT, self.block_size)
        return data.StructLayout({
            "scale": data.ArrayLayout(unsigned(8), self.blocks),
            "codes": data.ArrayLayout(unsigned(FMT.bits), self.blocks * self.block_size)})

    @property
    def sections(self) -> dict[str, float]:
        """Section name -> estimated delay (ns), in datapath order."""
        return dict(self._sections)

    @property
    def module_name(self) -> str:
        return (f"nvfp4_quantizer_l{self.levels}_k{self.block_size}"
                + (f"x{self.blocks}" if self.blocks > 1 else "")
                + f"_{self.input_format.name}_s{self.stages}"
                + ("" if self.multipliers == "lut" else f"_{self.multipliers}"))

    @property
    def parameters(self) -> dict:
        two = self.levels == 2
        return {"format": FMT.name, "scale_format": "ue4m3", "block_size": self.block_size,
                "blocks": self.blocks,
                "input": self.input_format.name, "levels": self.levels, "recipe": "torchao",
                "tensor_scale": "tensor_scale" if two else None,
                "tensor_scale_rcp": "tensor_scale_rcp" if two else None,
                "stages": self.stages, "multipliers": self.multipliers,
                "registered_boundaries": list(registered_boundaries(self._sections,
                                                                    self.stages))}

    def elaborate(self, platform):
        m = Module()
        pipe = self.pipeline(m, "q")
        if self.blocks == 1:
            scope = pipe.scope()
            x = scale_reciprocal(scope, *block_scale(scope, self.geometry, self.i.payload),
                                 self._reciprocals(pipe))
            out = quantize_lanes(scope, self.geometry, x, self._waiting(pipe))
            m.d.comb += self.o.payload.eq(out)
        else:
            self._beside(m, pipe)
        pipe.connect(i_valid=self.i.valid, i_ready=self.i.ready,
                     o_valid=self.o.valid, o_ready=self.o.ready)
        return m

    def _reciprocals(self, pipe):
        """The eight candidates of ``f(R / s)`` (:func:`hw.nvfp4.reciprocal.rcp_candidates`),
        beside the block path (registers ``q_rcp_...``) once the block path has crossed
        ``scale``: one set for the beat, whose blocks share P."""
        names = list(self._sections)
        rcp = self.i.payload.tensor_scale_rcp if self.levels == 2 else None
        return rcp_candidates(pipe.scope("rcp", sections=None), rcp,
                              names[:names.index("scale") + 1])

    def _waiting(self, pipe) -> list:
        """The beat's input values, normalized beside the block path's first two sections
        (:func:`hw.nvfp4.lanes.normalized_values`, ``q_x_...``), as after ``rnorm``: they
        wait in a delay line (:func:`hw.delay_line.delay_line`, ``q_data_...``) while the
        block path computes the scale and r.  Returns the values' lanes (views), in order,
        once the block path has crossed ``rnorm``."""
        names = list(self._sections)
        x = normalized_values(pipe.scope("x", sections=None), self.geometry,
                              self.i.payload.data.as_value(), names[:2])
        waited = x.shape()(delay_line(pipe, x.as_value(), names[2:names.index("rnorm") + 1],
                                      "data"))
        return [waited.lanes[i] for i in range(self.blocks * self.block_size)]

    def _beside(self, m, pipe):
        """Two blocks a beat: each block's path on the same sections, block 0's names the
        unit's, block j's registers beside them (``q_b<j>_...``)."""
        k, w = self.block_size, self.input_format.bits
        scopes, views = [], []
        for j in range(self.blocks):
            scope = pipe.scope(f"b{j}" if j else None, sections=None)
            block = Signal(self._input_layout(1, rcp=False), name=f"b{j}_in")
            m.d.comb += block.data.eq(self.i.payload.data.as_value()[j * k * w:(j + 1) * k * w])
            if self.levels == 2:
                m.d.comb += block.tensor_scale.eq(self.i.payload.tensor_scale)
            scopes.append(scope)
            views.append(block_scale(scope, self.geometry, block))
        rcp = self._reciprocals(pipe)
        views = [scale_reciprocal(scope, *x, rcp) for scope, x in zip(scopes, views, strict=True)]
        values = self._waiting(pipe)
        for j, (scope, x) in enumerate(zip(scopes, views, strict=True)):
            out = quantize_lanes(scope, self.geometry, x, values[j * k:(j + 1) * k])
            m.d.comb += [self.o.payload.scale[j].eq(out.scale),
                         *(self.o.payload.codes[j * k + i].eq(out.codes[i]) for i in range(k))]


def _add_arguments(p):
    p.add_argument("--block-size", type=int, default=16, help="k, a power of two 2..64")
    p.add_argument("--blocks", type=int, choices=BLOCKS, default=1,
                   help="blocks a beat: 2 takes 2k values (32 lanes as two blocks of 16)")
    p.add_argument("--input", default="fp32", help=f"input format: {', '.join(INPUTS)}")
    p.add_argument("--levels", type=int, choices=LEVELS, default=2,
                   help="1: single level; 2: two level, the fp32 tensor scale P and f(1/P) "
                        "are the input fields tensor_scale and tensor_scale_rcp")
    p.add_argument("--multipliers", default="lut",
                   help="the lane products: lut (LUTs and carry chains) or mult18x18d (ECP5 "
                        "MULT18X18D blocks, four a lane for fp32 input)")
    p.add_argument("--stages", type=int, default=None,
                   help="pipeline registers = latency in cycles (default: the estimates')")


def _build(a):
    return NVFP4Quantizer(a.block_size, a.input, a.levels, blocks=a.blocks,
                          multipliers=a.multipliers, stages=a.stages)


def cli_units():
    defaults = [["--levels", "2"], ["--levels", "1"], ["--levels", "1", "--input", "bf16"]]
    return [UnitSpec("nvfp4-quantizer", "NVFP4: k fp32/bf16/fp16 values (+ fp32 tensor scale "
                     "P and f(1/P)) -> UE4M3 scale + k e2m1 codes", _add_arguments, _build,
                     defaults)]
