"""Options from environment variables, parsed one way everywhere (testbenches and tests).

A boolean option accepts ``1/0``, ``true/false``, ``yes/no``, ``on/off`` (any case) and the
empty string (= unset, the default); anything else is an error that names the variable, so
``SIM_FULL=0`` means off and a typo such as ``WAVES=ture`` fails instead of guessing.
"""

from __future__ import annotations

import os

__all__ = ["env_flag", "env_int", "parse_flag"]

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def parse_flag(name: str, text: str | None, default: bool = False) -> bool:
    """Boolean value of option ``name`` given as ``text`` (None or empty: ``default``).

    Raises
    ------
    ValueError
        If ``text`` is not one of the accepted spellings; the message names ``name``.
    """
    if text is None or text.strip() == "":
        return default
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(f"{name}={text!r}: expected one of 1/0, true/false, yes/no, on/off "
                     f"or empty")


def env_flag(name: str, default: bool = False) -> bool:
    """Boolean environment variable ``name`` (see :func:`parse_flag`)."""
    return parse_flag(name, os.environ.get(name), default)


def env_int(name: str, default: int) -> int:
    """Integer environment variable ``name`` (unset or empty: ``default``)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name}={text!r}: expected an integer") from None
