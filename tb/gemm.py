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
  fp32's subnormals and subnormal results, NaN, Inf and -0 starts), each under no, random
  and bursty idle/backpressure; the reset test resets with runs in flight;
* bulk: the throughput check (one long run alone takes a block every latency; with at least
  ``latency`` contexts, interleaved long runs take a block per clock, no bubbles), then
  interleaved runs of 1 to 40 blocks under random idle/stall.

``MX_FULL`` (SIM_FULL) makes the long runs 8192 blocks (1024 otherwise).
"""

from __future__ import annotations

import numpy as np

import golden
from golden.formats import FP32, SCALE_NAN
from golden.stimulus import dot_random_blocks as random_blocks

from . import standard_tests
from .batch import Batch
from .bulk import BulkJob
from .coverage.dot import classify_runs
from .coverage.gemm import classify_mx_blocks, classify_outputs, gemm_model
from .describe import describe_float
from .dot import interleave


class GemmRun:
    """One tile job: K blocks of R rows of A (``ca`` (K, R, k), ``sa`` (K, R)) and of C
    columns of B (``cb`` (K, C, k), ``sb`` (K, C)), with golden's R x C results and whether
    each output has a non-zero product; ``c0`` (R, C) the fp32 bits of the outputs'
    accumulator starts (+0 when None).

    The expected results are :func:`golden.matmul` of the tile's operands: A the R x Kk
    MXArray blocked along its rows (:meth:`operands`), B the Kk x C one blocked along its
    columns; fp32, and with an MX output ``golden.matmul(..., out_format=..,
    out_block_size=cols)`` at its defaults (the floor scale, RNE), the rules the tile's
    output quantizers apply."""

    def __init__(self, model: GemmModel, ca, sa, cb, sb, label: str, c0=None):
        self.ca, self.sa, self.cb, self.sb, self.label = ca, sa, cb, sb, label
        self.c0 = (np.zeros((model.rows, model.cols), np.uint32) if c0 is None
                   else np.asarray(c0, np.uint32).reshape(model.rows, model.cols))
        a, b = self.operands(model)
        acc = self.c0.view(np.float32)
        self.results = golden.matmul(a, b, acc=acc,
                                     accumulation=model.accumulation).view(np.uint32)  # (R, C)
        nz_a = (golden.decode(ca, model.fmt_a) != 0).astype(np.int64)  # NaN counts as non-zero
        nz_b = (golden.decode(cb, model.fmt_b) != 0).astype(np.int64)
        self.products_nonzero = np.einsum("krl,kcl->rc", nz_a, nz_b) > 0
        self.mx = None
        if model.out_fmt is not None:  # (codes (R, C), scales (R,)) of each row's block
            out = golden.matmul(a, b, acc=acc, out_format=model.out_fmt,
                                out_block_size=model.cols, accumulation=model.accumulation)
            self.mx = out.codes, out.scales[:, 0]

    def operands(self, model: GemmModel):
        """The run's A (R x Kk, blocked along axis 1) and B (Kk x C, blocked along axis 0) as
        :class:`golden.MXArray`."""
        n, k = self.sa.shape[0], model.k
        a_codes = np.ascontiguousarray(np.moveaxis(self.ca, 1, 0)).reshape(model.rows, n * k)
        b_codes = np.ascontiguousarray(np.moveaxis(self.cb, 2, 1)).reshape(n * k, model.cols)
        a = golden.MXArray(np.ascontiguousarray(self.sa.T), a_codes, model.fmt_a, k, 1,
                           (model.rows, n * k))
        b = golden.MXArray(np.ascontiguousarray(self.sb), b_codes, model.fmt_b, k, 0,
                           (n * k, model.cols))
        return a, b

    def __len__(self) -> int:
        return self.sa.shape[0]


class GemmBatch(Batch):
    """Runs interleaved over the contexts (one output beat per run)."""

    def __init__(self, model: GemmModel, runs: list[GemmRun]):
        self.model, self.runs = model, runs
        order = interleave([len(run) for run in runs], model.contexts)
        n = len(order)
        fields = {}
        for r in range(model.rows):
            fields[f"a.row{r}.scale"] = np.array([runs[j].sa[b, r] for j, b, _ in order])
            fields[f"a.row{r}.codes"] = np.stack([runs[j].ca[b, r] for j, b, _ in order])
        for c in range(model.cols):
            fields[f"b.col{c}.scale"] = np.array([runs[j].sb[b, c] for j, b, _ in order])
            fields[f"b.col{c}.codes"] = np.stack([runs[j].cb[b, c] for j, b, _ in order])
        first = np.array([b == 0 for _, b, _ in order], np.uint8)
        # c0 on a run's first beat; other beats carry garbage (the tile ignores it)
        noise = np.random.default_rng(n).integers(0, 1 << 32, (n, model.rows, model.cols),
                                                  dtype=np.uint32)
        c0 = np.stack([runs[j].c0 if b == 0 else noise[t]
                       for t, (j, b, _) in enumerate(order)])
        for r in range(model.rows):
            fields[f"c0.row{r}"] = c0[:, r]
        last = np.array([b == len(runs[j]) - 1 for j, b, _ in order], np.uint8)
        ctx = np.array([s for _, _, s in order], np.uint8)
        fields.update(first=first, last=last)
        if model.ctx_bits:
            fields["ctx"] = ctx
        ended = [(j, s) for (j, _, s), end in zip(order, last, strict=True) if end]
        self.ended = [j for j, _ in ended]
        if model.out_fmt is None:
            out = {f"result.row{r}": np.stack([runs[j].results[r] for j, _ in ended])
                   for r in range(model.rows)}
        else:
            out = {}
            for r in range(model.rows):
                out[f"result.row{r}.scale"] = np.array([runs[j].mx[1][r] for j, _ in ended])
                out[f"result.row{r}.codes"] = np.stack([runs[j].mx[0][r] for j, _ in ended])
        if model.ctx_bits:
            out["ctx"] = np.array([s for _, s in ended], np.uint8)
        self.run_flags = (first, last, ctx)
        super().__init__(model.in_layout.pack(n, **fields),
                         model.out_layout.pack(len(ended), **out), blocks=n)

    def coverage_counts(self):
        counts = classify_runs(*self.run_flags)
        counts.update(classify_outputs(
            np.stack([run.results for run in self.runs]),
            np.stack([run.products_nonzero for run in self.runs])))
        m = self.model
        if m.out_fmt is not None:
            counts.update(classify_mx_blocks(
                np.concatenate([run.results for run in self.runs]),
                np.concatenate([run.mx[1] for run in self.runs]),
                np.concatenate([run.mx[0] for run in self.runs]), m.out_fmt))
        return counts

    def describe(self, row, got):
        run = self.runs[self.ended[row]]
        m = self.model
        rows = m.out_layout.unpack(np.stack([self.exp[row], got]))
        bad = []
        for r in range(m.rows):
            if m.out_fmt is not None:
                fields = [f"result.row{r}.scale", f"result.row{r}.codes"]
                if any((rows[f][0] != rows[f][1]).any() for f in fields):
                    fp32 = ", ".join(describe_float(int(x), FP32) for x in run.results[r])
                    bad.append(f"row {r} block of ({fp32}): expected scale "
                               f"{int(rows[fields[0]][0])} codes {rows[fields[1]][0].tolist()},"
                               f" got scale {int(rows[fields[0]][1])} codes "
                               f"{rows[fields[1]][1].tolist()}")
                continue
            exp_r, got_r = rows[f"result.row{r}"]
            bad += [f"C[{r}][{c}] expected {describe_float(int(exp_r[c]), FP32)}, got "
                    f"{describe_float(int(got_r[c]), FP32)}"
                    for c in range(m.cols) if exp_r[c] != got_r[c]]
        if "ctx" in rows and rows["ctx"][0] != rows["ctx"][1]:
            bad.append(f"ctx expected {int(rows['ctx'][0])}, got {int(rows['ctx'][1])}")
        return (f"output {row} ({run.label}, K = {len(run)} blocks): "
                + "; ".join(bad or ["payload differs"]))


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
        self.drain = 4 * self.latency + 8
        self.long_k = 8192 if config.full else 1024

    def interface(self):
        """docs/gemm.md, Interface: ``a.row<r>`` and ``b.col<c>`` blocks (scale, codes),
        ``c0.row<r>`` (C fp32 starts), ``first``, ``last``, ``ctx``; out ``result.row<r>``
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
        return [*blocks, *c0, ("first", 1), ("last", 1), *ctx], [*out, *ctx]

    def coverage_model(self):
        return gemm_model(self.fmt_a, self.fmt_b, self.contexts, self.out_fmt)

    # -- runs --------------------------------------------------------------------------------
    def _blocks(self, rng, n, width, fmt, specials):
        """``n`` x ``width`` random blocks of ``fmt``: codes (n, width, k), scales (n, width)."""
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
        if n > 16:
            sa, sb = np.clip(sa, 110, 140), np.clip(sb, 110, 140)
        return GemmRun(self, ca, sa.astype(np.uint8), cb, sb.astype(np.uint8), label,
                       self.random_c0(rng, n <= 40))

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
            sa = np.full((2, self.rows), int(rng.integers(120, 135)), np.uint8)
            sb = np.full((2, self.cols), int(rng.integers(120, 135)), np.uint8)
            runs.append(GemmRun(self, ca, sa, cb, sb, "cancellation to +0"))
        nan = self.random_run(rng, 2, "NaN scale")
        nan.sa[1, 0] = SCALE_NAN
        runs.append(GemmRun(self, nan.ca, nan.sa, nan.cb, nan.sb, "NaN scale"))
        big_a = int(pos_a[np.argmax(ta[pos_a])])
        big_b = int(pos_b[np.argmax(tb[pos_b])])
        runs.append(GemmRun(self, np.full((1, self.rows, k), big_a, np.uint8),
                            np.full((1, self.rows), 254, np.uint8),
                            np.full((1, self.cols, k), big_b, np.uint8),
                            np.full((1, self.cols), 254, np.uint8), "overflow to Inf"))
        for lo, label in ((0, "results below subnormal"), (55, "subnormal results")):
            run = self.random_run(rng, 1)
            sa = (lo + rng.integers(0, 4, run.sa.shape)).astype(np.uint8)
            sb = (lo + rng.integers(0, 4, run.sb.shape)).astype(np.uint8)
            runs.append(GemmRun(self, run.ca, sa, run.cb, sb, label))
        specials = np.array([np.nan, np.inf, -np.inf, -0.0], np.float32).view(np.uint32)
        starts = np.resize(specials, self.rows * self.cols)
        for zero in (True, False):  # zero products (the start alone), and random ones
            run = self.random_run(rng, 2)
            ca = np.zeros_like(run.ca) if zero else run.ca
            runs.append(GemmRun(self, ca, run.sa, run.cb, run.sb, "NaN, Inf, -0 starts",
                                rng.permutation(starts)))
        return runs + self.quantizer_runs(rng)

    def quantizer_runs(self, rng) -> list[GemmRun]:
        """With an MX output, runs of one block aimed at the output quantizer's rare bins
        (none for fp32 results).  Zero products leave each output its finite non-zero
        ``c0`` (``RNE_fp32(c + 0) = c``), so ``c0`` sets the rows' blocks: the largest value
        of the output format (the block's scale exponent 0) beside the midpoints of two
        neighbouring values (ties to even, down and up), the largest fp32 value below the
        next power of two (saturation), fp32 subnormals (the scale's clamp at 0).  And -0
        beside a finite value: products of a few 2^-126 scaled codes are below fp32's
        subnormals, and a negative one rounds to -0."""
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
                                np.full((1, self.rows), 127, np.uint8),
                                np.zeros((1, self.cols, k), np.uint8),
                                np.full((1, self.cols), 127, np.uint8), "quantizer bins",
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
                            start.view(np.uint32)))
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
