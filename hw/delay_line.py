"""Delay lines: a value that waits over many pipeline stages in a memory ring, not in a
chain of stage registers.

A value that a datapath needs only many stages after it enters (the NVFP4 quantizer's input
values, which wait while the block path computes the scale) would otherwise ride every stage
register between: k x 32 flip-flops a stage.  :func:`delay_line` keeps it in a ring of
``n - 1`` entries (``n`` the registered boundaries it skips) read asynchronously, in
distributed RAM (:data:`RING_ATTRS`; ECP5 ``TRELLIS_DPR16X4``), and a last stage register of
its own:
at every stage enable the register takes the ring's oldest entry and the ring's pointer
entry takes the new value, so the register holds, after enable ``t``, the value that entered
at enable ``t - (n - 1)``, as the last of ``n`` stage registers would.  Under backpressure
the ring moves with the pipeline's common enable; bubbles ride in it as in the registers.

The last registered boundary stays an ordinary stage register after the ring's: a
distributed RAM's output is late (4.26 ns from the write clock in nextpnr's ECP5 model), so
its register must be a plain flip-flop beside it, and a ring register that fed a multiplier
directly was packed into the MULT18X18D's input register across the die (the NVFP4
quantizer's critical path, 8.16 ns).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Mux, Signal, Value, unsigned
from amaranth.lib.memory import Memory

from .pipeline import enable_parts

__all__ = ["delay_line", "RING_ATTRS", "RING_MIN", "RING_PART_BITS"]

#: The ring memories' attributes: distributed RAM whatever the depth (yosys ``memory_libmap``
#: and Vivado read ``ram_style``).  Left to its cost model, yosys maps a ring over 48 entries
#: deep to ECP5 block RAM, whose read data comes 4.26 ns after the clock without its output
#: register (the NVFP4 quantizer's critical path, 6.25 ns, depth 63, seed 1).
RING_ATTRS = {"ram_style": "distributed"}
#: The fewest registered boundaries a ring replaces; shorter runs stay stage registers.
RING_MIN = 4
#: The widest memory on one enable copy: a wider value is split into rings of at most this
#: many bits, each with its own enable and pointer (one enable net to every write port of a
#: 512-bit ring would fan out over the die, as one net to a whole stage does; a pointer into
#: the four banks of distributed RAM of a 116-bit part was a critical path, 5.21 ns of
#: routing, depth 63, seed 2).
RING_PART_BITS = 64


def delay_line(pipe, value, names, name: str):
    """``value`` carried over the consecutive boundaries ``names`` of ``pipe``.

    Parameters
    ----------
    pipe : hw.pipeline.Pipeline
        Its datapath has crossed ``names`` already (a delay line runs beside it).
    value : Value
        The value entering the section before ``names[0]``.
    names : sequence of str
        Consecutive boundaries; the last is not the pipeline's last (whose block a skid
        register catches).
    name : str
        Prefix of the delay line's signals (``<pipeline>_<name>_...``).

    Returns
    -------
    Value
        ``value`` as the registers of ``names`` would present it after the last of them:
        the same value ``n`` stage enables later, ``n`` the registered boundaries among
        ``names``.
    """
    value = Value.cast(value)
    names = list(names)
    registered = [b for b in names if pipe.registers(b)]
    if len(registered) < RING_MIN:
        return _beside(pipe, value, names, name)
    last = names.index(registered[-1])
    return _beside(pipe, _ring(pipe, value, registered[:-1], name), names[last:], name)


def _beside(pipe, value, names, name: str):
    """``value`` in the stage registers of ``names``."""
    for b in names:
        value = pipe.beside(value, b, f"{name}_{b}")
    return value


def _ring(pipe, value, registered, name: str):
    """``value`` over the registered boundaries ``registered``: a ring of one entry fewer
    and a register of its own, per part of at most :data:`RING_PART_BITS` bits."""
    depth = len(registered) - 1
    m = pipe.module
    out = []
    for part, (lo, hi) in enumerate(enable_parts(len(value), RING_PART_BITS)):
        tag = f"{pipe.name}_{name}_p{part}"
        enable = pipe.enable_copy(registered[-1])
        # reset-less, as the stage registers' data: the ring moves with every enable, in
        # reset too, so it presents what the registers would in every state
        pointer = Signal(range(depth), name=f"{tag}_ptr", reset_less=True)
        ring = Memory(shape=unsigned(hi - lo), depth=depth, init=[], attrs=RING_ATTRS)
        m.submodules[f"{tag}_ring"] = ring
        write, read = ring.write_port(), ring.read_port(domain="comb")
        oldest = Signal(hi - lo, name=f"{tag}_q", reset_less=True)
        m.d.comb += [read.addr.eq(pointer), write.addr.eq(pointer), write.data.eq(value[lo:hi]),
                     write.en.eq(enable)]
        with m.If(enable):
            m.d.sync += [oldest.eq(read.data),
                         pointer.eq(Mux(pointer == depth - 1, 0, pointer + 1))]
        out.append(oldest)
    return Cat(*out)
