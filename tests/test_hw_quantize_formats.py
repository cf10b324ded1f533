"""The quantizer and dequantizer for element formats beyond the six of OCP, simulated in
Amaranth's simulator against golden, every output bit for bit.

The formats cover each rule the datapaths derive from a format's parameters: the finite ExMy
family (narrow e1m1 and e2m0, wide e6m1 and e7m0, M = 0, where a tie between two normals
rounds up and one between zero and the smallest normal to zero), the ``ieee`` convention
beyond fp8_e5m2 (float8_e4m3, float8_e3m4), the ``fn`` convention beyond fp8_e4m3 (e3m2fn),
biases other than 2^(E-1) - 1, and two's complement intN other than int8 (int4, int2); the
six OCP formats run as a control.  The stimulus is the
project's (:mod:`golden.stimulus`): the directed blocks (ties at every grid boundary,
saturation, subnormals, NaN and Inf in every lane, zero blocks, one huge value among tiny
ones) and random blocks over the whole exponent range.  The quantizer is built with runtime
rounding and scale mode, so one build meets every rounding (rne, rna, rtz, stochastic) and
both scale modes (floor, rceil), block by block.  Each test prints its seed (the ``seed``
fixture: rerun with ``SEED=...``).
"""

from __future__ import annotations

import numpy as np
import pytest
from amaranth_drive import simulate_quantizer, simulate_stream

import golden
from golden import stimulus
from golden.formats import ROUNDING_IDS, SCALE_MODE_IDS
from hw.dequantizer import MXDequantizer
from hw.quantizer import MXQuantizer

#: Formats no OCP configuration has, each for a rule (see the module docstring).
CUSTOM = ("e3m3", "e2m2", "e4m2", "e5m1", "float8_e3m4", "float8_e4m3", "int4", "int2",
          "e1m1", "e2m0", "e3m0", "e6m1", "e7m0", "e3m2fn", "e4m3ieee_bias3", "e2m1_bias0")
#: One format of each rule, for the fast tests: M = 0 (its tie rule), the narrowest intN,
#: the ``ieee`` convention beyond fp8_e5m2, the widest exponent with a mantissa bit.
FAST = ("e2m0", "int2", "float8_e3m4", "e6m1")
#: The control: the six OCP formats.
OCP = tuple(golden.FORMATS)
ROUNDINGS = tuple(ROUNDING_IDS)
SCALE_MODES = tuple(SCALE_MODE_IDS)
RANDOM_BITS = 8


# -- quantizer ------------------------------------------------------------------------------

def _golden_quantize(raw, ff, fmt, k, rounding, scale_mode, random):
    """golden's (scale, codes) of each block, each in its own modes."""
    n = raw.shape[0]
    scales, codes = np.empty(n, np.int64), np.empty((n, k), np.int64)
    values = raw.view(ff.dtype)
    for r, r_name in enumerate(ROUNDINGS):
        for s, s_name in enumerate(SCALE_MODES):
            sel = (rounding == r) & (scale_mode == s)
            if not sel.any():
                continue
            stochastic = r_name == "stochastic"
            mx = golden.quantize(values[sel], fmt, block_size=k, scale_mode=s_name,
                                 rounding=r_name, random=random[sel] if stochastic else None,
                                 random_bits=RANDOM_BITS)
            scales[sel] = mx.scales[:, 0]
            codes[sel] = mx.codes
    return scales, codes


def check_quantizer(name: str, input_format: str, k: int, seed: int, random_count: int,
                    stages: int = 2, every_mode: bool = True):
    """Simulate a runtime-mode quantizer against golden: the directed blocks in rne/floor
    (their ties and saturation are rne's and floor's) and, where ``every_mode``, again in a
    random mode each; ``random_count`` random blocks in a random mode each."""
    rng = np.random.default_rng(seed)
    fmt = golden.element_format(name)
    q = MXQuantizer(fmt, k, input_format, rounding="runtime", scale_mode="runtime",
                    random_bits=RANDOM_BITS, stages=stages)
    ff = q.input_format
    directed = stimulus.quantizer_directed_blocks(k, ff, fmt, rng)
    raw = np.concatenate([directed, *[directed] * every_mode,
                          stimulus.quantizer_random_blocks(rng, random_count, k, ff)])
    n = raw.shape[0]
    rounding = rng.integers(0, len(ROUNDINGS), n)
    scale_mode = rng.integers(0, len(SCALE_MODES), n)
    rounding[:len(directed)], scale_mode[:len(directed)] = 0, 0
    random = rng.integers(0, 1 << RANDOM_BITS, (n, k))
    got = simulate_quantizer(q, raw, rounding, scale_mode, random)
    scales, codes = _golden_quantize(raw, ff, fmt, k, rounding, scale_mode, random)
    bad = [b for b in range(n) if got[b] != (scales[b], list(codes[b]))]
    assert not bad, "\n".join(
        f"{name} {input_format} {ROUNDINGS[rounding[b]]}/{SCALE_MODES[scale_mode[b]]} "
        f"in {[hex(v) for v in raw[b]]} rnd {[int(r) for r in random[b]]}: got {got[b]}, "
        f"want {(int(scales[b]), [int(c) for c in codes[b]])}"
        for b in bad[:6]) + f"\n{len(bad)} of {n}"


