"""Logic levels between pipeline registers, read off the ECP5 netlist the flow's yosys writes.

nextpnr reports one critical path per placement: the worst stage, and which stage that is
changes with the seed.  The question before cutting sections for a faster clock is the other
way round: how deep is *every* stage?  This module answers it without placing anything.  For
each pair of register groups (a pipeline stage's register, named ``<prefix>_<section>`` by
:class:`hw.pipeline.Pipeline`, to the next one's) it finds the path with the longest
estimated delay: its LUT levels, that delay, and the most loads of a net along it.

Levels count LUT4s and carry-chain entries (a CCU2C reached from a LUT or a register); the
carry from cell to cell along a chain adds delay, not levels.  The delay estimate (ns, ECP5
speed 8) charges one route per level at :data:`ROUTE_NS` and the cells' own delays as nextpnr
reports them on this project's paths (:data:`CELL_NS`).  Placed routes range from about 0.1 to
1.6 ns, so the estimate ranks stages and is no prediction of Fmax: measured, a stage of four
LUT levels takes 4.4-4.6 ns placed (quantizer bf16 -> fp8_e4m3 at 10 stages), estimated 5.2.

A caveat that shapes the numbers: yosys's ``abc -lut 4`` maps the whole unit's logic at once,
so after mapping for depth it recovers area on every path up to the deepest stage's level
count.  A stage that could be three levels deep comes out as deep as the deepest one; only
once no stage needs four levels do the others stay at three (``docs/quantizer.md``).
``--depth-only`` maps for depth alone, so that each stage comes out near the levels its own
logic needs, and ``--fields`` names the register fields at the end of each deepest path: the
two that say what to cut (``docs/dot.md``, 'Toward 250 MHz').

``python -m bench.synth.levels UNIT ARGS... [--top N] [--fields] [--depth-only]``: synthesize
the configuration (as ``make synth`` does, nothing placed) and print its stages, deepest first.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import re
import sys
from pathlib import Path

__all__ = ["StagePath", "ROUTE_NS", "CELL_NS", "INPUT_PORTS", "OUTPUT_PORTS", "stage_paths",
           "format_stage_paths", "main"]

#: Estimated routing delay (ns) into each cell of a path and into the end register.
ROUTE_NS = 0.8
#: Estimated cell delays (ns): clock to Q, setup, a LUT4, a CCU2C entered at a data input (to
#: its sum or to its carry out), the carry from one CCU2C to the next, and the carry in to sum.
CELL_NS = {"clk_to_q": 0.4, "setup": 0.05, "lut": 0.18, "chain_in": 0.45, "carry": 0.08,
           "carry_to_sum": 0.25}

#: The ports of a cell that a path can enter through, by cell type (outputs by name).
_LUT_INPUTS = ("A", "B", "C", "D")
_CCU2C_INPUTS = {"S0": ("A0", "B0", "C0", "D0"), "S1": ("A1", "B1", "C1", "D1"),
                 "COUT": ("A0", "B0", "C0", "D0", "A1", "B1", "C1", "D1")}
#: A flip-flop's inputs a path ends at: data, clock enable, set/reset (yosys moves some
#: logic onto the last two).
_FF_ENDPOINTS = ("DI", "CE", "LSR")
#: The source and sink group of the unit's own ports (the port ring's registers are outside).
INPUT_PORTS, OUTPUT_PORTS = "<input ports>", "<output ports>"


@dataclasses.dataclass(frozen=True)
class StagePath:
    """The deepest path from one register group to another.

    Members
    -------
    source, dest : str
        Register groups (a pipeline register's name, or :data:`INPUT_PORTS` /
        :data:`OUTPUT_PORTS`).
    port : str
        The end flip-flops' input: ``DI`` (data), ``CE`` or ``LSR``.
    levels : int
        LUT4s and carry-chain entries on the path with the longest estimated delay.
    ns : float
        That path's estimated delay, register to register (:data:`ROUTE_NS`, :data:`CELL_NS`).
    fanout : int
        The most loads of a net on that path (cell inputs it drives, the unit's output ports
        included): a route that placement may have to stretch.
    fields : tuple of str
        The fields of ``dest``'s register (a struct's, as the netlist names them, array
        indices as ``[*]``) whose inputs are that deep, by the estimate: what to cut.  Empty
        where the register has no fields.
    """

    source: str
    dest: str
    port: str
    levels: int
    ns: float
    fanout: int
    fields: tuple[str, ...] = ()


def _register_name(names: list[str]) -> str:
    """The name a net goes by in the report: a pipeline register's own name if the net has one
    (lower-case ``<prefix>_<section>`` without a ``_in`` suffix), else its shortest plain name.
    """
    def rank(n):
        register = re.fullmatch(r"[a-z][a-z0-9]*_[a-z0-9_]+", n) is not None and \
            not n.endswith("_in")
        return (not register, "." in n or "$" in n, len(n), n)
    return min(names, key=rank)


def _group(name: str) -> str:
    """A register's group: its name without bit selects, struct members or yosys suffixes."""
    return re.split(r"[.\[$]", name, maxsplit=1)[0]


