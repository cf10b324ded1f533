"""cocotb testbench of the MX GEMM tile (``hw.gemm.MXGemm``), checked bit for bit against
golden: the R x C outputs of a run of K blocks are ``golden.matmul`` of the run's R x Kk
A (blocked along K) and Kk x C B (blocked along K), ``acc`` the run's ``c0`` (each
output's fp32 start): one fp32 rounding per block pair, blocks in K order (MXDotGeneral's
chaining, ``docs/numerics.md`` section 9).

With an MX output (the sidecar's ``out_format``), each row's C results are expected as
``golden.matmul(..., out_format=fmt, out_block_size=C)``: one block along N, at matmul's
defaults (``scale_mode="floor"``, ``rounding="rne"``), the output quantizers' rules.

The model of the standard tests (:mod:`tb.standard_tests`: stream, reset, bulk):

* a **run** is one tile job: K blocks of R rows of A and of C columns of B, with one output
  beat of R x C fp32 results; runs are interleaved round-robin over the contexts
  (:func:`tb.dot.interleave`);
* the stream test sends random runs of 1 to 12 blocks from random ``c0`` (+0, finite, NaN,
  +-Inf, -0; the other beats carry random ``c0`` bits the tile ignores) and directed runs
  (exact cancellation to +0 across the K blocks, a NaN scale, overflow to Inf, results below
  fp32's subnormals and subnormal results, NaN, Inf and -0 starts; nvfp4 with the epilogue,
  the runs of each epilogue bin, :meth:`GemmModel.epilogue_runs`), each under no, random
  and bursty idle/backpressure; the reset test resets with runs in flight;
* bulk: the throughput check (one long run alone takes a block every latency; with at least
  ``latency`` contexts, interleaved long runs take a block per clock, no bubbles), then
  interleaved runs of 1 to 40 blocks under random idle/stall.

NVFP4 operands (the sidecar's ``scale_format`` ``"ue4m3"``): UE4M3 scale bytes (those with
bit 7 set read as NaN, as golden's table does, :func:`tb.coverage.nvfp4_dot.readable_scales`),
and with ``levels`` 2 each run's ``alpha`` (on its last beat; random bits on the others):
golden's epilogue ``f(alpha * sum)`` of ``golden.matmul``'s sums, which with the tensor
scales' ``alpha = f(Pa * Pb)`` is ``golden.matmul`` of the two-level operands.

``MX_FULL`` (SIM_FULL) makes the long runs 8192 blocks (1024 otherwise).
"""

from __future__ import annotations

import numpy as np

import golden
from golden.formats import SCALE_NAN
from golden.stimulus import dot_random_blocks as random_blocks

from . import standard_tests
from .bulk import BulkJob
from .coverage.gemm import gemm_model
from .gemm_runs import ALPHA_ONE, GemmBatch, GemmRun
from .nvfp4_dot_stimulus import epilogue_runs, random_alpha, random_codes, random_scales

__all__ = ["GemmModel", "GemmRun", "GemmBatch"]

