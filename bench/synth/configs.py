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
    + [("dot", ["--format", f, *K]) for f in FORMATS]
    + [("dot", ["--format-a", "fp8_e4m3", "--format-b", "fp4_e2m1", *K]),
       ("dot", ["--format-a", "int8", "--format-b", "fp6_e2m3", *K]),
       ("dot-general", ["--format", "fp8_e4m3", *K])]
    # the lane products in DSPs (MULT18X18D) instead of LUTs: as `*` (yosys maps them,
    # registers stay in the fabric) and instantiated with the blocks' own registers (hw.dsp)
    + [("dot", ["--format", f, "--multipliers", m, *K])
       for m in ("dsp", "mult18x18d") for f in ("fp8_e4m3", "int8")]
)
#: Depths every sweep includes (the Pareto table's latencies; the default and the maximum are
#: added per unit).
SWEEP_LATENCIES = (1, 3, 5, 8)
#: Pipeline-depth sweeps: (unit, args).
SWEEPS = (
    ("quantizer", ["--format", "fp8_e4m3", "--input", "bf16", *K]),
    ("quantizer", ["--format", "fp8_e4m3", "--input", "fp32", *K]),
    ("dequantizer", ["--format", "fp8_e4m3", *K]),
    ("dot", ["--format", "fp8_e4m3", *K]),
    ("dot-general", ["--format", "fp8_e4m3", *K]),
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

#: Where a missed stretch target stands: unit -> the next step (the critical path is the
#: stored deepest sweep point's).  Empty since 2026-11-27: both stretch targets are met.
STRETCH_NEXT_STEPS: dict[str, str] = {}

#: Where a missed curve target stands (unit, latency) -> the next step (the critical path is
#: the stored sweep point's).
#: Also where this project is slower than an anchor at the anchor's latency (unit, latency).
CURVE_NEXT_STEPS: dict[tuple[str, int], str] = {
    ("dot", 0): "the anchors are combinational sums of the 32 products in fixed point (no "
                "block scales, no accumulator input, no normalization or fp32 rounding); the "
                "one-stage MXDot does all of those between its port registers, a path of 152 "
                "cells (2026-11-26, session 38), and at latency 3 (48.4 MHz, session 39) it is "
                "faster than both. A "
                "like-for-like point would need a fixed-point-sum build without the fp32 "
                "result, a different function from the unit's; not planned.",
}

#: Where a sweep's fall of Fmax beyond the seeds' spread stands: (the sweep's label, the
#: stages of the point that fell) -> the next step (the critical path is the point's).
FALL_NEXT_STEPS: dict[tuple[str, int], str] = {
    # the quantizer's falls of session 42 (bf16 10 -> 12, fp32 5 -> 8) were the e_key fan-out
    # to the 32 lanes, now built in copies per group of lanes (docs/quantizer.md, 'The scale
    # path in copies')
    # MXDotGeneral's fall of session 45 (14 -> 18 stages, 154.9 -> 141.7 MHz, seed 1) was the
    # accumulator's forwarding path with decode and factors in one stage (finish -> c's NaN
    # test); since session 46 its decode weighs FORWARD_DELAY more (hw.dot.fused_step), and
    # 14 and 18 stages give 157.9 and 161.3 MHz (medians of seeds 1-3)
}

#: Where a missed target stands: the critical path's stage and the change that would fix it
#: (from nextpnr's report of the stored result; kept with the code that produced it).
NEXT_STEPS = {
    "quantizer": "every quantizer of the list meets 200 MHz, since 2026-11-26 (session 43) at "
                 "228.9-265.4 MHz (medians of seeds 1-3): every stage at three LUT levels or "
                 "fewer, no register's clear on a flip-flop's reset pin (Pipeline extract_reset;"
                 " docs/quantizer.md, 'No logic on the flip-flops' reset pins'), and the scale "
                 "path built per group of 4 lanes from its last register before cmp (Pipeline."
                 "replicate, SCALE_COPIES = 8; 'The scale path in copies'). The worst paths are "
                 "4-6 cells with 2.5-3.3 ns of routing (the input registers -> decode, cmp -> "
                 "shift, norm -> the tree, align -> output). The 250 MHz stretch (bf16 -> "
                 "fp8_e4m3 at 12 stages) is met by the median, 250.6 MHz (241.6-254.4); seeds 1 "
                 "and 3 are bound by the last select's win bits to the 8 e_key copies "
                 "(amax2_cmp -> amax2_r<c>, 3 cells, 0.94 ns logic + 3.06-3.2 ns routing). The "
                 "win register in 2 copies, each feeding 4 e_key copies (trial, session 43), "
                 "placed at 249.3 (243.5-255.3) for +38 LUT4, bound then by the tree's last "
                 "compare (amax1 -> amax2_cmp, 9-10 cells): not kept; past 250 the tree's "
                 "last level needs a cut of its own.",
    "dequantizer": "at the default depth (5 since 2026-11-25: round and output in one stage, "
                   "registered stall) the worst path depends on the nextpnr seed, and every one is"
                   " mostly routing across the port ring of 1,024 output bits: the input register "
                   "through the decode logic (3 cells, 1.2 ns logic + 3.7-4.2 ns routing) or a "
                   "stage's enable register through a LUT to flip-flop resets (1 cell, 0.9 + 4.0 "
                   "ns). The LUT: yosys folds a select of a constant in front of a register (the "
                   "zero lanes' cleared exponent copies, the output's zero, Inf and NaN codes) "
                   "into the flip-flop's synchronous reset, and an ECP5 reset does not wait for "
                   "the clock enable, so the condition is ANDed with the stage enable in a LUT "
                   "that drives LSR. Written as gates instead, the enable goes to CE alone, but "
                   "the conditions move into the D logic: +378 LUT4 (11.7 %) for the decode "
                   "stage's copies, +1,042 (32 %) with the output stage's, against the 5 % area "
                   "bound, so not placed or kept. Since 2026-11-25 the output stage's conditions "
                   "are registered flags (overflow is a test of the binade beside the rounding "
                   "increment, docs/quantizer.md): before, at the default 6 the worst path of seed"
                   " 3 ran from the round register through the overflow test (3 LUTs) to those "
                   "resets (174.2 MHz; the median 192.8, 174.2-195.3, 3,230 LUT4); after, 6 stages"
                   " placed at 193.9 (177.1-194.1) and 5 at 205.6 (186.2-228.1, seeds 1-5), hence "
                   "the default 5. Tried at 6 stages the same day and not kept (medians of seeds "
                   "1-3, without the overflow change unless said): each stage's enable in 4 "
                   "copies, each loading a quarter of its flip-flops (179.6 MHz, 165.2-185.9; the "
                   "worst path round -> output in every seed), with the overflow change 4 copies "
                   "191.4 (182.7-194.1) and 2 copies 187.7 (185.3-207.7); one exponent register "
                   "for all lanes instead of the cleared copies (no resets in the decode stage: "
                   "177.3, 171.7-177.7, round -> output in every seed). Before: nextpnr options "
                   "(2026-11-24): `--freq 220` gives the same placements as 400; "
                   "`--placer-heap-timingweight 30` 181.2 MHz (179.2-181.3); `--router router2 "
                   "--tmg-ripup` had not finished seed 1 after 15 min. Nor do wider LUTs help "
                   "(LUT4-5 181.9 MHz, LUT4-7 188.2, before the overflow change): these paths are "
                   "routes, not LUT levels. Copies of `advance` per slice of 64 flip-flops were "
                   "slower (169.2 MHz median, 159.1-174.9). At 6 stages each of these moved the "
                   "worst path between stages within 5.0-5.7 ns (medians 188-194 MHz); at 5 the "
                   "same kinds of path, routes into and out of the 3,000 cells of the output side "
                   "(1,024 output flip-flops, 1,024 skid flip-flops and their 2:1 muxes, which the"
                   " registered stall needs), set the seeds' spread (186.2-228.1 MHz).",
    "dot": "Since 2026-11-27 (session 45; docs/dot.md, 'Toward 250 MHz') every stage is at "
           "three LUT levels or one carry chain alone, and every LUT dot of the list meets 200 "
           "MHz at 219-254 (fp8_e4m3 252.8 at 22 stages; fp8_e5m2 219.1 at 23, its block sum "
           "in halves). Still missed: the `dsp` rows, fp8_e4m3 154.7 MHz (152.4-157.5), int8 "
           "178.2 (173.6-178.9), bound by the MULT18X18D between fabric registers (factors or "
           "decode -> multiply: 3.46 ns in the block, 2.1-3.1 ns of routes); as below, a tool "
           "that moves the registers into the DSP blocks would do what mult18x18d does. "
           "Before: "
           "State at 2026-11-26, session 39 (medians of seeds 1-3): every LUT build of the "
           "list meets 200 MHz. fp8_e5m2 189.3 -> 202.2 MHz (190.3-207.6) at 21 stages, "
           "7,168 -> 6,689 LUT4: the tree's S - 1 spine starts at a leaf (the last lane's "
           "term enters as ~(-t) = t - 1, so no tree level has a LUT before its chain), the "
           "lane shifts are summed in multiply, and 3-row products get multiply_lo "
           "(docs/dot.md, 'fp8_e5m2 and MXDotGeneral at 200 MHz'); its worst paths are now a "
           "70-bit tree level and the decode stage's enable. The others moved within their "
           "spread (fp8_e4m3 217.9 -> 216.6; fp6_e3m2, one more cycle, 212.1 -> 219.2; "
           "mult18x18d fp8_e4m3 223.4 -> 214.0). The `dsp` rows stay missed: `*` leaves the "
           "registers in the fabric under yosys, so decode -> multiply holds the block's 3.46 "
           "ns and 3.0-3.8 ns of routes (fp8_e4m3 143.0, int8 152.4); a tool that moves "
           "registers into DSP blocks would do what mult18x18d does. Yosys 0.70 has such a "
           "pass for Lattice Nexus only (`lattice_dsp_nexus`, which `synth_lattice` runs "
           "for -family lifcl/lfd2nx; YosysHQ/yosys#5917 and #5929); for ECP5 it maps `*` through "
           "mul2dsp and dsp_map with every register left in the fabric (checked in `help "
           "synth_lattice`, session 40). Past 220 MHz for the "
           "LUT builds: the decode stage's single `advance` net to about 1,000 flip-flops is "
           "a worst path (3.8-4.1 ns of routing), but the stage registers loaded in parts of "
           "256 bits on copies of it (Pipeline enable_load) gave no gain (trial: fp8_e4m3 "
           "215.8 MHz, 213.0-219.3; fp8_e5m2 202.8, 198.5-212.9): the worst paths moved to "
           "other stages at the same 4.6-4.7 ns (lzc -> shift_hi, the window add, the input "
           "registers -> decode). 250 MHz needs 4 ns stages, about three LUT levels each: "
           "every section cut again. bench.synth.levels (session 40) finds nine stages of "
           "fp8_e4m3's 20 at four LUT levels (add -> pick, align_hi -> align_lo, lzc -> "
           "shift_hi, multiply_lo -> multiply, place -> align_hi, round -> finish, shift_hi "
           "-> shift_lo, shift_lo -> round, tree4 -> place) beside the carry chains of the "
           "window add and the tree; as in the quantizer (docs/quantizer.md, 'Toward 250 "
           "MHz'), no stage comes out at three while one needs four. The flow's sync resets "
           "unmapped (no logic on the flip-flops' LSR pins; 1,128 of fp8_e4m3's 6,991 "
           "flip-flops have a LUT there) give 225.0 MHz (221.6-232.4) for 4 % more LUT4 "
           "(trial, session 41; docs/quantizer.md, 'No logic on the flip-flops' reset "
           "pins'). Before: "
           "State at 2026-11-26, session 38 (medians of seeds 1-3): every section of the "
           "fused step is cut to at most about four LUT levels or one carry chain with a LUT "
           "level beside it, what a 5 ns stage holds on ECP5 (docs/dot.md, 'Every section "
           "within 5 ns'): the adder tree one level per section with S - 1 on its spine, the "
           "lane shift in two sections, 4-row LUT products over two, the sticky bits and the "
           "normalization's chunk flags as gated ORs, round a choice of three short chains. "
           "2-4 more cycles (18-20 stages). fp8_e4m3 180.9 -> 217.9 MHz (215.1-224.8), 6,521 "
           "-> 5,321 LUT4; the others of the list met, LUT4 down 10-24 %. Still missed: "
           "fp8_e5m2 161.7 -> 189.3 (189.1-200.8), 9,464 -> 7,168 LUT4, bound by the tree's "
           "first level, product -> tree0 (58-67 cells, 2.8-3.0 ns logic + 2.2-2.3 ns "
           "routing): a 65-bit chain behind the LUT layer that starts S - 1 on the spine "
           "(hw.arith.add_minus_one). Next step: start the spine at a leaf, the negated "
           "term of one lane from that lane's product with the negated wide factor (decode "
           "has the magnitude and its negation, so the negated factor is a mux), so that no "
           "tree level has a LUT before its chain. mult18x18d: fp8_e4m3 191.6 -> 223.4 "
           "(213.9-225.9, 21 stages), int8 221.1 -> 224.0, both met. The `dsp` rows stay "
           "missed: `*` leaves the registers in the fabric under yosys, so decode -> "
           "multiply holds the block's 3.46 ns and 2.5-3.9 ns of routes (fp8_e4m3 144.8, "
           "137.2-161.7; int8 160.1, 135.1-168.7); a tool that moves registers into DSP "
           "blocks would do what mult18x18d does. "
           "Before, at 2026-11-25, session 33: int8 x int8 multiplies "
           "its codes, its own signed factors, with no decoding (its LUT products' first level "
           "of carry chains in decode, one each in multiply_lo and multiply; docs/dot.md): "
           "187.6 -> 212.4 MHz (208.1-214.4), 5,620 -> 3,668 LUT4, 4,335 -> 5,423 FF; int8 x "
           "fp6_e2m3 reads int8's signed significand from its code: 197.3 -> 203.3 "
           "(196.9-205.3). Both met. `--multipliers mult18x18d` instantiates one MULT18X18D "
           "per lane with the block's own input and output registers and gives the routes to "
           "and from the DSP column a stage each (18 stages): fp8_e4m3 191.6 MHz (186.4-192.1)"
           ", 5,853 LUT4; int8 221.1 (217.0-222.7), 1,524 LUT4 (met). The `dsp` rows stay "
           "missed: `*` leaves the registers in the fabric under yosys, so decode -> multiply "
           "holds the block's 3.46 ns and 3.1-3.9 ns of routes (fp8_e4m3 149.7, int8 137.2); "
           "a tool that moves registers into DSP blocks would do what mult18x18d does. Worst "
           "paths now, fp8_e4m3 (LUT 180.9, 177.9-188.4; mult18x18d) and the others near 200: "
           "two adder-tree levels in one stage (sections tree0 and tree2, 35-41 cells, 2.0-2.5 "
           "ns logic + 2.7-3.2 ns routing), |S| in place (t_neg -> place), and for the LUT "
           "fp8_e4m3 also the lane shift (multiply -> product, 5 cells, 1.3 + 4.2 ns). Next "
           "step: not known. Tried and not kept (docs/dot.md): |S| as a choice of S and -S "
           "(179.2 MHz; mult18x18d 187.0), the tree one level per section (18 stages: 189.0, "
           "5,224 LUT4; mult18x18d at 20: 185.4), each tree sum kept as its own chain (184.6 "
           "in 5,201 LUT4, 20 % fewer; mult18x18d 181.0); the first two then bound by pick -> "
           "lzc (5 cells, 1.6 ns logic + 3.7-4.2 ns routing). "
           "fp8_e5m2 unchanged (below). "
           "Since 2026-11-25 the window add ends at its three carry chains and a section "
           "of its own, pick, chooses the sign and magnitude (one more cycle: 16 stages, 17 "
           "for fp8_e5m2 and int8 x int8), and the LUT multiplier adds its partial products "
           "in pairs of carry chains instead of one carry-save tree in LUTs (docs/dot.md). "
           "Medians of seeds 1-3, before -> after: fp8_e4m3 168.5 -> 181.9 MHz (6,951 -> "
           "6,519 LUT4), fp6_e3m2 195.7 -> 212.7, fp6_e2m3 196.7 -> 208.7 (3,645 -> 3,297 "
           "LUT4), fp4_e2m1 200.8 -> 221.1, fp8 x fp4 186.8 -> 201.7, int8 x fp6_e2m3 187.3 "
           "-> 197.3 (4,827 -> 4,289 LUT4), int8 x int8 189.5 -> 187.6 (6,373 -> 5,620 "
           "LUT4), fp8_e5m2 162.8 -> 161.7 (bound by |S| in place and the tree, as before). "
           "fp8_e4m3's worst paths are now routes, not LUT levels: multiply -> product (the "
           "lane shift, 5 cells, 1.3 ns logic + 4.1 ns routing) and pick -> lzc (5 cells, "
           "1.6 + 3.9 ns). int8 x fp6_e2m3 and int8 x int8 are bound by int8's decode "
           "from the input registers (8-10 cells, 2.1-2.2 + 2.9-3.1 ns): the next step "
           "there is the magnitude of the int8 code in a section of its own or in LUTs "
           "beside the sign. The DSP builds, one cycle deeper too, moved with the DSP "
           "column's routes (fp8_e4m3 148.2 -> 138.5 MHz, seeds 133.4-153.4; int8 147.0 -> "
           "144.3): still decode -> multiply, the MULT18X18D's 3.46 ns plus 3.5-3.8 ns of "
           "routes. Before: "
           "MXDot has had the registered stall of the quantizer since 2026-11-24 (each "
           "stage's enable a flip-flop, no gate before its fan-out; docs/dot.md): every "
           "configuration gained but the int8 DSP build (fp8_e4m3 164.2 -> 168.7 MHz, "
           "fp8_e5m2 154.6 -> 160.9, int8 143.7 -> 152.1, fp4_e2m1 188.4 -> 213.4; int8 DSP "
           "145.3 -> 132.2, the same path with 0.6-1.1 ns more routing to and from the DSP "
           "column). Worst paths now: the window add's carry chain (fp8_e4m3 68 cells, "
           "3.2 ns logic + 2.7 ns routing; fp8 x fp4 and fp6_e2m3 likewise); fp8_e5m2, "
           "whose add is split in two halves (section add_lo, 16 stages): |S| in the place "
           "section (t_neg -> place, 63 cells, 3.1 + 3.1 ns); int8, whose lane products are "
           "now summed in two halves of the partial products (section multiply_lo, 16 "
           "stages: 152.1 -> 184.1 MHz, 6,369 LUT4 instead of 7,876): the window add (44 "
           "cells, 2.5 + 2.9 ns); the DSP builds: decode -> multiply (the MULT18X18D's "
           "3.46 ns plus the routes to and from it). Since 2026-11-25 the round section "
           "decides overflow from the exponent beside the increment, and finish no longer "
           "compares the rounded code (a carry chain): fp6_e3m2, whose worst path that was "
           "(round -> finish, 15 cells, 1.9 + 3.4 ns), went from 188.7 MHz (181.0-189.0) to "
           "195.7 (192.7-198.3), now bound by the window add as the others; every dot was "
           "placed again with it, and the others moved within or near their seeds' spread "
           "(fp8_e4m3 168.7 -> 168.5, fp8_e5m2 160.9 -> 162.8, int8 184.1 -> 189.5, "
           "fp4_e2m1 213.4 -> 200.8, int8 x fp6_e2m3 192.6 -> 187.3, int8 DSP 132.2 -> 147.0 "
           "with seeds 137.2-166.9: placement noise on the DSP column's routes). "
           "The add split for fp8_e4m3 too gives 170.9 MHz at 16 stages "
           "against 168.7 at 15, within the seeds' spread, so it is not adopted. Next steps: "
           "the DSP builds, the MULT18X18D's own input or output registers; fp8_e5m2 has "
           "two stages of a 66-70-bit carry chain each at 6.2-6.5 ns, |S| in place and the "
           "tree's last two levels (tree1 -> t_neg, 64 cells, 3.1 + 3.4 ns, the worst path "
           "of the split build before the registered stall), so folding |S| into the window "
           "add alone would leave the tree's: both need a cut (the tree's levels over four "
           "sections, |S| as the add's carry in). Below the deepest setting the balancer "
           "now weighs finish at its measured 5 ns (was 3): int8 x int8 at 15 stages 131.8 "
           "-> 175.1 MHz (171.6-184.7), fp8_e4m3 at 7 stages 90.3 -> 95.8 (docs/dot.md). "
           "Placed with the wider LUT mappings (`--lut-map lut5`, `wide`; 2026-11-24) the dots' "
           "clock moved within the seeds' spread, at 1-7 % more LUT4 (fp8_e4m3 173.0 MHz "
           "with LUT5s, 174.3 up to LUT7): their worst paths are carry chains, which no LUT "
           "mapping shortens.",
    "dot-general": "since 2026-11-26, session 39: MXDot's registered stall, with only last "
                   "blocks waiting at the output (Pipeline.hold_when), and no forwarding of "
                   "a last block's result (o.ready off the accumulator input's path): "
                   "179.6 -> 216.9 MHz (206.3-217.5) at 20 stages, 5,438 -> 5,479 LUT4; "
                   "one run alone 111.4 -> 92.2 ns per block. Before: "
                   "since 2026-11-26 (MXDot's sections cut to 5 ns, docs/dot.md) 179.6 MHz "
                   "(172.2-182.7) at 20 stages against 169.4 at 16, 5,438 LUT4 against "
                   "6,685. One run alone takes 20 cycles per block, 111.4 ns against 94.4; "
                   "interleaved runs, one block per clock, gain 6 %. Its worst paths are now "
                   "its flow control, not the datapath: o.valid -> the decode enable -> the "
                   "busy bits and the hold register -> a stage enable -> the registers' "
                   "LSR (2-3 LUTs, 0.9-1.0 ns logic + 4.6-4.8 ns routing), the fan-out of "
                   "the default flavour's enable gate over 7,000 flip-flops. Next step: the "
                   "registered stall of MXDot for MXDotGeneral, which needs a form of "
                   "hold_when (only last blocks wait at the output) and of the accumulator "
                   "forwarding with a stall one cycle late. Before: "
                   "since 2026-11-25 (MXDot's pick section and pair-sum multiplier, one "
                   "more cycle) 169.4 MHz (168.8-172.0) at 16 stages against 159.3 at 15, "
                   "6,685 LUT4 against 7,009; one run alone takes 94.4 ns per block against "
                   "94.2, within the spread. Worst paths now differ per seed, mostly routes: "
                   "|S| (t_neg -> place, 32 cells, 2.2 ns logic + 3.6 ns routing), the stall "
                   "hold -> align_lo and o.valid -> decode (2-3 cells, 1.0-1.2 + 4.7-4.9 ns). "
                   "Before: the worst path was the window add's carry chain, as in MXDot "
                   "(seeds 1 and "
                   "2: align_lo -> add, 70-71 cells, 3.3 ns logic + 3.0-3.1 ns routing), or "
                   "decode -> multiply (seed 3: 7 cells, 2.0 + 4.2 ns). Until 2026-11-25 every "
                   "seed's was round -> finish -> the accumulator forwarding mux (12-16 cells, "
                   "1.9-2.1 ns logic + 4.2-4.4 ns routing: 160.0 MHz, 155.3-163.1); finish no "
                   "longer compares the rounded code (overflow is decided in round, as in "
                   "MXDot), which took that path off the top at the same median (159.3, "
                   "156.9-162.1), so a registered stall on the output, the next step named "
                   "before, would not raise the clock either: the add is MXDot's bound too. "
                   "The `add` chain's split as in MXDot's "
                   "fp8_e5m2 was placed (16 stages: 164.6 MHz, 162.2-164.8, 7,131 LUT4) and not "
                   "adopted: the accumulator loop is a cycle longer, so one run alone takes "
                   "97.2 ns per block against 93.8.",
}
