"""cocotb testbench of the NVFP4 quantizer (:mod:`hw.nvfp4_quantizer`), checked bit for bit
against ``golden.quantize(x, "nvfp4", tensor_scale=P, recipe="torchao")``
(:mod:`tb.nvfp4_quantizer_stimulus`).

The model of the standard tests (:mod:`tb.standard_tests`): random blocks (every exponent
field, per block a spread of binades, signed zeros, NaN/Inf and zero blocks; two level a P per
block in golden's range, directed ones included; ``MX_BLOCKS`` in the stream test, 20 times
that in bulk); the directed groups (:data:`tb.nvfp4_quantizer_stimulus.DIRECTED`: e2m1 ties,
the tie moved by the fp32 product, the scale clamped at 2^-6 and at 448, UE4M3 ties,
saturation at 6, -0, zero blocks, subnormal inputs, NaN/Inf blocks; two level under each
directed P, also scaled by P); and under ``MX_FULL`` every bf16 (fp16) value at a spread of
block amaxes (:func:`tb.nvfp4_quantizer_stimulus.exhaustive_inputs`).  Two blocks a beat
(``blocks = 2``): consecutive blocks of these sets in pairs, both under the first one's P
(:meth:`NVFP4QuantizerBatch.beats`; a set of odd length repeats its first block).

Coverage, per input format and level: cover point ``block`` with ``clamped_low`` (a non-zero
amax whose unclamped scale is below 2^-6), ``clamped_high`` (above 448), ``zero_block``,
``nan_inf_block``, ``subnormal_input`` (a finite block with a subnormal lane); cover point
``element`` with ``e2m1_tie`` (f(x * r) exactly an e2m1 tie), ``tie_moved`` (e2m1 RNE of the
exact x * r and of f(x * r) differ), ``saturated`` (|f(x * r)| > 6), ``neg_zero`` (code 0x8).
"""

from __future__ import annotations

import numpy as np

import golden
from golden.scale_format import UE4M3

from . import nvfp4_quantizer_stimulus as stim
from . import standard_tests
from .batch import Batch
from .bulk import BulkJob
from .coverage.model import CoverageModel, point

BLOCK_BINS = ("clamped_low", "clamped_high", "zero_block", "nan_inf_block", "subnormal_input")
ELEMENT_BINS = ("e2m1_tie", "tie_moved", "saturated", "neg_zero")
_F32 = np.float32
_GRID = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def coverage_model(input_format, levels: int) -> CoverageModel:
    """The cover points of one input format and level (bins: module docstring)."""
    return CoverageModel("nvfp4-quantizer", f"{input_format}-l{levels}",
                         (point("block", BLOCK_BINS, {}), point("element", ELEMENT_BINS, {})))


def e2m1_rne(v: np.ndarray) -> np.ndarray:
    """e2m1 magnitude codes (0..7) of ``|v|`` (float64, exact), RNE, saturated at 6."""
    a = np.minimum(np.abs(v), 6.0)
    hi = np.clip(np.searchsorted(_GRID, a, side="left"), 1, 7)
    lo = hi - 1
    d_lo, d_hi = a - _GRID[lo], _GRID[hi] - a
    up = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    return np.where(a == _GRID[hi], hi, np.where(up, hi, lo))


def classify(x_bits, p_bits, scales, input_format, levels: int) -> dict:
    """Bin hit counts ``{"block": {...}, "element": {...}}`` of a batch (golden's
    ``scales``)."""
    ff = golden.float_format(input_format)
    x = np.asarray(x_bits).astype(ff.uint).view(ff.dtype).astype(np.float32)
    n, k = x.shape
    fin = np.all(np.isfinite(x), axis=1)
    xs = np.where(fin[:, None], x, _F32(0))
    p = None if p_bits is None else np.asarray(p_bits, np.uint32).view(np.float32)
    with np.errstate(all="ignore"):
        amax = np.max(np.abs(xs), axis=1)
        v = (amax / _F32(6)).astype(np.float32)
        if p is not None:
            v = (v / p).astype(np.float32)
        sv = UE4M3.decode(scales).astype(np.float32)
        num = _F32(1) if p is None else (_F32(1) / p).astype(np.float32)
        r = (num / sv).astype(np.float32)
        y = (xs * r[:, None]).astype(np.float32)
        exact = xs.astype(np.float64) * r.astype(np.float64)[:, None]
    yf = np.where(fin[:, None], y, 0).astype(np.float64)
    live = fin[:, None] & np.ones((n, k), bool)
    tiny = 2.0 ** (1 - ff.bias)
    sub = (x != 0) & (np.abs(x) < tiny)
    ties = np.isin(np.abs(yf), (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0))
    block = {"clamped_low": fin & (amax != 0) & (v < 2.0 ** -6),
             "clamped_high": fin & (v > 448), "zero_block": fin & (amax == 0),
             "nan_inf_block": ~fin, "subnormal_input": fin & sub.any(axis=1)}
    elem = {"e2m1_tie": live & ties,
            "tie_moved": live & (e2m1_rne(exact) != e2m1_rne(yf)),
            "saturated": live & (np.abs(yf) > 6),
            "neg_zero": live & np.signbit(xs) & (e2m1_rne(yf) == 0)}
    return {"block": {b: int(np.count_nonzero(c)) for b, c in block.items()},
            "element": {b: int(np.count_nonzero(c)) for b, c in elem.items()}}


