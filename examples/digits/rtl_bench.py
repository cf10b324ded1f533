"""cocotb module of :mod:`examples.digits.rtl_layer`: the digits layer's runs through the GEMM
tile.

Reads the operands file named by ``DIGITS_LAYER`` (``layer.npz``: the images' and weights'
MX codes and scales, the bias starts), drives the tile's runs (:func:`rtl_layer.tile_runs`,
interleaved over the contexts by :class:`tb.gemm.GemmBatch`) back to back through the bulk
wrapper (:class:`tb.bulk.BulkRunner`), and writes the tile's outputs, placed in the images x
outputs matrix, with the beats and cycles to :data:`OUT_NAME` beside the operands.  The
comparison with ``golden.matmul`` is the caller's (:func:`rtl_layer.run_layer`); the
batch's own per-tile check (``golden.matmul`` of each run) is logged here as well.
"""

from __future__ import annotations

import os
from pathlib import Path

import cocotb
import numpy as np

import golden
from tb.bulk import BulkRunner
from tb.bulk.runner import pass_through
from tb.gemm import GemmBatch, GemmModel
from tb.standard_tests import UnitConfig

from .rtl_layer import LAYER_ENV, tile_runs

#: The results file written beside the operands.
OUT_NAME = "layer_out.npz"


def _operands(path: Path):
    d = np.load(path)
    fmt = str(d["fmt"])
    k = 32
    x = golden.MXArray(d["x_scales"], d["x_codes"], fmt, k, 1, d["x_codes"].shape)
    w = golden.MXArray(d["w_scales"], d["w_codes"], fmt, k, 0, d["w_codes"].shape)
    return x, w, d["acc"]


@cocotb.test()
async def layer(dut):
    """The layer's runs through the tile, back to back; outputs saved for the caller."""
    config = UnitConfig.from_env()
    model = GemmModel(config)
    model.check_interface()
    path = Path(os.environ[LAYER_ENV])
    x, w, acc = _operands(path)
    placed = tile_runs(model, x, w, acc)
    batch = GemmBatch(model, [run for _, _, run in placed])
    pass_through(dut)
    runner = BulkRunner(dut, model.in_layout, model.out_layout, latency=model.latency)
    await runner.reset()
    out, cycles = await runner.run(batch.stim, seed=config.seed, out_count=batch.out_count,
                                   drain=model.drain)
    bad = batch.check(out, dut._log)
    rows = model.out_layout.unpack(out)
    got = np.zeros((x.shape[0], w.shape[1]), np.uint32)
    for beat, j in enumerate(batch.ended):
        i0, j0, _ = placed[j]
        for r in range(model.rows):
            got[i0 + r, j0:j0 + model.cols] = rows[f"result.row{r}"][beat]
    np.savez(path.parent / OUT_NAME, got=got, beats=len(batch), cycles=cycles)
    dut._log.info("digits layer: %d runs, %d beats in %d cycles, %d runs differ from "
                  "their golden.matmul", len(placed), len(batch), cycles, bad)
