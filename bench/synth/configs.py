"""What ``make synth`` synthesizes: the configuration list, the depth sweeps, the issue's
targets and the anchor design they are compared with (ECP5 speed 8, k = 32)."""

from __future__ import annotations

from dataclasses import dataclass

import golden

__all__ = ["K", "describe", "FORMATS", "CONFIGS", "SWEEPS", "Anchor", "ANCHOR_POINTS", "ANCHORS",
           "TARGETS", "CURVE_TARGETS", "CURVE_NEXT_STEPS", "FALL_NEXT_STEPS", "NEXT_STEPS",
           "STRETCH_TARGETS", "STRETCH_NEXT_STEPS", "SWEEP_LATENCIES"]

K = ["--block-size", "32"]


def describe(unit: str, args: list[str]) -> str:
    """A configuration as the tables name it: the unit and its arguments without the common
    block size (``quantizer --format fp8_e4m3 --input bf16``)."""
    rest = list(args)
    for i in range(len(rest) - len(K) + 1):
        if rest[i:i + len(K)] == K:
            del rest[i:i + len(K)]
            break
    return " ".join([unit, *rest])

#: Every element format, in the contract's order (from the format table).
FORMATS = tuple(golden.FORMATS)
CONFIGS = (
    [("quantizer", ["--format", f, "--input", "fp32", *K]) for f in FORMATS]
    + [("quantizer", ["--format", f, "--input", "bf16", *K])
       for f in ("fp8_e4m3", "fp4_e2m1", "int8")]
    + [("dequantizer", ["--format", "fp8_e4m3", *K])]
    # NVFP4 (issue #50): blocks of 16, UE4M3 scale, the fp32 tensor scale as a run-time field
    + [("nvfp4-dequantizer", ["--levels", "2", "--block-size", "16"])]
    # the quantizer's 16 lane products of 24 x 24 bits in MULT18X18D blocks (four a lane)
    + [("nvfp4-quantizer", ["--levels", "2", "--block-size", "16", "--multipliers",
                            "mult18x18d"])]
    + [("dot", ["--format", "nvfp4", "--block-size", "16"]),
       ("dot-general", ["--format", "nvfp4", "--block-size", "16"])]
    + [("dot", ["--format", f, *K]) for f in FORMATS]
    + [("dot", ["--format-a", "fp8_e4m3", "--format-b", "fp4_e2m1", *K]),
       ("dot", ["--format-a", "int8", "--format-b", "fp6_e2m3", *K]),
       ("dot-general", ["--format", "fp8_e4m3", *K])]
    # the GPU accumulation modes (issue #52): the truncating steps beside the exact rows above
    + [("dot", ["--format", "fp8_e4m3", "--accumulation", "tcgen05.mxf8f6f4", *K]),
       ("dot", ["--format", "fp4_e2m1", "--accumulation", "tcgen05.mxf4", *K])]
    + [("dot", ["--format", f, "--accumulation", "tcgen05.mxf4nvf4", "--block-size", "16"])
       for f in ("fp4_e2m1", "nvfp4")]
    # the lane products in DSPs (MULT18X18D) instead of LUTs: as `*` (yosys maps them,
    # registers stay in the fabric) and instantiated with the blocks' own registers (hw.dsp)
    + [("dot", ["--format", f, "--multipliers", m, *K])
       for m in ("dsp", "mult18x18d") for f in ("fp8_e4m3", "int8")]
    # the GEMM tiles of issue #51's targets: 256 fp8_e4m3 and 512 fp4_e2m1 MACs per clock, MX out,
    # the accumulators in distributed RAM (8,192 and 16,384 flip-flops fewer)
    + [("gemm", ["--format", "fp8_e4m3", "--rows", "2", "--cols", "4",
                 "--out-format", "fp8_e4m3", "--accumulators", "memory", *K]),
       ("gemm", ["--format", "fp4_e2m1", "--rows", "4", "--cols", "4",
                 "--out-format", "fp4_e2m1", "--accumulators", "memory", *K])]
)
#: Depths every sweep includes (the Pareto table's latencies; the default and the maximum are
#: added per unit).
SWEEP_LATENCIES = (1, 3, 5, 8)
#: Pipeline-depth sweeps: (unit, args).
SWEEPS = (
    ("quantizer", ["--format", "fp8_e4m3", "--input", "bf16", *K]),
    ("quantizer", ["--format", "fp8_e4m3", "--input", "fp32", *K]),
    ("dequantizer", ["--format", "fp8_e4m3", *K]),
    ("nvfp4-dequantizer", ["--levels", "2", "--block-size", "16"]),
    ("nvfp4-quantizer", ["--levels", "2", "--block-size", "16"]),
    ("dot", ["--format", "fp8_e4m3", *K]),
    ("dot-general", ["--format", "fp8_e4m3", *K]),
    # a small tile: the depth trade-off is the lanes'; the 256-MAC tiles are rows of CONFIGS
    ("gemm", ["--format", "fp8_e4m3", "--rows", "1", "--cols", "2", *K]),
)