def _ff_groups(cells: dict, aliases: dict) -> dict[str, str]:
    """Each flip-flop's register group.  yosys names a flip-flop after one of the nets it
    drives (``<net>_TRELLIS_FF_Q_<n>``), usually the register's own, sometimes a wire that
    carries some of its bits; so the group is, of that name and its output's net names, the
    one that names the most flip-flops (an anonymous cell goes by its net names only)."""
    def cell_group(name):
        m = re.fullmatch(r"(.+?)_TRELLIS_FF_Q(?:_\d+)?", name.lstrip("\\"))
        return _group(m.group(1)) if m and not m.group(1).startswith("$") else None

    ffs = {n: c for n, c in cells.items() if c["type"].startswith("TRELLIS_FF")}
    size = collections.Counter(g for g in map(cell_group, ffs) if g)
    groups = {}
    for name, c in ffs.items():
        q_names = aliases.get(c["connections"]["Q"][0], [])
        own = cell_group(name)
        candidates = ([own] if own else []) + [_group(n) for n in q_names
                                               if not n.startswith("$")]
        groups[name] = (max(candidates, key=lambda g: size[g]) if candidates
                        else _group(_register_name(q_names or [name])))
    return groups


def _field(group: str, names: list[str]) -> str | None:
    """The field of register ``group`` that a flip-flop's output net belongs to, from the net's
    names (``<group>.<field>``, the most specific; array indices as ``[*]``), or None."""
    fields = [n[len(group) + 1:] for n in names if n.startswith(group + ".")]
    if not fields:
        return None
    return re.sub(r"\[\d+\]", "[*]", max(fields, key=len))


def _dut(netlist: dict) -> tuple[str, dict]:
    """The unit's module in a flow netlist: the one with the most LUT4s (the ring has none)."""
    mods = netlist.get("modules", {})
    if not mods:
        raise ValueError("the netlist has no modules")
    return max(mods.items(), key=lambda kv: sum(c["type"] == "LUT4"
                                                for c in kv[1]["cells"].values()))


def stage_paths(netlist: dict) -> list[StagePath]:
    """Every (source group, destination group, end port) of the unit in ``netlist`` (yosys
    JSON after ``synth_ecp5``) with its deepest path, deepest estimate first."""
    _, mod = _dut(netlist)
    cells = mod["cells"]
    aliases = collections.defaultdict(list)
    for name, net in mod["netnames"].items():
        for b in net["bits"]:
            if isinstance(b, int):
                aliases[b].append(name)
    drivers = {}
    loads = collections.Counter()
    for cname, c in cells.items():
        for port, direction in c.get("port_directions", {}).items():
            for b in c["connections"].get(port, []):
                if direction == "output":
                    drivers[b] = (cname, port)
                else:
                    loads[b] += 1
    for port in mod.get("ports", {}).values():
        if port["direction"] == "output":
            loads.update(b for b in port["bits"] if isinstance(b, int))
    # arrival[bit] = {source group: (ns, levels, fan-out)}, the latest arrival from each group
    arrival: dict[int, dict[str, tuple[float, int, int]]] = {}
    t = CELL_NS
    groups = _ff_groups(cells, aliases)
    for cname, group in groups.items():
        arrival[cells[cname]["connections"]["Q"][0]] = {group: (t["clk_to_q"], 0, 0)}
    for port in mod.get("ports", {}).values():
        if port["direction"] == "input":
            for b in port["bits"]:
                if isinstance(b, int):
                    arrival.setdefault(b, {INPUT_PORTS: (t["clk_to_q"], 0, 0)})

    def merge(out, bit, add, levels):  # the paths through net ``bit`` into a cell
        if not isinstance(bit, int):
            return
        for g, (ns, lv, fo) in arrival.get(bit, {}).items():
            if g not in out or out[g][0] < ns + add:
                out[g] = (ns + add, lv + levels, max(fo, loads[bit]))

    def arrive(bit) -> dict[str, tuple[float, int, int]]:
        # iterative depth-first walk: chains and trees are deeper than Python's recursion
        stack = [bit]
        while stack:
            b = stack[-1]
            if not isinstance(b, int) or b in arrival:
                stack.pop()
                continue
            if b not in drivers:
                arrival[b] = {}
                stack.pop()
                continue
            cname, port = drivers[b]
            c = cells[cname]
            kind = c["type"]
            if kind == "LUT4":
                ins = [(x, t["lut"] + ROUTE_NS, 1) for p in _LUT_INPUTS
                       for x in c["connections"].get(p, [])]
            elif kind == "CCU2C" and port in _CCU2C_INPUTS:
                ins = [(x, ROUTE_NS + t["chain_in"], 1)
                       for p in _CCU2C_INPUTS[port] for x in c["connections"].get(p, [])]
                ins += [(x, t["carry"] if port == "COUT" else t["carry_to_sum"], 0)
                        for x in c["connections"].get("CIN", [])]
            else:  # another cell (a DSP, a register of another kind): a path starts there
                arrival[b] = {}
                stack.pop()
                continue
            todo = [x for x, _, _ in ins if isinstance(x, int) and x not in arrival]
            if todo:
                stack.extend(todo)
                continue
            out: dict[str, tuple[float, int, int]] = {}
            for x, add, levels in ins:
                merge(out, x, add, levels)
            arrival[b] = out
            stack.pop()
        return arrival.get(bit, {})

    worst: dict[tuple[str, str, str], tuple[float, int, int]] = {}
    deepest: dict[tuple[str, str, str], set] = {}  # the fields at worst's estimate

    def end(bits, dest, port, field=None):
        for b in bits:
            for g, (ns, lv, fo) in arrive(b).items():
                key = (g, dest, port)
                ns += ROUTE_NS + t["setup"]
                if key not in worst or worst[key][0] < ns - 1e-9:
                    worst[key] = (ns, lv, max(fo, loads[b]))
                    deepest[key] = set()
                if field is not None and ns >= worst[key][0] - 1e-9:
                    deepest[key].add(field)

    for cname, group in groups.items():
        field = _field(group, aliases.get(cells[cname]["connections"]["Q"][0], []))
        for port in _FF_ENDPOINTS:
            end(cells[cname]["connections"].get(port, []), group, port, field)
    for port in mod.get("ports", {}).values():
        if port["direction"] == "output":
            end(port["bits"], OUTPUT_PORTS, "DI")
    paths = [StagePath(s, d, p, lv, round(ns, 2), fo, tuple(sorted(deepest[s, d, p])))
             for (s, d, p), (ns, lv, fo) in worst.items()]
    return sorted(paths, key=lambda sp: (-sp.ns, -sp.levels, sp.source, sp.dest, sp.port))


