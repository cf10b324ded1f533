"""The frame of ``c + T``, computed beside the block sum's adder tree (:func:`frame_fields`,
one step per tree section, :data:`hw.dot.sections.FRAME_STEPS` in all).

The shift distance ``|aT - aC|`` (clamped to ``n``) and the frame ``F = max(aT, aC)``, from
which ``lim = F + n + 124``: normalization may shift left at most this far (the result's top
bit then weighs ``2^-126``; smaller results are subnormal, ``docs/dot.md``).  The later tree
sections carry the frame unchanged.
"""

from __future__ import annotations

from amaranth.hdl import Mux

from ..arith import less_than_const, wire
from .step import FusedStep

__all__ = ["frame_fields"]


def frame_fields(step: FusedStep, s, j: int) -> dict:
    """The frame's fields at the boundary of tree section ``j``, from ``s``, the view after
    the boundary before it."""
    m, n, nb = step.m, step.window_bits, step.shift_bits
    bits = step.geometry.frame_bits  # no frame integer wraps (DotGeometry.frame_bound)
    if j == 0:
        d = wire(m, (s.a_t - s.a_c)[:bits + 1].as_signed(), step.name("anchor_diff"))
        return {"a_t": s.a_t, "a_c": s.a_c, "t_anchors": d >= 0,
                "d": d.as_unsigned()[:bits], "d_back": (s.a_c - s.a_t)[:bits]}
    if j == 1:
        ta = s.t_anchors
        # Two tests of tree2's, made here on the registered operands as gates: the
        # distance's clamp (after the choice in tree2, test and clamp are four LUT
        # levels), and lim < n, i.e. F + 124 < 0 (lim = F + n + 124 does not wrap; on F
        # in tree2, a chain, it is a worst path: tree1 -> tree2, 12 cells).
        return {"t_anchors": ta, "dist": Mux(ta, s.d, s.d_back),
                "lim_small": Mux(ta, less_than_const(m, s.a_t, -124, step.name("a_t_small")),
                                 less_than_const(m, s.a_c, -124, step.name("a_c_small"))),
                "dist_big": Mux(ta, ~less_than_const(m, s.d, n, step.name("dist_small")),
                                ~less_than_const(m, s.d_back, n,
                                                 step.name("dist_back_small"))),
                "frame": Mux(ta, s.a_t, s.a_c)[:bits].as_signed()}
    if j == 2:
        return {"t_anchors": s.t_anchors, "dist": Mux(s.dist_big, n, s.dist)[:nb],
                "lim": (s.frame + (n + 124))[:bits].as_signed(),
                "lim_small": s.lim_small}
    return {"t_anchors": s.t_anchors, "dist": s.dist, "lim": s.lim,
            "lim_small": s.lim_small}
