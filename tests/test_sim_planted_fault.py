"""A planted fault in each unit's Verilog reaches both halves of the regression.

For each unit the generated Verilog is edited so that one bit of the output payload leaves
the module inverted (the module's own drivers of the port now drive an inner wire, and the
port is that wire with the bit flipped).  The unit's standard testbench then runs on it, and
both the stream row and the bulk row of its summary must count mismatches, and the run must
fail.  (``tests/test_sim_planted_mismatch.py`` flips a bit inside the scoreboard: it shows
that the comparator works; this shows that the DUT's output reaches it, in stream and in
bulk mode.)  One small configuration per unit, 20 blocks, no sweeps; builds under
``tmp_path``.
"""

from __future__ import annotations

import json
import re

import pytest

from hw.sidecar import port_by_role
from tb.bulk import prepare_unit
from tb.runner import run_testbench

pytestmark = pytest.mark.sim

# unit: (cocotb module, generator arguments, the output field whose low bit is inverted)
UNITS = {
    "quantizer": ("tb.quantizer", ["--format", "fp4_e2m1", "--input", "bf16", "--block-size",
                                   "2"], "codes"),
    "dequantizer": ("tb.dequantizer", ["--format", "fp6_e3m2", "--output", "fp16",
                                       "--block-size", "2"], "data"),
    "dot": ("tb.dot", ["--format-a", "fp4_e2m1", "--format-b", "fp6_e2m3", "--block-size",
                       "2"], "result"),
    "dot-general": ("tb.dot", ["--format-a", "fp4_e2m1", "--format-b", "fp6_e2m3",
                               "--block-size", "2", "--contexts", "2"], "result"),
}


def plant_output_fault(verilog: str, module: str, port: str, width: int, bit: int) -> str:
    """``verilog`` with bit ``bit`` of output ``port`` (``width`` bits) of ``module``
    inverted: every ``assign port...`` of the module drives ``<port>_fault`` instead, and the
    port is ``<port>_fault ^ (1 << bit)``.  Raises AssertionError, naming what is missing,
    when the text does not have the shape this edit expects (the module, one ``wire``
    declaration of the port, at least one ``assign`` to it)."""
    m = re.search(rf"^module {re.escape(module)}\(.*?^endmodule$", verilog, re.M | re.S)
    assert m, f"planting a fault: module {module} not found in the generated Verilog"
    body, n_assign = re.subn(rf"^(\s*assign ){re.escape(port)}(?=[\s\[])", rf"\1{port}_fault",
                             m[0], flags=re.M)
    assert n_assign >= 1, f"planting a fault: no `assign {port}` driver found in {module}"
    body, n_decl = re.subn(
        rf"^(\s*)wire \[{width - 1}:0\] {re.escape(port)};$",
        rf"\g<0>\n\1wire [{width - 1}:0] {port}_fault;\n"
        rf"\1assign {port} = {port}_fault ^ {width}'d{1 << bit};",
        body, flags=re.M)
    assert n_decl == 1, (f"planting a fault: expected one `wire [{width - 1}:0] {port};` in "
                         f"{module}, found {n_decl}")
    return verilog[:m.start()] + body + verilog[m.end():]


def test_plant_output_fault_edits_the_drivers_and_fails_loudly_on_another_shape():
    text = ("module top(o);\n  output [3:0] o;\n  wire [3:0] o;\n  assign o[3] = a;\n"
            "  assign o[2:0] = b;\nendmodule\n")
    planted = plant_output_fault(text, "top", "o", 4, 1)
    assert planted == ("module top(o);\n  output [3:0] o;\n  wire [3:0] o;\n"
                       "  wire [3:0] o_fault;\n  assign o = o_fault ^ 4'd2;\n"
                       "  assign o_fault[3] = a;\n  assign o_fault[2:0] = b;\nendmodule\n")
    with pytest.raises(AssertionError, match="module other not found"):
        plant_output_fault(text, "other", "o", 4, 1)
    with pytest.raises(AssertionError, match=r"one `wire \[7:0\] o;`"):
        plant_output_fault(text, "top", "o", 8, 1)
    with pytest.raises(AssertionError, match="no `assign o` driver"):
        plant_output_fault(text.replace("assign o", "assign p"), "top", "o", 4, 1)


@pytest.mark.parametrize("unit", list(UNITS))
def test_planted_output_fault_is_counted_by_stream_and_bulk(unit, seed, tmp_path):
    module, argv, field = UNITS[unit]
    sources, top, sidecar_path = prepare_unit(unit, argv, tmp_path / "rtl")
    meta = json.loads(sidecar_path.read_text())
    out = port_by_role(meta, "o.payload")
    lsb = next(f["lsb"] for f in out["fields"] if f["name"] == field)
    verilog = next(s for s in sources if s.name == f"{meta['module']}.v")
    verilog.write_text(plant_output_fault(verilog.read_text(), meta["module"], out["name"],
                                          out["width"], lsb))
    rows = []
    # (cocotb's runner exits when a test failed; run_cocotb asserts when results say so)
    with pytest.raises((AssertionError, SystemExit)):
        run_testbench(sources, top, sidecar_path, test_module=module,
                      build_dir=tmp_path / "build", seed=seed, label=unit, blocks=20,
                      sweeps=False, record=lambda **row: rows.append(row))
    counted = {r["config"].rsplit("[", 1)[1].rstrip("]"): r for r in rows}
    for test in ("stream", "bulk"):
        assert test in counted, f"{unit}: no [{test}] row: {rows}"
        row = counted[test]
        print(f"planted fault in {unit} (bit {lsb} of {out['name']}): [{test}] "
              f"{row['mismatches']} mismatches in {row['blocks']} blocks")
        assert row["mismatches"] > 0, f"{unit}: the [{test}] row counted no mismatch: {row}"
