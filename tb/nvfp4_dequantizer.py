"""cocotb testbench of the NVFP4 dequantizer (:mod:`hw.nvfp4_dequantizer`), checked bit for bit
against ``golden.dequantize`` of nvfp4 MXArrays (:mod:`tb.nvfp4_stimulus`).

The model of the standard tests (:mod:`tb.standard_tests`): random blocks (scales 0x00..0x7F,
two level with a random positive finite P per block, subnormal P included; ``MX_BLOCKS`` in
the stream test, 20 times that in bulk), and every code at every scale byte under each
directed P (:data:`tb.nvfp4_stimulus.DIRECTED_P`) in the exhaustive sweep.  NaN results are
golden's canonical quiet NaN, compared as bits.

Coverage, one cover point ``element`` per output format and level: ``normal``,
``subnormal_result``, ``underflow_zero`` (a non-zero exact value that rounds to +-0),
``overflow`` (a finite exact value whose result is +-Inf), ``nan_scale`` (0x7F),
``zero_scale`` (0x00), ``neg_zero_code``, and two level ``ps_rounded`` (``f(P * s)`` inexact),
``ps_subnormal``, ``ps_zero`` (``P * s`` non-zero, ``f(P * s) = 0``), ``ps_inf``
(``f(P * s)`` overflows: zero codes give NaN).
"""

from __future__ import annotations

import numpy as np

import golden
from golden.scale_format import UE4M3

from . import nvfp4_stimulus as stim
from . import standard_tests
from .batch import Batch
from .bulk import BulkJob
from .coverage.model import CoverageModel, point

BINS = ("normal", "subnormal_result", "underflow_zero", "overflow", "nan_scale", "zero_scale",
        "neg_zero_code", "ps_rounded", "ps_subnormal", "ps_zero", "ps_inf")
_TWO_LEVEL_ONLY = ("ps_rounded", "ps_subnormal", "ps_zero", "ps_inf")


def coverage_model(output_format, levels: int) -> CoverageModel:
    """The cover point of one output format and level (bins: module docstring)."""
    why = {b: "single level: f(P * s) is s itself, exact" for b in _TWO_LEVEL_ONLY} \
        if levels == 1 else {}
    if levels == 1:
        why["subnormal_result"] = why["underflow_zero"] = why["overflow"] = (
            "single level: |e2m1 * s| is in [2^-10, 2688], normal in every output format")
    return CoverageModel("nvfp4-dequantizer", f"{output_format}-l{levels}",
                         (point("element", BINS, why),))


def classify(scales, codes, p_bits, values, output_format) -> dict:
    """Bin hit counts ``{"element": {bin: count}}`` of a batch (golden's ``values``)."""
    ff = golden.float_format(output_format)
    n, k = codes.shape
    sv = UE4M3.table()[scales.astype(np.int64)]
    p = np.ones(n) if p_bits is None else p_bits.astype(np.uint32).view(np.float32) \
        .astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        ps = (sv * p).astype(np.float32).astype(np.float64)  # f(P * s)
        exact = golden.decode(codes.astype(np.int64), "fp4_e2m1") * ps[:, None]
    out = values.astype(ff.uint).view(ff.dtype).astype(np.float64)
    live = np.isfinite(exact) & (exact != 0)
    tiny = 2.0 ** (1 - ff.bias)
    lanes = np.ones((n, k), bool)
    counts = {
        "normal": live & (np.abs(out) >= tiny) & np.isfinite(out),
        "subnormal_result": live & (out != 0) & (np.abs(out) < tiny),
        "underflow_zero": live & (out == 0),
        "overflow": live & np.isinf(out),
        "nan_scale": lanes & (scales == UE4M3.nan_code)[:, None],
        "zero_scale": lanes & (scales == 0)[:, None],
        "neg_zero_code": (codes == 0x8) & (scales != UE4M3.nan_code)[:, None],
    }
    if p_bits is not None:
        fin = np.isfinite(sv * p)
        blk = {"ps_rounded": fin & (ps != sv * p) & (ps != 0),
               "ps_subnormal": (ps != 0) & (ps < 2.0 ** -126),
               "ps_zero": fin & (sv * p != 0) & (ps == 0), "ps_inf": fin & np.isinf(ps)}
        counts.update({b: lanes & v[:, None] for b, v in blk.items()})
    return {"element": {b: int(np.count_nonzero(v)) for b, v in counts.items()}}


class NVFP4Batch(Batch):
    """Blocks of scales, codes and P, and golden's output values."""

    def __init__(self, model: NVFP4Model, scales, codes, p_bits):
        self.model, self.scales, self.codes, self.p_bits = model, scales, codes, p_bits
        self.values = stim.expected(scales, codes, p_bits, model.output, model.k)
        fields = {"scale": scales, "codes": codes}
        if p_bits is not None:
            fields["tensor_scale"] = p_bits
        super().__init__(model.in_layout.pack(len(scales), **fields),
                         model.out_layout.pack(len(scales), data=self.values))

    def coverage_counts(self):
        return classify(self.scales, self.codes, self.p_bits, self.values, self.model.output)

    def describe(self, row, got):
        m = self.model
        got_values = m.out_layout.unpack(got[None, :])["data"][0]
        p = "" if self.p_bits is None else f", P {int(self.p_bits[row]):#010x}"
        lines = [f"block {row}: scale {int(self.scales[row]):#04x}{p}"]
        for lane in np.flatnonzero(got_values != self.values[row])[:4]:
            lines.append(f"  lane {lane}: code {int(self.codes[row, lane]):#x}: expected "
                         f"{int(self.values[row, lane]):#x}, actual {int(got_values[lane]):#x}")
        return "\n".join(lines)


class NVFP4Model(standard_tests.UnitModel):
    """Unit parameters (from the sidecar), stimulus and golden expectations."""

    def __init__(self, config):
        super().__init__(config)
        self.output = self.parameters["output"]
        self.levels = self.parameters["levels"]

    def interface(self):
        """``scale`` (8), ``codes`` (k x 4) and, two level, ``tensor_scale`` (32); out
        ``data`` (k output values)."""
        fields = [("scale", 8), ("codes", self.k * 4)]
        if self.levels == 2:
            fields.append(("tensor_scale", 32))
        return fields, [("data", self.k * golden.float_format(self.output).bits)]

    def coverage_model(self):
        return coverage_model(self.output, self.levels)

    def random_batch(self, rng, n):
        return NVFP4Batch(self, *stim.random_inputs(rng, n, self.k, self.levels))

    def _exhaustive(self):
        p = None if self.levels == 1 else stim.DIRECTED_P
        return NVFP4Batch(self, *stim.exhaustive_inputs(self.k, p))

    def stream_phases(self, rng):
        """Random blocks under random patterns, then the exhaustive set under bursty ones."""
        return [("random", self.random_batch(rng, self.config.blocks)),
                ("bursty", self._exhaustive())]

    def bulk_jobs(self, rng):
        """Every code x every scale under each directed P, the stream kept full; a large random
        batch with random gaps and backpressure."""
        idle, stall = (int(x) for x in rng.integers(0, 100, 2))
        jobs = [BulkJob("random", lambda: self.random_batch(rng, 20 * self.config.blocks),
                        idle, stall, drain=self.drain)]
        if self.config.sweeps:
            jobs.insert(0, BulkJob("every code x every scale", self._exhaustive,
                                   drain=self.drain))
        return jobs


standard_tests.register(globals(), NVFP4Model)
