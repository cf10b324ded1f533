"""The dot units' GPU accumulation modes in Amaranth's simulator: MXDot's, MXDotGeneral's and
MXGemm's truncating steps against the independent Fraction model of ``tests/oracle``
(``tcgen05_f8f6f4_step``, ``tcgen05_chain``) and golden, on directed and random blocks.
"""

from __future__ import annotations

import numpy as np
import oracle
import pytest
from amaranth_drive import dot_beat, simulate_stream

import golden
from hw.dot import MXDot, MXDotGeneral
from tb.dot_gpu import code_of, gpu_directed_blocks, nvfp4_gpu_directed_runs

MODE = "tcgen05.mxf8f6f4"
F4 = "tcgen05.mxf4"


def _simulate(dut, beats):
    """Run ``beats`` (ca, sa, cb, sb, c[, first, last[, alpha]]) through ``dut`` in Amaranth's
    simulator, ``o.ready`` high (MXDotGeneral: one context, each beat waiting for the block
    before it); the fp32 results in order."""
    return simulate_stream(dut, [dot_beat(dut, *beat) for beat in beats],
                           lambda ctx: ctx.get(dut.o.payload.result),
                           cycles=(len(beats) + 1) * (dut.latency + 2),
                           count=sum(beat[6] for beat in beats) if len(beats[0]) > 5
                           else len(beats))


def test_mxdot_directed_vectors_match_the_oracle():
    """The mode's directed vectors (tb.dot_gpu) and random blocks through MXDot (fp4_e2m1 x
    fp6_e2m3, 5 stages): every result equals the Fraction model's and golden's."""
    fa, fb = "fp4_e2m1", "fp6_e2m3"
    seed = 52
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    cases = [x[:5] for x in gpu_directed_blocks(fa, fb)]
    for _ in range(12):
        ca = rng.integers(0, 16, 32).astype(np.uint8)
        cb = rng.integers(0, 64, 32).astype(np.uint8)
        c = int(np.array([rng.normal() * 2.0 ** rng.integers(-3, 8)], np.float32)
                .view(np.uint32)[0])
        cases.append((ca, int(rng.integers(120, 135)), cb, int(rng.integers(120, 135)), c))
    got = _simulate(MXDot(fa, fb, stages=5, accumulation=MODE), cases)
    want = [oracle.tcgen05_f8f6f4_step(fa, list(ca), sa, fb, list(cb), sb, c)
            for ca, sa, cb, sb, c in cases]
    ca, sa, cb, sb, c = (np.array(x) for x in zip(*cases, strict=True))
    gold = golden.dot_blocks(ca[:, None].astype(np.uint8), sa[:, None].astype(np.uint8),
                             cb[:, None].astype(np.uint8), sb[:, None].astype(np.uint8), fa, fb,
                             acc=c.astype(np.uint32).view(np.float32),
                             accumulation=MODE).view(np.uint32)
    assert [hex(x) for x in want] == [hex(x) for x in gold]
    assert [hex(x) for x in got] == [hex(x) for x in want]
    assert 0x7FFFFFFF in got and 0 in got  # the NaN and +0 cases are among them


def test_mxdot_general_chains_steps_like_the_oracle():
    """A run of three blocks through MXDotGeneral (one context): each step's fp32 result is
    the next step's c, as tcgen05_chain computes."""
    fa = fb = "fp8_e5m2"
    rng = np.random.default_rng(7)
    blocks_a = [rng.integers(0, 0x7B, 32).astype(np.uint8) for _ in range(3)]
    blocks_b = [(rng.integers(0, 0x7B, 32) | rng.integers(0, 2, 32) << 7).astype(np.uint8)
                for _ in range(3)]  # finite codes of both signs
    sa, sb, c0 = [127, 120, 131], [126, 127, 129], 0xC1200000
    beats = [(blocks_a[j], sa[j], blocks_b[j], sb[j], c0, int(j == 0), int(j == 2))
             for j in range(3)]
    got = _simulate(MXDotGeneral(fa, fb, contexts=1, stages=4, accumulation=MODE), beats)
    want = oracle.tcgen05_chain(MODE, fa, [list(x) for x in blocks_a], sa, fb,
                                [list(x) for x in blocks_b], sb, c0)
    assert want & 0x7F800000 not in (0, 0x7F800000)  # a finite normal result
    assert got == [want]