@dataclass(frozen=True)
class Anchor:
    """A design of the open MX-for-FPGA library (Samson et al., FPL 2024) at its most pipelined
    setting, k = 32, measured with this project's flow: the point the sweeps are compared with.

    Members
    -------
    unit, args : str, tuple of str
        The configuration of this project that does the same job (the sweep it is shown in).
    what : str
        The anchor design, in its own terms.
    latency : int or None
        Its latency in cycles (0: combinational, between the port ring's flip-flops); None
        where not recorded (it is then named in the prose only).
    fmax : float
        MHz.
    lut4 : int
        ECP5 LUT4; a multiple of 100 where only thousands with one decimal were recorded
        (``approx``).
    ff, mult : int or None, int
        Flip-flops (None: not recorded) and MULT18X18D blocks.
    """

    unit: str
    args: tuple[str, ...]
    what: str
    latency: int | None
    fmax: float
    lut4: int
    ff: int | None = None
    mult: int = 0
    approx: bool = False

    def luts_text(self) -> str:
        return f"{self.lut4 / 1000:.1f}k" if self.approx else f"{self.lut4:,}"

    def text(self) -> str:
        """The anchor as the prose names it: area, clock and latency."""
        area = (f"{self.luts_text()} LUT4" + (f" / {self.ff:,} FF" if self.ff else "")
                + (f" + {self.mult} MULT18X18D" if self.mult else ""))
        when = ("" if self.latency is None
                else ", combinational" if self.latency == 0 else f", {self.latency} cycles")
        return f"{self.what}: {area} at {self.fmax:g} MHz{when}"


_BF16 = ("--input", "bf16", *K)
#: The anchor designs, each beside the configuration of this project that does its job.
ANCHOR_POINTS = (
    Anchor("quantizer", ("--format", "fp8_e4m3", *_BF16), "bf16 -> MXFP8 E4M3", 5, 86, 4640,
           ff=3074),
    Anchor("quantizer", ("--format", "fp4_e2m1", *_BF16), "bf16 -> MXFP4", None, 117, 2651),
    Anchor("quantizer", ("--format", "int8", *_BF16), "bf16 -> MXINT8", None, 114, 3374),
    Anchor("dot", ("--format", "fp8_e4m3", *K), "E4M3 x E4M3 dot product (fixed-point sum, no "
           "scales, no fp32 rounding) with DSPs", 0, 38, 13900, mult=32, approx=True),
    Anchor("dot", ("--format", "fp8_e4m3", *K), "E4M3 x E4M3 dot product without DSPs", 0, 48,
           12400, approx=True),
)
#: The anchors as the synthesis section states them.
ANCHORS = ("Anchor (same flow, measured on the open MX-for-FPGA library of Samson et al., FPL "
           "2024, at its most pipelined setting, k = 32): "
           + "; ".join(a.text() for a in ANCHOR_POINTS) + ".")


#: The targets at the default depth (issue 13; ECP5 speed 8, k = 32): (unit, args, Fmax MHz,
#: LUT4 limit or None), checked against the stored results in the generated table: every
#: configuration of the list at 200 MHz, the bf16 -> fp8_e4m3 quantizer within 4,600 LUT4.
TARGETS = tuple(
    (unit, args, 200, 4600 if args[:4] == ["--format", "fp8_e4m3", "--input", "bf16"] else None)
    for unit, args in CONFIGS)

#: Targets on the depth sweeps: (unit, args, latency, Fmax MHz) -- 1.5x the anchor's clock
#: at its latency (86 MHz at 5 cycles).
CURVE_TARGETS = (
    ("quantizer", ["--format", "fp8_e4m3", "--input", "bf16", *K], 5, 130),
)

#: Issue 13's stretch, on the depth sweeps: (unit, args, Fmax MHz) at the sweep's deepest
#: point (the unit's largest ``--stages``; :func:`bench.synth.flow.sweep_points` always
#: places it).
STRETCH_TARGETS = (
    ("quantizer", ["--format", "fp8_e4m3", "--input", "bf16", *K], 250),
    ("dot", ["--format", "fp8_e4m3", *K], 250),
)

#: Where a missed stretch target stands: unit -> the next step, one line (the critical path
#: is the stored deepest sweep point's).
STRETCH_NEXT_STEPS: dict[str, str] = {}

