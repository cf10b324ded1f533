"""Cocotb pieces for ``amaranth.lib.stream`` ports, one concept per module:

* :mod:`~tb.stream.payload` -- :class:`BitLayout`, the payload codec (fields <-> bits <-> ints
  and memory files);
* :mod:`~tb.stream.patterns` -- idle and backpressure patterns (generators of bool);
* :mod:`~tb.stream.drivers` -- :class:`StreamSource` and :class:`StreamSink`;
* :mod:`~tb.stream.scoreboard` -- :class:`Scoreboard`, in-order comparison with a model;
* :mod:`~tb.stream.testbench` -- :class:`StreamTB`, the testbench base class (clock, reset,
  drivers, scoreboard).
"""

from .drivers import StreamSink, StreamSource
from .patterns import always, bursty_pattern, never, random_pattern
from .payload import BitLayout
from .scoreboard import Scoreboard
from .testbench import StreamTB

__all__ = ["BitLayout", "StreamSource", "StreamSink", "Scoreboard", "StreamTB",
           "random_pattern", "bursty_pattern", "never", "always"]
