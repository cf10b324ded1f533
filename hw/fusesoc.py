"""FuseSoC (CAPI2) cores of generated units, and the generator that FuseSoC runs for them.

* :func:`write_unit_core` -- ``python -m hw generate <unit> ... --fusesoc DIR``: a ``.core``
  beside the unit's Verilog and JSON sidecar, with the Verilator lint waivers
  (``hw/lint_waivers.vlt``) copied next to them.  Targets: ``default`` (what a core that
  depends on this one gets), ``lint`` (``verilator --lint-only -Wall`` with the waivers) and
  ``sim`` (the unit compiled into a Verilator model, ``--binary``; a testbench core that
  depends on this one supplies stimulus).
* :func:`generator_main` -- the FuseSoC generator ``mx_unit`` of the repository's generator
  core ``fusesoc/ocp_mx_hdl.core``: a user's own core asks for a configured unit with
  ``generate:`` and gets the same files through a core that FuseSoC generates.

The core files are written from a template, so :mod:`hw` needs no YAML library; reading the
generator's input (GAPI 1.0, written by FuseSoC) needs PyYAML, which FuseSoC itself depends on.
"""

from __future__ import annotations

import json
import shutil
import sys
from importlib.resources import files
from pathlib import Path

from .dsp import simulation_models
from .registry import units
from .verilog import write_component

__all__ = ["VENDOR", "LIBRARY", "WAIVERS", "core_version", "unit_vlnv", "unit_core",
           "write_unit_core", "generator_argv", "generator_main"]

#: Vendor and library of the VLNV names of the cores written here.
VENDOR = "ocp-mx-hdl"
LIBRARY = "mx"
#: The Verilator lint waivers: package data of :mod:`hw`, copied next to every core.
WAIVERS = "lint_waivers.vlt"

_CORE_TEMPLATE = """\
CAPI=2:
# Written by ocp-mx-hdl {version}: an MX unit, its JSON sidecar and the Verilator lint waivers
# for the Verilog that Amaranth generates (the waiver file explains each one).
name: {vlnv}
description: {description}

filesets:
  rtl:
    files:
      - {verilog}
    file_type: verilogSource
  waivers:
    files:
      - {waivers}
    file_type: vlt
  sidecar:
    files:
      - {sidecar}
    file_type: user
{models_fileset}
targets:
  default:
    filesets: [rtl, waivers, sidecar]
    toplevel: {module}
  lint:
    description: verilator --lint-only -Wall with the waivers
    filesets: [rtl, waivers{models}]
    toplevel: {module}
    flow: lint
    flow_options:
      tool: verilator
      verilator_options: [-Wall]
  sim:
    description: the unit as a Verilator model (--binary); a testbench core drives it
    filesets: [rtl, waivers{models}]
    toplevel: {module}
    flow: sim
    flow_options:
      tool: verilator
      mode: binary
"""


def core_version() -> str:
    """The project's version for VLNV names: the installed ``ocp-mx-hdl``'s, or ``0`` in a
    source tree that was never installed (FuseSoC orders versions by their numbers)."""
    from golden.vectors import generator_version

    version = generator_version()
    return version if version[:1].isdigit() else "0"


def unit_vlnv(module_name: str) -> str:
    """The VLNV name of a unit's core: ``ocp-mx-hdl:mx:<module name>:<version>``; the module
    name encodes the unit's parameters."""
    return f"{VENDOR}:{LIBRARY}:{module_name}:{core_version()}"


def unit_core(module_name: str, vlnv: str, description: str, primitives=()) -> str:
    """The CAPI2 text of the core of ``<module_name>.v``, ``.json`` and :data:`WAIVERS`, all in
    the core's directory; with ``primitives`` (vendor cells the unit instantiates), a
    ``models`` fileset of their simulation models (``<name>.v``, beside them) for the lint and
    sim targets only: the default target leaves the cells to the vendor library."""
    quote = json.dumps  # a JSON string is a YAML double-quoted scalar
    models_fileset = ""
    if primitives:
        models_fileset = ("  models:\n    files:\n"
                          + "".join(f"      - {quote(name + '.v')}\n" for name in primitives)
                          + "    file_type: verilogSource\n")
    return _CORE_TEMPLATE.format(
        version=core_version(), module=module_name, vlnv=quote(vlnv),
        description=quote(description), verilog=quote(f"{module_name}.v"),
        sidecar=quote(f"{module_name}.json"), waivers=quote(WAIVERS),
        models_fileset=models_fileset, models=", models" if primitives else "")


