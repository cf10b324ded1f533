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
4. The window sum is normalized (the shift clamped so that subnormal results come out
   denormalized) and rounded once at a fixed place (RNE, overflow to Inf).

Special values (NaN scale, NaN/Inf codes, Inf*0, opposite Infs, NaN/Inf ``c``) are summarized
per lane and override the result.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

import golden
from golden.formats import FP32, SCALE_NAN, ElementFormat

from .cli import UnitSpec
from .common import leading_zeros, register_tree, wire

__all__ = ["DotGeometry", "MXDot", "MXDotGeneral", "operand_layout", "width_table",
           "cli_units"]

#: fp32 bit patterns of the special results (contract section 4).
FP32_QNAN = FP32.qnan_bits
FP32_INF = FP32.inf_bits

#: Guard bits of the alignment window below the lowest bit of T (see docs/dot.md, "exactness").
GUARD = 26

#: The fused step's sections, in datapath order; a pipeline register may follow each (the last
#: always has one), see :func:`registered_sections`.
SECTIONS = ("decode", "multiply", "product", "tree0", "tree1", "tree2", "place", "align_hi",
            "align_lo", "add", "lzc", "shift_hi", "shift_lo", "round", "finish")

#: Estimated delay of each section on ECP5 (ns, k = 32 fp8 x fp8, from nextpnr critical
#: paths; decode timed in context, from the input port registers); :func:`registered_sections`
#: balances the pipeline stages with these weights.
SECTION_DELAY = {"decode": 6, "multiply": 5, "product": 5, "tree0": 5, "tree1": 3, "tree2": 5,
                 "place": 5, "align_hi": 4, "align_lo": 4, "add": 6, "lzc": 5, "shift_hi": 5,
                 "shift_lo": 5, "round": 4, "finish": 3}

