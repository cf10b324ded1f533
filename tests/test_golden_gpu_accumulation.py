"""golden's GPU accumulation modes (docs/numerics.md, "GPU accumulation modes").

``accumulation="tcgen05.mxf8f6f4"`` / ``"tcgen05.mxf4"`` on ``golden.dot_blocks`` and
``golden.dot`` are checked against the independent Fraction model in ``tests/oracle``
(``tcgen05_chain``) on directed cases for every rule, each pinned to hand-derived fp32 bits,
and on random blocks; and against Microsoft's MMA-Sim (PyPI ``mmasim``, which needs torch)
on random and adversarial vectors where both are installed, skipped with the reason otherwise.
"""

from __future__ import annotations

import itertools

import numpy as np
import oracle
import pytest

import golden
from golden.gpu_accumulation import ACCUMULATIONS, GPU_KINDS, accumulate_rows, check_accumulation

F8F6F4 = ("fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1")
BITS = {"fp8_e4m3": 8, "fp8_e5m2": 8, "fp6_e3m2": 6, "fp6_e2m3": 6, "fp4_e2m1": 4}
KINDS = ("tcgen05.mxf8f6f4", "tcgen05.mxf4")


def _blk(*runs, k=32):
    """A block of k codes: ``(count, code)`` runs, then zeros."""
    out = [c for n, c in runs for _ in range(n)]
    return out + [0] * (k - len(out))


def _f32(x) -> int:
    return int(np.float32(x).view(np.uint32))


def _run(kind, fa, a_blocks, a_scales, fb, b_blocks, b_scales, c_bits):
    """(golden GPU mode, golden exact) fp32 bits of one chain, through golden.dot_blocks."""
    args = (np.array(a_blocks, np.uint8)[None], np.array(a_scales, np.uint8)[None],
            np.array(b_blocks, np.uint8)[None], np.array(b_scales, np.uint8)[None], fa, fb)
    acc = np.array([c_bits], np.uint32).view(np.float32)
    gpu = golden.dot_blocks(*args, acc=acc, accumulation=kind)
    exact = golden.dot_blocks(*args, acc=acc)
    return int(gpu.view(np.uint32)[0]), int(exact.view(np.uint32)[0])


_E4, _F4 = "fp8_e4m3", "fp4_e2m1"
_M8, _M4, _NV = "tcgen05.mxf8f6f4", "tcgen05.mxf4", "tcgen05.mxf4nvf4"
#: (kind, fa, fb, block size, scale format) of every configuration checked.
CONFIGS = ([(_M8, a, b, 32, "e8m0") for a, b in itertools.product(F8F6F4, F8F6F4)]
           + [(_M4, _F4, _F4, 32, "e8m0"), (_NV, _F4, _F4, 16, "ue4m3"),
              (_NV, _F4, _F4, 16, "e8m0"), (_NV, _F4, _F4, 32, "e8m0")])


