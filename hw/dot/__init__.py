"""MX dot-product units (:class:`MXDot`, :class:`MXDotGeneral`) and their geometry.

* :mod:`hw.dot.geometry` -- widths derived from the formats.
* :mod:`hw.dot.sections` -- the fused step's sections, their delays and splits.
* :mod:`hw.dot.fused_step` -- the fused block step, placed section by section from
  :mod:`~hw.dot.decode`, :mod:`~hw.dot.products`, :mod:`~hw.dot.block_sum` (with
  :mod:`~hw.dot.frame`), :mod:`~hw.dot.window`, :mod:`~hw.dot.normalize` and
  :mod:`~hw.dot.finish`, over :class:`hw.dot.step.FusedStep`.
* :mod:`hw.dot.truncated_step` -- the GPU accumulation modes' truncating block step (from
  :mod:`~hw.dot.truncated_terms`, :mod:`~hw.dot.truncated_sum`, :mod:`~hw.dot.truncated_f4`,
  sections in :mod:`~hw.dot.truncated_sections`).
* :mod:`hw.dot.nvfp4_scale` -- NVFP4's UE4M3 scales in the fused step; :mod:`hw.dot.epilogue`
  -- its tensor scales' ``f(alpha * sum)``.
* :mod:`hw.dot.contexts` -- interleaved accumulation contexts (MXDotGeneral's, and the GEMM
  tile's, :mod:`hw.gemm`).
* :mod:`hw.dot.parameters` -- the parameters the units on the block step share, checked once,
  and the choice of step (:func:`~hw.dot.parameters.build_step`).
* :mod:`hw.dot.units` -- the two components and their command-line entries.
"""

from .geometry import DotGeometry, units_max, width_table
from .units import MXDot, MXDotGeneral, cli_units

__all__ = ["MXDot", "MXDotGeneral", "DotGeometry", "width_table",
           "units_max", "cli_units"]
