"""The NVFP4 dot units (MXDot and MXDotGeneral with ``--format nvfp4``) in the Amaranth
simulator: every result bit-exact against golden and against exact Fractions
(``tests/oracle``: ``nvfp4_dot``, ``rne_fp32_bits``), the widths against the oracle's
decoder, the parameters, the sidecar and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import oracle
import pytest
from amaranth_drive import simulate_pipeline

from hw.dot import DotGeometry, MXDot, MXDotGeneral
from tb import nvfp4_dot_stimulus as stim

ROOT = Path(__file__).resolve().parents[1]
QNAN = 0x7FC00000


def _simulate(dut, beats, read, expected):
    """Offer ``beats`` (lists of (signal, value)) one per accepted clock with ``o.ready``
    high; return ``read(ctx)`` of every output (``expected`` of them), in order."""
    from amaranth.sim import Simulator

    out = []

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        pending = list(beats)
        for _ in range((len(beats) + 2) * (dut.latency + 2)):
            ctx.set(dut.i.valid, bool(pending))
            for signal, value in pending[0] if pending else ():
                ctx.set(signal, int(value))
            taken = pending and ctx.get(dut.i.ready)
            if ctx.get(dut.o.valid):
                out.append(read(ctx))
            await ctx.tick()
            if taken:
                pending.pop(0)
            if not pending and len(out) >= expected:
                break

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return out


def _block_beat(p, ca, sa, cb, sb):
    beat = [(p.a.scale, sa), (p.b.scale, sb)]
    for j in range(len(ca)):
        beat += [(p.a.codes[j], ca[j]), (p.b.codes[j], cb[j])]
    return beat


def _oracle_step(ca, sa, cb, sb, c_bits) -> int:
    """The block step from exact Fractions (a byte with bit 7 set: NaN, the units' choice)."""
    if sa >= 0x80 or sb >= 0x80:
        return QNAN
    return oracle.nvfp4_dot([int(x) for x in ca], [sa], None, [int(x) for x in cb], [sb], None,
                            int(c_bits), block_size=len(ca))


def test_geometry_widths_from_the_oracle():
    """W holds the largest |P * S| (oracle units: 6 = 12 halves; P <= 15 * 15), for k in
    2..64; the MX widths are unchanged by the scale format's default."""
    e2m1 = oracle.fmt_of("fp4_e2m1")
    for k in (2, 16, 32, 64):
        g = DotGeometry(stim.FP4, stim.FP4, k, "ue4m3")
        largest = k * oracle.units_max(e2m1) ** 2 * 15 * 15
        assert largest < 1 << g.sum_bits <= 2 * largest
        assert g.window_bits == g.sum_bits + 27
        assert DotGeometry(stim.FP4, stim.FP4, k).sum_bits == (k * 144).bit_length()


def test_mxdot_nvfp4_matches_golden_and_fractions(rng):
    """Directed cases and 120 random blocks (k = 16, 3 stages): golden and the Fractions."""
    k = 16
    dut = MXDot("nvfp4", stages=3)
    assert dut.block_size == k and dut.module_name == "nvfp4_dot_k16_s3"
    cases = stim.directed_cases(k)
    ca = np.array([x[0] for x in cases] + list(stim.random_codes(rng, 120, k)), np.uint8)
    cb = np.array([x[2] for x in cases] + list(stim.random_codes(rng, 120, k)), np.uint8)
    sa = np.concatenate([[x[1] for x in cases], stim.random_scales(rng, 120)]).astype(np.uint8)
    sb = np.concatenate([[x[3] for x in cases], stim.random_scales(rng, 120)]).astype(np.uint8)
    c = np.concatenate([[x[4] for x in cases],
                        stim.accumulators(rng, ca[-120:], sa[-120:], cb[-120:], sb[-120:])])
    p = dut.i.payload
    beats = [[*_block_beat(p, ca[i], int(sa[i]), cb[i], int(sb[i])), (p.c, int(c[i]))]
             for i in range(len(sa))]
    got = _simulate(dut, beats, lambda ctx: ctx.get(dut.o.payload.result), len(beats))
    want = stim.step_results(ca, sa, cb, sb, c.astype(np.uint32))
    assert len(got) == len(sa)
    bad = [(i, hex(g), hex(int(w))) for i, (g, w) in enumerate(zip(got, want, strict=True))
           if g != int(w)]
    assert not bad, f"{len(bad)} differ from golden: {bad[:5]}"
    for i in range(len(sa)):
        assert got[i] == _oracle_step(ca[i], int(sa[i]), cb[i], int(sb[i]), c[i]), i
    # hand-worked: 16 * (1 * 1) * 1.875 * 1.875 = 56.25 added to 1.5 (0x3F = 1.875)
    assert stim.step_results(ca[:1] * 0 + stim.code_of(1.0), np.array([0x3F], np.uint8),
                             cb[:1] * 0 + stim.code_of(1.0), np.array([0x3F], np.uint8),
                             np.array([0x3FC00000], np.uint32))[0] == \
        np.float32(57.75).view(np.uint32)
    assert [got[i] for i, x in enumerate(cases) if "NaN" in x[5] or "0xFF" in x[5]] == \
        [QNAN] * sum(1 for x in cases if "NaN" in x[5] or "0xFF" in x[5])


def _epilogue_oracle(total_bits: int, alpha_bits: int) -> int:
    x, a = oracle.fp32_bits_value(total_bits), oracle.fp32_bits_value(alpha_bits)
    if x is oracle.NAN or a is oracle.NAN:
        return QNAN
    if isinstance(x, str) or isinstance(a, str):
        zero = (not isinstance(x, str) and x == 0) or (not isinstance(a, str) and a == 0)
        if zero:
            return QNAN
        neg = (total_bits ^ alpha_bits) >> 31
        return 0x7F800000 | (neg << 31)
    product = Fraction(x) * Fraction(a)
    if product == 0:  # an exact zero product keeps the sign of the operands (IEEE)
        return ((total_bits ^ alpha_bits) >> 31) << 31
    return oracle.rne_fp32_bits(product)


@pytest.mark.parametrize("contexts,stages", [(1, 2), (2, 9)])
def test_mxdot_general_nvfp4_epilogue(contexts, stages, rng):
    """Runs of 1-3 blocks with a random alpha on the last beat (noise on the others):
    golden's chain and epilogue, and the epilogue from exact Fractions."""
    k, n = 4, 40
    dut = MXDotGeneral("nvfp4", block_size=k, contexts=contexts, stages=stages)
    assert dut.levels == 2 and dut.module_name.startswith("nvfp4_dot_general_l2_k4")
    p = dut.i.payload
    alphas = stim.random_alpha(rng, n)
    beats, want = [], []
    for r in range(n):
        length = int(rng.integers(1, 4))
        ca, cb = stim.random_codes(rng, length, k), stim.random_codes(rng, length, k)
        sa, sb = stim.random_scales(rng, length), stim.random_scales(rng, length)
        c0 = int(stim.accumulators(rng, ca[:1], sa[:1], cb[:1], sb[:1])[0])
        total, res = stim.run_result(ca, sa, cb, sb, c0, int(alphas[r]))
        assert res == _epilogue_oracle(total, int(alphas[r])), (hex(total), hex(alphas[r]))
        want.append(res)
        for b in range(length):
            last = b == length - 1
            beats.append([*_block_beat(p, ca[b], int(sa[b]), cb[b], int(sb[b])),
                          (p.c0, c0 if b == 0 else int(rng.integers(0, 1 << 32))),
                          (p.first, b == 0), (p.last, last),
                          (p.alpha, int(alphas[r]) if last else int(rng.integers(0, 1 << 32))),
                          *([(p.ctx, 0)] if contexts > 1 else [])])
    got = _simulate(dut, beats, lambda ctx: ctx.get(dut.o.payload.result), n)
    bad = [(i, hex(g), hex(w)) for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w]
    assert len(got) == n and not bad, f"{len(bad)} differ: {bad[:5]}"


def _epilogue_vectors(rng) -> list[tuple[int, int]]:
    """(x, alpha) fp32 bit pairs: every pair of significand leading-zero counts 0..23 (a
    subnormal's 1..23, as it is) at random exponents, signs and lower bits, so the product's
    leading zeros take every value 0..47; then the specials and random bits."""
    def operand(lz):
        low = int(rng.integers(0, 1 << 23))
        if lz == 0:
            return (int(rng.integers(1, 255)) << 23) | low
        return (1 << (23 - lz)) | (low & ((1 << (23 - lz)) - 1))

    sign = lambda: int(rng.integers(0, 2)) << 31  # noqa: E731
    pairs = [(operand(la) | sign(), operand(lb) | sign())
             for la in range(24) for lb in range(24) for _ in range(3)]
    special = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 1, 0x7F7FFFFF,
               0x00800000, 0x3F800000, 0x3F7FFFFF, 0x00400000]
    pairs += [(a, b) for a in special for b in special]
    return pairs + [tuple(int(v) for v in rng.integers(0, 1 << 32, 2)) for _ in range(300)]


