"""The exact block sum of the fused step: a balanced adder tree over the tree sections.

* :class:`BlockSum` -- the tree level by level, with ``S - 1`` on its last spine.
* :class:`SplitBlockSum` -- the same in halves, for sums wider than
  :data:`hw.dot.sections.SPLIT_TREE_BITS`.
* :func:`sum_block` -- the tree sections, with the frame of ``c + T`` beside the tree.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const

from ..arith import add_with_carry
from .frame import frame_fields
from .sections import SIGN_COPY_BITS, tree_sections, tree_split_bits
from .step import FusedStep

__all__ = ["BlockSum", "SplitBlockSum", "sum_block"]


class BlockSum:
    """The block sum's adder tree, level by level, and beside it ``S - 1`` on the tree's last
    spine (:func:`sum_block`).

    Parameters
    ----------
    terms : list of Value
        The exact signed lane terms, the last one as ``t - 1``.
    width : int
        ``sum_bits``: the sums are ``width + 1`` bits at each section's end.

    Members
    -------
    sign : Value
        The sign of the first partial sum (after the last level: of ``S``).
    total, minus : Value
        After the last section: ``S`` and ``S - 1``.
    """

    def __init__(self, terms, width: int):
        self._level, self._minus, self._width = list(terms), None, width

    def begin_section(self):
        pass

    def add_level(self):
        level = self._level
        pairs = [(level[i] + level[i + 1]).as_signed() for i in range(0, len(level), 2)]
        if self._minus is None:  # level[-1] is t - 1
            self._minus = (level[-2] + level[-1]).as_signed()
            # written as x + ((t - 1) + 1), not minus + 1, which yosys would build from
            # minus's chain (it merges equal sums): one chain with a carry in (x + t, as
            # wide as the other pair sums)
            pairs[-1] = (level[-2] + (level[-1] + 1))[:len(pairs[0])].as_signed()
        else:
            self._minus = (level[-2] + self._minus).as_signed()
        self._level = pairs

    def end_section(self):
        w = self._width
        self._level = [v.as_signed()[:w + 1].as_signed() for v in self._level]
        if self._minus is not None:
            self._minus = self._minus.as_signed()[:w + 1].as_signed()

    @property
    def sign(self):
        return self._level[0][-1]

    def fields(self) -> dict:
        """The values to carry over a section boundary."""
        return {"terms": self._level, "minus": self._minus}

    def reread(self, s):
        """Continue from ``s``, the boundary's view of :meth:`fields`."""
        self._level = [s.terms[i] for i in range(len(self._level))]
        self._minus = None if self._minus is None else s.minus

    @property
    def total(self):
        return self._level[0]

    @property
    def minus(self):
        return self._minus


