"""cocotb testbench of the MX dequantizer, checked bit for bit against golden.

Same structure and environment as :mod:`tb.quantizer` (toplevel: the unit's bulk wrapper).
NaN: the RTL writes the canonical quiet NaN of the output format (0x7FC00000, 0x7FC0,
0x7E00).  golden's NaN results carry whatever sign and payload numpy's arithmetic produced
(e.g. 0xFFC00000 for a negative fp8_e4m3 NaN code), which the contract does not define, so the
expectation is golden's value with every NaN replaced by the canonical one: NaN-ness is
compared through golden, the exact NaN pattern against the RTL's documented choice.
"""

from __future__ import annotations

import time

import numpy as np

import golden
from golden.stimulus import dequantizer_exhaustive_inputs as exhaustive_inputs
from golden.stimulus import dequantizer_random_inputs as random_inputs

from .bulk import BulkJob, BulkRunner, finish_bulk_run, run_jobs
from .quantizer import _bulk_start, _env, describe_code, describe_float
from .report import write_summary
from .stream import BitLayout, StreamTB, bursty_pattern, random_pattern


class DequantizerModel:
    def __init__(self, sidecar: dict):
        p = sidecar["parameters"]
        self.fmt = golden.element_format(p["format"])
        self.k = p["block_size"]
        self.ff = golden.float_format(p["output"])
        self.latency = sidecar["latency"]
        self.li = BitLayout.from_sidecar(sidecar, "i__payload")
        self.lo = BitLayout.from_sidecar(sidecar, "o__payload")
        ff = self.ff
        self.qnan = ff.qnan_bits

    def expected(self, scales, codes) -> np.ndarray:
        """Output bits (n, k): golden's values, NaNs canonical."""
        n = scales.shape[0]
        mx = golden.MXArray(scales.astype(np.uint8)[:, None], codes.astype(np.uint8),
                            self.fmt, self.k, 1, (n, self.k))
        with np.errstate(over="ignore"):
            vals = golden.dequantize(mx, self.ff.dtype)
        nan = np.isnan(vals.astype(np.float32))
        return np.where(nan, self.qnan, vals.view(self.ff.uint)).astype(np.uint64)


class DBatch:
    def __init__(self, model: DequantizerModel, scales, codes):
        self.model, self.scales, self.codes = model, scales, codes
        n = scales.shape[0]
        self.stim = model.li.pack(n, scale=scales, codes=codes)
        self.values = model.expected(scales, codes)
        self.exp = model.lo.pack(n, data=self.values)

    def __len__(self):
        return self.scales.shape[0]

    def describe_row(self, b, got_row):
        m = self.model
        got = m.lo.unpack(got_row[None, :])["data"][0]
        s = int(self.scales[b])
        lines = [f"block {b}: scale {s} (2^{s - 127})" if s != 255 else f"block {b}: scale 255"]
        bad = np.nonzero(got != self.values[b])[0]
        for lane in bad[:4]:
            lines.append(f"  lane {lane}: code {describe_code(self.codes[b, lane], m.fmt, s)}"
                         f"\n    expected {describe_float(int(self.values[b, lane]), m.ff)}"
                         f"\n    actual   {describe_float(int(got[lane]), m.ff)}")
        if len(bad) > 4:
            lines.append(f"  ... {len(bad) - 4} more lanes")
        return "\n".join(lines)

    def check(self, got_bits, log, max_reports=5) -> int:
        bad = np.nonzero((got_bits != self.exp).any(axis=1))[0]
        for b in bad[:max_reports]:
            log.error("MISMATCH %s", self.describe_row(b, got_bits[b]))
        return int(bad.size)


try:
    import cocotb
except ImportError:
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    async def stream_random(dut):
        """Random codes and scales under random and bursty idle cycles and backpressure."""
        sidecar, seed, label, n = _env()
        rng = np.random.default_rng(seed)
        model = DequantizerModel(sidecar)
        await _bulk_start(dut)
        batch = DBatch(model, *random_inputs(rng, n, model.fmt, model.k))
        tb = StreamTB(dut, idle=random_pattern(rng, 0.3), backpressure=random_pattern(rng, 0.3))
        tb.scoreboard.describe = lambda i, e, a, ctx: batch.describe_row(
            ctx, model.lo.from_ints([a])[0])
        await tb.reset()
        t0 = time.perf_counter()
        ints, exp = model.li.to_ints(batch.stim), model.lo.to_ints(batch.exp)
        half = len(batch) // 2
        tb.send(ints[:half], zip(exp[:half], range(half), strict=True))
        await tb.drain(40 * len(batch) + 100)
        tb.source.idle = bursty_pattern(rng)
        tb.sink.backpressure = bursty_pattern(rng, 7)
        tb.send(ints[half:], zip(exp[half:], range(half, len(batch)), strict=True))
        await tb.drain(40 * len(batch) + 100)
        tb.finish_stream_run(f"{label} [stream]", model.k, seed, time.perf_counter() - t0)

    @cocotb.test()
    async def reset_in_traffic(dut):
        """Reset with blocks in flight leaves the unit empty."""
        sidecar, seed, label, n = _env()
        rng = np.random.default_rng(seed + 1)
        model = DequantizerModel(sidecar)
        await _bulk_start(dut)
        batch = DBatch(model, *random_inputs(rng, 40, model.fmt, model.k))
        tb = StreamTB(dut, backpressure=random_pattern(rng, 0.5))
        await tb.reset()
        batch2 = DBatch(model, *random_inputs(rng, 30, model.fmt, model.k))
        after = await tb.check_reset_in_traffic(
            (model.li.to_ints(batch.stim), model.lo.to_ints(batch.exp)),
            (model.li.to_ints(batch2.stim), model.lo.to_ints(batch2.exp)))
        write_summary(config=f"{label} [reset]", blocks=after, elements=after * model.k,
                      mismatches=0, seed=seed)

    @cocotb.test()
    async def bulk_throughput_exhaustive(dut):
        """Back-to-back throughput; every code x every scale; a large random batch."""
        sidecar, seed, label, n = _env()
        rng = np.random.default_rng(seed + 2)
        model = DequantizerModel(sidecar)
        await _bulk_start(dut)
        runner = BulkRunner(dut, model.li, model.lo)
        await runner.reset()
        log = dut._log

        batch = DBatch(model, *random_inputs(rng, 1000, model.fmt, model.k))
        got, cycles = await runner.run(batch.stim, seed=seed)
        bad = batch.check(got, log)
        assert cycles == len(batch) + model.latency + 1, \
            f"{len(batch)} blocks took {cycles} cycles, expected {len(batch)} + latency " \
            f"{model.latency} + 1"
        # Every code x every scale with the stream kept full (the throughput case); a large
        # random batch with random gaps and backpressure (tb.bulk.run_jobs overlaps building
        # and checking the batches with the simulation).
        idle, stall = (int(x) for x in rng.integers(0, 100, 2))
        jobs = [BulkJob("every code x every scale",
                        lambda: DBatch(model, *exhaustive_inputs(model.fmt, model.k))),
                BulkJob("random",
                        lambda: DBatch(model, *random_inputs(rng, 20 * n, model.fmt, model.k)),
                        idle, stall)]
        tally = await run_jobs(runner, jobs, seed=seed + 1, log=log)
        finish_bulk_run(f"{label} [bulk]", model.k, seed, tally, runner, log,
                        extra_blocks=len(batch), extra_mismatches=bad)