def _epilogue_alone(pairs) -> list[int]:
    """:func:`hw.dot.epilogue.build_epilogue` alone, every section registered: its results
    for the (x, alpha) fp32 bit pairs ``pairs``."""
    from amaranth.hdl import Const, Module, Signal

    from hw.dot.epilogue import build_epilogue, epilogue_sections, operand_fields
    from hw.pipeline import Pipeline

    m = Module()
    x, alpha, result = Signal(32), Signal(32), Signal(32)
    sections = epilogue_sections()
    pipe = Pipeline(m, sections, len(sections), name="e")
    m.d.comb += result.eq(build_epilogue(pipe.scope(), x, operand_fields(alpha),
                                          None).result)
    pipe.connect(i_valid=Const(1), i_ready=Signal(), o_valid=Signal(), o_ready=Const(1))
    got = simulate_pipeline(m, [((x, a), (alpha, b)) for a, b in pairs],
                            lambda ctx: ctx.get(result), len(sections))
    assert len(got) >= len(pairs)
    return got[:len(pairs)]


def _significand(bits: int) -> int:
    return (bits & 0x7FFFFF) | (0x800000 if bits & 0x7F800000 else 0)


def _check_epilogue(pairs):
    got = _epilogue_alone(pairs)
    want = [_epilogue_oracle(a, b) for a, b in pairs]
    bad = [(hex(a), hex(b), hex(g), hex(w))
           for (a, b), g, w in zip(pairs, got, want, strict=True) if g != w]
    assert not bad, f"{len(bad)} differ: {bad[:5]}"
    return want


