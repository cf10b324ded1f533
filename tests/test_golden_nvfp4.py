"""NVFP4 in golden (docs/numerics.md, NVFP4) against the Fraction oracle and against torchao.

The oracle (tests/oracle, ``nvfp4_*``) restates both recipes with every fp32 operation an
explicit exact-then-RNE step and the UE4M3 cast a search of the e4m3 value table; nothing in it
comes from golden.  Where torch and torchao are installed, golden's torchao recipe is also
compared bit for bit with torchao's own ``nvfp4_quantize`` (skipped with the reason otherwise).
Dequantize, dot and pack are tests/test_golden_nvfp4_dot.py's; the errors and the vectors
command tests/test_golden_nvfp4_api.py's.
"""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import oracle as O
import pytest

import golden
from golden.scale_format import E8M0, UE4M3, scale_format

F32 = np.float32
TIES = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)


def q(x, **kw):
    return golden.quantize(np.asarray(x, np.float32).reshape(1, -1), "nvfp4", **kw)


def check_against_oracle(x, recipe="torchao", tensor_scale=None, block_size=16):
    """golden and the oracle give the same scale bytes, codes and tensor scale."""
    m = golden.quantize(x, "nvfp4", recipe=recipe, tensor_scale=tensor_scale,
                        block_size=block_size)
    s, c, p = O.nvfp4_quantize(x, recipe, tensor_scale, block_size)
    assert np.array_equal(m.scales, s), (np.argwhere(m.scales != s)[:3], m.scales, s)
    assert np.array_equal(m.codes, c), np.argwhere(m.codes != c)[:5]
    assert (m.tensor_scale is None) == (p is None)
    if p is not None:
        assert Fraction(float(m.tensor_scale)) == p
    return m


# -- the scale format -------------------------------------------------------------------------
def test_ue4m3_decodes_every_code_like_the_oracle():
    for c in range(0x80):
        want = O.ue4m3_value(c)
        got = UE4M3.decode(np.array([c]))[0]
        assert (np.isnan(got) if want is O.NAN else Fraction(got) == want), hex(c)
    assert UE4M3.decode(np.array([0x08, 0x7E, 0x01, 0x00])).tolist() == [2**-6, 448, 2**-9, 0]
    with pytest.raises(ValueError, match="bit 7"):
        UE4M3.decode(np.array([0x80]))


def test_e8m0_scale_format_is_the_existing_decode():
    codes = np.arange(256)
    a, b = E8M0.decode(codes), golden.decode_scale(codes)
    assert np.array_equal(a, b, equal_nan=True)
    mx = golden.quantize(np.ones((1, 32), np.float32), "fp8_e4m3")
    assert mx.scale_format is E8M0 and mx.tensor_scale is None
    assert scale_format("ue8m0") is E8M0 and scale_format(UE4M3.spec) is UE4M3
    with pytest.raises(ValueError, match="e8m0 or ue4m3"):
        scale_format("e5m2")


def test_ue4m3_cast_is_rne(rng):
    """Every midpoint of the e4m3 grid (ties to even), its neighbours, and random values."""
    mags = [O.ue4m3_value(c) for c in range(0x7F)]
    mids = [(a + b) / 2 for a, b in zip(mags[:-1], mags[1:], strict=True)]
    pts = np.array([float(m) for m in mags + mids], np.float32)
    pts = np.concatenate([pts, np.nextafter(pts, F32(0)), np.nextafter(pts, F32(448)),
                          rng.uniform(0, 448, 4000).astype(F32),
                          np.exp2(rng.uniform(-12, 8.8, 4000)).astype(F32)])
    pts = pts[(pts >= 0) & (pts <= 448)]
    got = UE4M3.encode(pts)
    want = [O.ue4m3_code(Fraction(float(v))) for v in pts]
    assert got.tolist() == want


