"""Restoring division, a few quotient bits per pipeline section.

Each step takes the next dividend bit: ``t = 2 * rem + bit``; the quotient bit is
``t >= divisor`` and the new remainder ``t - divisor`` or ``t`` (``rem < divisor`` throughout,
so it keeps the divisor's width).  The quotient is exact (``floor``) and the final remainder
says whether it is (the rounder's sticky bit).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Value

from ..nets import wire

__all__ = ["restoring_steps", "divide_over_sections"]


def _step_table(divisor: int, d: int) -> Const:
    """One step by a constant ``divisor`` as a table indexed by ``t = 2 * rem + bit``
    (``d + 1`` bits): entry t, ``d + 1`` bits, is the quotient bit ``t >= divisor`` above the
    new remainder, ``t - divisor`` or ``t`` (entries with ``rem >= divisor`` are never read)."""
    entries = ((t - divisor if t >= divisor else t) % (1 << d) | (t >= divisor) << d
               for t in range(1 << (d + 1)))
    return Const(sum(e << (i * (d + 1)) for i, e in enumerate(entries)), (d + 1) << (d + 1))


def restoring_steps(m, rem, divisor, bits, name: str):
    """Steps of a restoring division: ``bits`` (a Value, its top bit the next dividend bit)
    into the remainder ``rem`` (``len(divisor)`` bits, less than ``divisor``).

    Returns ``(rem, q)``: the remainder after the steps and their quotient bits (a Value, the
    first step's bit on top)."""
    divisor = Value.cast(divisor)
    bits = Value.cast(bits)
    d = len(divisor)
    q = []
    for j in reversed(range(len(bits))):
        t = Cat(bits[j], rem)  # 2 * rem + bit, d + 1 bits
        if isinstance(divisor, Const):
            # a table of the few remainder bits and the dividend bit: LUT logic (a comparison
            # with the constant was mapped to a carry chain, the quotient's critical path)
            step = wire(m, _step_table(divisor.value, d).word_select(t, d + 1),
                        f"{name}_s{len(q)}")
            ge = wire(m, step[d], f"{name}_q{len(q)}")
            rem = wire(m, step[:d], f"{name}_r{len(q)}")
        else:
            # one subtraction, its borrow the quotient bit (a separate comparison of wide
            # operands was mapped to a LUT tree in front of the select)
            diff = wire(m, t - divisor, f"{name}_d{len(q)}")  # signed, d + 2 bits
            ge = wire(m, ~diff[-1], f"{name}_q{len(q)}")
            rem = wire(m, Mux(ge, diff[:d], t[:d]), f"{name}_r{len(q)}")
        q.append(ge)
    return rem, Cat(*reversed(q))


def divide_over_sections(scope, rem, divisor, bits, per_section: int, prefix: str,
                         carry: dict):
    """A restoring division of ``bits`` (top bit first) by ``divisor`` from the remainder
    ``rem``, ``per_section`` steps per section ``<prefix>_0``, ``<prefix>_1``, ..., each
    crossing its boundary with ``carry`` (a dict of the other fields, kept as they are).

    Returns the view after the last section: ``carry``'s fields, ``q`` (the quotient bits, the
    first on top) and ``rem`` (the final remainder)."""
    m = scope.module
    bits = Value.cast(bits)
    q = None
    for j in range(-(-len(bits) // per_section)):
        take = min(per_section, len(bits))
        rem, qj = restoring_steps(m, rem, divisor, bits[len(bits) - take:],
                                  scope.name(f"{prefix}_{j}"))
        bits = bits[:len(bits) - take]
        q = qj if q is None else Cat(qj, q)
        fields = {**carry, "rem": rem, "q": q, "divisor": divisor}
        if len(bits):
            fields["rest"] = bits
        x = scope.cross(fields, f"{prefix}_{j}")
        carry = {name: getattr(x, name) for name in carry}
        rem, q, divisor = x.rem, x.q, x.divisor
        bits = x.rest if len(bits) else bits
    return x
