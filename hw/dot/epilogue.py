"""The NVFP4 dot's epilogue ``f(alpha * sum)``: one correctly rounded fp32 multiply after the
chained block steps (``docs/numerics.md`` section 7, "Dot product"; golden's
:func:`golden.nvfp4_dot.epilogue`), as sections after the fused step's in MXDotGeneral's
pipeline (``levels=2``).

``alpha`` is the run-time fp32 field of a run's last beat: torchao's and TransformerEngine's
``f(Pa * Pb)`` of the two tensor scales, or any fp32 (IEEE arithmetic: NaN in, NaN out;
``0 * Inf`` NaN; the sign of ``alpha`` in the result).  Sections:

* ``efields`` -- ``x``'s fields (``alpha``'s come decoded, :func:`operand_fields`), both
  operands' specials and the exponents' sum (the product's lsb exponent plus 300);
* ``emul_0`` .. ``emul_3`` -- the exact 24 x 24-bit significand product, a tree of carry
  chains (:func:`hw.multiply.pair_sum_sections`), :data:`PRODUCT_LEVELS_PER_SECTION` levels
  in each (one in ``emul_0``, beside the partial products), and beside it the specials
  combined and both significands' trailing zeros, counted in 8-bit parts
  (:func:`hw.arith.trailing_zero_parts`, joined in ``ezeros``);
* ``ezeros``, ``ecoarse``, ``ecount``, ``enorm`` -- the product normalized: its 16-bit
  parts' zero flags, then a shift by 0, 16 or 32 bits (its top 16 bits non-zero after it),
  the leading zeros of those 16 bits, then their shift and the product's binade above fp32's
  lowest normal one;
* ``eposition``, ``ealign``, ``eround`` -- onto the fp32 grid and rounded once (RNE,
  subnormal results, overflow to Inf) by the project's rounder, :class:`hw.rounding.Grid`
  and :func:`hw.rounding.round_aligned`, as the NVFP4 dequantizer's ``f(P * s)``; the
  sticky bit compares the product's trailing zeros (``tz(sig_a) + tz(sig_b)``, plus the
  normalizing shift), as :meth:`hw.rounding.Grid.sticky_limit` registered at ``eposition``,
  with the shift amount beside the shifter; products whose top bit lies below 2^-150 are
  flagged zero there (they round to +-0).

The block steps' result (``raw``) rides along unchanged: the accumulation contexts chain it,
not the epilogue's.  NaN results are 0x7FC00000, or ``nan_bits`` (0x7FFFFFFF after the
``tcgen05.mxf4nvf4`` steps, as golden's epilogue writes a GPU result's NaN).
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Mux, Value

from golden.formats import FP32

from ..arith import (
    join_trailing_zero_parts,
    leading_zeros,
    shift_left_parts,
    trailing_zero_parts,
)
from ..dequantizer import align_parts
from ..multiply import pair_sum_sections, partial_products
from ..placement import Estimate
from ..rounding import RNE, Grid, overflows, round_aligned

__all__ = ["EPILOGUE_ESTIMATES", "PRODUCT_LEVELS_PER_SECTION", "SHIFT_COPIES",
           "epilogue_sections", "operand_fields", "build_epilogue"]

_SIG = FP32.mbits + 1  # 24
_EMIN = 1 - FP32.bias  # -126
_LSB_MIN = _EMIN - FP32.mbits  # -149, a subnormal's lsb
_TOP_MIN = _LSB_MIN - 1  # -150: the lowest top bit of a product that can round to non-zero
_LSB_BIAS = 2 * (FP32.bias + FP32.mbits)  # 300: a product's lsb exponent is exp_a + exp_b - 300
_TZ_PARTS = 3  # a significand's trailing zeros counted in 8-bit parts (trailing_zero_parts)

#: Levels of the product's tree of carry chains (24 rows: five levels) in each ``emul_<j>``:
#: one in the first, beside the partial products' selection, then two, then one each (the
#: last two levels in one section, two 49-bit chains, were the critical path in context at
#: 2 of 3 seeds, 5.0 ns).
PRODUCT_LEVELS_PER_SECTION = (1, 2, 1, 1)
_PRODUCT_SECTIONS = tuple(f"emul_{j}" for j in range(len(PRODUCT_LEVELS_PER_SECTION)))

#: Registers of each shift amount, the coarse shift at ``ezeros``, the fine leading-zero count
#: at ``ecount`` and the drop at ``eposition``, each driving a part of its shifter
#: (:func:`hw.arith.shift_left_parts`, :func:`hw.dequantizer.align_parts`), as the NVFP4
#: dequantizer's ``TENSOR_COPIES``.
SHIFT_COPIES = 2

#: The epilogue's sections (ns, ECP5 speed 8), in datapath order.
EPILOGUE_ESTIMATES = {
    "efields": Estimate(3.0, "x's fields (an 8-bit OR for its hidden bit) and specials, the "
                        "exponents' sum (estimate; with the specials combined and a "
                        "three-operand add here, 5.0-5.6 ns at 3 seeds)"),
    "emul_0": Estimate(3.5, "the partial products' selection (an AND of each row) and one "
                      "level of the tree of carry chains: one 49-bit chain; beside it the "
                      "specials combined and the trailing zeros of 8-bit parts (estimate; "
                      "with two tree levels it was the critical path, 6.0 ns over 25 cells, "
                      "seeds 1-2)"),
    "emul_1": Estimate(4.5, "two levels of the tree of carry chains (estimate)"),
    "emul_2": Estimate(3.0, "the tree's fourth level, one 49-bit carry chain (estimate)"),
    "emul_3": Estimate(3.0, "the tree's last level, one 49-bit carry chain (estimate)"),
    "ezeros": Estimate(3.0, "the zero flags of the product's top, middle and low 16 bits "
                       "and the shift amount from them (estimate; with the shift in one "
                       "section, the critical path at 3 of 3 seeds, 4.9-5.5 ns over 5 cells)"),
    "ecoarse": Estimate(3.0, "the shift by 0, 16 or 32 bits, two copies of its amount "
                        "(estimate)"),
    "ecount": Estimate(3.5, "the leading-zero count of the top 16 bits (estimate; the "
                       "48-bit count in one section was the critical path, 6.3 ns over 7 "
                       "cells, seed 1)"),
    "enorm": Estimate(3.5, "the 4-bit normalizing shift in two parts and the product's binade "
                      "(estimate)"),
    "eposition": Estimate(3.5, "the binade and the shift amount (no clamp: products below "
                          "2^-150 flagged zero by a compare beside it), the OR of the product's "
                          "23 bits below fp32's round bit, the 26 bits' trailing zeros (a "
                          "7-bit subtract and compare; estimate; the clamped shift amount was "
                          "the critical path, 5.5 ns over 15 cells, 3.6 ns of it routing, seeds "
                          "2-3)"),
    "ealign": Estimate(3.5, "the 26-bit shift onto the fp32 grid and beside it the sticky bit, "
                       "a 7-bit compare of the trailing zeros with the shift amount (estimate; "
                       "its sticky as the OR of the shifted-out bits was the critical path, "
                       "6.0 ns over 6 cells, 4.5 ns of it routing, seed 3)"),
    "eround": Estimate(3.5, "the increment, overflow and the specials (estimate)"),
}


def epilogue_sections() -> dict[str, float]:
    """The epilogue's sections, name -> estimated delay (ns), in datapath order."""
    return {name: e.ns for name, e in EPILOGUE_ESTIMATES.items()}


