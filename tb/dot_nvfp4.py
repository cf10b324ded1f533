"""cocotb testbench of the NVFP4 dot units (``hw.dot.MXDot`` and ``hw.dot.MXDotGeneral`` with
``--format nvfp4``), checked bit for bit against golden (:mod:`tb.nvfp4_dot_stimulus`).

The dot model of :mod:`tb.dot` with UE4M3 scales (the standard tests: stream, reset, bulk):

* **MXDot nvfp4**: the stream test runs the directed corner cases
  (:func:`tb.nvfp4_dot_stimulus.directed_cases`) and random blocks under no, random and
  bursty idle/backpressure; bulk runs every code pair in one lane (rotating over the lanes)
  at every pair of :data:`tb.nvfp4_dot_stimulus.SCALE_SPREAD` (196 scale pairs, zero,
  subnormal, NaN and bit-7 bytes included) with ``c`` = +-0 and near ``-T``, then random
  blocks; ``MX_EXHAUSTIVE`` (SIM_FULL) adds every code pair at every scale pair 0x00..0x7F
  (256 x 16,384 = 4,194,304 blocks).
* **MXDotGeneral nvfp4**: random runs interleaved over the contexts (:meth:`DotModel.schedule`'s
  order), golden's chain and, with the epilogue (``levels=2``), ``f(alpha * sum)`` with a
  random ``alpha`` per run given on its last beat (random noise on the others); every set
  of random runs ends in the directed ones of each epilogue bin
  (:func:`tb.nvfp4_dot_stimulus.epilogue_runs`: NaN, subnormal, underflow, overflow, ...).

* **MXDot nvfp4, ``tcgen05.mxf4nvf4``**: the same sets with golden's results in the GPU
  mode (a scale byte's sign bit ignored) and the mode's directed vectors
  (:func:`tb.dot_gpu.nvfp4_gpu_directed_blocks`).
* **MXDotGeneral nvfp4, ``tcgen05.mxf4nvf4``**: the runs with golden's steps of four blocks
  (and the epilogue, its NaN 0x7FFFFFFF); every eighth run from the fifth on (of at most
  16 blocks) is one of :func:`tb.dot_gpu.nvfp4_gpu_directed_runs`, whose chained result
  differs from a step per block.

Coverage: :mod:`tb.coverage.nvfp4_dot`; in the GPU mode :mod:`tb.coverage.dot_gpu` (MXDot)
or the run shapes, the epilogue's bins and ``steps`` (MXDotGeneral).
"""

from __future__ import annotations

import numpy as np

from golden.formats import FP32

from . import nvfp4_dot_stimulus as stim
from . import standard_tests
from .batch import Batch
from .bulk import DEPTH, BulkJob
from .coverage.dot import classify_runs
from .coverage.dot_gpu import classify_nvfp4_gpu, classify_steps, gpu_nvfp4_model
from .coverage.nvfp4_dot import classify_epilogue, classify_nvfp4_dot, nvfp4_dot_model
from .describe import describe_float
from .dot import DotBatch, DotModel, interleave
from .dot_gpu import nvfp4_gpu_directed_blocks, nvfp4_gpu_directed_runs


class NVFP4DotBatch(DotBatch):
    """MXDot nvfp4 blocks (one output each) with golden's results."""

    def __init__(self, model, ca, sa, cb, sb, c, labels):
        self.model, self.blocks_in = model, (ca, sa, cb, sb, c)
        self.labels = [labels] * len(sa) if isinstance(labels, str) else list(labels)
        self.results = stim.step_results(ca, sa, cb, sb, c, model.accumulation)
        Batch.__init__(self, model.pack(ca, sa, cb, sb, c), model.expected_rows(self.results))

    def coverage_counts(self):
        if self.model.accumulation != "exact":
            return classify_nvfp4_gpu(*self.blocks_in, self.results)
        return classify_nvfp4_dot(*self.blocks_in, self.results)


class NVFP4RunsBatch(Batch):
    """MXDotGeneral nvfp4 runs interleaved over the contexts (one output per run)."""

    def __init__(self, model, stim_rows, exp, labels, blocks, run_flags, epilogue):
        self.model, self.labels = model, labels
        self.run_flags, self.epilogue = run_flags, epilogue  # epilogue: (sums, alpha, res)
        super().__init__(stim_rows, exp, blocks=blocks)

    def coverage_counts(self):
        counts = classify_runs(*self.run_flags)
        if self.model.accumulation != "exact":
            counts.update(classify_steps(*self.run_flags, self.model.k))
        if self.epilogue is not None:
            counts.update(classify_epilogue(*self.epilogue))
        return counts

    def describe(self, row, got):
        return self.model.describe_output(row, self.exp[row], got, self.labels[row])


