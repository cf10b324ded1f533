"""The element codec of the MX units: element code <-> sign and magnitude.

Every element format is read as sign-magnitude ``E.M`` (:class:`golden.ElementFormat`'s
``ebits``/``mbits``/``bias``): an intN's two's complement codes become an N-bit magnitude
0..2^(N-1) read as "E1M(N-2)" (exponent field 0..2, 2^(N-1) decodes as ``2^(N-2) << 1``; see
the module doc of :mod:`golden.formats`), so one decoder and one encoder serve every format.

* :func:`decode_element` -- code -> sign, magnitude code, significand, shift, zero/NaN/Inf
  (the dequantizer, the dot unit).
* :func:`signed_significand` -- a two's complement code -> ``(-1)^neg * sig``, without its
  magnitude (the dot unit's wider product factor).
* :func:`element_binade` -- magnitude code -> ``floor(log2(value))``, as a table (the
  dequantizer's result exponent).
* :func:`encode_element` -- sign and magnitude code -> code (the quantizer's output).
* :func:`block_layout` -- one MX block (E8M0 scale and element codes) as a payload layout: the
  quantizer's output, the dequantizer's input, each operand of the dot units.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data

from golden.formats import ElementFormat

from .arith import wire

__all__ = ["decode_element", "signed_significand", "element_binade", "encode_element",
           "block_layout"]


def decode_element(m: Module, code, fmt: ElementFormat, name: str):
    """Decode one element code: ``value = (-1)^neg * sig * 2^(shift + fmt.lsb_exp)``.

    Parameters
    ----------
    m : Module
    code : Value
        ``fmt.bits`` bits.
    fmt : golden.ElementFormat
    name : str
        Prefix of the generated signals.

    Returns
    -------
    View
        ``neg`` (sign bit), ``mag`` (magnitude code, ``fmt.bits - 1`` bits; intN: N bits,
        0..2^(N-1)), ``sig`` (significand ``normal.M``, ``mbits + 1`` bits, not normalized for a
        subnormal), ``shift`` (``max(E, 1) - 1``: the binade above the lowest one),
        ``zero``, ``nan`` and ``inf`` (the format's special magnitude codes; intN has none).
    """
    code = Value.cast(code)
    neg = code[fmt.bits - 1]
    if fmt.twos_complement:  # |n|, 0..2^(N-1) (the most negative code's is 2^(N-1))
        mag = wire(m, Mux(neg, (-code.as_signed()).as_unsigned()[:fmt.bits], code),
                   f"{name}_mag")
    else:
        mag = wire(m, code[:fmt.bits - 1], f"{name}_mag")
    nan = Const(0, 1)
    for c in fmt.nan_codes:
        nan = nan | (mag == c)
    inf = Const(0, 1)
    for c in fmt.inf_codes:
        inf = inf | (mag == c)
    e = mag[fmt.mbits:]
    normal = e.any()
    return wire(m, {
        "neg": neg, "mag": mag, "sig": Cat(mag[:fmt.mbits], normal),
        "shift": Mux(normal, e - 1, 0).as_unsigned()[:len(e)],
        "zero": ~mag.any(), "nan": nan, "inf": inf,
    }, name)


def signed_significand(code, fmt: ElementFormat, negate):
    """``(-1)^negate * (-1)^neg * sig`` of a two's complement code (:func:`decode_element`'s
    ``sig`` with its sign, negated where ``negate``), ``fmt.mbits + 2`` bits, signed.

    Read from the code itself, which is already its signed significand, rather than negated
    back from the magnitude: one carry chain after the code. The most negative code,
    ``-2^(bits-1)``, is the exception: its magnitude lies one binade above the significand
    (``sig = 2^mbits``, ``shift = 1``), so it gives ``-+2^mbits``, chosen after the chain
    (where its compare, beside the chain, costs no LUT level) rather than before it.
    """
    if not fmt.twos_complement:
        raise ValueError(f"{fmt.name} is not a two's complement format")
    code, width = Value.cast(code), fmt.mbits + 2
    most_negative = code == 1 << (fmt.bits - 1)
    signed_code = code.as_signed()
    return Mux(most_negative, Mux(negate, Const(1 << fmt.mbits, signed(width)),
                                  Const(-1 << fmt.mbits, signed(width))),
               Mux(negate, -signed_code, signed_code)[:width].as_signed())


def _floor_log2(v) -> int:
    """``floor(log2(v))`` of a positive Fraction, exactly."""
    n, d = v.numerator, v.denominator
    e = n.bit_length() - d.bit_length()
    return e - 1 if (n << max(0, -e)) < (d << max(0, e)) else e


def element_binade(m: Module, mag, fmt: ElementFormat, name: str):
    """``floor(log2(value))`` of a non-zero magnitude code, as a table over the codes.

    The same exponent as ``shift + lsb_exp`` plus the normalized significand's width, but as
    LUT logic straight from the code instead of a leading-zero count and a subtractor in
    series (a carry chain on the path).  The table is derived from the format's values
    (:meth:`golden.ElementFormat.magnitude_value`).  A zero magnitude gets ``lsb_exp - 1``
    (below every non-zero value); the NaN and Inf codes get the binade their bits would have.

    Returns
    -------
    Signal
        Signed, ``lsb_exp - 1 .. floor(log2(largest magnitude))``.
    """
    # intN: magnitudes 1..2^(N-1) (the most negative code's is 2^(N-1))
    top = 1 << (fmt.bits - 1)
    mags = range(1, top + 1) if fmt.twos_complement else range(1, top)
    table = {c: _floor_log2(fmt.magnitude_value(c)) for c in mags}
    lo, hi = fmt.lsb_exp - 1, max(table.values())
    binade = Signal(range(lo, hi + 1), name=name)
    with m.Switch(mag):
        for t in sorted(set(table.values())):
            with m.Case(*(c for c, v in table.items() if v == t)):
                m.d.comb += binade.eq(t)
        with m.Default():
            m.d.comb += binade.eq(lo)
    return binade


def encode_element(m: Module, neg, mag, fmt: ElementFormat, name: str):
    """The code of sign ``neg`` and magnitude code ``mag`` (< 2^(bits-1); intN: 0..2^(N-1)-1):
    two's complement for intN, sign-magnitude otherwise (a zero magnitude keeps its sign
    there: the caller clears ``neg`` for +0)."""
    mag = Value.cast(mag)
    if fmt.twos_complement:
        code = Mux(neg, -mag, mag)[:fmt.bits]
    else:
        code = Cat(mag[:fmt.bits - 1], neg)
    return wire(m, code, name)


def block_layout(fmt: ElementFormat, block_size: int) -> data.StructLayout:
    """One MX block: ``scale`` (E8M0 code) and ``codes`` (``block_size`` element codes,
    element i at bits ``[bits*i, bits*(i+1))``)."""
    return data.StructLayout({
        "scale": unsigned(8),
        "codes": data.ArrayLayout(unsigned(fmt.bits), block_size),
    })
