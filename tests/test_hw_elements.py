"""hw.elements' decoder and encoder against the spec values of tests/oracle: every code of
every format."""

from __future__ import annotations

import itertools
from fractions import Fraction

import oracle
import pytest
from amaranth_drive import simulate_comb

import golden


# -- the element decoder and encoder against the spec values of tests/oracle -------------
@pytest.mark.parametrize("name", list(oracle.FORMATS))
def test_decode_element_every_code(name):
    from amaranth.hdl import Module, Signal

    from hw.elements import decode_element

    spec = oracle.FORMATS[name]
    # the unit of the significand: 2^-6 for int8 (contract: n * 2^-6), else 2^(1-bias-mbits)
    lsb_exp = -6 if spec.is_int else 1 - spec.bias - spec.mbits
    m = Module()
    code = Signal(spec.bits)
    el = decode_element(m, code, golden.element_format(name), "el")
    outs = [el.neg, el.sig, el.shift, el.zero, el.nan, el.inf]
    got = simulate_comb(m, [code], outs, [(c,) for c in range(1 << spec.bits)])
    for c, (neg, sig, shift, zero, nan, inf) in zip(range(1 << spec.bits), got, strict=True):
        want_neg, want = oracle.decode_code(spec, c)
        assert (nan, inf) == (int(want is oracle.NAN), int(want is oracle.INF)), hex(c)
        if want in (oracle.NAN, oracle.INF):
            assert neg == int(want_neg), hex(c)
            continue
        assert Fraction(sig) * Fraction(2) ** (shift + lsb_exp) == want, hex(c)
        assert zero == int(want == 0), hex(c)
        if want:
            assert neg == int(want_neg), hex(c)


def test_signed_significand_every_int8_code():
    """int8's signed significand, read from the code and negated or not, times 2^shift (the
    decoder's) is the spec value of every code in lsb units, with the sign flipped where
    negated; only two's complement formats have one."""
    from amaranth.hdl import Module, Signal

    from hw.elements import decode_element, signed_significand

    spec, fmt = oracle.FORMATS["int8"], golden.element_format("int8")
    m = Module()
    code, negate = Signal(fmt.bits), Signal()
    signed_sig = signed_significand(code, fmt, negate)
    assert len(signed_sig) == fmt.mbits + 2 and signed_sig.shape().signed
    el = decode_element(m, code, fmt, "el")
    cases = list(itertools.product(range(1 << fmt.bits), (0, 1)))
    got = simulate_comb(m, [code, negate], [signed_sig, el.shift], cases)
    for (c, neg), (sig, shift) in zip(cases, got, strict=True):
        want_neg, want = oracle.decode_code(spec, c)
        assert Fraction(sig * 2 ** shift, 64) == (-want if want_neg ^ neg else want), hex(c)
    with pytest.raises(ValueError, match="not a two's complement"):
        signed_significand(code, golden.element_format("fp8_e4m3"), negate)


@pytest.mark.parametrize("name", list(oracle.FORMATS))
def test_encode_element_inverts_the_decoder(name):
    """Every (sign, magnitude) of a finite nonzero spec value encodes to its code."""
    from amaranth.hdl import Module, Signal

    from hw.elements import encode_element

    spec = oracle.FORMATS[name]
    fmt = golden.element_format(name)
    m = Module()
    neg, mag = Signal(), Signal(fmt.bits)
    code = encode_element(m, neg, mag, fmt, "enc")
    mags, codes = oracle.value_table(name)
    cases = [(s, c) for s in (0, 1) for v, c in zip(mags, codes, strict=True) if v]
    got = simulate_comb(m, [neg, mag], [code], cases)
    for (s, c), (out,) in zip(cases, got, strict=True):
        assert oracle.decode_code(spec, out) == (bool(s), oracle.decode_code(spec, c)[1])