class NVFP4DotModel(DotModel):
    """:class:`tb.dot.DotModel` with UE4M3 scales, golden's NVFP4 steps and the epilogue."""

    def __init__(self, config):
        super().__init__(config)
        self.levels = self.parameters.get("levels", 1)
        self._directed_runs = (nvfp4_gpu_directed_runs(self.k)
                               if self.general and self.accumulation != "exact" else [])
        self._epilogue_runs = ([(c0, (ca, sa, cb, sb), alpha) for ca, sa, cb, sb, c0, alpha, _
                                in stim.epilogue_runs(self.k)]
                               if self.general and self.levels == 2 else [])

    def interface(self):
        """docs/dot.md, NVFP4: MXDot's or MXDotGeneral's fields; with the epilogue
        (``levels=2``) ``alpha`` (fp32) after ``ctx``."""
        fields_in, fields_out = super().interface()
        if self.general and self.levels == 2:
            fields_in = [*fields_in, ("alpha", 32)]
        return fields_in, fields_out

    def coverage_model(self):
        if self.accumulation == "exact":
            return nvfp4_dot_model(self.general, self.levels == 2)
        return gpu_nvfp4_model(self.general, self.levels == 2)

    def pack(self, ca, sa, cb, sb, c, first=None, last=None, ctx=None, alpha=None):
        if alpha is None:
            return super().pack(ca, sa, cb, sb, c, first, last, ctx)
        fields = {"a.scale": sa, "a.codes": ca, "b.scale": sb, "b.codes": cb, "c0": c,
                  "first": first, "last": last, "alpha": alpha}
        if "ctx" in self.in_layout.fields:
            fields["ctx"] = ctx
        return self.in_layout.pack(len(sa), **fields)

    # -- MXDot blocks ----------------------------------------------------------------------
    def random_block_batch(self, rng, n, labels="random"):
        ca, cb = stim.random_codes(rng, n, self.k), stim.random_codes(rng, n, self.k)
        sa, sb = stim.random_scales(rng, n), stim.random_scales(rng, n)
        c = stim.accumulators(rng, ca, sa, cb, sb)
        return NVFP4DotBatch(self, ca, sa, cb, sb, c, labels)

    def directed_batch(self):
        cases = stim.directed_cases(self.k)
        if self.accumulation != "exact":  # the exact mode's corners (labelled so: a bit-7
            # byte is not NaN here), and what distinguishes the mode (tb.dot_gpu)
            cases = [(*x[:5], f"{x[5]} (exact mode's case)") for x in cases]
            cases += [(list(x[0]), *x[1:2], list(x[2]), *x[3:])
                      for x in nvfp4_gpu_directed_blocks(self.k)]
        ca = np.array([x[0] for x in cases], np.uint8)
        cb = np.array([x[2] for x in cases], np.uint8)
        sa = np.array([x[1] for x in cases], np.uint8)
        sb = np.array([x[3] for x in cases], np.uint8)
        c = np.array([x[4] for x in cases], np.uint32)
        return NVFP4DotBatch(self, ca, sa, cb, sb, c, [x[5] for x in cases])

    def _code_pair_jobs(self, rng, scales, what: str) -> list[BulkJob]:
        """Every code pair in one lane (rotating over the lanes, the others zero) at every
        pair of ``scales``; ``c`` cycles through +0, -0 and near ``-T``."""
        k = self.k
        xa, xb, ia, ib = (x.ravel() for x in np.meshgrid(
            np.arange(16), np.arange(16), np.arange(len(scales)), np.arange(len(scales)),
            indexing="ij"))
        total = xa.size

        def make(sl):
            n, rows = sl.stop - sl.start, np.arange(sl.stop - sl.start)
            lane = np.arange(sl.start, sl.stop) % k
            ca, cb = np.zeros((n, k), np.uint8), np.zeros((n, k), np.uint8)
            ca[rows, lane], cb[rows, lane] = xa[sl], xb[sl]
            sa, sb = scales[ia[sl]], scales[ib[sl]]
            near = stim.accumulators(rng, ca, sa, cb, sb)
            kind = np.arange(sl.start, sl.stop) % 3
            c = np.where(kind == 0, 0, np.where(kind == 1, FP32.sign_mask, near))
            return NVFP4DotBatch(self, ca, sa, cb, sb, c.astype(np.uint32), what)

        return [BulkJob(what, lambda sl=sl: make(sl), idle=16, stall=16, drain=self.drain)
                for sl in (slice(lo, min(total, lo + DEPTH)) for lo in range(0, total, DEPTH))]

    def exhaustive_product_jobs(self, rng):
        """Every code pair at every pair of :data:`tb.nvfp4_dot_stimulus.SCALE_SPREAD`."""
        return self._code_pair_jobs(rng, stim.SCALE_SPREAD, "code pairs x scale spread")

    def scale_pair_jobs(self):
        """``MX_EXHAUSTIVE``: every code pair at every scale pair 0x00..0x7F."""
        rng = np.random.default_rng(0)  # the near-c noise only; the sweep is exhaustive
        return self._code_pair_jobs(rng, np.arange(0x80, dtype=np.uint8),
                                    "every code pair and scale pair")

    # -- MXDotGeneral runs -----------------------------------------------------------------
    def random_runs(self, rng, count, *, max_len, lengths=None):
        """``count`` runs: ``(c0 bits, (ca, sa, cb, sb), alpha bits)``; runs longer than 16
        blocks keep their scales near 1 and c0 finite.  With the epilogue and no
        ``lengths``, the directed runs of :func:`tb.nvfp4_dot_stimulus.epilogue_runs` follow
        (one of each of its bins)."""
        runs = []
        alphas = stim.random_alpha(rng, count)
        for i in range(count):
            n = int(lengths[i]) if lengths is not None else int(rng.integers(1, max_len + 1))
            ca, cb = stim.random_codes(rng, n, self.k), stim.random_codes(rng, n, self.k)
            sa, sb = stim.random_scales(rng, n), stim.random_scales(rng, n)
            if n > 16:
                sa = rng.integers(0x20, 0x50, n).astype(np.uint8)
                sb = rng.integers(0x20, 0x50, n).astype(np.uint8)
            c0 = int(stim.accumulators(rng, ca[:1], sa[:1], cb[:1], sb[:1])[0])
            if n > 16 and (c0 & FP32.inf_bits) == FP32.inf_bits:
                c0 = 0x3F800000
            alpha = int(alphas[i])
            if self._directed_runs and lengths is None and i % 8 == 5:  # chained steps
                ca, sa, cb, sb, c0, _ = self._directed_runs[(i // 8) % len(self._directed_runs)]
            if n <= 16 and i % 8 in (3, 7):  # the epilogue's corners on a tiny or zero sum
                ca[:], sa[:] = 0, 0x01
                ca[:, 0] = cb[:, 0] = stim.code_of(0.5)
                sb[:] = 0x01 if i % 8 == 3 else 0x00  # sum n * 2^-20, or 0
                c0 = 0
                alpha = int(rng.choice([0x7F800000, 0xFF800000, 0x0A000000, 0x80000100]))
            runs.append((c0, (ca, sa, cb, sb), alpha))
        return runs + (self._epilogue_runs if lengths is None else [])

    def schedule(self, rng, runs):
        """Interleave runs over the contexts round-robin (:func:`tb.dot.interleave`); ``c0``
        and ``alpha`` of a beat that does not read them are random noise."""
        order = interleave([len(blocks[1]) for _, blocks, _ in runs], self.contexts)
        n, k, epi = len(order), self.k, self.levels == 2
        ca, cb = np.empty((n, k), np.uint8), np.empty((n, k), np.uint8)
        sa, sb = np.empty(n, np.uint8), np.empty(n, np.uint8)
        c0 = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
        alpha = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
        first, last, ctx = np.zeros(n, np.uint8), np.zeros(n, np.uint8), np.zeros(n, np.uint8)
        results = []
        for j, (r, b, s) in enumerate(order):
            c_init, (xa, xsa, xb, xsb), a_bits = runs[r]
            ca[j], sa[j], cb[j], sb[j] = xa[b], xsa[b], xb[b], xsb[b]
            first[j], last[j], ctx[j] = b == 0, b == len(xsa) - 1, s
            if first[j]:
                c0[j] = c_init
            if last[j]:
                alpha[j] = a_bits
                total, res = stim.run_result(xa, xsa, xb, xsb, c_init, a_bits if epi else None,
                                             self.accumulation)
                what = (f"run {r} ({len(xsa)} blocks, c0 {describe_float(c_init, FP32)}, ctx "
                        f"{s}" + (f", sum {describe_float(total, FP32)}, alpha "
                                  f"{describe_float(a_bits, FP32)})" if epi else ")"))
                results.append((res, s, what, total, a_bits))
        res = np.array([x[0] for x in results], np.uint32)
        exp = self.expected_rows(res, np.array([x[1] for x in results], np.uint8))
        epilogue = (np.array([x[3] for x in results], np.uint32),
                    np.array([x[4] for x in results], np.uint32), res) if epi else None
        return NVFP4RunsBatch(self, self.pack(ca, sa, cb, sb, c0, first, last, ctx,
                                              alpha if epi else None), exp,
                              [x[2] for x in results], n, (first, last, ctx), epilogue)


# The cocotb tests of this testbench: the standard tests on the NVFP4 dot model.
standard_tests.register(globals(), NVFP4DotModel)