def test_epilogue_every_leading_zero_count(rng):
    """:func:`hw.dot.epilogue.build_epilogue` alone: the fp32 RNE product of x and alpha
    against exact Fractions (``_epilogue_oracle``) for products with every leading-zero count
    of the 48-bit significand product (the normalization's three sections), subnormal and
    overflowing results and the specials."""
    pairs = _epilogue_vectors(rng)
    sig = [_significand(a) * _significand(b) for a, b in pairs]
    assert {48 - q.bit_length() for q in sig if q} >= set(range(48))
    want = _check_epilogue(pairs)
    assert {w & 0x7F800000 for w in want} >= {0, 0x7F800000}  # subnormal or zero, and Inf


def _trailing_zero_vectors(rng) -> list[tuple[int, int]]:
    """(x, alpha) fp32 bit pairs: every pair of significand trailing-zero counts 0..23, the
    significands' top bits random at or above them (subnormal operands too), at exponents
    that put the product's lowest set bit within a few places of a subnormal result's round
    bit, and at random exponents."""
    def sig(tz):
        top = int(rng.integers(tz, 24)) if rng.integers(0, 2) else 23
        middle = int(rng.integers(0, 1 << 23)) & ((1 << top) - 1) & ~((2 << tz) - 1)
        return (1 << top) | middle | (1 << tz)

    def encode(s, e):  # e: the biased exponent a normal s (bit 23 set) takes
        return (e << 23) | (s & 0x7FFFFF) if s >> 23 else s

    pairs = []
    for ta in range(24):
        for tb in range(24):
            sa, sb = sig(ta), sig(tb)
            # lsb exponent (ea - 150) + (eb - 150); the lowest set bit at lsb + ta + tb,
            # a subnormal's round bit at -150
            for total in (150 + int(rng.integers(-4, 4)) - ta - tb, int(rng.integers(2, 400))):
                ea = 1 if sa >> 23 == 0 else min(max(total - 1 - int(rng.integers(0, 120)), 1),
                                                 254)
                eb = 1 if sb >> 23 == 0 else min(max(total - ea, 1), 254)
                sign = int(rng.integers(0, 4))
                pairs.append((encode(sa, ea) | (sign & 1) << 31,
                              encode(sb, eb) | (sign >> 1) << 31))
    return pairs


def _underflow_vectors() -> list[tuple[int, int]]:
    """(x, alpha) fp32 bit pairs whose product's top bit lies at 2^-153 .. 2^-147, around
    the smallest subnormal's half (2^-150, where products start to round to +-0): normal
    operands, the significands 1, 1 + 2^-23, 1.5 and the largest, of both signs."""
    sigs = [0, 1, 1 << 22, (1 << 23) - 1]
    return [(((ex + 127) << 23) | fa | (sign & 1) << 31,
             ((top - ex + 127) << 23) | fb | (sign >> 1) << 31)
            for top in range(-153, -146) for ex in (-75, -60) for fa in sigs for fb in sigs
            for sign in range(4)]


