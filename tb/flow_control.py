"""cocotb probe of a unit's timing claims: its latency, and whether ``i.ready`` follows
``o.ready`` within a cycle (the sidecar's ``flow_control.i_ready``; docs/sidecar.md).

``python -m tb check`` runs it on the same build as the standard tests (the unit inside its
bulk wrapper, :mod:`tb.bulk`, in pass-through) and compares what it measured with the
sidecar (:func:`judge`).  Nothing here checks values: the payloads are random bits.

* **Latency.** With ``o.ready`` high, one block is sent into the empty unit (a run of one
  block, ``first`` and ``last`` set, for MXDotGeneral); if it is transferred in at rising
  edge t and first presented (``o.valid`` high) after edge t + m, the measured latency is
  m + 1: the edge at which it is transferred out (docs/sidecar.md, ``latency``).
* **i.ready.** For :data:`PROBE_CYCLES` cycles of random input and random backpressure (half
  the cycles stalled, so the unit fills up), ``o.ready`` is set to 0 and then to 1 between
  two clock edges, ``i.ready`` read after each, and then ``o.ready`` set to the cycle's
  pattern before the edge.  No register changes between two edges, so a registered
  ``i.ready`` reads the same both times; a difference is a combinational path from
  ``o.ready`` to ``i.ready``.

The unit's sidecar is the file named by ``$MX_SIDECAR``; the result is one JSON object
written to the file named by ``$MX_FLOW_FILE``:
``{"latency": m + 1 or null, "i_ready_follows_o_ready": cycles seen, "first_cycle": ...,
"probe_cycles": ...}``.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

__all__ = ["FLOW_FILE_ENV", "PROBE_CYCLES", "LATENCY_WAIT_CYCLES", "judge"]

#: Environment variable naming the probe's result file.
FLOW_FILE_ENV = "MX_FLOW_FILE"
#: Cycles of random traffic in which ``i.ready`` is watched.
PROBE_CYCLES = 400
#: Cycles the latency measurement waits for the block to come out.
LATENCY_WAIT_CYCLES = 1000


def judge(meta: dict, result: dict) -> list[str]:
    """The differences between the sidecar ``meta`` and a probe ``result`` as report lines
    (empty: the claims hold)."""
    problems = []
    if result.get("latency") is None:
        problems.append(f"latency: the probe's block did not come out within "
                        f"{LATENCY_WAIT_CYCLES} cycles")
    elif result["latency"] != meta["latency"]:
        problems.append(f"latency: the sidecar says {meta['latency']}, measured "
                        f"{result['latency']} (a block transferred in at edge t was first "
                        f"presented after edge t + {result['latency'] - 1})")
    follows = result.get("i_ready_follows_o_ready", 0)
    if meta["flow_control"]["i_ready"] == "registered" and follows:
        problems.append(f"flow_control: the sidecar says i_ready is registered, but i_ready "
                        f"followed o_ready between two clock edges in {follows} of "
                        f"{result['probe_cycles']} cycles (first: cycle "
                        f"{result['first_cycle']}): a combinational path")
    return problems


def run_flags(meta: dict) -> int:
    """The input payload bits of the fields ``first`` and ``last`` (MXDotGeneral: a block
    with both set is a run of one, which gives an output), 0 for a unit without them."""
    from hw.sidecar import flat_fields, port_by_role

    fields = flat_fields(port_by_role(meta, "i.payload")["fields"])
    return sum(1 << f["lsb"] for f in fields if f["name"] in ("first", "last"))


async def _measure_latency(dut, rng, edge, read_only, flags: int):
    """Edges from the input transfer to the first edge after which ``o.valid`` is high, plus
    one; None if it never comes."""
    dut.o__ready.value = 1
    dut.i__payload.value = rng.getrandbits(len(dut.i__payload)) | flags
    dut.i__valid.value = 1
    for _ in range(LATENCY_WAIT_CYCLES):
        await read_only()
        accepted = int(dut.i__ready.value)
        await edge()
        if accepted:
            break
    dut.i__valid.value = 0
    for m in range(LATENCY_WAIT_CYCLES):
        await read_only()
        if int(dut.o__valid.value):
            return m + 1
        await edge()
    return None


async def _watch_i_ready(dut, rng, edge, timer) -> tuple[int, int | None]:
    """Cycles in which ``i.ready`` changed with ``o.ready`` between two edges, and the
    first."""
    from cocotb.triggers import FallingEdge

    follows, first, valid, accepted = 0, None, 0, 0
    for cycle in range(PROBE_CYCLES):
        await FallingEdge(dut.clk)
        if not valid or accepted:  # a block offered stays until it is taken
            valid = int(rng.random() < 0.7)
            dut.i__payload.value = rng.getrandbits(len(dut.i__payload))
            dut.i__valid.value = valid
        seen = []
        for ready in (0, 1):
            dut.o__ready.value = ready
            await timer()
            seen.append(int(dut.i__ready.value))
        if seen[0] != seen[1]:
            follows += 1
            first = cycle if first is None else first
        dut.o__ready.value = int(rng.random() < 0.5)
        await timer()
        accepted = valid and int(dut.i__ready.value)
        await edge()
    return follows, first


async def _probe(dut) -> None:
    import cocotb
    from cocotb.clock import Clock
    from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge, Timer

    from .bulk.runner import pass_through

    rng = random.Random(int(os.environ.get("MX_SEED", "1")))
    pass_through(dut)
    dut.i__valid.value = 0
    dut.o__ready.value = 1
    dut.rst.value = 1
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0

    async def edge():
        await RisingEdge(dut.clk)

    async def timer():
        await Timer(1, unit="ns")

    meta = json.loads(Path(os.environ["MX_SIDECAR"]).read_text())
    latency = await _measure_latency(dut, rng, edge, ReadOnly, run_flags(meta))
    await RisingEdge(dut.clk)
    follows, first = await _watch_i_ready(dut, rng, edge, timer)
    result = {"latency": latency, "i_ready_follows_o_ready": follows, "first_cycle": first,
              "probe_cycles": PROBE_CYCLES}
    dut._log.info("flow control probe: %s", result)
    path = os.environ.get(FLOW_FILE_ENV)
    if path:
        with open(path, "w") as f:
            json.dump(result, f)


try:
    import cocotb as _cocotb
except ImportError:  # imported outside a simulator: judge() only
    pass
else:
    @_cocotb.test()
    async def flow_control(dut):
        """Measure the latency and watch i.ready against o.ready (module docstring)."""
        await _probe(dut)
