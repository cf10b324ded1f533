"""MX quantizer: a block of k floating-point values -> one E8M0 scale and k element codes.

Implements section 2 of the numerics contract (restated in ``docs/numerics.md``) bit for bit;
``golden._kernels.quantize_blocks`` is the reference.
Architecture, interface timing and verification: ``docs/quantizer.md``.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

import golden
from golden.formats import SCALE_BIAS, SCALE_EMAX, SCALE_EMIN, SCALE_NAN

from .common import (
    RCEIL,
    ROUNDING_IDS,
    SCALE_MODE_IDS,
    StreamPipeline,
    clamp,
    leading_zeros,
    round_to_grid,
    smax,
    wire,
)

__all__ = ["MXQuantizer", "QUANTIZER_BOUNDARIES", "cli_units"]

ROUNDINGS = (*ROUNDING_IDS, "runtime")
SCALE_MODES = (*SCALE_MODE_IDS, "runtime")
INPUTS = ("fp32", "bf16", "fp16")
MAX_BLOCK = 64
MAX_RANDOM_BITS = 16

#: Stage boundaries in datapath order, and the order in which ``stages`` registers fill them.
QUANTIZER_BOUNDARIES = ("input", "amax", "scale", "round", "output")
_FILL_ORDER = ("output", "scale", "amax", "round", "input")


def _check_block_size(k):
    if not isinstance(k, int) or isinstance(k, bool):
        raise TypeError(f"block size must be an int, not {type(k).__name__}")
    if k < 2 or k > MAX_BLOCK or k & (k - 1):
        raise ValueError(f"block size must be a power of two in 2..{MAX_BLOCK}, got {k}")
    return k


def _check_choice(what, value, choices):
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; expected one of {', '.join(choices)}")
    return value


def _check_stages(stages, n):
    if not isinstance(stages, int) or isinstance(stages, bool):
        raise TypeError(f"stages must be an int, not {type(stages).__name__}")
    if not 1 <= stages <= n:
        raise ValueError(f"stages must be in 1..{n}, got {stages}")
    return stages


def registered_boundaries(stages, boundaries, fill_order):
    """Which of ``boundaries`` get a register for a pipeline of ``stages`` registers."""
    chosen = set(fill_order[:stages])
    return [b in chosen for b in boundaries]


class MXQuantizer(wiring.Component):
    """Quantize one block of ``block_size`` values per clock to an MX format.

    Parameters
    ----------
    fmt : str or golden.ElementFormat
        Element format (``fp8_e4m3``, ``fp8_e5m2``, ``fp6_e3m2``, ``fp6_e2m3``, ``fp4_e2m1``,
        ``int8``).
    block_size : int
        k, a power of two in 2..64.
    input_format : {"fp32", "bf16", "fp16"}
    rounding : {"rne", "rna", "rtz", "stochastic", "runtime"}
        Fixed at elaboration, or ``"runtime"``: a 2-bit ``rounding`` payload field (0 rne,
        1 rna, 2 rtz, 3 stochastic).
    scale_mode : {"floor", "rceil", "runtime"}
        Fixed, or ``"runtime"``: a 1-bit ``scale_mode`` payload field (0 floor, 1 rceil).
    random_bits : int
        R, random bits per element for stochastic rounding (1..16); used when ``rounding`` is
        ``"stochastic"`` or ``"runtime"``.
    stages : int
        Pipeline registers, 1..5; they fill the boundaries ``output``, ``scale``, ``amax``,
        ``round``, ``input`` in that order (see :data:`QUANTIZER_BOUNDARIES`).

    Members
    -------
    i : In(stream.Signature(StructLayout))
        Payload fields: ``data`` (k input values, element i at bits ``[w*i, w*(i+1))``),
        ``random`` (k x R bits, if stochastic rounding is built in), ``rounding`` and
        ``scale_mode`` (if runtime).
    o : Out(stream.Signature(StructLayout))
        Payload fields: ``scale`` (E8M0 code) and ``codes`` (k element codes).

    Latency is ``stages`` cycles: a block accepted in cycle c is presented in cycle
    c + ``stages``; one block per clock.  ``i.ready`` depends combinationally on ``o.ready``.
    """

    def __init__(self, fmt="fp8_e4m3", block_size=32, input_format="fp32", *, rounding="rne",
                 scale_mode="floor", random_bits=8, stages=3):
        self.fmt = golden.element_format(fmt)
        self.block_size = _check_block_size(block_size)
        _check_choice("input format", input_format, INPUTS)
        self.input_format = golden.float_format(input_format)
        self.rounding = _check_choice("rounding", rounding, ROUNDINGS)
        self.scale_mode = _check_choice("scale mode", scale_mode, SCALE_MODES)
        self.stochastic = rounding in ("stochastic", "runtime")
        if self.stochastic:
            if not isinstance(random_bits, int) or isinstance(random_bits, bool):
                raise TypeError(f"random_bits must be an int, not {type(random_bits).__name__}")
            if not 1 <= random_bits <= MAX_RANDOM_BITS:
                raise ValueError(f"random_bits must be in 1..{MAX_RANDOM_BITS}, "
                                 f"got {random_bits}")
        self.random_bits = random_bits if self.stochastic else 0
        self.stages = _check_stages(stages, len(QUANTIZER_BOUNDARIES))
        self.latency = self.stages

        k, fi = self.block_size, self.input_format
        fields = {"data": data.ArrayLayout(fi.bits, k)}
        if self.stochastic:
            fields["random"] = data.ArrayLayout(self.random_bits, k)
        if rounding == "runtime":
            fields["rounding"] = unsigned(2)
        if scale_mode == "runtime":
            fields["scale_mode"] = unsigned(1)
        self.in_layout = data.StructLayout(fields)
        self.out_layout = data.StructLayout({
            "scale": unsigned(8),
            "codes": data.ArrayLayout(self.fmt.bits, k),
        })
        super().__init__({
            "i": In(stream.Signature(self.in_layout)),
            "o": Out(stream.Signature(self.out_layout)),
        })

    @property
    def module_name(self) -> str:
        r = self.rounding + (str(self.random_bits) if self.stochastic else "")
        return (f"mx_quantizer_{self.fmt.name}_k{self.block_size}_{self.input_format.name}"
                f"_{r}_{self.scale_mode}_s{self.stages}")

    @property
    def parameters(self) -> dict:
        return {"format": self.fmt.name, "block_size": self.block_size,
                "input": self.input_format.name, "rounding": self.rounding,
                "scale_mode": self.scale_mode, "random_bits": self.random_bits,
                "stages": self.stages,
                "registered_boundaries": [b for b, r in zip(
                    QUANTIZER_BOUNDARIES, self._registered(), strict=True) if r]}

    def _registered(self):
        return registered_boundaries(self.stages, QUANTIZER_BOUNDARIES, _FILL_ORDER)

    def elaborate(self, platform):
        m = Module()
        fmt, fi, k = self.fmt, self.input_format, self.block_size
        pipe = StreamPipeline(m, self._registered(), name="q")
        mag_w = fi.ebits + fi.mbits  # IEEE magnitude bits
        sig_w = fi.mbits + 1

        # -- input -----------------------------------------------------------------------------
        p = pipe.boundary(self.i.payload.as_value(), "input")
        payload = self.in_layout(p)
        rounding = (payload.rounding if self.rounding == "runtime"
                    else ROUNDING_IDS[self.rounding])
        scale_mode = (payload.scale_mode if self.scale_mode == "runtime"
                      else SCALE_MODE_IDS[self.scale_mode])
        rand = [payload.random[i] for i in range(k)] if self.stochastic else [None] * k

        # -- section 1: lane decode (normalize subnormals), block amax -------------------------
        def split(mag, name):
            """IEEE magnitude -> (normalized significand, floor(log2(value))), for mag != 0."""
            e, frac = mag[fi.mbits:], mag[:fi.mbits]
            sig = wire(m, Cat(frac, e != 0), f"{name}_sig")
            lz = leading_zeros(m, sig, name=f"{name}_lz")
            norm = wire(m, (sig << lz)[:sig_w], f"{name}_norm")
            top = wire(m, Mux(e == 0, 1, e) - fi.bias - lz, f"{name}_top")
            return norm, top

        lanes = []
        for i in range(k):
            w = payload.data[i]
            mag = w[:mag_w]
            norm, top = split(mag, f"lane{i}")
            lanes.append({"neg": w[mag_w], "zero": mag == 0, "sig": norm, "top": top})
        # IEEE magnitudes order like the values they encode: a plain unsigned max tree.
        level = [payload.data[i][:mag_w] for i in range(k)]
        while len(level) > 1:
            level = [smax(m, a, b, name="amax") for a, b in zip(level[0::2], level[1::2],
                                                                 strict=True)]
        amax = level[0]
        x = pipe.boundary({"lanes": lanes, "amax": amax, "rounding": rounding,
                           "scale_mode": scale_mode, "rand": rand}, "amax")

        # -- section 2: shared exponent, scale code ------------------------------------------
        amax = x["amax"]
        a_sig, a_top = split(amax, "amax")
        e = a_top - fmt.emax  # floor mode: floor(log2(amax)) - emax
        if self.scale_mode != "floor":
            # rceil: one more when amax's significand 1.f exceeds max_normal's 1.g.
            above = a_sig > (fmt.max_significand << (fi.mbits - fmt.mbits))
            if self.scale_mode == "runtime":
                above = above & (x["scale_mode"] == RCEIL)
            e = e + above
        e = clamp(m, e, SCALE_EMIN, SCALE_EMAX, name="e")
        nonfinite = amax[fi.mbits:].all()  # exponent all ones: an Inf or a NaN in the block
        scale = Mux(nonfinite, SCALE_NAN, Mux(amax == 0, 0, (e + SCALE_BIAS)[:8]))
        y = pipe.boundary({"lanes": x["lanes"], "e": e.as_signed(), "scale": scale,
                           "nonfinite": nonfinite, "rounding": x["rounding"],
                           "rand": x["rand"]}, "scale")

        # -- section 3a: per lane, exponent at the scale, alignment shift and rounding ---------
        frac_bits = self.random_bits if self.stochastic else 1
        lanes = y["lanes"]
        mbits = fmt.mbits
        codes = []
        for i in range(k):
            ln = lanes[i]
            top = (ln["top"] - y["e"]).as_signed()
            code = round_to_grid(m, ln["sig"], top, emin=fmt.emin, mbits=mbits,
                                 rounding=y["rounding"], frac_bits=frac_bits, rand=y["rand"][i],
                                 name=f"lane{i}_rnd")
            codes.append(code)
        z = pipe.boundary({"codes": codes, "lanes": [{"neg": ln["neg"], "zero": ln["zero"]}
                                                      for ln in lanes],
                           "scale": y["scale"], "nonfinite": y["nonfinite"]}, "round")

        # -- section 3b: saturate, attach the sign, special blocks ------------------------------
        out_codes = []
        for i in range(k):
            code = wire(m, z["codes"][i], f"lane{i}_code")
            ln = z["lanes"][i]
            mag = Mux(code >= fmt.max_code, fmt.max_code, code)[:fmt.bits]
            mag = Mux(ln["zero"], 0, mag)
            if fmt.twos_complement:
                signed_code = Mux(ln["neg"], -mag, mag)[:fmt.bits]
            else:
                signed_code = Cat(mag[:fmt.bits - 1], ln["neg"])
            out_codes.append(Mux(z["nonfinite"], 0, signed_code))
        out = pipe.boundary({"scale": z["scale"], "codes": Cat(*out_codes)}, "output")

        m.d.comb += [
            self.o.payload.scale.eq(out["scale"]),
            self.o.payload.codes.as_value().eq(out["codes"]),
        ]
        pipe.connect(i_valid=self.i.valid, i_ready=self.i.ready,
                     o_valid=self.o.valid, o_ready=self.o.ready)
        return m


# ----------------------------------------------------------------------------------------------
# CLI
# ----------------------------------------------------------------------------------------------
def _add_arguments(p):
    p.add_argument("--format", required=True, help="element format (fp8_e4m3, ..., int8)")
    p.add_argument("--block-size", type=int, default=32, help="k, power of two 2..64")
    p.add_argument("--input", default="fp32", help="input format: fp32, bf16 or fp16")
    p.add_argument("--rounding", default="rne", help=f"one of {', '.join(ROUNDINGS)}")
    p.add_argument("--scale-mode", default="floor", help=f"one of {', '.join(SCALE_MODES)}")
    p.add_argument("--random-bits", type=int, default=8, help="R for stochastic rounding")
    p.add_argument("--stages", type=int, default=3, help="pipeline registers, 1..5")


def _build(a):
    return MXQuantizer(a.format, a.block_size, a.input, rounding=a.rounding,
                       scale_mode=a.scale_mode, random_bits=a.random_bits, stages=a.stages)


def cli_units():
    from .cli import UnitSpec

    defaults = [["--format", f, "--input", "fp32"] for f in golden.FORMATS]
    defaults += [["--format", f, "--input", "bf16"] for f in ("fp8_e4m3", "fp4_e2m1", "int8")]
    defaults += [["--format", "fp8_e5m2", "--input", "fp16"]]
    return [UnitSpec("quantizer", "k floating-point values -> E8M0 scale + k element codes",
                     _add_arguments, _build, defaults)]

