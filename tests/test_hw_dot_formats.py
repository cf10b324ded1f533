"""The dot units for element formats beyond the six of OCP: ExMy of every convention and
two's complement intN, on either side.

The formats are built by :func:`element_format`, the tests' one use of
:class:`golden.formats.ElementFormat`'s constructor.  Each pair's widths are checked against
exact Fraction arithmetic (``tests/oracle``'s decoder), each unit elaborates to RTLIL, and
three pairs (finite, ieee, intN x intM) are simulated against golden and exact Fractions.
"""

from __future__ import annotations

import numpy as np
import oracle
import pytest
from amaranth.back import rtlil
from amaranth_drive import dot_beat, simulate_stream

import golden
from golden.formats import ElementFormat
from hw.dot import DotGeometry, MXDot, MXDotGeneral, units_max

CONVENTIONS = ("finite", "fn", "ieee")


def element_format(ebits: int, mbits: int = 0, convention: str = "finite",
                   bias: int | None = None) -> ElementFormat:
    """``e<ebits>m<mbits>`` with the special values of ``convention`` (``finite``: none;
    ``fn``: the all-ones magnitude is NaN; ``ieee``: the top exponent is Inf and NaN), bias
    ``2^(E-1) - 1`` unless given; ``convention="int"``: the two's complement int``ebits``,
    value ``n * 2^-(N-2)``."""
    if convention == "int":
        return ElementFormat.integer(ebits)
    return ElementFormat(ebits, mbits, convention, bias)


def oracle_format(fmt: ElementFormat) -> oracle.Fmt:
    """``fmt`` restated for the Fraction oracle from its defining parameters alone."""
    if fmt.twos_complement:
        return oracle.int_spec(fmt.bits)
    return oracle.spec(fmt.ebits, fmt.mbits, fmt.convention, fmt.bias)


def oracle_units_max(fmt: ElementFormat) -> int:
    """The largest finite magnitude in units of the lsb, from the oracle's decoder (for
    intN: ``2^(N-1)``, the most negative code's)."""
    return oracle.units_max(oracle_format(fmt))


E3M3, E2M2, E4M2, E5M1 = (element_format(e, m) for e, m in ((3, 3), (2, 2), (4, 2), (5, 1)))
E4M3_IEEE, E3M4_IEEE = element_format(4, 3, "ieee"), element_format(3, 4, "ieee")
E2M3_FN, E1M2, E2M1 = element_format(2, 3, "fn"), element_format(1, 2), element_format(2, 1)
INT4, INT2 = element_format(4, convention="int"), element_format(2, convention="int")
INT5, INT7 = element_format(5, convention="int"), element_format(7, convention="int")
INT8 = golden.element_format("int8")

#: Pairs that no OCP configuration has: every convention, code widths 3 to 8, intN against
#: floats and ints of another width.
PAIRS = [(E3M3, E2M2), (E5M1, INT4), (E4M3_IEEE, E3M4_IEEE), (E4M2, E2M3_FN),
         (INT4, INT8), (E1M2, INT2), (element_format(6, 1), element_format(2, 1, "fn")),
         (E3M4_IEEE, E3M4_IEEE), (INT5, INT5), (element_format(1, 6), INT7)]


def test_the_helper_builds_the_ocp_formats():
    """element_format gives the six OCP formats' numeric fields (names aside)."""
    for got, name in ((element_format(4, 3, "fn"), "fp8_e4m3"),
                      (element_format(5, 2, "ieee"), "fp8_e5m2"),
                      (element_format(3, 2), "fp6_e3m2"), (element_format(2, 3), "fp6_e2m3"),
                      (element_format(2, 1), "fp4_e2m1"), (element_format(8, convention="int"),
                                                           "int8")):
        want = golden.element_format(name)
        fields = ("bits", "ebits", "mbits", "bias", "emax", "max_code", "nan_codes",
                  "inf_codes", "twos_complement")
        assert [getattr(got, f) for f in fields] == [getattr(want, f) for f in fields], name


@pytest.mark.parametrize("fmt_a,fmt_b", PAIRS, ids=lambda f: f.name)
def test_widths_hold_the_largest_block_sum(fmt_a, fmt_b):
    """units_max and the sum width from exact Fractions; the frame bound holds the frame's
    extremes (docs/dot.md's frame, computed here from the scale and c ranges)."""
    units = [oracle_units_max(fmt_a), oracle_units_max(fmt_b)]
    assert [units_max(fmt_a), units_max(fmt_b)] == units
    for k in (2, 32, 64):
        g = DotGeometry(fmt_a, fmt_b, k)
        assert g.sum_bits == (k * units[0] * units[1]).bit_length()
        n = g.window_bits
        a_t = [sa + sb + g.lsb_exp - 254 - 25 for sa in (0, 255) for sb in (0, 255)]
        a_c = [-126 - (n - 3), 255 - 127 - (n - 3)]
        extremes = [*a_t, *a_c, *(x - y for x in a_t for y in a_c),
                    *(max(x, y) + n + 124 for x in a_t for y in a_c)]
        assert max(abs(v) for v in extremes) < 1 << (g.frame_bits - 1)
        assert g.code_product_bits == fmt_a.bits + fmt_b.bits


@pytest.mark.parametrize("fmt_a,fmt_b", PAIRS, ids=lambda f: f.name)
def test_mxdot_elaborates(fmt_a, fmt_b):
    """MXDot converts to RTLIL for each pair (k = 4, every boundary registered), its ports
    as wide as the formats' codes."""
    dut = MXDot(fmt_a, fmt_b, block_size=4)
    text = rtlil.convert(dut, name=dut.module_name)
    assert f"module \\{dut.module_name}" in text
    assert len(dut.i.payload.a.codes[0]) == fmt_a.bits
    assert len(dut.i.payload.b.codes[0]) == fmt_b.bits
    assert dut.parameters["window_bits"] == DotGeometry(fmt_a, fmt_b, 4).window_bits