# -- directed cases, one per rule ---------------------------------------------------------------
def test_lower_clamp_upper_clamp_and_zero_block():
    m = q([1e-6] + [0.0] * 15 + [3e30] + [1.0] * 15 + [0.0] * 15 + [-0.0])
    assert m.scales.tolist() == [[0x08, 0x7E, 0x08]]  # 2^-6, 448, zero block -> 2^-6
    assert m.codes[0, 16] == 0x7 and m.codes[0, 17] == 0x0  # 3e30/448 saturates; 1/448 -> 0
    assert m.codes[0, 32:47].tolist() == [0] * 15 and m.codes[0, 47] == 0x8  # -0 -> 0x8
    check_against_oracle(np.array([[1e-6] + [0.0] * 15 + [3e30] + [1.0] * 15], np.float32))


def test_e2m1_ties_to_even():
    """amax 6 gives s = 1 (0x38): each tie of the e2m1 grid goes to the even neighbour."""
    m = q([6.0, *TIES, *(-t for t in TIES), 0.0])
    assert m.scales.tolist() == [[0x38]]
    assert m.codes[0, 1:8].tolist() == [0, 2, 2, 4, 4, 6, 6]
    assert m.codes[0, 8:15].tolist() == [0x8, 0xA, 0xA, 0xC, 0xC, 0xE, 0xE]


def test_a_tie_moved_by_the_fp32_product_rounding():
    """s = 0x0F = 15 * 2^-9.  x = 1.25 * s is an exact tie of x / s (RNE: 1.0, code 2), but
    f(x * f(1/s)) = 1.2500001 rounds to 1.5 (code 3).  The fp32 neighbour below 0.75 * s is
    below the tie exactly (0.5, code 1) but lands on it in fp32 and goes to 1.0 (code 2)."""
    s = F32(15 * 2**-9)
    x = F32(1.25) * s
    assert Fraction(float(x)) / Fraction(float(s)) == Fraction(5, 4)
    assert F32(x * F32(F32(1) / s)) > F32(1.25)
    x2 = np.nextafter(F32(0.75) * s, F32(0))
    assert Fraction(float(x2)) / Fraction(float(s)) < Fraction(3, 4)
    assert F32(x2 * F32(F32(1) / s)) == F32(0.75)
    m = q([6 * s, x, x2, -x, -x2] + [0.0] * 11)
    assert m.scales.tolist() == [[0x0F]] and m.codes[0, 1:5].tolist() == [3, 2, 0xB, 0xA]
    check_against_oracle(np.array([[6 * s, x, x2] + [0.0] * 13], F32))


def tie_blocks():
    """For every normal UE4M3 scale s (amax 6 s, so b = s exactly), each e2m1 tie t * s and its
    two fp32 neighbours, signed both ways: every place the fp32 product can move a tie."""
    rows = []
    for code in range(0x08, 0x7F):
        s = F32(UE4M3.decode(np.array([code]))[0])
        vals = [v for t in TIES for v in (F32(t) * s, np.nextafter(F32(t) * s, F32(0)),
                                          np.nextafter(F32(t) * s, F32(np.inf)))]
        vals += [-v for v in vals]
        for i in range(0, len(vals), 15):
            chunk = vals[i:i + 15]
            rows.append([6 * s] + chunk + [0.0] * (15 - len(chunk)))
    return np.array(rows, np.float32).reshape(-1, 48)


def test_every_scale_and_tie_against_the_oracle():
    """golden = oracle on every tie at every scale; and the set does hold ties the product
    moves: codes that differ from the RNE of the exact quotient ``x / s``."""
    x = tie_blocks()
    m = check_against_oracle(x)
    blocks, codes = x.reshape(-1, 16), m.codes.reshape(-1, 16)
    moved = 0
    for r, cs in zip(blocks, codes, strict=True):
        s = Fraction(float(r[0])) / 6
        for v, c in zip(r[1:], cs[1:], strict=True):
            exact = O.round_to_grid(O.E2M1, abs(Fraction(float(v))) / s, "rne")
            moved += exact != abs(O.code_value(O.E2M1, int(c)))
    print(f"{moved} of {blocks.shape[0] * 15} elements: a tie moved by the fp32 product")
    assert moved > 100
    check_against_oracle(x, tensor_scale=0.75)
    check_against_oracle(x, recipe="te", tensor_scale="dynamic")


