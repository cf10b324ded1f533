"""MX dot-product units: one fused block step ``RNE_fp32(c + 2^(sa+sb-254) * sum a_i*b_i)``.

* :class:`MXDot` -- one block pair (formats ``fa`` x ``fb``, block size ``k``) and an fp32
  accumulator input per clock, one fp32 result per block pair (contract section 4).
* :class:`MXDotGeneral` -- the OCP DotGeneral: runs of block pairs chained through the same
  fused step, one rounding per block, in order; interleaved runs keep it busy every clock.

The arithmetic is the bit-level statement of ``golden._kernels.dot_step``:

1. Each element decodes to ``(-1)^neg * sig * 2^(shift + lsb_exp)`` (int8 as sign-magnitude
   "E1M6", so one decoder serves all six formats).  ``sig_a * sig_b << (shift_a + shift_b)``
   is the exact product in units of ``2^(lsb_a + lsb_b)``.
2. The ``k`` products add up exactly in a signed fixed-point sum ``S`` whose width
   (:attr:`DotGeometry.sum_bits`) is derived from the formats' largest finite magnitudes.
3. ``T = S * 2^eT`` and ``c`` are placed exactly in an ``N``-bit window (``N = W + G + 2``,
   ``G = 26``), anchored on whichever of the two reaches higher; bits of the other operand that
   fall below the window fold into a sticky bit.  ``docs/dot.md`` proves this never changes
   the rounded result.
4. The window sum is normalized and rounded once (RNE, subnormals, overflow to Inf).

Special values (NaN scale, NaN/Inf codes, Inf*0, opposite Infs, NaN/Inf ``c``) are summarized
per lane and override the result.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

import golden
from golden.formats import ElementFormat

from .cli import UnitSpec
from .common import RNE, StreamPipeline, leading_zeros, round_to_grid, wire

__all__ = ["DotGeometry", "MXDot", "MXDotGeneral", "operand_layout", "width_table",
           "cli_units"]

#: fp32 bit patterns of the special results (contract section 4).
FP32_QNAN = 0x7FC00000
FP32_INF = 0x7F800000
#: Scale code that means NaN.
SCALE_NAN = 255

#: Guard bits of the alignment window below the lowest bit of T (see docs/dot.md, "exactness").
GUARD = 26

#: The fused step's sections; a pipeline register may follow each (the last always does).
SECTIONS = ("decode_multiply", "sum_low", "sum_high", "classify", "align_add", "normalize",
            "round")

MAX_STAGES = len(SECTIONS)
DEFAULT_STAGES = 4


def _check_int(name, value, lo, hi):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be in {lo}..{hi}, got {value}")
    return value


def _check_block_size(k):
    _check_int("block_size", k, 2, 64)
    if k & (k - 1):
        raise ValueError(f"block_size must be a power of two in 2..64, got {k}")
    return k


def registered_sections(stages: int) -> list[bool]:
    """Which section boundaries hold a pipeline register, for ``stages`` registers.

    The registers are spread evenly over the sections; the last boundary (the output) is
    always registered.
    """
    _check_int("stages", stages, 1, MAX_STAGES)
    n = len(SECTIONS)
    cuts = {round(j * n / stages) for j in range(1, stages + 1)}
    assert len(cuts) == stages and n in cuts
    return [i + 1 in cuts for i in range(n)]


def units_max(fmt: ElementFormat) -> int:
    """Largest element magnitude in units of ``2^lsb_exp`` (int8: 128, from code 0x80)."""
    if fmt.twos_complement:
        return 1 << (fmt.bits - 1)
    return fmt.lsb_units_max


@dataclass(frozen=True)
class DotGeometry:
    """Widths of the fused step for a format pair and block size, derived from the formats.

    Attributes
    ----------
    fmt_a, fmt_b : ElementFormat
    block_size : int
    product_bits : int
        Bits of the largest product magnitude ``units_max(a) * units_max(b)``.
    sum_bits : int
        ``W``: bits of the largest block-sum magnitude ``k * units_max(a) * units_max(b)``;
        the signed sum is ``W + 1`` bits.
    window_bits : int
        ``N = W + GUARD + 2``: the exact alignment window of ``c + T`` (bit 0 is the sticky
        position, bit ``N - 1`` the carry).
    lsb_exp : int
        Exponent of the block sum's unit before scaling (``lsb_a + lsb_b``).
    """

    fmt_a: ElementFormat
    fmt_b: ElementFormat
    block_size: int

    @property
    def product_bits(self) -> int:
        return (units_max(self.fmt_a) * units_max(self.fmt_b)).bit_length()

    @property
    def sum_bits(self) -> int:
        return (self.block_size * units_max(self.fmt_a) * units_max(self.fmt_b)).bit_length()

    @property
    def window_bits(self) -> int:
        return self.sum_bits + GUARD + 2

    @property
    def lsb_exp(self) -> int:
        return self.fmt_a.lsb_exp + self.fmt_b.lsb_exp


def width_table(block_size: int = 32) -> str:
    """Markdown table of ``product bits / signed sum bits / window bits`` for every format
    pair at ``block_size`` (the table of docs/dot.md is this function's output)."""
    names = list(golden.FORMATS)
    lines = [f"| A \\ B (k = {block_size}) | " + " | ".join(names) + " |",
             "|---" * (len(names) + 1) + "|"]
    for a in names:
        cells = []
        for b in names:
            g = DotGeometry(golden.element_format(a), golden.element_format(b), block_size)
            cells.append(f"{g.product_bits}/{g.sum_bits + 1}/{g.window_bits}")
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def operand_layout(fmt: ElementFormat, block_size: int) -> data.StructLayout:
    """One block of one operand: E8M0 scale and ``block_size`` element codes (element i at
    bits ``[bits*i, bits*(i+1))`` of ``codes``)."""
    return data.StructLayout({
        "scale": unsigned(8),
        "codes": data.ArrayLayout(unsigned(fmt.bits), block_size),
    })


# --------------------------------------------------------------------------------------------
# Datapath pieces
# --------------------------------------------------------------------------------------------

def decode_element(m: Module, code, fmt: ElementFormat, name: str) -> dict:
    """Sign-magnitude view of one element code: ``value = (-1)^neg * sig * 2^(shift+lsb_exp)``.

    int8 (two's complement) becomes an 8-bit magnitude 0..128 read as ``E.M`` with ``mbits``
    = 6: its exponent field is 0..2 and 128 decodes as ``64 << 1``, exactly as golden's tables.
    """
    neg = code[fmt.bits - 1]
    if fmt.twos_complement:
        mag = wire(m, Mux(neg, (-code.as_signed()).as_unsigned()[:fmt.bits], code), f"{name}_mag")
        nan = inf = Const(0, 1)
    else:
        mag = wire(m, code[:fmt.bits - 1], f"{name}_mag")
        nan = Const(0, 1)
        for c in fmt.nan_codes:
            nan = nan | (mag == c)
        inf = Const(0, 1)
        for c in fmt.inf_codes:
            inf = inf | (mag == c)
    e = mag[fmt.mbits:]
    normal = e.any()
    sig = Cat(mag[:fmt.mbits], normal)
    shift = Mux(normal, e - 1, 0).as_unsigned()[:len(e)]
    fields = {"neg": neg, "sig": sig, "shift": shift, "zero": ~mag.any(), "nan": nan, "inf": inf}
    return {k: wire(m, v, f"{name}_{k}") for k, v in fields.items()}


def wired(m: Module, tree, name: str):
    """:func:`wire` applied to every leaf of a dict/list nesting of Values (Signals kept)."""
    if isinstance(tree, dict):
        return {k: wired(m, v, f"{name}_{k}") for k, v in tree.items()}
    if isinstance(tree, list):
        return [wired(m, v, f"{name}_{i}") for i, v in enumerate(tree)]
    return tree if isinstance(tree, Signal) else wire(m, tree, name)


def shift_right_sticky(m: Module, value, amount, limit: int, name: str):
    """``value >> amount`` and whether any 1 bit was shifted out; ``amount >= limit`` (``limit``
    = ``len(value)``) shifts everything out.  A log-depth barrel shifter."""
    w = len(value)
    amt = wire(m, Mux(amount >= limit, limit, amount).as_unsigned()[:bits_for(limit)],
               f"{name}_amt")
    sticky = Const(0, 1)
    for b in range(len(amt)):
        step = 1 << b
        if step >= w:
            lost = value.any()
            shifted = Const(0, w)
        else:
            lost = value[:step].any()
            shifted = value >> step
        sticky = wire(m, sticky | (amt[b] & lost), f"{name}_sticky{b}")
        value = wire(m, Mux(amt[b], shifted, value), f"{name}_s{b}")
    return value, sticky


def _tree_levels(terms):
    """Pairwise-sum levels of an adder tree: ``levels[0]`` are the terms, ``levels[-1]`` the
    single sum."""
    levels = [list(terms)]
    while len(levels[-1]) > 1:
        cur = levels[-1]
        levels.append([cur[i] + cur[i + 1] if i + 1 < len(cur) else cur[i]
                       for i in range(0, len(cur), 2)])
    return levels


class _FusedStep:
    """Builds the fused block step into a module, section by section, over a pipeline.

    ``side`` values (context id, last marker, ...) ride along unchanged.
    """

    def __init__(self, geometry: DotGeometry):
        self.g = geometry

    def build(self, m: Module, pipe: StreamPipeline, a, b, c, side: dict):
        g = self.g
        fa, fb, k = g.fmt_a, g.fmt_b, g.block_size
        wp, w = g.product_bits, g.sum_bits
        n = g.window_bits

        def cross(tree, name):  # a section boundary: wires, then maybe a register
            return pipe.boundary(wired(m, tree, name), name)

        # 1. Decode and multiply: exact products in units of 2^(lsb_a + lsb_b).
        terms = []
        lane_nan, lane_pinf, lane_ninf = [], [], []
        for i in range(k):
            x = decode_element(m, a.codes[i], fa, f"a{i}")
            y = decode_element(m, b.codes[i], fb, f"b{i}")
            finite = ~(x["nan"] | x["inf"] | y["nan"] | y["inf"])
            prod = wire(m, Mux(finite, ((x["sig"] * y["sig"]) << (x["shift"] + y["shift"]))[:wp],
                               0), f"prod{i}")
            neg = x["neg"] ^ y["neg"]
            terms.append(wire(m, Mux(neg, -prod, prod).as_signed()[:wp + 1].as_signed(),
                              f"term{i}"))
            # Inf * 0 and NaN codes give NaN; otherwise an Inf operand gives a signed Inf.
            lane_nan.append(x["nan"] | y["nan"] | (x["inf"] & y["zero"]) | (y["inf"] & x["zero"]))
            inf = (x["inf"] | y["inf"]) & ~lane_nan[-1]
            lane_pinf.append(inf & ~neg)
            lane_ninf.append(inf & neg)
        s = cross({
            "terms": terms, "nan": Cat(*lane_nan).any(), "pinf": Cat(*lane_pinf).any(),
            "ninf": Cat(*lane_ninf).any(), "sa": a.scale, "sb": b.scale, "c": c, "side": side,
        }, "decode_multiply")

        # 2./3. Exact block sum: a balanced adder tree, split over one boundary.
        levels = _tree_levels(s["terms"])
        half = max(1, (len(levels) - 1) // 2)
        mid = [v.as_signed()[:w + 1].as_signed() for v in levels[half]]
        s = cross({**s, "terms": mid}, "sum_low")
        total = _tree_levels(s["terms"])[-1][0].as_signed()[:w + 1].as_signed()
        s = cross({**{k_: v for k_, v in s.items() if k_ != "terms"}, "sum": total}, "sum_high")

        # 4. Classify: special values, magnitudes, and where the alignment window sits.
        ssum = s["sum"]
        cbits = s["c"]
        c_neg, c_exp, c_man = cbits[31], cbits[23:31], cbits[:23]
        c_nan = (c_exp == 0xFF) & c_man.any()
        c_inf = (c_exp == 0xFF) & ~c_man.any()
        nan = ((s["sa"] == SCALE_NAN) | (s["sb"] == SCALE_NAN) | s["nan"] | c_nan
               | (s["pinf"] & s["ninf"])
               | (c_inf & Mux(c_neg, s["pinf"], s["ninf"])))
        inf = s["pinf"] | s["ninf"] | c_inf
        inf_neg = s["ninf"] | (c_inf & c_neg)
        t_neg = wire(m, ssum < 0, "t_neg")
        t_mag = Mux(t_neg, -ssum, ssum).as_unsigned()[:w]
        # T = S * 2^eT; c = C * 2^eC with its 24-bit field's top at cTop.
        e_t = s["sa"] + s["sb"] + (g.lsb_exp - 254)
        c_top = Mux(c_exp == 0, -126, c_exp - 127)
        a_t = e_t - GUARD  # frame (exponent of window bit 1) when T anchors the window
        a_c = c_top - (n - 3)  # ... when c anchors it (its top bit at window bit n - 2)
        d = wire(m, (a_t - a_c)[:14].as_signed(), "anchor_diff")
        t_anchors = wire(m, d >= 0, "t_anchors")
        s = cross({
            "nan": nan, "inf": inf, "inf_neg": inf_neg, "c": cbits, "c_neg": c_neg,
            "c_sig": Cat(c_man, c_exp.any()), "t_neg": t_neg, "t_mag": t_mag,
            "frame": Mux(t_anchors, a_t, a_c)[:12].as_signed(),
            "r_c": Mux(t_anchors, d, 0).as_unsigned()[:13],
            "r_t": Mux(t_anchors, 0, -d).as_unsigned()[:13],
            "side": s["side"],
        }, "classify")

        # 5. Align both operands into the window (bits lost below it -> sticky) and add.
        t_win = Cat(Const(0, GUARD + 1), s["t_mag"], Const(0, n - GUARD - 1 - w))
        c_win = Cat(Const(0, n - 25), s["c_sig"], Const(0, 1))
        t_win, t_lost = shift_right_sticky(m, t_win, s["r_t"], n, "align_t")
        c_win, c_lost = shift_right_sticky(m, c_win, s["r_c"], n, "align_c")
        t_win = t_win | t_lost
        c_win = c_win | c_lost
        x = Mux(s["t_neg"], -t_win, t_win).as_signed()
        y = Mux(s["c_neg"], -c_win, c_win).as_signed()
        z = wire(m, (x + y)[:n + 2].as_signed(), "window_sum")
        z_neg = z < 0
        mag = wire(m, Mux(z_neg, -z, z).as_unsigned()[:n], "window_mag")
        s = cross({
            "nan": s["nan"], "inf": s["inf"], "inf_neg": s["inf_neg"], "c": s["c"],
            "t_zero": ~s["t_mag"].any(), "neg": z_neg, "mag": mag, "frame": s["frame"],
            "side": s["side"],
        }, "align_add")

        # 6. Normalize: leading bit of the window sum to the top.
        lz = leading_zeros(m, s["mag"], "lz")
        norm = (s["mag"] << lz)[:n]
        top = (s["frame"] + (n - 2) - lz)[:13].as_signed()  # exponent of norm's top bit
        s = cross({
            "nan": s["nan"], "inf": s["inf"], "inf_neg": s["inf_neg"], "c": s["c"],
            "t_zero": s["t_zero"], "neg": s["neg"], "zero": ~s["mag"].any(), "norm": norm,
            "top": top, "side": s["side"],
        }, "normalize")

        # 7. One rounding (RNE, subnormals kept, overflow to Inf), then the special cases.
        code = wire(m, round_to_grid(m, s["norm"], s["top"], emin=-126, mbits=23, rounding=RNE,
                                     name="round"), "rounded")
        code = Mux(code >= FP32_INF, FP32_INF, code)[:31]
        c_in = s["c"]
        result = Signal(32)
        with m.If(s["nan"]):
            m.d.comb += result.eq(FP32_QNAN)
        with m.Elif(s["inf"]):
            m.d.comb += result.eq(Cat(Const(FP32_INF, 31), s["inf_neg"]))
        with m.Elif(s["t_zero"]):  # T = 0: c passes unchanged, a zero c becomes +0
            m.d.comb += result.eq(Mux(c_in[:31].any(), c_in, 0))
        with m.Elif(s["zero"]):  # exact cancellation: +0
            m.d.comb += result.eq(0)
        with m.Else():
            m.d.comb += result.eq(Cat(code, s["neg"]))
        return cross({"result": result, "side": s["side"]}, "round")


def _check_formats(fmt_a, fmt_b):
    return golden.element_format(fmt_a), golden.element_format(fmt_b)


class MXDot(wiring.Component):
    """Fused MX block dot product: one block pair and an fp32 accumulator in per clock.

    ``o.payload = RNE_fp32(c + 2^(sa+sb-254) * sum_i a_i*b_i)`` with the contract's special
    values (section 4): NaN results are 0x7FC00000, an exact zero is +0.

    Parameters
    ----------
    fmt_a, fmt_b : str or ElementFormat
        Element formats of A and B (any of the six; mixed pairs allowed).
    block_size : int
        Elements per block, a power of two in 2..64.
    stages : int
        Pipeline registers, 1..7 (the latency).  The registers are spread evenly over the
        datapath's sections (see :data:`SECTIONS`).

    Members
    -------
    i : In(stream.Signature(StructLayout))
        ``a``, ``b``: :func:`operand_layout` (scale, codes); ``c``: fp32 bits.
    o : Out(stream.Signature(unsigned(32)))
        fp32 bits of the result.

    Attributes
    ----------
    latency : int
        ``stages``: a block accepted in cycle t leaves in cycle t + latency (without
        backpressure).  Initiation interval 1; lossless under any valid/ready pattern.
    """

    def __init__(self, fmt_a, fmt_b=None, *, block_size: int = 32,
                 stages: int = DEFAULT_STAGES):
        fa, fb = _check_formats(fmt_a, fmt_a if fmt_b is None else fmt_b)
        self.geometry = DotGeometry(fa, fb, _check_block_size(block_size))
        self._registered = registered_sections(stages)
        self.fmt_a, self.fmt_b, self.block_size, self.stages = fa, fb, block_size, stages
        self.latency = stages
        self.module_name = f"mx_dot_{fa.name}_{fb.name}_k{block_size}_s{stages}"
        self.parameters = {"format_a": fa.name, "format_b": fb.name, "block_size": block_size,
                           "stages": stages, "sum_bits": self.geometry.sum_bits + 1,
                           "window_bits": self.geometry.window_bits}
        layout = data.StructLayout({
            "a": operand_layout(fa, block_size),
            "b": operand_layout(fb, block_size),
            "c": unsigned(32),
        })
        super().__init__({
            "i": In(stream.Signature(layout)),
            "o": Out(stream.Signature(unsigned(32))),
        })

    def elaborate(self, platform):
        m = Module()
        pipe = StreamPipeline(m, self._registered, name="dot")
        p = self.i.payload
        out = _FusedStep(self.geometry).build(m, pipe, p.a, p.b, p.c, {})
        m.d.comb += self.o.payload.eq(out["result"])
        pipe.connect(i_valid=self.i.valid, i_ready=self.i.ready, o_valid=self.o.valid,
                     o_ready=self.o.ready)
        return m


class MXDotGeneral(wiring.Component):
    """MX DotGeneral: runs of block pairs chained through the fused step, one rounding per
    block, in order (contract section 4), with interleaved accumulation contexts.

    Each input beat is one block pair of run ``ctx``.  ``first`` starts a run from ``c0``
    (``c0`` is ignored otherwise); blocks of one run must arrive in order; ``last`` ends the run
    and emits ``acc`` with the run's ``ctx``.  A single-block run sets both ``first`` and
    ``last``.  Several runs may be open at once, one per context.

    A block may only enter when its context has no block still in the pipeline (a per-context
    busy bit; the result of a block leaving the pipeline is forwarded to a block of the same
    context entering in that cycle).  Hence:

    * one run alone: one block every ``latency`` cycles;
    * ``>= latency`` runs interleaved round-robin: one block per clock.

    Parameters
    ----------
    fmt_a, fmt_b : str or ElementFormat
    block_size : int
        A power of two in 2..64.
    contexts : int
        Accumulation contexts (simultaneously open runs), a power of two in 1..64.
    stages : int
        Pipeline registers of the fused step, 1..7 (= ``latency``).

    Members
    -------
    i : In(stream.Signature(StructLayout))
        ``a``, ``b``: :func:`operand_layout`; ``c0``: fp32 initial accumulator (used with
        ``first``); ``first``, ``last``: run markers; ``ctx``: context id.
    o : Out(stream.Signature(StructLayout))
        ``result``: fp32 bits; ``ctx``: the run's context.  One beat per run (on ``last``).

    Attributes
    ----------
    latency : int
        ``stages``: a run's ``last`` block accepted in cycle t is presented in cycle
        t + latency (without backpressure).
    """

    def __init__(self, fmt_a, fmt_b=None, *, block_size: int = 32, contexts: int = 4,
                 stages: int = DEFAULT_STAGES):
        fa, fb = _check_formats(fmt_a, fmt_a if fmt_b is None else fmt_b)
        self.geometry = DotGeometry(fa, fb, _check_block_size(block_size))
        self._registered = registered_sections(stages)
        _check_int("contexts", contexts, 1, 64)
        if contexts & (contexts - 1):
            raise ValueError(f"contexts must be a power of two in 1..64, got {contexts}")
        self.fmt_a, self.fmt_b, self.block_size = fa, fb, block_size
        self.stages, self.contexts = stages, contexts
        self.ctx_bits = (contexts - 1).bit_length()
        self.latency = stages
        self.module_name = (f"mx_dot_general_{fa.name}_{fb.name}_k{block_size}"
                            f"_c{contexts}_s{stages}")
        self.parameters = {"format_a": fa.name, "format_b": fb.name, "block_size": block_size,
                           "contexts": contexts, "stages": stages,
                           "sum_bits": self.geometry.sum_bits + 1,
                           "window_bits": self.geometry.window_bits}
        layout = data.StructLayout({
            "a": operand_layout(fa, block_size),
            "b": operand_layout(fb, block_size),
            "c0": unsigned(32),
            "first": unsigned(1),
            "last": unsigned(1),
            "ctx": unsigned(self.ctx_bits),
        })
        out_layout = data.StructLayout({"result": unsigned(32), "ctx": unsigned(self.ctx_bits)})
        super().__init__({
            "i": In(stream.Signature(layout)),
            "o": Out(stream.Signature(out_layout)),
        })

    def elaborate(self, platform):
        m = Module()
        nctx = self.contexts
        p = self.i.payload
        pipe = StreamPipeline(m, self._registered, name="dotg")

        acc = Array(Signal(32, name=f"acc{j}", reset_less=True) for j in range(nctx))
        busy = Signal(nctx)
        # The block leaving the fused step this cycle (its result is the context's new acc).
        leave = Signal()
        leave_ctx = Signal(self.ctx_bits)
        leave_result = Signal(32)

        ctx = p.ctx if self.ctx_bits else Const(0, 1)
        onehot = Const(1, nctx) << ctx if self.ctx_bits else Const(1, 1)
        handoff = leave & (leave_ctx == p.ctx) if self.ctx_bits else leave
        free = ~(busy & onehot).any() | handoff
        current = Mux(handoff, leave_result, acc[ctx] if self.ctx_bits else acc[0])
        c = Mux(p.first, p.c0, current)

        out = _FusedStep(self.geometry).build(
            m, pipe, p.a, p.b, c, {"ctx": p.ctx, "last": p.last})
        pipe_ready, pipe_valid = Signal(), Signal()
        # Non-last blocks leave into the accumulator without waiting for the output.
        pipe.connect(i_valid=self.i.valid & free, i_ready=pipe_ready, o_valid=pipe_valid,
                     o_ready=~out["side"]["last"] | self.o.ready)
        m.d.comb += [
            self.i.ready.eq(pipe_ready & free),
            self.o.valid.eq(pipe_valid & out["side"]["last"]),
            self.o.payload.result.eq(out["result"]),
            leave.eq(pipe_valid & (~out["side"]["last"] | self.o.ready)),
            leave_result.eq(out["result"]),
        ]
        if self.ctx_bits:
            m.d.comb += [self.o.payload.ctx.eq(out["side"]["ctx"]),
                         leave_ctx.eq(out["side"]["ctx"])]
        leave_onehot = (Const(1, nctx) << leave_ctx) if self.ctx_bits else Const(1, 1)
        enter = self.i.valid & self.i.ready
        m.d.sync += busy.eq((busy & ~Mux(leave, leave_onehot, 0)[:nctx])
                            | Mux(enter, onehot, 0)[:nctx])
        for j in range(nctx):  # one write enable per context (no partial case statement)
            with m.If(leave & (leave_ctx == j if self.ctx_bits else 1)):
                m.d.sync += acc[j].eq(leave_result)
        return m


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------

def _add_common(p: argparse.ArgumentParser):
    p.add_argument("--format-a", help="element format of A")
    p.add_argument("--format-b", help="element format of B")
    p.add_argument("--format", help="element format of both A and B")
    p.add_argument("--block-size", type=int, default=32, help="elements per block (2..64)")
    p.add_argument("--stages", type=int, default=DEFAULT_STAGES,
                   help=f"pipeline registers = latency (1..{MAX_STAGES})")


def _formats(args):
    fa, fb = args.format_a or args.format, args.format_b or args.format
    if args.format and ((args.format_a and args.format_a != args.format)
                        or (args.format_b and args.format_b != args.format)):
        raise ValueError("--format sets both formats; do not combine it with a different "
                         "--format-a/--format-b")
    if fa is None or fb is None:
        raise ValueError("give --format, or both --format-a and --format-b")
    return fa, fb


def _build_dot(args):
    fa, fb = _formats(args)
    return MXDot(fa, fb, block_size=args.block_size, stages=args.stages)


def _add_general(p):
    _add_common(p)
    p.add_argument("--contexts", type=int, default=4,
                   help="accumulation contexts (power of two, 1..64)")


def _build_general(args):
    fa, fb = _formats(args)
    return MXDotGeneral(fa, fb, block_size=args.block_size, contexts=args.contexts,
                        stages=args.stages)


def cli_units() -> list[UnitSpec]:
    same = [["--format", f, "--block-size", "32"] for f in golden.FORMATS]
    mixed = [["--format-a", "fp8_e4m3", "--format-b", "fp4_e2m1", "--block-size", "32"],
             ["--format-a", "int8", "--format-b", "fp6_e2m3", "--block-size", "32"]]
    return [
        UnitSpec("dot", "fused MX block dot product: RNE_fp32(c + sum a*b) per block pair",
                 _add_common, _build_dot, same + mixed),
        UnitSpec("dot-general", "MX DotGeneral: runs of blocks chained, interleaved contexts",
                 _add_general, _build_general,
                 [["--format", "fp8_e4m3", "--block-size", "32"]]),
    ]
