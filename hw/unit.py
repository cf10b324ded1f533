"""The base class of the MX units: a stream in, a stream out, a pipeline, a sidecar.

Every unit (:class:`hw.quantizer.MXQuantizer`, :class:`hw.dequantizer.MXDequantizer`,
:class:`hw.dot.MXDot`, :class:`hw.dot.MXDotGeneral`) is a :class:`Unit`: a component with a
valid/ready stream ``i`` and a stream ``o`` whose payloads are ``StructLayout``\\ s, built on
one :class:`hw.pipeline.Pipeline` over its ``sections``.  The base class owns what every unit
states the same way: the depth (``stages``, ``max_stages``, ``latency``), the pipeline's
options (``extract_reset``, ``enable_load``), the facts the JSON sidecar records
(``module_name``, ``parameters``, ``i_ready_registered``, ``primitives``) and the sidecar
itself (:meth:`Unit.sidecar`).
"""

from __future__ import annotations

from collections.abc import Mapping

from amaranth.hdl import Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .params import check_stages
from .pipeline import Pipeline, default_stages

__all__ = ["Unit"]


class Unit(wiring.Component):
    """A unit: ``i`` and ``o`` streams of ``in_layout`` and ``out_layout``.

    A subclass sets ``sections`` (its datapath's sections, name -> estimated delay in ns, in
    order) and ``stages`` (with :meth:`_choose_stages`) before it builds a pipeline
    (:meth:`pipeline`), and defines :attr:`module_name` and :attr:`parameters`.

    Parameters
    ----------
    in_layout, out_layout : data.StructLayout
        The payloads of ``i`` and ``o``.

    Members
    -------
    i : In(stream.Signature(in_layout))
    o : Out(stream.Signature(out_layout))
    """

    #: ``i.ready`` is a register (the sidecar's ``flow_control``): the pipeline's stage enable
    #: (:class:`hw.pipeline.Pipeline`).  A unit whose ``i.ready`` has gates sets False.
    i_ready_registered: bool = True
    #: Vendor cells the Verilog instantiates (the sidecar's ``primitives``): none.
    primitives: tuple[str, ...] = ()
    #: :class:`hw.pipeline.Pipeline`'s ``extract_reset`` for this unit's pipeline.
    extract_reset: bool = True
    #: :class:`hw.pipeline.Pipeline`'s ``enable_load`` for this unit's pipeline.
    enable_load: int | None = None

    def __init__(self, in_layout: data.StructLayout, out_layout: data.StructLayout):
        self.in_layout = in_layout
        self.out_layout = out_layout
        super().__init__({
            "i": In(stream.Signature(in_layout)),
            "o": Out(stream.Signature(out_layout)),
        })

    def _choose_stages(self, stages, deepest: Mapping[str, float]) -> int:
        """Set and return ``stages`` (None: :func:`hw.pipeline.default_stages` of
        ``deepest``, validated in ``1..len(deepest)``) and ``max_stages``
        (``len(deepest)``: every boundary of the deepest pipeline's sections registered)."""
        self.max_stages = len(deepest)
        self.stages = check_stages(default_stages(deepest.values()) if stages is None
                                   else stages, self.max_stages)
        return self.stages

    @property
    def latency(self) -> int:
        """Cycles from a block's acceptance to its result, without backpressure: ``stages``."""
        return self.stages

    @property
    def module_name(self) -> str:
        """The Verilog module's name, a Verilog identifier that encodes the parameters."""
        raise NotImplementedError

    @property
    def parameters(self) -> dict:
        """The parameters as a JSON-able dict (the sidecar's ``parameters``)."""
        raise NotImplementedError

    def pipeline(self, m: Module, name: str) -> Pipeline:
        """A :class:`hw.pipeline.Pipeline` over ``sections`` at depth ``stages`` with this
        unit's options; ``name`` prefixes its signals."""
        return Pipeline(m, self.sections, self.stages, name=name,
                        enable_load=self.enable_load, extract_reset=self.extract_reset)

    def sidecar(self, unit: str, verilog: str | None = None) -> dict:
        """The JSON sidecar of this unit as the ``generate`` subcommand ``unit``
        (:func:`hw.sidecar.sidecar`; ``verilog``, the module's text, adds its hash)."""
        from .sidecar import sidecar

        return sidecar(self, unit, verilog)