def test_saturation_at_6():
    """amax/6 = 1.0625 rounds to the e4m3 tie's even side 1.0: amax scales to 6.375 -> 6."""
    m = q([6.375, -6.375, 6.0, 5.9] + [0.0] * 12)
    assert m.scales.tolist() == [[0x38]]
    assert m.codes[0, :4].tolist() == [0x7, 0xF, 0x7, 0x7]


def test_negative_zero_and_negative_underflow():
    m = q([6.0, -0.0, -0.2, -0.25] + [0.0] * 12)
    assert m.codes[0, 1:4].tolist() == [0x8, 0x8, 0x8]
    te = q([6.0, -0.0, -0.2, -0.25] + [0.0] * 12, recipe="te", tensor_scale="dynamic")
    assert te.codes[0, 1:4].tolist() == [0x0, 0x8, 0x8]  # TE's cast: -0 gives 0x0


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("recipe,ts", [("torchao", None), ("torchao", "dynamic"),
                                       ("te", "dynamic")])
def test_nan_inf_block(bad, recipe, ts):
    x = np.ones((1, 48), np.float32)
    x[0, 20] = bad
    m = golden.quantize(x, "nvfp4", recipe=recipe, tensor_scale=ts)
    assert m.scales[0, 1] == 0x7F and not m.codes[0, 16:32].any()
    assert m.scales[0, 0] == m.scales[0, 2] != 0x7F
    clean = golden.quantize(np.ones((1, 48), np.float32), "nvfp4", recipe=recipe,
                            tensor_scale=ts)
    assert np.array_equal(m.codes[0, :16], clean.codes[0, :16])  # P from finite values only
    d = golden.dequantize(m)
    assert np.isnan(d[0, 16:32]).all() and np.isfinite(d[0, :16]).all()
    assert (d[0, 16:32].view(np.uint32) == 0x7FC00000).all()


def test_two_level_dynamic(rng):
    x = (rng.standard_normal((4, 64)) * np.exp2(rng.uniform(-30, 30, (4, 1)))).astype(F32)
    m = check_against_oracle(x, tensor_scale="dynamic")
    assert m.tensor_scale == F32(F32(np.abs(x).max()) / F32(2688))
    check_against_oracle(x, tensor_scale=float(m.tensor_scale) * 2)
    check_against_oracle(x, recipe="te", tensor_scale="dynamic")


def test_te_scale_zero_and_subnormal_scales():
    """TE has no lower clamp: a block far below the tensor's amax gets scale 0 or a subnormal
    UE4M3 scale (torchao's recipe clamps the same block at 2^-6)."""
    amaxes = [2688.0, 6 * 2**-10 * 0.99, 6 * 2**-9, 6 * 3 * 2**-9, 6 * 7 * 2**-9, 6 * 2**-11]
    x = np.zeros((1, 16 * len(amaxes)), np.float32)
    for j, a in enumerate(amaxes):
        x[0, 16 * j:16 * j + 3] = [a, -a / 3, a / 5]
    m = check_against_oracle(x, recipe="te", tensor_scale="dynamic")
    assert m.tensor_scale == 1.0
    assert m.scales[0].tolist() == [0x7E, 0x00, 0x01, 0x03, 0x07, 0x00]
    assert m.codes[0, 16:19].tolist() == [0x7, 0xF, 0x7]  # x * FLT_MAX clamps to 6
    t = check_against_oracle(x, recipe="torchao", tensor_scale="dynamic")
    assert (t.scales[0, 1:] == 0x08).all()
    d = golden.dequantize(m)
    assert (d[0, 16:19] == 0).all() and np.signbit(d[0, 17])


def test_random_blocks_both_recipes(rng):
    for dtype in (np.float32, ml_dtypes.bfloat16, np.float16):
        spread = 6 if dtype == np.float16 else 40
        x = (rng.standard_normal((6, 64)) * np.exp2(rng.uniform(-spread, spread, (6, 4))
                                                   ).repeat(16, axis=1)).astype(dtype)
        for recipe, ts in (("torchao", None), ("torchao", "dynamic"), ("te", "dynamic")):
            check_against_oracle(x, recipe, ts)
    check_against_oracle(x.astype(F32), "torchao", 0.0078125, block_size=32)


