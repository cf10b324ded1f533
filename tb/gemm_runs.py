"""The runs of the GEMM tile's testbench (:mod:`tb.gemm`): one tile job (:class:`GemmRun`,
its operands and golden's results) and runs interleaved over the contexts into the stimulus
and expected beats (:class:`GemmBatch`).  The module docstring of :mod:`tb.gemm` states the
numerics expected."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

import golden
from golden.formats import FP32
from golden.nvfp4_dot import epilogue

from .batch import Batch
from .coverage.dot import classify_runs
from .coverage.dot_gpu import GPU_NAN
from .coverage.gemm import classify_mx_blocks, classify_outputs
from .coverage.nvfp4_dot import classify_epilogue, readable_scales
from .describe import describe_float
from .dot import interleave

if TYPE_CHECKING:
    from .gemm import GemmModel

__all__ = ["ALPHA_ONE", "GemmRun", "GemmBatch"]


#: fp32 bits of 1.0: the ``alpha`` that leaves a run's sum as it is.
ALPHA_ONE = 0x3F800000


class GemmRun:
    """One tile job: K blocks of R rows of A (``ca`` (K, R, k), ``sa`` (K, R)) and of C
    columns of B (``cb`` (K, C, k), ``sb`` (K, C)), with golden's R x C results and whether
    each output has a non-zero product; ``c0`` (R, C) the fp32 bits of the outputs'
    accumulator starts (+0 when None).

    The expected results are :func:`golden.matmul` of the tile's operands: A the R x Kk
    MXArray blocked along its rows (:meth:`operands`), B the Kk x C one blocked along its
    columns; fp32, and with an MX output ``golden.matmul(..., out_format=..,
    out_block_size=cols)`` at its defaults (the floor scale, RNE), the rules the tile's
    output quantizers apply.  nvfp4: ``sums`` (R, C), the fp32 bits of golden.matmul's
    sums, before the epilogue (``levels`` 2)."""

    def __init__(self, model: GemmModel, ca, sa, cb, sb, label: str, c0=None,
                 alpha=ALPHA_ONE):
        self.ca, self.sa, self.cb, self.sb, self.label = ca, sa, cb, sb, label
        self.c0 = (np.zeros((model.rows, model.cols), np.uint32) if c0 is None
                   else np.asarray(c0, np.uint32).reshape(model.rows, model.cols))
        self.alpha = int(alpha)
        a, b = self.operands(model)
        acc = self.c0.view(np.float32)
        if model.nvfp4:
            self._nvfp4_results(model, a, b, acc)
            return
        self.results = golden.matmul(a, b, acc=acc,
                                     accumulation=model.accumulation).view(np.uint32)  # (R, C)
        self._products_nonzero(model)
        self.mx = None
        if model.out_fmt is not None:  # (codes (R, C), scales (R,)) of each row's block
            out = golden.matmul(a, b, acc=acc, out_format=model.out_fmt,
                                out_block_size=model.cols, accumulation=model.accumulation)
            self.mx = out.codes, out.scales[:, 0]

    def _nvfp4_results(self, model, a, b, acc):
        """golden.matmul's sums of the nvfp4 operands, then (``levels`` 2) the epilogue
        ``f(alpha * sum)``; an MX output quantizes those as golden.matmul's ``out_format``."""
        gpu = model.accumulation != "exact"
        out = golden.matmul(a, b, acc=acc, accumulation=model.accumulation)
        self.sums = np.asarray(out, np.float32).view(np.uint32)  # before the epilogue
        if model.levels == 2:
            out = epilogue(out, np.array([self.alpha], np.uint32).view(np.float32)[0],
                           GPU_NAN if gpu else FP32.qnan_bits)
        self.results = np.asarray(out, np.float32).view(np.uint32)
        self._products_nonzero(model)
        self.mx = None
        if model.out_fmt is not None:
            q = golden.quantize(self.results.view(np.float32), model.out_fmt,
                                block_size=model.cols, axis=-1)
            self.mx = q.codes, q.scales[:, 0]

    def _products_nonzero(self, model):
        ca, cb = self.ca, self.cb
        nz_a = (golden.decode(ca, model.fmt_a) != 0).astype(np.int64)  # NaN counts as non-zero
        nz_b = (golden.decode(cb, model.fmt_b) != 0).astype(np.int64)
        self.products_nonzero = np.einsum("krl,kcl->rc", nz_a, nz_b) > 0

    def operands(self, model: GemmModel):
        """The run's A (R x Kk, blocked along axis 1) and B (Kk x C, blocked along axis 0) as
        :class:`golden.MXArray`."""
        n, k = self.sa.shape[0], model.k
        a_codes = np.ascontiguousarray(np.moveaxis(self.ca, 1, 0)).reshape(model.rows, n * k)
        b_codes = np.ascontiguousarray(np.moveaxis(self.cb, 2, 1)).reshape(n * k, model.cols)
        sa, sb, scaling = self.sa, self.sb, {}
        if model.nvfp4:  # the tcgen05 step ignores a UE4M3 byte's sign bit
            sa, sb = ((readable_scales(sa), readable_scales(sb)) if model.accumulation == "exact"
                      else (sa & 0x7F, sb & 0x7F))
            scaling = {"scale_format": "ue4m3"}
        a = golden.MXArray(np.ascontiguousarray(sa.T), a_codes, model.fmt_a, k, 1,
                           (model.rows, n * k), **scaling)
        b = golden.MXArray(np.ascontiguousarray(sb), b_codes, model.fmt_b, k, 0,
                           (n * k, model.cols), **scaling)
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
        if model.levels == 2:  # alpha on a run's last beat; the others carry garbage
            fields["alpha"] = np.where(last, [runs[j].alpha for j, _, _ in order],
                                       noise[:, 0, 0]).astype(np.uint32)
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
        if m.nvfp4 and m.levels == 2:  # per output: its sum, its run's alpha, its result
            counts.update(classify_epilogue(
                np.concatenate([run.sums.ravel() for run in self.runs]),
                np.concatenate([np.full(run.sums.size, run.alpha, np.uint32)
                                for run in self.runs]),
                np.concatenate([run.results.ravel() for run in self.runs])))
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