def operand_fields(bits) -> dict:
    """An fp32 operand of the epilogue's product as :func:`build_epilogue` reads it: ``sig``
    (24 bits, the hidden bit set where normal), ``exp`` (the biased exponent, 1 where
    subnormal), ``nan``, ``inf``, ``zero`` and ``neg``."""
    bits = Value.cast(bits)
    e, f = bits[FP32.mbits:31], bits[:FP32.mbits]
    special = e.all()
    normal = e.any()
    # max(e, 1): only the lsb depends on the exponent's OR (the add behind it is a
    # critical path in context, 5.3 ns with the OR's mux on every bit)
    return {"sig": Cat(f, normal), "exp": Cat(e[0] | ~normal, e[1:]),
            "nan": special & f.any(), "inf": special & ~f.any(), "zero": ~bits[:31].any(),
            "neg": bits[31]}


def _normalize(scope, q, tz, keep: dict, lsb):
    """Sections ``ezeros``, ``ecoarse``, ``ecount``, ``enorm``: the 48-bit product ``q`` (its
    lsb's exponent plus :data:`_LSB_BIAS` ``lsb``, unsigned; its trailing zeros ``tz`` where
    non-zero) normalized; returns the view after ``enorm``: ``keep``'s fields, ``sig`` (the
    top bit set, or zero), ``tz`` (its trailing zeros, where non-zero), ``above`` and
    ``below`` (the top bit's exponent above fp32's lowest normal one, and its negation) and
    ``zero``."""
    m, width = scope.module, 2 * _SIG

    def kept(s):
        return {k: None if v is None else getattr(s, k) for k, v in keep.items()}

    zeros = Cat(~q[32:].any(), ~q[16:32].any(), ~q[:16].any())  # top, middle, low 16 bits
    coarse = Mux(zeros[0], Mux(zeros[1], 2, 1), 0)  # the shift, in 16 bits
    s = scope.cross({**keep, "lsb": lsb, "tz": tz, "zero": zeros.all(), "q": q,
                     "coarse": coarse}, "ezeros")
    coarses = [s.coarse, *scope.replicate(coarse, "ezeros", SHIFT_COPIES - 1)]
    s = scope.cross({**kept(s), "lsb": s.lsb, "tz": s.tz, "zero": s.zero,
                     "q": shift_left_parts(s.q, [Cat(Const(0, 4), c) for c in coarses]),
                     "coarse": s.coarse}, "ecoarse")
    # the top 16 bits are non-zero unless q is: fewer than 16 leading zeros, 4 bits
    fine = leading_zeros(m, s.q[width - 16:], name=scope.name("epi_lz"))[:4]
    s = scope.cross({**kept(s), "lsb": s.lsb, "tz": s.tz, "zero": s.zero, "q": s.q,
                     "coarse": s.coarse, "fine": fine}, "ecount")
    fines = [s.fine, *scope.replicate(fine, "ecount", SHIFT_COPIES - 1)]
    lz = Cat(s.fine, s.coarse)  # 16 * coarse + fine
    return scope.cross({**kept(s), "sig": shift_left_parts(s.q, fines), "tz": s.tz + lz,
                        "above": s.lsb + (width - 1 - _EMIN - _LSB_BIAS) - lz,
                        "below": lz - (width - 1 - _EMIN - _LSB_BIAS) - s.lsb,
                        "zero": s.zero}, "enorm")


