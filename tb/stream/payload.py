"""Payload codec: named bit fields of a stream payload <-> numpy arrays, Python ints and the
bulk wrapper's memory files.

:class:`BitLayout` maps named fields (from the unit's JSON sidecar, see :mod:`hw.sidecar`) to
payload byte matrices with vectorized numpy, and converts them to Python integers (cocotb
drivers) or ``$readmemh`` text / binary images (bulk mode).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["BitLayout"]


class BitLayout:
    """Named bit fields of a wide payload, packed LSB-first, converted in bulk with numpy.

    Payload batches are ``(n, nbytes)`` uint8 matrices: row ``j`` is payload ``j`` as
    little-endian bytes (unused top bits zero).  Byte-aligned fields (the common case: fp32,
    bf16, fp16 lanes, 8-bit codes) are copied as bytes; others go through bit matrices.

    Parameters
    ----------
    width : int
        Total payload width in bits.
    fields : list of dict
        ``{"name", "lsb", "width"}`` and, for an array of lanes, ``"array": {"length",
        "elem_width"}`` -- the leaf fields of a sidecar port (:func:`hw.sidecar.flat_fields`);
        other keys are kept (e.g. a runtime field's ``"encoding"``).
    """

    def __init__(self, width: int, fields: list[dict]):
        self.width = int(width)
        self.nbytes = (self.width + 7) // 8
        self.fields = {f["name"]: f for f in fields}

    @classmethod
    def from_sidecar(cls, sidecar: dict, role: str) -> BitLayout:
        """Layout of the payload port with ``role`` (``"i.payload"`` or ``"o.payload"``) of a
        schema-1 sidecar dict (:mod:`hw.sidecar`); nested fields are named by their path
        (``a.scale``)."""
        from hw.sidecar import flat_fields, port_by_role

        if role not in ("i.payload", "o.payload"):
            raise ValueError(f"role must be 'i.payload' or 'o.payload', got {role!r}")
        port = port_by_role(sidecar, role)
        return cls(port["width"], flat_fields(port["fields"]))

    def _geometry(self, name):
        f = self.fields[name]
        arr = f.get("array")
        return f, (arr["length"] if arr else 1), (arr["elem_width"] if arr else f["width"])

    # -- numpy field arrays <-> payload byte matrices ------------------------------------------
    def pack(self, n: int, **values) -> np.ndarray:
        """Payload byte matrix ``(n, nbytes)`` from field arrays (shape ``(n,)`` or
        ``(n, length)``) of non-negative integers; missing fields are zero.

        A value that does not fit its field's width is an error, not truncated: a layout
        narrower than the values a model produces (a sidecar field a bit short, e.g. a
        31-bit fp32 result) must fail the test, not drop the bits on both sides of the
        comparison."""
        out = np.zeros((n, self.nbytes), np.uint8)
        for name, v in values.items():
            f, length, w = self._geometry(name)
            if w > 64:
                raise ValueError(f"field {name}: elements wider than 64 bits")
            v = np.asarray(v)
            if v.dtype.kind == "i" and v.size and v.min() < 0:
                raise ValueError(f"field {name}: negative value {v.min()} (pass the bit "
                                 "pattern as an unsigned integer)")
            v = np.ascontiguousarray(v.astype("<u8")).reshape(n, -1)
            if v.shape[1] != length:
                raise ValueError(f"field {name}: expected {length} lanes, got {v.shape[1]}")
            if w < 64 and v.size and int(v.max()) >> w:
                raise ValueError(f"field {name}: value {int(v.max()):#x} does not fit its "
                                 f"{w} bits")
            lo = f["lsb"]
            if lo % 8 == 0 and w % 8 == 0:  # whole bytes: copy
                b = v.view(np.uint8).reshape(n, length, 8)[:, :, :w // 8]
                out[:, lo // 8:lo // 8 + length * w // 8] = b.reshape(n, -1)
                continue
            if lo % 8 == 0 and 8 % w == 0 and (length * w) % 8 == 0:  # lanes share bytes
                per = 8 // w  # (fp4 codes: two per byte); lane j of a byte at bit j * w
                lanes = v.reshape(n, length // per, per).astype(np.uint8)
                b = np.zeros((n, length // per), np.uint8)
                for j in range(per):
                    b |= lanes[:, :, j] << np.uint8(j * w)
                out[:, lo // 8:lo // 8 + length * w // 8] |= b
                continue
            # the general case through bit matrices, over the bytes that hold an element's bits
            bits = np.unpackbits(v.view(np.uint8).reshape(n, -1, 8)[:, :, :(w + 7) // 8],
                                 axis=2, bitorder="little")
            span = np.zeros((n, lo % 8 + f["width"]), np.uint8)
            span[:, lo % 8:] = bits[:, :, :w].reshape(n, -1)
            b = np.packbits(span, axis=1, bitorder="little")
            out[:, lo // 8:lo // 8 + b.shape[1]] |= b
        return out

    def unpack(self, rows: np.ndarray) -> dict:
        """Field arrays (uint64; arrays as ``(n, length)``) from a payload byte matrix."""
        out = {}
        n = rows.shape[0]
        for name in self.fields:
            f, length, w = self._geometry(name)
            lo = f["lsb"]
            if lo % 8 == 0 and w in (8, 16, 32, 64):
                b = np.ascontiguousarray(rows[:, lo // 8:lo // 8 + length * w // 8])
                v = b.view(f"<u{w // 8}").reshape(n, length).astype(np.uint64)
            else:
                bits = np.unpackbits(rows, axis=1, bitorder="little")[:, lo:lo + f["width"]]
                b64 = np.zeros((n, length, 64), np.uint8)
                b64[:, :, :w] = bits.reshape(n, length, w)
                v = np.packbits(b64, axis=2, bitorder="little").view("<u8")[:, :, 0]
                v = v.astype(np.uint64)
            out[name] = v if f.get("array") else v[:, 0]
        return out

    # -- byte matrices <-> Python ints (cocotb) -----------------------------------------------
    def to_ints(self, rows: np.ndarray) -> list[int]:
        return [int.from_bytes(row.tobytes(), "little") for row in rows]

    def from_ints(self, ints: Iterable[int]) -> np.ndarray:
        raw = b"".join(int(x).to_bytes(self.nbytes, "little") for x in ints)
        return np.frombuffer(raw, np.uint8).reshape(-1, self.nbytes).copy()

    # -- byte matrices <-> $readmemh / $writememh text ----------------------------------------
    @property
    def hex_digits(self) -> int:
        return (self.width + 3) // 4

    def to_hex(self, rows: np.ndarray) -> bytes:
        """One line of ``hex_digits`` hex digits per row, most significant digit first."""
        n, d = rows.shape[0], self.hex_digits
        text = np.ascontiguousarray(rows[:, ::-1]).tobytes().hex().encode()
        chars = np.frombuffer(text, np.uint8).reshape(n, -1)[:, 2 * self.nbytes - d:]
        return np.concatenate([chars, np.full((n, 1), ord("\n"), np.uint8)], axis=1).tobytes()

    def from_hex(self, text: bytes | str) -> np.ndarray:
        """Inverse of :meth:`to_hex`; tolerates ``//`` comments, blank lines and short words."""
        return np.ascontiguousarray(_hex_words(text, self.hex_digits)[:, ::-1])

    def to_bin(self, rows: np.ndarray) -> bytes:
        """Binary ``$fread`` image: ``nbytes`` bytes per row, most significant byte first."""
        return np.ascontiguousarray(rows[:, ::-1]).tobytes()

    def from_bin(self, data: bytes) -> np.ndarray:
        """Rows from a Verilator ``$fwrite("%u")`` image: ``4 * ceil(width / 32)`` bytes per
        payload, least significant byte first."""
        step = 4 * ((self.width + 31) // 32)
        if len(data) % step:
            raise ValueError(f"{len(data)} bytes is not a whole number of {step}-byte payloads")
        rows = np.frombuffer(data, np.uint8).reshape(-1, step)
        return np.ascontiguousarray(rows[:, :self.nbytes])


def _hex_words(text: bytes | str, d: int) -> np.ndarray:
    """Words of ``d`` hex digits from memory-file text, as big-endian byte rows."""
    if isinstance(text, str):
        text = text.encode()
    nbytes = (d + 1) // 2
    raw = np.frombuffer(text, np.uint8)
    if raw.size % (d + 1) == 0 and raw.size and np.all(raw[d::d + 1] == ord("\n")):
        c = raw.reshape(-1, d + 1)[:, :d]  # the common case: fixed-width lines
    else:
        words = [w for line in text.splitlines() for w in line.split(b"//")[0].split()
                 if not w.startswith(b"@")]
        if not words:
            return np.zeros((0, nbytes), np.uint8)
        words = [w.rjust(d, b"0")[-d:] for w in words]
        c = np.frombuffer(b"".join(words), np.uint8).reshape(len(words), d)
    if d % 2:
        c = np.concatenate([np.full((c.shape[0], 1), ord("0"), np.uint8), c], axis=1)
    try:
        b = bytes.fromhex(np.ascontiguousarray(c).tobytes().decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        raise ValueError("non-hex digit (x/z?) in memory file") from None
    return np.frombuffer(b, np.uint8).reshape(c.shape[0], nbytes)


