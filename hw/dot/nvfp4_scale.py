"""NVFP4's UE4M3 block scales in the fused step (``docs/numerics.md`` section 7, "Dot
product"; ``docs/dot.md``, NVFP4).

An E8M0 scale is a power of two: the step scales by an exponent add alone.  A UE4M3 byte
``s`` (``e = s >> 3``, ``m = s & 7``) is ``sig * 2^(max(e, 1) - 10)`` with a 4-bit significand
``sig = (e != 0) * 8 + m`` (not normalized for a subnormal scale 0x01..0x07; 0 for 0x00).  So

``T = (sum_i a_i*b_i) * sa * sb = (P * sum_i a_i*b_i) * 2^(xa + xb - 254)``

with ``P = sig_a * sig_b`` (at most 225, 8 bits) and ``x = max(e, 1) + 117``, an E8M0-like
exponent (118..132): the step's frame is then the MX one unchanged
(``aT = xa + xb + lsb - 254 - G``), and ``P`` enters as a factor of every lane's product.  The
wide factor of an fp4_e2m1 lane is its 2-bit significand (0..3), so ``sig * P`` is one of
``0, P, 2P, 3P``: ``P`` and ``3P`` once per block, their partial products' first level of
adds in ``decode`` (:func:`scale_fields`) and the last add in the section ``scale_product``
(:func:`scale_multiples`; the ``tcgen05.mxf4nvf4`` step has both in ``decode``), the choice
per lane in ``factors`` (:func:`scaled_significand`), where the lane's sign is applied to it;
no multiplier per lane.  The block sum is then ``P`` times wider
(:attr:`hw.dot.geometry.DotGeometry.scale_sig_max`), and the window with it.

``0x7F`` is NaN (the result is 0x7FC00000); a byte with bit 7 set is not a UE4M3 code and
reads as NaN too, as in golden's :meth:`golden.scale_format.ScaleFormat.table`.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal, Value

import golden

from ..nets import wire

__all__ = ["SCALE_FORMATS", "NVFP4_ELEMENTS", "NVFP4_NAME", "is_nvfp4", "UE4M3_EXP_OFFSET",
           "scale_sig_max", "ue4m3_fields", "SCALE_MULTIPLES", "scale_fields", "scale_multiples",
           "scaled_significand", "signed_scaled_significand", "SCALE_COPIES",
           "nvfp4_scale_format", "check_levels"]

#: The element format of nvfp4 (``--format nvfp4``: these codes with UE4M3 scales).
NVFP4_ELEMENTS = "fp4_e2m1"
#: The format name of NVFP4 (any case), as ``golden.nvfp4.is_nvfp4`` reads it: that module
#: imports golden's numba kernels, which generating Verilog does not load.
NVFP4_NAME = "nvfp4"


def is_nvfp4(fmt) -> bool:
    """True when ``fmt`` names NVFP4 (``"nvfp4"``, any case)."""
    return isinstance(fmt, str) and fmt.strip().lower() == NVFP4_NAME

#: The scale formats of the fused step: E8M0 (every MX format) and UE4M3 (NVFP4, fp4_e2m1
#: codes on both sides).
SCALE_FORMATS = ("e8m0", "ue4m3")

#: ``x = max(e, 1) + UE4M3_EXP_OFFSET``: a UE4M3 scale's exponent as an E8M0 code, so that
#: ``2^(max(e, 1) - 10) = 2^(x - 127) / 8`` and ``2^-3`` of each scale goes into ``P``'s lsb.
UE4M3_EXP_OFFSET = 117

#: Registers of ``P`` and ``3P`` at the ``scale_product`` boundary, each driving the multiple's
#: select of ``k / SCALE_COPIES`` lanes (:meth:`hw.pipeline.Pipeline.replicate`): from one
#: register, the route to the 16 lanes' selects was 1.2-1.6 ns of the ``scale_product`` ->
#: ``factors`` path (k = 16, seeds 1-3).
SCALE_COPIES = 2

_UE4M3 = golden.scale_format("ue4m3")
_SIG_BITS = 4


def scale_sig_max(scale_format: str) -> int:
    """The largest scale significand: 1 (E8M0, a power of two) or 15 (UE4M3, ``1.111b``)."""
    if scale_format not in SCALE_FORMATS:
        raise ValueError(f"unknown scale format {scale_format!r}; expected one of "
                         f"{', '.join(SCALE_FORMATS)}")
    return 1 if scale_format == "e8m0" else (1 << _SIG_BITS) - 1


def ue4m3_fields(scale) -> dict:
    """One UE4M3 byte's ``sig`` (4 bits), ``exp`` (``max(e, 1) + 117``, 8 bits) and ``nan``
    (0x7F, or bit 7 set)."""
    scale = Value.cast(scale)
    e = scale[3:7]
    normal = e.any()
    return {"sig": Cat(scale[:3], normal),
            "exp": (Mux(normal, e, 1) + UE4M3_EXP_OFFSET)[:8],
            "nan": (scale[:7] == _UE4M3.nan_code) | scale[7]}


#: The multiples of ``P`` a step forms once per block: ``P`` and ``3P`` (each fp4_e2m1 lane's
#: ``sig * P`` is one of ``0, P, 2P, 3P``); ``tcgen05.mxf4nvf4`` adds ``9P``
#: (:mod:`hw.dot.truncated_f4`: a lane's ``sig_a * sig_b * P``).
SCALE_MULTIPLES = (1, 3)

#: Names of the tables ``n * sig_a`` (``n`` > 1) in the generated Verilog.
_TABLE_NAMES = {3: "triple_a", 9: "times9_a"}


def _multiple_bits(n: int) -> int:
    """Bits of ``n * P`` (``P`` at most 225)."""
    return (n * ((1 << _SIG_BITS) - 1) ** 2).bit_length()


def scale_fields(m, a_scale, b_scale, name: str, *, halves: bool = False,
                 multiples: tuple = SCALE_MULTIPLES) -> dict:
    """Per block, from the two UE4M3 bytes: their E8M0-like exponents ``exp_a``, ``exp_b``,
    ``nan`` and the significand product's multiples ``p<n> = n * P`` for ``n`` in
    ``multiples`` (``p1`` 8 bits, ``p3`` 10, ``p9`` 11), as sums of partial products (not
    ``*``, which yosys maps to a DSP block).

    ``n * P`` is the sum of the partial products of ``n * sig_a`` (a table of ``sig_a``'s 4
    bits, one LUT per bit) and ``sig_b``: two levels of adds beside ``P``'s, not a third after
    them.  With ``halves``, each ``p<n>`` is the pair of first-level sums
    (``{"lo": rows 0 + 1, "hi": rows 2 + 3}``), their last add left to
    :func:`scale_multiples` (a section of its own after ``decode``)."""
    a, b = ue4m3_fields(a_scale), ue4m3_fields(b_scale)
    tables = {1: a["sig"]}
    for n in multiples:
        if n == 1:
            continue
        table = tables[n] = Signal((((1 << _SIG_BITS) - 1) * n).bit_length(),
                                   name=f"{name}_{_TABLE_NAMES[n]}")
        with m.Switch(a["sig"]):
            for v in range(1 << _SIG_BITS):
                with m.Case(v):
                    m.d.comb += table.eq(n * v)
    fields = {"exp_a": a["exp"], "exp_b": b["exp"], "nan": a["nan"] | b["nan"]}
    if halves:
        return {**fields, **{f"p{n}": _row_pair_sums(m, tables[n], b["sig"], f"{name}_p{n}")
                             for n in multiples}}
    return {**fields, **{f"p{n}": wire(m, _partial_product_sum(tables[n], b["sig"])
                                       [:_multiple_bits(n)], f"{name}_p{n}")
                         for n in multiples}}


def scale_multiples(m, halves, name: str, multiples: tuple = SCALE_MULTIPLES) -> dict:
    """``p<n> = n * P`` for ``n`` in ``multiples`` from :func:`scale_fields`' halves
    (``halves.p<n>``, each with ``lo`` and ``hi``): one add each."""
    return {f"p{n}": wire(m, (getattr(halves, f"p{n}").lo + getattr(halves, f"p{n}").hi)
                          [:_multiple_bits(n)], f"{name}_p{n}")
            for n in multiples}


def _rows(x, sig_b):
    """The partial products of ``x * sig_b`` (``sig_b`` 4 bits)."""
    return [Mux(sig_b[j], x << j, 0) for j in range(_SIG_BITS)]


def _partial_product_sum(x, sig_b):
    """``x * sig_b`` (``sig_b`` 4 bits) as two levels of adds of its partial products."""
    rows = _rows(x, sig_b)
    return (rows[0] + rows[1]) + (rows[2] + rows[3])


def _row_pair_sums(m, x, sig_b, name: str) -> dict:
    """The first level of :func:`_partial_product_sum`: rows 0 + 1 and rows 2 + 3, named."""
    rows = _rows(x, sig_b)
    return {"lo": wire(m, rows[0] + rows[1], f"{name}_lo"),
            "hi": wire(m, rows[2] + rows[3], f"{name}_hi")}


def scaled_significand(sig, p1, p3):
    """An fp4_e2m1 significand ``sig`` (2 bits, 0..3) times ``P``: ``0, P, 2P`` or ``3P``,
    10 bits unsigned."""
    sig = Value.cast(sig)
    if len(sig) != 2:
        raise ValueError(f"UE4M3 scales go with fp4_e2m1's 2-bit significands, not {len(sig)}")
    width = len(Value.cast(p3))
    return Mux(sig[1], Mux(sig[0], p3, Cat(Const(0, 1), p1)),
               Mux(sig[0], p1, 0))[:width]


def signed_scaled_significand(sig, negate, p1, p3):
    """:func:`scaled_significand` with a sign: ``(-1)^negate * sig * P``, 11 bits signed.

    The negation is a conditional complement and a carry in (``(mag ^ negate) + negate``): the
    complement goes into the LUT of the multiple's select before the carry chain, and the
    chain's sum is the result, with no select between ``-mag`` and ``mag`` after it (that
    select after the chain was on the ``scale_product`` -> ``factors`` path)."""
    mag = Cat(scaled_significand(sig, p1, p3), Const(0, 1))
    negate = Value.cast(negate)
    if len(negate) != 1:
        raise ValueError(f"negate is one bit, not {len(negate)}")
    return ((mag ^ negate.replicate(len(mag))) + negate)[:len(mag)].as_signed()


def nvfp4_scale_format(fmt_a, fmt_b, scale_formats) -> str:
    """``"ue4m3"`` for nvfp4 x nvfp4 (``fmt_b`` None: as ``fmt_a``), else ``"e8m0"``; a
    one-line error for nvfp4 against another format or in a unit without UE4M3 scales."""
    nv_a, nv_b = is_nvfp4(fmt_a), is_nvfp4(fmt_a if fmt_b is None else fmt_b)
    if not (nv_a or nv_b):
        return "e8m0"
    if not (nv_a and nv_b):
        raise ValueError(f"nvfp4 goes with nvfp4 only (nvfp4 x nvfp4), not {fmt_a} x {fmt_b}")
    if "ue4m3" not in scale_formats:
        raise ValueError("this unit takes MX formats (E8M0 scales), not nvfp4")
    return "ue4m3"


def check_levels(levels, scale_format: str) -> int:
    """MXDotGeneral's ``levels``: None -> 2 for nvfp4, else 1; 2 only for nvfp4."""
    if levels is None:
        return 2 if scale_format == "ue4m3" else 1
    if isinstance(levels, bool) or levels not in (1, 2):
        raise ValueError(f"levels must be 1 or 2, got {levels!r}")
    if levels == 2 and scale_format != "ue4m3":
        raise ValueError("levels=2 (the tensor scales' epilogue) is nvfp4's; MX formats have "
                         "levels=1")
    return levels