def test_mxdot_general_elaborates():
    dut = MXDotGeneral(E4M3_IEEE, INT4, block_size=2, contexts=2, stages=3)
    assert f"module \\{dut.module_name}" in rtlil.convert(dut, name=dut.module_name)


def _random_blocks(rng, fmt_a, fmt_b, k: int, count: int):
    """``count`` block pairs (a codes, sa, b codes, sb, c bits): every code equally likely;
    scales near the bias (T near c, cancellations, rounding) in half of them and anywhere
    in the rest, NaN in one of 50; c zero, near T, or any fp32 bit pattern, -Inf in one of
    50; A and c zero in one of 50."""
    out = []
    for i in range(count):
        a = rng.integers(0, 1 << fmt_a.bits, k)
        b = rng.integers(0, 1 << fmt_b.bits, k)
        if i % 2:
            sa, sb = rng.integers(0, 256, 2)
        else:
            sa, sb = rng.integers(117, 138, 2)
        if i % 50 == 1:  # a NaN scale
            sa = 255
        kind = i % 3
        if i % 50 == 7:  # an infinite c
            c = 0xFF800000
        elif kind == 0:
            c = 0
        elif kind == 1:  # an fp32 of exponent near T's
            c = int(rng.integers(0, 2)) << 31 | int(rng.integers(100, 156)) << 23 \
                | int(rng.integers(0, 1 << 23))
        else:
            c = int(rng.integers(0, 1 << 32))
        if i % 50 == 3:  # T = 0 and c = 0: +0
            a, c = np.zeros_like(a), 0
        out.append((a, int(sa), b, int(sb), c))
    return out


def _simulate(dut, blocks):
    """Run ``blocks`` through ``dut`` in the Amaranth simulator, one per clock (a stall would
    miss the run's count); return the fp32 result bits of each, in order."""
    return simulate_stream(dut, [dot_beat(dut, *block) for block in blocks],
                           lambda ctx: ctx.get(dut.o.payload.result))


@pytest.mark.parametrize("fmt_a,fmt_b,k", [(E3M3, E2M2, 8), (E4M3_IEEE, E3M4_IEEE, 4),
                                           (INT5, INT7, 4)],
                         ids=lambda v: getattr(v, "name", str(v)))
def test_mxdot_matches_golden_and_the_fraction_oracle(fmt_a, fmt_b, k, rng):
    """300 random block pairs through MXDot (3 stages) in the Amaranth simulator: every
    result bit-exact against golden.dot_blocks and against exact Fractions (the oracle's
    dot_block, from the formats' defining parameters).  int5 x int7: seven partial
    products from int7's signed codes, the odd last one with its negation's carry."""
    blocks = _random_blocks(rng, fmt_a, fmt_b, k, 300)
    got = _simulate(MXDot(fmt_a, fmt_b, block_size=k, stages=3), blocks)
    a = np.array([blk[0] for blk in blocks], np.uint8)[:, None, :]
    b = np.array([blk[2] for blk in blocks], np.uint8)[:, None, :]
    sa = np.array([blk[1] for blk in blocks], np.uint8)[:, None]
    sb = np.array([blk[3] for blk in blocks], np.uint8)[:, None]
    c = np.array([blk[4] for blk in blocks], np.uint32).view(np.float32)
    want = golden.dot_blocks(a, sa, b, sb, fmt_a, fmt_b, acc=c).view(np.uint32)
    mismatches = [(i, hex(g), hex(int(w))) for i, (g, w) in enumerate(zip(got, want,
                                                                           strict=True))
                  if g != int(w)]
    assert not mismatches, f"{len(mismatches)} of {len(blocks)} differ from golden: " \
                           f"{mismatches[:5]}"
    for i, (ac, sa_, bc, sb_, cb) in enumerate(blocks):
        want = oracle.dot_block(oracle_format(fmt_a), [int(x) for x in ac], sa_,
                                oracle_format(fmt_b), [int(x) for x in bc], sb_, cb)
        assert got[i] == want, (i, hex(got[i]), hex(want))
    # the random blocks reached every kind of result
    kinds = {"nan" if r & 0x7FFFFFFF > 0x7F800000 else "inf" if r & 0x7FFFFFFF == 0x7F800000
             else "zero" if r & 0x7FFFFFFF == 0 else
             "subnormal" if r & 0x7F800000 == 0 else "normal" for r in got}
    assert {"nan", "inf", "normal", "zero"} <= kinds, kinds


def _every_format():
    """Every member of the family: each ExMy of 2 to 8 code bits in each convention the
    format type admits (golden.ElementFormat refuses, e.g., an ieee format without a mantissa
    bit), and every intN, N = 2..8."""
    for bits in range(2, 9):
        for ebits in range(1, bits):
            for convention in ("finite", "fn", "ieee"):
                try:
                    yield element_format(ebits, bits - 1 - ebits, convention)
                except ValueError:
                    continue
        yield element_format(bits, convention="int")


@pytest.mark.slow
@pytest.mark.parametrize("fmt", list(_every_format()), ids=lambda f: f.name)
def test_mxdot_elaborates_for_every_format(fmt):
    """MXDot (k = 2) converts to RTLIL for every member of the family against itself and
    against e2m1 (77 formats, about 2 s each)."""
    for partner in (fmt, E2M1):
        dut = MXDot(fmt, partner, block_size=2)
        assert f"module \\{dut.module_name}" in rtlil.convert(dut, name=dut.module_name)
