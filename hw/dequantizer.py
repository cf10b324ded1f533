"""MX dequantizer: one E8M0 scale and k element codes -> k fp32, bf16 or fp16 values.

Implements section 4 of ``docs/numerics.md`` (dequantization) bit for bit
(``golden.dequantize`` is the reference); NaN results are the canonical quiet NaN of the output
format (0x7FC00000, 0x7FC0, 0x7E00).  Architecture and verification: ``docs/quantizer.md``.
"""

from __future__ import annotations

import argparse

from amaranth.hdl import Cat, Const, Module, Mux
from amaranth.lib import data

import golden
from golden.formats import SCALE_BIAS, SCALE_NAN

from .arith import leading_zeros, wire
from .elements import block_layout, decode_element, element_binade
from .params import check_block_size, check_choice
from .pipeline import default_stages, registered_boundaries
from .placement import Estimate
from .registry import UnitSpec, format_help
from .rounding import RNE, Grid, overflows, round_aligned
from .unit import Unit

__all__ = ["MXDequantizer", "dequantize_step", "output_lanes", "align_parts", "align_high",
           "align_low", "ESTIMATES", "DEQUANTIZER_SECTIONS", "DEFAULT_STAGES", "cli_units"]

OUTPUTS = ("fp32", "bf16", "fp16")

#: The estimates the dequantizer's registers are placed on, by section in datapath order (ns,
#: ECP5 speed 8, k = 32 fp8_e4m3 -> fp32, in context), each with its one-line provenance.
#: ``output``'s selects are on registered flags (overflow is decided beside the rounding), so
#: round and output fit one stage: the default depth, 5, registers every boundary but round's.
ESTIMATES = {
    "input": Estimate(2.0, "the block's exponent offset (a short adder) beside the route from "
                      "the port flip-flops"),
    "decode": Estimate(4.0, "element fields, the normalizing shift and the element's binade "
                       "(tables, no carry chain); input -> decode binds the default 5 stages: "
                       "1.22 ns logic + 3.64 ns routing"),
    "position": Estimate(3.0, "top - emin_out in both signs (two short adders side by side) "
                         "and a select on its sign"),
    "align": Estimate(3.5, "the shift and its sticky OR; at 3 stages exponent -> shift -> "
                      "sticky binds, 3.4 ns logic + 6.2 ns routing (103.8 MHz)"),
    "round": Estimate(3.5, "the increment and the code, the binade's overflow test beside "
                      "them"),
    "output": Estimate(0.5, "Inf, zero and NaN selects on registered flags, folded into the "
                       "flip-flops' set/reset and at most a LUT level"),
}
#: Sections in datapath order with their estimated delays (ns): :data:`ESTIMATES`' values.
DEQUANTIZER_SECTIONS = {name: estimate.ns for name, estimate in ESTIMATES.items()}
#: The default depth, :func:`hw.pipeline.default_stages`: 5, round and output in one stage.
DEFAULT_STAGES = default_stages(DEQUANTIZER_SECTIONS.values())