@pytest.mark.parametrize("mode, k", [(F4, 32), ("tcgen05.mxf4nvf4", 16)])
def test_mxdot_general_chains_mxf4_steps_like_the_oracle(mode, k):
    """mxf4 and mxf4nvf4 (E8M0) in MXDotGeneral (one context): runs of 1..6 blocks, a step
    per 64 elements (a last step of fewer), the pending groups in the context's state; each
    run's result is tcgen05_chain's and golden's.  The runs mix random blocks with a NaN
    scale in a non-closing block, groups truncated away and cancelling ones."""
    from golden.stimulus import dot_accumulators, dot_random_blocks

    fmt, seed = "fp4_e2m1", 64
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    runs = []
    for n in (1, 2, 3, 4, 5, 6, 3, 4):
        ca, sa, cb, sb = dot_random_blocks(rng, fmt, fmt, n, k)
        sa, sb = np.clip(sa, 100, 160), np.clip(sb, 100, 160)
        c0 = int(dot_accumulators(rng, fmt, fmt, ca[:1], sa[:1], cb[:1], sb[:1])[0])
        runs.append([ca, sa.astype(np.uint8), cb, sb.astype(np.uint8), c0])
    runs[6][1][0] = 255  # a NaN scale in a step's first block: the step's result is NaN
    runs[7][1][:] = [140, 100, 100, 100]  # later blocks' groups truncated below the first's
    one, minus = code_of(fmt, 1.0), code_of(fmt, -1.0)

    def directed(lanes, scales, c0):
        """A run of blocks, block j's lane i the code pair ``lanes[j][i]``."""
        ca, cb = np.zeros((len(lanes), k), np.uint8), np.zeros((len(lanes), k), np.uint8)
        for j, pairs in enumerate(lanes):
            for i, (x, y) in enumerate(pairs):
                ca[j, i], cb[j, i] = x, y
        sc = np.array(scales, np.uint8)
        return [ca, sc, cb, sc.copy(), c0]

    # 1 - 2^-30 + 2^-30 in one step: 1.0; step by block it would be 1 - 2^-24
    runs.append(directed([[(minus, one)], [(one, one)]], [112, 112], 0x3F800000))
    # a group cancelling at 2^10 keeps its exponent: the next block's 2^-30 lies below
    # 2^(10 - 35) and is truncated away (+0); step by block it would be 2^-30
    runs.append(directed([[(one, one), (minus, one)], [(one, one)]], [132, 112], 0))
    beats = [(r[0][j], int(r[1][j]), r[2][j], int(r[3][j]), r[4], int(j == 0),
              int(j == len(r[1]) - 1)) for r in runs for j in range(len(r[1]))]
    got = _simulate(MXDotGeneral(fmt, block_size=k, contexts=1, stages=4, accumulation=mode),
                    beats)
    want = [oracle.tcgen05_chain(mode, fmt, [list(x) for x in r[0]], list(r[1]), fmt,
                                 [list(x) for x in r[2]], list(r[3]), r[4]) for r in runs]
    gold = [int(golden.dot_blocks(r[0][None], r[1][None], r[2][None], r[3][None], fmt, fmt,
                                  acc=np.array([r[4]], np.uint32).view(np.float32),
                                  accumulation=mode).view(np.uint32)[0]) for r in runs]
    assert [hex(x) for x in want] == [hex(x) for x in gold]
    assert [hex(x) for x in got] == [hex(x) for x in want]
    assert 0x7FFFFFFF in got and got[-2:] == [0x3F800000, 0]


@pytest.mark.parametrize("mode, fmt, k, blocks", [
    (MODE, "fp6_e3m2", 32, 2), (F4, "fp4_e2m1", 32, 3), ("tcgen05.mxf4nvf4", "fp4_e2m1", 16, 5)])
