"""Stream coverage of every testbench, counted on the driver and monitor side
(:class:`tb.stream.StreamSource`, :class:`tb.stream.StreamSink`,
:meth:`tb.stream.StreamTB.reset_with_data_in_flight`).

Cover point ``stream``, bins:

``stall_while_valid``          a cycle with ``o.valid`` high and ``o.ready`` low;
``bubble``                     a cycle in which the source holds data back (idle pattern);
``back_to_back``               input transfers on consecutive clock edges;
``reset_with_data_in_flight``  a reset while blocks are inside the unit.
"""

from __future__ import annotations

from .model import CoverageModel, Point

__all__ = ["STREAM_BINS", "stream_point", "with_stream"]

STREAM_BINS = ("stall_while_valid", "bubble", "back_to_back", "reset_with_data_in_flight")


def stream_point() -> Point:
    return Point("stream", STREAM_BINS)


def with_stream(model: CoverageModel) -> CoverageModel:
    """``model`` with the stream cover point added."""
    return CoverageModel(model.unit, model.config_class, (*model.points, stream_point()))