def test_quantizer_m0_ties_hand_worked():
    """e2m0 (values 0, 1, 2, 4; bias 1), rne, floor: the block (4, 3, 1.5, 0.5) has scale
    2^0 (code 127: floor(log2 4) - emax 2 = 0); 3 ties 2 and 4 and rounds up to 4 (code 3:
    every normal significand is 1, odd, so the tie goes to the larger binade), 1.5 rounds
    up to 2 (code 2), 0.5 ties 0 and 1 and rounds to the even zero (code 0).  An even code
    rule would give 3 -> 2 (code 2)."""
    q = MXQuantizer("e2m0", 4, "bf16", stages=1)
    raw = stimulus.from_float([4.0, 3.0, 1.5, 0.5], q.input_format)
    got = simulate_quantizer(q, [raw])
    mx = golden.quantize(raw.view(q.input_format.dtype)[None], "e2m0", block_size=4)
    assert got == [(127, [3, 3, 2, 0])]
    assert (int(mx.scales[0, 0]), [int(c) for c in mx.codes[0]]) == got[0]


@pytest.mark.parametrize("name", FAST)
def test_quantizer_rules(name, seed):
    """bf16 input, k = 4, two stages: the directed blocks (rne/floor) and 30 random ones,
    for one format of each rule."""
    check_quantizer(name, "bf16", 4, seed, 30, every_mode=False)


@pytest.mark.slow
@pytest.mark.parametrize("input_format,k,stages", [("bf16", 4, 2), ("fp32", 8, 3)])
@pytest.mark.parametrize("name", CUSTOM + OCP)
def test_quantizer(name, input_format, k, stages, seed):
    """Every format, bf16 and fp32 input: the directed blocks in rne/floor and in random
    modes, and 300 random blocks."""
    check_quantizer(name, input_format, k, seed, 300, stages)


# -- dequantizer ----------------------------------------------------------------------------

def check_dequantizer(name: str, output_format: str, k: int, seed: int, count: int):
    """Simulate the dequantizer on every code at the special scales and on ``count`` random
    blocks, against golden."""
    rng = np.random.default_rng(seed)
    fmt = golden.element_format(name)
    d = MXDequantizer(fmt, k, output_format, stages=2)
    every = stimulus.dequantizer_exhaustive_inputs(fmt, k)
    special = np.isin(every[0], stimulus.SPECIAL_SCALES) | (abs(every[0] - 127) < 4)
    scales, codes = stimulus.dequantizer_random_inputs(rng, count, fmt, k)
    scales = np.concatenate([every[0][special], scales])
    codes = np.concatenate([every[1][special], codes])
    p = d.i.payload
    rows = [[(p.scale, scales[b]), *zip(p.codes, codes[b], strict=True)]
            for b in range(len(scales))]
    got = simulate_stream(d, rows, lambda ctx: [ctx.get(v) for v in d.o.payload.data])
    mx = golden.MXArray(scales.astype(np.uint8)[:, None], codes.astype(np.uint8), fmt, k, 1,
                        (len(scales), k))
    out = d.output_format
    with np.errstate(over="ignore"):
        want = golden.dequantize(mx, out.dtype).view(out.uint).astype(np.int64)
    bad = [b for b in range(len(scales)) if got[b] != list(want[b])]
    assert not bad, "\n".join(
        f"{name} -> {output_format} scale {scales[b]} codes {list(codes[b])}: "
        f"got {[hex(v) for v in got[b]]}, want {[hex(v) for v in want[b]]}"
        for b in bad[:6]) + f"\n{len(bad)} of {len(scales)}"


@pytest.mark.parametrize("name", FAST)
def test_dequantizer_rules(name, seed):
    """fp32 output: every code at 2^0 and near it and at the special scales, and 60 random
    blocks, for one format of each rule."""
    check_dequantizer(name, "fp32", 4, seed, 60)


@pytest.mark.slow
@pytest.mark.parametrize("output_format", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("name", CUSTOM + OCP)
def test_dequantizer(name, output_format, seed):
    """Every format, fp32, bf16 and fp16 outputs (their rounding, subnormals and overflow):
    the special scales and 300 random blocks."""
    check_dequantizer(name, output_format, 8, seed, 300)
