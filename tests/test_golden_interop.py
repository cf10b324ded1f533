"""golden with the arrays ML users hold: torch tensors (bf16 included) and JAX arrays in,
results in the caller's type, and fake_quantize bit for bit dequantize(quantize(...)).

The torch and JAX tests skip, with the reason, where those libraries are not installed: they
are never project dependencies.  The bf16 references are built with ml_dtypes from float32
values, independently of golden's conversion."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import oracle
import pytest

import golden
from golden.interop import from_numpy, to_numpy

BF16 = ml_dtypes.bfloat16
FORMATS = list(golden.FORMATS)


def _data(rng, shape, dtype):
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-6, 6, shape))
    x.flat[:: 7] = 0.0
    return x.astype(np.float32).astype(dtype)


def _bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", [np.float32, BF16, np.float16])
@pytest.mark.parametrize("axis", [0, 1])
def test_fake_quantize_is_dequantize_of_quantize(rng, fmt, dtype, axis):
    x = _data(rng, (19, 37), dtype)  # both axes pad with block_size 8
    x[3, 5] = np.nan
    got = golden.fake_quantize(x, fmt, block_size=8, axis=axis)
    mx = golden.quantize(x, fmt, block_size=8, axis=axis)
    want = golden.dequantize(mx, dtype)
    assert got.dtype == np.dtype(dtype) and got.shape == x.shape
    assert np.array_equal(_bits(got), _bits(want))
    assert np.isnan(got.astype(np.float32)).any()


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "int8", "fp4_e2m1"])
def test_fake_quantize_float64_is_the_exact_value(rng, fmt):
    """float64 in: the exact MX values (oracle decode x 2^(s-127), as Fractions), here with
    blocks beyond fp32's range, which dequantize's fp32 would turn into Inf."""
    x = rng.standard_normal((4, 16)) * np.exp2(np.float64([[0], [120], [135], [-140]]))
    got = golden.fake_quantize(x, fmt, block_size=16)
    assert got.dtype == np.float64
    scales, codes = oracle.quantize(x, fmt, block_size=16)
    f = oracle.FORMATS[fmt]
    for (i, j), c in np.ndenumerate(codes):
        neg, mag = oracle.decode_code(f, int(c))
        want = (-mag if neg else mag) * oracle.pow2(int(scales[i, j // 16]) - 127)
        assert Fraction(float(got[i, j])) == want, (i, j)


def test_like_names_the_result_type():
    x = np.float32([1.0, 2.0, 3.0, 4.0])
    assert isinstance(golden.fake_quantize(x, "fp8", block_size=4, like="numpy"), np.ndarray)
    with pytest.raises(ValueError, match="like must be one of numpy, torch, jax or an array"):
        golden.fake_quantize(x, "fp8", block_size=4, like="tensorflow")


class _DLPackOnly:
    """An array known only through the DLPack protocol."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_producer_is_read(rng):
    x = _data(rng, (2, 32), np.float32)
    a, b = golden.quantize(_DLPackOnly(x), "fp8_e5m2"), golden.quantize(x, "fp8_e5m2")
    assert np.array_equal(a.codes, b.codes) and np.array_equal(a.scales, b.scales)


# -- torch --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch", reason="torch is not installed (optional: "
                               "pip install torch to run the torch interop tests)")


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp4_e2m1", "int8"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_torch_tensors_in_and_out(rng, torch, fmt, dtype):
    ref32 = _data(rng, (3, 40), np.float32)
    np_dtype = {"bfloat16": BF16, "float16": np.float16, "float32": np.float32}[dtype]
    ref = ref32.astype(np_dtype)  # ml_dtypes' / numpy's rounding of the same values
    t = torch.from_numpy(ref32).to(getattr(torch, dtype)).requires_grad_(True)
    mx, want = golden.quantize(t, fmt), golden.quantize(ref, fmt)
    assert np.array_equal(mx.codes, want.codes) and np.array_equal(mx.scales, want.scales)
    out = golden.fake_quantize(t, fmt)
    assert isinstance(out, torch.Tensor) and out.dtype == t.dtype and out.shape == t.shape
    got_bits = out.view(torch.int16 if out.element_size() == 2 else torch.int32).numpy()
    assert np.array_equal(got_bits.view(_bits(ref).dtype),
                          _bits(golden.dequantize(want, np_dtype)))
    assert isinstance(golden.fake_quantize(t, fmt, like="numpy"), np.ndarray)
    d = golden.dequantize(mx, "fp32", like=t)
    assert isinstance(d, torch.Tensor) and d.dtype == torch.float32
    assert np.array_equal(d.numpy(), golden.dequantize(want))


def test_readme_torch_example_runs(torch, capsys):
    """The README's "Coming from torchao / torchmx / Quark / pychop" example, as written."""
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = text.split("## Coming from torchao")[1]
    code = section.split("```python\n")[1].split("```")[0]
    exec(compile(code, "README.md", "exec"), {})
    assert "elements in" in capsys.readouterr().out


def test_stats_method_is_quantization_error(torch):
    w = torch.randn(8, 64)
    mx = golden.quantize(w, "fp6_e2m3")
    assert mx.stats(w).as_dict() == golden.quantization_error(w, mx).as_dict()


def test_torch_round_trip_keeps_bf16_bits(torch):
    bits = np.arange(0, 1 << 16, 97, dtype=np.uint16)
    t = from_numpy(bits.view(BF16), like="torch")
    assert t.dtype == torch.bfloat16
    assert np.array_equal(to_numpy(t).view(np.uint16), bits)
    assert np.array_equal(t.view(torch.int16).numpy().view(np.uint16), bits)


# -- JAX ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def jnp():
    pytest.importorskip("jax", reason="jax is not installed (optional: pip install jax jaxlib "
                        "to run the JAX interop tests)")
    import jax.numpy

    return jax.numpy


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_jax_arrays_in_and_out(rng, jnp, dtype):
    ref = _data(rng, (2, 48), BF16 if dtype == "bfloat16" else np.float32)
    x = jnp.asarray(ref.astype(np.float32)).astype(getattr(jnp, dtype))
    out = golden.fake_quantize(x, "fp6_e3m2")
    assert type(out).__module__.split(".")[0] in ("jax", "jaxlib")
    assert out.dtype == x.dtype and out.shape == x.shape
    want = golden.dequantize(golden.quantize(ref, "fp6_e3m2"), ref.dtype)
    assert np.array_equal(_bits(np.asarray(out)), _bits(want))
