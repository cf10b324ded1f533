"""The testbench's payload codec: BitLayout's memory-file formats.

A wrong codec here would make every simulation compare the wrong bits, so the formats are
checked against an independent re-statement (Python ints and ``format``), not only round-trip.
"""

from __future__ import annotations

import numpy as np
import pytest

from tb.stream import BitLayout
from tb.verilator import public_control


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