def _lowest_bit_to_round_bit(a: int, b: int) -> tuple[bool, int]:
    """(subnormal result, exponent of the exact product's lowest set bit less that of the
    rounded result's round bit) of non-zero finite fp32 bits ``a`` and ``b``."""
    q = _significand(a) * _significand(b)
    lsb = max((a >> 23) & 0xFF, 1) + max((b >> 23) & 0xFF, 1) - 300
    top = lsb + q.bit_length() - 1
    round_bit = max(top, -126) - 24
    return top < -126, lsb + ((q & -q).bit_length() - 1) - round_bit


def test_epilogue_sticky_bit_at_every_trailing_zero_count(rng):
    """:func:`hw.dot.epilogue.build_epilogue` alone against exact Fractions where the sticky
    bit decides: every pair of the significands' trailing-zero counts (the sticky bit compares
    their sum, plus the normalizing shift, with the shift onto the fp32 grid), the product's
    lowest set bit below, at and above the round bit, in normal and subnormal results; and
    products around 2^-150, below which they round to +-0."""
    pairs = _trailing_zero_vectors(rng) + _underflow_vectors()
    tz = [(_significand(a) & -_significand(a)).bit_length() - 1 for a, _ in pairs]
    assert set(tz) == set(range(24))
    finite = [(a, b) for a, b in pairs if _significand(a) * _significand(b)
              and (a >> 23) & 0xFF < 255 and (b >> 23) & 0xFF < 255]
    reach = {_lowest_bit_to_round_bit(a, b) for a, b in finite}
    for subnormal in (False, True):
        assert {(subnormal, d) for d in (-3, -2, -1, 0, 1, 2)} <= reach, subnormal
    want = _check_epilogue(pairs)
    # around 2^-150: results +-0 and the smallest subnormal of both signs
    assert {0, 0x80000000, 1, 0x80000001} <= set(want)


def test_mxdot_general_nvfp4_levels_1_has_no_alpha():
    dut = MXDotGeneral("nvfp4", levels=1, stages=2)
    assert "alpha" not in dut.i.payload.shape().members
    assert dut.parameters["levels"] == 1 and dut.module_name == "nvfp4_dot_general_l1_k16_c4_s2"
    assert "alpha" in MXDotGeneral("nvfp4").i.payload.shape().members


@pytest.mark.parametrize("make,match", [
    (lambda: MXDot("nvfp4", "fp4_e2m1"), "nvfp4 goes with nvfp4 only"),
    (lambda: MXDot("fp8_e4m3", "nvfp4"), "nvfp4 goes with nvfp4 only"),
    (lambda: MXDotGeneral("fp8_e4m3", levels=2), "levels=2"),
    (lambda: MXDotGeneral("nvfp4", levels=3), "levels"),
    (lambda: DotGeometry(stim.FP4, stim.FP4, 16, "ue8m0"), "unknown scale format"),
])
def test_bad_parameters(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "hw", *args], capture_output=True, text=True,
                          cwd=ROOT)


