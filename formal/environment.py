"""The proof harnesses' shared environment (:mod:`formal.harness`,
:mod:`formal.chain_harness`): the free inputs, the first-cycle reset and ``past_rst``
(:class:`Harness`), the ``probe`` input sliced into the probed registers, the input's hold
assumption (property 1 on the input), and the quiet-cycle counter that ends a drain."""

from __future__ import annotations

from amaranth.hdl import (
    Assume,
    Elaboratable,
    ResetSignal,
    Signal,
    Value,
)

__all__ = ["Harness", "popcount", "probe_fields", "probe_bits", "held", "drive_free",
           "quiet_cycles"]


def popcount(bits):
    """The number of set bits among ``bits`` (one-bit Values), as a sum."""
    total = 0
    for b in bits:
        total = total + b
    return total


class Harness(Elaboratable):
    """Shared parts: the free inputs, the first-cycle reset and ``past_rst``, and the netlist
    names behind a ``probe`` input (a harness with probes sets ``probe_names``, kind -> wires,
    and ``widths``, bits per register of a kind, :func:`probe_fields`)."""

    def __init__(self):
        self.i_valid = Signal()
        self.o_ready = Signal()

    @property
    def probe_wires(self) -> list[str]:
        """Netlist names behind ``probe``, bit 0 first."""
        return probe_bits(self.probe_names, self.widths)

    def reset_control(self, m):
        rst = ResetSignal()
        started = Signal(reset_less=True)  # 0 only in the first cycle
        past_rst = Signal(init=1, reset_less=True)
        m.d.sync += [started.eq(1), past_rst.eq(rst)]
        m.d.comb += Assume(started | rst, "the first cycle is a reset")
        return rst, started, past_rst


def probe_fields(probe, names: dict[str, list[str]], widths: dict[str, int]):
    """Slice the ``probe`` input into the probed registers: kind -> list of Values, in the
    order of ``names`` (bit 0 of ``probe`` first; a kind in ``widths`` is that many bits per
    register, the others one bit)."""
    fields, at = {}, 0
    for kind, wires in names.items():
        w = widths.get(kind, 1)
        fields[kind] = [probe[at + w * j:at + w * (j + 1)] for j in range(len(wires))]
        at += w * len(wires)
    return fields


def probe_bits(names: dict[str, list[str]], widths: dict[str, int]) -> list[str]:
    """The netlist bits behind ``probe`` (bit 0 first), for :func:`formal.sby.run_sby`."""
    bits = []
    for kind, wires in names.items():
        w = widths.get(kind, 1)
        bits += [f"{wire}[{j}]" if kind in widths else wire for wire in wires for j in range(w)]
    return bits


def held(m, name, valid, ready, payload):
    """Registers of the previous cycle: ``valid & ~ready`` and the payload then."""
    wait = Signal(name=f"{name}_wait_prev", reset_less=True)
    prev = Signal(len(Value.cast(payload)), name=f"{name}_payload_prev", reset_less=True)
    m.d.sync += [wait.eq(valid & ~ready), prev.eq(payload)]
    return wait, prev


def drive_free(m, harness, dut, past_rst):
    """Connect ``dut``'s streams to the harness's free inputs (``i_valid``, ``i_payload``,
    ``o_ready``) and assume property 1 on the input: while ``i.valid & ~i.ready``, the next
    cycle keeps ``i.valid`` and the payload (not across a reset)."""
    m.d.comb += [dut.i.valid.eq(harness.i_valid), dut.i.payload.eq(harness.i_payload),
                 dut.o.ready.eq(harness.o_ready)]
    i_wait, i_prev = held(m, "i", dut.i.valid, dut.i.ready, dut.i.payload)
    with m.If(i_wait & ~past_rst):
        m.d.comb += Assume(dut.i.valid & (Value.cast(dut.i.payload) == i_prev),
                           "input held while not ready")


def quiet_cycles(m, rst, o_ready, accept, drain: int) -> Signal:
    """Consecutive cycles (saturating at ``drain``) with ``o_ready`` high and nothing
    accepted, restarted by a reset: at ``drain``, every block accepted before has left."""
    quiet = Signal(range(drain + 1), name="quiet", reset_less=True)
    with m.If(rst | ~o_ready | accept):
        m.d.sync += quiet.eq(0)
    with m.Elif(quiet != drain):
        m.d.sync += quiet.eq(quiet + 1)
    return quiet
