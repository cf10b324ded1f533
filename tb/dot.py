"""cocotb testbench of the MX dot-product units (``hw.dot.MXDot``, ``hw.dot.MXDotGeneral``),
checked bit for bit against ``golden.dot_blocks``.

The model of the standard tests (:mod:`tb.standard_tests`: stream, reset, bulk):

* **MXDot** (one output per block): directed corner cases and random blocks in the stream
  test, each under no, random and bursty idle/backpressure; in bulk, the exhaustive one-lane
  product sweeps (``MX_SWEEPS``) and ``MX_BLOCKS`` random blocks, after the standard
  back-to-back throughput check.
* **MXDotGeneral** (one output per run of blocks, runs interleaved over the contexts):
  random runs, scheduled round-robin over the contexts (:meth:`DotModel.schedule`, the
  unit-specific part); its throughput check is a long run alone (a block per latency) and,
  with enough contexts, interleaved long runs (a block per clock).

``MX_FULL`` (SIM_FULL) adds the extreme scale settings of the 8-bit x 8-bit sweeps and makes
the long DotGeneral runs 8192 blocks (1024 otherwise).  Mismatch reports show the block's
scales, its non-zero lanes (codes and values) and ``c``, and the expected and actual fp32.
"""

from __future__ import annotations

import numpy as np

import golden
from golden.formats import FP32

# Stimulus generators are shared with `python -m golden vectors`.
from golden.stimulus import dot_accumulators as accumulators
from golden.stimulus import dot_directed_blocks as directed_blocks
from golden.stimulus import dot_random_blocks as random_blocks
from golden.stimulus import random_fp32

from . import standard_tests
from .batch import Batch
from .bulk import DEPTH, BulkJob
from .coverage.dot import classify_dot, classify_runs, dot_general_model, dot_model
from .coverage.dot_gpu import classify_dot_gpu, classify_steps, gpu_dot_model, gpu_general_model
from .describe import describe_float
from .dot_gpu import gpu_directed_blocks

#: Non-zero lanes of a block shown in a mismatch report.
MAX_SHOWN_LANES = 8


def describe_block(fmt_a, fmt_b, sa, ca, sb, cb, c) -> str:
    """Scales, non-zero lanes (codes and values) and accumulator of one MXDot block."""
    va, vb = golden.decode(np.asarray(ca), fmt_a), golden.decode(np.asarray(cb), fmt_b)
    nz = [i for i in range(len(ca)) if int(ca[i]) or int(cb[i])]
    lanes = ", ".join(f"[{i}] {int(ca[i]):#x}({va[i]:g})*{int(cb[i]):#x}({vb[i]:g})"
                      for i in nz[:MAX_SHOWN_LANES])
    more = f" (+{len(nz) - MAX_SHOWN_LANES} more)" if len(nz) > MAX_SHOWN_LANES else ""
    return (f"sa={int(sa)} sb={int(sb)} c={describe_float(c, FP32)}; non-zero lanes: "
            f"{lanes or 'none'}{more}")


def interleave(lengths, contexts: int) -> list[tuple[int, int, int]]:
    """The stream order of runs of ``lengths`` blocks over ``contexts`` contexts, round-robin
    (a run keeps its context until it ends; a free context takes the next run): a list of
    ``(run index, block index, ctx)``, one per block (MXDotGeneral, the GEMM tile)."""
    pending = list(range(len(lengths)))[::-1]
    slot_run = [None] * contexts
    slot_pos = [0] * contexts
    order = []
    while pending or any(r is not None for r in slot_run):
        for s in range(contexts):
            if slot_run[s] is None and pending:
                slot_run[s], slot_pos[s] = pending.pop(), 0
            r = slot_run[s]
            if r is None:
                continue
            order.append((r, slot_pos[s], s))
            slot_pos[s] += 1
            if slot_pos[s] == lengths[r]:
                slot_run[s] = None
    return order


