"""The MX GEMM tile: R x C dot lanes on one pipeline (:class:`MXGemm`).

* :mod:`hw.gemm.tile` -- the component: A blocks shared along rows, B blocks along columns,
  one fused dot step (:func:`hw.dot.fused_step.build_fused_step`) per output beside the
  others, interleaved fp32 accumulation over K blocks
  (:class:`hw.dot.contexts.AccumulatorContexts`).
* :mod:`hw.gemm.output` -- the MX output: each row's results quantized as one block by
  quantize steps side by side after the tile's pipeline.
* :mod:`hw.gemm.units` -- its command-line entry (``python -m hw generate gemm``).
"""

from .tile import MXGemm
from .units import cli_units

__all__ = ["MXGemm", "cli_units"]
