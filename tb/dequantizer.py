"""cocotb testbench of the MX dequantizer, checked bit for bit against ``golden.dequantize``.

The model of the standard tests (:mod:`tb.standard_tests`): random codes and scales
(``MX_BLOCKS`` blocks in the stream test, 20 times that in bulk) and every code at every
scale (the exhaustive sweep).

NaN and Inf: the expectation is golden's output bits, compared as they are.  golden writes
the one NaN of docs/numerics.md section 4 for every NaN result (the canonical quiet NaN,
positive: 0x7FC00000, 0x7FC0, 0x7E00 for fp32, bf16, fp16) and +-Inf with the sign of the
element; a design that writes another NaN fails, and its report says "NaN with another sign
or payload" when that is the only difference.
"""

from __future__ import annotations

import numpy as np

import golden
from golden.stimulus import dequantizer_exhaustive_inputs as exhaustive_inputs
from golden.stimulus import dequantizer_random_inputs as random_inputs

from . import standard_tests
from .batch import Batch
from .bulk import BulkJob
from .coverage.dequantizer import classify_dequantizer, dequantizer_model
from .describe import (
    describe_code,
    describe_float,
    describe_lanes,
    describe_scale,
    nan_differs_only,
)


class DequantizerBatch(Batch):
    """Blocks of scales and codes and golden's output values."""

    def __init__(self, model: DequantizerModel, scales, codes):
        self.model, self.scales, self.codes = model, scales, codes
        n = scales.shape[0]
        self.values = model.expected(scales, codes)
        super().__init__(model.in_layout.pack(n, scale=scales, codes=codes),
                         model.out_layout.pack(n, data=self.values))

    def coverage_counts(self):
        m = self.model
        return classify_dequantizer(self.scales, self.codes, self.values, fmt=m.fmt,
                                    output_format=m.output_format)

    def describe(self, row, got):
        m = self.model
        got_values = m.out_layout.unpack(got[None, :])["data"][0]
        scale = int(self.scales[row])
        lines = [f"block {row}: scale {describe_scale(scale)}"]

        def lane_lines(lane):
            return (f"  lane {lane}: code {describe_code(self.codes[row, lane], m.fmt, scale)}"
                    f"\n    expected {describe_float(self.values[row, lane], m.output_format)}"
                    f"\n    actual   {describe_float(got_values[lane], m.output_format)}")

        lines += describe_lanes(np.flatnonzero(got_values != self.values[row]), lane_lines)
        if nan_differs_only(self.values[row], got_values, m.output_format):
            lines.append(f"  (NaN with another sign or payload: every wrong lane is a NaN; "
                         f"the contract's NaN is {m.output_format.qnan_bits:#x}, "
                         f"docs/numerics.md section 4)")
        return "\n".join(lines)


class DequantizerModel(standard_tests.UnitModel):
    """Unit parameters (from the sidecar), stimulus and golden expectations."""

    def __init__(self, config):
        super().__init__(config)
        self.fmt = self.formats["format"]
        self.output_format = golden.float_format(self.parameters["output"])

    def interface(self):
        """docs/quantizer.md, Stream interface: ``scale`` (8) and ``codes`` (k element codes);
        out ``data`` (k output values)."""
        k = self.k
        return ([("scale", 8), ("codes", k * self.fmt.bits)],
                [("data", k * self.output_format.bits)])

    def coverage_model(self):
        return dequantizer_model(self.fmt, self.output_format)

    def expected(self, scales, codes) -> np.ndarray:
        """Output bits (n, k): golden's values, bit for bit."""
        n = scales.shape[0]
        mx = golden.MXArray(scales.astype(np.uint8)[:, None], codes.astype(np.uint8),
                            self.fmt, self.k, 1, (n, self.k))
        with np.errstate(over="ignore"):
            values = golden.dequantize(mx, self.output_format.dtype)
        return values.view(self.output_format.uint).astype(np.uint64)

    def random_batch(self, rng, n):
        return DequantizerBatch(self, *random_inputs(rng, n, self.fmt, self.k))

    def stream_phases(self, rng):
        """Random blocks; the first half under random patterns, the second under bursty
        ones."""
        scales, codes = random_inputs(rng, self.config.blocks, self.fmt, self.k)
        half = scales.shape[0] // 2
        return [("random", DequantizerBatch(self, scales[:half], codes[:half])),
                ("bursty", DequantizerBatch(self, scales[half:], codes[half:]))]

    def bulk_jobs(self, rng):
        """Every code x every scale with the stream kept full (the throughput case); a large
        random batch with random gaps and backpressure."""
        idle, stall = (int(x) for x in rng.integers(0, 100, 2))
        jobs = [BulkJob("random", lambda: self.random_batch(rng, 20 * self.config.blocks),
                        idle, stall, drain=self.drain)]
        if self.config.sweeps:
            jobs.insert(0, BulkJob("every code x every scale", lambda: DequantizerBatch(
                self, *exhaustive_inputs(self.fmt, self.k)), drain=self.drain))
        return jobs


# The cocotb tests of this testbench: the standard tests on this unit's model.
standard_tests.register(globals(), DequantizerModel)