class GemmModel(standard_tests.UnitModel):
    """Tile parameters (from the sidecar), runs, their golden results and payloads."""

    def __init__(self, config):
        super().__init__(config)
        p = self.parameters
        self.fmt_a, self.fmt_b = self.formats["format_a"], self.formats["format_b"]
        self.rows, self.cols, self.contexts = p["rows"], p["cols"], p["contexts"]
        self.ctx_bits = (self.contexts - 1).bit_length()
        out = p.get("out_format")
        self.out_fmt = None if out is None else golden.element_format(out)
        # the block step's numerics (docs/numerics.md section 8): golden.matmul's in the mode
        self.accumulation = p.get("accumulation", "exact")
        self.nvfp4 = p.get("scale_format") == "ue4m3"
        self.levels = p.get("levels", 1)
        # scale bytes of the directed runs: 1.0, NaN, and a range around 1
        self.scale_one, self.scale_nan = (0x38, 0x7F) if self.nvfp4 else (127, SCALE_NAN)
        self.scales_near_one = (0x30, 0x40) if self.nvfp4 else (120, 135)
        self.drain = 4 * self.latency + 8
        self.long_k = 8192 if config.full else 1024

    def interface(self):
        """docs/gemm.md, Interface: ``a.row<r>`` and ``b.col<c>`` blocks (scale, codes),
        ``c0.row<r>`` (C fp32 starts), ``first``, ``last``, ``ctx``, with ``levels`` 2
        ``alpha``; out ``result.row<r>``
        (C fp32 each, or with an MX output a block: scale, C codes) and ``ctx``."""
        k = self.k
        blocks = [(f"a.row{r}.{f}", w) for r in range(self.rows)
                  for f, w in (("scale", 8), ("codes", k * self.fmt_a.bits))]
        blocks += [(f"b.col{c}.{f}", w) for c in range(self.cols)
                   for f, w in (("scale", 8), ("codes", k * self.fmt_b.bits))]
        ctx = [("ctx", self.ctx_bits)]
        if self.out_fmt is None:
            out = [(f"result.row{r}", 32 * self.cols) for r in range(self.rows)]
        else:
            out = [(f"result.row{r}.{f}", w) for r in range(self.rows)
                   for f, w in (("scale", 8), ("codes", self.cols * self.out_fmt.bits))]
        c0 = [(f"c0.row{r}", 32 * self.cols) for r in range(self.rows)]
        alpha = [("alpha", 32)] if self.levels == 2 else []
        return [*blocks, *c0, ("first", 1), ("last", 1), *ctx, *alpha], [*out, *ctx]

    def coverage_model(self):
        return gemm_model(self.fmt_a, self.fmt_b, self.contexts, self.out_fmt,
                          nvfp4_levels=self.levels if self.nvfp4 else None,
                          accumulation=self.accumulation)

    # -- runs --------------------------------------------------------------------------------
    def _blocks(self, rng, n, width, fmt, specials):
        """``n`` x ``width`` random blocks of ``fmt``: codes (n, width, k), scales (n, width);
        nvfp4: UE4M3 scale bytes, near 1 without ``specials``."""
        if self.nvfp4:
            codes = random_codes(rng, n * width, self.k)
            scales = (random_scales(rng, n * width) if specials
                      else rng.integers(0x30, 0x48, n * width))
            return codes.reshape(n, width, self.k), scales.reshape(n, width).astype(np.uint8)
        codes, scales, _, _ = random_blocks(rng, fmt, fmt, n * width, self.k, specials=specials)
        return codes.reshape(n, width, self.k), scales.reshape(n, width)

    def random_c0(self, rng, specials: bool) -> np.ndarray:
        """R x C random fp32 starts (bits): a quarter +0, the rest finite values of about the
        products' size (2^-30..2^30, either sign); with ``specials`` some NaN, +-Inf and -0."""
        shape = (self.rows, self.cols)
        x = (rng.standard_normal(shape) * np.exp2(rng.integers(-30, 31, shape)))
        c0 = np.where(rng.random(shape) < 0.25, 0.0, x).astype(np.float32).view(np.uint32)
        if specials:
            pick = rng.random(shape)
            for lo, value in ((0.0, np.nan), (0.04, np.inf), (0.08, -np.inf), (0.12, -0.0)):
                special = np.float32(value).view(np.uint32)
                c0 = np.where((pick >= lo) & (pick < lo + 0.04), special, c0)
        return c0.astype(np.uint32)

    def random_run(self, rng, n, label="random") -> GemmRun:
        """A run of ``n`` random blocks from a random ``c0``; long runs stay finite and in
        range."""
        specials = 0.01 if n <= 40 else 0.0
        ca, sa = self._blocks(rng, n, self.rows, self.fmt_a, specials)
        cb, sb = self._blocks(rng, n, self.cols, self.fmt_b, specials)
        if n > 16 and not self.nvfp4:
            sa, sb = np.clip(sa, 110, 140), np.clip(sb, 110, 140)
        alpha = random_alpha(rng, 1)[0] if self.levels == 2 and n <= 40 else ALPHA_ONE
        return GemmRun(self, ca, sa.astype(np.uint8), cb, sb.astype(np.uint8), label,
                       self.random_c0(rng, n <= 40), alpha)

    def random_runs(self, rng, count, max_len) -> list[GemmRun]:
        return [self.random_run(rng, int(rng.integers(1, max_len + 1))) for _ in range(count)]

    def directed_runs(self, rng) -> list[GemmRun]:
        """Runs whose outputs hit the rare bins: K = 2 with the second block the first's
        negation (one non-zero lane: exact cancellation to +0 in every output), a NaN
        scale in row 0 (that row's outputs NaN), the largest codes at scales 254 (fp32
        overflow to +Inf), and random blocks at scales near 0 (results below fp32's
        subnormals: +-0) and near 55 (subnormal fp32 results: an MX output's scale clamps
        at 0), all from +0; and runs from NaN, +-Inf and -0 starts (``c0``), of zero
        products and of random ones."""
        k, fa, fb = self.k, self.fmt_a, self.fmt_b
        ta, tb = golden.decode_table(fa), golden.decode_table(fb)
        pos_a = np.flatnonzero(np.isfinite(ta) & (ta > 0))
        pos_b = np.flatnonzero(np.isfinite(tb) & (tb > 0) & np.isin(-tb, tb))
        runs = []
        for _ in range(3):
            ca = np.zeros((2, self.rows, k), np.uint8)
            cb = np.zeros((2, self.cols, k), np.uint8)
            lane = int(rng.integers(0, k))
            ca[:, :, lane] = rng.choice(pos_a, (1, self.rows))
            y = rng.choice(pos_b, self.cols)
            cb[0, :, lane] = y
            cb[1, :, lane] = [int(np.flatnonzero(tb == -tb[v])[0]) for v in y]
            sa = np.full((2, self.rows), int(rng.integers(*self.scales_near_one)), np.uint8)
            sb = np.full((2, self.cols), int(rng.integers(*self.scales_near_one)), np.uint8)
            runs.append(GemmRun(self, ca, sa, cb, sb, "cancellation to +0"))
        nan = self.random_run(rng, 2, "NaN scale")
        nan.sa[1, 0] = self.scale_nan
        runs.append(GemmRun(self, nan.ca, nan.sa, nan.cb, nan.sb, "NaN scale"))
        big_a = int(pos_a[np.argmax(ta[pos_a])])
        big_b = int(pos_b[np.argmax(tb[pos_b])])
        runs += self._extreme_runs(rng, big_a, big_b)
        specials = np.array([np.nan, np.inf, -np.inf, -0.0], np.float32).view(np.uint32)
        starts = np.resize(specials, self.rows * self.cols)
        for zero in (True, False):  # zero products (the start alone), and random ones
            run = self.random_run(rng, 2)
            ca = np.zeros_like(run.ca) if zero else run.ca
            runs.append(GemmRun(self, ca, run.sa, run.cb, run.sb, "NaN, Inf, -0 starts",
                                rng.permutation(starts)))
        return runs + self.quantizer_runs(rng) + self.epilogue_runs()

    def epilogue_runs(self) -> list[GemmRun]:
        """nvfp4 with the epilogue (``levels`` 2): each run of
        :func:`tb.nvfp4_dot_stimulus.epilogue_runs` (one per epilogue bin) in every output,
        its block in every row of A and every column of B, its ``c0`` every output's."""
        if not (self.nvfp4 and self.levels == 2):
            return []
        rows, cols, k = self.rows, self.cols, self.k
        return [GemmRun(self, np.broadcast_to(ca[:, None], (1, rows, k)).copy(),
                        np.full((1, rows), sa[0], np.uint8),
                        np.broadcast_to(cb[:, None], (1, cols, k)).copy(),
                        np.full((1, cols), sb[0], np.uint8), label,
                        np.full((rows, cols), c0, np.uint32), alpha)
                for ca, sa, cb, sb, c0, alpha, label in epilogue_runs(k)]

    def _extreme_runs(self, rng, big_a: int, big_b: int) -> list[GemmRun]:
        """Runs of one block at the ends of the fp32 range: the largest codes at the largest
        scales, random blocks at the smallest ones.  E8M0: overflow to +Inf, results below
        fp32's subnormals and subnormal ones.  NVFP4's block terms stay within fp32's normal
        range (at most 6 * 6 * k * 448^2): with ``levels`` 2 the epilogue's ``alpha`` takes
        them out of it (FLT_MAX: overflow; 2^-149 and 2^-140: below subnormal, subnormal)."""
        k = self.k
        top = 0x7E if self.nvfp4 else 254
        alpha_inf = 0x7F7FFFFF if self.levels == 2 else ALPHA_ONE
        runs = [GemmRun(self, np.full((1, self.rows, k), big_a, np.uint8),
                        np.full((1, self.rows), top, np.uint8),
                        np.full((1, self.cols, k), big_b, np.uint8),
                        np.full((1, self.cols), top, np.uint8),
                        "largest terms" if alpha_inf == ALPHA_ONE and self.nvfp4
                        else "overflow to Inf", alpha=alpha_inf)]
        ends = ((0, "results below subnormal", 1), (0 if self.nvfp4 else 55,
                                                    "subnormal results", 1 << 9))
        for lo, label, alpha in ends:
            run = self.random_run(rng, 1)
            sa = (lo + rng.integers(0, 4, run.sa.shape)).astype(np.uint8)
            sb = (lo + rng.integers(0, 4, run.sb.shape)).astype(np.uint8)
            if self.nvfp4 and self.levels == 1:
                label = "subnormal block scales"
            runs.append(GemmRun(self, run.ca, sa, run.cb, sb, label,
                                alpha=alpha if self.levels == 2 else ALPHA_ONE))
        return runs

    def quantizer_runs(self, rng) -> list[GemmRun]:
        """With an MX output, runs of one block aimed at the output quantizer's rare bins
        (none for fp32 results).  Zero products leave each output its finite non-zero
        ``c0`` (``RNE_fp32(c + 0) = c``), so ``c0`` sets the rows' blocks: the largest value
        of the output format (the block's scale exponent 0) beside the midpoints of two
        neighbouring values (ties to even, down and up), the largest fp32 value below the
        next power of two (saturation), fp32 subnormals (the scale's clamp at 0).  And -0
        beside a finite value: products of a few 2^-126 scaled codes are below fp32's
        subnormals, and a negative one rounds to -0 (NVFP4: of 2^-9 scaled codes, times
        ``alpha`` = 2^-140, so with ``levels`` 2 only)."""
        fmt = self.out_fmt
        if fmt is None:
            return []
        table = golden.decode_table(fmt).astype(np.float64)
        codes = np.flatnonzero(np.isfinite(table) & (table > 0))
        codes = codes[np.argsort(table[codes])]
        vals = table[codes]
        amax = vals[-1]
        ties = {}  # RNE keeps the even code: (lower code even) down, (lower code odd) up
        for lo, v0, v1 in zip(codes[:-1], vals[:-1], vals[1:], strict=True):
            ties.setdefault("down" if lo % 2 == 0 else "up", (v0 + v1) / 2)
        top = 2.0 ** (np.floor(np.log2(amax)) + 1)
        blocks = [[amax, tie] for tie in ties.values()]
        blocks += [[np.nextafter(np.float32(top), np.float32(0))], [2.0 ** -149, 2.0 ** -140]]
        c0 = np.array([np.resize(np.asarray(b, np.float32), self.cols) for b in blocks])
        c0 = np.resize(c0, (-(-len(c0) // self.rows) * self.rows, self.cols))
        k, fa, fb = self.k, self.fmt_a, self.fmt_b
        runs = []
        for j in range(0, len(c0), self.rows):
            runs.append(GemmRun(self, np.zeros((1, self.rows, k), np.uint8),
                                np.full((1, self.rows), self.scale_one, np.uint8),
                                np.zeros((1, self.cols, k), np.uint8),
                                np.full((1, self.cols), self.scale_one, np.uint8),
                                "quantizer bins",
                                c0[j:j + self.rows].view(np.uint32)))
        ta, tb = golden.decode_table(fa), golden.decode_table(fb)
        cb = np.zeros((1, self.cols, k), np.uint8)
        cb[0, 1:] = int(np.flatnonzero(np.isfinite(tb) & (tb < 0))[0])
        start = np.zeros((self.rows, self.cols), np.float32)
        start[:, 0] = 1.0  # column 0: no products, the start alone
        a_code = int(np.flatnonzero(np.isfinite(ta) & (ta > 0))[0])
        runs.append(GemmRun(self, np.full((1, self.rows, k), a_code, np.uint8),
                            np.ones((1, self.rows), np.uint8), cb,
                            np.ones((1, self.cols), np.uint8), "-0 in a block",
                            start.view(np.uint32), alpha=1 << 9))
        return runs

    # -- the standard tests' sets ------------------------------------------------------------
    def random_batch(self, rng, n):
        return GemmBatch(self, self.random_runs(rng, max(4, n // 8), 12))

    def stream_phases(self, rng):
        n = max(16, min(self.config.blocks // 8, 400))
        phases = []
        for pattern in ("none", "random", "bursty"):
            runs = self.directed_runs(rng) + self.random_runs(rng, max(4, n // 8), 12)
            phases.append((pattern, GemmBatch(self, runs)))
        return phases

    def bulk_jobs(self, rng):
        jobs, blocks = [], self.config.blocks
        while blocks > 0:
            batch = self.random_batch(rng, min(blocks, 400) * 3)
            idle, stall = int(rng.integers(0, 60)), int(rng.integers(0, 60))
            jobs.append(BulkJob("interleaved runs", lambda b=batch: b, idle, stall,
                                drain=self.drain))
            blocks -= len(batch)
        return jobs

    async def throughput(self, runner, rng, seed, log):
        """One long run alone takes a block per loop latency (the fused step's ``stages``);
        that many or more interleaved long runs take a block per clock (every lane a K-block
        step per clock, no bubbles).  The output quantizers add their stages at the end."""
        lat, loop = self.latency, self.parameters["stages"]
        batches = [("single run", GemmBatch(self, [self.random_run(rng, self.long_k)]))]
        if self.contexts >= loop:
            runs = [self.random_run(rng, max(8, self.long_k // 4)) for _ in range(self.contexts)]
            batches.append((f"{self.contexts} interleaved runs", GemmBatch(self, runs)))
        blocks = bad = 0
        for what, batch in batches:
            got, cycles = await runner.run(batch.stim, seed=seed, out_count=batch.out_count,
                                           drain=self.drain)
            bad += batch.check(got, log)
            n = len(batch)
            blocks += n
            log.info("%s: %d blocks in %d cycles (%.3f blocks/clock, latency %d)", what, n,
                     cycles, n / cycles, lat)
            limit = n * loop + lat + 4 if what == "single run" else n + lat + 4
            assert cycles <= limit, f"{what}: {n} blocks took {cycles} cycles, limit {limit}"
        return blocks, bad


# The cocotb tests of this testbench: the standard tests on this unit's model.
standard_tests.register(globals(), GemmModel)
