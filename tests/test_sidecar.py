"""The JSON sidecar, schema 1 (hw.sidecar): the schema file itself, the sidecar of every unit
in every configuration of the full simulation matrix (from the component's signature, no
Verilog), the default set as ``python -m hw defaults`` writes it (with the real Verilog hash),
and invalid sidecars rejected with a readable message."""

from __future__ import annotations

import copy
import hashlib
import json
import re
import subprocess
import sys

import jsonschema
import oracle
import pytest
import test_sim_dequantizer as sim_dequantizer
import test_sim_dot as sim_dot
import test_sim_quantizer as sim_quantizer

import golden
from golden.element_format import CONVENTIONS
from golden.formats import ROUNDING_IDS, SCALE_MODE_IDS
from hw import dequantizer, quantizer
from hw.cli import units
from hw.sidecar import (
    FORMAT_PARAMETERS,
    SidecarError,
    element_formats,
    flat_fields,
    generator_version,
    port_by_role,
    schema,
    sidecar,
    validate,
)
from tb.runner import ROOT
from tb.stream import BitLayout


def _build(unit: str, argv: list[str]):
    return units()[unit].build_from(argv)


def _matrix():
    """(unit, argv) of every configuration of the SIM_FULL matrix."""
    out = [sim_quantizer.unit_args(c) for c in sim_quantizer.full_configs()]
    out += [sim_dequantizer.unit_args(c) for c in sim_dequantizer.full_configs()]
    out += [sim_dot.unit_args(c) for c in sim_dot.FULL_CONFIGS]
    return out


MATRIX = _matrix()


# -- the schema file -----------------------------------------------------------------------------
def test_package_and_docs_schema_are_the_same_file():
    assert (ROOT / "hw" / "sidecar.schema.json").read_bytes() == \
        (ROOT / "docs" / "sidecar.schema.json").read_bytes()


def test_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(schema())


def test_schema_enums_follow_the_code():
    """The schema spells out formats and modes; they must be the ones the code accepts."""
    defs = schema()["$defs"]
    assert defs["element_format"]["type"] == "string"  # any name golden resolves
    assert set(schema()["properties"]["element_formats"]["properties"]) == set(FORMAT_PARAMETERS)
    spec = defs["element_format_spec"]["oneOf"][0]["properties"]
    assert spec["convention"]["enum"] == list(CONVENTIONS)
    assert defs["float_format"]["enum"] == list(quantizer.INPUTS) == list(dequantizer.OUTPUTS)
    q = defs["quantizer_parameters"]["properties"]
    assert q["rounding"]["enum"] == list(quantizer.ROUNDINGS)
    assert q["scale_mode"]["enum"] == list(quantizer.SCALE_MODES)
    assert q["random_bits"]["maximum"] == quantizer.MAX_RANDOM_BITS


def test_example_sidecar_is_valid():
    validate(json.loads((ROOT / "docs" / "sidecar.example.json").read_text()))


# -- every configuration of the full matrix ------------------------------------------------------
def _leaves_cover(port: dict) -> None:
    """Generated payloads have no gaps: the leaf fields tile the port exactly."""
    bits = sorted((f["lsb"], f["width"]) for f in flat_fields(port["fields"]) if f["width"])
    pos = 0
    for lsb, width in bits:
        assert lsb == pos, f"{port['name']}: gap or overlap at bit {pos}"
        pos += width
    assert pos == port["width"], f"{port['name']}: fields end at {pos} of {port['width']}"


@pytest.mark.parametrize("unit,argv", MATRIX, ids=[f"{u}-{'_'.join(a)}" for u, a in MATRIX])
def test_every_simulated_configuration_has_a_valid_sidecar(unit, argv):
    comp = _build(unit, argv)
    meta = validate(sidecar(comp, unit))
    assert meta["module"] == comp.module_name and meta["latency"] == comp.latency
    assert meta["generator"] == {"name": "ocp-mx-hdl", "version": generator_version()}
    for role in ("i.payload", "o.payload"):
        _leaves_cover(port_by_role(meta, role))
    fields = {f["name"]: f for f in port_by_role(meta, "i.payload")["fields"]}
    p = comp.parameters
    if unit == "quantizer":
        assert ("rounding" in fields) == (p["rounding"] == "runtime")
        assert ("scale_mode" in fields) == (p["scale_mode"] == "runtime")
        if "rounding" in fields:
            assert fields["rounding"]["encoding"] == ROUNDING_IDS
        if "scale_mode" in fields:
            assert fields["scale_mode"]["encoding"] == SCALE_MODE_IDS
        stochastic = p["rounding"] in ("stochastic", "runtime")
        assert ("random" in fields) == stochastic
        if stochastic:
            # when the random bits matter: always, or when a run-time field selects a value
            # its encoding defines (the testbench drives them by this condition)
            when = fields["random"]["drive"]["when"]
            if when != "always":
                assert when["equals"] in fields[when["field"]]["encoding"], when
    if unit in ("dot", "dot-general"):
        assert {f["name"] for f in fields["a"]["fields"]} == {"scale", "codes"}
        assert "a.codes" in BitLayout.from_sidecar(meta, "i.payload").fields


