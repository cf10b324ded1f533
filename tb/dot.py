"""cocotb testbench of the MX dot-product units (``hw.dot.MXDot``, ``hw.dot.MXDotGeneral``),
checked bit for bit against ``golden.dot_blocks``.

Two ways to drive the same build:

* **stream mode**: :class:`tb.stream.StreamTB` drives one whole payload (one integer) per
  cycle, with idle and backpressure patterns; a scoreboard compares every output with golden
  and prints a decoded report of the inputs and of the expected and actual fp32.
* **bulk mode**: the project's simulation-only wrapper (:mod:`tb.bulk`, shared with the
  quantizer and dequantizer) loads a batch into memory beside the unit, runs it self-clocked
  with xorshift idle/stall cycles while Python only waits for ``done``, and the responses
  are checked vectorized.  Used for the exhaustive product sweeps and the long random runs.

Configuration comes from the environment variable ``MX_DOT`` (JSON, written by
``tests/test_sim_dot.py``): ``unit`` ("dot" or "dot-general"), ``fmt_a``, ``fmt_b``, ``k``,
``stages``, ``contexts``, ``sidecar`` (path of the unit's JSON sidecar), ``blocks`` (random
block budget), ``exhaustive`` (bool), ``full`` (SIM_FULL: every scale setting of the 8-bit x
8-bit sweeps), ``long_k`` (longest DotGeneral run).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

import golden
from golden.formats import FP32

# Stimulus generators are shared with `python -m golden vectors`.
from golden.stimulus import dot_accumulators as accumulators
from golden.stimulus import dot_directed_blocks as directed_blocks
from golden.stimulus import dot_random_blocks as random_blocks
from golden.stimulus import random_fp32
from tb.bulk import BulkJob, BulkRunner, run_jobs
from tb.stream import BitLayout, StreamTB, bursty_pattern, never, random_pattern

#: Depth of the bulk wrapper's stimulus/response memories (vectors per bulk chunk).
BULK_DEPTH = 1 << 16


# ----------------------------------------------------------------------------------------------
# Reports
# ----------------------------------------------------------------------------------------------
def describe_fp32(bits: int) -> str:
    """``0x3f800000 (s=0 e=127 m=0x000000 = 1.0)``: the fields and the value."""
    bits = int(bits) & 0xFFFFFFFF
    s, e, m = bits >> 31, (bits >> 23) & 0xFF, bits & 0x7FFFFF
    v = np.array([bits], np.uint32).view(np.float32)[0]
    return f"{bits:#010x} (s={s} e={e} m={m:#08x} = {float(v)!r})"


def describe_block(fmt_a, fmt_b, sa, ca, sb, cb, c) -> str:
    fa, fb = golden.element_format(fmt_a), golden.element_format(fmt_b)
    va, vb = golden.decode(np.asarray(ca), fa), golden.decode(np.asarray(cb), fb)
    nz = [i for i in range(len(ca)) if int(ca[i]) or int(cb[i])]
    lanes = ", ".join(f"[{i}] {int(ca[i]):#x}({va[i]:g})*{int(cb[i]):#x}({vb[i]:g})"
                      for i in nz[:8])
    more = f" (+{len(nz) - 8} more)" if len(nz) > 8 else ""
    return (f"sa={int(sa)} sb={int(sb)} c={describe_fp32(c)}; non-zero lanes: "
            f"{lanes or 'none'}{more}")


# ----------------------------------------------------------------------------------------------
# The testbench
# ----------------------------------------------------------------------------------------------
class DotBatch:
    """MXDot blocks for a bulk job: stimulus rows, golden results, decoded mismatch reports."""

    def __init__(self, tb: DotTB, ca, sa, cb, sb, c, what: str):
        self.tb, self.what = tb, what
        self.blocks = (ca, sa, cb, sb, c)
        exp = golden.dot_blocks(ca[:, None], sa[:, None], cb[:, None], sb[:, None], tb.fa,
                                tb.fb, acc=c.view(np.float32)).view(np.uint32)
        self.stim = tb.pack(ca, sa, cb, sb, c)
        self.exp = tb.expected_out(exp)

    def __len__(self):
        return self.stim.shape[0]

    def check(self, got, log) -> int:
        tb, (ca, sa, cb, sb, c) = self.tb, self.blocks
        bad = np.flatnonzero(np.any(got != self.exp, axis=1))
        for j in bad[:10]:
            e, a = tb.out.to_ints(self.exp[j:j + 1])[0], tb.out.to_ints(got[j:j + 1])[0]
            where = f"{self.what} " + describe_block(tb.fa, tb.fb, sa[j], ca[j], sb[j], cb[j],
                                                     c[j])
            log.error("MISMATCH %s", tb._describe(int(j), e, a, where))
        return len(bad)


class DotTB(StreamTB):
    """:class:`StreamTB` plus the unit's payload codec, golden expectations and bulk mode."""

    def __init__(self, dut, cfg: dict, seed: int, *, bulk: bool = False):
        self.cfg = cfg
        self.fa, self.fb, self.k = cfg["fmt_a"], cfg["fmt_b"], cfg["k"]
        self.general = cfg["unit"] == "dot-general"
        side = json.loads(Path(cfg["sidecar"]).read_text())
        self.inp = BitLayout.from_sidecar(side, "i__payload")
        self.out = BitLayout.from_sidecar(side, "o__payload")
        self.latency = side["latency"]
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.contexts = cfg.get("contexts", 1)
        self.runner = None
        if bulk:  # self-clocked bulk runs only: no cocotb clock, drivers or monitors
            self.dut, self.log = dut, dut._log
            self.runner = BulkRunner(dut, self.inp, self.out)
        else:
            for name in ("osc_en", "bulk", "start"):
                getattr(dut, name).value = 0
            super().__init__(dut, describe=self._describe)
        self.checked_blocks = 0
        self.checked_elements = 0
        self.mismatches = 0
        self.elapsed = 0.0  # stream mode: time spent streaming
        self.started = time.perf_counter()  # bulk mode: the whole test counts

    # -- payloads --------------------------------------------------------------------------
    def pack(self, ca, sa, cb, sb, c, first=None, last=None, ctx=None) -> np.ndarray:
        n = len(sa)
        f = {"a.scale": sa, "a.codes": ca, "b.scale": sb, "b.codes": cb}
        if self.general:
            f.update({"c0": c, "first": first, "last": last})
            if "ctx" in self.inp.fields:
                f["ctx"] = ctx
        else:
            f["c"] = c
        return self.inp.pack(n, **f)

    def expected_out(self, result, ctx=None) -> np.ndarray:
        n = len(result)
        if self.general:
            f = {"result": result}
            if "ctx" in self.out.fields:
                f["ctx"] = ctx
            return self.out.pack(n, **f)
        return self.out.pack(n, value=result)

    def _describe(self, index, expected, actual, context):
        if self.general:
            e = self.out.unpack(self.out.from_ints([expected]))
            a = self.out.unpack(self.out.from_ints([actual]))
            exp_r, act_r = int(e["result"][0]), int(a["result"][0])
            ctx = f" ctx exp {int(e.get('ctx', [0])[0])} got {int(a.get('ctx', [0])[0])}"
        else:
            exp_r, act_r, ctx = expected, actual, ""
        return (f"output {index} ({context}): expected {describe_fp32(exp_r)}, "
                f"got {describe_fp32(act_r)}{ctx}")

    # -- stream mode: MXDot ----------------------------------------------------------------
    async def stream_blocks(self, ca, sa, cb, sb, c, labels, *, idle, backpressure):
        """Send blocks one payload per beat; every output checked by the scoreboard."""
        exp = golden.dot_blocks(ca[:, None], sa[:, None], cb[:, None], sb[:, None], self.fa,
                                self.fb, acc=c.view(np.float32)).view(np.uint32)
        ins = self.inp.to_ints(self.pack(ca, sa, cb, sb, c))
        outs = self.out.to_ints(self.expected_out(exp))
        ctxs = [f"{lab}: {describe_block(self.fa, self.fb, sa[j], ca[j], sb[j], cb[j], c[j])}"
                for j, lab in enumerate(labels)]
        await self._stream(ins, list(zip(outs, ctxs, strict=True)), idle, backpressure, len(sa))

    async def _stream(self, ins, expected, idle, backpressure, blocks):
        self.source.idle, self.sink.backpressure = idle, backpressure
        before = (self.scoreboard.checked, self.scoreboard.mismatches)
        t0 = time.perf_counter()
        self.send(ins, expected)
        await self.drain(timeout_cycles=200 * len(ins) + 1000)
        self.elapsed += time.perf_counter() - t0
        self.checked_blocks += blocks
        self.checked_elements += blocks * self.k
        assert self.scoreboard.checked - before[0] == len(expected)
        self.mismatches += self.scoreboard.mismatches - before[1]

    # -- stream mode: MXDotGeneral ---------------------------------------------------------
    async def stream_runs(self, runs, *, idle, backpressure, label="runs"):
        ins, expected, blocks = self._schedule(runs)
        ints = self.inp.to_ints(ins)
        outs = self.out.to_ints(expected[0])
        pairs = list(zip(outs, expected[1], strict=True))
        await self._stream(ints, pairs, idle, backpressure, blocks)

    def _schedule(self, runs):
        """Interleave runs over the contexts round-robin (a run keeps its context until it
        ends); returns (input bit matrix, (expected output bits, labels), blocks)."""
        nctx = self.contexts
        pending = list(range(len(runs)))[::-1]
        slot_run = [None] * nctx
        slot_pos = [0] * nctx
        order = []  # (run index, block index, ctx)
        while pending or any(r is not None for r in slot_run):
            for s in range(nctx):
                if slot_run[s] is None and pending:
                    slot_run[s], slot_pos[s] = pending.pop(), 0
                r = slot_run[s]
                if r is None:
                    continue
                order.append((r, slot_pos[s], s))
                slot_pos[s] += 1
                if slot_pos[s] == len(runs[r][1][1]):
                    slot_run[s] = None
        n = len(order)
        k = self.k
        ca = np.empty((n, k), np.uint8)
        cb = np.empty((n, k), np.uint8)
        sa, sb, c0 = (np.empty(n, np.uint8), np.empty(n, np.uint8), np.zeros(n, np.uint32))
        first, last, ctx = np.zeros(n, np.uint8), np.zeros(n, np.uint8), np.zeros(n, np.uint8)
        results = []
        for j, (r, b, s) in enumerate(order):
            c_init, (xa, xsa, xb, xsb) = runs[r]
            ca[j], sa[j], cb[j], sb[j] = xa[b], xsa[b], xb[b], xsb[b]
            first[j], last[j], ctx[j] = b == 0, b == len(xsa) - 1, s
            c0[j] = c_init if b == 0 else self.rng.integers(0, 1 << 32)  # ignored: noise
            if last[j]:
                res = golden.dot_blocks(xa[None], xsa[None], xb[None], xsb[None], self.fa,
                                        self.fb, acc=np.array([c_init], np.uint32)
                                        .view(np.float32)).view(np.uint32)[0]
                results.append((res, s, f"run {r} ({len(xsa)} blocks, c0 "
                                        f"{describe_fp32(c_init)}, ctx {s})"))
        res = np.array([x[0] for x in results], np.uint32)
        octx = np.array([x[1] for x in results], np.uint8)
        return (self.pack(ca, sa, cb, sb, c0, first, last, ctx),
                (self.expected_out(res, octx), [x[2] for x in results]), n)

    # -- bulk mode -------------------------------------------------------------------------
    async def bulk(self, in_bits: np.ndarray, expect_bits: np.ndarray, *, idle=0, stall=0,
                   blocks=None, labels=None):
        """Run one bulk chunk (after ``runner.reset()``); returns the cycle count.  Checks
        every response bit for bit; the runner checks that every input was taken and that
        exactly ``len(expect_bits)`` outputs came out (no extra one within 4 x latency)."""
        n, m = in_bits.shape[0], expect_bits.shape[0]
        assert n <= BULK_DEPTH and m <= BULK_DEPTH
        got, cycles = await self.runner.run(in_bits, seed=int(self.rng.integers(1, 1 << 32)),
                                            idle=idle, stall=stall, out_count=m,
                                            drain=4 * self.latency + 8)
        bad = np.flatnonzero(np.any(got != expect_bits, axis=1))
        blocks = n if blocks is None else blocks
        self.checked_blocks += blocks
        self.checked_elements += blocks * self.k
        self.mismatches += len(bad)
        for j in bad[:10]:
            e, a = self.out.to_ints(expect_bits[j:j + 1])[0], self.out.to_ints(got[j:j + 1])[0]
            self.log.error("MISMATCH %s", self._describe(int(j), e, a,
                                                         labels(j) if labels else "bulk"))
        if len(bad):
            self.log.error("first mismatch at output %d", bad[0])
        assert not len(bad), f"bulk: {len(bad)} of {m} outputs mismatched"
        return cycles

    async def bulk_jobs(self, jobs):
        """Run MXDot bulk jobs (:func:`tb.bulk.run_jobs`: building and checking a batch
        overlap the simulation of the next)."""
        tally = await run_jobs(self.runner, jobs, seed=int(self.rng.integers(1, 1 << 31)),
                               log=self.log)
        self.checked_blocks += tally.blocks
        self.checked_elements += tally.blocks * self.k
        self.mismatches += tally.mismatches
        assert not tally.mismatches, f"bulk: {tally.mismatches} mismatching blocks"

    def random_job(self, n: int) -> BulkJob:
        """``n`` random MXDot blocks with accumulators near the products, random idle/stall."""
        rng = self.rng

        def make():
            ca, sa, cb, sb = random_blocks(rng, self.fa, self.fb, n, self.k)
            c = accumulators(rng, self.fa, self.fb, ca, sa, cb, sb)
            return DotBatch(self, ca, sa, cb, sb, c, "random")
        idle, stall = (int(x) for x in rng.integers(0, 80, 2))
        return BulkJob("random", make, idle, stall, drain=4 * self.latency + 8)

    def summary(self, name):
        from tb.report import write_summary

        # bulk: wall time of the whole test (stimulus, golden, packing, simulation, checks)
        seconds = time.perf_counter() - self.started if self.runner else self.elapsed
        rate = self.checked_elements / seconds if seconds else 0
        self.log.info("%s: %d blocks, %d elements checked, %d mismatches, %.0f elements/s",
                      name, self.checked_blocks, self.checked_elements, self.mismatches, rate)
        write_summary(config=f"{self.cfg['unit']} {self.fa} x {self.fb} k={self.k} "
                             f"s={self.cfg['stages']}"
                             + (f" ctx={self.contexts}" if self.general else "") + f" [{name}]",
                      blocks=self.checked_blocks, elements=self.checked_elements,
                      mismatches=self.mismatches, seed=self.seed,
                      checked_per_s=int(rate))


