"""Test vectors for anyone's MX hardware: plain ``$readmemh`` hex files of inputs and expected
outputs, written by ``python -m golden vectors``.

One file per field, one block per line, lanes LSB-first (lane i of width w at bits
``[w*i, w*(i+1))`` of the line's number, as on the RTL ports). Every file starts with ``//``
comment lines (which ``$readmemh`` skips) describing its layout; ``README.txt`` and
``vectors.json`` in the same folder describe the whole set. Random and corner-case blocks are
mixed (corner cases from :mod:`golden.stimulus`), and every expected value comes from golden.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

import golden

from . import stimulus as S
from .codec import rounding_mode
from .formats import element_format, float_format
from .mx import MXArray, check_block_size, default_block_size
from .scale_format import E8M0

UNITS = ("quantizer", "dequantizer", "dot")


@dataclass
class Field:
    name: str
    role: str  # "input" or "expected"
    lanes: int
    lane_width: int
    values: np.ndarray  # (n, lanes) integers
    meaning: str

    @property
    def width(self) -> int:
        return self.lanes * self.lane_width


def to_hex_lines(values: np.ndarray, lane_width: int) -> list[str]:
    """(n, lanes) unsigned integers -> one fixed-width hex number per row, lane 0 in the LSBs."""
    v = np.asarray(values, np.uint64)
    n, lanes = v.shape
    width = lanes * lane_width
    bits = ((v[:, :, None] >> np.arange(lane_width, dtype=np.uint64)) & 1).astype(np.uint8)
    bits = bits.reshape(n, width)
    pad = (-width) % 8
    bits = np.concatenate([bits, np.zeros((n, pad), np.uint8)], axis=1)
    by = np.packbits(bits, axis=1, bitorder="little")[:, ::-1]  # most significant byte first
    digits = -(-width // 4)
    return [row.tobytes().hex()[-digits:] for row in by]


def from_hex_lines(lines, lanes: int, lane_width: int) -> np.ndarray:
    """Inverse of :func:`to_hex_lines` (skips ``//`` comments and blank lines)."""
    rows = [ln.split("//")[0].strip() for ln in lines]
    rows = [r for r in rows if r]
    out = np.zeros((len(rows), lanes), np.uint64)
    mask = (1 << lane_width) - 1
    for i, r in enumerate(rows):
        x = int(r, 16)
        for j in range(lanes):
            out[i, j] = (x >> (lane_width * j)) & mask
    return out


def _mix(rng, directed: np.ndarray, random_fn, count: int) -> np.ndarray:
    """Corner cases (at most half of ``count``) and random rows, shuffled together."""
    take = min(len(directed), count // 2)
    picked = directed[rng.permutation(len(directed))[:take]]
    rows = np.concatenate([picked, random_fn(count - take)]) if count > take else picked
    return rows[rng.permutation(len(rows))]


def quantizer_vectors(rng, count, fmt, k, input_format="fp32", rounding="rne",
                      scale_mode="floor", random_bits=8):
    fmt, ff = element_format(fmt), float_format(input_format)
    raw = _mix(rng, S.quantizer_directed_blocks(k, ff, fmt, rng),
               lambda n: S.quantizer_random_blocks(rng, n, k, ff), count)
    stochastic = rounding == "stochastic"
    rand = rng.integers(0, 1 << random_bits, raw.shape) if stochastic else None
    mx = golden.quantize(raw.view(ff.dtype), fmt, block_size=k, rounding=rounding,
                         scale_mode=scale_mode, random=rand, random_bits=random_bits)
    fields = [Field("in_data", "input", k, ff.bits, raw,
                    f"k={k} {ff.name} values (IEEE bit patterns)")]
    if stochastic:
        fields.append(Field("in_random", "input", k, random_bits, rand,
                            f"{random_bits} random bits per element (stochastic rounding)"))
    fields += [Field("expected_scale", "expected", 1, 8, mx.scales.reshape(-1, 1),
                     "E8M0 scale code"),
               Field("expected_codes", "expected", k, fmt.bits, mx.codes,
                     f"{fmt.name} element codes")]
    params = {"format": fmt.name, "block_size": k, "input": ff.name, "rounding": rounding,
              "scale_mode": scale_mode, "random_bits": random_bits if stochastic else 0}
    return params, fields, {"format": fmt.spec}


def dequantizer_vectors(rng, count, fmt, k, output_format="fp32"):
    fmt, ff = element_format(fmt), float_format(output_format)
    s_all, c_all = S.dequantizer_exhaustive_inputs(fmt, k)
    directed = np.concatenate([s_all[:, None], c_all], axis=1)

    def rand(n):
        s, c = S.dequantizer_random_inputs(rng, n, fmt, k)
        return np.concatenate([s[:, None], c], axis=1)

    rows = _mix(rng, directed, rand, count)
    scales, codes = rows[:, 0].astype(np.uint8), rows[:, 1:].astype(np.uint8)
    mx = MXArray(scales.reshape(-1, 1), codes, fmt, k, 1, codes.shape)
    out = golden.dequantize(mx, ff.dtype).view(ff.uint)
    fields = [Field("in_scale", "input", 1, 8, scales.reshape(-1, 1), "E8M0 scale code"),
              Field("in_codes", "input", k, fmt.bits, codes, f"{fmt.name} element codes"),
              Field("expected_data", "expected", k, ff.bits, out,
                    f"{ff.name} values (every NaN is the canonical quiet NaN)")]
    return ({"format": fmt.name, "block_size": k, "output": ff.name}, fields,
            {"format": fmt.spec})


def dot_vectors(rng, count, fmt_a, fmt_b, k):
    fa, fb = element_format(fmt_a), element_format(fmt_b)
    cases = S.dot_directed_blocks(fa, fb, k)
    d_ca = np.stack([c[0] for c in cases])
    d_sa = np.array([c[1] for c in cases])
    d_cb = np.stack([c[2] for c in cases])
    d_sb = np.array([c[3] for c in cases])
    d_c = np.array([c[4] for c in cases], np.uint64)
    directed = np.concatenate([d_sa[:, None], d_ca, d_sb[:, None], d_cb, d_c[:, None]], axis=1)

    def rand(n):
        ca, sa, cb, sb = S.dot_random_blocks(rng, fa, fb, n, k)
        c = S.dot_accumulators(rng, fa, fb, ca, sa, cb, sb)
        return np.concatenate([sa[:, None], ca, sb[:, None], cb, c[:, None]], axis=1)

    rows = _mix(rng, directed.astype(np.uint64), lambda n: rand(n).astype(np.uint64), count)
    sa, ca = rows[:, 0].astype(np.uint8), rows[:, 1:1 + k].astype(np.uint8)
    sb, cb = rows[:, 1 + k].astype(np.uint8), rows[:, 2 + k:2 + 2 * k].astype(np.uint8)
    c = rows[:, -1].astype(np.uint32)
    res = golden.dot_blocks(ca[:, None], sa[:, None], cb[:, None], sb[:, None], fa, fb,
                            acc=c.view(np.float32)).view(np.uint32)
    fields = [Field("in_scale_a", "input", 1, 8, sa[:, None], "E8M0 scale of A"),
              Field("in_codes_a", "input", k, fa.bits, ca, f"{fa.name} codes of A"),
              Field("in_scale_b", "input", 1, 8, sb[:, None], "E8M0 scale of B"),
              Field("in_codes_b", "input", k, fb.bits, cb, f"{fb.name} codes of B"),
              Field("in_c", "input", 1, 32, c[:, None], "fp32 accumulator input c"),
              Field("expected_result", "expected", 1, 32, res[:, None],
                    "fp32 RNE(c + 2^(sa+sb-254) * sum a_i*b_i); NaN is 0x7FC00000")]
    return ({"format_a": fa.name, "format_b": fb.name, "block_size": k}, fields,
            {"format_a": fa.spec, "format_b": fb.spec})


def generator_version() -> str:
    """The installed project's version (``ocp-mx-hdl``), or ``"unknown"`` when golden runs from a
    source tree that was never installed."""
    try:
        return metadata.version("ocp-mx-hdl")
    except metadata.PackageNotFoundError:
        return "unknown"


def write_vectors(out_dir, unit: str, params: dict, fields: list[Field], *, seed: int,
                  command: str | None = None, formats: dict | None = None,
                  scale_format: dict | None = None) -> Path:
    """Write the hex files, ``vectors.json`` and ``README.txt`` of one vector set.

    ``vectors.json`` is the set's manifest and provenance: the generator (project version,
    command line, numpy version), the unit, its parameters, count and seed, the whole element
    format of each format parameter (``formats``: parameter name -> ``ElementFormat.spec``,
    read back by :func:`read_formats`), the block scale format (``scale_format``: a
    :attr:`golden.ScaleFormat.spec`, E8M0 unless given), and per file its bit layout and
    SHA-256, so a user can cite exactly the set their design passed.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    n = len(fields[0].values)
    desc = ", ".join(f"{k}={v}" for k, v in params.items())
    manifest = {"unit": unit, "parameters": params, "element_formats": formats or {},
                "scale_format": scale_format or E8M0.spec,
                "count": n, "seed": seed,
                "generator": {"name": "ocp-mx-hdl golden", "version": generator_version(),
                              "command": command or "golden.vectors.write_vectors",
                              "python": sys.version.split()[0], "numpy": np.__version__},
                "files": {}}
    readme = [f"MX test vectors: unit {unit}; {desc}; {n} blocks; seed {seed}.",
              "Written by `python -m golden vectors`; expected values are the golden model's.",
              "Each .hex file: one block per line, a fixed-width hex number for $readmemh;",
              "lane i of width w sits at bits [w*i, w*(i+1)) (lane 0 in the LSBs).", "",
              "file | role | lanes x bits | meaning"]
    for f in fields:
        name = f"{f.name}.hex"
        header = [f"// {name}: {f.meaning}",
                  f"// {f.role}; {f.lanes} lane(s) x {f.lane_width} bits = {f.width} bits per "
                  f"line, lane i at bits [{f.lane_width}*i, {f.lane_width}*(i+1))",
                  f"// unit {unit}; {desc}; {n} blocks; seed {seed}"]
        text = "\n".join(header + to_hex_lines(f.values, f.lane_width)) + "\n"
        (out / name).write_text(text)
        manifest["files"][name] = {"role": f.role, "lanes": f.lanes, "lane_width": f.lane_width,
                                   "width": f.width, "meaning": f.meaning,
                                   "sha256": hashlib.sha256(text.encode()).hexdigest()}
        readme.append(f"{name} | {f.role} | {f.lanes} x {f.lane_width} | {f.meaning}")
    (out / "vectors.json").write_text(json.dumps(manifest, indent=2) + "\n")
    (out / "README.txt").write_text("\n".join(readme) + "\n")
    return out


def read_field(out_dir, name: str) -> np.ndarray:
    """Read one field back as an (n, lanes) uint64 array, using vectors.json."""
    out = Path(out_dir)
    meta = json.loads((out / "vectors.json").read_text())["files"][f"{name}.hex"]
    return from_hex_lines((out / f"{name}.hex").read_text().splitlines(), meta["lanes"],
                          meta["lane_width"])


def read_scale_format(out_dir):
    """The block scale format of a vector set (:class:`golden.ScaleFormat`), from
    ``vectors.json``."""
    from .scale_format import scale_format

    manifest = json.loads((Path(out_dir) / "vectors.json").read_text())
    return scale_format(manifest.get("scale_format", E8M0.spec))


def read_formats(out_dir) -> dict:
    """The element formats of a vector set, by parameter name (``format``, or ``format_a`` and
    ``format_b``), rebuilt from ``vectors.json``."""
    manifest = json.loads((Path(out_dir) / "vectors.json").read_text())
    return {k: element_format(v) for k, v in manifest.get("element_formats", {}).items()}


def generate(unit: str, out_dir, *, count: int, seed: int, fmt, fmt_b=None, block_size=None,
             input_format="fp32", output_format="fp32", rounding="rne", scale_mode="floor",
             random_bits=8, command: str | None = None, tensor_scale=None,
             recipe="torchao") -> Path:
    """Generate and write one vector set; returns the folder (``command``: the command line
    recorded in the manifest; ``block_size`` None: the format's default, 32 or nvfp4's 16;
    ``tensor_scale`` and ``recipe``: nvfp4 only)."""
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}; expected one of {', '.join(UNITS)}")
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be a positive integer, got {count!r}")
    if block_size is None:
        block_size = default_block_size(fmt)
    check_block_size(block_size)
    rng = np.random.default_rng(seed)
    from .nvfp4 import is_nvfp4

    if is_nvfp4(fmt) or (fmt_b is not None and is_nvfp4(fmt_b)):
        from .nvfp4_vectors import nvfp4_set

        params, fields, formats, sf = nvfp4_set(unit, rng, count, fmt, fmt_b, block_size,
                                                input_format, output_format, tensor_scale,
                                                recipe, (rounding, scale_mode), Field)
        return write_vectors(out_dir, unit, params, fields, seed=seed, command=command,
                             formats=formats, scale_format=sf)
    if tensor_scale is not None or recipe != "torchao":
        raise ValueError("tensor_scale and recipe are nvfp4 options (--format nvfp4)")
    if unit == "quantizer":
        rounding_mode(rounding)
        params, fields, formats = quantizer_vectors(rng, count, fmt, block_size, input_format,
                                                    rounding, scale_mode, random_bits)
    elif unit == "dequantizer":
        params, fields, formats = dequantizer_vectors(rng, count, fmt, block_size,
                                                      output_format)
    else:
        params, fields, formats = dot_vectors(rng, count, fmt, fmt_b or fmt, block_size)
    return write_vectors(out_dir, unit, params, fields, seed=seed, command=command,
                         formats=formats)