def test_axis_and_partial_blocks(rng):
    """Blocks along any axis are the rows of the moved array; a partial block is padded +0."""
    x = rng.standard_normal((40, 3, 2)).astype(F32)
    m = golden.quantize(x, "nvfp4", axis=0, tensor_scale="dynamic")
    rows = np.moveaxis(x, 0, -1).reshape(-1, 40)
    padded = np.concatenate([rows, np.zeros((6, 8), F32)], axis=1)
    want = check_against_oracle(padded, tensor_scale="dynamic")
    assert m.shape == (40, 3, 2) and m.codes.shape == (48, 3, 2) and m.scales.shape == (3, 3, 2)
    assert np.array_equal(np.moveaxis(m.codes, 0, -1).reshape(-1, 48), want.codes)
    assert np.array_equal(np.moveaxis(m.scales, 0, -1).reshape(-1, 3), want.scales)
    d = golden.dequantize(m)
    assert d.shape == x.shape
    assert np.array_equal(np.moveaxis(d, 0, -1).reshape(-1, 40), golden.dequantize(want)[:, :40])


# -- torchao itself -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def torchao_nvfp4():
    pytest.importorskip("torch", reason="torch is not installed (optional: pip install torch "
                        "torchao to compare NVFP4 with torchao)")
    mod = pytest.importorskip("torchao.prototype.mx_formats.nvfp4_tensor",
                              reason="torchao is not installed (optional: pip install torchao "
                              "to compare NVFP4 with torchao)")
    return mod


def test_torch_bf16_tensor_in_and_out(rng):
    torch = pytest.importorskip("torch", reason="torch is not installed (optional: pip install "
                                "torch to run the torch interop tests)")
    x = rng.standard_normal((3, 32)).astype(ml_dtypes.bfloat16)
    t = torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
    a = golden.quantize(t, "nvfp4", tensor_scale="dynamic")
    b = golden.quantize(x, "nvfp4", tensor_scale="dynamic")
    assert np.array_equal(a.codes, b.codes) and np.array_equal(a.scales, b.scales)
    out = golden.dequantize(a, "bf16", like="torch")
    assert isinstance(out, torch.Tensor) and out.dtype == torch.bfloat16
    assert np.array_equal(out.view(torch.int16).numpy(),
                          golden.dequantize(b, "bf16").view(np.int16))


def torchao_bytes(mod, x, ts):
    """torchao's (scale bytes, unpacked codes, P) for a 2-d float32/bf16 array; ``ts`` None
    (single level), "dynamic" (``per_tensor_amax_to_scale`` of the amax) or a float P."""
    import torch

    t = (torch.from_numpy(x) if x.dtype == np.float32
         else torch.from_numpy(x.view(np.int16)).view(torch.bfloat16))
    p = (mod.per_tensor_amax_to_scale(torch.max(torch.abs(t))) if ts == "dynamic"
         else None if ts is None else torch.tensor(ts, dtype=torch.float32))
    s, d = mod.nvfp4_quantize(t, 16, p)
    packed = d.view(torch.uint8).numpy().reshape(-1)
    codes = np.stack([packed & 15, packed >> 4], axis=1).reshape(x.shape)
    return s.view(torch.uint8).numpy().reshape(x.shape[0], -1), codes, p


def compare_with_torchao(mod, x, ts):
    """golden and torchao agree on every scale byte and code; returns the blocks compared."""
    m = golden.quantize(x, "nvfp4", tensor_scale=ts)
    s, c, p = torchao_bytes(mod, x, ts)
    if p is not None:
        assert float(p) == float(m.tensor_scale)
    bad = (s != m.scales) | (c != m.codes).reshape(*s.shape, -1).any(axis=-1)
    print(f"torchao (tensor_scale={ts}): {s.size} blocks compared, {int(bad.sum())} differ")
    assert not bad.any(), np.argwhere(bad)[:5]
    return s.size