#: name -> (kind, fa, a blocks, a scales, fb, b blocks, b scales, c bits, GPU bits, exact bits).
DIRECTED = {
    # 256*256 = 2^16 sets e_max = 16; 31 products 2^-9 * 0.5 = 2^-10 are each half the last
    # kept place 2^(16-25) and truncate to zero.
    "term_truncated_away": (_M8, _E4, [_blk((1, 0x78), (31, 0x01))], [127], _E4,
                            [_blk((1, 0x78), (31, 0x30))], [127], 0, 0x47800000, 0x47800004),
    # c = 1; 31 products -1.5*2^-6 * 2^-9 * 2^-10 = -1.5*2^-25 each truncate toward zero to -2^-25:
    # 1 - 31*2^-25 rounds toward zero to 1 - 16*2^-24, above the exact 1 - 46.5*2^-25.
    "negative_truncated_up": (_M8, _E4, [_blk((31, 0x0C))], [117], _E4, [_blk((31, 0x81))],
                              [127], _f32(1.0), 0x3F7FFFF0, 0x3F7FFFE9),
    # c = 0 puts e_max at the floor -133 (last kept place 2^-158): 28 products 143*2^-161 lose
    # 1/8 unit each, the sum 492*2^-158 < 2^-149 gives +0; the exact sum is 516.5*2^-158.
    "floor_133": (_M8, _E4, [_blk((28, 0x3D), (1, 0x38))], [50], _E4,
                  [_blk((28, 0x33), (1, 0x38))], [50], 0, 0x00000000, 0x00000001),
    # +-448*448*2^20 cancel but set e_max = 36: c = 1 lies below 2^11 and is truncated away.
    "cancel_wipes_c": (_M8, _E4, [_blk((2, 0x7E))], [147], _E4, [_blk((1, 0x7E), (1, 0xFE))],
                       [127], _f32(1.0), 0x00000000, 0x3F800000),
    # 2^-9 * 2^-9: a subnormal keeps the exponent 1 - bias, so this product aligns at -12 (not
    # at -18) and c = 2^-15 + 2^-38 loses its last bit below 2^(-12-25).
    "subnormal_not_normalized": (_M8, _E4, [_blk((1, 0x01))], [127], _E4, [_blk((1, 0x01))],
                                 [127], 0x38000001, 0x38100000, 0x38100001),
    # FLT_MAX + 2^103 = 2^128 - 2^103: RNE overflows (the tie), RZ keeps FLT_MAX.
    "rz_below_2_128": (_M8, _E4, [_blk((1, 0x38))], [230], _E4, [_blk((1, 0x38))], [127],
                       0x7F7FFFFF, 0x7F7FFFFF, 0x7F800000),
    "inf_at_2_128": (_M8, _E4, [_blk((1, 0x38))], [231], _E4, [_blk((1, 0x38))], [127],
                     0x7F7FFFFF, 0x7F800000, 0x7F800000),
    # -2^-150 rounds to zero: +0 (the exact mode's RNE keeps the sign: -0).
    "negative_tiny_is_plus_zero": (_M8, _E4, [_blk((1, 0xB8))], [0], _E4, [_blk((1, 0x38))],
                                   [104], 0, 0x00000000, 0x80000000),
    "cancellation_is_plus_zero": (_M8, _E4, [_blk((2, 0x38))], [127], _E4,
                                  [_blk((1, 0x38), (1, 0xB8))], [127], 0x80000000, 0, 0),
    "minus_zero_c_is_plus_zero": (_M8, _E4, [_blk()], [127], _E4, [_blk()], [127], 0x80000000,
                                  0, 0),
    "nan_scale": (_M8, _E4, [_blk((1, 0x38))], [255], _E4, [_blk((1, 0x38))], [127], 0,
                  0x7FFFFFFF, 0x7FC00000),
    "nan_element_times_zero": (_M8, _E4, [_blk((1, 0x7F))], [127], _E4, [_blk()], [127], 0,
                               0x7FFFFFFF, 0x7FC00000),
    "inf_element": (_M8, "fp8_e5m2", [_blk((1, 0x7C))], [127], _E4, [_blk((1, 0xB8))], [127],
                    _f32(1.0), 0xFF800000, 0xFF800000),
    "inf_times_zero": (_M8, "fp8_e5m2", [_blk((1, 0x7C))], [127], _E4, [_blk((1, 0x80))],
                       [127], 0, 0x7FFFFFFF, 0x7FC00000),
    "opposite_infs": (_M8, "fp8_e5m2", [_blk((1, 0x7C), (1, 0xFC))], [127], _E4,
                      [_blk((2, 0x38))], [127], 0, 0x7FFFFFFF, 0x7FC00000),
    "c_minus_inf": (_M8, _E4, [_blk((1, 0x38))], [127], _E4, [_blk((1, 0x38))], [127],
                    0xFF800000, 0xFF800000, 0xFF800000),
    "c_nan": (_M8, _E4, [_blk((1, 0x38))], [127], _E4, [_blk((1, 0x38))], [127], 0x7FC00001,
              0x7FFFFFFF, 0x7FC00000),
    # mxf4: the group 6*6 - 6*6 cancels to zero but keeps its scale exponent 60, so the other
    # block's 1*1 (exponent 0) lies below 2^25 and is truncated away.
    "f4_cancelled_group_keeps_exponent": (_M4, _F4, [_blk((2, 0x7)), _blk((1, 0x2))],
                                          [187, 127], _F4,
                                          [_blk((1, 0x7), (1, 0xF)), _blk((1, 0x2))],
                                          [127, 127], 0, 0x00000000, 0x3F800000),
    # ... while an all-zero group sits at the floor -139 and takes nothing away.
    "f4_zero_group_at_floor": (_M4, _F4, [_blk((2, 0x0)), _blk((1, 0x2))], [187, 127], _F4,
                               [_blk((1, 0x7), (1, 0xF)), _blk((1, 0x2))], [127, 127], 0,
                               0x3F800000, 0x3F800000),
    # c = 1 and a group -0.25 * 2^-40 = -2^-42 below the last kept place 2^-35: truncated to 0,
    # the result 1.0 lies above the exact value (whose RZ would be 0x3F7FFFFF).
    "f4_negative_truncated_up": (_M4, _F4, [_blk((1, 0x1)), _blk()], [87, 127], _F4,
                                 [_blk((1, 0x9)), _blk()], [127, 127], _f32(1.0), 0x3F800000,
                                 0x3F800000),
    "f4_group_summed_exactly": (_M4, _F4, [_blk((1, 0x7), (1, 0x1)), _blk()], [127, 127], _F4,
                                [_blk((1, 0x7), (1, 0x1)), _blk()], [127, 127], 0, 0x42110000,
                                0x42110000),
    # c = 0 puts e_max at the floor -139 (last kept place 2^-174): the group -0.5 * 0.5 * 2^-180
    # truncates to zero and 2^-149 stays (with e_max = -149 the sum would be below 2^-149: +0).
    "f4_floor_139": (_M4, _F4, [_blk((1, 0x2)), _blk((1, 0x9))], [0, 0], _F4,
                     [_blk((1, 0x2)), _blk((1, 0x1))], [105, 74], 0, 0x00000001, 0x00000001),
    "f4_rz_below_2_128": (_M4, _F4, [_blk((1, 0x2)), _blk()], [230, 127], _F4,
                          [_blk((1, 0x2)), _blk()], [127, 127], 0x7F7FFFFF, 0x7F7FFFFF,
                          0x7F800000),
    "f4_nan_scale_in_second_block": (_M4, _F4, [_blk((1, 0x2)), _blk()], [127, 255], _F4,
                                     [_blk((1, 0x2)), _blk()], [127, 127], 0, 0x7FFFFFFF,
                                     0x7FC00000),
    # one block (a step of its own): -0.25 * 2^-148 = -2^-150 rounds to +0 (exact: -0)
    "f4_negative_tiny_is_plus_zero": (_M4, _F4, [_blk((1, 0x9))], [0], _F4, [_blk((1, 0x1))],
                                      [106], 0, 0x00000000, 0x80000000),
    "f4_c_minus_inf": (_M4, _F4, [_blk((1, 0x7)), _blk()], [254, 254], _F4,
                       [_blk((1, 0x7)), _blk()], [254, 127], 0xFF800000, 0xFF800000,
                       0xFF800000),
    "f4_c_nan": (_M4, _F4, [_blk(), _blk()], [127, 127], _F4, [_blk(), _blk()], [127, 127],
                 0xFFC00000, 0x7FFFFFFF, 0x7FC00000),
}