def test_mxgemm_lanes_chain_steps_like_the_oracle(mode, fmt, k, blocks):
    """MXGemm (1 x 2 lanes, one context) in the mode: a run of ``blocks`` K blocks, each
    lane's result the chain of tcgen05 steps of its row and column (tests/oracle; mxf4
    and mxf4nvf4 a step per 64 elements of K, the last one shorter)."""
    from amaranth.sim import Simulator

    from hw.gemm import MXGemm

    rng = np.random.default_rng(51)
    print("seed 51")
    dut = MXGemm(fmt, rows=1, cols=2, block_size=k, contexts=1, stages=3, accumulation=mode)
    assert dut.module_name.endswith("_" + mode.replace(".", "_"))
    top = 1 << golden.element_format(fmt).bits
    ks = range(blocks)
    a = [(rng.integers(0, top, k).astype(np.uint8), int(rng.integers(120, 135))) for _ in ks]
    b = [[(rng.integers(0, top, k).astype(np.uint8), int(rng.integers(120, 135)))
          for _ in ks] for _ in range(2)]
    c0 = [0x3F800000, 0xC0400000]
    got = []

    async def bench(ctx):
        p = dut.i.payload
        ctx.set(dut.o.ready, 1)
        for j in ks:
            ctx.set(p.a.row0.scale, a[j][1])
            for col in range(2):
                ctx.set(p.b[f"col{col}"].scale, b[col][j][1])
                ctx.set(p.c0.row0[col], c0[col])
            for i in range(k):
                ctx.set(p.a.row0.codes[i], int(a[j][0][i]))
                for col in range(2):
                    ctx.set(p.b[f"col{col}"].codes[i], int(b[col][j][0][i]))
            ctx.set(p.first, int(j == 0))
            ctx.set(p.last, int(j == blocks - 1))
            ctx.set(dut.i.valid, 1)
            while True:
                taken = ctx.get(dut.i.ready)
                await ctx.tick()
                if taken:
                    break
            ctx.set(dut.i.valid, 0)
        for _ in range(4 * dut.latency + 8):
            if ctx.get(dut.o.valid):
                got.append([ctx.get(dut.o.payload.result.row0[col]) for col in range(2)])
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    want = [oracle.tcgen05_chain(mode, fmt, [list(x) for x, _ in a], [s for _, s in a], fmt,
                                 [list(x) for x, _ in b[col]], [s for _, s in b[col]], c0[col])
            for col in range(2)]
    assert got == [want]


def _f4_cases(rng, k: int, mode: str, scale_format: str) -> list[tuple]:
    """``(ca, sa, cb, sb, c)``: 16 random blocks and the mode's directed vectors (E8M0), or
    random blocks with UE4M3 bytes (zero, subnormal, NaN and sign-bit ones among them) and
    the NVFP4 corner cases (UE4M3)."""
    from golden.stimulus import dot_accumulators, dot_random_blocks

    if scale_format == "e8m0":
        ca, sa, cb, sb = dot_random_blocks(rng, "fp4_e2m1", "fp4_e2m1", 16, k)
        c = dot_accumulators(rng, "fp4_e2m1", "fp4_e2m1", ca, sa, cb, sb)
        cases = [(ca[j], int(sa[j]), cb[j], int(sb[j]), int(c[j])) for j in range(16)]
        return cases + [x[:5] for x in gpu_directed_blocks("fp4_e2m1", "fp4_e2m1", k, mode)]
    from tb import nvfp4_dot_stimulus as nv

    ca, cb = nv.random_codes(rng, 24, k), nv.random_codes(rng, 24, k)
    sa, sb = nv.random_scales(rng, 24), nv.random_scales(rng, 24)
    c = nv.accumulators(rng, ca, sa, cb, sb)
    cases = [(ca[j], int(sa[j]), cb[j], int(sb[j]), int(c[j])) for j in range(24)]
    return cases + [(np.array(x[0]), x[1], np.array(x[2]), x[3], x[4])
                    for x in nv.directed_cases(k)]


@pytest.mark.parametrize("mode, k, scale_format", [
    (F4, 32, "e8m0"), ("tcgen05.mxf4nvf4", 16, "e8m0"), ("tcgen05.mxf4nvf4", 16, "ue4m3")])
def test_mxdot_mxf4_matches_the_oracle(mode, k, scale_format):
    """tcgen05.mxf4 (and mxf4nvf4 with E8M0 scales, k = 16, and with UE4M3 ones, nvfp4) in
    MXDot (one block per step: the step of that block and all-zero others, as golden steps a
    single block): the directed vectors of the mode and random blocks against the Fraction
    model and golden (which takes a UE4M3 byte's low seven bits: its sign bit is ignored)."""
    fmt, seed = "fp4_e2m1", 4
    print(f"seed {seed}")
    cases = _f4_cases(np.random.default_rng(seed), k, mode, scale_format)
    nvfp4 = scale_format == "ue4m3"
    dut = MXDot("nvfp4" if nvfp4 else fmt, block_size=k, stages=5, accumulation=mode)
    got = _simulate(dut, cases)
    want = [oracle.tcgen05_chain(mode, fmt, [list(x[0])], [x[1]], fmt, [list(x[2])], [x[3]],
                                 x[4], scale_format)
            for x in cases]
    a, s_a, b, s_b, acc = (np.array(v) for v in zip(*cases, strict=True))
    low = 0x7F if nvfp4 else 0xFF
    gold = golden.dot_blocks(a[:, None].astype(np.uint8), (s_a & low)[:, None].astype(np.uint8),
                             b[:, None].astype(np.uint8), (s_b & low)[:, None].astype(np.uint8),
                             fmt, fmt, acc=acc.astype(np.uint32).view(np.float32),
                             accumulation=mode, scale_format=scale_format).view(np.uint32)
    assert [hex(x) for x in want] == [hex(x) for x in gold]
    assert [hex(x) for x in got] == [hex(x) for x in want]
    if nvfp4:  # NaN from 0x7F (and 0xFF), a sign-bit byte read as its low seven bits
        assert 0x7FFFFFFF in got and any(x[1] in range(0x80, 0xFF) for x in cases)


