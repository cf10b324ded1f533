"""cocotb testbench of the MX quantizer, checked bit for bit against golden.

Runs on the bulk wrapper of ``tb.bulk`` (toplevel ``<unit>_bulk``), so one Verilator build
serves both the cycle-level stream tests (``bulk = 0``: ``tb.stream`` drivers with idle and
backpressure patterns) and the bulk sweeps (``bulk = 1``).  Configuration comes from the
environment (set by ``tests/test_sim_quantizer.py``):

``MX_SIDECAR``  the unit's JSON sidecar (parameters, latency, payload layouts)
``MX_CONFIG``   label for the summary table
``MX_BLOCKS``   blocks per random run (stream mode; bulk runs use 20x)
``MX_SWEEPS``   ``1``: the exhaustive bf16/fp16 sweeps (default on)
``MX_ALL_MODES`` ``1`` (SIM_FULL): bulk sets run once per rounding x scale mode combination;
               otherwise once, with a random combination per block

The stimulus and the golden expectations are built here with vectorized numpy; helpers are
reused by ``tb.dequantizer``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

import golden
from golden.formats import ROUNDING_IDS, SCALE_MODE_IDS, FloatFormat
from golden.stimulus import quantizer_directed_blocks as directed_blocks
from golden.stimulus import quantizer_random_blocks as random_blocks
from golden.stimulus import quantizer_sweep_blocks as sweep_blocks
from golden.stimulus import sweep_anchors

from .bulk import BulkJob, BulkRunner, finish_bulk_run, run_jobs
from .report import write_summary
from .stream import BitLayout, StreamTB, bursty_pattern, random_pattern

#: Mode names by runtime id (the ids are golden.formats' ROUNDING_IDS / SCALE_MODE_IDS).
ROUNDINGS = tuple(sorted(ROUNDING_IDS, key=ROUNDING_IDS.get))
SCALE_MODES = tuple(sorted(SCALE_MODE_IDS, key=SCALE_MODE_IDS.get))


# ----------------------------------------------------------------------------------------------
# Decoding for humans
# ----------------------------------------------------------------------------------------------
def describe_float(bits: int, ff: FloatFormat) -> str:
    """``0x3f800000 = 1.0 (s0 e0x7f m0x0)``."""
    s = bits >> (ff.bits - 1)
    e = (bits >> ff.mbits) & ((1 << ff.ebits) - 1)
    m = bits & ((1 << ff.mbits) - 1)
    v = np.array([bits], ff.uint).view(ff.dtype)[0]
    return f"{bits:#0{ff.bits // 4 + 2}x} = {float(v)!r} (s{s} e{e:#x} m{m:#x})"


def describe_code(code: int, fmt, scale: int | None = None) -> str:
    """``0x38 = s0 e0111 m000 = 1.0 [x 2^-3 = 0.125]`` (int8: two's complement)."""
    code = int(code)
    v = float(golden.decode(np.array([code], np.uint8), fmt)[0])
    if fmt.twos_complement:
        n = code - (1 << fmt.bits) if code >> (fmt.bits - 1) else code
        head = f"{code:#04x} = int {n} = {v!r}"
    else:
        s = code >> (fmt.bits - 1)
        e = (code >> fmt.mbits) & ((1 << fmt.ebits) - 1)
        m = code & ((1 << fmt.mbits) - 1)
        head = f"{code:#04x} = s{s} e{e:0{fmt.ebits}b} m{m:0{fmt.mbits}b} = {v!r}"
    if scale is not None and scale != 255:
        head += f" x 2^{scale - 127} = {v * 2.0 ** (scale - 127)!r}"
    return head


# ----------------------------------------------------------------------------------------------
# Golden expectations (stimulus generators: golden.stimulus, shared with the vectors CLI)
# ----------------------------------------------------------------------------------------------
class QuantizerModel:
    """Unit parameters (from the sidecar), payload codecs and golden expectations."""

    def __init__(self, sidecar: dict):
        p = sidecar["parameters"]
        self.sidecar = sidecar
        self.params = p
        self.fmt = golden.element_format(p["format"])
        self.k = p["block_size"]
        self.ff = golden.float_format(p["input"])
        self.rounding = p["rounding"]
        self.scale_mode = p["scale_mode"]
        self.random_bits = p["random_bits"]
        self.latency = sidecar["latency"]
        self.li = BitLayout.from_sidecar(sidecar, "i__payload")
        self.lo = BitLayout.from_sidecar(sidecar, "o__payload")

    def modes(self, rng, n):
        """Per-block rounding and scale-mode ids (random if runtime, else the fixed one)."""
        r = (rng.integers(0, 4, n) if self.rounding == "runtime"
             else np.full(n, ROUNDING_IDS[self.rounding]))
        s = (rng.integers(0, 2, n) if self.scale_mode == "runtime"
             else np.full(n, SCALE_MODE_IDS[self.scale_mode]))
        return r, s

    def all_modes(self):
        rs = range(4) if self.rounding == "runtime" else [ROUNDING_IDS[self.rounding]]
        ss = range(2) if self.scale_mode == "runtime" else [SCALE_MODE_IDS[self.scale_mode]]
        return [(r, s) for r in rs for s in ss]

    def stimulus(self, raw, rnd, smode, rand):
        """Input payload bit matrix."""
        n = raw.shape[0]
        fields = {"data": raw}
        if "random" in self.li.fields:
            fields["random"] = rand
        if "rounding" in self.li.fields:
            fields["rounding"] = rnd
        if "scale_mode" in self.li.fields:
            fields["scale_mode"] = smode
        return self.li.pack(n, **fields)

    def expected(self, raw, rnd, smode, rand):
        """(scales (n,), codes (n, k)) from golden, block by block in its own modes."""
        n = raw.shape[0]
        scales = np.empty(n, np.uint8)
        codes = np.empty((n, self.k), np.uint8)
        vals = raw.view(self.ff.dtype)
        for r in np.unique(rnd):
            for s in np.unique(smode):
                sel = (rnd == r) & (smode == s)
                if not sel.any():
                    continue
                stoch = ROUNDINGS[r] == "stochastic"
                mx = golden.quantize(vals[sel], self.fmt, block_size=self.k,
                                     scale_mode=SCALE_MODES[s], rounding=ROUNDINGS[r],
                                     random=rand[sel] if stoch else None,
                                     random_bits=self.random_bits if stoch else 8)
                scales[sel] = mx.scales[:, 0]
                codes[sel] = mx.codes
        return scales, codes

    def describe(self, b, raw, rnd, smode, rand, exp_scale, exp_codes, got_scale, got_codes):
        def scale(x):
            return "255 (NaN)" if x == 255 else f"{x} (2^{int(x) - 127})"

        lines = [f"block {b} (rounding={ROUNDINGS[rnd]}, scale_mode={SCALE_MODES[smode]}): "
                 f"scale expected {scale(exp_scale)} got {scale(got_scale)}"]
        bad = np.nonzero(exp_codes != got_codes)[0]
        for lane in bad[:4]:
            lines.append(
                f"  lane {lane}: input {describe_float(int(raw[lane]), self.ff)}"
                + (f", random {int(rand[lane])}" if ROUNDINGS[rnd] == "stochastic" else "")
                + f"\n    expected {describe_code(exp_codes[lane], self.fmt, int(exp_scale))}"
                + f"\n    actual   {describe_code(got_codes[lane], self.fmt, int(got_scale))}")
        if len(bad) > 4:
            lines.append(f"  ... {len(bad) - 4} more lanes")
        return "\n".join(lines)


class Batch:
    """A set of blocks with their modes, random bits, stimulus and expectations."""

    def __init__(self, model: QuantizerModel, raw, rng):
        self.model = model
        n = raw.shape[0]
        self.raw = raw
        self.rnd, self.smode = model.modes(rng, n)
        rb = max(model.random_bits, 1)
        self.rand = rng.integers(0, 1 << rb, raw.shape)
        self.stim = model.stimulus(raw, self.rnd, self.smode, self.rand)
        self.scales, self.codes = model.expected(raw, self.rnd, self.smode, self.rand)
        self.exp = model.lo.pack(n, scale=self.scales, codes=self.codes)

    @classmethod
    def with_modes(cls, model, raw, rnd, smode, rng):
        b = cls.__new__(cls)
        b.model, b.raw, b.rnd, b.smode = model, raw, rnd, smode
        b.rand = rng.integers(0, 1 << max(model.random_bits, 1), raw.shape)
        b.stim = model.stimulus(raw, rnd, smode, b.rand)
        b.scales, b.codes = model.expected(raw, rnd, smode, b.rand)
        b.exp = model.lo.pack(raw.shape[0], scale=b.scales, codes=b.codes)
        return b

    def __len__(self):
        return self.raw.shape[0]

    def describe_row(self, b, got_bits_row):
        got = self.model.lo.unpack(got_bits_row[None, :])
        return self.model.describe(b, self.raw[b], self.rnd[b], self.smode[b], self.rand[b],
                                   self.scales[b], self.codes[b], int(got["scale"][0]),
                                   got["codes"][0])

    def check(self, got_bits, log, max_reports=5) -> int:
        """Compare all rows at once; log decoded reports of the first mismatches."""
        bad = np.nonzero((got_bits != self.exp).any(axis=1))[0]
        for b in bad[:max_reports]:
            log.error("MISMATCH %s", self.describe_row(b, got_bits[b]))
        return int(bad.size)


def _env():
    import cocotb

    sidecar = json.loads(Path(os.environ["MX_SIDECAR"]).read_text())
    seed = int(os.environ.get("MX_SEED") or cocotb.RANDOM_SEED)
    return sidecar, seed, os.environ.get("MX_CONFIG", sidecar["module"]), \
        int(os.environ.get("MX_BLOCKS") or 200)


def _describe_stream(batch: Batch):
    def describe(index, exp, actual, ctx):
        return batch.describe_row(ctx, batch.model.lo.from_ints([actual])[0])
    return describe


async def _bulk_start(dut):
    dut.osc_en.value = 0
    dut.bulk.value = 0
    dut.start.value = 0
    dut.count.value = 0
    dut.seed.value = 1
    dut.idle_thresh.value = 0
    dut.stall_thresh.value = 0


# ----------------------------------------------------------------------------------------------
# Tests
# ----------------------------------------------------------------------------------------------
try:
    import cocotb
except ImportError:  # imported outside a simulator (docs, tools)
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    async def stream_random_and_directed(dut):
        """Random and directed blocks under random idle cycles and backpressure."""
        sidecar, seed, label, n = _env()
        rng = np.random.default_rng(seed)
        model = QuantizerModel(sidecar)
        await _bulk_start(dut)
        raw = np.concatenate([directed_blocks(model.k, model.ff, model.fmt, rng),
                              random_blocks(rng, n, model.k, model.ff)])
        batch = Batch(model, raw, rng)
        tb = StreamTB(dut, idle=random_pattern(rng, 0.3), backpressure=random_pattern(rng, 0.3))
        tb.scoreboard.describe = _describe_stream(batch)
        await tb.reset()
        t0 = time.perf_counter()
        half = len(batch) // 2
        ints = model.li.to_ints(batch.stim)
        exp = model.lo.to_ints(batch.exp)
        tb.send(ints[:half], zip(exp[:half], range(half), strict=True))
        await tb.drain(40 * len(batch) + 100)
        # second half: bursty patterns, then no stalls at all
        tb.source.idle = bursty_pattern(rng)
        tb.sink.backpressure = bursty_pattern(rng, 7)
        rest = len(batch) - half
        tb.send(ints[half:], zip(exp[half:], range(half, len(batch)), strict=True))
        await tb.drain(40 * rest + 100)
        tb.finish_stream_run(f"{label} [stream]", model.k, seed, time.perf_counter() - t0)

    @cocotb.test()
    async def reset_in_traffic(dut):
        """Reset while blocks are in flight: nothing comes out afterwards until new input."""
        sidecar, seed, label, n = _env()
        rng = np.random.default_rng(seed + 1)
        model = QuantizerModel(sidecar)
        await _bulk_start(dut)
        batch = Batch(model, random_blocks(rng, 40, model.k, model.ff), rng)
        tb = StreamTB(dut, backpressure=random_pattern(rng, 0.5))
        tb.scoreboard.describe = _describe_stream(batch)
        await tb.reset()
        batch2 = Batch(model, random_blocks(rng, 30, model.k, model.ff), rng)
        after = await tb.check_reset_in_traffic(
            (model.li.to_ints(batch.stim), model.lo.to_ints(batch.exp)),
            (model.li.to_ints(batch2.stim), model.lo.to_ints(batch2.exp)),
            describe_after=_describe_stream(batch2))
        write_summary(config=f"{label} [reset]", blocks=after, elements=after * model.k,
                      mismatches=0, seed=seed)

    @cocotb.test()
    async def bulk_throughput_sweeps(dut):
        """Back-to-back throughput, then bulk random / directed / exhaustive sweeps."""
        sidecar, seed, label, n = _env()
        rng = np.random.default_rng(seed + 2)
        model = QuantizerModel(sidecar)
        await _bulk_start(dut)
        runner = BulkRunner(dut, model.li, model.lo)
        await runner.reset()
        log = dut._log

        # throughput: N blocks back to back, ready held high -> N + latency cycles (+1: the
        # wrapper notices completion one cycle after the last output)
        batch = Batch(model, random_blocks(rng, 1000, model.k, model.ff), rng)
        got, cycles = await runner.run(batch.stim, seed=seed)
        bad = batch.check(got, log)
        assert cycles == len(batch) + model.latency + 1, \
            f"{len(batch)} blocks took {cycles} cycles, expected {len(batch)} + latency " \
            f"{model.latency} + 1"

        # The sweeps: built, simulated and checked as a pipeline of jobs (tb.bulk.run_jobs).
        # Random and directed blocks run with random gaps and backpressure; the exhaustive
        # sweeps with the stream kept full, which is the throughput case.
        def job(what, make_raw, patterns):
            def make():
                raw = make_raw()
                nb = raw.shape[0]
                if all_modes:  # SIM_FULL: every mode combination over the whole set
                    rnd = np.concatenate([np.full(nb, r) for r, _ in model.all_modes()])
                    smode = np.concatenate([np.full(nb, s) for _, s in model.all_modes()])
                    raw = np.tile(raw, (len(model.all_modes()), 1))
                else:  # default: a random mode combination per block (runtime builds)
                    rnd, smode = model.modes(rng, nb)
                return Batch.with_modes(model, raw, rnd, smode, rng)
            idle, stall = (int(x) for x in rng.integers(0, 100, 2)) if patterns else (0, 0)
            return BulkJob(what, make, idle, stall)

        all_modes = os.environ.get("MX_ALL_MODES") == "1"
        jobs = [job("random", lambda: random_blocks(rng, 20 * n, model.k, model.ff), True),
                job("directed", lambda: directed_blocks(model.k, model.ff, model.fmt, rng),
                    True)]
        if os.environ.get("MX_SWEEPS", "1") == "1":
            sources = [golden.BF16, golden.FP16] if model.ff is golden.FP32 else [model.ff]
            jobs += [job(f"all {src.name}",
                         lambda src=src: sweep_blocks(model.k, model.ff, src,
                                                      sweep_anchors(model.ff)), False)
                     for src in sources]
        tally = await run_jobs(runner, jobs, seed=seed + 1, log=log)
        finish_bulk_run(f"{label} [bulk]", model.k, seed, tally, runner, log,
                        extra_blocks=len(batch), extra_mismatches=bad)