#: Where a missed curve target stands, and where this project is slower than an anchor at the
#: anchor's latency: (unit, latency) -> the next step, one line (the critical path is the
#: stored sweep point's).
CURVE_NEXT_STEPS: dict[tuple[str, int], str] = {
    ("dot", 0): "none planned: the anchors sum 32 fixed-point products with no block scales, "
                "accumulator or fp32 rounding; a like-for-like point would be a different "
                "function from the unit's (at latency 3 MXDot is faster than both)",
}

#: Where a sweep's fall of Fmax beyond the seeds' spread stands: (the sweep's label, the
#: stages of the point that fell) -> the next step, one line (the critical path is the
#: point's).
FALL_NEXT_STEPS: dict[tuple[str, int], str] = {}

#: Where a missed default-depth target stands: the configuration as the tables name it
#: (:func:`describe`), or its unit for every configuration of it -> the next step, one line
#: (the critical path is read from the stored result's nextpnr report). The account of what
#: was tried is in CHANGELOG.md.
NEXT_STEPS: dict[str, str] = {
    "dot": "`--multipliers dsp` needs a synthesis pass that moves the fabric registers into the "
           "MULT18X18D (yosys has one for Nexus only, lattice_dsp_nexus); until then use "
           "`--multipliers mult18x18d`, which instantiates the block with its own registers",
    "gemm": "the handoff of a context from the leaving block to the entering one (fp4 4 x 4, "
            "seed 1: the last stage's enable `gemm_finish_en` selects the leaving block's "
            "`ctx` between the last stage and the skid register, 2.22 ns of routing; it is "
            "compared with the entering block's, and `free` -> `i.ready` -> the decode "
            "stage's valid: 5 cells, 1.3 ns logic + 5.49 ns routing, 147.3 MHz). The tile's "
            "output ready left the critical path (122.8 MHz before): every lane's "
            "accumulator writes and a run of its stage enables read a copy of their own of "
            "the output quantizers' input enable. The handoff reading lane 0's copy of the last "
            "stage's registers instead (as the forwarding does) placed at 110.2 MHz: the "
            "input's `ctx` then crosses the die to lane 0 (4.78 ns of routing) on its way to "
            "`i.ready`; reading an output copy of its own placed at 131.2 MHz: the input "
            "ring's `ctx` register then sat 57 columns from the tile's control (2.84 ns of "
            "routing, `r_i__payload` -> `i.ready` -> `busy`, 7.62 ns; 250 registers later "
            "than 5.00 ns). Next: an input register stage inside the tile, so that `i.ready` "
            "does not depend on the input payload (the busy check and the handoff on a "
            "registered `ctx`, the lanes' RAM reads from per-lane copies of it); the fp8 2 x 4 "
            "tile not placed (its placer was at iteration 20 after 25 minutes, stopped)",
    "nvfp4-quantizer": "the late list's sections over more stages, or copies of the nets "
                       "that cross the lanes (median of 3 seeds 176.5 MHz, 162.1-178.3, "
                       "depth 63; 19 to 22 registers later than 5.00 ns a seed, each path "
                       "1-2 ns of logic and 4-5 ns of routing): the median's critical path is "
                       "the block's NaN/Inf flag into the 16 lanes' output selects "
                       "(`ealign` -> `output`, 1 cell, 4.80 ns of routing: copies of it a "
                       "few lanes each next); seed 2's r's alignment (`rpos` -> `ralign`, "
                       "5 cells, 4.31 ns of routing); seed 3's two steps of r's divisions "
                       "(`rcp_pround` -> `rcp_sclamp`, 5 cells, 4.87 ns of routing). Done so "
                       "far: `f(R / s)`'s constant-divisor steps as tables (its division on "
                       "a carry chain, 152.1 MHz at seed 1); r's sticky bit from the "
                       "quotient's trailing zeros and its exponent selected by the "
                       "increment's carry (149.2 MHz, seed 1); r's eight divisions late, "
                       "behind a delay line of R, two steps a section, the trailing zeros "
                       "counted before the select and the rounding's decision apart from "
                       "its increment (median 140.4 MHz, 135.1-149.7, and 23,007 FF before: "
                       "the quotients rode every stage from the block's entry, 1,436 "
                       "clock-enable pins later than 5.00 ns); three copies of the scale's "
                       "mantissa bits for r's selects and delay-line parts of 64 bits, each "
                       "with its own pointer (median 166.6 MHz, 162.8-169.3, before: "
                       "`scale` -> `rsel`, 4.79 ns of routing, and the ring's read address "
                       "into four banks, 5.21 ns, among the seeds' critical paths)",
}