def _nvfp4_runs(rng, k: int) -> list[list]:
    """``[ca, sa, cb, sb, c0, pa, pb]``: random nvfp4 runs of 1..9 blocks (UE4M3 bytes with
    zero, subnormal, NaN and sign-bit ones; tensor scales None or positive fp32), and the
    two runs of :func:`tb.dot_gpu.nvfp4_gpu_directed_runs`."""
    from tb import nvfp4_dot_stimulus as nv

    runs = []
    for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 4, 5, 3):
        ca, cb = nv.random_codes(rng, n, k), nv.random_codes(rng, n, k)
        sa, sb = nv.random_scales(rng, n), nv.random_scales(rng, n)
        c0 = int(nv.accumulators(rng, ca[:1], sa[:1], cb[:1], sb[:1])[0])
        pa, pb = (None if rng.integers(0, 3) == 0 else float(np.float32(rng.uniform(0.01, 9)))
                  for _ in range(2))
        runs.append([ca, sa, cb, sb, c0, pa, pb])
    runs += [[*r[:5], None, None] for r in nvfp4_gpu_directed_runs(k)]
    return runs


@pytest.mark.parametrize("levels", [1, 2])
def test_mxdot_general_nvfp4_chains_mxf4nvf4_like_the_oracle(levels):
    """nvfp4 in tcgen05.mxf4nvf4 through MXDotGeneral (one context): steps of four blocks of
    16, the pending groups' UE4M3 values in the context's state; each run's sum is
    tcgen05_chain's and golden's, and with ``levels=2`` the tensor scales' epilogue
    ``f(f(Pa * Pb) * sum)`` follows (oracle.nvfp4_tcgen05_dot; golden's epilogue, NaN
    0x7FFFFFFF).  Two directed runs differ from a step per block."""
    from tb import nvfp4_dot_stimulus as nv

    k, mode, seed = 16, "tcgen05.mxf4nvf4", 52
    print(f"seed {seed}")
    runs = _nvfp4_runs(np.random.default_rng(seed), k)
    want, alphas = [], []
    for ca, sa, cb, sb, c0, pa, pb in runs:
        if levels == 1:
            pa = pb = None
        alpha = 0x3F800000 if pa is None and pb is None else int(np.float32(
            np.float32(1 if pa is None else pa) * np.float32(1 if pb is None else pb)
        ).view(np.uint32))
        alphas.append(alpha)
        exact = oracle.nvfp4_tcgen05_dot(ca.ravel(), sa, pa, cb.ravel(), sb, pb, c0)
        _, gold = nv.run_result(ca, sa, cb, sb, c0, alpha if levels == 2 else None,
                                accumulation=mode)
        assert hex(gold) == hex(exact)
        want.append(exact)
    beats = [(r[0][j], int(r[1][j]), r[2][j], int(r[3][j]), r[4], int(j == 0),
              int(j == len(r[1]) - 1), *([alphas[i]] if levels == 2 else []))
             for i, r in enumerate(runs) for j in range(len(r[1]))]
    dut = MXDotGeneral("nvfp4", contexts=1, stages=4, accumulation=mode, levels=levels)
    got = _simulate(dut, beats)
    assert [hex(x) for x in got] == [hex(x) for x in want]
    per_block = [int(nv.step_results(r[0][1:], r[1][1:], r[2][1:], r[3][1:], [int(
        nv.step_results(r[0][:1], r[1][:1], r[2][:1], r[3][:1], [r[4]], mode)[0])], mode)[0])
        for r in runs[-2:]]
    assert got[-2:] == [0x44800000, 0] and per_block == [0x447FFFFF, 0x35800000], per_block
    assert 0x7FFFFFFF in got and any(len(r[1]) > 4 for r in runs)
