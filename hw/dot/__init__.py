"""MX dot-product units (:class:`MXDot`, :class:`MXDotGeneral`) and their geometry.

* :mod:`hw.dot.geometry` -- widths derived from the formats.
* :mod:`hw.dot.sections` -- the fused step's sections, their delays and splits.
* :mod:`hw.dot.fused_step` -- the fused block step, placed section by section from
  :mod:`~hw.dot.decode`, :mod:`~hw.dot.products`, :mod:`~hw.dot.block_sum` (with
  :mod:`~hw.dot.frame`), :mod:`~hw.dot.window`, :mod:`~hw.dot.normalize` and
  :mod:`~hw.dot.finish`, over :class:`hw.dot.step.FusedStep`.
* :mod:`hw.dot.contexts` -- interleaved accumulation contexts (MXDotGeneral's, and the GEMM
  tile's, :mod:`hw.gemm`).
* :mod:`hw.dot.units` -- the two components and their command-line entries.
"""

from .geometry import DotGeometry, units_max, width_table
from .units import MXDot, MXDotGeneral, cli_units

__all__ = ["MXDot", "MXDotGeneral", "DotGeometry", "width_table",
           "units_max", "cli_units"]
