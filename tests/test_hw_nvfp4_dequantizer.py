"""The NVFP4 dequantizer (:mod:`hw.nvfp4_dequantizer`) in Amaranth's simulator against
``golden.dequantize`` of nvfp4 MXArrays, every output bit: every e2m1 code at every UE4M3
byte under the directed tensor scales (:data:`tb.nvfp4_stimulus.DIRECTED_P`: f(P * s) exact,
rounded, subnormal, zero, overflowing to Inf) and random blocks, single and two level, each
output format; plus the parameter checks and the CLI.  Random tests print their seed (the
``seed`` fixture: rerun with ``SEED=...``)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from hw.nvfp4_dequantizer import NVFP4Dequantizer
from hw.sidecar import validate
from tb import nvfp4_stimulus as stim


def _run(dut, scales, codes, p_bits):
    """Blocks through ``dut`` in the Amaranth simulator, one per clock, ``o.ready`` high;
    returns the output lanes' bits ``(n, k)``."""
    from amaranth.sim import Simulator

    n, k = codes.shape
    w = dut.output_format.bits
    out = []

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        sent = 0
        for _ in range(n + dut.latency + 4):
            if len(out) == n:
                break
            ctx.set(dut.i.valid, sent < n)
            if sent < n:
                ctx.set(dut.i.payload.scale, int(scales[sent]))
                ctx.set(dut.i.payload.codes, [int(c) for c in codes[sent]])
                if p_bits is not None:
                    ctx.set(dut.i.payload.tensor_scale, int(p_bits[sent]))
            taken = sent < n and ctx.get(dut.i.ready)
            if ctx.get(dut.o.valid):
                data = ctx.get(dut.o.payload.as_value())
                out.append([(data >> (w * j)) & ((1 << w) - 1) for j in range(k)])
            await ctx.tick()
            if taken:
                sent += 1

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert len(out) == n, f"{len(out)} of {n} blocks came out"
    return np.array(out, np.uint64)


def _check(dut, scales, codes, p_bits):
    k = dut.block_size
    want = stim.expected(scales, codes, p_bits, dut.output_format.name, k)
    got = _run(dut, scales, codes, p_bits)
    bad = np.argwhere(got != want)
    if bad.size:
        r, j = bad[0]
        p = "none" if p_bits is None else f"{int(p_bits[r]):#010x}"
        pytest.fail(f"{len(bad)} lanes differ; first: block {r} lane {j}: scale "
                    f"{int(scales[r]):#04x} code {int(codes[r, j]):#x} P {p}: expected "
                    f"{int(want[r, j]):#x}, got {int(got[r, j]):#x}")


@pytest.mark.parametrize("levels,output", [
    (1, "fp32"), (1, "bf16"), (1, "fp16"),
    *[pytest.param(2, out, marks=pytest.mark.slow) for out in ("fp32", "bf16", "fp16")]])
def test_every_code_every_scale(levels, output):
    """Every code x every scale byte (NaN 0x7F included); two level under each directed P
    (``slow``, 25-50 s each: ``make test`` runs the same set on the Verilog, two level to
    fp32, in tests/test_sim_nvfp4.py)."""
    dut = NVFP4Dequantizer(16, output, levels, stages=3)
    _check(dut, *stim.exhaustive_inputs(16, None if levels == 1 else stim.DIRECTED_P))


@pytest.mark.parametrize("config", [(16, "fp32", 2, None), (16, "bf16", 2, 1),
                                    (16, "fp16", 1, None), (32, "fp16", 2, 7),
                                    (4, "bf16", 2, 12), (2, "fp32", 1, 2)],
                         ids=lambda c: f"k{c[0]}-{c[1]}-l{c[2]}-s{c[3]}")
def test_random_blocks(config, seed):
    """Random blocks (random P per block, subnormal P included) at other depths and sizes."""
    k, output, levels, stages = config
    rng = np.random.default_rng(seed)
    print(f"seed {seed}")
    dut = NVFP4Dequantizer(k, output, levels, stages=stages)
    _check(dut, *stim.random_inputs(rng, 300, k, levels))


