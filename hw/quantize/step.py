"""The quantizer's datapath as one step: its sections placed on a pipeline it is given.

:func:`quantize_step` builds ``docs/numerics.md`` section 3 (quantization) for one block per
clock through a :class:`hw.pipeline.PipelineScope`, whose pipeline declares the step's
sections (:func:`hw.quantize.sections.quantizer_sections`, prefixed for the scope:
:func:`hw.pipeline.scoped_sections`).  :class:`hw.quantizer.MXQuantizer` is this step alone
on a pipeline of its own; a larger unit may place it after other steps on one pipeline.
"""

from __future__ import annotations

from .amax import amax_tree
from .decode import decode_section, late_lanes, norm_section
from .encode import align_section, cmp_section, output_section, round_section, shift_section
from .scale import scale_section

__all__ = ["quantize_step"]


def quantize_step(scope, g, payload):
    """Place the quantizer's sections, ``input`` to ``output``, through ``scope``.

    Parameters
    ----------
    scope : hw.pipeline.PipelineScope
        Its pipeline declares the sections of ``g`` (in the scope) in datapath order.
    g : hw.quantize.geometry.QuantizeGeometry
    payload : data.View
        The block (:attr:`hw.quantizer.MXQuantizer.in_layout`: ``data``, and ``random``,
        ``rounding``, ``scale_mode`` where built), before the ``input`` boundary.

    Returns
    -------
    data.View
        After the ``output`` boundary: ``scale`` (E8M0 code) and ``codes`` (k element codes),
        :func:`hw.elements.block_layout`.
    """
    x = norm_section(scope, g, decode_section(scope, g, payload))
    x, lanes, amax = amax_tree(scope, g, x, late_lanes(scope, g, x))
    y, e_keys = scale_section(scope, g, x, lanes, amax)
    z = shift_section(scope, g, cmp_section(scope, g, y, e_keys))
    z = round_section(scope, g, align_section(scope, g, z))
    return output_section(scope, g, z)
