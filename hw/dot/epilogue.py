"""The NVFP4 dot's epilogue ``f(alpha * sum)``: one correctly rounded fp32 multiply after the
chained block steps (``docs/numerics.md`` section 7, "Dot product"; golden's
:func:`golden.nvfp4_dot.epilogue`), as sections after the fused step's in MXDotGeneral's
pipeline (``levels=2``).

``alpha`` is the run-time fp32 field of a run's last beat: torchao's and TransformerEngine's
``f(Pa * Pb)`` of the two tensor scales, or any fp32 (IEEE arithmetic: NaN in, NaN out;
``0 * Inf`` NaN; the sign of ``alpha`` in the result).  Sections:

* ``emul`` -- both operands' fields and the exact 24 x 24-bit significand product (a tree of
  carry chains, :func:`hw.arith.partial_product_sum`), the specials;
* ``enorm`` -- the product normalized (leading-zero count and shift), its binade above
  fp32's lowest normal one;
* ``eposition``, ``ealign``, ``eround`` -- onto the fp32 grid and rounded once (RNE,
  subnormal results, overflow to Inf) by the project's rounder, :class:`hw.rounding.Grid`
  and :func:`hw.rounding.round_aligned`, as the NVFP4 dequantizer's ``f(P * s)``.

The block steps' result (``raw``) rides along unchanged: the accumulation contexts chain it,
not the epilogue's.  NaN results are 0x7FC00000, or ``nan_bits`` (0x7FFFFFFF after the
``tcgen05.mxf4nvf4`` steps, as golden's epilogue writes a GPU result's NaN).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Value

from golden.formats import FP32

from ..arith import leading_zeros, partial_product_sum
from ..placement import Estimate
from ..rounding import RNE, Grid, overflows, round_aligned

__all__ = ["EPILOGUE_ESTIMATES", "epilogue_sections", "build_epilogue"]

_SIG = FP32.mbits + 1  # 24
_EMIN = 1 - FP32.bias  # -126
_LSB_MIN = _EMIN - FP32.mbits  # -149, a subnormal's lsb

#: The epilogue's sections (ns, ECP5 speed 8): estimates by analogy with the NVFP4
#: dequantizer's ``f(P * s)`` and the fused step's sections, not measured on this unit.
EPILOGUE_ESTIMATES = {
    "emul": Estimate(5.0, "the 24 x 24-bit product as a tree of carry chains in one "
                     "section (estimate, not measured: place more registers by hand)"),
    "enorm": Estimate(4.0, "the 48-bit leading-zero count and shift (estimate)"),
    "eposition": Estimate(3.0, "the binade and the shift amount (estimate)"),
    "ealign": Estimate(3.5, "the shift onto the fp32 grid and its sticky OR (estimate)"),
    "eround": Estimate(3.5, "the increment, overflow and the specials (estimate)"),
}


def epilogue_sections() -> dict[str, float]:
    """The epilogue's sections, name -> estimated delay (ns), in datapath order."""
    return {name: e.ns for name, e in EPILOGUE_ESTIMATES.items()}


def _fields(bits) -> dict:
    bits = Value.cast(bits)
    e, f = bits[FP32.mbits:31], bits[:FP32.mbits]
    special = e.all()
    normal = e.any()
    return {"sig": Cat(f, normal), "exp": Mux(normal, e, 1),
            "nan": special & f.any(), "inf": special & ~f.any(), "zero": ~bits[:31].any(),
            "neg": bits[31]}


def build_epilogue(scope, x, alpha, side: dict, *, nan_bits: int = FP32.qnan_bits):
    """``f(alpha * x)`` of the fp32 bits ``x`` and ``alpha`` through the sections of
    :func:`epilogue_sections` in ``scope`` (a :class:`hw.pipeline.PipelineScope`); a NaN
    result is ``nan_bits`` (a positive NaN).

    ``side`` (values that ride along; a ``last`` field is the pipeline's hold flag,
    :meth:`hw.pipeline.Pipeline.hold_when`; None: nothing, a lane beside the one that carries
    them) must not hold ``raw``.  Returns the view after ``eround``: ``result`` (fp32 bits),
    ``raw`` (``x`` unchanged) and, with ``side``, ``side``."""
    m = scope.module

    def riding(s):
        return None if side is None else s.side

    a, b = _fields(x), _fields(alpha)
    q = partial_product_sum(m, Cat(a["sig"], Const(0, 1)).as_signed(), b["sig"],
                            scope.name("epi_prod"))[:2 * _SIG]
    keep = {"raw": x, "side": side}
    s = scope.cross({
        **keep, "q": q, "neg": a["neg"] ^ b["neg"],
        # lsb exponent of the product: (exp_a - 150) + (exp_b - 150), as a signed sum
        "lsb": (Cat(a["exp"], Const(0, 2)).as_signed() + Cat(b["exp"], Const(0, 2)).as_signed()
                - 2 * (FP32.bias + FP32.mbits)),
        "nan": a["nan"] | b["nan"] | (a["inf"] & b["zero"]) | (b["inf"] & a["zero"]),
        "inf": a["inf"] | b["inf"],
    }, "emul")
    width = 2 * _SIG
    lz = leading_zeros(m, s.q, name=scope.name("epi_lz"))
    above = s.lsb + (width - 1 - _EMIN) - lz
    flags = {"nan": s.nan, "inf": s.inf, "neg": s.neg}
    keep = {"raw": s.raw, "side": riding(s)}
    s = scope.cross({**keep, **flags, "sig": (s.q << lz)[:width], "above": above,
                     "below": lz - (width - 1 - _EMIN) - s.lsb, "zero": ~s.q.any()}, "enorm")
    grid = Grid(sig_width=width, emin=_EMIN, mbits=FP32.mbits, top_min=2 * _LSB_MIN)
    flags = {"nan": s.nan, "inf": s.inf, "neg": s.neg, "zero": s.zero}
    keep = {"raw": s.raw, "side": riding(s)}
    s = scope.cross({**keep, **flags, "sig": s.sig, "position": grid.position(
        m, s.above, s.below, name=scope.name("epi_rnd"))}, "eposition")
    flags = {f: getattr(s, f) for f in flags}
    keep = {"raw": s.raw, "side": riding(s)}
    s = scope.cross({**keep, **flags, "grid": grid.align(m, s.sig, s.position,
                                                         name=scope.name("epi_rnd"))},
                    "ealign")
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