def test_generated_sidecar_carries_the_verilog_hash(tmp_path):
    out = tmp_path / "q.v"
    r = subprocess.run([sys.executable, "-m", "hw", "generate", "quantizer", "--format", "int8",
                        "--block-size", "2", "--input", "fp16", "--stages", "1", "-o", str(out)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    meta = validate(json.loads(out.with_suffix(".json").read_text()))
    assert meta["verilog_sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()


@pytest.mark.slow
def test_default_set_with_the_verilog_hash(tmp_path):
    """``python -m hw defaults``: every sidecar validates and carries its file's SHA-256
    (19 units, several minutes: a -full target test)."""
    r = subprocess.run([sys.executable, "-m", "hw", "defaults", "-o", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    sidecars = sorted(tmp_path.glob("*.json"))
    assert len(sidecars) == sum(len(spec.defaults) for spec in units().values())
    for path in sidecars:
        meta = validate(json.loads(path.read_text()))
        verilog = path.with_suffix(".v").read_bytes()
        assert meta["verilog_sha256"] == hashlib.sha256(verilog).hexdigest(), path.name


# -- the formats it carries ----------------------------------------------------------------------
CUSTOM = [("quantizer", ["--format", "e3m3", "--block-size", "4", "--input", "bf16"]),
          ("quantizer", ["--format", "float8_e4m3", "--block-size", "4", "--input", "bf16"]),
          ("dequantizer", ["--format", "int4", "--block-size", "4"]),
          ("dot", ["--format-a", "e3m3", "--format-b", "int4", "--block-size", "4"]),
          ("dot-general", ["--format-a", "float8_e3m4", "--format-b", "e2m2",
                           "--block-size", "4", "--contexts", "2"])]


@pytest.mark.parametrize("unit,argv", CUSTOM, ids=[f"{u}-{'_'.join(a)}" for u, a in CUSTOM])
def test_custom_format_sidecar_validates_and_round_trips_its_spec(unit, argv):
    comp = _build(unit, argv)
    meta = json.loads(json.dumps(sidecar(comp, unit)))  # through JSON, as a file
    validate(meta)
    names = {k: v for k, v in comp.parameters.items() if k in FORMAT_PARAMETERS}
    assert set(meta["element_formats"]) == set(names) and names
    for key, name in names.items():
        fmt = golden.element_format(name)
        assert meta["element_formats"][key] == fmt.spec
        back = element_formats(meta)[key]
        assert back == fmt and back.name == name and back.spec == fmt.spec
        assert (back.nan_codes, back.inf_codes, back.max_code) == \
            (fmt.nan_codes, fmt.inf_codes, fmt.max_code)


def test_spec_wins_over_an_unknown_name(good):
    """A name golden does not know is read from its spec; without the spec it is an error."""
    meta = copy.deepcopy(good)
    meta["parameters"]["format"] = "my_e2m1_variant"
    meta["element_formats"]["format"] = {"name": "my_e2m1_variant", "ebits": 2, "mbits": 1,
                                         "convention": "finite", "bias": 2}
    fmt = element_formats(validate(meta))["format"]
    assert (fmt.ebits, fmt.mbits, fmt.bias, fmt.name) == (2, 1, 2, "my_e2m1_variant")
    assert fmt != golden.element_format("fp4_e2m1")  # another bias: another value set


def test_ocp_sidecar_without_element_formats_stays_valid(good):
    meta = copy.deepcopy(good)
    del meta["element_formats"]
    assert element_formats(validate(meta)) == {"format": golden.element_format("fp4_e2m1")}


# -- invalid sidecars ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def good() -> dict:
    comp = _build("quantizer", ["--format", "fp4_e2m1", "--block-size", "2", "--input", "bf16",
                                "--rounding", "runtime", "--scale-mode", "runtime",
                                "--stages", "1"])
    return validate(sidecar(comp, "quantizer"))


def _field(meta, role, name):
    return next(f for f in port_by_role(meta, role)["fields"] if f["name"] == name)


BAD = {
    "missing latency": (lambda m: m.pop("latency"), r"\(top level\): 'latency' is a required"),
    "missing parameter": (lambda m: m["parameters"].pop("random_bits"),
                          r"parameters: 'random_bits' is a required"),
    "bad rounding": (lambda m: m["parameters"].update(rounding="nearest"),
                     r"parameters\.rounding: 'nearest' is not one of"),
    "bad format": (lambda m: m["parameters"].update(format=7),
                   r"parameters\.format: 7 is not of type 'string'"),
    "unknown format, no spec": (lambda m: (m["parameters"].update(format="fp7"),
                                           m.pop("element_formats")),
                                r"parameters\.format: unknown element format 'fp7'.*needs its "
                                r"spec in element_formats"),
    "spec of another name": (lambda m: m["element_formats"]["format"].update(name="e2m1"),
                             r"element_formats\.format\.name 'e2m1' is not parameters\.format "
                             r"'fp4_e2m1'"),
    "spec of another format": (lambda m: m["element_formats"]["format"].update(mbits=2),
                               r"element_formats\.format: .* is not the format named "
                               r"'fp4_e2m1'"),
    "spec of no parameter": (lambda m: m["element_formats"].update(
                                 format_a=m["element_formats"]["format"]),
                             r"element_formats has \['format', 'format_a'\], the format "
                             r"parameters are \['format'\]"),
    "invalid spec": (lambda m: m["element_formats"]["format"].update(ebits=1, mbits=0),
                     r"element_formats\.format: "),
    "spec missing a key": (lambda m: m["element_formats"]["format"].pop("bias"),
                           r"element_formats\.format: .* is not valid under any"),
    "async reset": (lambda m: m["reset"].update(kind="async"), r"reset\.kind: 'sync' was expected"),
    "bad flow control": (lambda m: m["flow_control"].update(i_ready="maybe"),
                         r"flow_control\.i_ready: 'maybe' is not one of"),
    "schema 2": (lambda m: m.update(schema=2), r"schema 2: this version reads schema 1"),
    "no clock port": (lambda m: m["ports"].pop(0),
                      r"ports: needs exactly one port with role 'clk'"),
    "two i.payload": (lambda m: port_by_role(m, "o.payload").update(role="i.payload"),
                      r"needs exactly one port with role 'i.payload'"),
    "bare payload": (lambda m: port_by_role(m, "o.payload").pop("fields"),
                     r"ports\[\d+\]: 'fields' is a required property"),
    "dotted field name": (lambda m: _field(m, "o.payload", "scale").update(name="x.scale"),
                          r"ports\[\d+\]\.fields\[0\]\.name: 'x\.scale' does not match"),
    "encoding too wide": (lambda m: _field(m, "i.payload", "scale_mode")["encoding"]
                          .update(rceil=2), r"scale_mode: encoding of \['rceil'\] does not fit"),
    "drive names no value": (lambda m: _field(m, "i.payload", "random")["drive"]["when"]
                             .update(equals="sr"), r"random: drive\.when names rounding = 'sr'"),
    "overlapping fields": (lambda m: _field(m, "o.payload", "codes").update(lsb=4),
                           r"fields scale and codes overlap"),
    "field outside port": (lambda m: _field(m, "i.payload", "scale_mode").update(lsb=500),
                           r"scale_mode: bits \[500, 501\) lie outside"),
    "clock not the clk port": (lambda m: m["clock"].update(name="clock"),
                               r"clock\.name 'clock' is not the port with role 'clk'"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_invalid_sidecar_is_rejected_with_a_readable_message(good, case):
    mutate, pattern = BAD[case]
    meta = copy.deepcopy(good)
    mutate(meta)
    with pytest.raises(SidecarError, match=pattern) as e:
        validate(meta)
    message = str(e.value)
    assert "\n" not in message and len(message) < 300, message


@pytest.mark.parametrize("unit", ["dot", "dot-general"])
def test_sidecar_states_the_datapath_widths(unit):
    """Both dot units' sidecars give the signed block-sum width (W + 1) and the window N,
    with W from the spec values (a mutation campaign changed MXDotGeneral's ``sum_bits`` and
    nothing noticed)."""
    from hw.dot import MXDot, MXDotGeneral

    cls = {"dot": MXDot, "dot-general": MXDotGeneral}[unit]
    for fa, fb, k in (("fp8_e4m3", "fp8_e4m3", 32), ("int8", "fp6_e2m3", 8),
                      ("fp4_e2m1", "fp8_e5m2", 2)):
        w = (k * oracle.units_max(fa) * oracle.units_max(fb)).bit_length()
        params = sidecar(cls(fa, fb, block_size=k), unit)["parameters"]
        assert params["sum_bits"] == w + 1, (fa, fb, k)
        # the window holds the signed sum and the guard bits below it that fp32 rounding
        # needs (docs/dot.md, "The exact c + T"; test_hw_dot.test_window_is_exact)
        assert params["window_bits"] - params["sum_bits"] - 1 >= 25, (fa, fb, k)


@pytest.mark.parametrize("unit,argv", [
    ("quantizer", ["--format", "fp4_e2m1", "--block-size", "2"]),
    ("dequantizer", ["--format", "int8", "--block-size", "2"]),
    ("dot", ["--format", "int8", "--block-size", "2"]),
    ("dot-general", ["--format", "int8", "--block-size", "2", "--contexts", "2"]),
])
def test_flow_control_says_how_the_verilog_drives_i_ready(unit, argv):
    """The sidecar's ``flow_control.i_ready``, held against the generated Verilog: a
    "registered" ``i.ready`` port is a flip-flop's output (assigned in an always block), a
    "combinational" one is a continuous assignment of logic."""
    from hw.cli import to_verilog

    comp = _build(unit, argv)
    meta = sidecar(comp, unit)
    port = port_by_role(meta, "i.ready")["name"]
    text = to_verilog(comp)
    registered = re.search(rf"^\s*{port} <= ", text, re.M) is not None
    assert meta["flow_control"]["i_ready"] == ("registered" if registered
                                               else "combinational"), unit
