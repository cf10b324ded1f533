"""Mutants shown equivalent to the design (same function), with the reason for each.

A campaign recognises these by the text of the mutated line before and after the change, so
the entries survive edits elsewhere in the file, and reports them as *equivalent (known)*
without simulating them: each costs 6-18 minutes of simulation to survive.  An entry whose
line changes stops matching, and the mutant is simulated again.
docs/verification.md, "Survivors and known equivalent mutants", has the longer arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

from .operators import Mutation

__all__ = ["KnownEquivalent", "KNOWN_EQUIVALENTS", "known_equivalent"]


@dataclass(frozen=True)
class KnownEquivalent:
    """A mutant of ``path`` that turns the line ``before`` into ``after`` (both stripped)."""

    path: str
    before: str
    after: str
    reason: str


KNOWN_EQUIVALENTS = (
    KnownEquivalent(
        "hw/rounding.py", "drop = sub + self.drop_normal", "drop = sub - self.drop_normal",
        "Grid serves only the dequantizer, whose element significand is narrower than every "
        "output grid, so drop_normal = p - 1 - mbits is 0 in every configuration (in "
        "align_to_grid's form of the line)"),
    KnownEquivalent(
        "hw/rounding.py", "sub + self.drop_normal)", "sub - self.drop_normal)",
        "the same term in the clamped form of the shift amount: drop_normal is 0 in every "
        "configuration"),
    KnownEquivalent(
        "hw/rounding.py", "return Const(0, 1)", "return Const(0, 2)",
        "rtz's increment: a zero one bit wider is still zero"),
    KnownEquivalent(
        "hw/dot/geometry.py", "return self.sum_bits + GUARD + 2",
        "return self.sum_bits + GUARD + 3",
        "a window one bit wider than needed: every condition of docs/dot.md's exactness "
        "argument still holds (tests/test_hw_dot.py::test_window_is_exact passes with it), so "
        "c + T is exact and rounds the same (10 dot configurations passed)"),
    KnownEquivalent(
        "hw/arith.py", "p = 1 << ceil_log2(w)", "p = 2 << ceil_log2(w)",
        "leading_zeros pads with ones below the input; with twice the pad the first one is "
        "still w places from the top, so every count is the same (issue 12)"),
    KnownEquivalent(
        "hw/dot/window.py",
        'c_win = wire(m, Cat(Const(0, n - 25), c_sig, Const(0, 1)), step.name("c_win"))',
        'c_win = wire(m, Cat(Const(0, n - 25), c_sig, Const(0, 0)), step.name("c_win"))',
        "the dropped top bit of c's window (the carry bit) is a constant 0: the narrower wire "
        "zero-extends to the same value in the window sum"),
    KnownEquivalent(
        "hw/elements.py", "inf = Const(0, 1)", "inf = Const(0, 0)",
        "the start of an OR chain: a 0-bit zero ORed with 1-bit compares gives the same bit, "
        "and a format without Inf codes reads it zero-extended as 0 either way"),
    KnownEquivalent(
        "hw/dot/window.py", "h = n // 2", "h = n // 3",
        "where the split add cuts the window is a timing choice, not a function: the high "
        "halves' sums take the low halves' carry-outs as carry-ins, so every 1 <= h <= n "
        "gives the same sums (fp8_e5m2 dot's make-sim test passed with h = n // 3, 61 s)"),
    KnownEquivalent(
        "hw/dot/window.py", "h = n // 2", "h = n // 1",
        "h = n: the low half is the whole window and the high half 0 bits, whose sums are "
        "the carries: the same sums unsplit, the register after them (fp8_e5m2 dot's make-sim "
        "test passed, 59 s)"),
    KnownEquivalent(
        "hw/elements.py", "nan = Const(0, 1)", "nan = Const(0, 2)",
        "the start of an OR chain of 1-bit compares: a 2-bit zero makes the NaN flag 2 bits "
        "wide with its upper bit always 0, and every reader tests it as a truth value or ORs "
        "bit 0 (16 configurations passed)"),
    KnownEquivalent(
        "hw/elements.py", "inf = Const(0, 1)", "inf = Const(0, 2)",
        "the Inf flag's OR chain started two bits wide: its upper bit is always 0, and every "
        "reader tests it as a truth value or ORs bit 0 (16 configurations "
        "passed)"),
    KnownEquivalent(
        "hw/rounding.py", "ext = Cat(Const(0, w), Const(0, f), sig)",
        "ext = Cat(Const(1, w), Const(0, f), sig)",
        "the 1 sits at the shifter's lowest bit: any shift (drop >= 1) moves it out, and with "
        "drop = 0 it only sets the sticky bit while every fraction bit is 0, where no rounding "
        "mode increments (6 configurations passed)"),
    KnownEquivalent(
        "hw/elements.py", "lo, hi = fmt.lsb_exp - 1, max(table.values())",
        "lo, hi = fmt.lsb_exp - 2, max(table.values())",
        "only a zero magnitude gets the default binade lo, and the dequantizer never reads a "
        "zero lane's binade: its block exponent copies are cleared and its output is forced "
        "to a signed zero (6 configurations passed)"),
    KnownEquivalent(
        "hw/rounding.py", '"binade": Mux(under, 0, above).as_unsigned()[:len(above) - 1],',
        '"binade": Mux(under, 0, above).as_unsigned()[:len(above) + 1],',
        "the slice then keeps above's sign bit as well, which is 0 whenever the Mux passes "
        "above (not under) and 0 from the Mux's other arm: a wider field whose extra bit is "
        "always 0 (6 configurations passed)"),
    KnownEquivalent(
        "hw/rounding.py",
        'below = wire(m, frac[:f - 1].any() | sticky if f > 1 else Value.cast(sticky), '
        'f"{name}_below")',
        'below = wire(m, frac[:f - 1].any() | sticky if f > 0 else Value.cast(sticky), '
        'f"{name}_below")',
        "the two arms differ only at f = 1, where frac[:0].any() is the reduction of an empty "
        "value, the constant 0, and 0 | sticky is sticky (16 configurations "
        "passed)"),
    KnownEquivalent(
        "hw/quantize/encode.py", "fw, sw = bits_for(g.b_ovf + 1), bits_for(keep)",
        "fw, sw = bits_for(g.b_ovf + 2), bits_for(keep)",
        "the exponent field one bit wider where b_ovf + 2 is a power of two: br + 1 <= "
        "b_ovf + 1 (the comment above the line), so the extra bit is always 0 and the "
        "element code the same (fp8_e5m2 from fp16, the one configuration "
        "changed, passed)"),
    KnownEquivalent(
        "hw/dequantizer.py", '"below": Mux(el.zero, 0, payload.below),',
        '"below": Mux(el.zero, 1, payload.below),',
        "a zero lane's copy of the block exponent is never read (its output is forced to a "
        "signed zero); the Mux is there so each lane keeps its own copy for timing, and a 1 "
        "keeps them lane-specific too (6 configurations passed)"),
)


def known_equivalent(mutation: Mutation, source: str) -> KnownEquivalent | None:
    """The entry of :data:`KNOWN_EQUIVALENTS` that ``mutation`` of ``source`` is, if any."""
    line = mutation.line - 1
    before = source.splitlines()[line].strip()
    after = mutation.apply(source).splitlines()[line].strip()
    for entry in KNOWN_EQUIVALENTS:
        if (entry.path, entry.before, entry.after) == (mutation.path, before, after):
            return entry
    return None