class NVFP4QuantizerBatch(Batch):
    """Blocks of input bits and P, and golden's scale bytes and codes; a beat carries
    ``model.blocks`` consecutive blocks under one P."""

    def __init__(self, model: NVFP4QuantizerModel, x_bits, p_bits):
        self.model = model
        x_bits, p_bits = self.beats(x_bits, p_bits, model.blocks)
        self.x_bits, self.p_bits = x_bits, p_bits  # one row per block
        self.scales, self.codes = stim.expected(x_bits, p_bits, model.input, model.k)
        b, n = model.blocks, len(x_bits) // model.blocks
        fields = {"data": x_bits.reshape(n, -1)}
        if p_bits is not None:
            fields["tensor_scale"] = p_bits[::b]
            fields["tensor_scale_rcp"] = stim.reciprocal_bits(p_bits[::b])
        super().__init__(model.in_layout.pack(n, **fields),
                         model.out_layout.pack(n, scale=self.scales.reshape(n, -1),
                                               codes=self.codes.reshape(n, -1)))

    @staticmethod
    def beats(x_bits, p_bits, blocks: int):
        """``x_bits`` (one row per block) and ``p_bits`` as ``blocks`` blocks a beat: an
        odd set's first block repeated at its end, each beat's blocks under its first P."""
        x_bits = np.asarray(x_bits)
        pad = -len(x_bits) % blocks
        x_bits = np.concatenate([x_bits, x_bits[:pad]])
        if p_bits is not None:
            p_bits = np.asarray(p_bits)
            p_bits = np.repeat(np.concatenate([p_bits, p_bits[:pad]])[::blocks], blocks)
        return x_bits, p_bits

    def coverage_counts(self):
        return classify(self.x_bits, self.p_bits, self.scales, self.model.input,
                        self.model.levels)

    def describe(self, row, got):
        m = self.model
        out = m.out_layout.unpack(got[None, :])
        scales = np.atleast_1d(out["scale"][0])
        codes = out["codes"][0].reshape(m.blocks, m.k)
        lines = []
        for j in range(m.blocks):
            blk = row * m.blocks + j
            p = "" if self.p_bits is None else f", P {int(self.p_bits[blk]):#010x}"
            lines.append(f"beat {row} block {j}{p}: scale expected "
                         f"{int(self.scales[blk]):#04x}, actual {int(scales[j]):#04x}")
            for lane in np.flatnonzero(codes[j] != self.codes[blk])[:4]:
                lines.append(f"  lane {lane}: input {int(self.x_bits[blk, lane]):#x}: "
                             f"expected {int(self.codes[blk, lane]):#x}, actual "
                             f"{int(codes[j][lane]):#x}")
        return "\n".join(lines)


class NVFP4QuantizerModel(standard_tests.UnitModel):
    """Unit parameters (from the sidecar), stimulus and golden expectations."""

    def __init__(self, config):
        super().__init__(config)
        self.input = self.parameters["input"]
        self.levels = self.parameters["levels"]
        self.blocks = self.blocks_per_beat = self.parameters["blocks"]

    def interface(self):
        """``data`` (blocks x k input values) and, two level, ``tensor_scale`` and
        ``tensor_scale_rcp`` (32 each); out ``scale`` (blocks x 8) and ``codes``
        (blocks x k x 4)."""
        b = self.blocks
        fields = [("data", b * self.k * golden.float_format(self.input).bits)]
        if self.levels == 2:
            fields += [("tensor_scale", 32), ("tensor_scale_rcp", 32)]
        return fields, [("scale", b * 8), ("codes", b * self.k * 4)]

    def coverage_model(self):
        return coverage_model(self.input, self.levels)

    def random_batch(self, rng, n):
        return NVFP4QuantizerBatch(self, *stim.random_inputs(rng, n * self.blocks, self.k,
                                                             self.input,
                                                             self.levels))

    def _directed(self):
        return NVFP4QuantizerBatch(self, *stim.directed_inputs(self.k, self.input, self.levels))

    def _exhaustive(self):
        return NVFP4QuantizerBatch(self, *stim.exhaustive_inputs(self.k, self.input,
                                                                 self.levels))

    def stream_phases(self, rng):
        """Random blocks under random patterns, then the directed set under bursty ones."""
        return [("random", self.random_batch(rng, self.config.blocks)),
                ("bursty", self._directed())]

    def bulk_jobs(self, rng):
        """The directed set and (``MX_FULL``) the exhaustive one, the stream kept full; a
        large random batch with random gaps and backpressure."""
        idle, stall = (int(x) for x in rng.integers(0, 100, 2))
        jobs = [BulkJob("random", lambda: self.random_batch(rng, 20 * self.config.blocks),
                        idle, stall, drain=self.drain)]
        if self.config.sweeps:
            jobs.insert(0, BulkJob("directed", self._directed, drain=self.drain))
            if self.config.full:
                jobs.insert(1, BulkJob("every 16-bit value at a spread of amaxes",
                                       self._exhaustive, drain=self.drain))
        return jobs


standard_tests.register(globals(), NVFP4QuantizerModel)
