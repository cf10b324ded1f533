"""Bulk mode: a simulation-only Verilog wrapper that streams a whole batch through a unit at
full simulator speed, and the cocotb / numpy side that feeds and checks it.

* :mod:`~tb.bulk.wrapper` -- the wrapper, generated from the template ``tb/bulk_wrapper.v``
  (:func:`bulk_wrapper`), its Verilator arguments and control file;
* :mod:`~tb.bulk.build` -- :func:`prepare_unit`: generate a unit with ``hw`` plus its wrapper;
* :mod:`~tb.bulk.runner` -- :class:`BulkRunner`: one batch through the wrapper from cocotb;
* :mod:`~tb.bulk.jobs` -- :func:`run_jobs`: a list of :class:`BulkJob` built, simulated and
  checked as a pipeline;
* :mod:`~tb.bulk.__main__` -- ``python -m tb.bulk``: write a wrapper for use without cocotb.
"""

from .build import prepare_unit
from .jobs import BulkBatch, BulkJob, BulkTally, run_jobs
from .runner import BulkRunner
from .wrapper import DEPTH, VERILATOR_ARGS, bulk_wrapper, public_control, write_bulk_wrapper

__all__ = ["VERILATOR_ARGS", "DEPTH", "bulk_wrapper", "public_control", "write_bulk_wrapper",
           "prepare_unit", "BulkRunner", "BulkBatch", "BulkJob", "BulkTally", "run_jobs"]
