"""The in-context port ring: a flip-flop on every port of a unit, so place and route times the
unit as a host design would see it."""

from __future__ import annotations

from hw.sidecar import describe_ports

__all__ = ["port_ring"]


def port_ring(component, name: str) -> tuple[str, str]:
    """Verilog of a top module that puts a flip-flop on every port of the unit ``name``.

    Place and route then times every path of the unit as a host design would see it: from the
    register that drives an input port through the unit to its first register, and from its
    last register to the register that captures an output. Returns (top module name, Verilog).
    """
    top = f"{name}_ring"
    decl, regs, conn = ["input clk", "input rst"], [], [".clk(clk)", ".rst(rst)"]
    for p in describe_ports(component):
        if p["role"] in ("clk", "rst"):
            continue
        n, w = p["name"], p["width"]
        rng = f"[{w - 1}:0] " if w > 1 else ""
        if p["direction"] == "in":
            decl.append(f"input {rng}{n}")
            regs.append(f"  reg {rng}r_{n};\n  always @(posedge clk) r_{n} <= {n};")
        else:
            decl.append(f"output reg {rng}{n}")
            regs.append(f"  wire {rng}r_{n};\n  always @(posedge clk) {n} <= r_{n};")
        conn.append(f".{n}(r_{n})")
    text = (f"module {top}(" + ", ".join(decl) + ");\n" + "\n".join(regs) + "\n"
            f"  {name} dut(" + ", ".join(conn) + ");\nendmodule\n")
    return top, text