class DotBatch(Batch):
    """MXDot blocks (one output each) with golden's results."""

    def __init__(self, model: DotModel, ca, sa, cb, sb, c, labels):
        self.model, self.blocks_in = model, (ca, sa, cb, sb, c)
        self.labels = [labels] * len(sa) if isinstance(labels, str) else list(labels)
        results = golden.dot_blocks(ca[:, None], sa[:, None], cb[:, None], sb[:, None],
                                    model.fmt_a, model.fmt_b, acc=c.view(np.float32),
                                    accumulation=model.accumulation).view(np.uint32)
        self.results = results
        super().__init__(model.pack(ca, sa, cb, sb, c), model.expected_rows(results))

    def coverage_counts(self):
        ca, sa, cb, sb, c = self.blocks_in
        m = self.model
        if m.accumulation == "exact":
            return classify_dot(ca, sa, cb, sb, c, self.results, fmt_a=m.fmt_a, fmt_b=m.fmt_b)
        return classify_dot_gpu(ca, sa, cb, sb, c, self.results, fmt_a=m.fmt_a, fmt_b=m.fmt_b,
                                accumulation=m.accumulation)

    def describe(self, row, got):
        ca, sa, cb, sb, c = self.blocks_in
        m = self.model
        where = describe_block(m.fmt_a, m.fmt_b, sa[row], ca[row], sb[row], cb[row], c[row])
        return m.describe_output(row, self.exp[row], got, f"{self.labels[row]}: {where}")


class DotRunsBatch(Batch):
    """MXDotGeneral runs interleaved over the contexts (one output per run)."""

    def __init__(self, model: DotModel, stim, exp, labels, blocks, run_flags):
        self.model, self.labels = model, labels
        self.run_flags = run_flags  # (first, last, ctx) of every block, in stream order
        super().__init__(stim, exp, blocks=blocks)

    def coverage_counts(self):
        counts = classify_runs(*self.run_flags)
        if self.model.accumulation in ("tcgen05.mxf4", "tcgen05.mxf4nvf4"):
            counts.update(classify_steps(*self.run_flags, self.model.k))
        return counts

    def describe(self, row, got):
        return self.model.describe_output(row, self.exp[row], got, self.labels[row])


