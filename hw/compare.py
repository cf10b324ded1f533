"""Comparisons written as gates: against a constant, and of two values.

* :func:`less_than_const` -- ``v < c`` for a constant ``c``, as a carry chain or a gate tree.
* :func:`greater_than`, :func:`compare` -- ``a > b`` and ``(a > b, a == b)`` as gate trees.

On ECP5 yosys maps a comparison written ``<`` or ``>`` to a carry chain, slower here than
the few LUT levels these take (see the functions).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Signal, Value, signed, unsigned

from .nets import wire

__all__ = ["less_than_const", "greater_than", "compare"]


def less_than_const(m: Module, v, c: int, name: str, *, tree: bool = False) -> Signal:
    """``v < c`` for a (signed or unsigned) Value ``v`` and an int ``c``, as plain gates.

    Yosys maps a ``<`` of Values to a carry chain (``$alu``), even against a constant; on ECP5
    getting the carry out of a chain back into the fabric costs about 1 ns on its own, more
    than the 2-3 LUT levels the same test takes as a bit-serial AND/OR expression (which abc
    flattens into a LUT tree).  For short lane-local tests next to other logic in a section.

    ``tree``: the gates as a balanced tree instead (``v[hi] < c[hi] | v[hi] == c[hi] &
    v[lo] < c[lo]`` on halves, as :func:`compare`'s).  abc does not flatten the chain fully:
    in the quantizer, whose tests all use the tree, the chain kept cmp -> shift (``gone``)
    at four LUT levels: bf16 -> fp8_e4m3 at 10 stages 225.6 MHz (216.9-235.0) in 3,951 LUT4
    with the chain, 236.0 (225.8-236.4) in 3,848 with the tree (medians of nextpnr seeds 1-3,
    data registers marked ``extract_reset = "no"``; docs/quantizer.md, 'No logic on the
    flip-flops' reset pins').  The dot's and the dequantizer's tests keep the chain until
    they are measured with the tree (placing them again).
    """
    v = Value.cast(v)
    w, is_signed = len(v), v.shape().signed
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if is_signed else (0, (1 << w) - 1)
    if c <= lo:
        return wire(m, Const(0, 1), name)
    if c > hi:
        return wire(m, Const(1, 1), name)
    u = v.as_unsigned()
    if is_signed:  # offset binary: flipping the sign bit adds 2^(w-1) and keeps the order
        u, c = Cat(u[:w - 1], ~u[w - 1]), c + (1 << (w - 1))
    if tree:
        def lt_eq(lo, hi):  # (u[lo:hi] < c[lo:hi], u[lo:hi] == c[lo:hi])
            if hi - lo == 1:
                return (~u[lo], u[lo]) if (c >> lo) & 1 else (Const(0, 1), ~u[lo])
            mid = (lo + hi) // 2
            lt_h, eq_h = lt_eq(mid, hi)
            lt_l, eq_l = lt_eq(lo, mid)
            return lt_h | (eq_h & lt_l), eq_h & eq_l

        return wire(m, lt_eq(0, w)[0], name)
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
    return wire(m, _comparison_tree(m, a, b, name)[0], name)


def compare(m: Module, a, b, name: str) -> tuple[Signal, Signal]:
    """``(a > b, a == b)`` for two (signed or unsigned) Values: :func:`greater_than` and the
    equality its tree computes on the way (the AND of the per-bit equalities), both named.
    """
    gt, eq = _comparison_tree(m, a, b, name)
    return wire(m, gt, name), wire(m, eq, f"{name}_eq")


def _comparison_tree(m: Module, a, b, name: str):
    """The gate tree of :func:`greater_than`: ``(a > b, a == b)`` as Values."""
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

    return tree(0, w, "")