def write_unit_core(module_name: str, directory: Path, *, vlnv: str | None = None,
                    description: str = "", primitives=()) -> tuple[Path, str]:
    """Write ``<module_name>.core``, a copy of the lint waivers and of the simulation models
    of ``primitives`` into ``directory``, beside the unit's Verilog and sidecar (written by
    :func:`hw.verilog.write_component`).

    Parameters
    ----------
    module_name : str
        The unit's Verilog module, also the stem of its ``.v`` and ``.json`` files.
    directory : Path
    vlnv : str, optional
        The core's name; default :func:`unit_vlnv`.
    description : str
    primitives : sequence of str
        Vendor cells the unit instantiates (its ``primitives``): their models are copied and
        listed for the lint and sim targets (:func:`hw.dsp.simulation_models`).

    Returns
    -------
    (Path, str)
        The core file and its VLNV name.
    """
    vlnv = vlnv or unit_vlnv(module_name)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with files("hw").joinpath(WAIVERS).open("rb") as src, \
            open(directory / WAIVERS, "wb") as dst:
        shutil.copyfileobj(src, dst)
    for model in simulation_models(primitives):
        shutil.copyfile(model, directory / model.name)
    core = directory / f"{module_name}.core"
    core.write_text(unit_core(module_name, vlnv, description or f"MX unit {module_name}",
                              primitives))
    return core, vlnv


def generator_argv(parameters: dict) -> tuple[str, list[str]]:
    """The unit and the ``python -m hw generate <unit>`` options of a generator's
    ``parameters``: ``{"unit": "quantizer", "format": "int8", "block_size": 4}`` ->
    ``("quantizer", ["--format", "int8", "--block-size", "4"])``.  ``true`` is a bare flag,
    ``false`` or null leaves the option out."""
    if not isinstance(parameters, dict) or "unit" not in parameters:
        raise ValueError("the mx_unit generator needs parameters with a 'unit' "
                         "(quantizer, dequantizer, dot, dot-general, gemm) and its options")
    argv = []
    for key, value in parameters.items():
        if key == "unit" or value is None or value is False:
            continue
        if isinstance(value, dict | list):
            raise TypeError(f"generator parameter {key!r} must be a scalar, not "
                            f"{type(value).__name__}")
        option = "--" + str(key).replace("_", "-")
        argv += [option] if value is True else [option, str(value)]
    return str(parameters["unit"]), argv


def generator_main(argv=None) -> int:
    """FuseSoC's entry into the ``mx_unit`` generator: ``argv = [input.yml]`` (GAPI 1.0).

    Writes the configured unit's Verilog, sidecar, waivers and a core named with the VLNV that
    FuseSoC chose into the current directory (FuseSoC's generator work directory).
    """
    import yaml

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: mx_unit_generator.py GENERATOR_INPUT.yml", file=sys.stderr)
        return 2
    config = yaml.safe_load(Path(argv[0]).read_text())
    try:
        unit, options = generator_argv(config.get("parameters"))
        specs = units()
        if unit not in specs:
            raise ValueError(f"unknown unit {unit!r}; expected one of {', '.join(specs)}")
        spec = specs[unit]
        component = spec.build_from(options)
    except (ValueError, TypeError) as e:
        print(f"mx_unit generator: error: {e}", file=sys.stderr)
        return 2
    out = write_component(component, unit, Path.cwd() / f"{component.module_name}.v")
    write_unit_core(component.module_name, out.parent, vlnv=config["vlnv"],
                    primitives=component.primitives,
                    description=f"{spec.help} ({component.module_name})")
    return 0
