"""The unit registry: every unit ``python -m hw generate``, FuseSoC and ``mx-hdl`` can build.

Each unit family module (:data:`UNIT_MODULES`: ``hw.quantizer``, ``hw.dequantizer``,
``hw.nvfp4_dequantizer``, ``hw.nvfp4_quantizer``, ``hw.dot``, ``hw.gemm``) contributes
:class:`UnitSpec` entries through its public ``cli_units()`` function; :func:`units` collects
them.  The family modules import :class:`UnitSpec` and :func:`format_help` from here and the
registry imports them only when :func:`units` runs,
so neither the command line (:mod:`hw.cli`) nor FuseSoC's generator (:mod:`hw.fusesoc`),
which both read the registry, is imported by a unit.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["UNIT_MODULES", "UnitSpec", "units", "format_help"]

#: The unit family modules, in the order their units are listed.
UNIT_MODULES = ("hw.quantizer", "hw.dequantizer", "hw.nvfp4_dequantizer", "hw.nvfp4_quantizer",
                "hw.dot", "hw.gemm")


@dataclass(frozen=True)
class UnitSpec:
    """One ``generate`` subcommand.

    Parameters
    ----------
    name : str
        Subcommand name, e.g. ``"quantizer"``.
    help : str
    add_arguments : callable(argparse.ArgumentParser)
        Adds the unit's options (``-o`` is added by the CLI).
    build : callable(argparse.Namespace) -> Component
        Elaborates the component from parsed options; raises ``ValueError``/``TypeError`` for
        bad parameters (reported as a one-line error).
    defaults : list of list of str
        Argument lists of the default configurations written by ``make verilog``.
    """

    name: str
    help: str
    add_arguments: Callable
    build: Callable
    defaults: list = field(default_factory=list)

    def parser(self, **kwargs) -> argparse.ArgumentParser:
        """A parser of this unit's options alone (``kwargs`` go to ``ArgumentParser``)."""
        p = argparse.ArgumentParser(**kwargs)
        self.add_arguments(p)
        return p

    def build_from(self, argv: list[str]):
        """The component for the argument list ``argv`` (options as on the command line)."""
        return self.build(self.parser().parse_args(argv))


def units() -> dict[str, UnitSpec]:
    """Every ``generate`` subcommand, by name, from the unit family modules."""
    found = {}
    for mod_name in UNIT_MODULES:
        mod = importlib.import_module(mod_name)
        for spec in mod.cli_units():
            found[spec.name] = spec
    return found


def format_help(what: str = "element format") -> str:
    """Help text of a format option: the OCP names of :data:`golden.FORMATS` and the rest of
    the family :func:`golden.element_format` resolves."""
    import golden

    example = next(iter(golden.FORMATS.values())).aliases[0]
    return (f"{what}: {', '.join(golden.FORMATS)} (or an alias, e.g. {example}), or any "
            "member of the family: int2..int8, float8_e3m4, float8_e4m3 (IEEE-like), "
            "e<E>m<M>[fn|ieee][_bias<b>], e.g. e3m3")
