"""Scopes: several steps on one pipeline, each with its own names.

A step (a datapath function) places its sections on a :class:`hw.pipeline.Pipeline` it is
given through a :class:`PipelineScope` (:meth:`hw.pipeline.Pipeline.scope`), which prefixes the
step's section names and signal names with the scope's name.  Two steps whose sections have
the same names (a dot step's ``decode`` and a quantizer's) then follow one another on one
pipeline, with one flow control: the unit declares both steps' sections, prefixed
(:func:`scoped_sections`), in datapath order.  Steps side by side (several dot steps of one
tile) share their sections: scopes of different prefixes on the same ``sections``.
"""

from __future__ import annotations

from collections.abc import Mapping

from .nets import wire

__all__ = ["PipelineScope", "scoped_sections", "SAME"]


def scoped_sections(prefix: str | None, sections: Mapping[str, float]) -> dict[str, float]:
    """A step's ``sections`` (name -> delay) as a pipeline declares them for the step's scope
    ``prefix`` (:meth:`hw.pipeline.Pipeline.scope`): ``<prefix>_<name>``, or unchanged
    without a prefix."""
    return {_join(prefix, name): delay for name, delay in sections.items()}


def _join(prefix: str | None, name: str) -> str:
    return name if prefix is None else f"{prefix}_{name}"


#: :meth:`hw.pipeline.Pipeline.scope`'s default ``sections``: the scope's prefix.
SAME = object()


def _check_prefix(what: str, prefix):
    if prefix is not None and (not isinstance(prefix, str) or not prefix
                               or not prefix.replace("_", "a").isalnum()
                               or not prefix.isascii()):
        raise ValueError(f"a scope {what} is a non-empty identifier (letters, digits, _), "
                         f"not {prefix!r}")
    return prefix


class PipelineScope:
    """One step's view of a :class:`hw.pipeline.Pipeline`: the same boundaries, named within
    a scope.

    A step (a datapath function given a scope) crosses its boundaries by their own names
    (``decode``); the scope crosses the pipeline's ``<sections>_decode`` (``sections``: by
    default the scope's ``prefix``), whose registers are then named
    ``<pipeline>_<sections>_decode...``.  :meth:`name` prefixes the names of the step's own
    signals with ``prefix``.  Without a prefix every name is the pipeline's own, so a unit
    with one step builds the same netlist through its scope as on the pipeline itself.

    Steps in series have scopes of their own sections, declared one after the other.  Steps
    side by side (several dot steps of one tile) have scopes of different prefixes on the same
    ``sections``: the first step to cross a boundary crosses it
    (:meth:`hw.pipeline.Pipeline.boundary`), each other one crosses it beside it in
    registers of its own, ``<pipeline>_<prefix>_<name>`` (:meth:`hw.pipeline.Pipeline.beside`),
    in the same stages.  A scope crosses its boundaries in datapath order.

    Parameters
    ----------
    pipeline : hw.pipeline.Pipeline
    prefix : str or None
        The scope's name: a Verilog identifier fragment (letters, digits, ``_``), or None.
    sections : str or None
        The prefix of the pipeline's sections this scope crosses; by default ``prefix``.
    """

    def __init__(self, pipeline, prefix: str | None = None, sections=SAME):
        self._pipeline = pipeline
        self._prefix = _check_prefix("prefix", prefix)
        self._sections = prefix if sections is SAME else _check_prefix("sections", sections)
        self._crossed = -1  # the pipeline's index of the last boundary this scope crossed

    @property
    def pipeline(self):
        return self._pipeline

    @property
    def prefix(self) -> str | None:
        return self._prefix

    @property
    def sections(self) -> str | None:
        """The prefix of the pipeline's sections this scope crosses."""
        return self._sections

    @property
    def module(self):
        """The pipeline's module, where the step builds its logic."""
        return self._pipeline.module

    def section(self, name: str) -> str:
        """The pipeline's name of this scope's boundary ``name``."""
        return _join(self._sections, name)

    def name(self, name: str) -> str:
        """A signal name within this scope: ``<prefix>_<name>``, or ``name`` without one."""
        return _join(self._prefix, name)

    def signal_name(self, name: str) -> str:
        """A signal name that also carries the pipeline's prefix, as its registers' names do:
        ``<pipeline>_<prefix>_<name>``."""
        return f"{self._pipeline.name}_{self.name(name)}"

    def scope(self, prefix: str) -> PipelineScope:
        """A scope within this one: ``<this prefix>_<prefix>``, on sections of that name."""
        return PipelineScope(self._pipeline, _join(self._prefix, prefix))

    @property
    def names(self) -> tuple[str, ...]:
        """This scope's boundaries (of the pipeline's, those in the scope's sections), by their
        names in the scope, in datapath order."""
        if self._sections is None:
            return self._pipeline.names
        head = f"{self._sections}_"
        return tuple(b[len(head):] for b in self._pipeline.names if b.startswith(head))

    def registers(self, name: str) -> bool:
        """:meth:`hw.pipeline.Pipeline.registers` of this scope's boundary ``name``."""
        return self._pipeline.registers(self.section(name))

    def enable(self, name: str):
        """:meth:`hw.pipeline.Pipeline.enable` of this scope's boundary ``name``."""
        return self._pipeline.enable(self.section(name))

    def boundary(self, value, name: str):
        """Carry ``value`` over this scope's boundary ``name``: the pipeline's
        (:meth:`hw.pipeline.Pipeline.boundary`), or, where a step beside this one crossed it
        already, in registers of this scope's (:meth:`hw.pipeline.Pipeline.beside`)."""
        section = self.section(name)
        pipe = self._pipeline
        index = pipe.names.index(section) if section in pipe.names else None
        if index is not None and index <= self._crossed:
            raise ValueError(f"boundary {name!r} crossed out of order in scope "
                             f"{self._prefix!r}")
        if index is None or not pipe.crossed(section):
            value = pipe.boundary(value, section)
        else:
            value = pipe.beside(value, section, self.name(name))
        self._crossed = index
        return value

    def cross(self, fields, name: str):
        """``fields`` (a Value, or a dict or list of them: :func:`hw.nets.wire`) as one
        signal ``<pipeline>_<prefix>_<name>_in``, carried over this scope's boundary ``name``:
        a section's state crossing its boundary, a ``data.View`` for a struct."""
        return self.boundary(wire(self.module, fields, self.signal_name(f"{name}_in")), name)

    def replicate(self, value, name: str, copies: int) -> list:
        """:meth:`hw.pipeline.Pipeline.replicate` over this scope's boundary ``name``; in a
        scope beside another (whose prefix is not its sections'), each copy in registers of
        this scope's, ``<pipeline>_<prefix>_<name>_r<c>``, on enable copies of their own
        (:meth:`hw.pipeline.Pipeline.beside`)."""
        if self._prefix == self._sections:
            return self._pipeline.replicate(value, self.section(name), copies)
        if not isinstance(copies, int) or isinstance(copies, bool) or copies < 1:
            raise ValueError(f"copies must be a positive int, not {copies!r}")
        section = self.section(name)
        if section == self._pipeline.names[-1]:
            raise ValueError(f"boundary {name!r} is the last one: its value cannot be "
                             f"replicated (the skid register holds one copy)")
        return [self._pipeline.beside(value, section, self.name(f"{name}_r{c}"))
                for c in range(copies)]

    def hold_when(self, flag):
        """:meth:`hw.pipeline.Pipeline.hold_when` (one flag for the whole pipeline)."""
        self._pipeline.hold_when(flag)