class MXDequantizer(Unit):
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
        Pipeline registers, 1..6 (default 5: every boundary but round's), placed by
        :func:`hw.pipeline.place_registers` on :data:`DEQUANTIZER_SECTIONS` (3: ``decode``,
        ``align``, ``output``; 2: ``position``, ``output``).  Sections: input (the block's
        exponent offset), decode (fields, normalized significand, the element's binade),
        position (the shift amount and binade on the output grid), align (the shift,
        subnormal results included), round (increment and code; overflow beside them), output
        (Inf, zero and NaN).

    Members
    -------
    i : In(stream.Signature(StructLayout))
        Payload fields ``scale`` (E8M0 code) and ``codes`` (k element codes).
    o : Out(stream.Signature(StructLayout))
        Payload field ``data``: k values, element i at bits ``[w*i, w*(i+1))``.  A scale of 255
        and a NaN code of the format (conventions ``fn`` and ``ieee``) give the canonical quiet
        NaN; an Inf code (``ieee``) gives +-Inf.

    Latency is ``stages`` cycles, one block per clock.  Flow control:
    :class:`hw.pipeline.Pipeline`: ``i.ready`` is a register (the
    common stage enable, ``o.ready | ~o.valid`` of the cycle before); a skid register catches
    the block the pipeline moves on in the first cycle of a stall, so no gate from ``o.ready``
    drives the 1,024 output flip-flops (k = 32, fp32).  At the default 5 stages:
    205.6 MHz (186.2-228.1, nextpnr seeds 1-5), 3,209 LUT4, 4,727 FF (docs/performance.md).
    """

    #: The sections of the datapath (:data:`DEQUANTIZER_SECTIONS`).
    sections = DEQUANTIZER_SECTIONS

    def __init__(self, fmt="fp8_e4m3", block_size=32, output_format="fp32", *,
                 stages=DEFAULT_STAGES):
        self.fmt = golden.element_format(fmt)
        self.block_size = check_block_size(block_size)
        self.output_format = golden.float_format(check_choice("output format", output_format,
                                                              OUTPUTS))
        self._choose_stages(stages, DEQUANTIZER_SECTIONS)
        k = self.block_size
        super().__init__(block_layout(self.fmt, k), data.StructLayout({
            "data": data.ArrayLayout(self.output_format.bits, k),
        }))

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
        pipe = self.pipeline(m, "d")
        res = dequantize_step(pipe.scope(), self.fmt, self.output_format, self.block_size,
                              self.i.payload)
        m.d.comb += self.o.payload.eq(res)
        pipe.connect(i_valid=self.i.valid, i_ready=self.i.ready,
                     o_valid=self.o.valid, o_ready=self.o.ready)
        return m


def dequantize_step(scope, fmt, output_format, block_size: int, payload):
    """Place the dequantizer's sections (:data:`DEQUANTIZER_SECTIONS`, in the scope), ``input``
    to ``output``, through ``scope`` (a :class:`hw.pipeline.PipelineScope`).

    ``payload`` is the block before the ``input`` boundary (``scale`` and ``codes`` of
    ``block_size`` codes of ``fmt``, :func:`hw.elements.block_layout`); returns the view after
    the ``output`` boundary: ``data``, the values in ``output_format``.
    """
    m, k = scope.module, block_size

    # -- input: the block's part of every result exponent, beside the port registers ----
    # above = top - emin_out = block + lane: the scale's binade relative to the output's
    # lowest binade, plus the element's floor(log2(value)).
    emin_out = 1 - output_format.bias
    scale = payload.scale
    block_above = scale - (SCALE_BIAS + emin_out)  # signed
    payload = scope.cross({"codes": payload.codes, "nan": scale == SCALE_NAN,
                           "above": block_above, "below": -block_above}, "input")

    # -- decode: sign, specials, normalized significand and its binade (a table) ---------
    lanes = []
    for i in range(k):
        el = decode_element(m, payload.codes[i], fmt, scope.name(f"lane{i}"))
        lz = leading_zeros(m, el.sig, name=scope.name(f"lane{i}_lz"))
        # Each lane keeps its own copy of the block's exponent, cleared in a zero lane
        # (whose exponent is never used): lane-specific, so synthesis keeps 32 copies
        # instead of merging them into one register, whose route to all 32 lanes' adders
        # alone would be 3.4 ns.
        lanes.append({"neg": el.neg, "zero": el.zero, "sig": (el.sig << lz)[:len(el.sig)],
                      "binade": element_binade(m, el.mag, fmt, scope.name(f"lane{i}_binade")),
                      "above": Mux(el.zero, 0, payload.above),
                      "below": Mux(el.zero, 0, payload.below),
                      "nan": el.nan | payload.nan, "inf": el.inf})
    lanes = scope.cross(lanes, "decode")

    # -- position on the output grid (the lane's binade added to the block's part) ------
    grid = Grid(sig_width=len(lanes[0].sig), emin=emin_out,
                mbits=output_format.mbits, top_min=fmt.lsb_exp - SCALE_BIAS)
    placed = [{"neg": ln.neg, "zero": ln.zero, "nan": ln.nan, "inf": ln.inf, "sig": ln.sig,
               "above": ln.above + ln.binade, "below": ln.below - ln.binade} for ln in lanes]
    return output_lanes(scope, grid, output_format, placed)


def output_lanes(scope, grid, output_format, lanes, *, trailing_zeros: bool = False,
                 position_copies: int = 1, below_biased: bool = False,
                 shift_low_bits: int | None = None):
    """The ``position``, ``align``, ``round`` and ``output`` sections of a dequantizer: each
    lane's normalized significand onto ``output_format``'s grid (``grid``, a
    :class:`hw.rounding.Grid`), rounded once (RNE), with overflow to Inf, zeros and the
    canonical quiet NaN.

    ``lanes`` are dicts (or views) of ``neg``, ``zero``, ``nan``, ``inf``, ``sig`` (top bit
    set unless ``zero``) and ``above``/``below`` (``top - emin_out`` and its negation,
    ``top = floor(log2(|value|))``), computed in the ``position`` section; returns the view
    after the ``output`` boundary: ``data``, the values in ``output_format``.
    ``trailing_zeros``: the lanes also carry ``tz``, ``sig``'s trailing-zero count, and the
    sticky bit comes from it (:meth:`hw.rounding.Grid.align`).
    ``position_copies``: each lane's shift amount crosses the ``position`` boundary in that
    many registers (:meth:`hw.pipeline.Pipeline.replicate`), each driving a part of the
    lane's shifter (the first also its sticky bit and fraction): a shift amount's bits fan
    out to every bit of the shifter.
    ``below_biased``: each lane's ``below`` includes ``grid.drop_normal``
    (:meth:`hw.rounding.Grid.position`).
    ``shift_low_bits``: the shift onto the grid in two sections, ``align_hi`` (by the shift
    amount's bits from ``shift_low_bits`` up, and the sticky bit) and ``align`` (by its low
    ``shift_low_bits`` bits; all of them where the amount is no wider), each amount in
    ``position_copies`` registers (:func:`align_high`, :func:`align_low`); needs
    ``trailing_zeros``.  Default: one section, ``align``.
    """
    m, k = scope.module, len(lanes)
    if not isinstance(position_copies, int) or isinstance(position_copies, bool) \
            or position_copies < 1:
        raise ValueError(f"position_copies must be a positive int, not {position_copies!r}")
    if shift_low_bits is not None:
        if not isinstance(shift_low_bits, int) or isinstance(shift_low_bits, bool) \
                or shift_low_bits < 1:
            raise ValueError(f"shift_low_bits must be a positive int, not {shift_low_bits!r}")
        if not trailing_zeros:
            raise ValueError("shift_low_bits needs trailing_zeros (the sticky bit as a "
                             "comparison beside the first shift)")

    # -- position: the shift amount (non-zero only for a subnormal result) and the binade
    # as a select on the sign of top - emin_out -------------------------------------------
    placed = []
    for i in range(k):
        ln = lanes[i]
        placed.append({"neg": ln["neg"], "zero": ln["zero"], "nan": ln["nan"],
                       "inf": ln["inf"], "sig": ln["sig"],
                       "position": grid.position(m, ln["above"], ln["below"],
                                                 name=scope.name(f"lane{i}_rnd"),
                                                 below_biased=below_biased)})
        if trailing_zeros:
            placed[-1]["tz"] = ln["tz"]
    lanes = scope.cross(placed, "position")
    drops = [[lanes[i].position.drop]
             + (scope.replicate(placed[i]["position"].drop, "position", position_copies - 1)
                if position_copies > 1 else []) for i in range(k)]

    # -- align onto the output grid (align_hi, align: by the high bits, then the low ones) ---
    if shift_low_bits is not None:
        high = []
        for i in range(k):
            ln = lanes[i]
            high.append({"neg": ln.neg, "zero": ln.zero, "nan": ln.nan, "inf": ln.inf,
                         "part": align_high(m, grid, ln, drops[i], shift_low_bits,
                                            scope.name(f"lane{i}_rnd"))})
        lanes = scope.cross(high, "align_hi")
        fines = [[lanes[i].part.fine]
                 + (scope.replicate(high[i]["part"].fine, "align_hi", position_copies - 1)
                    if position_copies > 1 else []) for i in range(k)]
    aligned = []
    for i in range(k):
        ln = lanes[i]
        name = scope.name(f"lane{i}_rnd")
        part = (align_low(m, grid, ln.part, fines[i], name) if shift_low_bits is not None
                else align_parts(m, grid, ln, drops[i], name, trailing_zeros))
        aligned.append({"neg": ln.neg, "zero": ln.zero, "nan": ln.nan, "inf": ln.inf,
                        "grid": part})
    lanes = scope.cross(aligned, "align")

    # -- round to the output format (exact for fp32), and overflow beside it -------------
    # Overflow is a test of the registered binade (hw.rounding.overflows), in parallel with
    # the increment's carry chain, so the output stage's selects depend on registered
    # flags alone.
    inf_code, qnan = output_format.inf_bits, output_format.qnan_bits
    ebits_out = output_format.bits - 1 - output_format.mbits
    assert inf_code == ((1 << ebits_out) - 1) << output_format.mbits  # overflows' premise
    rounded = []
    for i in range(k):
        ln = lanes[i]
        overflow = overflows(m, ln.grid.binade, ebits=ebits_out,
                             name=scope.name(f"lane{i}_overflow"))
        rounded.append({"neg": ln.neg, "zero": ln.zero, "nan": ln.nan,
                        "inf": ln.inf | overflow,
                        "code": round_aligned(m, ln.grid, mbits=output_format.mbits,
                                              rounding=RNE, name=scope.name(f"lane{i}_rnd"))})
    lanes = scope.cross(rounded, "round")

    # -- output: Inf (specials and overflow), zeros and NaN --------------------------------
    out = []
    for i in range(k):
        ln = lanes[i]
        mag = Mux(ln.inf, inf_code, ln.code)
        mag = Mux(ln.zero, 0, mag)[:output_format.bits - 1]
        out.append(Mux(ln.nan, qnan, Cat(mag, ln.neg)))
    return scope.cross({"data": out}, "output")


def align_parts(m, grid, lane, drops, name, trailing_zeros, sticky_limit: bool = False):
    """:meth:`hw.rounding.Grid.align` of one lane, its kept bits in ``len(drops)`` parts,
    part ``c`` shifted by ``drops[c]`` (copies of one shift amount; the first also gives the
    fraction and sticky bit); ``trailing_zeros``: the lane carries ``tz``, ``sig``'s
    trailing-zero count; ``sticky_limit``: it carries ``sticky_limit`` instead
    (:meth:`hw.rounding.Grid.sticky_limit` of the count)."""
    tz = lane.tz if trailing_zeros else None
    limit = lane.sticky_limit if sticky_limit else None
    if len(drops) == 1:
        return grid.align(m, lane.sig, lane.position, name=name, trailing_zeros=tz,
                          sticky_limit=limit)
    parts = [grid.align(m, lane.sig, wire(m, {"drop": drop, "binade": lane.position.binade},
                                          f"{name}_position{c}"),
                        name=f"{name}{c}", trailing_zeros=tz, sticky_limit=limit)
             for c, drop in enumerate(drops)]
    width = len(parts[0].n)
    bounds = [c * width // len(parts) for c in range(len(parts) + 1)]
    return wire(m, {"n": Cat(*(p.n[lo:hi] for p, lo, hi in zip(parts, bounds[:-1], bounds[1:],
                                                                   strict=True))),
                    "frac": parts[0].frac, "sticky": parts[0].sticky,
                    "binade": lane.position.binade}, f"{name}_aligned")


def _bounds(width: int, parts: int) -> list[int]:
    """The bounds of ``parts`` parts of ``width`` bits, lowest first."""
    return [c * width // parts for c in range(parts + 1)]


def align_high(m, grid, lane, drops, low_bits: int, name):
    """The first of the two sections of :meth:`hw.rounding.Grid.align` (``trailing_zeros``
    form): the lane's significand, ``grid.frac_bits`` zero bits below it, shifted right by
    the shift amount's bits from ``low_bits`` up, in ``len(drops)`` parts, part ``c`` by
    ``drops[c]`` (copies of one amount); beside it the sticky bit (``lane.tz`` compared with
    the whole amount, from ``drops[0]``).  Returns fields ``coarse`` (the shifted bits,
    ``grid.padded_width + grid.frac_bits`` of them), ``fine`` (the amount's low ``low_bits``
    bits), ``sticky`` and ``binade``; :func:`align_low` finishes the shift."""
    p, f = grid.padded_width, grid.frac_bits
    w = p + f
    placed = Cat(Const(0, f + p - len(lane.sig)), lane.sig)
    bounds = _bounds(w, len(drops))
    coarse = Cat(*((placed >> Cat(Const(0, low_bits), drop[low_bits:]))[lo:hi]
                   for drop, lo, hi in zip(drops, bounds[:-1], bounds[1:], strict=True)))
    drop = drops[0]
    return wire(m, {"coarse": coarse, "fine": drop[:low_bits],
                    "sticky": lane.tz + (p - len(lane.sig) + f) < drop,
                    "binade": lane.position.binade}, f"{name}_high")


def align_low(m, grid, high, fines, name):
    """The second section of the shift (:func:`align_high`): ``high.coarse`` shifted right by
    the amount's low bits, in ``len(fines)`` parts, part ``c`` by ``fines[c]``; returns
    :meth:`hw.rounding.Grid.align`'s fields ``n``, ``frac``, ``sticky`` and ``binade``."""
    f, w = grid.frac_bits, len(high.coarse)
    bounds = _bounds(w, len(fines))
    kept = Cat(*((high.coarse >> fine)[lo:hi]
                 for fine, lo, hi in zip(fines, bounds[:-1], bounds[1:], strict=True)))
    return wire(m, {"n": kept[f:], "frac": kept[:f], "sticky": high.sticky,
                    "binade": high.binade}, f"{name}_aligned")


def _add_arguments(p):
    p.add_argument("--format", required=True, help=format_help())
    p.add_argument("--block-size", type=int, default=32, help="k, a power of two 2..64")
    p.add_argument("--output-format", dest="output_format", default="fp32",
                   help=f"output format: {', '.join(OUTPUTS)}")
    # the deprecated spelling of --output-format (-o/--output names the Verilog file)
    p.add_argument("--output", dest="output_format", help=argparse.SUPPRESS)
    p.add_argument("--stages", type=int, default=DEFAULT_STAGES,
                   help="pipeline registers = latency in cycles, 1..6")


def _build(a):
    return MXDequantizer(a.format, a.block_size, a.output_format, stages=a.stages)


def cli_units():
    defaults = [["--format", f] for f in golden.FORMATS]
    return [UnitSpec("dequantizer", "E8M0 scale + k element codes -> k fp32/bf16/fp16 values",
                     _add_arguments, _build, defaults)]
