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
  unused ones zero.

A block closes its step when it is the run's last or the step's ``64 / k``-th: its result is
the step's, computed over its own groups, the pending ones and ``c``, and it leaves the state
``(result, 0, 0, zeros)``.  Any other block leaves ``c`` as it was, ``pend + 1``, the NaN flag
and its groups appended (:func:`next_state`); its result is not a step's and is never output
(only a run's last block leaves the unit).
"""

from __future__ import annotations

from amaranth.hdl import Signal, signed, unsigned
from amaranth.lib import data

from .truncated_sections import EXPONENT_BITS, F4_GROUP, F4_GROUP_BITS

__all__ = ["STEP_ELEMENTS", "step_blocks", "pending_groups", "group_layout", "chain_layout",
           "next_state", "close_and_count"]

#: Elements per tcgen05.mxf4 / mxf4nvf4 step.
STEP_ELEMENTS = 64


def step_blocks(block_size: int) -> int:
    """Blocks per step: 2 at ``block_size`` 32, 4 at 16."""
    if block_size not in (16, 32):
        raise ValueError(f"the mxf4 steps chain blocks of 16 or 32, not {block_size}")
    return STEP_ELEMENTS // block_size


def pending_groups(block_size: int) -> int:
    """Groups of 16 the state holds: those of a step's blocks but its last."""
    return (step_blocks(block_size) - 1) * (block_size // F4_GROUP)


def group_layout() -> data.StructLayout:
    """One pending group: ``val`` (signed exact sum), ``x`` (exponent), ``nz`` (counts)."""
    return data.StructLayout({"val": signed(F4_GROUP_BITS + 1), "x": signed(EXPONENT_BITS),
                              "nz": unsigned(1)})


def chain_layout(block_size: int) -> data.StructLayout:
    """The state a block leaves to the run's next (the module docstring); ``c`` in the low 32
    bits, so that a run's ``c0`` zero-extended is its first state."""
    pend_bits = (step_blocks(block_size) - 1).bit_length()
    return data.StructLayout({
        "c": unsigned(32), "pend": unsigned(pend_bits), "nan": unsigned(1),
        "groups": data.ArrayLayout(group_layout(), pending_groups(block_size))})


def next_state(m, block_size: int, result, chain, groups, name: str):
    """The state after a block: ``(result, 0, 0, zeros)`` when ``chain.close``, else
    ``chain``'s ``c``, ``pend`` and ``nan`` (:func:`hw.dot.truncated_f4.decode` counted and
    merged them) and ``groups`` (the pending ones with the block's appended,
    :func:`hw.dot.truncated_f4.align`)."""
    state = Signal(chain_layout(block_size), name=name)
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
