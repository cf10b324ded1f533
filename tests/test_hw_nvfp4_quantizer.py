"""The NVFP4 quantizer (:mod:`hw.nvfp4_quantizer`) in Amaranth's simulator against
``golden.quantize(x, "nvfp4", tensor_scale=P, recipe="torchao")``, every output bit: the
directed groups (:data:`tb.nvfp4_quantizer_stimulus.DIRECTED`) and random blocks, single and
two level; hand-worked vectors independent of golden (docs/numerics.md's tie moved by the
fp32 product, the clamps, -0, NaN/Inf and zero blocks); the parameter checks and the CLI.
Random tests print their seed (the ``seed`` fixture: rerun with ``SEED=...``)."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

import golden
from hw.nvfp4.products import chunk_sum, chunks
from hw.nvfp4_quantizer import NVFP4Quantizer
from hw.sidecar import validate
from tb import nvfp4_quantizer_stimulus as stim
from tests.amaranth_drive import simulate_stream


def _run(dut, x_bits, p_bits):
    """Blocks through ``dut``; returns (scale bytes ``(n,)``, codes ``(n, k)``)."""
    rcp = None if p_bits is None else stim.reciprocal_bits(p_bits)
    rows = []
    for b, x in enumerate(x_bits):
        row = [(dut.i.payload.data[j], int(v)) for j, v in enumerate(x)]
        if p_bits is not None:
            row += [(dut.i.payload.tensor_scale, int(p_bits[b])),
                    (dut.i.payload.tensor_scale_rcp, int(rcp[b]))]
        rows.append(row)
    k = dut.block_size
    out = simulate_stream(dut, rows, lambda ctx: (
        ctx.get(dut.o.payload.scale), [ctx.get(dut.o.payload.codes[j]) for j in range(k)]))
    return np.array([s for s, _ in out]), np.array([c for _, c in out])


def _check(dut, x_bits, p_bits):
    k, inp = dut.block_size, dut.input_format.name
    want_s, want_c = stim.expected(x_bits, p_bits, inp, k)
    got_s, got_c = _run(dut, x_bits, p_bits)
    bad = np.flatnonzero((got_s != want_s) | (got_c != want_c).any(axis=1))
    if bad.size:
        r = bad[0]
        p = "none" if p_bits is None else f"{int(p_bits[r]):#010x}"
        pytest.fail(f"{bad.size} blocks differ; first: block {r} inputs "
                    f"{[hex(int(v)) for v in x_bits[r]]} P {p}: expected scale "
                    f"{int(want_s[r]):#04x} codes {want_c[r].tolist()}, got {int(got_s[r]):#04x} "
                    f"{got_c[r].tolist()}")


@pytest.mark.parametrize("inp", ["fp32", "bf16", "fp16"])
def test_directed_single_level(inp):
    """The directed groups, single level, k = 4."""
    dut = NVFP4Quantizer(4, inp, 1, stages=5)
    _check(dut, *stim.directed_inputs(4, inp, 1))


@pytest.mark.slow
@pytest.mark.parametrize("inp", ["fp32", "bf16"])
def test_directed_two_level(inp):
    """The directed groups under each directed P, also scaled by P (``slow``: minutes;
    tests/test_sim_nvfp4.py runs the same set on the Verilog)."""
    dut = NVFP4Quantizer(16, inp, 2, stages=6)
    _check(dut, *stim.directed_inputs(16, inp, 2))


@pytest.mark.parametrize("config", [(2, "fp32", 2, 3), (4, "bf16", 1, None),
                                    (2, "fp16", 2, 1), (4, "fp16", 1, 2)],
                         ids=lambda c: f"k{c[0]}-{c[1]}-l{c[2]}-s{c[3]}")
def test_random_blocks(config, seed):
    """Random blocks (two level: a P per block in golden's range) at other depths and
    sizes."""
    k, inp, levels, stages = config
    rng = np.random.default_rng(seed)
    print(f"seed {seed}")
    dut = NVFP4Quantizer(k, inp, levels, stages=stages)
    _check(dut, *stim.random_inputs(rng, 60, k, inp, levels))


def _f32_bits(values):
    return np.array(values, np.float32).view(np.uint32).astype(np.uint64)


def test_hand_worked():
    """Hand-worked vectors, independent of golden (fp32 in, single level, k = 4).

    * docs/numerics.md's tie moved by the fp32 product: amax 6 * 15 * 2^-9 gives s = 0x0F;
      1.25 * s gives f(x * r) = 1.2500001 (code 0x3, not the tie's 0x2); the fp32 value
      below 0.75 * s gives f(x * r) = 0.75 exactly (code 0x2, not 0x1); -0 gives 0x8; the
      amax lane f(6 * s * r) = 6.0000005 saturates to 6 (0x7);
    * amax 10752: b = 1792, clamped at 448 (0x7E); 10752 / 448 = 24 saturates (0x7);
      -1000 / 448 = -2.23 (-2, 0xC); 100 / 448 = 0.223 (0x0);
    * a block with a NaN: 0x7F and codes 0; a zero block: 0x08 (2^-6) and -0 -> 0x8.
    """
    s = 15 * 2.0 ** -9
    below = float(np.nextafter(np.float32(0.75 * s), np.float32(0)))
    x = np.stack([_f32_bits([6 * s, 1.25 * s, below, -0.0]),
                  _f32_bits([10752.0, -1000.0, 100.0, 1.0]),
                  _f32_bits([1.0, float("nan"), 2.0, -3.0]),
                  _f32_bits([0.0, -0.0, 0.0, 0.0])])
    scales, codes = _run(NVFP4Quantizer(4, "fp32", 1, stages=3), x, None)
    assert scales.tolist() == [0x0F, 0x7E, 0x7F, 0x08]
    assert codes.tolist() == [[0x7, 0x3, 0x2, 0x8], [0x7, 0xC, 0x0, 0x0], [0, 0, 0, 0],
                              [0x0, 0x8, 0x0, 0x0]]


def test_hand_worked_two_level():
    """Two level, hand-worked (fp32, k = 2), P = 2^-120 (f(1/P) = 2^120): a block of
    subnormals whose scale is clamped at 2^-6, so r = 2^126 brings them to e2m1 range; a block
    whose b / P is exactly 0.5."""
    p = np.array([np.float32(2.0 ** -120).view(np.uint32)] * 2, np.uint32)
    x = np.stack([_f32_bits([2.0 ** -130, -(2.0 ** -127)]),
                  _f32_bits([3.0 * 2.0 ** -120, -(2.0 ** -120)])])
    scales, codes = _run(NVFP4Quantizer(2, "fp32", 2, stages=2), x, p)
    # block 0: amax 2^-127; b / P = 2^-7 / 6 -> clamped, s = 2^-6, r = 2^126:
    #   2^-130 * 2^126 = 2^-4 -> 0x0; -2^-127 * 2^126 = -0.5 -> 0x9
    # block 1: amax 3 * 2^-120; b / P = 0.5 exactly -> s = 0.5 (0x30), r = 2^121:
    #   3 * 2^-120 * 2^121 = 6 -> 0x7; -2^-120 * 2^121 = -2 -> 0xC
    assert scales.tolist() == [0x08, 0x30]
    assert codes.tolist() == [[0x0, 0x9], [0x7, 0xC]]


def test_two_blocks_a_beat():
    """``blocks = 2``: the two hand-worked blocks above as one beat under P = 2^-120, and
    swapped: each block's scale byte and codes in its own place of the output."""
    p = int(np.float32(2.0 ** -120).view(np.uint32))
    rcp = int(stim.reciprocal_bits(np.array([p], np.uint32))[0])
    blocks = [_f32_bits([2.0 ** -130, -(2.0 ** -127)]), _f32_bits([3.0 * 2.0 ** -120,
                                                                     -(2.0 ** -120)])]
    dut = NVFP4Quantizer(2, "fp32", 2, blocks=2, stages=3)
    beats = [np.concatenate(blocks), np.concatenate(blocks[::-1])]
    rows = [[(dut.i.payload.data[j], int(v)) for j, v in enumerate(x)]
            + [(dut.i.payload.tensor_scale, p), (dut.i.payload.tensor_scale_rcp, rcp)]
            for x in beats]
    out = simulate_stream(dut, rows, lambda ctx: (
        [ctx.get(dut.o.payload.scale[j]) for j in range(2)],
        [ctx.get(dut.o.payload.codes[j]) for j in range(4)]))
    assert out == [([0x08, 0x30], [0x0, 0x9, 0x7, 0xC]), ([0x30, 0x08], [0x7, 0xC, 0x0, 0x9])]


def test_parameters_checked():
    with pytest.raises(ValueError, match="levels must be 1 or 2"):
        NVFP4Quantizer(16, "fp32", 3)
    with pytest.raises(ValueError, match="blocks must be 1 or 2"):
        NVFP4Quantizer(16, "fp32", 2, blocks=4)
    with pytest.raises(ValueError, match="input format"):
        NVFP4Quantizer(16, "fp8", 2)
    with pytest.raises(ValueError, match="block_size"):
        NVFP4Quantizer(12, "fp32", 2)
    with pytest.raises(ValueError, match="stages"):
        NVFP4Quantizer(16, "fp32", 1, stages=0)
    q = NVFP4Quantizer(16, "bf16", 1)
    assert 1 <= q.stages <= q.max_stages == len(q.sections)


def test_cli_generates_and_rejects(tmp_path):
    """``python -m hw generate nvfp4-quantizer``: Verilog and a sidecar with the UE4M3 scale
    and the P fields; a bad option is one line and exit 2."""
    out = tmp_path / "u.v"
    r = subprocess.run([sys.executable, "-m", "hw", "generate", "nvfp4-quantizer",
                        "--block-size", "2", "--stages", "4", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["parameters"]["scale_format"] == "ue4m3"
    assert meta["parameters"]["tensor_scale_rcp"] == "tensor_scale_rcp"
    fields = {f["name"]: f for p in meta["ports"] if p["role"] == "i.payload"
              for f in p["fields"]}
    assert fields["tensor_scale"]["width"] == 32 and fields["tensor_scale_rcp"]["width"] == 32
    validate(meta)
    r = subprocess.run([sys.executable, "-m", "hw", "generate", "nvfp4-quantizer",
                        "--input", "fp8", "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_golden_agrees_on_the_hand_worked_vectors():
    """golden gives the hand-worked vectors' bytes too (so the directed expectations and
    these agree)."""
    s = 15 * 2.0 ** -9
    mx = golden.quantize(np.array([6 * s, 1.25 * s], np.float32), "nvfp4", block_size=2)
    assert mx.scales.tolist() == [0x0F] and mx.codes.tolist() == [0x7, 0x3]


def test_multipliers_checked_and_instantiated(tmp_path):
    """``multipliers``: checked up front; ``"mult18x18d"`` instantiates four MULT18X18D a lane
    for fp32 input (24 x 24 bits as 17-bit chunks), two for bf16 (24 x 8), none for
    ``"lut"``; the sidecar names the option and the primitive; a bad value on the CLI is one
    line and exit 2.  (Bit-exact on Verilator with the block's model: tests/test_sim_nvfp4.py.)
    """
    with pytest.raises(ValueError, match="unknown multipliers 'dsp'"):
        NVFP4Quantizer(16, "fp32", 2, multipliers="dsp")
    with pytest.raises(TypeError, match="multipliers must be a str"):
        NVFP4Quantizer(16, "fp32", 2, multipliers=None)
    q = NVFP4Quantizer(16, "fp32", 2)
    assert q.primitives == () and q.parameters["multipliers"] == "lut"
    assert "mul_0" in q.sections and "operands" not in q.sections
    for inp, per_lane in (("fp32", 4), ("bf16", 2)):
        out = tmp_path / f"{inp}.v"
        r = subprocess.run([sys.executable, "-m", "hw", "generate", "nvfp4-quantizer",
                            "--input", inp, "--block-size", "4", "--multipliers", "mult18x18d",
                            "-o", str(out)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert out.read_text().count("MULT18X18D #(") == 4 * per_lane
        meta = json.loads(out.with_suffix(".json").read_text())
        assert meta["primitives"] == ["MULT18X18D"]
        assert meta["parameters"]["multipliers"] == "mult18x18d"
        validate(meta)
    q = NVFP4Quantizer(16, "fp32", 2, multipliers="mult18x18d")
    names = list(q.sections)
    assert names[names.index("rnorm") + 1:names.index("plz")] == [
        "operands", "multiply", "drain", "psum"]
    r = subprocess.run([sys.executable, "-m", "hw", "generate", "nvfp4-quantizer",
                        "--multipliers", "dsp", "-o", str(tmp_path / "x.v")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [r.stderr.strip()]


@pytest.mark.parametrize("bits", [(24, 24), (24, 8), (24, 11)], ids=lambda b: f"{b[0]}x{b[1]}")
def test_chunk_sum_is_the_product(bits, seed):
    """:func:`hw.nvfp4.products.chunk_sum` in Amaranth's simulator: the chunk products of two
    random factors (and the extremes) summed back, against Python's exact ``a * b``."""
    r_bits, x_bits = bits
    rng = np.random.default_rng(seed)
    print(f"seed {seed}")
    rc, xc = chunks(r_bits), chunks(x_bits)
    pairs = [(a, b) for a in range(len(rc)) for b in range(len(xc))]
    m = Module()
    parts = SimpleNamespace(**{
        f"p{a}{b}": Signal((rc[a][1] - rc[a][0]) + (xc[b][1] - xc[b][0]), name=f"p{a}{b}")
        for a, b in pairs})
    prod = chunk_sum(m, parts, pairs, r_bits + x_bits, "prod")
    cases = [(0, 0), ((1 << r_bits) - 1, (1 << x_bits) - 1), (1 << (r_bits - 1), 1)]
    cases += [(int(rng.integers(1 << r_bits)), int(rng.integers(1 << x_bits)))
              for _ in range(200)]

    def field(v, lo_hi):
        lo, hi = lo_hi
        return (v >> lo) & ((1 << (hi - lo)) - 1)

    async def bench(ctx):
        for a_val, x_val in cases:
            for a, b in pairs:
                ctx.set(getattr(parts, f"p{a}{b}"), field(a_val, rc[a]) * field(x_val, xc[b]))
            assert ctx.get(prod) == a_val * x_val, (hex(a_val), hex(x_val))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()


def test_reciprocal_rounding_fields_match_the_code(seed):
    """:func:`hw.nvfp4.reciprocal.rounding_decision` and
    :func:`~hw.nvfp4.reciprocal.rounded_fields` (r's RNE rounding as an increment and a select
    of its exponent, the code never formed) against the code it replaces, in Python
    integers: ``code = (binade << 23) + n + up``, its fields with the hidden bit, and the
    exponent of the last bit, ``max(code >> 23, 1) - 150``; every combination of corner
    binades, significands (carries into the hidden bit and out of it), guard and sticky bits,
    and random significands."""
    from hw.nvfp4.reciprocal import lsb_candidates, rounded_fields, rounding_decision

    rng = np.random.default_rng(seed)
    print(f"seed {seed}")
    m = Module()
    n, frac, sticky, binade = Signal(24), Signal(1), Signal(1), Signal(8)
    grid = SimpleNamespace(n=n, frac=frac, sticky=sticky, binade=binade)
    out = rounded_fields(rounding_decision(m, grid, lsb_candidates(binade), "r"))
    ns = [0, 1, 2, (1 << 23) - 1, (1 << 23) - 2, 1 << 23, (1 << 24) - 1, (1 << 24) - 2,
          (1 << 23) + 1, *(int(v) for v in rng.integers(0, 1 << 24, 40))]
    cases = [(v, f, s, b) for v in ns for f in (0, 1) for s in (0, 1)
             for b in (0, 1, 2, 126, 253, 254)]

    async def bench(ctx):
        for v, f, s, b in cases:
            for sig, val in zip((n, frac, sticky, binade), (v, f, s, b), strict=True):
                ctx.set(sig, val)
            code = (b << 23) + v + (f & (s | v & 1))
            e = code >> 23
            want = ((code & ((1 << 23) - 1)) | (e != 0) << 23, max(e, 1) - 150)
            assert (ctx.get(out["sig"]), ctx.get(out["lsb"])) == want, (hex(v), f, s, b)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