@pytest.mark.parametrize("name", sorted(DIRECTED))
def test_directed_rules(name):
    kind, fa, ab, asc, fb, bb, bsc, c, want_gpu, want_exact = DIRECTED[name]
    model = oracle.tcgen05_chain(kind, fa, ab, asc, fb, bb, bsc, c)
    gpu, exact = _run(kind, fa, ab, asc, fb, bb, bsc, c)
    assert (model, gpu, exact) == (want_gpu, want_gpu, want_exact), \
        f"oracle {model:#010x}, golden {gpu:#010x}, exact {exact:#010x}"


def _random_case(rng, kind, fa, fb, rows, n, k=32, scale_format="e8m0"):
    """Random codes (all of each format's codes), scales around 2^0 with the extremes mixed in,
    and accumulators from zero to large."""
    ac = rng.integers(0, 1 << BITS[fa], (rows, n, k)).astype(np.uint8)
    bc = rng.integers(0, 1 << BITS[fb], (rows, n, k)).astype(np.uint8)
    sc = rng.integers(107, 148, (2, rows, n))
    if scale_format == "ue4m3":  # both signs, 2^-4 .. 2^4 mostly
        sc = rng.integers(0x18, 0x58, (2, rows, n)) | (rng.integers(0, 2, (2, rows, n)) << 7)
    sc = np.where(rng.random((2, rows, n)) < 0.05, rng.integers(0, 256, (2, rows, n)), sc)
    mag = rng.standard_normal(rows) * 2.0 ** rng.integers(-30, 30, rows)
    c = np.where(rng.random(rows) < 0.2, 0.0, mag).astype(np.float32).view(np.uint32)
    return ac, sc[0].astype(np.uint8), bc, sc[1].astype(np.uint8), c.astype(np.int64)


