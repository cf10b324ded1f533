"""The ``tcgen05.mxf4`` / ``tcgen05.mxf4nvf4`` step over a run's blocks (MXDotGeneral,
:class:`hw.gemm.MXGemm`; ``docs/numerics.md`` section 8, ``docs/dot.md``, "Accumulation
modes"): the state a block leaves to the run's next one.

A step takes 64 elements: two blocks of 32 or four of 16, in run order, and a run's last
step may hold fewer (``golden.dot_blocks`` chains ``64 / k`` blocks per step).  Every beat is
one block, so the truncating step (:mod:`hw.dot.truncated_f4`) takes, beside its block and
the step's ``c``, the groups of the step's earlier blocks (their exact sums, exponents and
whether they count for ``e_max``): the accumulator of a context (:class:`hw.dot.contexts.
AccumulatorContexts`, ``width``) holds :func:`chain_layout`:

* ``c``: the fp32 ``c`` of the step under way (a run's ``c0``, then each step's result);
* ``pend``: how many of its blocks have passed (0 .. ``64 / k - 1``);
* ``nan``: one of them had a NaN scale;
* ``groups``: their groups (``val`` the signed exact sum in units of ``2^(lsb_a + lsb_b)``,
  ``x`` the scales' exponent, ``nz`` whether it counts for ``e_max``), oldest first; the
  unused ones zero.  With UE4M3 scales (nvfp4, blocks of 16) ``val`` is the group's UE4M3
  value, the exact sum times the scale significands' product ``P`` (at most 225), and ``x``
  the scales' exponents with their six fraction bits (:mod:`hw.dot.truncated_f4`):
  :func:`group_value_bits` wider, and four such groups need the wider sum of
  :data:`NVFP4_CHAINED_SUM_BITS`.

A block closes its step when it is the run's last or the step's ``64 / k``-th: its result is
the step's, computed over its own groups, the pending ones and ``c``, and it leaves the state
``(result, 0, 0, zeros)``.  Any other block leaves ``c`` as it was, ``pend + 1``, the NaN flag
and its groups appended (:func:`next_state`); its result is not a step's and is never output
(only a run's last block leaves the unit).
"""

from __future__ import annotations

from amaranth.hdl import Signal, signed, unsigned
from amaranth.lib import data

import golden

from .geometry import units_max
from .nvfp4_scale import NVFP4_ELEMENTS, scale_sig_max
from .truncated_sections import (
    EXPONENT_BITS,
    F4_FRACTION_BITS,
    F4_GROUP,
    F4_SUM_BITS,
    F4_ZERO_EXPONENT,
    KINDS,
    TruncatedKind,
)

__all__ = ["STEP_ELEMENTS", "NVFP4_CHAINED_SUM_BITS", "step_blocks", "pending_groups",
           "group_value_bits", "chained_kind", "group_layout", "chain_layout", "next_state",
           "close_and_count"]

#: Elements per tcgen05.mxf4 / mxf4nvf4 step.
STEP_ELEMENTS = 64
#: Bits of the magnitude of a chained UE4M3 step's sum: four groups of at most
#: ``16 * 36 * 225 * 2^-8 = 2025`` (< 2^11) at ``2^35`` units of ``2^(e_max - 35)``, and
#: ``c`` below ``2^36``: below ``2^48``, one bit more than :data:`F4_SUM_BITS` (one group and
#: ``c``, or four E8M0 groups of at most 576).
NVFP4_CHAINED_SUM_BITS = F4_SUM_BITS + 1


def step_blocks(block_size: int) -> int:
    """Blocks per step: 2 at ``block_size`` 32, 4 at 16."""
    if block_size not in (16, 32):
        raise ValueError(f"the mxf4 steps chain blocks of 16 or 32, not {block_size}")
    return STEP_ELEMENTS // block_size


def pending_groups(block_size: int) -> int:
    """Groups of 16 the state holds: those of a step's blocks but its last."""
    return (step_blocks(block_size) - 1) * (block_size // F4_GROUP)


def group_value_bits(scale_format: str = "e8m0") -> int:
    """Bits of a group value's magnitude in units of ``2^(lsb_a + lsb_b)``: 16 products of at
    most 36 (:data:`F4_GROUP_BITS`, E8M0), times the largest ``P`` (UE4M3: 19)."""
    units = units_max(golden.element_format(NVFP4_ELEMENTS))
    return (F4_GROUP * units * units * scale_sig_max(scale_format) ** 2).bit_length()


def chained_kind(accumulation: str, scale_format: str = "e8m0") -> TruncatedKind:
    """The back end's kind of a chained step: the mode's, with UE4M3 scales the sum
    :data:`NVFP4_CHAINED_SUM_BITS` wide."""
    if scale_format == "e8m0":
        return KINDS[accumulation]
    return TruncatedKind(F4_FRACTION_BITS, F4_ZERO_EXPONENT, NVFP4_CHAINED_SUM_BITS)


def group_layout(scale_format: str = "e8m0") -> data.StructLayout:
    """One pending group: ``val`` (signed exact sum, or UE4M3 value), ``x`` (exponent), ``nz``
    (counts)."""
    return data.StructLayout({"val": signed(group_value_bits(scale_format) + 1),
                              "x": signed(EXPONENT_BITS), "nz": unsigned(1)})


def chain_layout(block_size: int, scale_format: str = "e8m0") -> data.StructLayout:
    """The state a block leaves to the run's next (the module docstring); ``c`` in the low 32
    bits, so that a run's ``c0`` zero-extended is its first state."""
    pend_bits = (step_blocks(block_size) - 1).bit_length()
    return data.StructLayout({
        "c": unsigned(32), "pend": unsigned(pend_bits), "nan": unsigned(1),
        "groups": data.ArrayLayout(group_layout(scale_format), pending_groups(block_size))})


def next_state(m, block_size: int, result, chain, groups, name: str,
               scale_format: str = "e8m0"):
    """The state after a block: ``(result, 0, 0, zeros)`` when ``chain.close``, else
    ``chain``'s ``c``, ``pend`` and ``nan`` (:func:`hw.dot.truncated_f4.decode` counted and
    merged them) and ``groups`` (the pending ones with the block's appended,
    :func:`hw.dot.truncated_f4.align`)."""
    state = Signal(chain_layout(block_size, scale_format), name=name)
    with m.If(chain.close):
        m.d.comb += state.c.eq(result)
    with m.Else():
        m.d.comb += [state.c.eq(chain.c), state.pend.eq(chain.pend), state.nan.eq(chain.nan)]
        m.d.comb += [state.groups[i].eq(groups[i]) for i in range(len(state.groups))]
    return state


def close_and_count(state, last, block_size: int) -> dict:
    """The fields of a block's ``chain`` side value: whether it closes its step (the run's
    ``last``, or the step's last block), the ``c`` it keeps and the count after it."""
    close = last | (state.pend == step_blocks(block_size) - 1)
    return {"close": close, "c": state.c, "pend": (state.pend + 1)[:len(state.pend)]}
