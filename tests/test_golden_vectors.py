"""``python -m golden vectors``: files readable as $readmemh, expected values right by the
Fraction oracle, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import ml_dtypes
import numpy as np
import oracle
import pytest

from golden import vectors as V


def test_hex_lines_lane_order(rng):
    vals = rng.integers(0, 1 << 6, (50, 5))
    lines = V.to_hex_lines(vals, 6)
    for row, line in zip(vals, lines, strict=True):
        expect = sum(int(v) << (6 * i) for i, v in enumerate(row))
        assert line == f"{expect:0{-(-30 // 4)}x}"
    assert np.array_equal(V.from_hex_lines(lines, 5, 6), vals)


@pytest.mark.parametrize("rounding", ["rne", "stochastic"])
def test_quantizer_vectors_match_oracle(tmp_path, seed, rounding):
    out = V.generate("quantizer", tmp_path, count=40, seed=seed, fmt="fp6_e2m3", block_size=8,
                     input_format="bf16", rounding=rounding, random_bits=5)
    meta = json.loads((tmp_path / "vectors.json").read_text())
    assert meta["count"] == 40 and meta["parameters"]["input"] == "bf16"
    raw = V.read_field(out, "in_data").astype(np.uint16).view(ml_dtypes.bfloat16)
    rand = V.read_field(out, "in_random") if rounding == "stochastic" else None
    s, c = oracle.quantize(raw, "fp6_e2m3", block_size=8, rounding=rounding, random=rand,
                           random_bits=5)
    assert np.array_equal(V.read_field(out, "expected_scale")[:, 0], s.reshape(-1))
    assert np.array_equal(V.read_field(out, "expected_codes"), c)


def test_dot_vectors_match_oracle(tmp_path, seed):
    out = V.generate("dot", tmp_path, count=60, seed=seed, fmt="fp8_e5m2", fmt_b="int8",
                     block_size=4)
    sa, ca = V.read_field(out, "in_scale_a")[:, 0], V.read_field(out, "in_codes_a")
    sb, cb = V.read_field(out, "in_scale_b")[:, 0], V.read_field(out, "in_codes_b")
    c, res = V.read_field(out, "in_c")[:, 0], V.read_field(out, "expected_result")[:, 0]
    for i in range(len(res)):
        want = oracle.dot_block("fp8_e5m2", [int(x) for x in ca[i]], int(sa[i]), "int8",
                                [int(x) for x in cb[i]], int(sb[i]), int(c[i]))
        assert int(res[i]) == want, f"block {i}"


def test_dequantizer_vectors_cover_every_code(tmp_path, seed):
    out = V.generate("dequantizer", tmp_path, count=600, seed=seed, fmt="fp4_e2m1",
                     block_size=4, output_format="fp16")
    codes = V.read_field(out, "in_codes")
    assert len(np.unique(codes)) == 16
    data = V.read_field(out, "expected_data").astype(np.uint16).view(np.float16)
    scales = V.read_field(out, "in_scale")[:, 0]
    want = np.array([[float(oracle.code_value(oracle.FORMATS["fp4_e2m1"], int(x))) for x in row]
                     for row in codes]) * np.exp2(scales.astype(np.float64) - 127)[:, None]
    want[scales == 255] = np.nan
    with np.errstate(over="ignore"):  # values beyond fp16 become Inf, as specified
        want16 = want.astype(np.float16).astype(np.float64)
    assert np.array_equal(data.astype(np.float64), want16, equal_nan=True)


def test_cli_errors_are_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "golden", "vectors", "--unit", "dot", "--format",
                        "fp9", "-o", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "unknown element format" in r.stderr


def test_manifest_records_provenance(tmp_path):
    """vectors.json names the generator, its version and command line, and the SHA-256 of
    every hex file, hashed here from the bytes on disk."""
    import hashlib

    r = subprocess.run([sys.executable, "-m", "golden", "vectors", "--unit", "dequantizer",
                        "--format", "fp6_e2m3", "--block-size", "4", "--count", "5",
                        "--seed", "3", "-o", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    manifest = json.loads((tmp_path / "vectors.json").read_text())
    gen = manifest["generator"]
    assert gen["command"].startswith("python -m golden vectors --unit dequantizer")
    assert gen["version"] and gen["numpy"] == np.__version__
    hexes = sorted(p.name for p in tmp_path.glob("*.hex"))
    assert sorted(manifest["files"]) == hexes and hexes
    for name in hexes:
        want = hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()
        assert manifest["files"][name]["sha256"] == want, name


def test_custom_format_round_trips_through_the_manifest(tmp_path, seed):
    """A format no name reaches (e3m4, fn, bias 5) travels whole in vectors.json, and the
    expected codes are the oracle's for the format defined by those parameters."""
    r = subprocess.run([sys.executable, "-m", "golden", "vectors", "--unit", "quantizer",
                        "--format", "e3m4fn_bias5", "--block-size", "8", "--count", "30",
                        "--seed", str(seed), "-o", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    meta = json.loads((tmp_path / "vectors.json").read_text())
    assert meta["element_formats"] == {"format": {"name": "e3m4fn_bias5", "ebits": 3,
                                                  "mbits": 4, "convention": "fn", "bias": 5}}
    fmt = V.read_formats(tmp_path)["format"]
    assert (fmt.ebits, fmt.mbits, fmt.convention, fmt.bias) == (3, 4, "fn", 5)
    raw = V.read_field(tmp_path, "in_data").astype(np.uint32).view(np.float32)
    s, c = oracle.quantize(raw, oracle.spec(3, 4, "fn", 5), block_size=8)
    assert np.array_equal(V.read_field(tmp_path, "expected_scale")[:, 0], s.reshape(-1))
    assert np.array_equal(V.read_field(tmp_path, "expected_codes"), c)


def test_wide_mixed_dot_vectors_match_oracle(tmp_path, seed):
    out = V.generate("dot", tmp_path, count=40, seed=seed, fmt="e6m1", fmt_b="int4",
                     block_size=4)
    assert {k: f.spec for k, f in V.read_formats(out).items()} == {
        "format_a": {"name": "e6m1", "ebits": 6, "mbits": 1, "convention": "finite", "bias": 31},
        "format_b": {"name": "int4", "int": 4}}
    sa, ca = V.read_field(out, "in_scale_a")[:, 0], V.read_field(out, "in_codes_a")
    sb, cb = V.read_field(out, "in_scale_b")[:, 0], V.read_field(out, "in_codes_b")
    c, res = V.read_field(out, "in_c")[:, 0], V.read_field(out, "expected_result")[:, 0]
    for i in range(len(res)):
        want = oracle.dot_block(oracle.spec(6, 1), [int(x) for x in ca[i]], int(sa[i]),
                                oracle.int_spec(4), [int(x) for x in cb[i]], int(sb[i]),
                                int(c[i]))
        assert int(res[i]) == want, f"block {i}"


def test_generate_defaults_to_the_formats_block_size(tmp_path):
    for fmt, k in (("nvfp4", 16), ("fp8_e4m3", 32)):
        out = V.generate("quantizer", tmp_path / fmt, count=4, seed=1, fmt=fmt)
        manifest = json.loads((out / "vectors.json").read_text())
        assert manifest["parameters"]["block_size"] == k, manifest["parameters"]
        assert V.read_field(out, "expected_codes").shape[1] == k