@pytest.mark.parametrize("kind,fa,fb,k,scale_format", CONFIGS)
def test_random_chains_match_oracle(rng, kind, fa, fb, k, scale_format):
    # 3 steps of mxf8f6f4; two full steps and a shorter last one of mxf4 / mxf4nvf4
    rows, n = (12, 3) if kind == _M8 else (30, 2 * 64 // k + 1)
    ac, sa, bc, sb, c = _random_case(rng, kind, fa, fb, rows, n, k, scale_format)
    got = accumulate_rows(kind, ac, sa, bc, sb, c, fa, fb, scale_format)
    for r in range(rows):
        want = oracle.tcgen05_chain(kind, fa, list(ac[r]), sa[r], fb, list(bc[r]), sb[r],
                                    int(c[r]), scale_format)
        assert got[r] == want, f"row {r}: golden {got[r]:#010x}, oracle {want:#010x}"


#: UE4M3-scaled mxf4nvf4 steps (blocks of 16, four per step):
#: name -> (a blocks, a scales, b blocks, b scales, c bits, GPU bits).
DIRECTED_UE4M3 = {
    # 6 * 6 * 1.875 * 1.875 = 126.5625: scale significands multiply the group sum exactly
    "significands": ([_blk((1, 0x7), k=16)], [0x3F], [_blk((1, 0x7), k=16)], [0x3F], 0,
                     0x42FD2000),
    "sign_bit_ignored": ([_blk((1, 0x2), k=16)], [0xB8], [_blk((1, 0x2), k=16)], [0x38], 0,
                         0x3F800000),
    # a zero scale puts its group at -139, not at -6 + 8: c = 2^-20 + 2^-43 keeps its last bit
    "zero_scale_at_floor": ([_blk((1, 0x7), k=16)] + [_blk(k=16)] * 3, [0x00, 0x38, 0x38, 0x38],
                            [_blk((1, 0x7), k=16)] + [_blk(k=16)] * 3, [0x7E, 0x38, 0x38, 0x38],
                            0x35800001, 0x35800001),
    # subnormal scale 2^-9 (exponent -6, significand 1/8) on both sides: 36 * 2^-18
    "subnormal_scales": ([_blk((1, 0x7), k=16)], [0x01], [_blk((1, 0x7), k=16)], [0x01], 0,
                         0x39100000),
    "nan_scale_0x7f": ([_blk(k=16)] * 4, [0x38, 0x38, 0x38, 0xFF], [_blk(k=16)] * 4,
                       [0x38] * 4, 0, 0x7FFFFFFF),
}


@pytest.mark.parametrize("name", sorted(DIRECTED_UE4M3))
def test_directed_ue4m3(name):
    ab, asc, bb, bsc, c, want = DIRECTED_UE4M3[name]
    model = oracle.tcgen05_chain(_NV, _F4, ab, asc, _F4, bb, bsc, c, "ue4m3")
    arrays = [np.array(x, np.uint8)[None] for x in (ab, asc, bb, bsc)]
    got = int(accumulate_rows(_NV, *arrays, np.array([c]), _F4, _F4, "ue4m3")[0])
    assert (model, got) == (want, want), f"oracle {model:#010x}, golden {got:#010x}"


def test_dot_on_mx_arrays(rng):
    x = rng.standard_normal((3, 128)).astype(np.float32)
    y = rng.standard_normal((3, 128)).astype(np.float32)
    a, b = golden.quantize(x, "fp8_e4m3"), golden.quantize(y, "fp4_e2m1")
    got = golden.dot(a, b, accumulation=_M8).view(np.uint32)
    ac, asc = a.blocks()
    bc, bsc = b.blocks()
    for r in range(3):
        want = oracle.tcgen05_chain(_M8, "fp8_e4m3", list(ac[r]), asc[r], "fp4_e2m1",
                                    list(bc[r]), bsc[r])
        assert got[r] == want
    assert np.array_equal(golden.dot(a, b, accumulation="exact"), golden.dot(a, b))


def test_accumulation_names_are_checked():
    codes, scales = np.zeros((1, 32), np.uint8), np.full(1, 127, np.uint8)
    assert ACCUMULATIONS == ("exact",) + GPU_KINDS
    for bad in ("tcgen05", "TCGEN05.MXF4", "", None, 1):
        with pytest.raises(ValueError, match="accumulation must be one of 'exact', "
                           "'tcgen05.mxf8f6f4', 'tcgen05.mxf4', 'tcgen05.mxf4nvf4', got"):
            golden.dot_blocks(codes, scales, codes, scales, "fp4_e2m1", accumulation=bad)
    # mxf4nvf4 on dot_blocks' E8M0 scales (blocks of 32, and of 16 below) is a valid kind.
    ones = np.full((1, 32), 0x2, np.uint8)  # 1.0 each: the sum is 32
    got = golden.dot_blocks(ones, scales, ones, scales, "fp4_e2m1",
                            accumulation="tcgen05.mxf4nvf4")
    assert float(got) == 32.0


@pytest.mark.parametrize("kind,fa,fb,k,msg", [
    (_M8, "int8", "fp8_e4m3", 32, "takes the OCP fp8/fp6/fp4 element formats, got fmt_a int8"),
    (_M8, "fp8_e4m3", "e3m3", 32, "got fmt_b e3m3"),
    (_M8, "fp8_e4m3", "fp8_e4m3", 16, "takes blocks of 32 elements with e8m0 scales, got block "
     "size 16"),
    (_M4, "fp8_e4m3", "fp4_e2m1", 32, "takes fp4_e2m1 only, got fmt_a fp8_e4m3"),
    (_M4, "fp4_e2m1", "fp4_e2m1", 64, "takes blocks of 32 elements with e8m0 scales, got block "
     "size 64"),
])
def test_formats_and_block_sizes_are_checked(kind, fa, fb, k, msg):
    codes, scales = np.zeros((1, k), np.uint8), np.full(1, 127, np.uint8)
    with pytest.raises(ValueError, match=msg):
        golden.dot_blocks(codes, scales, codes, scales, fa, fb, accumulation=kind)
    with pytest.raises(ValueError, match=msg):
        check_accumulation(kind, fa, fb, k)


@pytest.mark.parametrize("kind,k,scale_format,msg", [
    (_NV, 32, "ue4m3", "takes blocks of 16 elements with ue4m3 scales, got block size 32"),
    (_NV, 64, "e8m0", "takes blocks of 16 or 32 elements with e8m0 scales, got block size 64"),
    (_NV, 16, "e4m3", "takes scale formats e8m0, ue4m3, got 'e4m3'"),
    (_M4, 32, "ue4m3", "takes scale formats e8m0, got 'ue4m3'"),
])
def test_scale_formats_are_checked(kind, k, scale_format, msg):
    codes, scales, acc = np.zeros((1, 1, k), np.uint8), np.full((1, 1), 56, np.uint8), np.zeros(1)
    with pytest.raises(ValueError, match=msg):
        accumulate_rows(kind, codes, scales, codes, scales, acc, _F4, _F4, scale_format)


def test_exact_is_the_default_and_unchanged(rng):
    ac, sa, bc, sb, c = _random_case(rng, _M8, "fp8_e5m2", "fp6_e2m3", 50, 2)
    acc = c.astype(np.uint32).view(np.float32)
    default = golden.dot_blocks(ac, sa, bc, sb, "fp8_e5m2", "fp6_e2m3", acc)
    exact = golden.dot_blocks(ac, sa, bc, sb, "fp8_e5m2", "fp6_e2m3", acc, accumulation="exact")
    assert np.array_equal(default.view(np.uint32), exact.view(np.uint32))
    for r in range(0, 50, 7):  # the exact mode against its own oracle, not against itself
        want = oracle.dot_chain("fp8_e5m2", list(ac[r]), sa[r], "fp6_e2m3", list(bc[r]), sb[r],
                                int(c[r]))
        assert int(default.view(np.uint32)[r]) == want


# -- MMA-Sim ------------------------------------------------------------------------------------
PTX = {"fp8_e4m3": "e4m3", "fp8_e5m2": "e5m2", "fp6_e3m2": "e3m2", "fp6_e2m3": "e2m3",
       "fp4_e2m1": "e2m1"}


@pytest.fixture(scope="module")
def mmasim():
    pytest.importorskip("torch", reason="torch is not installed (optional: pip install "
                        "torch mmasim to compare the GPU modes with MMA-Sim)")
    try:
        import mmasim.nv_ptx as nv_ptx
    except ImportError:
        pytest.skip("mmasim is not installed (optional: pip install mmasim to compare the GPU "
                    "modes with MMA-Sim)")
    except Exception as e:  # its import builds a C++ extension (torch cpp_extension, ninja)
        first = str(e).splitlines()[0] if str(e) else ""
        pytest.skip(f"mmasim is installed but did not load ({type(e).__name__}: {first}); its "
                    "import compiles a C++ extension, which needs a C++ compiler and ninja")
    return nv_ptx


def _mmasim_chain(mmasim, kind, fa, fb, ac, sa, bc, sb, c, scale_format="e8m0"):
    """MMA-Sim's fp32 bits for rows of blocks: its dpa, one call per step."""
    import torch

    e8m0 = torch.float8_e4m3fn if scale_format == "ue4m3" else torch.float8_e8m0fnu
    acc = torch.from_numpy(c.astype(np.uint32).view(np.float32))
    if kind in (_M4, _NV):
        k = ac.shape[2]
        ptx_scale = {"e8m0": "ue8m0", "ue4m3": "ue4m3"}[scale_format]
        op = mmasim.TCGen05MMABlockScale(
            "Blackwell", f"m128n8k64.kind::{kind[8:]}.block{k}.f32.e2m1.e2m1.{ptx_scale}")
        rows, step = ac.shape[0], 64 // k

        def pack(x):  # MMA-Sim unpacks the high nibble first
            x = x.reshape(rows, -1)
            return torch.from_numpy(((x[:, 0::2] << 4) | x[:, 1::2]).astype(np.uint8))

        for j in range(0, ac.shape[1], step):
            sl = slice(j, j + step)
            acc = op.dpa(pack(ac[:, sl]), pack(bc[:, sl]), acc,
                         torch.from_numpy(np.ascontiguousarray(sa[:, sl])).view(e8m0),
                         torch.from_numpy(np.ascontiguousarray(sb[:, sl])).view(e8m0))
    else:
        op = mmasim.TCGen05MMABlockScale(
            "Blackwell", f"m128n8k32.kind::mxf8f6f4.block32.f32.{PTX[fa]}.{PTX[fb]}.ue8m0")

        def tensor(x, f):  # fp8 as torch's fp8; fp6 in bits 5:0 and fp4 in bits 5:2 of a byte
            t = torch.from_numpy(np.ascontiguousarray(x))
            if BITS[f] == 8:
                return t.view(torch.float8_e4m3fn if f == "fp8_e4m3" else torch.float8_e5m2)
            return t << 2 if BITS[f] == 4 else t

        for j in range(ac.shape[1]):
            acc = op.dpa(tensor(ac[:, j], fa), tensor(bc[:, j], fb), acc,
                         torch.from_numpy(np.ascontiguousarray(sa[:, j:j + 1])).view(e8m0),
                         torch.from_numpy(np.ascontiguousarray(sb[:, j:j + 1])).view(e8m0))
    return acc.view(torch.int32).numpy().view(np.uint32).astype(np.int64)


def _adversarial_case(rng, kind, fa, fb, rows, n, k=32, scale_format="e8m0"):
    """Vectors aimed at the rules: cancelling pairs, scales far apart within a step, accumulators
    near FLT_MAX, tiny and zero, subnormal elements (and zero and NaN UE4M3 scales)."""
    ac, sa, bc, sb, c = _random_case(rng, kind, fa, fb, rows, n, k, scale_format)
    half = k // 2
    bc[:, :, half:] = bc[:, :, :half] ^ (1 << (BITS[fb] - 1))  # b's second half negated ...
    ac[:, :, half:] = np.where(rng.random((rows, n, half)) < 0.7, ac[:, :, :half],
                               ac[:, :, half:])  # ... against mostly the same a: cancellation
    small = rng.random((rows, n, k)) < 0.3  # subnormal and zero elements
    ac = np.where(small, ac & ((1 << (BITS[fa] - 1)) | 3), ac).astype(np.uint8)
    top = 256 if scale_format == "ue4m3" else 255
    sa = np.where(rng.random((rows, n)) < 0.3, rng.integers(0, top, (rows, n)), sa).astype(np.uint8)
    pick = rng.integers(0, 5, rows)
    extremes = np.array([0x7F7FFFFF, 0xFF7FFFFF, 0x00000001, 0x80000000, 0x00800000], np.int64)
    c = np.where(rng.random(rows) < 0.4, extremes[pick], c)
    return ac, sa, bc, sb, c


def _compare_with_mmasim(mmasim, rng, configs, rows, steps):
    """{kind: vectors} of golden against MMA-Sim (random and adversarial halves, ``steps``
    chained steps each); any mismatch fails."""
    vectors = {}
    for kind, fa, fb, k, scale_format in configs:
        n = steps * (32 if kind == _M8 else 64) // k
        for make in (_random_case, _adversarial_case):
            ac, sa, bc, sb, c = make(rng, kind, fa, fb, rows, n, k, scale_format)
            got = accumulate_rows(kind, ac, sa, bc, sb, c, fa, fb, scale_format)
            want = _mmasim_chain(mmasim, kind, fa, fb, ac, sa, bc, sb, c, scale_format)
            bad = np.nonzero(got != want)[0]
            assert bad.size == 0, (f"{kind} {fa} x {fb} block {k} {scale_format}: {bad.size} of "
                                   f"{rows} differ, first row {bad[0]}: golden "
                                   f"{got[bad[0]]:#010x}, MMA-Sim {want[bad[0]]:#010x}")
            vectors[kind] = vectors.get(kind, 0) + rows
    return vectors


@pytest.mark.parametrize("name", sorted(DIRECTED))
def test_directed_rules_against_mmasim(mmasim, name):
    kind, fa, ab, asc, fb, bb, bsc, c, want_gpu, _ = DIRECTED[name]
    arrays = [np.array(x, np.uint8)[None] for x in (ab, asc, bb, bsc)]
    got = _mmasim_chain(mmasim, kind, fa, fb, *arrays, np.array([c], np.int64))
    assert int(got[0]) == want_gpu, f"MMA-Sim {int(got[0]):#010x}, expected {want_gpu:#010x}"


@pytest.mark.parametrize("name", sorted(DIRECTED_UE4M3))
def test_directed_ue4m3_against_mmasim(mmasim, name):
    ab, asc, bb, bsc, c, want = DIRECTED_UE4M3[name]
    arrays = [np.array(x, np.uint8)[None] for x in (ab, asc, bb, bsc)]
    got = int(_mmasim_chain(mmasim, _NV, _F4, _F4, *arrays, np.array([c], np.int64), "ue4m3")[0])
    assert got == want, f"MMA-Sim {got:#010x}, expected {want:#010x}"


def _compare_every_kind(mmasim, rng, scale: int, steps: int) -> dict:
    """Vectors per kind compared with MMA-Sim: ``scale`` x (200 per mxf8f6f4 pair, 5,000 mxf4,
    2,000 per mxf4nvf4 scale setting), chains of ``steps`` steps."""
    vectors = _compare_with_mmasim(mmasim, rng, CONFIGS[:25], 200 * scale, steps)
    vectors.update(_compare_with_mmasim(mmasim, rng, CONFIGS[25:26], 5000 * scale, steps))
    vectors[_NV] = 0
    for config in CONFIGS[26:]:
        vectors[_NV] += _compare_with_mmasim(mmasim, rng, [config], 2000 * scale, steps)[_NV]
    return vectors


def test_against_mmasim(mmasim, rng):
    """10^4 vectors per kind, one step each, every configuration."""
    vectors = _compare_every_kind(mmasim, rng, 1, 1)
    print(f"MMA-Sim, one step: {vectors} vectors, 0 mismatches")
    assert vectors == {_M8: 10000, _M4: 10000, _NV: 12000}


@pytest.mark.slow
def test_against_mmasim_chains_slow(mmasim, rng):
    """10^5 vectors per kind, chains of 3 steps."""
    vectors = _compare_every_kind(mmasim, rng, 10, 3)
    print(f"MMA-Sim, chains of 3 steps: {vectors} vectors, 0 mismatches")
    assert vectors == {_M8: 100000, _M4: 100000, _NV: 120000}