def test_cli_sidecar_and_errors(tmp_path):
    out = tmp_path / "g.v"
    r = _cli("generate", "dot-general", "--format", "nvfp4", "--stages", "3", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "module nvfp4_dot_general_l2_k16_c4_s3" in out.read_text()
    side = json.loads(out.with_suffix(".json").read_text())
    assert side["parameters"]["scale_format"] == "ue4m3"
    assert side["parameters"]["levels"] == 2 and side["parameters"]["block_size"] == 16
    names = [f["name"] for p in side["ports"] if p["name"] == "i__payload" for f in p["fields"]]
    assert names[-1] == "alpha"
    for args in (["dot", "--format-a", "nvfp4", "--format-b", "int8"],
                 ["dot-general", "--format", "int8", "--levels", "2"]):
        r = _cli("generate", *args, "-o", str(tmp_path / "x.v"))
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and "error" in lines[0], r.stderr


def test_nvfp4_name_is_goldens():
    """hw.dot reads "nvfp4" without importing golden.nvfp4 (which loads numba): the same
    name and test as golden's."""
    import golden.nvfp4
    from hw.dot.nvfp4_scale import NVFP4_ELEMENTS, NVFP4_NAME, is_nvfp4

    assert NVFP4_NAME == golden.nvfp4.NAME
    assert golden.element_format(NVFP4_ELEMENTS) == stim.FP4
    for name in ("nvfp4", " NVFP4", "fp4_e2m1", "mxfp4", None, 4):
        assert is_nvfp4(name) == golden.nvfp4.is_nvfp4(name), name


def test_scale_fields_products_for_every_significand_pair():
    """``scale_fields``' ``p1`` and ``p3`` are ``sig_a * sig_b`` and ``3 * sig_a * sig_b``
    for all 16 x 16 UE4M3 significand pairs (bytes 0x00..0x0F: subnormal 0..7, normal 8..15),
    against Python's integer product; the exponents are ``max(e, 1) + 117``."""
    from amaranth.hdl import Module, Signal
    from amaranth.sim import Simulator

    from hw.dot.nvfp4_scale import UE4M3_EXP_OFFSET, scale_fields

    m = Module()
    a, b = Signal(8), Signal(8)
    fields = scale_fields(m, a, b, "s")
    p1, p3, exp_a = Signal(8), Signal(10), Signal(8)
    m.d.comb += [p1.eq(fields["p1"]), p3.eq(fields["p3"]), exp_a.eq(fields["exp_a"])]
    seen = []

    async def bench(ctx):
        for x in range(16):
            for y in range(16):
                ctx.set(a, x)
                ctx.set(b, y)
                seen.append((x, y, ctx.get(p1), ctx.get(p3), ctx.get(exp_a)))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert len(seen) == 256
    for x, y, got1, got3, got_exp in seen:
        assert (got1, got3) == (x * y, 3 * x * y), (x, y)
        assert got_exp == 1 + UE4M3_EXP_OFFSET, x  # e = x >> 3 is 0 or 1


def test_scale_halves_multiples_and_signed_lanes_for_every_significand_pair():
    """The exact step's split of the scale product: ``scale_fields(halves=True)``' first-level
    sums, added by ``scale_multiples``, are ``sig_a * sig_b`` and ``3 * sig_a * sig_b`` for all
    16 x 16 UE4M3 significand pairs; ``signed_scaled_significand`` of each of the four e2m1
    significands and both signs is ``(-1)^negate * sig * P`` (11-bit two's complement)."""
    from amaranth.hdl import Module, Signal, signed
    from amaranth.sim import Simulator

    from hw.dot.nvfp4_scale import scale_fields, scale_multiples, signed_scaled_significand
    from hw.nets import wire

    m = Module()
    a, b, sig, neg = Signal(8), Signal(8), Signal(2), Signal()
    halves = wire(m, {k: v for k, v in scale_fields(m, a, b, "s", halves=True).items()
                      if k in ("p1", "p3")}, "halves")
    mult = scale_multiples(m, halves, "sum")
    p1, p3, lane = Signal(8), Signal(10), Signal(signed(11))
    m.d.comb += [p1.eq(mult["p1"]), p3.eq(mult["p3"]),
                 lane.eq(signed_scaled_significand(sig, neg, mult["p1"], mult["p3"]))]
    seen = []

    async def bench(ctx):
        for x in range(16):
            for y in range(16):
                ctx.set(a, x)
                ctx.set(b, y)
                for v in range(4):
                    for n in (0, 1):
                        ctx.set(sig, v)
                        ctx.set(neg, n)
                        seen.append((x, y, v, n, ctx.get(p1), ctx.get(p3), ctx.get(lane)))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert len(seen) == 256 * 8
    for x, y, v, n, got1, got3, got_lane in seen:
        assert (got1, got3) == (x * y, 3 * x * y), (x, y)
        assert got_lane == (-1) ** n * v * x * y, (x, y, v, n)


def test_scale_multiples_with_nine_for_every_significand_pair():
    """The ``tcgen05.mxf4nvf4`` step's multiples: ``scale_fields(halves=True, multiples=(1, 3,
    9))`` then ``scale_multiples`` give ``n * sig_a * sig_b`` (integer products) for n = 1, 3, 9
    and all 16 x 16 UE4M3 significand pairs."""
    from amaranth.hdl import Module, Signal
    from amaranth.sim import Simulator

    from hw.dot.nvfp4_scale import scale_fields, scale_multiples
    from hw.nets import wire

    multiples = (1, 3, 9)
    names = [f"p{n}" for n in multiples]
    m = Module()
    a, b = Signal(8), Signal(8)
    fields = scale_fields(m, a, b, "s", halves=True, multiples=multiples)
    halves = wire(m, {k: fields[k] for k in names}, "halves")
    mult = scale_multiples(m, halves, "sum", multiples)
    outs = {k: Signal(12, name=k) for k in names}
    m.d.comb += [outs[k].eq(mult[k]) for k in names]
    seen = []

    async def bench(ctx):
        for x in range(16):
            for y in range(16):
                ctx.set(a, x)
                ctx.set(b, y)
                seen.append((x, y, [ctx.get(outs[k]) for k in names]))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert len(seen) == 256
    for x, y, got in seen:
        assert got == [n * x * y for n in multiples], (x, y)
