"""The quantizer's datapath as steps: functions that place its sections on a pipeline.

* :mod:`hw.quantize.sections` -- the sections, their delay estimates, the block-max tree's
  shape.
* :mod:`hw.quantize.geometry` -- :class:`QuantizeGeometry`, the constants derived once.
* :mod:`hw.quantize.fields` -- section values as struct fields and back.
* :mod:`hw.quantize.decode` -- ``input``, ``decode``, ``norm``: per-lane keys and
  normalized significands.
* :mod:`hw.quantize.amax` -- the block-max tree's sections.
* :mod:`hw.quantize.scale` -- the block's scale from the tree's candidates, in copies.
* :mod:`hw.quantize.encode` -- ``cmp``, ``shift``, ``align``, ``round``, ``output``.
* :mod:`hw.quantize.step` -- :func:`quantize_step`, the sections in order through a
  :class:`hw.pipeline.PipelineScope`.

:class:`hw.quantizer.MXQuantizer` is the step alone on a pipeline of its own.
"""

from .geometry import QuantizeGeometry
from .step import quantize_step

__all__ = ["QuantizeGeometry", "quantize_step"]
