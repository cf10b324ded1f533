"""What the sections of the fused step share: :class:`FusedStep`, the step under
construction (its pipeline scope, geometry and way of multiplying), the names of its signals
and the crossing of a section boundary.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Cat, Module
from amaranth.utils import bits_for

from ..arith import wire
from ..pipeline import Pipeline
from ..scope import PipelineScope
from .geometry import CHUNK_BITS, GUARD, DotGeometry

__all__ = ["FusedStep"]


@dataclass(frozen=True)
class FusedStep:
    """The fused step under construction: each section function (:mod:`hw.dot.decode`,
    :mod:`hw.dot.products`, :mod:`hw.dot.block_sum`, :mod:`hw.dot.window`,
    :mod:`hw.dot.normalize`, :mod:`hw.dot.finish`) takes it and the view after the boundary
    before, places its section and returns the view after its own boundary.

    The step crosses its boundaries and names its signals through ``scope``
    (:class:`hw.scope.PipelineScope`): without a prefix, the pipeline's own names; with one,
    every signal is ``<prefix>_<name>``, so several steps sit side by side on one pipeline.

    Attributes
    ----------
    scope : PipelineScope
        The step's view of a pipeline declared with :func:`hw.dot.sections.dot_sections` of
        ``geometry`` (in the scope's sections).
    geometry : DotGeometry
    multipliers : str
        One of :data:`hw.dot.sections.MULTIPLIERS`.
    has_side : bool
        Whether values ride along unchanged (``side``, MXDotGeneral).
    """

    scope: PipelineScope
    geometry: DotGeometry
    multipliers: str = "lut"
    has_side: bool = False

    @classmethod
    def on(cls, scope, geometry: DotGeometry, multipliers: str, side) -> FusedStep:
        """The step placed through ``scope`` (a :class:`hw.scope.PipelineScope`, or a
        :class:`hw.pipeline.Pipeline` for its own unprefixed scope), with ``side`` riding
        along if given: what every block step (fused or truncating) starts from."""
        if isinstance(scope, Pipeline):
            scope = scope.scope()
        elif not isinstance(scope, PipelineScope):
            raise TypeError(f"scope must be a PipelineScope or a Pipeline, not "
                            f"{type(scope).__name__}")
        return cls(scope, geometry, multipliers, has_side=bool(side))

    @property
    def m(self) -> Module:
        """The module the step is built in (the pipeline's)."""
        return self.scope.module

    def name(self, name: str) -> str:
        """A signal name within the step's scope (:meth:`hw.scope.PipelineScope.name`)."""
        return self.scope.name(name)

    @property
    def block_size(self) -> int:
        return self.geometry.block_size

    @property
    def signed_codes(self) -> bool:
        """Both operands are two's complement codes: each code is its own signed
        significand, and the products need no decoding."""
        return self.geometry.fmt_a.twos_complement and self.geometry.fmt_b.twos_complement

    @property
    def ue4m3(self) -> bool:
        """UE4M3 block scales (NVFP4, :mod:`hw.dot.nvfp4_scale`)."""
        return self.geometry.scale_format == "ue4m3"

    @property
    def in_block(self) -> bool:
        """Lane products in instantiated MULT18X18D blocks (:mod:`hw.dsp`)."""
        return self.multipliers == "mult18x18d"

    @property
    def window_bits(self) -> int:
        """``n``: the window of ``c + T`` (:attr:`DotGeometry.window_bits`)."""
        return self.geometry.window_bits

    @property
    def shift_bits(self) -> int:
        """Bits of a shift amount ``0..n``."""
        return bits_for(self.window_bits)

    @property
    def padded_bits(self) -> int:
        """The window padded below to whole chunks (:data:`CHUNK_BITS`) for normalizing."""
        return -(-self.window_bits // CHUNK_BITS) * CHUNK_BITS

    @property
    def chunks(self) -> int:
        """Chunks of the padded window."""
        return self.padded_bits // CHUNK_BITS

    @property
    def frame_offset(self) -> int:
        """``aT - sa - sb``: the frame when T anchors is ``sa + sb + lsb - 254 - G``."""
        return self.geometry.lsb_exp - 254 - GUARD

    def cross(self, fields, name: str):
        """A section boundary: ``fields`` as one struct signal (named ``name`` in the scope),
        maybe a register."""
        return self.scope.boundary(wire(self.m, fields, self.name(name)), name)

    def side(self, s):
        """The side values of ``s``, or None without them."""
        return s.side if self.has_side else None

    def specials(self, s) -> dict:
        """The special-value summary and c, carried from ``product`` to ``round``."""
        return {"nan": s.nan, "inf": s.inf, "inf_neg": s.inf_neg, "c": s.c,
                "c_zero": s.c_zero, "side": self.side(s)}

    def chunk_any(self, value, j: int):
        """Whether chunk ``j`` (from the top) of an ``n``-bit value has a one (the last
        chunk holds fewer of the ``n`` bits)."""
        n = self.window_bits
        return Cat(*(value[i] for i in range(max(0, n - CHUNK_BITS * (j + 1)),
                                             n - CHUNK_BITS * j))).any()