def test_directed_values():
    """Hand-worked values, independent of golden: f(P * s) rounded in fp32 and then the
    product with e2m1 rounded once in bf16; the NaN scale; P * s overflowing to Inf."""
    dut = NVFP4Dequantizer(2, "bf16", 2, stages=2)
    p = int(np.float32(1 + 2 ** -23).view(np.uint32))  # P = 1 + 2^-23
    big = int(np.float32(2.0 ** 127).view(np.uint32))
    scales = np.array([0x38, 0x39, 0x7F, 0x7E, 0x01], np.uint8)
    codes = np.array([[0x2, 0xB], [0x7, 0x8], [0x0, 0x1], [0x0, 0x9], [0x1, 0x2]], np.uint8)
    p_bits = np.array([p, p, p, big, int(np.float32(2.0 ** -140).view(np.uint32))], np.uint32)
    got = _run(dut, scales, codes, p_bits)
    # 0x38 = 1.0: f(P) = 1 + 2^-23 -> bf16 1.0 (0x3f80); -1.5 * that -> -1.5 (0xbfc0)
    # 0x39 = 1.125: f(1.125 * (1 + 2^-23)) = 1.125 + 2^-23 (fp32 RNE: 1.125 + 1.125 * 2^-23
    #   lies between 1.125 + 2^-23 and 1.125 + 2^-22, nearer the first); * 6 -> bf16 6.75
    #   (0x40d8); code 0x8 (-0) -> -0 (0x8000)
    # 0x7F: NaN 0x7fc0 in both lanes
    # 0x7E = 448 at P = 2^127: Inf; code 0 -> 0 * Inf = NaN; code 0x9 (-0.5) -> -Inf
    # 0x01 = 2^-9 at P = 2^-140: 2^-149 exactly (fp32's smallest subnormal); bf16's smallest
    #   subnormal is 2^-133, so 0.5 * and 1 * it round to +0
    want = [[0x3F80, 0xBFC0], [0x40D8, 0x8000], [0x7FC0, 0x7FC0], [0x7FC0, 0xFF80],
            [0x0000, 0x0000]]
    assert got.tolist() == want


def test_outside_goldens_domain():
    """P values golden's MXArray refuses (NaN, Inf, negative, zero) give IEEE arithmetic, and
    a scale byte with bit 7 set reads as NaN, as docs/nvfp4.md states (hand-worked)."""
    dut = NVFP4Dequantizer(2, "fp32", 2, stages=1)
    scales = np.array([0x38, 0x38, 0x00, 0x38, 0x38, 0xB8], np.uint8)
    codes = np.array([[0x2, 0x0], [0x2, 0x0], [0x2, 0xA], [0x2, 0x8], [0xA, 0x3], [0x2, 0x0]],
                     np.uint8)
    p_bits = np.array([0x7FC00000, 0x7F800000, 0x7F800000, 0xBF800000, 0x00000000,
                       0x3F800000], np.uint32)
    nan, inf = 0x7FC00000, 0x7F800000
    want = [[nan, nan],  # NaN P
            [inf, nan],  # Inf P: 1 * Inf, 0 * Inf
            [nan, nan],  # Inf P * scale 0 = NaN
            [0xBF800000, 0x00000000],  # P = -1: -1.0 and -0 * -1 = +0
            [0x80000000, 0x00000000],  # P = +0: -1 * 0 = -0, 1.5 * 0 = +0
            [nan, nan]]  # scale byte 0xB8: bit 7 set
    assert _run(dut, scales, codes, p_bits).tolist() == want
    one = NVFP4Dequantizer(2, "bf16", 1, stages=2)
    assert _run(one, np.array([0xB8, 0x38], np.uint8), np.array([[0x2, 0x0], [0x2, 0xF]],
                                                                  np.uint8), None).tolist() \
        == [[0x7FC0, 0x7FC0], [0x3F80, 0xC0C0]]


def test_parameters_checked():
    with pytest.raises(ValueError, match="levels must be 1 or 2"):
        NVFP4Dequantizer(16, "fp32", 3)
    with pytest.raises(ValueError, match="output format"):
        NVFP4Dequantizer(16, "fp8", 2)
    with pytest.raises(ValueError, match="block_size"):
        NVFP4Dequantizer(12, "fp32", 2)
    with pytest.raises(ValueError, match="stages"):
        NVFP4Dequantizer(16, "fp32", 1, stages=10)
    assert NVFP4Dequantizer(16, "fp32", 1).max_stages == 9
    assert NVFP4Dequantizer(16, "fp32", 2).max_stages == 20
    # the default registers every boundary (the make synth row)
    assert NVFP4Dequantizer(16, "fp32", 2).stages == 20
    assert NVFP4Dequantizer(16, "fp32", 1).stages == 9


def test_cli_generates_and_rejects(tmp_path):
    """``python -m hw generate nvfp4-dequantizer``: Verilog and a sidecar with the UE4M3 scale
    and the tensor_scale field; a bad option is one line and exit 2."""
    import json

    out = tmp_path / "u.v"
    r = subprocess.run([sys.executable, "-m", "hw", "generate", "nvfp4-dequantizer",
                        "--output-format", "bf16", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["parameters"]["scale_format"] == "ue4m3"
    assert meta["parameters"]["nan_bits"] == "0x7fc0"
    fields = {f["name"]: f for p in meta["ports"] if p["role"] == "i.payload"
              for f in p["fields"]}
    assert fields["tensor_scale"]["width"] == 32 and fields["scale"]["width"] == 8
    validate(meta)  # schema 1, unit nvfp4-dequantizer
    r = subprocess.run([sys.executable, "-m", "hw", "generate", "nvfp4-dequantizer",
                        "--levels", "3", "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
