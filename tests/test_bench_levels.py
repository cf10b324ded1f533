"""bench.synth.levels: the logic levels of each pipeline stage, on a netlist worked by hand."""

from __future__ import annotations

import json

import pytest

from bench.synth import levels
from bench.synth.levels import CELL_NS, INPUT_PORTS, OUTPUT_PORTS, ROUTE_NS, stage_paths


def _ff(d, q, ce=None):
    conn = {"CLK": [1], "DI": [d], "Q": [q]}
    if ce is not None:
        conn["CE"] = [ce]
    return {"type": "TRELLIS_FF", "port_directions": {"CLK": "input", "DI": "input",
                                                      "CE": "input", "Q": "output"},
            "connections": conn}


def _lut(z, *ins):
    conn = {p: [b] for p, b in zip("ABCD", ins, strict=False)}  # the first len(ins) inputs
    conn["Z"] = [z]
    return {"type": "LUT4", "port_directions": {**{p: "input" for p in "ABCD"}, "Z": "output"},
            "connections": conn}


def _ccu2c(**conn):
    outs = ("S0", "S1", "COUT")
    return {"type": "CCU2C", "port_directions": {p: "output" if p in outs else "input"
                                                 for p in conn},
            "connections": {p: [b] for p, b in conn.items()}}


#: A unit of three registers p_x (two bits, from the input ports), p_y and p_z, and an
#: anonymous flip-flop whose output net is p_valid.  p_x -> p_y: two LUTs; p_y and p_x ->
#: p_z: a two-cell carry chain entered at its first cell; p_x -> p_z's clock enable: one LUT.
NETLIST = {"modules": {
    "ring": {"ports": {}, "cells": {"r_TRELLIS_FF_Q": _ff(30, 31)}, "netnames": {}},
    "unit": {
        "ports": {"a": {"direction": "input", "bits": [2, 3]},
                  "y": {"direction": "output", "bits": [18]}},
        "cells": {
            "p_x_TRELLIS_FF_Q": _ff(2, 10),
            "p_x_TRELLIS_FF_Q_1": _ff(3, 11),
            "l1": _lut(12, 10, 11),
            "l2": _lut(13, 12),
            "p_y_TRELLIS_FF_Q": _ff(13, 14),
            "c0": _ccu2c(A0=14, B0=10, S0=15, COUT=16),
            "c1": _ccu2c(CIN=16, S0=17),
            "p_z_TRELLIS_FF_Q": _ff(17, 18, ce=12),
            "$auto$9_TRELLIS_FF_Q": _ff(14, 19),
        },
        "netnames": {"p_x": {"bits": [10, 11]}, "p_y": {"bits": [14]}, "p_z": {"bits": [18]},
                     "p_valid": {"bits": [19]}, "a": {"bits": [2, 3]}, "y": {"bits": [18]},
                     "$and$1": {"bits": [12]}},
    },
}}


def test_each_stage_has_its_deepest_path():
    t = CELL_NS
    ff_to_ff = t["clk_to_q"] + ROUTE_NS + t["setup"]  # no logic between two registers
    lut = ROUTE_NS + t["lut"]
    # into c0 (to its carry out), then c1's carry in to its sum: no carry through a cell
    chain = ROUTE_NS + t["chain_in"] + t["carry_to_sum"]
    got = {(p.source, p.dest, p.port): (p.levels, p.ns, p.fanout) for p in stage_paths(NETLIST)}
    # fan-out: p_x[0] (bit 10), l1's output (12) and p_y (14) have two loads each; the
    # output port counts as a load of p_z
    want = {
        (INPUT_PORTS, "p_x", "DI"): (0, ff_to_ff, 1),
        ("p_x", "p_y", "DI"): (2, ff_to_ff + 2 * lut, 2),
        ("p_y", "p_z", "DI"): (1, ff_to_ff + chain, 2),
        ("p_x", "p_z", "DI"): (1, ff_to_ff + chain, 2),
        ("p_x", "p_z", "CE"): (1, ff_to_ff + lut, 2),
        ("p_y", "p_valid", "DI"): (0, ff_to_ff, 2),
        ("p_z", OUTPUT_PORTS, "DI"): (0, ff_to_ff, 1),
    }
    assert set(got) == set(want)
    for key, (lv, ns, fanout) in want.items():
        assert got[key][0] == lv, key
        assert got[key][1] == pytest.approx(ns, abs=0.006), key
        assert got[key][2] == fanout, key


def test_deepest_first_and_the_table(capsys, tmp_path):
    paths = stage_paths(NETLIST)
    assert [p.ns for p in paths] == sorted((p.ns for p in paths), reverse=True)
    assert (paths[0].source, paths[0].dest) == ("p_x", "p_y")
    netlist = tmp_path / "ecp5.json"
    netlist.write_text(json.dumps(NETLIST))
    assert levels.main(["dot", "--netlist", str(netlist), "--top", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and out[1].split()[1:] == ["2", "2", "p_x", "->", "p_y"]
    assert out[2].endswith(("p_y -> p_z", "p_x -> p_z"))


def test_an_empty_netlist_is_an_error():
    with pytest.raises(ValueError, match="no modules"):
        stage_paths({"modules": {}})


#: p_x (as above) -> p_w, a struct register: lanes[0].deep and lanes[1].deep two LUTs deep,
#: flat one LUT; p_w.flat also ends a second, one-LUT path from p_x's other bit.
FIELDS = {"modules": {"unit": {
    "ports": {"a": {"direction": "input", "bits": [2, 3]}},
    "cells": {
        "p_x_TRELLIS_FF_Q": _ff(2, 10),
        "p_x_TRELLIS_FF_Q_1": _ff(3, 11),
        "l1": _lut(12, 10, 11),
        "l2": _lut(13, 12),
        "l3": _lut(14, 12, 10),
        "l4": _lut(15, 11),
        "p_w_TRELLIS_FF_Q": _ff(13, 40),
        "p_w_TRELLIS_FF_Q_1": _ff(14, 41),
        "p_w_TRELLIS_FF_Q_2": _ff(15, 42),
    },
    "netnames": {"p_x": {"bits": [10, 11]}, "p_w": {"bits": [40, 41, 42]},
                 "p_w.lanes": {"bits": [40, 41]}, "p_w.lanes[0]": {"bits": [40]},
                 "p_w.lanes[0].deep": {"bits": [40]}, "p_w.lanes[1]": {"bits": [41]},
                 "p_w.lanes[1].deep": {"bits": [41]}, "p_w.flat": {"bits": [42]}},
}}}


def test_the_fields_at_the_deepest_estimate(capsys, tmp_path):
    got = {(p.source, p.dest): p for p in stage_paths(FIELDS)}
    deep = got["p_x", "p_w"]
    assert (deep.levels, deep.fields) == (2, ("lanes[*].deep",))
    assert got[INPUT_PORTS, "p_x"].fields == ()  # no struct: no fields
    netlist = tmp_path / "ecp5.json"
    netlist.write_text(json.dumps(FIELDS))
    assert levels.main(["dot", "--netlist", str(netlist), "--fields"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].endswith("p_x -> p_w  [lanes[*].deep]")
    assert levels.main(["dot", "--netlist", str(netlist)]) == 0  # without --fields: no list
    assert "[" not in capsys.readouterr().out
    with pytest.raises(SystemExit):
        levels.main(["dot", "--netlist", str(netlist), "--depth-only"])
    assert "--depth-only synthesizes" in capsys.readouterr().err
