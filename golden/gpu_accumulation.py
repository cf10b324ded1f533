"""GPU accumulation modes of the dot product: NVIDIA Blackwell's block-scaled MMA numerics.

``golden.dot`` and ``golden.dot_blocks`` compute the OCP dot product exactly, one RNE per block
(``accumulation="exact"``, docs/numerics.md section 5).  The modes here reproduce, bit for bit,
what a Blackwell tensor core's ``tcgen05.mma`` block-scaled kinds compute instead: every term
aligned to the largest exponent of the step and truncated, the terms summed, the sum rounded
toward zero (docs/numerics.md, "GPU accumulation modes", states the rules):

* ``"tcgen05.mxf8f6f4"``: OCP fp8/fp6/fp4 elements (mixed allowed), E8M0 scales, blocks of 32;
  one step per block.
* ``"tcgen05.mxf4"``: fp4_e2m1 x fp4_e2m1, E8M0 scales, blocks of 32; one step per two blocks
  (64 elements), products summed exactly in groups of 16.
* ``"tcgen05.mxf4nvf4"``: the mxf4 arithmetic with one scale per 16 or 32 elements, E8M0 or
  UE4M3 (NVFP4's scale, sign bit ignored).  The scales' format is explicit everywhere: an
  MXArray's ``scale_format`` (``golden.dot``, ``golden.matmul``), ``scale_format=`` of
  ``golden.dot_blocks`` and :func:`accumulate_rows`.

:func:`accumulate_rows` is the entry point for callers that chain rows of blocks themselves
(``golden.matmul``): one call per batch of (row, column) chains.
"""

from __future__ import annotations

import functools

import numpy as np

from . import _gpu_kernels as G
from .accumulation_kinds import ACCUMULATIONS, GPU_KINDS, SCALE_FORMATS, check_accumulation
from .codec import dot_tables
from .formats import ElementFormat, element_format

__all__ = ["ACCUMULATIONS", "GPU_KINDS", "SCALE_FORMATS", "check_accumulation",
           "accumulate_rows"]

#: Elements per tcgen05 step.
_STEP = {"tcgen05.mxf8f6f4": 32, "tcgen05.mxf4": 64, "tcgen05.mxf4nvf4": 64}


@functools.cache
def _scale_table(scale_format: str):
    """Scale codes as (significand, exponent, NaN flag) tables and the significand's fraction
    bits: a code is ``sig * 2^(exp - bits)``.  E8M0: ``2^(code - 127)``, NaN 0xFF.  UE4M3: the
    low seven bits as e4m3 (bias 7, subnormals ``M * 2^-9``, NaN 0x7F), the sign bit ignored."""
    codes = np.arange(256, dtype=np.int64)
    if scale_format == "e8m0":
        tables = (np.ones(256, np.int64), codes - 127, (codes == 255).astype(np.int64))
        bits = 0
    else:
        e, m = (codes >> 3) & 0xF, codes & 7
        tables = (np.where(e == 0, m, m | 8), np.where(e == 0, -6, e - 7),
                  ((codes & 0x7F) == 0x7F).astype(np.int64))
        bits = 3
    for t in tables:
        t.flags.writeable = False
    return (*tables, bits)


def _element_tables(fmt: ElementFormat):
    """dot_tables plus the format's lsb exponent and mantissa bits."""
    return (*dot_tables(fmt), fmt.lsb_exp, fmt.mbits)


def accumulate_rows(accumulation, a_codes, a_scales, b_codes, b_scales, acc_bits, fmt_a,
                    fmt_b, scale_format="e8m0") -> np.ndarray:
    """Chains of tcgen05 steps: the GPU counterpart of the exact per-block chain.

    Parameters
    ----------
    accumulation : str
        One of :data:`GPU_KINDS` (checked with the formats and block size).
    a_codes, b_codes : uint8 arrays of shape (rows, n, k)
        Element codes, n blocks of k per row (codes within the formats' ranges).
    a_scales, b_scales : uint8 arrays of shape (rows, n)
        Scale codes.
    acc_bits : int64 array of shape (rows,)
        fp32 bit patterns of the accumulator inputs.
    fmt_a, fmt_b : element formats.
    scale_format : {"e8m0", "ue4m3"}
        The scales' format (UE4M3 for ``"tcgen05.mxf4nvf4"`` only, blocks of 16).

    Returns
    -------
    int64 array of shape (rows,): fp32 bit patterns, ``acc`` chained through the steps of each
    row in block order.
    """
    fa, fb = element_format(fmt_a), element_format(fmt_b)
    ac, bc = np.ascontiguousarray(a_codes, np.uint8), np.ascontiguousarray(b_codes, np.uint8)
    check_accumulation(accumulation, fa, fb, ac.shape[-1], scale_format)
    if accumulation == "exact":
        raise ValueError("accumulate_rows runs a GPU kind; 'exact' is golden.dot_blocks")
    args = (ac, np.ascontiguousarray(a_scales, np.uint8), bc,
            np.ascontiguousarray(b_scales, np.uint8), np.ascontiguousarray(acc_bits, np.int64))
    out = np.empty(ac.shape[0], np.int64)
    sig_a, sh_a, flag_a, lsb_a, m_a = _element_tables(fa)
    sig_b, sh_b, flag_b, lsb_b, m_b = _element_tables(fb)
    if accumulation == "tcgen05.mxf8f6f4":
        G.f8f6f4_rows(*args, sig_a, sh_a, flag_a, lsb_a + m_a, m_a,
                      sig_b, sh_b, flag_b, lsb_b + m_b, m_b, out)
    else:
        G.f4_rows(*args, sig_a, sh_a, lsb_a, sig_b, sh_b, lsb_b, *_scale_table(scale_format),
                  _STEP[accumulation] // ac.shape[-1], out)
    return out