def _config() -> dict:
    return json.loads(os.environ["MX_DOT"])


def _seed() -> int:
    import cocotb

    return int(os.environ.get("MX_DOT_SEED", cocotb.RANDOM_SEED))


def _patterns(rng):
    return [("no stalls", never(), never()),
            ("random idle/stall", random_pattern(rng, 0.3), random_pattern(rng, 0.3)),
            ("bursty", bursty_pattern(rng), bursty_pattern(rng))]


# ----------------------------------------------------------------------------------------------
# cocotb tests
# ----------------------------------------------------------------------------------------------
try:
    import cocotb
except ImportError:  # imported outside a simulator (docs, tools)
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    async def dot_stream(dut):
        """Directed corner cases and random blocks, one payload per beat, three flow-control
        patterns (MXDot: per block; MXDotGeneral: short interleaved runs)."""
        cfg = _config()
        tb = DotTB(dut, cfg, _seed())
        await tb.reset()
        rng = tb.rng
        n = max(16, min(cfg["blocks"] // 8, 2000))
        if not tb.general:
            cases = directed_blocks(tb.fa, tb.fb, tb.k)
            ca = np.stack([x[0] for x in cases])
            sa = np.array([x[1] for x in cases], np.uint8)
            cb = np.stack([x[2] for x in cases])
            sb = np.array([x[3] for x in cases], np.uint8)
            c = np.array([x[4] for x in cases], np.uint32)
            labels = [x[5] for x in cases]
            for name, idle, bp in _patterns(rng):
                await tb.stream_blocks(ca, sa, cb, sb, c, labels, idle=idle, backpressure=bp)
                rca, rsa, rcb, rsb = random_blocks(rng, tb.fa, tb.fb, n, tb.k)
                rc = accumulators(rng, tb.fa, tb.fb, rca, rsa, rcb, rsb)
                await tb.stream_blocks(rca, rsa, rcb, rsb, rc, [f"random ({name})"] * n,
                                       idle=idle, backpressure=bp)
        else:
            for _name, idle, bp in _patterns(rng):
                runs = random_runs(rng, tb, max(4, n // 8), max_len=12)
                await tb.stream_runs(runs, idle=idle, backpressure=bp)
        tb.summary("stream")
        assert tb.mismatches == 0

    @cocotb.test()
    async def dot_bulk(dut):
        """Bulk mode: exhaustive one-lane product sweeps (if configured) and long random runs
        with idle input cycles and output stalls; throughput measured."""
        cfg = _config()
        tb = DotTB(dut, cfg, _seed() + 1, bulk=True)
        await tb.runner.reset()
        rng = tb.rng
        if not tb.general:
            jobs = exhaustive_product_jobs(tb) if cfg.get("exhaustive") else []
            jobs += [tb.random_job(min(BULK_DEPTH, cfg["blocks"] - lo))
                     for lo in range(0, cfg["blocks"], BULK_DEPTH)]
            await tb.bulk_jobs(jobs)
            # Throughput without idle/stall: one block per clock.
            n = min(cfg["blocks"], 4096) or 256
            ca, sa, cb, sb = random_blocks(rng, tb.fa, tb.fb, n, tb.k)
            c = accumulators(rng, tb.fa, tb.fb, ca, sa, cb, sb)
            exp = golden.dot_blocks(ca[:, None], sa[:, None], cb[:, None], sb[:, None],
                                    tb.fa, tb.fb, acc=c.view(np.float32)).view(np.uint32)
            cyc = await tb.bulk(tb.pack(ca, sa, cb, sb, c), tb.expected_out(exp))
            tb.log.info("full rate: %d blocks in %d cycles (%.3f blocks/clock, latency %d)",
                        n, cyc, n / cyc, tb.latency)
            assert cyc <= n + tb.latency + 2, "MXDot does not sustain one block per clock"
        else:
            await general_bulk(tb, cfg)
        tb.summary("bulk")
        assert tb.mismatches == 0


def random_runs(rng, tb, count, *, max_len, lengths=None):
    """``count`` runs of random length 1..max_len: list of ``(c0 bits, (ca, sa, cb, sb))``."""
    runs = []
    for i in range(count):
        n = int(lengths[i]) if lengths is not None else int(rng.integers(1, max_len + 1))
        # Long runs stay finite (a NaN/Inf anywhere would make the whole run NaN/Inf).
        ca, sa, cb, sb = random_blocks(rng, tb.fa, tb.fb, n, tb.k,
                                       specials=0.01 if n <= 40 else 0.0)
        # Keep long runs mostly finite and in range, so they do not all end as NaN/Inf.
        sa = np.clip(sa, 110, 140).astype(np.uint8) if n > 16 else sa
        sb = np.clip(sb, 110, 140).astype(np.uint8) if n > 16 else sb
        c0 = int(random_fp32(rng, 1)[0]) if rng.random() < 0.5 else 0
        if n > 40 and (c0 & FP32.inf_bits) == FP32.inf_bits:
            c0 = 0x3F800000  # keep long runs finite
        runs.append((c0, (ca, sa, cb, sb)))
    return runs


async def general_bulk(tb, cfg):
    rng = tb.rng
    lat = tb.latency
    # Interleaved runs of mixed lengths, random idle/stall.
    budget = cfg["blocks"]
    while budget > 0:
        runs = random_runs(rng, tb, max(tb.contexts, min(200, budget // 20)), max_len=40)
        ins, (exp, labels), n = tb._schedule(runs)
        await tb.bulk(ins, exp, idle=int(rng.integers(0, 60)), stall=int(rng.integers(0, 60)),
                      blocks=n, labels=lambda j, lab=labels: lab[j])
        budget -= n
    # One long run alone: a block every `latency` cycles.
    long_k = cfg.get("long_k", 1024)
    runs = random_runs(rng, tb, 1, max_len=long_k, lengths=[long_k])
    ins, (exp, labels), n = tb._schedule(runs)
    cyc = await tb.bulk(ins, exp, blocks=n, labels=lambda j, lab=labels: lab[j])
    tb.log.info("single run: %d blocks in %d cycles (%.2f cycles/block, latency %d)", n, cyc,
                cyc / n, lat)
    assert cyc <= n * lat + lat + 4, "single run slower than one block per latency"
    # Enough interleaved long runs: one block per clock.
    if tb.contexts >= lat:
        runs = random_runs(rng, tb, tb.contexts, max_len=long_k,
                           lengths=[max(8, long_k // 4)] * tb.contexts)
        ins, (exp, labels), n = tb._schedule(runs)
        cyc = await tb.bulk(ins, exp, blocks=n, labels=lambda j, lab=labels: lab[j])
        tb.log.info("%d interleaved runs: %d blocks in %d cycles (%.3f blocks/clock)",
                    tb.contexts, n, cyc, n / cyc)
        assert cyc <= n + lat + 4, "interleaved runs do not reach one block per clock"


def exhaustive_product_jobs(tb) -> list[BulkJob]:
    """Every pair of codes (a, b) in one lane (rotating over the lanes), the others zero, at
    several scale pairs and accumulators: one bulk job per wrapper-memory load."""
    fa, fb, k = golden.element_format(tb.fa), golden.element_format(tb.fb), tb.k
    rng = tb.rng
    xa, xb = np.meshgrid(np.arange(1 << fa.bits), np.arange(1 << fb.bits), indexing="ij")
    xa, xb = xa.ravel().astype(np.uint8), xb.ravel().astype(np.uint8)
    npairs = len(xa)
    lane = np.arange(npairs) % k
    # (sa, sb, accumulator kind): unit scales with c = +0; random scales with c near the
    # product; sa+sb near 0 and near 508 with random c.
    settings = [(127, 127, "zero"), (None, None, "near"), (0, 1, "random"), (254, 253, "random")]
    if npairs > 4096 and not tb.cfg.get("full"):
        settings = settings[:2]  # 8-bit x 8-bit: the scale extremes only in SIM_FULL

    def make(sa0, sb0, ckind, sl):
        n = sl.stop - sl.start
        ca = np.zeros((n, k), np.uint8)
        cb = np.zeros((n, k), np.uint8)
        ca[np.arange(n), lane[sl]] = xa[sl]
        cb[np.arange(n), lane[sl]] = xb[sl]
        if sa0 is None:
            sa = rng.integers(100, 155, n).astype(np.uint8)
            sb = rng.integers(100, 155, n).astype(np.uint8)
        else:
            sa, sb = np.full(n, sa0, np.uint8), np.full(n, sb0, np.uint8)
        if ckind == "zero":
            c = np.zeros(n, np.uint32)
        elif ckind == "near":
            c = accumulators(rng, tb.fa, tb.fb, ca, sa, cb, sb)
        else:
            c = random_fp32(rng, n)
        return DotBatch(tb, ca, sa, cb, sb, c, "exhaustive")

    chunks = [slice(lo, min(npairs, lo + BULK_DEPTH)) for lo in range(0, npairs, BULK_DEPTH)]
    return [BulkJob("exhaustive products", lambda a=sa0, b=sb0, ck=ckind, sl=sl: make(a, b, ck, sl),
                    idle=16, stall=16, drain=4 * tb.latency + 8)
            for sa0, sb0, ckind in settings for sl in chunks]
