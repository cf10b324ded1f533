"""NVFP4 in golden: the errors of bad options, parameters and inputs (one clear message each),
and the vectors command's NVFP4 sets against the Fraction oracle (tests/oracle, ``nvfp4_*``).

The numerics themselves are tests/test_golden_nvfp4.py's.
"""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import oracle as O
import pytest

import golden
from golden.scale_format import E8M0, UE4M3

# -- validation -----------------------------------------------------------------------------------
X = np.ones((2, 32), np.float32)


@pytest.mark.parametrize("kw,err,match", [
    ({"tensor_scale": 0.5}, ValueError, "nvfp4 options"),
    ({"recipe": "torchao"}, ValueError, "nvfp4 options"),
])
def test_nvfp4_options_on_another_format(kw, err, match):
    with pytest.raises(err, match=match):
        golden.quantize(X, "fp4_e2m1", **kw)


@pytest.mark.parametrize("kw,err,match", [
    ({"recipe": "cublas"}, ValueError, "unknown recipe"),
    ({"recipe": "te"}, ValueError, "tensor_scale='dynamic'"),
    ({"recipe": "te", "tensor_scale": 0.5}, ValueError, "tensor_scale='dynamic'"),
    ({"tensor_scale": "auto"}, ValueError, "None, a float or 'dynamic'"),
    ({"tensor_scale": [1.0]}, TypeError, "None, a float or 'dynamic'"),
    ({"tensor_scale": True}, TypeError, "None, a float or 'dynamic'"),
    ({"tensor_scale": 0.0}, ValueError, r"\[2\^-120, 2\^119\]"),
    ({"tensor_scale": -1.0}, ValueError, r"\[2\^-120, 2\^119\]"),
    ({"tensor_scale": float("nan")}, ValueError, r"\[2\^-120, 2\^119\]"),
    ({"tensor_scale": 2.0**-121}, ValueError, r"\[2\^-120, 2\^119\]"),
    ({"tensor_scale": 0.1}, ValueError, "exactly representable"),
    ({"block_size": 3}, ValueError, "power of two"),
    ({"block_size": 16.0}, TypeError, "block_size must be an int"),
    ({"rounding": "rtz"}, ValueError, "no scale_mode, rounding"),
    ({"scale_mode": "rceil"}, ValueError, "no scale_mode, rounding"),
    ({"axis": 2}, ValueError, "out of range"),
])
def test_nvfp4_parameter_errors(kw, err, match):
    with pytest.raises(err, match=match):
        golden.quantize(X, "nvfp4", **kw)


def test_nvfp4_input_and_array_errors():
    with pytest.raises(TypeError, match="float32, bfloat16 or float16"):
        golden.quantize(X.astype(np.float64), "nvfp4")
    with pytest.raises(ValueError, match="1-d"):
        golden.quantize(np.float32(1), "nvfp4")
    c, s = np.zeros((1, 16), np.uint8), np.zeros((1, 1), np.uint8)
    with pytest.raises(ValueError, match="fp4_e2m1 codes"):
        golden.MXArray(s, c, "fp8_e4m3", 16, 1, (1, 16), "ue4m3")
    with pytest.raises(ValueError, match="not ue4m3 codes"):
        golden.MXArray(s + 0x80, c, "fp4_e2m1", 16, 1, (1, 16), "ue4m3")
    with pytest.raises(ValueError, match="UE4M3 scale format"):
        golden.MXArray(s, c, "fp4_e2m1", 16, 1, (1, 16), "e8m0", 0.5)
    with pytest.raises(ValueError, match="positive finite fp32"):
        golden.MXArray(s, c, "fp4_e2m1", 16, 1, (1, 16), "ue4m3", -0.5)
    with pytest.raises(ValueError, match="unknown scale format"):
        golden.MXArray(s, c, "fp4_e2m1", 16, 1, (1, 16), "e5m2")
    nv = golden.MXArray(s, c, "fp4_e2m1", 16, 1, (1, 16), "ue4m3")
    mx = golden.MXArray(s, c, "fp4_e2m1", 16, 1, (1, 16))
    with pytest.raises(ValueError, match="two nvfp4 MXArrays"):
        golden.dot(nv, mx)
    with pytest.raises(ValueError, match="e8m0 has no rounding rule"):
        E8M0.encode(np.ones(1, np.float32))
    with pytest.raises(TypeError, match="tensor_scale must be a float or None"):
        golden.MXArray(s, c, "fp4_e2m1", 16, 1, (1, 16), "ue4m3", "0.5")
    with pytest.raises(ValueError, match=r"\[0, 448\]"):
        UE4M3.encode(np.array([500.0], np.float32))
    nv2 = golden.MXArray(np.zeros((1, 2), np.uint8), np.zeros((1, 32), np.uint8), "fp4_e2m1",
                         16, 1, (1, 32), "ue4m3")
    with pytest.raises(ValueError, match="matching MX arrays"):
        golden.dot(nv, nv2)
    with pytest.raises(TypeError, match="acc must be float32"):
        golden.dot(nv, nv, np.zeros(1, bool))
    with pytest.raises(ValueError, match="exactly representable"):
        golden.dot(nv, nv, np.full(1, 0.1))  # float64 0.1 is not an fp32 value
    assert golden.dot(nv, nv, np.full(1, 0.5)).dtype == np.float32  # exact: accepted, as MX
    with pytest.raises(ValueError, match="does not broadcast"):
        golden.dot(nv, nv, np.zeros(3, np.float32))