def format_stage_paths(paths: list[StagePath], top: int | None = None, *,
                       fields: bool = False) -> str:
    """A plain-text table of ``paths`` (the first ``top``); ``fields``: each path's
    :attr:`StagePath.fields` after it."""
    rows = [f"{'est. ns':>7} {'levels':>6} {'fan-out':>7}  path"]
    for sp in paths[:top]:
        row = (f"{sp.ns:7.2f} {sp.levels:6d} {sp.fanout:7d}  {sp.source} -> {sp.dest}"
               + ("" if sp.port == "DI" else f" ({sp.port})"))
        if fields and sp.fields:
            row += f"  [{', '.join(sp.fields)}]"
        rows.append(row)
    return "\n".join(rows)


def main(argv=None) -> int:
    from hw.cli import units

    from .flow import ecp5_netlist

    ap = argparse.ArgumentParser(
        prog="python -m bench.synth.levels",
        description="LUT levels and estimated delay of every pipeline stage (ECP5 netlist, "
                    "nothing placed), deepest first")
    ap.add_argument("unit", choices=sorted(units()),
                    help="a unit of `python -m hw generate`; its options follow")
    ap.add_argument("--netlist", type=Path,
                    help="read this yosys ECP5 netlist instead of synthesizing the unit")
    ap.add_argument("--top", type=int, default=30, help="rows to print (default 30)")
    ap.add_argument("--fields", action="store_true",
                    help="name the fields of each path's end register that are that deep")
    ap.add_argument("--depth-only", action="store_true",
                    help="map the LUTs for depth alone, with no area recovery (the levels each "
                         "stage needs of its own; bench.synth.flow.DIAGNOSTIC_MAPS)")
    args, unit_args = ap.parse_known_args(argv)
    if args.top < 1:
        ap.error(f"--top must be at least 1, not {args.top}")
    path = args.netlist
    if path is not None and not path.is_file():
        ap.error(f"no netlist at {path}")
    if path is not None and args.depth_only:
        ap.error("--depth-only synthesizes the unit: not with --netlist")
    if path is None:
        print(f"synthesizing {args.unit} {' '.join(unit_args)} (yosys, about a minute) ...",
              file=sys.stderr, flush=True)
        path = ecp5_netlist(args.unit, unit_args, "depth" if args.depth_only else "lut4")
    print(format_stage_paths(stage_paths(json.loads(Path(path).read_text())), args.top,
                             fields=args.fields))
    return 0


if __name__ == "__main__":
    sys.exit(main())
