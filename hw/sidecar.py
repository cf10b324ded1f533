"""The JSON sidecar of a unit's Verilog, schema 1: build it from a component, validate one.

A sidecar describes one Verilog module well enough to drive it without reading the Verilog:
what it computes (``unit``, ``parameters``), its timing (``latency``,
``initiation_interval``, ``flow_control``), clock and reset as data, and every port with a
*role* (``clk``, ``rst``, ``i.payload``, ``i.valid``, ``i.ready``, ``o.payload``,
``o.valid``, ``o.ready``) and, for payloads, named fields down to the lane, with the encoding
of every runtime field.  The JSON Schema is :data:`SCHEMA_FILE` (package data; the same file
is ``docs/sidecar.schema.json``); ``docs/sidecar.md`` describes every key.

:func:`sidecar` builds the sidecar of an Amaranth component (from its signature alone: no
Verilog conversion needed unless the hash is wanted); :func:`validate` checks any sidecar
(generated or hand-written) against the schema and the rules a schema cannot express, and
raises :class:`SidecarError` with a one-line message.

A component must provide ``module_name``, ``parameters`` (JSON-able dict), ``latency`` (int),
``primitives`` (tuple of str) and ``i_ready_registered`` (bool: ``i.ready`` is a register,
see :class:`hw.pipeline.Pipeline`; False for MXDotGeneral, where a block may enter as its
context's block leaves); its ``i`` and ``o`` payloads must be
:class:`amaranth.lib.data.StructLayout`\\ s.  Every unit of :mod:`hw` is a
:class:`hw.unit.Unit`, which owns these facts (:meth:`hw.unit.Unit.sidecar`).
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from importlib import metadata
from importlib.resources import files

from golden.formats import ROUNDING_IDS, SCALE_MODE_IDS, element_format

__all__ = ["SCHEMA_VERSION", "SCHEMA_FILE", "GENERATOR", "RUNTIME_ENCODINGS", "ROLES",
           "FORMAT_PARAMETERS", "SidecarError", "schema", "sidecar", "describe_ports",
           "verilog_sha256", "validate", "port_by_role", "flat_fields", "element_formats"]

SCHEMA_VERSION = 1
#: The JSON Schema, package data of ``hw``.
SCHEMA_FILE = "sidecar.schema.json"
#: The distribution whose version the sidecar records.
GENERATOR = "ocp-mx-hdl"

#: Encodings of the runtime payload fields, by field name (golden's ids, the one source).
RUNTIME_ENCODINGS: dict[str, dict[str, int]] = {"rounding": ROUNDING_IDS,
                                                "scale_mode": SCALE_MODE_IDS}

#: Port roles: the project's stream convention (``clk``, ``rst``, stream ``i`` in, ``o`` out).
ROLES = ("clk", "rst", "i.payload", "i.valid", "i.ready", "o.payload", "o.valid", "o.ready")
#: The parameters that name an element format (``element_formats`` is keyed by them).
FORMAT_PARAMETERS = ("format", "format_a", "format_b")


class SidecarError(ValueError):
    """A sidecar that does not follow schema 1 (the message names the offending key)."""


@cache
def schema() -> dict:
    """The sidecar JSON Schema (draft 2020-12) as a dict."""
    return json.loads(files("hw").joinpath(SCHEMA_FILE).read_text())


def generator_version() -> str:
    """Version of the installed ``ocp-mx-hdl`` distribution."""
    try:
        return metadata.version(GENERATOR)
    except metadata.PackageNotFoundError:
        # A source tree used without installing it (PYTHONPATH): no version to record.
        return "unknown"


def verilog_sha256(text: str) -> str:
    """SHA-256 (hex) of Verilog text, as recorded in ``verilog_sha256``."""
    return hashlib.sha256(text.encode()).hexdigest()


# -- building a sidecar from a component -------------------------------------------------------
def _fields(layout, offset: int, runtime: dict) -> list[dict]:
    """The fields of a StructLayout as schema-1 field records (``lsb`` within the port)."""
    from amaranth.hdl import Shape
    from amaranth.lib import data

    out = []
    for name, fld in layout:
        shape, lsb = fld.shape, offset + fld.offset
        entry = {"name": name, "lsb": lsb, "width": Shape.cast(shape).width}
        if isinstance(shape, data.StructLayout):
            entry["fields"] = _fields(shape, lsb, runtime)
        elif isinstance(shape, data.ArrayLayout):
            if isinstance(shape.elem_shape, data.Layout):
                raise TypeError(f"field {name}: arrays of structures are not described")
            entry["array"] = {"length": shape.length,
                              "elem_width": Shape.cast(shape.elem_shape).width}
        elif isinstance(shape, data.Layout):
            raise TypeError(f"field {name}: {type(shape).__name__} is not described")
        if name in RUNTIME_ENCODINGS:
            entry["encoding"] = dict(RUNTIME_ENCODINGS[name])
        if name in runtime:
            entry["drive"] = runtime[name]
        out.append(entry)
    return out


def _drive_rules(component) -> dict:
    """Payload fields that take stimulus of their own: the stochastic-rounding ``random``
    bits, always used by a fixed stochastic build, only in stochastic blocks of a runtime
    one."""
    rounding = component.parameters.get("rounding")
    if rounding == "stochastic":
        return {"random": {"with": "uniform_random", "when": "always"}}
    if rounding == "runtime":
        return {"random": {"with": "uniform_random",
                           "when": {"field": "rounding", "equals": "stochastic"}}}
    return {}


def describe_ports(component) -> list[dict]:
    """Every top-level port as in the Verilog (``clk``, ``rst``, ``path__joined``), with its
    role, direction, width and, for payloads, its named fields."""
    from amaranth.hdl import Shape
    from amaranth.lib import data

    runtime = _drive_rules(component)
    ports = [{"name": "clk", "role": "clk", "direction": "in", "width": 1},
             {"name": "rst", "role": "rst", "direction": "in", "width": 1}]
    for path, member, _value in component.signature.flatten(component):
        shape = member.shape
        name, role = "__".join(map(str, path)), ".".join(map(str, path))
        entry = {"name": name, "role": role, "direction": member.flow.value.lower(),
                 "width": Shape.cast(shape).width}
        if isinstance(shape, data.Layout):
            if not isinstance(shape, data.StructLayout):
                raise TypeError(f"port {name}: payloads must be StructLayouts (named fields)")
            entry["fields"] = _fields(shape, 0, runtime)
        elif path[-1] == "payload":
            raise TypeError(f"port {name}: a bare {entry['width']}-bit payload; give it a "
                            "StructLayout so every field has a name")
        ports.append(entry)
    return ports


def sidecar(component, unit: str, verilog: str | None = None) -> dict:
    """The schema-1 sidecar of ``component`` (the ``generate`` subcommand ``unit``).

    ``verilog``, the module's Verilog text, adds its ``verilog_sha256``; without it the
    sidecar describes the component from its signature alone (no conversion needed).
    """
    out = {
        "schema": SCHEMA_VERSION,
        "module": component.module_name,
        "unit": unit,
        "parameters": component.parameters,
        "element_formats": {k: element_format(v).spec for k, v in component.parameters.items()
                            if k in FORMAT_PARAMETERS},
        "latency": component.latency,
        "initiation_interval": 1,
        "generator": {"name": GENERATOR, "version": generator_version()},
    }
    if verilog is not None:
        out["verilog_sha256"] = verilog_sha256(verilog)
    out.update({
        "clock": {"name": "clk", "edge": "rising"},
        "reset": {"name": "rst", "kind": "sync", "active": "high"},
        "flow_control": {"i_ready": "registered" if component.i_ready_registered
                         else "combinational"},
    })
    if unit in ("dequantizer", "nvfp4-dequantizer"):  # the contract's NaN and Inf patterns
        out["parameters"] = {**out["parameters"],
                             **special_bits(out["parameters"]["output"])}
    if component.primitives:  # vendor cells: simulation needs their models (hw.dsp)
        out["primitives"] = list(component.primitives)
    out["ports"] = describe_ports(component)
    return out


def special_bits(output: str) -> dict:
    """The dequantizer's ``nan_bits`` and ``inf_bits`` (+Inf, -Inf) for output format
    ``output``, as the sidecar states them: hex strings (docs/numerics.md section 4)."""
    from golden.formats import float_format

    ff = float_format(output)
    width = ff.bits // 4 + 2
    return {"nan_bits": f"{ff.qnan_bits:#0{width}x}",
            "inf_bits": [f"{ff.inf_bits:#0{width}x}", f"{ff.inf_bits | ff.sign_mask:#0{width}x}"]}


# -- reading and validating ------------------------------------------------------------------
def port_by_role(meta: dict, role: str) -> dict:
    """The port record with ``role`` (e.g. ``"i.payload"``) of a validated sidecar."""
    for port in meta["ports"]:
        if port["role"] == role:
            return port
    raise SidecarError(f"sidecar of {meta.get('module')}: no port with role {role!r}")


def flat_fields(fields: list[dict], prefix: str = "") -> list[dict]:
    """Leaf and array fields of a (nested) field list, named by their path (``a.scale``):
    the flat view a payload codec packs and unpacks."""
    out = []
    for f in fields:
        name = f"{prefix}{f['name']}"
        if "fields" in f:
            out += flat_fields(f["fields"], f"{name}.")
        else:
            out.append({**f, "name": name})
    return out


def _message(error) -> str:
    """One line for a jsonschema error (its default message can quote a whole port list)."""
    if error.validator in ("contains", "minContains", "maxContains"):
        role = error.schema["contains"]["properties"]["role"]["const"]
        return f"needs exactly one port with role {role!r}"
    text = " ".join(error.message.split())
    return text if len(text) <= 200 else text[:200] + "..."


def _format_path(path) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _check_fields(fields: list[dict], lo: int, hi: int, where: str) -> None:
    """Fields lie in ``[lo, hi)``, do not overlap, have unique names and consistent widths;
    a ``drive`` condition names a sibling field and one of its encoded values."""
    names = [f["name"] for f in fields]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SidecarError(f"{where}: duplicate field names {sorted(dup)}")
    spans = sorted((f["lsb"], f["lsb"] + f["width"], f["name"]) for f in fields if f["width"])
    for (_, end, a), (start, _, b) in zip(spans, spans[1:], strict=False):
        if start < end:
            raise SidecarError(f"{where}: fields {a} and {b} overlap")
    by_name = dict(zip(names, fields, strict=True))
    for f in fields:
        here = f"{where}.{f['name']}"
        if f["lsb"] < lo or f["lsb"] + f["width"] > hi:
            raise SidecarError(f"{here}: bits [{f['lsb']}, {f['lsb'] + f['width']}) lie "
                               f"outside [{lo}, {hi})")
        if "array" in f and f["array"]["length"] * f["array"]["elem_width"] != f["width"]:
            raise SidecarError(f"{here}: width {f['width']} != length x elem_width")
        if "fields" in f:
            _check_fields(f["fields"], f["lsb"], f["lsb"] + f["width"], here)
        if "encoding" in f:
            too_big = [k for k, v in f["encoding"].items() if v >= 1 << f["width"]]
            if too_big:
                raise SidecarError(f"{here}: encoding of {too_big} does not fit in "
                                   f"{f['width']} bits")
        when = f.get("drive", {}).get("when")
        if isinstance(when, dict):
            other = by_name.get(when["field"])
            if other is None or when["equals"] not in other.get("encoding", {}):
                raise SidecarError(f"{here}: drive.when names {when['field']} = "
                                   f"{when['equals']!r}, which is not an encoded value of a "
                                   "field beside it")


def element_formats(meta: dict) -> dict:
    """The element format (:class:`golden.ElementFormat`) of each format parameter of a
    sidecar, by parameter name: from ``element_formats`` where present, else resolved from
    the name.  Raises :class:`SidecarError` where the two disagree (a spec named otherwise
    than its parameter, or a name golden knows as another format) or a name is unknown and
    has no spec."""
    names = {k: v for k, v in meta["parameters"].items() if k in FORMAT_PARAMETERS}
    specs = meta.get("element_formats")
    if specs is not None and set(specs) != set(names):
        raise SidecarError(f"sidecar element_formats has {sorted(specs)}, the format "
                           f"parameters are {sorted(names)}: one spec per format parameter")
    out = {}
    for key, name in names.items():
        by_name = None
        try:
            by_name = element_format(name)
        except (TypeError, ValueError) as e:
            if specs is None:
                first = str(e).split(";")[0]  # golden's list of every name is too long
                raise SidecarError(f"sidecar parameters.{key}: {first} (golden resolves OCP, "
                                   "ml_dtypes, e<E>m<M> and intN names); a format of another "
                                   "name needs its spec in element_formats (docs/sidecar.md)"
                                   ) from None
        if specs is None:
            out[key] = by_name
            continue
        spec = specs[key]
        try:
            fmt = element_format(spec)
        except (TypeError, ValueError) as e:
            raise SidecarError(f"sidecar element_formats.{key}: {e}") from None
        if spec["name"] != name:
            raise SidecarError(f"sidecar element_formats.{key}.name {spec['name']!r} is not "
                               f"parameters.{key} {name!r}")
        if by_name is not None and by_name != fmt:
            raise SidecarError(f"sidecar element_formats.{key}: {fmt!r} is not the format "
                               f"named {name!r} ({by_name!r})")
        out[key] = fmt
    return out


def validate(meta: dict) -> dict:
    """Check a sidecar against schema 1 and the rules JSON Schema cannot express (clock and
    reset name ports with those roles, port names unique, fields inside their port and not
    overlapping, ``element_formats`` agreeing with the format names).  Returns ``meta``;
    raises :class:`SidecarError` with one readable line.
    """
    import jsonschema

    if not isinstance(meta, dict):
        raise SidecarError(f"a sidecar is a JSON object, got {type(meta).__name__}")
    if meta.get("schema") != SCHEMA_VERSION:
        raise SidecarError(f"sidecar schema {meta.get('schema')!r}: this version reads schema "
                           f"{SCHEMA_VERSION} (docs/sidecar.md)")
    validator = jsonschema.Draft202012Validator(schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(meta))
    if error is not None:
        where = _format_path(error.absolute_path) or "(top level)"
        raise SidecarError(f"sidecar {where}: {_message(error)}")
    element_formats(meta)
    names = [p["name"] for p in meta["ports"]]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SidecarError(f"sidecar ports: duplicate port names {sorted(dup)}")
    for key, role in (("clock", "clk"), ("reset", "rst")):
        port = port_by_role(meta, role)
        if meta[key]["name"] != port["name"]:
            raise SidecarError(f"sidecar {key}.name {meta[key]['name']!r} is not the port with "
                               f"role {role!r} ({port['name']!r})")
    stated = {k: meta["parameters"][k] for k in ("nan_bits", "inf_bits")
              if meta["unit"] == "dequantizer" and k in meta["parameters"]}
    for key, value in stated.items():
        want = special_bits(meta["parameters"]["output"])[key]
        if (value.lower() if isinstance(value, str) else [v.lower() for v in value]) != want:
            raise SidecarError(f"sidecar parameters.{key} {value!r}: the dequantizer's "
                               f"{meta['parameters']['output']} {key} are {want!r} "
                               "(docs/numerics.md section 4)")
    for port in meta["ports"]:
        if "fields" in port:
            _check_fields(port["fields"], 0, port["width"], f"sidecar port {port['name']}")
    return meta
