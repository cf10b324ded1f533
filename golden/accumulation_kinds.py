"""The ``accumulation=`` names of the dot product and what each GPU kind takes (formats, block
sizes, scale formats): :func:`check_accumulation`, without the kernels (``hw`` checks its
units' parameters with it, and generating Verilog loads no numba).  The modes themselves are
:mod:`golden.gpu_accumulation` (docs/numerics.md section 8).
"""

from __future__ import annotations

from .formats import FP4_E2M1, FP6_E2M3, FP6_E3M2, FP8_E4M3, FP8_E5M2, element_format

__all__ = ["ACCUMULATIONS", "GPU_KINDS", "SCALE_FORMATS", "check_accumulation"]

#: The tcgen05 block-scaled kinds golden models, and every accepted ``accumulation=``.
GPU_KINDS = ("tcgen05.mxf8f6f4", "tcgen05.mxf4", "tcgen05.mxf4nvf4")
ACCUMULATIONS = ("exact",) + GPU_KINDS
#: Block-scale formats of the tcgen05 kinds.
SCALE_FORMATS = ("e8m0", "ue4m3")

#: Element formats (and what to call them), block sizes per scale format, per kind.
_F8F6F4 = (FP8_E4M3, FP8_E5M2, FP6_E3M2, FP6_E2M3, FP4_E2M1)
_TAKES = {
    "tcgen05.mxf8f6f4": (_F8F6F4, "the OCP fp8/fp6/fp4 element formats", {"e8m0": (32,)}),
    "tcgen05.mxf4": ((FP4_E2M1,), "fp4_e2m1 only", {"e8m0": (32,)}),
    "tcgen05.mxf4nvf4": ((FP4_E2M1,), "fp4_e2m1 only", {"e8m0": (16, 32), "ue4m3": (16,)}),
}


def check_accumulation(accumulation, fmt_a=None, fmt_b=None, block_size=None,
                       scale_format=None) -> str:
    """Validate an ``accumulation=`` argument (and, given, the formats, block size and scale
    format it is used with); returns the kind.

    Parameters
    ----------
    accumulation : str
        ``"exact"`` or one of :data:`GPU_KINDS`.
    fmt_a, fmt_b : element formats, optional
    block_size : int, optional
    scale_format : {"e8m0", "ue4m3"}, optional
        The block-scale format (E8M0 when omitted).

    Raises
    ------
    ValueError
        An unknown name; a format, block size or scale format the kind does not take.
    """
    if not isinstance(accumulation, str) or accumulation not in ACCUMULATIONS:
        raise ValueError(f"accumulation must be one of {', '.join(map(repr, ACCUMULATIONS))}, "
                         f"got {accumulation!r}")
    if accumulation == "exact":
        return accumulation
    formats, which, sizes = _TAKES[accumulation]
    scale_format = "e8m0" if scale_format is None else scale_format
    if not isinstance(scale_format, str) or scale_format not in sizes:
        raise ValueError(f"accumulation {accumulation!r} takes scale formats "
                         f"{', '.join(sizes)}, got {scale_format!r}")
    for name, f in (("fmt_a", fmt_a), ("fmt_b", fmt_b)):
        if f is not None and element_format(f) not in formats:
            raise ValueError(f"accumulation {accumulation!r} takes {which}, got {name} "
                             f"{element_format(f).name}")
    ks = sizes[scale_format]
    if block_size is not None and int(block_size) not in ks:
        raise ValueError(f"accumulation {accumulation!r} takes blocks of "
                         f"{' or '.join(map(str, ks))} elements with {scale_format} scales, "
                         f"got block size {int(block_size)}")
    return accumulation
