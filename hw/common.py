"""Shared RTL building blocks of the MX units: pipelining, leading-zero count, rounding.

Everything here is format-agnostic: the element formats enter only as integers (``emin``,
``mbits``, ...) taken from :class:`golden.ElementFormat` / :class:`golden.FloatFormat`, so one
piece of logic serves every format.  The helpers are stable API; the quantizer, the
dequantizer and the dot unit build on them.

* :class:`StreamPipeline` -- a valid/ready pipeline whose register boundaries are chosen at
  elaboration time (the ``stages`` parameter of every unit).
* :func:`leading_zeros` -- a log-depth leading-zero count (normalizing subnormals).
* :func:`round_to_grid` -- one exact rounding of a normalized significand onto an IEEE-style
  grid (``E.M``, subnormals included) under RNE, RNA, RTZ or stochastic rounding.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed, unsigned
from amaranth.utils import bits_for, ceil_log2

from golden.formats import ROUNDING_IDS, SCALE_MODE_IDS

__all__ = ["StreamPipeline", "leading_zeros", "round_to_grid", "align_to_grid", "round_aligned",
           "RNE", "RNA", "RTZ",
           "STOCHASTIC", "ROUNDING_IDS", "FLOOR", "RCEIL", "SCALE_MODE_IDS", "wire", "smax",
           "clamp", "reduce_significand", "max_tree_levels",
           "round_up", "less_than_const", "greater_than", "register_tree"]

#: Rounding-mode and scale-mode ids of runtime fields (defined in golden.formats).
RNE, RNA, RTZ, STOCHASTIC = (ROUNDING_IDS[r] for r in ("rne", "rna", "rtz", "stochastic"))
FLOOR, RCEIL = SCALE_MODE_IDS["floor"], SCALE_MODE_IDS["rceil"]


def wire(m: Module, value, name: str) -> Signal:
    """``value`` as a named combinational signal.

    Amaranth expressions are trees: a Value used twice is converted twice.  Every helper here
    names a value it reuses, so the generated netlist grows linearly (not exponentially) with
    nesting, and the names show up in waveforms.
    """
    value = Value.cast(value)
    sig = Signal(value.shape(), name=name)
    m.d.comb += sig.eq(value)
    return sig


def less_than_const(m: Module, v, c: int, name: str) -> Signal:
    """``v < c`` for a (signed or unsigned) Value ``v`` and an int ``c``, as plain gates.

    Yosys maps a ``<`` of Values to a carry chain (``$alu``), even against a constant; on ECP5
    getting the carry out of a chain back into the fabric costs about 1 ns on its own, more
    than the 2-3 LUT levels the same test takes as a bit-serial AND/OR expression (which abc
    flattens into a LUT tree).  For short lane-local tests next to other logic in a section.
    """
    v = Value.cast(v)
    w, signed = len(v), v.shape().signed
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
    if c <= lo:
        return wire(m, Const(0, 1), name)
    if c > hi:
        return wire(m, Const(1, 1), name)
    u = v.as_unsigned()
    if signed:  # offset binary: flipping the sign bit adds 2^(w-1) and keeps the order
        u, c = Cat(u[:w - 1], ~u[w - 1]), c + (1 << (w - 1))
    lt = Const(0, 1)  # u[:j] < c[:j], from the least significant bit up
    for j in range(w):
        lt = (~u[j] | lt) if (c >> j) & 1 else (~u[j] & lt)
    return wire(m, lt, name)


def greater_than(m: Module, a, b, name: str) -> Signal:
    """``a > b`` for two (signed or unsigned) Values, as a log-depth tree of gates.

    The same test as ``a > b`` without the carry chain yosys would map it to (see
    :func:`less_than_const`): per bit ``a_j & ~b_j`` (greater) and ``a_j == b_j`` (equal),
    merged pairwise from the top half down, which abc packs into about log2(width) LUT levels.
    """
    a, b = Value.cast(a), Value.cast(b)
    sgn = a.shape().signed or b.shape().signed
    w = max(len(a) + (sgn and not a.shape().signed), len(b) + (sgn and not b.shape().signed))
    ua, ub = Signal(signed(w) if sgn else unsigned(w), name=f"{name}_a"), \
        Signal(signed(w) if sgn else unsigned(w), name=f"{name}_b")
    m.d.comb += [ua.eq(a), ub.eq(b)]  # extended to a common width, sign-aware
    ua, ub = ua.as_unsigned(), ub.as_unsigned()
    if sgn:  # offset binary: flipping both sign bits keeps the order
        ua, ub = Cat(ua[:w - 1], ~ua[w - 1]), Cat(ub[:w - 1], ~ub[w - 1])

    def tree(lo, hi, tag):  # (a[lo:hi] > b[lo:hi], a[lo:hi] == b[lo:hi])
        if hi - lo == 1:
            return ua[lo] & ~ub[lo], ~(ua[lo] ^ ub[lo])
        mid = (lo + hi) // 2
        gt_h, eq_h = tree(mid, hi, tag + "h")
        gt_l, eq_l = tree(lo, mid, tag + "l")
        return (wire(m, gt_h | (eq_h & gt_l), f"{name}_gt{tag}"),
                wire(m, eq_h & eq_l, f"{name}_eq{tag}"))

    return wire(m, tree(0, w, "")[0], name)


def smax(m: Module, a, b, name: str = "max") -> Signal:
    """``max(a, b)`` of two (signed or unsigned) values or ints."""
    a, b = Value.cast(a), Value.cast(b)
    a = wire(m, a, f"{name}_a") if not isinstance(a, Const) else a
    b = wire(m, b, f"{name}_b") if not isinstance(b, Const) else b
    return wire(m, Mux(a > b, a, b), name)


def clamp(m: Module, v, lo: int, hi: int, name: str = "clamp") -> Signal:
    """``min(max(v, lo), hi)`` for int bounds."""
    v = wire(m, v, f"{name}_in")
    return wire(m, Mux(v < lo, lo, Mux(v > hi, hi, v)), name)


def leading_zeros(m: Module, v, name: str = "lzc") -> Signal:
    """Number of leading zeros of ``v`` (``len(v)`` for zero), as a log-depth tree.

    Parameters
    ----------
    m : Module
    v : Value
        Unsigned bit vector of any width >= 1.
    name : str
        Prefix of the generated signals.

    Returns
    -------
    Signal
        Unsigned, ``bits_for(len(v))`` bits.
    """
    v = Value.cast(v)
    w = len(v)
    p = 1 << ceil_log2(w)
    # Pad below with ones: the count of a zero input then stops at exactly w.
    padded = Cat(Const((1 << (p - w)) - 1, p - w), v) if p > w else v
    padded = wire(m, padded, f"{name}_in")

    def tree(x, tag):  # (count, all_zero) of a power-of-two-wide vector
        if len(x) == 1:
            return ~x[0], ~x[0]
        h = len(x) // 2
        c_hi, z_hi = tree(x[h:], tag + "h")
        c_lo, z_lo = tree(x[:h], tag + "l")
        z_hi = wire(m, z_hi, f"{name}_z{tag}h")
        count = wire(m, Mux(z_hi, h + c_lo, c_hi), f"{name}_c{tag}")
        return count, z_hi & z_lo

    count, _ = tree(padded, "")
    return wire(m, count.as_unsigned()[:bits_for(w)], name)


def round_to_grid(m: Module, sig, top, *, emin, mbits, rounding, frac_bits=1, rand=None,
                  name: str = "rnd"):
    """Round ``sig * 2^(top - len(sig) + 1)`` onto the grid of an ``E.M`` format.

    The grid is IEEE-style: binades ``>= emin`` hold ``mbits`` fraction bits, below ``emin``
    the spacing stays ``2^(emin - mbits)`` (subnormals).  There is no upper limit here: the
    caller saturates or overflows to infinity by comparing the returned code.

    Parameters
    ----------
    m : Module
    sig : Value
        Normalized significand (its top bit set; or zero, which yields code 0).
    top : Value
        Signed exponent of ``sig``'s top bit, i.e. ``floor(log2(value))``.
    emin, mbits : int
        Target format: exponent of the smallest normal binade and fraction bits.
    rounding : int or Value
        One of :data:`RNE`, :data:`RNA`, :data:`RTZ`, :data:`STOCHASTIC`: a Python int for a
        mode fixed at elaboration (only that mode's logic is built) or a 2-bit Value.
    frac_bits : int
        Bits of the discarded fraction kept exactly below the last place (``R`` for stochastic
        rounding; 1 suffices otherwise: guard bit plus a sticky).
    rand : Value, optional
        ``frac_bits`` random bits; stochastic rounding rounds up iff ``f_R + rand >= 2^R``.
    name : str
        Prefix of the generated signals.

    Returns
    -------
    Value
        Unsigned magnitude code ``(max(top - emin, 0) << mbits) + n``, ``n`` the rounded
        significand (hidden bit included for a normal result): the IEEE-style code ``E.M``.
        A carry out of the significand lands on the next binade by itself.  Wide enough
        never to wrap.
    """
    aligned = align_to_grid(m, sig, top, emin=emin, mbits=mbits, frac_bits=frac_bits, name=name)
    return round_aligned(m, aligned, mbits=mbits, rounding=rounding, rand=rand, name=name)


def align_to_grid(m: Module, sig, top, *, emin, mbits, frac_bits=1, name: str = "rnd") -> dict:
    """First half of :func:`round_to_grid`: shift ``sig`` onto the grid.

    Returns the kept significand ``n``, the ``frac_bits`` bits below its last place
    (``frac``), a ``sticky`` bit for everything further down and the ``binade`` field: a few
    narrow Values, so a pipeline register can sit between this and :func:`round_aligned`.
    """
    sig = Value.cast(sig)
    top = wire(m, top, f"{name}_top")
    if len(sig) - 1 < mbits:  # the grid is finer than sig: pad so the shift below is a right shift
        sig = Cat(Const(0, mbits - len(sig) + 1), sig)
    p, f = len(sig), frac_bits
    w = p + f
    # Bits of sig below the grid's last place: p-1-mbits in a normal binade, more below emin.
    sub = smax(m, emin - top, 0, name=f"{name}_sub")
    drop_max = w  # a larger shift leaves n = 0, frac = 0, sticky = (sig != 0): same as w
    drop = Mux(sub > drop_max - (p - 1 - mbits), drop_max, sub + (p - 1 - mbits))
    drop = wire(m, drop.as_unsigned()[:bits_for(drop_max)], f"{name}_drop")
    # One shifter gives the kept bits (upper half) and everything shifted out (lower half).
    ext = Cat(Const(0, w), Const(0, f), sig)
    shifted = wire(m, (ext >> drop)[:2 * w], f"{name}_shifted")
    kept = shifted[w:]
    sticky = shifted[:w].any()
    n = kept[f:]
    frac = kept[:f]
    binade = smax(m, top - emin, 0, name=f"{name}_binade").as_unsigned()
    return {"n": n, "frac": frac, "sticky": sticky, "binade": binade}


def round_aligned(m: Module, aligned: dict, *, mbits, rounding, rand=None, name: str = "rnd"):
    """Second half of :func:`round_to_grid`: the rounding increment and the code."""
    n, frac, sticky, binade = (aligned[k] for k in ("n", "frac", "sticky", "binade"))
    f = len(frac)
    guard = frac[f - 1]
    below = wire(m, frac[:f - 1].any() | sticky if f > 1 else sticky, f"{name}_below")

    def up_for(mode):
        if mode == RNE:
            return guard & (below | n[0])
        if mode == RNA:
            return guard
        if mode == RTZ:
            return Const(0, 1)
        if mode == STOCHASTIC:
            if rand is None:
                raise ValueError("stochastic rounding needs random bits")
            return (frac + Value.cast(rand)[:f])[f]  # carry out: f_R + r >= 2^R
        raise ValueError(f"unknown rounding id {mode!r}")

    if isinstance(rounding, int):
        up = up_for(rounding)
    else:
        modes = (RNE, RNA, RTZ, STOCHASTIC) if rand is not None else (RNE, RNA, RTZ)
        up = Const(0, 1)
        for mode in modes:
            up = Mux(rounding == mode, up_for(mode), up)
    return wire(m, (binade << mbits) + n + up, name)


def register_tree(m: Module, tree, enable, prefix: str):
    """Register every Value in ``tree`` (a Value or a dict/list/tuple nesting of Values),
    loading when ``enable`` is high; returns the same structure of reset-less registers named
    ``prefix`` plus the keys/indices on the way down.  Python ints and None (elaboration-time
    constants) pass through unchanged.  Shared by the units' pipeline classes."""
    if isinstance(tree, dict):
        return {k: register_tree(m, v, enable, f"{prefix}_{k}") for k, v in tree.items()}
    if isinstance(tree, list | tuple):
        out = [register_tree(m, v, enable, f"{prefix}_{i}") for i, v in enumerate(tree)]
        return type(tree)(out) if isinstance(tree, tuple) else out
    if tree is None or isinstance(tree, int):
        return tree
    v = Value.cast(tree)
    r = Signal(v.shape(), name=prefix, reset_less=True)
    with m.If(enable):
        m.d.sync += r.eq(v)
    return r


class StreamPipeline:
    """A valid/ready pipeline with registers at a chosen subset of its stage boundaries.

    A datapath is written as combinational sections separated by calls to :meth:`boundary`;
    each call either registers the values passed through it (if that boundary was chosen) or
    returns them unchanged.  :meth:`connect` then builds the handshake.

    Flow control: a register stage loads whenever it is empty or its content moves on
    (``ready_j = ~valid_j | ready_{j+1}``, the last stage's ``ready`` is the output's).  Blocks
    are never lost or duplicated, bubbles are squeezed out, and throughput is one block per
    clock.  The input's ``ready`` is a combinational function of the output's ``ready`` and the
    stage valid bits (a chain of one AND-OR per stage; no payload logic on it).  Synchronous
    reset clears the valid bits only; data registers are reset-less.

    Parameters
    ----------
    m : Module
    registered : sequence of bool
        One flag per boundary, in datapath order (the last boundary must be registered:
        every unit has a registered output).
    name : str
        Prefix of the generated register names.
    global_stall : bool
        Default False: the per-stage enables above.  True: one enable for every stage,
        ``ready_out | ~valid_last`` (the whole pipeline advances unless its output holds a
        block that is not taken).  Bubbles inside the pipeline are then not squeezed out while
        the output stalls, but throughput with ``ready_out`` high is still one block per clock,
        nothing is lost or duplicated, and the enable is one gate from the output valid
        register instead of a chain through every stage (for deep pipelines with wide stage
        registers).
    registered_stall : bool
        Only with ``global_stall``.  Default False.  True: the common enable is itself a
        register, ``advance <= o.ready | ~o.valid`` (reset 1), one copy per registered stage,
        so the enable nets start at flip-flops instead of at ``o.ready`` plus a gate and each
        reaches one stage (in a wide unit one net to all stages spans the die, and
        ``o.ready`` comes from the host's logic).
        The pipeline then learns of a stall one cycle late and moves once more: a one-entry
        skid buffer after the last stage catches the block that would be overwritten.  While
        ``advance`` is high the skid register copies the last stage every cycle; when it is
        low the output shows the skid register (the last stage holds the next block) until
        it is taken.  ``o.valid``/``o.payload`` are then a 2:1 mux of the two registers,
        ``i.ready`` is the first stage's copy of ``advance`` (not combinational on ``o.ready``);
        latency and throughput are unchanged.

    Members
    -------
    latency : int
        Number of registered boundaries: a block accepted in cycle ``c`` is presented on the
        output in cycle ``c + latency``.
    """

    def __init__(self, m: Module, registered, *, name: str = "p", global_stall: bool = False,
                 registered_stall: bool = False):
        if registered_stall and not global_stall:
            raise ValueError("registered_stall needs global_stall")
        self._m = m
        self._global_stall = global_stall
        # the registered common enable (registered_stall), reset to 1: an empty pipeline moves
        self._advance = Signal(name=f"{name}_advance", init=1) if registered_stall else None
        self._registered = [bool(r) for r in registered]
        if not self._registered or not self._registered[-1]:
            raise ValueError("the last pipeline boundary must be registered")
        self._name = name
        self._index = 0
        self._valids = []  # valid register of each registered boundary
        self._loads = []  # load enable (driven in connect) of each registered boundary
        self._in_valid = Signal(name=f"{name}_in_valid")
        self.latency = sum(self._registered)

    @property
    def in_valid(self) -> Signal:
        """Valid bit entering the first section (driven by :meth:`connect`)."""
        return self._in_valid

    def boundary(self, tree, name: str | None = None):
        """Pass ``tree`` (a Value, or a dict/list/tuple nesting of Values) over the next
        boundary; returns the same structure, registered or not.  Python ints and None
        (elaboration-time constants) pass through unchanged."""
        if self._index >= len(self._registered):
            raise ValueError("more boundaries than declared")
        reg = self._registered[self._index]
        tag = name or str(self._index)
        self._index += 1
        if not reg:
            return tree
        if self._advance is not None and self._index == len(self._registered):
            return self._last_with_skid(tree, tag)
        valid = Signal(name=f"{self._name}_{tag}_valid")
        load = Signal(name=f"{self._name}_{tag}_load")
        prev_valid = self._valids[-1] if self._valids else self._in_valid
        with self._m.If(load):
            self._m.d.sync += valid.eq(prev_valid)
        self._valids.append(valid)
        self._loads.append(load)
        return register_tree(self._m, tree, load, f"{self._name}_{tag}")

    def _last_with_skid(self, tree, tag):
        """The last boundary under ``registered_stall``: its register, a skid register beside
        it, and the 2:1 mux between them (see the class docstring)."""
        m, adv = self._m, self._advance
        valid = Signal(name=f"{self._name}_{tag}_valid")
        skid_valid = Signal(name=f"{self._name}_{tag}_skid_valid")
        prev_valid = self._valids[-1] if self._valids else self._in_valid
        with m.If(adv):
            m.d.sync += valid.eq(prev_valid)
        # The skid register is full exactly when the enable is low: the cycle after the
        # output held a block that was not taken, it holds that block.
        m.d.comb += skid_valid.eq(~adv)
        self._valids.append(valid)
        self._loads.append(adv)
        self._out_valid = wire(m, valid | skid_valid, f"{self._name}_{tag}_out_valid")
        regs = register_tree(m, tree, adv, f"{self._name}_{tag}")
        skid = register_tree(m, regs, adv, f"{self._name}_{tag}_skid")
        return self._select(adv, regs, skid)

    def _select(self, adv, regs, skid):
        if isinstance(regs, dict):
            return {k: self._select(adv, regs[k], skid[k]) for k in regs}
        if isinstance(regs, list | tuple):
            out = [self._select(adv, r, s) for r, s in zip(regs, skid, strict=True)]
            return type(regs)(out) if isinstance(regs, tuple) else out
        if regs is None or isinstance(regs, int):
            return regs
        return Mux(adv, regs, skid)

    def connect(self, *, i_valid, i_ready, o_valid, o_ready):
        """Build the handshake: drive ``i_ready``, ``o_valid`` and the stage enables."""
        if self._index != len(self._registered):
            raise ValueError(f"{len(self._registered)} boundaries declared, "
                             f"{self._index} used")
        m = self._m
        m.d.comb += self._in_valid.eq(i_valid)
        if self._advance is not None:
            # advance <= o.ready | ~o.valid, with o.valid = valid_last | ~advance.  Every
            # other registered stage gets its own copy of this register, so no single net
            # reaches every stage register (at k = 32 that net alone took ~4 ns of routing).
            # A copy's next value uses the copy itself in place of `advance`: equal in every
            # reachable state (same reset value, same update), but a different function, so
            # synthesis cannot merge the copies back into one (yosys opt_merge merges
            # registers with identical inputs, keep attributes notwithstanding).
            valid_last = self._valids[-1]
            copies = [self._advance]  # the last stage's (and the skid mux's) is the original
            for load in self._loads[:-1]:
                copies.append(Signal(name=f"{load.name}_r", init=1))
                m.d.comb += load.eq(copies[-1])
            for adv in copies:
                m.d.sync += adv.eq(o_ready | (~valid_last & adv))
            m.d.comb += [i_ready.eq(self._loads[0]), o_valid.eq(self._out_valid)]
            return
        ready_next = o_ready
        if self._global_stall:
            advance = Signal(name=f"{self._name}_advance")
            m.d.comb += advance.eq(o_ready | ~self._valids[-1])
        for valid, load in zip(reversed(self._valids), reversed(self._loads), strict=True):
            if self._global_stall:
                m.d.comb += load.eq(advance)
            else:
                m.d.comb += load.eq(~valid | ready_next)
            ready_next = load
        m.d.comb += [i_ready.eq(ready_next), o_valid.eq(self._valids[-1])]



def reduce_significand(m: Module, sig, lz, keep: int, name: str = "red"):
    """Normalize ``sig`` (``sig << lz``) and keep only its top ``keep`` bits plus a sticky bit.

    Returns ``Cat(sticky, (sig << lz)[-keep:])`` (``keep + 1`` bits) when ``len(sig) > keep + 1``,
    else ``sig << lz`` itself.  The sticky bit (OR of the normalized bits below the kept ones)
    is computed from ``sig`` and ``lz`` directly (a mask), in parallel with the shift.
    """
    sig, lz = Value.cast(sig), Value.cast(lz)
    p = len(sig)
    norm = wire(m, (sig << lz)[:p], f"{name}_norm")
    if p <= keep + 1:
        return norm
    low = p - keep  # normalized bits [0, low) fold into the sticky bit
    # normalized bit j comes from sig bit j - lz: sig bit i lands below `low` iff i + lz < low
    # (lz < low - i as gates, not carry chains: see less_than_const)
    sticky = 0
    for i in range(low):
        sticky = sticky | (sig[i] & less_than_const(m, lz, low - i, f"{name}_below{i}"))
    return wire(m, Cat(sticky, norm[low:]), f"{name}_red")


def max_tree_levels(m: Module, level, levels: int, name: str = "mt"):
    """``levels`` levels of a pairwise maximum tree over ``level`` (a list of ``(key, flag)``).

    Each level halves the list (its length must stay even while levels remain).  The flag of a
    merged pair is the OR of the flags of the leaves whose key equals the pair's maximum (flags
    may be None: no flag logic).  Call repeatedly, with pipeline registers in between, until
    one ``(key, flag)`` is left: the maximum key and whether a leaf at that maximum has its flag.
    """
    level = list(level)
    for _ in range(levels):
        if len(level) == 1:
            break
        nxt = []
        for j in range(0, len(level), 2):
            (ka, fa), (kb, fb) = level[j], level[j + 1]
            tag = f"{name}_l{len(level)}_{j // 2}"
            ka = wire(m, ka, f"{tag}_a")
            kb = wire(m, kb, f"{tag}_b")
            agt = greater_than(m, ka, kb, f"{tag}_gt")  # gates, no carry chain
            key = wire(m, Mux(agt, ka, kb), tag)
            flag = None
            if fa is not None:
                flag = wire(m, Mux(ka == kb, fa | fb, Mux(agt, fa, fb)), f"{tag}_f")
            nxt.append((key, flag))
        level = nxt
    return level


def round_up(m: Module, frac, sticky, lsb, rounding, rand=None, name: str = "up"):
    """The increment of one rounding: 1 to round the magnitude up, 0 to truncate.

    ``frac`` holds the ``f`` discarded bits right below the last kept place (its top bit is the
    guard bit), ``sticky`` the OR of everything below them, ``lsb`` the last kept bit.  RNE
    ``guard & (below | lsb)``, RNA ``guard``, RTZ 0, stochastic the carry out of ``frac + rand``
    (``f`` random bits).  ``rounding`` is an int (one mode built) or a 2-bit Value (runtime).
    """
    frac = Value.cast(frac)
    f = len(frac)
    guard = frac[f - 1]
    below = wire(m, frac[:f - 1].any() | sticky if f > 1 else Value.cast(sticky), f"{name}_below")

    def up_for(mode):
        if mode == RNE:
            return guard & (below | lsb)
        if mode == RNA:
            return guard
        if mode == RTZ:
            return Const(0, 1)
        if mode == STOCHASTIC:
            if rand is None:
                raise ValueError("stochastic rounding needs random bits")
            return (frac + Value.cast(rand)[:f])[f]
        raise ValueError(f"unknown rounding id {mode!r}")

    if isinstance(rounding, int):
        return wire(m, up_for(rounding), name)
    modes = (RNE, RNA, RTZ, STOCHASTIC) if rand is not None else (RNE, RNA, RTZ)
    up = Const(0, 1)
    for mode in modes:
        up = Mux(rounding == mode, up_for(mode), up)
    return wire(m, up, name)
