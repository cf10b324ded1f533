"""Vendor DSP blocks instantiated directly, with their own pipeline registers.

Yosys maps ``*`` to ECP5 MULT18X18D blocks but leaves every flip-flop around them in the
fabric: the route into the DSP column, the multiplier and the route out all fall in one
stage (the dot units' ``--multipliers dsp`` builds: decode -> multiply, 3.46 ns in the
block plus 3.5-3.8 ns of routes).  A MULT18X18D has input and output registers of its own,
which vendor tools fill from the fabric's flip-flops and yosys does not; instantiated with
them, the multiply is a stage of its own inside the block, and the routes to and from the
column each get the stage before or after it.

* :func:`mult18x18d` -- a signed 18 x 18 product through one MULT18X18D, each side's
  register loaded with a pipeline boundary's enable (:meth:`hw.pipeline.Pipeline.enable`).

The generated Verilog then names the primitive: synthesis for ECP5 takes it from the vendor
library; simulation and lint take the behavioural model :data:`MULT18X18D_MODEL` (the subset
used here: A and B registers, output register, multiplier; no cascade, no pipeline register),
which the sidecar's ``primitives`` point to (:func:`simulation_models`), and the
register-bypass proof of :mod:`formal.datapath` (its registers: :data:`MULT18X18D_REGISTERS`).
"""

from __future__ import annotations

from pathlib import Path

from amaranth.hdl import Cat, ClockSignal, Const, Instance, Module, Signal, Value, signed

__all__ = ["mult18x18d", "MULT18X18D_WIDTH", "MULT18X18D_MODEL", "MULT18X18D_REGISTERS",
           "simulation_models"]

#: Bits of each factor (signed, two's complement) of a MULT18X18D.
MULT18X18D_WIDTH = 18

#: Behavioural Verilog model of the MULT18X18D subset :func:`mult18x18d` uses, for simulation,
#: lint and proofs (never for synthesis: the vendor library's block is the real one).
MULT18X18D_MODEL = Path(__file__).parent / "models" / "MULT18X18D.v"

#: The model's registers by the side of the block they stand on (``input``: A and B, which
#: :func:`mult18x18d` loads with ``input_enable``; ``output``: P, with ``output_enable``), by
#: their names in the model: the register-bypass proof (:mod:`formal.datapath`) checks them as
#: the data registers of those boundaries.
MULT18X18D_REGISTERS = {"input": ("a_reg", "b_reg"), "output": ("p_reg",)}

#: Primitive name -> its simulation model (the sidecar's ``primitives``).
_MODELS = {"MULT18X18D": MULT18X18D_MODEL}


def simulation_models(primitives) -> list[Path]:
    """The Verilog models to compile beside a unit that instantiates ``primitives`` (a
    component's ``primitives``, or a sidecar's)."""
    unknown = sorted(set(primitives) - set(_MODELS))
    if unknown:
        raise ValueError(f"no simulation model for {', '.join(unknown)}; models exist for "
                         f"{', '.join(_MODELS)}")
    return [_MODELS[name] for name in primitives]


def mult18x18d(m: Module, a, b, name: str, *, input_enable=None, output_enable=None):
    """``a * b`` (both signed, at most 18 bits each) through one ECP5 MULT18X18D.

    Parameters
    ----------
    m : Module
    a, b : Value
        The factors, sign-extended to 18 bits (an unsigned factor: pass it with a zero bit on
        top, as ``Cat(b, 0).as_signed()``).
    name : str
        Name of the instance (its product signal is ``<name>_p``).
    input_enable, output_enable : Value or None
        The load enables of the block's A/B registers and of its output register (the enables
        of the pipeline boundaries they stand for); None: that side unregistered.

    Returns
    -------
    Value
        The 36-bit signed product: registered ``input_enable``/``output_enable`` as given, so
        it arrives 0, 1 or 2 cycles after its factors.
    """
    a, b = Value.cast(a), Value.cast(b)
    for label, v in (("a", a), ("b", b)):
        if len(v) > MULT18X18D_WIDTH or not v.shape().signed:
            raise ValueError(f"{label} must be a signed value of at most {MULT18X18D_WIDTH} "
                             f"bits, got {v.shape()}")
    a, b = _sign_extend(a), _sign_extend(b)
    p = Signal(signed(2 * MULT18X18D_WIDTH), name=f"{name}_p")
    registered_in, registered_out = input_enable is not None, output_enable is not None
    ports = {f"i_A{j}": a[j] for j in range(MULT18X18D_WIDTH)}
    ports |= {f"i_B{j}": b[j] for j in range(MULT18X18D_WIDTH)}
    ports |= {f"i_C{j}": Const(0, 1) for j in range(MULT18X18D_WIDTH)}
    ports |= {f"o_P{j}": p[j] for j in range(2 * MULT18X18D_WIDTH)}
    m.submodules[name] = Instance(
        "MULT18X18D",
        p_REG_INPUTA_CLK="CLK0" if registered_in else "NONE",
        p_REG_INPUTA_CE="CE0", p_REG_INPUTA_RST="RST0",
        p_REG_INPUTB_CLK="CLK0" if registered_in else "NONE",
        p_REG_INPUTB_CE="CE0", p_REG_INPUTB_RST="RST0",
        p_REG_INPUTC_CLK="NONE", p_REG_PIPELINE_CLK="NONE",
        p_REG_OUTPUT_CLK="CLK0" if registered_out else "NONE",
        p_REG_OUTPUT_CE="CE1", p_REG_OUTPUT_RST="RST0",
        p_GSR="DISABLED", p_MULT_BYPASS="DISABLED", p_RESETMODE="SYNC",
        p_SOURCEB_MODE="B_SHIFT", p_CAS_MATCH_REG="FALSE",
        i_SIGNEDA=Const(1, 1), i_SIGNEDB=Const(1, 1),
        i_SOURCEA=Const(0, 1), i_SOURCEB=Const(0, 1),
        i_CLK0=ClockSignal("sync"), i_CLK1=Const(0, 1), i_CLK2=Const(0, 1),
        i_CLK3=Const(0, 1),
        i_CE0=input_enable if registered_in else Const(0, 1),
        i_CE1=output_enable if registered_out else Const(0, 1),
        i_CE2=Const(0, 1), i_CE3=Const(0, 1),
        i_RST0=Const(0, 1), i_RST1=Const(0, 1), i_RST2=Const(0, 1), i_RST3=Const(0, 1),
        **ports,
    )
    return p


def _sign_extend(v):
    """A signed value sign-extended to :data:`MULT18X18D_WIDTH` bits."""
    return Cat(v, v[-1].replicate(MULT18X18D_WIDTH - len(v))).as_signed()