def bf16_sweep(anchor, below=False):
    """Every finite bf16 value (``below``: every one with magnitude <= ``anchor``), 15 per
    block, each block led by ``anchor`` (its amax unless a swept value is larger)."""
    a = np.float32(anchor).astype(ml_dtypes.bfloat16)
    allv = np.arange(1 << 16, dtype=np.uint16).view(ml_dtypes.bfloat16)
    f = allv.astype(np.float32)
    allv = allv[np.isfinite(f) & ((not below) | (np.abs(f) <= np.float32(a)))]
    allv = np.concatenate([allv, np.zeros((-allv.size) % 15, allv.dtype)]).reshape(-1, 15)
    x = np.concatenate([np.full((len(allv), 1), a, allv.dtype), allv], axis=1)
    return np.concatenate([x, np.zeros(((-len(x)) % 16, 16), x.dtype)]).reshape(-1, 256)


def directed_blocks():
    rows = [[6.0, *TIES, *(-t for t in TIES), -0.0], [1e-6] + [0.0] * 15, [3e30] + [1.0] * 15,
            [0.0] * 16, [6.375, -6.375, 6.0] + [0.0] * 13]
    s = F32(15 * 2**-9)
    rows.append([6 * s, F32(1.25) * s, np.nextafter(F32(0.75) * s, F32(0))] + [0.0] * 13)
    return np.array(rows, np.float32).reshape(-1, 32)


MODES = [None, "dynamic", 1.5 * 2.0**-10]


@pytest.mark.parametrize("ts", MODES)
def test_torchao_bit_for_bit(torchao_nvfp4, rng, ts):
    x = (rng.standard_normal((64, 256)) * np.exp2(rng.uniform(-60, 60, (64, 1)))).astype(F32)
    n = compare_with_torchao(torchao_nvfp4, x, ts)
    n += compare_with_torchao(torchao_nvfp4, directed_blocks(), ts)
    n += compare_with_torchao(torchao_nvfp4, tie_blocks(), ts)
    for anchor in (1.0, 2.0**-60, 3.0e20):
        n += compare_with_torchao(torchao_nvfp4, bf16_sweep(anchor, ts == "dynamic"), ts)
    assert n > 5000


def test_torchao_nan_inf_as_documented(torchao_nvfp4):
    """docs/numerics.md section 7's account of torchao's non-finite blocks (golden differs)."""
    x = np.ones((1, 32), np.float32)
    x[0, 5] = -2.0
    for bad, scale, codes in ((np.nan, 0x7F, [4] * 16), (np.inf, 0x7E, None)):
        x[0, 3] = bad
        s, c, _ = torchao_bytes(torchao_nvfp4, x, None)
        m = golden.quantize(x, "nvfp4")
        assert s[0, 0] == scale and m.scales[0, 0] == 0x7F and not m.codes[0, :16].any()
        assert codes is None or c[0, :16].tolist() == codes
        assert np.array_equal(s[0, 1:], m.scales[0, 1:])
    s, c, _ = torchao_bytes(torchao_nvfp4, x, "dynamic")  # the Inf makes P Inf
    assert s[0].tolist() == [0xFF, 0x08] and c[0, :16].tolist() == [0xC] * 16


#: 51 block amaxes from 2^-130 to 1.99 * 2^126: steps of 2^16, three significands each.
ANCHORS = [m * 2.0**e for e in range(-130, 128, 16) for m in (1.0, 1.3125, 1.9921875)]


@pytest.mark.slow
@pytest.mark.parametrize("ts", MODES)
def test_torchao_exhaustive_bf16_sweep(torchao_nvfp4, ts):
    """Every finite bf16 value at 51 block amaxes (two level with a dynamic P: every value up
    to the amax, in a tensor of its own, so P follows the amax; amaxes below 2688 * 2^-120,
    where golden's P stops at 2^-120 and torchao's goes on down, are left out)."""
    anchors = [a for a in ANCHORS if ts != "dynamic" or a / 2688 >= 2.0**-120]
    n = sum(compare_with_torchao(torchao_nvfp4, bf16_sweep(a, ts == "dynamic"), ts)
            for a in anchors)
    print(f"exhaustive bf16 sweep, tensor_scale={ts}: {n} blocks, no mismatch")