class DotModel(standard_tests.UnitModel):
    """Unit parameters (from the sidecar), payload packing, stimulus and golden results."""

    def __init__(self, config):
        super().__init__(config)
        p = self.parameters
        self.fmt_a, self.fmt_b = self.formats["format_a"], self.formats["format_b"]
        self.general = config.sidecar["unit"] == "dot-general"
        self.contexts = p.get("contexts", 1)
        # the block step's numerics (docs/numerics.md section 8): golden's results in it
        self.accumulation = p.get("accumulation", "exact")
        self.drain = 4 * self.latency + 8  # an extra output would come within a few latencies
        self.throughput_blocks = min(config.blocks, 4096) or 256  # MXDot back to back
        self.long_k = 8192 if config.full else 1024

    def interface(self):
        """docs/dot.md, Interface: ``a``, ``b`` (scale, codes), then ``c`` (MXDot) or ``c0``,
        ``first``, ``last``, ``ctx`` (MXDotGeneral); out ``result`` (and ``ctx``)."""
        k = self.k
        bits_a, bits_b = self.fmt_a.bits, self.fmt_b.bits
        ctx = [("ctx", (self.contexts - 1).bit_length())]  # 0 bits for one context
        blocks = [("a.scale", 8), ("a.codes", k * bits_a), ("b.scale", 8),
                  ("b.codes", k * bits_b)]
        if self.general:
            return [*blocks, ("c0", 32), ("first", 1), ("last", 1), *ctx], [("result", 32), *ctx]
        return [*blocks, ("c", 32)], [("result", 32)]

    def coverage_model(self):
        if self.general and self.accumulation != "exact":
            return gpu_general_model(self.fmt_a, self.fmt_b, self.contexts, self.accumulation)
        if self.general:
            return dot_general_model(self.fmt_a, self.fmt_b, self.contexts)
        if self.accumulation != "exact":
            return gpu_dot_model(self.fmt_a, self.fmt_b, self.accumulation)
        return dot_model(self.fmt_a, self.fmt_b)

    # -- payloads --------------------------------------------------------------------------
    def pack(self, ca, sa, cb, sb, c, first=None, last=None, ctx=None) -> np.ndarray:
        """Input payload rows of blocks (MXDotGeneral: with run flags and contexts)."""
        fields = {"a.scale": sa, "a.codes": ca, "b.scale": sb, "b.codes": cb}
        if self.general:
            fields.update({"c0": c, "first": first, "last": last})
            if "ctx" in self.in_layout.fields:
                fields["ctx"] = ctx
        else:
            fields["c"] = c
        return self.in_layout.pack(len(sa), **fields)

    def expected_rows(self, results, ctx=None) -> np.ndarray:
        """Output payload rows of fp32 results (MXDotGeneral: with their contexts)."""
        if not self.general:
            return self.out_layout.pack(len(results), result=results)
        fields = {"result": results}
        if "ctx" in self.out_layout.fields:
            fields["ctx"] = ctx
        return self.out_layout.pack(len(results), **fields)

    def describe_output(self, row, exp_row, got_row, context) -> str:
        rows = self.out_layout.unpack(np.stack([exp_row, got_row]))
        results = rows["result"]
        ctx = ""
        if "ctx" in rows:
            ctx = f" ctx exp {int(rows['ctx'][0])} got {int(rows['ctx'][1])}"
        return (f"output {row} ({context}): expected {describe_float(results[0], FP32)}, "
                f"got {describe_float(results[1], FP32)}{ctx}")

    # -- MXDot blocks ----------------------------------------------------------------------
    def random_block_batch(self, rng, n, labels="random") -> DotBatch:
        """``n`` random blocks with accumulators near the products."""
        ca, sa, cb, sb = random_blocks(rng, self.fmt_a, self.fmt_b, n, self.k)
        c = accumulators(rng, self.fmt_a, self.fmt_b, ca, sa, cb, sb)
        return DotBatch(self, ca, sa, cb, sb, c, labels)

    def directed_batch(self) -> DotBatch:
        cases = directed_blocks(self.fmt_a, self.fmt_b, self.k)
        if self.accumulation != "exact":  # and what distinguishes the mode (tb.dot_gpu)
            cases += gpu_directed_blocks(self.fmt_a, self.fmt_b, self.k, self.accumulation)
        ca = np.stack([x[0] for x in cases])
        sa = np.array([x[1] for x in cases], np.uint8)
        cb = np.stack([x[2] for x in cases])
        sb = np.array([x[3] for x in cases], np.uint8)
        c = np.array([x[4] for x in cases], np.uint32)
        return DotBatch(self, ca, sa, cb, sb, c, [x[5] for x in cases])

    # -- MXDotGeneral runs -----------------------------------------------------------------
    def random_runs(self, rng, count, *, max_len, lengths=None):
        """``count`` runs of random length 1..max_len (or ``lengths``): a list of
        ``(c0 bits, (ca, sa, cb, sb))``."""
        runs = []
        for i in range(count):
            n = int(lengths[i]) if lengths is not None else int(rng.integers(1, max_len + 1))
            # Long runs stay finite (a NaN/Inf anywhere would make the whole run NaN/Inf).
            ca, sa, cb, sb = random_blocks(rng, self.fmt_a, self.fmt_b, n, self.k,
                                           specials=0.01 if n <= 40 else 0.0)
            # Keep long runs mostly finite and in range, so they do not all end as NaN/Inf.
            sa = np.clip(sa, 110, 140).astype(np.uint8) if n > 16 else sa
            sb = np.clip(sb, 110, 140).astype(np.uint8) if n > 16 else sb
            c0 = int(random_fp32(rng, 1)[0]) if rng.random() < 0.5 else 0
            if n > 40 and (c0 & FP32.inf_bits) == FP32.inf_bits:
                c0 = 0x3F800000  # keep long runs finite
            runs.append((c0, (ca, sa, cb, sb)))
        return runs

    def schedule(self, rng, runs) -> DotRunsBatch:
        """Interleave runs over the contexts round-robin (a run keeps its context until it
        ends); the ``c0`` of a non-first block is random noise the unit must ignore."""
        order = interleave([len(blocks[1]) for _, blocks in runs], self.contexts)
        n, k = len(order), self.k
        ca = np.empty((n, k), np.uint8)
        cb = np.empty((n, k), np.uint8)
        sa, sb, c0 = np.empty(n, np.uint8), np.empty(n, np.uint8), np.zeros(n, np.uint32)
        first, last, ctx = np.zeros(n, np.uint8), np.zeros(n, np.uint8), np.zeros(n, np.uint8)
        results = []
        for j, (r, b, s) in enumerate(order):
            c_init, (xa, xsa, xb, xsb) = runs[r]
            ca[j], sa[j], cb[j], sb[j] = xa[b], xsa[b], xb[b], xsb[b]
            first[j], last[j], ctx[j] = b == 0, b == len(xsa) - 1, s
            c0[j] = c_init if b == 0 else rng.integers(0, 1 << 32)
            if last[j]:
                res = golden.dot_blocks(xa[None], xsa[None], xb[None], xsb[None], self.fmt_a,
                                        self.fmt_b, acc=np.array([c_init], np.uint32)
                                        .view(np.float32),
                                        accumulation=self.accumulation).view(np.uint32)[0]
                results.append((res, s, f"run {r} ({len(xsa)} blocks, c0 "
                                        f"{describe_float(c_init, FP32)}, ctx {s})"))
        exp = self.expected_rows(np.array([x[0] for x in results], np.uint32),
                                 np.array([x[1] for x in results], np.uint8))
        return DotRunsBatch(self, self.pack(ca, sa, cb, sb, c0, first, last, ctx), exp,
                            [x[2] for x in results], blocks=n, run_flags=(first, last, ctx))

    # -- the standard tests' sets ----------------------------------------------------------
    def _stream_blocks(self) -> int:
        return max(16, min(self.config.blocks // 8, 2000))

    def random_batch(self, rng, n):
        if not self.general:
            return self.random_block_batch(rng, n)
        return self.schedule(rng, self.random_runs(rng, max(4, n // 8), max_len=12))

    def stream_phases(self, rng):
        """Per pattern (none, random, bursty): MXDot the directed cases and random blocks,
        MXDotGeneral short interleaved runs."""
        n = self._stream_blocks()
        phases = []
        for pattern in ("none", "random", "bursty"):
            if self.general:
                runs = self.random_runs(rng, max(4, n // 8), max_len=12)
                phases.append((pattern, self.schedule(rng, runs)))
            else:
                phases += [(pattern, self.directed_batch()),
                           (pattern, self.random_block_batch(rng, n, f"random ({pattern})"))]
        return phases

    def bulk_jobs(self, rng):
        blocks = self.config.blocks
        if self.general:  # interleaved runs of mixed lengths, random idle/stall
            jobs = []
            while blocks > 0:
                runs = self.random_runs(rng, max(self.contexts, min(200, blocks // 20)),
                                        max_len=40)
                batch = self.schedule(rng, runs)
                idle, stall = int(rng.integers(0, 60)), int(rng.integers(0, 60))
                jobs.append(BulkJob("interleaved runs", lambda b=batch: b, idle, stall,
                                    drain=self.drain))
                blocks -= len(batch)
            return jobs
        jobs = self.exhaustive_product_jobs(rng) if self.config.sweeps else []
        if self.config.exhaustive:
            jobs += self.scale_pair_jobs()

        def random_job(n):
            idle, stall = (int(x) for x in rng.integers(0, 80, 2))
            return BulkJob("random", lambda: self.random_block_batch(rng, n), idle, stall,
                           drain=self.drain)
        return jobs + [random_job(min(DEPTH, blocks - lo)) for lo in range(0, blocks, DEPTH)]

    async def throughput(self, runner, rng, seed, log):
        """MXDot: the standard back-to-back check.  MXDotGeneral: one long run alone takes a
        block per latency; enough interleaved long runs take a block per clock."""
        if not self.general:
            return await super().throughput(runner, rng, seed, log)
        lat = self.latency
        runs = self.random_runs(rng, 1, max_len=self.long_k, lengths=[self.long_k])
        batches = [("single run", self.schedule(rng, runs))]
        if self.contexts >= lat:
            runs = self.random_runs(rng, self.contexts, max_len=self.long_k,
                                    lengths=[max(8, self.long_k // 4)] * self.contexts)
            batches.append((f"{self.contexts} interleaved runs", self.schedule(rng, runs)))
        blocks = bad = 0
        for what, batch in batches:
            got, cycles = await runner.run(batch.stim, seed=seed, out_count=batch.out_count,
                                           drain=self.drain)
            bad += batch.check(got, log)
            blocks += len(batch)
            n = len(batch)
            log.info("%s: %d blocks in %d cycles (%.3f blocks/clock, latency %d)", what, n,
                     cycles, n / cycles, lat)
            limit = n * lat + lat + 4 if what == "single run" else n + lat + 4
            assert cycles <= limit, f"{what}: {n} blocks took {cycles} cycles, limit {limit}"
        return blocks, bad

    def exhaustive_product_jobs(self, rng) -> list[BulkJob]:
        """Every pair of codes (a, b) in one lane (rotating over the lanes), the others zero,
        at several scale pairs and accumulators: one bulk job per wrapper-memory load."""
        bits_a, bits_b = self.fmt_a.bits, self.fmt_b.bits
        k = self.k
        xa, xb = np.meshgrid(np.arange(1 << bits_a), np.arange(1 << bits_b), indexing="ij")
        xa, xb = xa.ravel().astype(np.uint8), xb.ravel().astype(np.uint8)
        npairs = len(xa)
        lane = np.arange(npairs) % k
        # (sa, sb, accumulator kind): unit scales with c = +0; random scales with c near the
        # product; sa+sb near 0 and near 508 with random c.
        settings = [(127, 127, "zero"), (None, None, "near"), (0, 1, "random"),
                    (254, 253, "random")]
        if npairs > 4096 and not self.config.full:
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
                c = accumulators(rng, self.fmt_a, self.fmt_b, ca, sa, cb, sb)
            else:
                c = random_fp32(rng, n)
            return DotBatch(self, ca, sa, cb, sb, c, "exhaustive")

        chunks = [slice(lo, min(npairs, lo + DEPTH)) for lo in range(0, npairs, DEPTH)]
        return [BulkJob("exhaustive products",
                        lambda a=sa0, b=sb0, ck=ckind, sl=sl: make(a, b, ck, sl),
                        idle=16, stall=16, drain=self.drain)
                for sa0, sb0, ckind in settings for sl in chunks]

    def scale_pair_codes(self, fmt) -> np.ndarray:
        """The lane codes of the scale-pair sweep: the largest finite magnitude (products and
        scale sums at the top: overflow to Inf), the smallest positive one (the bottom:
        subnormal fp32 results and underflow) and -1 (an exact power of two, negative)."""
        table = golden.decode_table(golden.element_format(fmt))
        finite = np.isfinite(table)
        largest = int(np.flatnonzero(finite & (table == table[finite].max()))[0])
        positive = np.where(finite & (table > 0), table, np.inf)
        smallest = int(np.argmin(positive))
        minus_one = int(np.flatnonzero(table == -1.0)[0])
        return np.array([largest, smallest, minus_one], np.uint8)

    def scale_pair_jobs(self) -> list[BulkJob]:
        """Every pair of scales (sa, sb) in 0..255 x 0..255, NaN scale 255 included, for each
        pair of :meth:`scale_pair_codes` in one lane (rotating over the lanes, the others
        zero), with c = +0 and -0 alternating: ``make sim-full``'s exhaustive scale domain."""
        codes_a, codes_b = self.scale_pair_codes(self.fmt_a), self.scale_pair_codes(self.fmt_b)
        sa, sb, ia, ib = (x.ravel() for x in np.meshgrid(np.arange(256), np.arange(256),
                                                         np.arange(len(codes_a)),
                                                         np.arange(len(codes_b)),
                                                         indexing="ij"))
        n_all, k = sa.size, self.k

        def make(sl):
            n = sl.stop - sl.start
            rows, lane = np.arange(n), np.arange(sl.start, sl.stop) % k
            ca, cb = np.zeros((n, k), np.uint8), np.zeros((n, k), np.uint8)
            ca[rows, lane], cb[rows, lane] = codes_a[ia[sl]], codes_b[ib[sl]]
            c = np.where(np.arange(sl.start, sl.stop) % 2, FP32.sign_mask, 0).astype(np.uint32)
            return DotBatch(self, ca, sa[sl].astype(np.uint8), cb, sb[sl].astype(np.uint8), c,
                            "every scale pair")

        return [BulkJob("every scale pair", lambda sl=sl: make(sl), drain=self.drain)
                for sl in (slice(lo, min(n_all, lo + DEPTH)) for lo in range(0, n_all, DEPTH))]


# The cocotb tests of this testbench: the standard tests on this unit's model.
standard_tests.register(globals(), DotModel)
