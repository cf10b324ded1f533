"""Bulk mode: a simulation-only Verilog wrapper that streams a whole batch through a unit at
full simulator speed, and the cocotb / numpy side that feeds and checks it.

* :mod:`~tb.bulk.wrapper` -- the wrapper, generated from the template ``tb/bulk_wrapper.v``
  (:func:`bulk_wrapper`, :func:`sidecar_wrapper`) and its Verilator arguments;
* :mod:`~tb.bulk.build` -- :func:`wrap_unit`: a unit's wrapper and control file;
  :func:`prepare_unit`: generate a unit with ``hw`` and wrap it;
* :mod:`~tb.bulk.runner` -- :class:`BulkRunner`: one batch through the wrapper from cocotb;
* :mod:`~tb.bulk.jobs` -- :func:`run_jobs`: a list of :class:`BulkJob` built, simulated and
  checked as a pipeline, the host work in a forked host process;
* :mod:`~tb.bulk.__main__` -- ``python -m tb.bulk``: write a wrapper for use without cocotb.
"""

from .build import prepare_unit, wrap_unit
from .jobs import BulkBatch, BulkJob, BulkTally, run_jobs
from .runner import BulkRunner
from .wrapper import (
           DEPTH,
           PORT_NAMES,
           VERILATOR_ARGS,
           bulk_wrapper,
           sidecar_wrapper,
           write_bulk_wrapper,
)

__all__ = ["VERILATOR_ARGS", "DEPTH", "PORT_NAMES", "bulk_wrapper", "sidecar_wrapper",
           "write_bulk_wrapper", "prepare_unit", "wrap_unit", "BulkRunner", "BulkBatch",
           "BulkJob", "BulkTally", "run_jobs"]
