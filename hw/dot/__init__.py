"""MX dot-product units (:class:`MXDot`, :class:`MXDotGeneral`) and their geometry.

* :mod:`hw.dot.geometry` -- widths derived from the formats.
* :mod:`hw.dot.fused_step` -- the fused block step, section by section.
* :mod:`hw.dot.units` -- the two components and their command-line entries.
"""

from .geometry import DotGeometry, units_max, width_table
from .units import MXDot, MXDotGeneral, cli_units

__all__ = ["MXDot", "MXDotGeneral", "DotGeometry", "width_table",
           "units_max", "cli_units"]