class SplitBlockSum:
    """:class:`BlockSum` in halves, for sums wider than :data:`SPLIT_TREE_BITS`: a level's
    low halves (``split`` bits) in its own section, each sum ``split + 1`` bits with its
    carry out; its high halves in the next section, with that carry in
    (:func:`hw.arith.add_with_carry`), beside the next level's low halves.  Every chain is
    then about half the sum wide, and one more section (:func:`tree_sections`) sums the last
    level's high halves.

    Parameters
    ----------
    terms, width
        As :class:`BlockSum`'s.
    split : int
        Bits of the low halves (:func:`tree_split_bits`), ``1..width``.

    Members
    -------
    As :class:`BlockSum`'s.
    """

    def __init__(self, terms, width: int, split: int):
        if not 0 < split <= width:
            raise ValueError(f"split must be in 1..{width}, got {split}")
        h = self._split = split
        self._high_bits = width + 1 - h
        full = [Cat(t, t[-1].replicate(width + 1 - len(t))) for t in terms]
        self._lows, self._highs = [t[:h] for t in full], [t[h:] for t in full]
        # While a level's high sums wait for the next section, highs[i] and pending[i] are the
        # operands of high sum i, whose carry in is lows[i][h] (likewise minus_hi,
        # minus_pending and minus_lo); otherwise pending is None and Cat(lows[i], highs[i])
        # is term i.
        self._pending = None
        self._minus_lo = self._minus_hi = self._minus_pending = None

    def begin_section(self):
        if self._pending is None:
            return
        h, wh = self._split, self._high_bits  # the high halves of the level before
        self._highs = [add_with_carry(a, b, lo[h])[:wh]
                       for a, b, lo in zip(self._highs, self._pending, self._lows, strict=True)]
        self._lows = [lo[:h] for lo in self._lows]
        self._minus_hi = add_with_carry(self._minus_hi, self._minus_pending,
                                        self._minus_lo[h])[:wh]
        self._minus_lo = self._minus_lo[:h]
        self._pending = self._minus_pending = None

    def add_level(self):
        lows, highs = self._lows, self._highs
        pairs = [lows[i] + lows[i + 1] for i in range(0, len(lows), 2)]
        if self._minus_lo is None:  # lows[-1] is the low half of t - 1
            self._minus_lo, self._minus_pending = lows[-2] + lows[-1], highs[-1]
            pairs[-1] = add_with_carry(lows[-2], lows[-1], Const(1, 1))
        else:
            self._minus_lo, self._minus_pending = lows[-2] + self._minus_lo, self._minus_hi
        self._minus_hi = highs[-2]
        self._lows, self._highs, self._pending = pairs, highs[0::2], highs[1::2]

    def end_section(self):
        pass

    @property
    def sign(self):
        return self._highs[0][-1]

    def fields(self) -> dict:
        """The values to carry over a section boundary."""
        return {"lows": self._lows, "highs": self._highs, "pending": self._pending,
                "minus_lo": self._minus_lo, "minus_hi": self._minus_hi,
                "minus_pending": self._minus_pending}

    def reread(self, s):
        """Continue from ``s``, the boundary's view of :meth:`fields`."""
        self._lows = [s.lows[i] for i in range(len(self._lows))]
        self._highs = [s.highs[i] for i in range(len(self._highs))]
        if self._pending is not None:
            self._pending = [s.pending[i] for i in range(len(self._pending))]
        if self._minus_lo is not None:
            self._minus_lo, self._minus_hi = s.minus_lo, s.minus_hi
        if self._minus_pending is not None:
            self._minus_pending = s.minus_pending

    @property
    def total(self):
        return Cat(self._lows[0], self._highs[0]).as_signed()

    @property
    def minus(self):
        return Cat(self._minus_lo, self._minus_hi).as_signed()


def sum_block(step: FusedStep, s):
    """The tree sections (``tree0``, ``tree1``, ...): the exact block sum, a balanced adder
    tree, one level per section (:func:`hw.dot.sections.tree_sections`), and beside it the
    frame of ``c + T`` (:func:`hw.dot.frame.frame_fields`).

    Beside the tree, ``S - 1`` on its last spine (the pair sums that hold the last term): the
    last term arrives as ``t - 1``, so the spine's first pair sum is ``x + (t - 1)`` and the
    tree's is the same sum with a carry in, each one carry chain with nothing before it (a
    layer of full adders making x + t - 1 from x and t puts a LUT before fp8_e5m2's 65-bit
    chain: product -> tree0, 58-67 cells, 5.0-5.3 ns); each later level adds the spine's
    ``S - 1`` in place of its sum.  Then ``-S = ~(S - 1)`` is at hand when the sum ends, and
    ``|S|`` in place is a choice, not a negation (the chain of a negation after the tree's
    last level is place's worst path, 34-40 cells, 2.2-2.4 ns logic + 2.8-3.5 ns routing,
    at fp8_e4m3, 19 stages).  A sum wider than :data:`hw.dot.sections.SPLIT_TREE_BITS` is
    summed in halves (:class:`SplitBlockSum`).

    Returns
    -------
    View, Value, Value, list of Value
        The view after the last tree section, ``S``, ``S - 1`` and the copies of ``S``'s
        sign (one per :data:`hw.dot.sections.SIGN_COPY_BITS` bits of ``|S|``).
    """
    g, k = step.geometry, step.block_size
    w = g.sum_bits
    trees = tree_sections(g)
    h = tree_split_bits(g)
    terms = [s.terms[i] for i in range(k)]
    block_sum = SplitBlockSum(terms, w, h) if h else BlockSum(terms, w)
    for j, levels in enumerate(trees):
        block_sum.begin_section()
        for _ in levels:
            block_sum.add_level()
        block_sum.end_section()
        frame = frame_fields(step, s, j)
        sign = block_sum.sign
        s = step.cross({**step.specials(s), **frame, **block_sum.fields()}, f"tree{j}")
        block_sum.reread(s)
    signs = step.scope.replicate(sign, f"tree{len(trees) - 1}", -(-w // SIGN_COPY_BITS))
    return s, block_sum.total, block_sum.minus, signs
