"""Named nets: a value (or a struct of values) as one signal, and nets synthesis keeps.

* :func:`wire` -- name a value (or a dict/list nesting of values, as one struct signal).
* :func:`kept`, :func:`any_of_kept` -- a net, an OR of terms, that synthesis maps as written.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal, Value
from amaranth.lib import data

__all__ = ["wire", "kept", "any_of_kept"]


def _layout_of(tree):
    """The shape of a value, or the struct/array layout of a dict/list nesting of values."""
    if isinstance(tree, dict):
        return data.StructLayout({k: _layout_of(v) for k, v in tree.items()})
    if isinstance(tree, list | tuple):
        shapes = [_layout_of(v) for v in tree]
        if any(s != shapes[0] for s in shapes):
            raise TypeError(f"the elements of a list must share one shape, got {shapes}")
        return data.ArrayLayout(shapes[0], len(shapes))
    if isinstance(tree, data.View):
        return tree.shape()
    return Value.cast(tree).shape()


def _drive(m: Module, target, tree):
    if isinstance(tree, dict):
        for k, v in tree.items():
            _drive(m, target[k], v)
    elif isinstance(tree, list | tuple):
        for i, v in enumerate(tree):
            _drive(m, target[i], v)
    else:
        m.d.comb += target.eq(tree)


def wire(m: Module, value, name: str):
    """``value`` as a named combinational signal.

    Amaranth expressions are trees: a Value used twice is converted twice.  Every helper here
    names a value it reuses, so the generated netlist grows linearly (not exponentially) with
    nesting, and the names show up in waveforms.

    ``value`` may also be a dict (a struct) or a list (an array, elements of one shape) of
    Values, Views and such nestings: it becomes one signal with the matching
    :class:`~amaranth.lib.data.StructLayout` / ``ArrayLayout``, returned as a
    :class:`~amaranth.lib.data.View` (``view.field``, ``view[i]``).  Entries that are None
    (nothing to carry) are dropped.
    """
    if isinstance(value, dict | list | tuple):
        value = _prune(value)
        sig = Signal(_layout_of(value), name=name)
        _drive(m, sig, value)
        return sig
    value = Value.cast(value)
    sig = Signal(value.shape(), name=name)
    m.d.comb += sig.eq(value)
    return sig


def _prune(tree):
    if isinstance(tree, dict):
        return {k: _prune(v) for k, v in tree.items() if v is not None}
    if isinstance(tree, list | tuple):
        return [_prune(v) for v in tree]
    return tree


def kept(m: Module, value, name: str) -> Signal:
    """``value`` as a signal marked ``keep``: abc maps the logic before it on its own and
    the logic after it from its output, so a LUT tree keeps the depth it is written with (left
    to itself, abc restructures across such a net, and found four LUT levels for the dot's
    chunk flags where three hold them)."""
    sig = Signal(len(Value.cast(value)), name=name, attrs={"keep": 1})
    m.d.comb += sig.eq(value)
    return sig


def any_of_kept(m: Module, terms, name: str):
    """OR of ``terms`` (1-bit values), each first a signal marked ``keep``: synthesis maps each
    term to LUTs of its own, and the OR of their outputs after them, as written (left to
    itself, abc takes 5 LUT levels for the pick section's chunk flags, sharing the choice
    terms; kept, they are on no seed's worst path of fp8_e4m3 at 20 stages)."""
    return Cat(*(kept(m, term, f"{name}_{i}") for i, term in enumerate(terms))).any()