def build_epilogue(scope, x, alpha, side: dict, *, nan_bits: int = FP32.qnan_bits):
    """``f(alpha * x)`` of the fp32 bits ``x`` and ``alpha`` through the sections of
    :func:`epilogue_sections` in ``scope`` (a :class:`hw.pipeline.PipelineScope`); a NaN
    result is ``nan_bits`` (a positive NaN).  ``alpha`` comes as its
    :func:`operand_fields` (a dict or a ``data.View`` of them), computed where it enters the
    pipeline: its flags off ``efields``' path, which decodes ``x`` alone.

    ``side`` (values that ride along; a ``last`` field is the pipeline's hold flag,
    :meth:`hw.pipeline.Pipeline.hold_when`; None: nothing, a lane beside the one that carries
    them) must not hold ``raw``.  Returns the view after ``eround``: ``result`` (fp32 bits),
    ``raw`` (``x`` unchanged) and, with ``side``, ``side``."""
    m = scope.module

    def riding(s):
        return None if side is None else s.side

    width = 2 * _SIG
    a, b = operand_fields(x), alpha
    s = scope.cross({
        "raw": x, "side": side, "sig_a": a["sig"], "sig_b": b["sig"], "neg": a["neg"] ^ b["neg"],
        # the product's lsb exponent, (exp_a - 150) + (exp_b - 150), plus _LSB_BIAS: one
        # two-operand add (the constant folds into enorm's; with it here, this section's
        # path was four LUT levels and a carry chain)
        "lsb": a["exp"] + b["exp"],
        # the specials of each operand, combined after the boundary (with them, this
        # section's path was four and five LUT levels)
        "flags": [{f: v[f] for f in ("nan", "inf", "zero")} for v in (a, b)],
    }, "efields")
    rows = partial_products(Cat(s.sig_a, Const(0, 1)).as_signed(), s.sig_b)
    fa, fb = s.flags
    # the product's trailing zeros, tz(sig_a) + tz(sig_b), for the sticky bit, counted per
    # part here and joined where ezeros adds them
    ride = {"raw": s.raw, "side": riding(s), "neg": s.neg, "lsb": s.lsb,
            "nan": fa.nan | fb.nan | (fa.inf & fb.zero) | (fb.inf & fa.zero),
            "inf": fa.inf | fb.inf,
            "tz_a": trailing_zero_parts(m, s.sig_a, _TZ_PARTS, scope.name("epi_tz_a")),
            "tz_b": trailing_zero_parts(m, s.sig_b, _TZ_PARTS, scope.name("epi_tz_b"))}
    (lane,), s = pair_sum_sections(scope, [{"rows": rows}], ride, width=width + 1,
                                   names=[scope.name("epi_prod")], sections=_PRODUCT_SECTIONS,
                                   levels_per_section=PRODUCT_LEVELS_PER_SECTION)
    s = SimpleNamespace(**s)
    q = Value.cast(lane["prod"])[:width]
    tz = (join_trailing_zero_parts(s.tz_a, _SIG, _TZ_PARTS)
          + join_trailing_zero_parts(s.tz_b, _SIG, _TZ_PARTS))
    s = _normalize(scope, q, tz, {"raw": s.raw, "side": s.side, "nan": s.nan,
                                               "inf": s.inf, "neg": s.neg}, s.lsb)
    # fp32's 24 bits and the round bit; the 23 below them only as their OR (sticky), which
    # is exact for RNE wherever the grid's last place falls (at or above the 24th bit); the
    # trailing zeros of those 26 bits (0 where the OR is set, else the 48 bits' less 22) as
    # the sticky bit's limit, registered ahead of the shift's section.
    # A product whose top bit lies below 2^-150 rounds to +-0 (below half the smallest
    # subnormal): it is flagged zero, so the grid's shift amount needs no clamp (top_min)
    grid = Grid(sig_width=_SIG + 2, emin=_EMIN, mbits=FP32.mbits, top_min=_TOP_MIN)
    tiny = s.above < _TOP_MIN - _EMIN
    flags = {"nan": s.nan, "inf": s.inf, "neg": s.neg, "zero": s.zero | tiny}
    keep = {"raw": s.raw, "side": riding(s)}
    position = grid.position(m, s.above, s.below, name=scope.name("epi_rnd"))
    cut = width - _SIG - 1
    s = scope.cross({**keep, **flags, "sig": Cat(s.sig[:cut].any(), s.sig[cut:]),
                     "sticky_limit": grid.sticky_limit(Mux(s.tz < cut, 0, s.tz - (cut - 1))),
                     "position": position}, "eposition")
    drops = [s.position.drop, *scope.replicate(position.drop, "eposition", SHIFT_COPIES - 1)]
    flags = {f: getattr(s, f) for f in flags}
    keep = {"raw": s.raw, "side": riding(s)}
    s = scope.cross({**keep, **flags, "grid": align_parts(m, grid, s, drops,
                                                          scope.name("epi_rnd"),
                                                          trailing_zeros=False,
                                                          sticky_limit=True)}, "ealign")
    overflow = overflows(m, s.grid.binade, ebits=FP32.ebits, name=scope.name("epi_overflow"))
    code = round_aligned(m, s.grid, mbits=FP32.mbits, rounding=RNE,
                         name=scope.name("epi_rnd"))[:31]
    inf = s.inf | (overflow & ~s.zero)
    magnitude = Mux(s.nan, nan_bits & 0x7FFFFFFF,
                    Mux(inf, FP32.inf_bits, Mux(s.zero, 0, code)))
    result = Cat(magnitude[:31], s.neg & ~s.nan)
    if side is not None and "last" in side:
        scope.hold_when(s.side.last)
    return scope.cross({"result": result, "raw": s.raw, "side": riding(s)}, "eround")