# -- the recipe-difference table of docs/numerics.md ---------------------------------------------
#: Totals of the table (docs/numerics.md, NVFP4, "Where the two recipes differ").
RECIPE_TABLE_TOTALS = {"blocks": 597104, "clamped": 312139, "scale_clamped": 312139,
                       "scale_other": 0, "neg_zero": 270, "code_same_scale": 176102,
                       "code_scale_differs": 4038341, "elements": 9553664}


@pytest.mark.slow
def test_recipe_difference_table():
    """Every finite bf16 value up to each block amax (45 block amaxes 2^-j / m below each of 6
    tensor amaxes G), quantized two level with a dynamic P by both recipes: the counts of
    docs/numerics.md's table, printed per row (run with -s)."""
    ms = (1.0, 1.1015625, 1.3125, 1.5078125, 1.9921875)
    tot = dict.fromkeys(RECIPE_TABLE_TOTALS, 0)
    for g in (2.0**-20 * 1.3125, 1.0, 3.0, 448.0, 999424.0, 2.0**100 * 1.75):
        for j in range(0, 33, 4):
            x = np.concatenate([bf16_sweep(g * 2.0**-j / m, below=True).reshape(-1, 16)
                                for m in ms])
            x = np.concatenate([np.full((1, 16), g, np.float32).astype(x.dtype), x])
            a = golden.quantize(x, "nvfp4", tensor_scale="dynamic")
            t = golden.quantize(x, "nvfp4", tensor_scale="dynamic", recipe="te")
            assert a.tensor_scale == t.tensor_scale
            xf = x[1:].astype(F32)
            clamped = F32(np.abs(xf).max(1) / F32(6)) / a.tensor_scale < F32(2.0**-6)
            ds = (a.scales != t.scales)[1:, 0]
            dc = (a.codes != t.codes)[1:]
            negz = (xf == 0) & np.signbit(xf)
            row = {"blocks": len(xf), "clamped": clamped.sum(),
                   "scale_clamped": (ds & clamped).sum(), "scale_other": (ds & ~clamped).sum(),
                   "neg_zero": (dc & negz).sum(),
                   "code_same_scale": (dc & ~negz & ~ds[:, None]).sum(),
                   "code_scale_differs": (dc & ds[:, None]).sum(), "elements": xf.size}
            print(f"G={g:g} amax 2^-{j}/m: " + ", ".join(f"{k}={int(v)}" for k, v in row.items()))
            for k, v in row.items():
                tot[k] += int(v)
    print("totals:", tot)
    assert tot == RECIPE_TABLE_TOTALS


def test_fake_quantize_and_exact_values(rng):
    x = rng.standard_normal((2, 48)).astype(F32)
    m = golden.quantize(x, "nvfp4", tensor_scale="dynamic")
    from golden.fake_quant import exact_values

    ev = exact_values(m)
    for r in range(2):
        for i in range(48):
            assert Fraction(ev[r, i]) == O.nvfp4_dequantize_value(
                int(m.codes[r, i]), int(m.scales[r, i // 16]), float(m.tensor_scale))
    single = golden.quantize(x, "nvfp4")
    assert np.array_equal(golden.fake_quantize(x, "nvfp4", block_size=16),
                          golden.dequantize(single))
    with pytest.raises(ValueError, match="E8M0-scaled"):
        m.stats(x)


@pytest.mark.slow
@pytest.mark.parametrize("anchor", [1.0, 3.0e-20, 5.0e25])
def test_te_recipe_bf16_sweep_against_the_oracle(anchor):
    """The TE recipe (no torch implementation to compare with) on every finite bf16 value up
    to a block amax, in a tensor whose amax is that block amax, and in tensors whose amax is
    2^16 (subnormal scales) and 2^20 (scale 0) times larger."""
    x = bf16_sweep(anchor, below=True)
    check_against_oracle(x, recipe="te", tensor_scale="dynamic")
    for factor, scales in ((2.0**16, range(1, 8)), (2.0**20, [0])):
        big = np.full((1, 256), np.float32(anchor * factor), np.float32).astype(x.dtype)
        m = check_against_oracle(np.concatenate([big, x]), recipe="te", tensor_scale="dynamic")
        led = m.scales[1:][x.reshape(len(x), 16, 16)[..., 0] != 0]  # blocks led by the anchor
        assert set(led.tolist()) <= set(scales)
