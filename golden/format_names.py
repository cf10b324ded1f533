"""Names of element formats: the six OCP formats, ml_dtypes' names, ML users' names, ``intN``
and ``e<E>m<M>``, resolved by :func:`element_format`.

Resolution order (case-insensitive, ``-`` read as ``_``):

1. a registered name or alias: the OCP names (``fp8_e4m3`` ...), the MX names (``mxfp8``,
   ``mxfp6_e3m2``, ``mxint4`` ...), and ml_dtypes' names with exactly ml_dtypes' value sets
   (``float8_e4m3fn`` is OCP e4m3; ``float8_e4m3`` is the IEEE-like e4m3 with Inf; ``int4`` is
   MXINT4, ml_dtypes' int4 scaled by 2^-2);
2. ``int<N>`` for N = 2..8;
3. the generic ``e<E>m<M>`` (convention ``finite``, the OCP rule for formats with no reserved
   codes), optionally ``e<E>m<M>fn`` / ``e<E>m<M>ieee`` and a ``_bias<b>`` suffix: the names
   :class:`~golden.element_format.ElementFormat` gives itself.
"""

from __future__ import annotations

import re

import ml_dtypes

from .element_format import ElementFormat

__all__ = ["FP8_E4M3", "FP8_E5M2", "FP6_E3M2", "FP6_E2M3", "FP4_E2M1", "INT8", "FORMATS",
           "NAMED_FORMATS", "element_format"]

FP8_E4M3 = ElementFormat(4, 3, "fn", name="fp8_e4m3",
                         aliases=("mxfp8_e4m3", "e4m3", "fp8", "e4m3fn", "float8_e4m3fn", "mxfp8"),
                         ml_dtype=ml_dtypes.float8_e4m3fn)
FP8_E5M2 = ElementFormat(5, 2, "ieee", name="fp8_e5m2",
                         aliases=("mxfp8_e5m2", "e5m2", "float8_e5m2"),
                         ml_dtype=ml_dtypes.float8_e5m2)
FP6_E3M2 = ElementFormat(3, 2, "finite", name="fp6_e3m2",
                         aliases=("mxfp6_e3m2", "e3m2", "float6_e3m2fn"),
                         ml_dtype=ml_dtypes.float6_e3m2fn)
FP6_E2M3 = ElementFormat(2, 3, "finite", name="fp6_e2m3",
                         aliases=("mxfp6_e2m3", "e2m3", "float6_e2m3fn", "mxfp6"),
                         ml_dtype=ml_dtypes.float6_e2m3fn)
FP4_E2M1 = ElementFormat(2, 1, "finite", name="fp4_e2m1",
                         aliases=("mxfp4_e2m1", "e2m1", "fp4", "mxfp4", "float4_e2m1fn"),
                         ml_dtype=ml_dtypes.float4_e2m1fn)
INT8 = ElementFormat.integer(8, name="int8", aliases=("mxint8",))

#: The six OCP MX v1.0 element formats, by canonical name, in the contract's order.
FORMATS: dict[str, ElementFormat] = {
    f.name: f for f in (FP8_E4M3, FP8_E5M2, FP6_E3M2, FP6_E2M3, FP4_E2M1, INT8)
}

#: Further named members: ml_dtypes' types that are not OCP formats, and the narrow intN.
_EXTRA = (
    ElementFormat(4, 3, "ieee", name="float8_e4m3", aliases=("fp8_e4m3_ieee",),
                  ml_dtype=ml_dtypes.float8_e4m3),
    ElementFormat(3, 4, "ieee", name="float8_e3m4", aliases=("fp8_e3m4",),
                  ml_dtype=ml_dtypes.float8_e3m4),
    ElementFormat.integer(4, name="int4", aliases=("mxint4",), ml_dtype=ml_dtypes.int4),
    ElementFormat.integer(2, name="int2", aliases=("mxint2",), ml_dtype=ml_dtypes.int2),
)

#: Every format with a registered name (the six OCP formats first).
NAMED_FORMATS: dict[str, ElementFormat] = {**FORMATS, **{f.name: f for f in _EXTRA}}

_ALIASES = {a: f for f in NAMED_FORMATS.values() for a in (f.name, *f.aliases)}
_BY_KEY: dict = {}
for _f in NAMED_FORMATS.values():
    _BY_KEY.setdefault(_f.key, _f)
_GENERIC = re.compile(r"e(\d)m(\d)(fn|ieee)?(?:_bias(-?\d+))?")
_INT = re.compile(r"int(\d)")
_SPEC_KEYS = {"name", "ebits", "mbits", "convention", "bias"}


def _accepted() -> str:
    return (f"expected one of {', '.join(sorted(_ALIASES))}, int2..int8, e<E>m<M> "
            "(optionally with fn/ieee and _bias<b>, e.g. e3m4fn_bias5), a spec dict or "
            "golden.ElementFormat(ebits, mbits, convention, bias)")


def _from_spec(spec: dict) -> ElementFormat:
    name = spec.get("name")
    if "int" in spec:
        if set(spec) - {"int", "name"}:
            raise ValueError(f"an intN format spec has keys int and name, got {sorted(spec)}")
        return ElementFormat.integer(spec["int"], name=name)
    if set(spec) - _SPEC_KEYS or not {"ebits", "mbits"} <= set(spec):
        raise ValueError(f"an element format spec has keys {sorted(_SPEC_KEYS)} (ebits and "
                         f"mbits required) or int and name, got {sorted(spec)}")
    fmt = ElementFormat(spec["ebits"], spec["mbits"], spec.get("convention", "finite"),
                        spec.get("bias"), name=name)
    known = _ALIASES.get(fmt.name)
    return known if known is not None and known == fmt else fmt


def element_format(fmt) -> ElementFormat:
    """The element format named by ``fmt``.

    Parameters
    ----------
    fmt : str, dict or ElementFormat
        A name (module docstring), the :attr:`ElementFormat.spec` dict of a format, or a format
        (returned as is).

    Raises
    ------
    ValueError
        For an unknown name (the message lists what is accepted) or invalid parameters.
    TypeError
        For anything that is not a str, dict or ElementFormat.
    """
    if isinstance(fmt, ElementFormat):
        return fmt
    if isinstance(fmt, dict):
        return _from_spec(fmt)
    if not isinstance(fmt, str):
        raise TypeError("element format must be a name, a spec dict or an ElementFormat, "
                        f"not {type(fmt).__name__}")
    key = fmt.strip().lower().replace("-", "_")
    known = _ALIASES.get(key)
    if known is not None:
        return known
    m = _INT.fullmatch(key)
    if m and 2 <= int(m[1]) <= 8:
        new = ElementFormat.integer(int(m[1]))
        return _BY_KEY.get(new.key, new)
    m = _GENERIC.fullmatch(key)
    if m:
        bias = None if m[4] is None else int(m[4])
        try:
            new = ElementFormat(int(m[1]), int(m[2]), m[3] or "finite", bias)
        except ValueError as e:
            raise ValueError(f"element format {fmt!r}: {e}; {_accepted()}") from None
        return _BY_KEY.get(new.key, new)
    raise ValueError(f"unknown element format {fmt!r}; {_accepted()}")