# -- the vectors command ---------------------------------------------------------------------
def test_vectors_quantizer_set_against_the_oracle(tmp_path):
    from golden import vectors as V

    out = V.generate("quantizer", tmp_path, count=24, seed=3, fmt="nvfp4", block_size=16,
                     input_format="bf16",
                     tensor_scale="dynamic", recipe="te")
    assert V.read_scale_format(out) is UE4M3 and V.read_formats(out)["format"].name == "fp4_e2m1"
    raw = V.read_field(out, "in_data").astype(np.uint16).view(ml_dtypes.bfloat16)
    p = V.read_field(out, "in_tensor_scale")[0, 0].astype(np.uint32).view(np.float32)
    _, te_s = O.nvfp4_tensor_scale([v for r in raw for v in O.decode_input(r)], "te")
    assert Fraction(float(p)) == O.f32_div(Fraction(1), te_s)
    scales = V.read_field(out, "expected_scale")[:, 0]
    codes = V.read_field(out, "expected_codes")
    for r in range(len(raw)):
        s, c = O.nvfp4_block(O.decode_input(raw[r]), "te", Fraction(float(p)), te_s)
        assert (s, c) == (int(scales[r]), codes[r].tolist()), r


def test_vectors_dequantizer_and_dot_sets_against_the_oracle(tmp_path):
    from golden import vectors as V

    out = V.generate("dequantizer", tmp_path / "d", count=40, seed=4, fmt="nvfp4", block_size=16,
                     output_format="fp32", tensor_scale=0.375)
    s, c = V.read_field(out, "in_scale")[:, 0], V.read_field(out, "in_codes")
    got = V.read_field(out, "expected_data")
    for r in range(len(s)):
        for i in range(16):
            v = O.nvfp4_dequantize_value(int(c[r, i]), int(s[r]), 0.375)
            want = 0x7FC00000 if v is O.NAN else O.rne_float_bits(v, 8, 23) | (
                (1 << 31) if v == 0 and c[r, i] & 8 else 0)
            assert int(got[r, i]) == want
    out = V.generate("dot", tmp_path / "t", count=40, seed=5, fmt="nvfp4", block_size=16)
    f = {n: V.read_field(out, n) for n in ("in_scale_a", "in_codes_a", "in_scale_b",
                                           "in_codes_b", "in_c", "expected_result")}
    for r in range(40):
        want = O.nvfp4_dot(f["in_codes_a"][r], f["in_scale_a"][r], None, f["in_codes_b"][r],
                           f["in_scale_b"][r], None, int(f["in_c"][r, 0]))
        got = int(f["expected_result"][r, 0])
        assert got == want, r


@pytest.mark.parametrize("args,match", [
    (["--tensor-scale", "abc"], "number or 'dynamic'"),
    (["--recipe", "te"], "tensor_scale='dynamic'"),
    (["--rounding", "rtz"], "no --rounding"),
    (["--format-b", "fp4_e2m1"], "nvfp4 x nvfp4"),
])
def test_vectors_cli_errors(tmp_path, capsys, args, match):
    from golden.__main__ import main

    unit = "dot" if "--format-b" in args else "quantizer"
    assert main(["vectors", "--unit", unit, "--format", "nvfp4", "--count", "4", "-o",
                 str(tmp_path), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and match in err
    assert main(["vectors", "--unit", "quantizer", "--format", "fp8_e4m3", "--tensor-scale",
                 "0.5", "--count", "4", "-o", str(tmp_path)]) == 2
    assert "nvfp4 options" in capsys.readouterr().err