MAX_STAGES = len(SECTIONS)
DEFAULT_STAGES = 15


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

    The last boundary (the output) is always registered.  The others are chosen so that the
    largest summed :data:`SECTION_DELAY` between two registers is as small as possible (ties:
    the earliest such placement); ``stages = len(SECTIONS)`` registers every boundary.
    """
    _check_int("stages", stages, 1, MAX_STAGES)
    wts = [SECTION_DELAY[s] for s in SECTIONS]
    n = len(wts)
    # best[j][i]: (worst stage delay, cut list) covering sections [0, i) with j registers,
    # the last one after section i - 1.
    best = [{0: (0, ())}] + [{} for _ in range(stages)]
    for j in range(1, stages + 1):
        for i in range(j, n + 1):
            cands = [(max(cost, sum(wts[p:i])), cuts + (i,))
                     for p, (cost, cuts) in best[j - 1].items() if p < i]
            if cands:
                best[j][i] = min(cands)
    cuts = set(best[stages][n][1])
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


def partial_product_sum(m: Module, x, y, name: str):
    """``x * y`` for a signed ``x`` and an unsigned ``y`` (``len(x) + len(y)`` bits, signed) as
    one sum of the shifted partial products ``y_j * 2^j * x``, one per bit of ``y``.

    Not ``*``: yosys maps every multiply of 2 bits or more to a MULT18X18D on ECP5, whose round
    trip through the DSP column is slower than these few bits (significands are 4 bits for
    fp8 e4m3, at most 7 for int8); the sum becomes a carry-save tree in LUTs and one carry chain.
    """
    x = Value.cast(x).as_signed()
    total = Mux(y[0], x, 0)
    for j in range(1, len(y)):
        total = total + Mux(y[j], x << j, 0)
    return wire(m, total.as_signed()[:len(x) + len(y)].as_signed(), name)


def shift_right_sticky(m: Module, value, amount, bits, name: str):
    """``value >> (amount & mask)`` for the amount bits in ``bits`` (a range of bit indices),
    and whether any 1 bit was shifted out: one log-shifter level per amount bit (a split
    shifter is two calls, lower bits after the higher ones)."""
    w = len(value)
    sticky = Const(0, 1)
    for b in reversed(bits):
        step = 1 << b
        if step >= w:
            lost = value.any()
            shifted = Const(0, w)
        else:
            lost = value[:step].any()
            shifted = value >> step
        sticky = wire(m, sticky | (amount[b] & lost), f"{name}_sticky{b}")
        value = wire(m, Mux(amount[b], shifted, value), f"{name}_s{b}")
    return value, sticky


class StallPipeline:
    """A valid/ready pipeline with registers at a chosen subset of its section boundaries,
    all advancing together (one enable condition).

    Same interface as :class:`hw.common.StreamPipeline` (:meth:`boundary`, :meth:`connect`,
    ``latency``), different flow control: every register loads when ``en = ~hold | o_ready``
    (``hold``: a block waits at the output; see :meth:`hold_when`), and ``i_ready = en``.  So
    the enable is one gate from a register and the output's ``ready``, however deep the
    pipeline (a per-stage ready chain would be a combinational path through every stage).
    Blocks are never lost or duplicated and the throughput is one block per clock while the
    output is ready; under backpressure, bubbles inside the pipeline wait with the blocks (they
    are not squeezed out).  Synchronous reset clears the valid and hold bits only; data
    registers are reset-less.

    The enable reaches every flip-flop of the unit.  As one net from ``o_ready`` it was the
    critical path in context, so each registered boundary gets its own copy of the hold
    register and its own enable gate: one net per stage, each to that stage's registers.
    The copies see the same input under the same (equal) enable, so they always agree.
    """

    def __init__(self, m: Module, registered, *, name: str = "p"):
        self._m = m
        self._registered = [bool(r) for r in registered]
        if not self._registered or not self._registered[-1]:
            raise ValueError("the last pipeline boundary must be registered")
        self._name = name
        self._index = 0
        self._valids = []
        self._ens = []  # one enable per registered boundary, all equal
        self._holds = []  # one hold register per enable, all equal
        self._hold_flag = Const(1, 1)
        self._in_valid = Signal(name=f"{name}_in_valid")
        self.latency = sum(self._registered)

    @property
    def valid(self):
        """Valid bit of the values at the current boundary (before it is crossed)."""
        return self._valids[-1] if self._valids else self._in_valid

    @property
    def hold(self):
        """A valid block that waits for ``o_ready`` is at the output (a register)."""
        return self._holds[0]

    def hold_when(self, flag):
        """Only valid blocks with ``flag`` (a Value at the last boundary, before it is crossed)
        wait for ``o_ready`` at the output; by default every valid block does.  MXDotGeneral
        passes "last": blocks that produce no output never wait."""
        self._hold_flag = flag

    def boundary(self, tree, name: str | None = None):
        """Pass ``tree`` (a dict/list nesting of Values) over the next boundary; returns the
        same structure, registered or not."""
        if self._index >= len(self._registered):
            raise ValueError("more boundaries than declared")
        reg = self._registered[self._index]
        tag = name or str(self._index)
        self._index += 1
        if not reg:
            return tree
        en = Signal(name=f"{self._name}_{tag}_en")
        self._ens.append(en)
        valid = Signal(name=f"{self._name}_{tag}_valid")
        prev = self.valid
        with self._m.If(en):
            self._m.d.sync += valid.eq(prev)
        if self._index == len(self._registered):  # the output: the hold registers
            for j, en_j in enumerate(self._ens):
                hold = Signal(name=f"{self._name}_hold{j}")
                with self._m.If(en_j):
                    self._m.d.sync += hold.eq(prev & self._hold_flag)
                self._holds.append(hold)
        self._valids.append(valid)
        return register_tree(self._m, tree, en, f"{self._name}_{tag}")

    def connect(self, *, i_valid, i_ready, o_valid, o_ready):
        """Build the handshake: drive ``i_ready``, ``o_valid`` and the enables."""
        if self._index != len(self._registered):
            raise ValueError(f"{len(self._registered)} boundaries declared, "
                             f"{self._index} used")
        m = self._m
        m.d.comb += [en.eq(~hold | o_ready) for en, hold in zip(self._ens, self._holds,
                                                                 strict=True)]
        m.d.comb += [self._in_valid.eq(i_valid), i_ready.eq(self._ens[0]),
                     o_valid.eq(self._valids[-1])]


class _FusedStep:
    """Builds the fused block step into a module, section by section, over a pipeline.

    ``side`` values (context id, last marker, ...) ride along unchanged.
    """

    def __init__(self, geometry: DotGeometry):
        self.g = geometry

    def build(self, m: Module, pipe: StallPipeline, a, b, c, side: dict):
        g = self.g
        fa, fb, k = g.fmt_a, g.fmt_b, g.block_size
        wp, w = g.product_bits, g.sum_bits
        n = g.window_bits
        nb = bits_for(n)  # bits of a shift amount 0..n
        np_ = -(-n // 8) * 8  # the window padded below to whole 8-bit chunks for normalizing
        pad, nc = np_ - n, np_ // 8

        def cross(tree, name):  # a section boundary: wires, then maybe a register
            return pipe.boundary(wired(m, tree, name), name)

        # 1. decode: element fields; per lane the product's two factors (zero in a lane holding
        #    a NaN or Inf: it adds nothing to S, the special result overrides the sum), its
        #    shift, and the lane's specials; from the scales: the frame when T anchors.  c
        #    passes undecoded (in MXDotGeneral it comes from the accumulator forwarding path).
        lanes = []
        for i in range(k):
            x = decode_element(m, a.codes[i], fa, f"a{i}")
            y = decode_element(m, b.codes[i], fb, f"b{i}")
            neg = x["neg"] ^ y["neg"]
            # Inf * 0 and NaN codes give NaN; otherwise an Inf operand gives a signed Inf.
            nan = x["nan"] | y["nan"] | (x["inf"] & y["zero"]) | (y["inf"] & x["zero"])
            inf = (x["inf"] | y["inf"]) & ~nan
            finite = ~(x["nan"] | x["inf"] | y["nan"] | y["inf"])
            # The product's factors: the wider significand carries the lane's sign (negated
            # here, so the multiply is one sum), the narrower one gives the partial products.
            wide, narrow = x["sig"], y["sig"]
            if len(narrow) > len(wide):
                wide, narrow = narrow, wide
            wide = Mux(finite, Cat(wide, Const(0, 1)).as_signed(), 0)
            lanes.append({"wide": Mux(neg, -wide, wide)[:len(wide)].as_signed(),
                          "narrow": narrow, "shift": x["shift"] + y["shift"], "nan": nan,
                          "pinf": inf & ~neg, "ninf": inf & neg})
        e_t = a.scale + b.scale + (g.lsb_exp - 254)
        s = cross({
            "lanes": lanes,
            "scale_nan": (a.scale == SCALE_NAN) | (b.scale == SCALE_NAN), "c": c,
            "a_t": (e_t - GUARD)[:12].as_signed(),  # frame when T anchors: T's lsb at bit G+1
            "side": side,
        }, "decode")

        # 2. multiply: the signed lane products +-sig_a*sig_b (not yet shifted), in LUTs and
        #    carry chains (see partial_product_sum); the lane specials reduced over the block.
        lanes = s["lanes"]
        prods = []
        for i, ln in enumerate(lanes):
            prods.append(partial_product_sum(m, ln["wide"], ln["narrow"], f"sig_prod{i}"))
        s = cross({
            "prods": prods, "shifts": [ln["shift"] for ln in lanes],
            "nan": Cat(*(ln["nan"] for ln in lanes)).any() | s["scale_nan"],
            "lpinf": Cat(*(ln["pinf"] for ln in lanes)),
            "lninf": Cat(*(ln["ninf"] for ln in lanes)),
            "c": s["c"], "a_t": s["a_t"], "side": s["side"],
        }, "multiply")

        # 3. product: exact signed lane terms in units of 2^(lsb_a + lsb_b); c's fields.
        terms = []
        for i in range(k):
            # The signed significand product, shifted (sign-extended) into place.
            terms.append((s["prods"][i] << s["shifts"][i]).as_signed()[:wp + 1].as_signed())
        pinf, ninf = s["lpinf"].any(), s["lninf"].any()
        cbits = s["c"]
        c_neg, c_exp, c_man = cbits[31], cbits[23:31], cbits[:23]
        c_nan = (c_exp == 0xFF) & c_man.any()
        c_inf = (c_exp == 0xFF) & ~c_man.any()
        nan = s["nan"] | c_nan | (pinf & ninf) | (c_inf & Mux(c_neg, pinf, ninf))
        # c = C * 2^eC with its 24-bit field's top at cTop (-126 for exponent field 0); the
        # frame when c anchors puts that top at window bit n-2: aC = cTop - (n-3).
        a_c = Mux(c_exp == 0, -126 - (n - 3), c_exp - (127 + n - 3))[:12].as_signed()
        s = cross({
            "terms": terms, "nan": nan, "inf": pinf | ninf | c_inf,
            "inf_neg": ninf | (c_inf & c_neg), "c": cbits,
            "a_t": s["a_t"], "a_c": a_c, "side": s["side"],
        }, "product")

        # 4.-6. Exact block sum: a balanced adder tree, its levels spread over three sections.
        # Alongside: the shift distance |aT - aC| (clamped to n) and the frame F = max(aT, aC),
        # from which lim = F + n + 124: normalization may shift left at most this far (the
        # result's top bit then weighs 2^-126; smaller results are subnormal, docs/dot.md).
        depth = (k - 1).bit_length()
        for j in range(3):
            lo, hi = round(j * depth / 3), round((j + 1) * depth / 3)
            level = s["terms"]
            for _ in range(lo, hi):
                level = [(level[i] + level[i + 1]).as_signed() if i + 1 < len(level)
                         else level[i] for i in range(0, len(level), 2)]
            level = [v.as_signed()[:w + 1].as_signed() for v in level]
            if j == 0:
                d = wire(m, (s["a_t"] - s["a_c"])[:13].as_signed(), "anchor_diff")
                s = {**s, "t_anchors": d >= 0, "d": d.as_unsigned()[:12],
                     "d_back": (s["a_c"] - s["a_t"])[:12]}
            elif j == 1:
                ta = s["t_anchors"]
                rest = {k_: v_ for k_, v_ in s.items() if k_ not in ("d", "d_back", "a_t", "a_c")}
                s = {**rest, "dist": Mux(ta, s["d"], s["d_back"]),
                     "frame": Mux(ta, s["a_t"], s["a_c"])[:12].as_signed()}
            else:
                rest = {k_: v_ for k_, v_ in s.items() if k_ != "frame"}
                s = {**rest, "dist": Mux(s["dist"] >= n, n, s["dist"])[:nb],
                     "lim": (s["frame"] + (n + 124))[:12].as_signed()}
            s = cross({**s, "terms": level}, f"tree{j}")
        ssum = s["terms"][0]

        # 7. place: |S|; the anchoring operand U and the one to shift, V, in the window.
        t_neg = wire(m, ssum < 0, "t_neg")
        t_mag = wire(m, ((ssum ^ t_neg.replicate(w + 1)) + t_neg)[:w], "t_mag")  # |S|
        c_sig = Cat(s["c"][:23], s["c"][23:31].any())
        t_win = wire(m, Cat(Const(0, GUARD + 1), t_mag, Const(0, n - GUARD - 1 - w)), "t_win")
        c_win = wire(m, Cat(Const(0, n - 25), c_sig, Const(0, 1)), "c_win")
        ta = s["t_anchors"]
        rest = {k_: v for k_, v in s.items() if k_ not in ("terms", "t_anchors")}
        s = cross({
            **rest, "t_zero": ~ssum.any(), "lim_small": s["lim"] < n,
            "u": Mux(ta, t_win, c_win), "v": Mux(ta, c_win, t_win),
            "u_neg": Mux(ta, t_neg, s["c"][31]), "v_neg": Mux(ta, s["c"][31], t_neg),
        }, "place")

        # 8./9. align: V >> dist, bits shifted out of the window folded into a sticky bit.
        hi_bits = range(nb // 2, nb)
        v, lost = shift_right_sticky(m, s["v"], s["dist"], hi_bits, "align_hi")
        s = cross({**s, "v": v, "lost": lost}, "align_hi")
        v, lost = shift_right_sticky(m, s["v"], s["dist"], range(nb // 2), "align_lo")
        v = Cat(v[0] | lost | s["lost"], v[1:])
        rest = {k_: v_ for k_, v_ in s.items() if k_ not in ("v", "lost", "dist", "lim_small")}
        s = cross({
            **rest, "v": v,
            "marker": Mux(s["lim_small"], Const(1 << (n - 1), n) >> s["lim"][:nb], 0),
        }, "align_lo")

        # 10. add: the window sum U +- V' as sign and magnitude (both < 2^(n-1): no overflow).
        u, v = s["u"], s["v"]
        same = wire(m, s["u_neg"] == s["v_neg"], "same_sign")
        total = wire(m, u + v, "win_total")
        diff = wire(m, u - v, "win_diff")  # n+1 bits: bit n set iff V' > U
        back = wire(m, v - u, "win_back")
        v_wins = ~same & diff[n]
        rest = {k_: v_ for k_, v_ in s.items() if k_ not in ("u", "v", "u_neg", "v_neg")}
        s = cross({
            **rest, "neg": Mux(v_wins, s["v_neg"], s["u_neg"]),
            "mag": Mux(same, total, Mux(diff[n], back, diff))[:n],
        }, "add")

        # 11. lzc: the normalization shift s = min(leading zeros, lim) = leading zeros of
        #     mag | marker (a one at bit n-1-lim), coarse: leading all-zero 8-bit chunks hz
        #     (mag padded below to np bits), with each chunk's own leading-zero count.
        mp = Cat(Const(0, pad), s["mag"] | s["marker"])
        nz, clz = [], []
        for j in range(nc):
            chunk = wire(m, mp[np_ - 8 * (j + 1):np_ - 8 * j], f"chunk{j}")
            nz.append(chunk.any())
            clz.append(leading_zeros(m, chunk, f"clz{j}")[:3])
        hz = Const(nc - 1, 4)
        for j in reversed(range(nc - 1)):
            hz = Mux(nz[j], j, hz)
        rest = {k_: v_ for k_, v_ in s.items() if k_ not in ("mag", "marker")}
        s = cross({**rest, "zero": ~s["mag"].any(), "mag": Cat(Const(0, pad), s["mag"]),
                   "hz": hz, "clz": clz}, "lzc")

        # 12. shift_hi: shift by 8*hz; pick the fine count of the leading chunk.
        coarse = Cat(Const(0, 3), s["hz"])
        rest = {k_: v_ for k_, v_ in s.items() if k_ not in ("mag", "hz", "clz", "lim")}
        s = cross({
            **rest, "mag": (s["mag"] << coarse)[:np_],
            "fine": Array([*s["clz"], *[Const(0, 3)] * (16 - nc)])[s["hz"]],  # a full case
            "lim": (s["lim"] - coarse)[:12].as_signed(),
        }, "shift_hi")

        # 13. shift_lo: shift by the fine count; round bit, sticky, exponent field e0 = lim - s
        #     (top + 126: 0 for a subnormal result, whose leading bit stays below the top).
        p1, fine = s["mag"], s["fine"]
        norm = wire(m, (p1 << fine)[:np_], "norm")
        sticky = p1[:np_ - 32].any() | (p1[np_ - 32:np_ - 25] & (Const(0x7F, 7) >> fine)).any()
        rest = {k_: v_ for k_, v_ in s.items() if k_ not in ("mag", "fine", "lim")}
        s = cross({
            **rest, "sig": norm[np_ - 24:], "guard": norm[np_ - 25], "sticky": sticky,
            "e0": (s["lim"] - fine)[:11],
        }, "shift_lo")

        # 14. round: RNE at the fixed place; a carry out of the significand bumps the exponent.
        up = s["guard"] & (s["sticky"] | s["sig"][0])
        code = wire(m, Cat(Const(0, 23), s["e0"]) + s["sig"] + up, "rounded")
        rest = {k_: v_ for k_, v_ in s.items() if k_ not in ("sig", "e0", "guard", "sticky")}
        s = cross({**rest, "code": code}, "round")

        # 15. finish: overflow to Inf, then the special cases in order.
        code = s["code"]
        code = Mux(code[23:] >= 0xFF, FP32_INF, code[:31])[:31]
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
        if "last" in s["side"]:  # MXDotGeneral: only a last block waits for the output
            pipe.hold_when(s["side"]["last"])
        return cross({"result": result, "side": s["side"]}, "finish")


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
        Pipeline registers, 1..15 (the latency; default 15, every section boundary).  They
        are placed to balance the sections' estimated delays (:func:`registered_sections`).

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
        backpressure).  Initiation interval 1; lossless under any valid/ready pattern (all
        registers share one enable, see :class:`StallPipeline`).
    """

    def __init__(self, fmt_a, fmt_b=None, *, block_size: int = 32,
                 stages: int = DEFAULT_STAGES):
        fa, fb = _check_formats(fmt_a, fmt_a if fmt_b is None else fmt_b)
        self.geometry = DotGeometry(fa, fb, _check_block_size(block_size))
        self._registered = registered_sections(stages)
        self.fmt_a, self.fmt_b, self.block_size, self.stages = fa, fb, block_size, stages
        self.latency = stages
        self.max_stages = MAX_STAGES  # the deepest pipeline (bench.synth sweeps 1..max_stages)
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
        pipe = StallPipeline(m, self._registered, name="dot")
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
        Pipeline registers of the fused step, 1..15 (= ``latency``; default 15).

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
        self.max_stages = MAX_STAGES
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
        pipe = StallPipeline(m, self._registered, name="dotg")

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

        side = {"ctx": p.ctx, "last": p.last} if self.ctx_bits else {"last": p.last}
        out = _FusedStep(self.geometry).build(m, pipe, p.a, p.b, c, side)
        pipe_ready, pipe_valid = Signal(), Signal()
        # Non-last blocks leave into the accumulator without waiting for the output.
        pipe.connect(i_valid=self.i.valid & free, i_ready=pipe_ready, o_valid=pipe_valid,
                     o_ready=self.o.ready)
        m.d.comb += [
            self.i.ready.eq(pipe_ready & free),
            self.o.valid.eq(pipe.hold),  # "a valid last block", one register
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
