"""cocotb testbench of the MX quantizer, checked bit for bit against ``golden.quantize``.

The model of the standard tests (:mod:`tb.standard_tests`): stimulus from
``golden.stimulus`` (random blocks, directed corner blocks, exhaustive bf16/fp16 sweeps), the
expectation from golden block by block in each block's rounding and scale mode, and decoded
mismatch reports.  Runtime-mode builds get a random mode combination per block; with
``MX_FULL`` every bulk set runs once per mode combination of the build.  ``MX_BLOCKS`` is the
stream test's random blocks; the bulk random set is 20 times that.
"""

from __future__ import annotations

import numpy as np

import golden
from golden.formats import ROUNDING_IDS, SCALE_MODE_IDS
from golden.stimulus import anchored_blocks, exponent_anchors, fp32_significand_sweep, sweep_anchors
from golden.stimulus import quantizer_directed_blocks as directed_blocks
from golden.stimulus import quantizer_random_blocks as random_blocks
from golden.stimulus import quantizer_sweep_blocks as sweep_blocks

from . import standard_tests
from .batch import Batch
from .bulk import DEPTH, BulkJob
from .coverage.quantizer import classify_quantizer, quantizer_model
from .describe import describe_code, describe_float, describe_lanes, describe_scale

#: Mode names by runtime id (the ids are golden.formats' ROUNDING_IDS / SCALE_MODE_IDS).
ROUNDINGS = tuple(sorted(ROUNDING_IDS, key=ROUNDING_IDS.get))
SCALE_MODES = tuple(sorted(SCALE_MODE_IDS, key=SCALE_MODE_IDS.get))
#: The random values of the exhaustive sweeps' stochastic passes, one pass each: 0 (never
#: rounds up), all ones (rounds up whenever f_R > 0), and each element's threshold
#: neighbours 2^R - f_R - 1 (the largest value that still rounds down) and 2^R - f_R (the
#: smallest that rounds up).
STOCHASTIC_PATTERNS = ("zero", "all ones", "below threshold", "at threshold")


class QuantizerBatch(Batch):
    """Blocks of input values with their modes and random values, and golden's output.

    Parameters
    ----------
    model : QuantizerModel
    raw : ndarray, shape (n, k)
        Input bit patterns (``model.input_format``).
    rounding_ids, scale_mode_ids : ndarray, shape (n,)
        Each block's rounding and scale mode (runtime ids).
    random : ndarray, shape (n, k)
        The random value of every element (used by stochastic rounding).
    """

    def __init__(self, model: QuantizerModel, raw, rounding_ids, scale_mode_ids, random):
        self.model, self.raw = model, raw
        self.rounding_ids, self.scale_mode_ids, self.random = rounding_ids, scale_mode_ids, random
        n = raw.shape[0]
        fields = {"data": raw, "random": random,
                  **model.runtime_fields(rounding_ids, scale_mode_ids)}
        stim = model.in_layout.pack(n, **{f: v for f, v in fields.items()
                                          if f in model.in_layout.fields})
        self.scales, self.codes = model.expected(raw, rounding_ids, scale_mode_ids, random)
        super().__init__(stim, model.out_layout.pack(n, scale=self.scales, codes=self.codes))

    def coverage_counts(self):
        m = self.model
        return classify_quantizer(self.raw, self.rounding_ids, self.scale_mode_ids, self.random,
                                  self.scales, self.codes, fmt=m.fmt,
                                  input_format=m.input_format, random_bits=m.random_bits)

    def describe(self, row, got):
        m = self.model
        fields = m.out_layout.unpack(got[None, :])
        got_scale, got_codes = int(fields["scale"][0]), fields["codes"][0]
        rounding = ROUNDINGS[self.rounding_ids[row]]
        lines = [f"block {row} (rounding={rounding}, "
                 f"scale_mode={SCALE_MODES[self.scale_mode_ids[row]]}): scale expected "
                 f"{describe_scale(self.scales[row])} got {describe_scale(got_scale)}"]

        def lane_lines(lane):
            return (f"  lane {lane}: input {describe_float(self.raw[row, lane], m.input_format)}"
                    + (f", random {int(self.random[row, lane])}" if rounding == "stochastic"
                       else "")
                    + f"\n    expected "
                      f"{describe_code(self.codes[row, lane], m.fmt, int(self.scales[row]))}"
                    + f"\n    actual   {describe_code(got_codes[lane], m.fmt, got_scale)}")

        lines += describe_lanes(np.flatnonzero(self.codes[row] != got_codes), lane_lines)
        return "\n".join(lines)


class QuantizerModel(standard_tests.UnitModel):
    """Unit parameters (from the sidecar), stimulus and golden expectations."""

    def __init__(self, config):
        super().__init__(config)
        p = self.parameters
        self.fmt = self.formats["format"]
        self.input_format = golden.float_format(p["input"])
        self.rounding = p["rounding"]
        self.scale_mode = p["scale_mode"]
        self.random_bits = p["random_bits"]
        # golden ids of the modes the build supports: the fixed one, or those the runtime
        # field's encoding lists; and the RTL's code for each golden id (the encoding's).
        self.rounding_modes = self._modes("rounding", self.rounding, ROUNDING_IDS)
        self.scale_modes = self._modes("scale_mode", self.scale_mode, SCALE_MODE_IDS)
        self.rtl_codes = {field: np.array([encoding.get(name, -1) for name in names])
                          for field, names in (("rounding", ROUNDINGS),
                                               ("scale_mode", SCALE_MODES))
                          if (encoding := self.in_layout.fields.get(field, {})
                              .get("encoding")) is not None}

    def interface(self):
        """docs/quantizer.md, Stream interface: ``data`` (k input values), ``random`` (k x R,
        rounding ``stochastic`` or ``runtime``), ``rounding`` (2 bits) and ``scale_mode`` (1
        bit) where runtime; out ``scale`` (8) and ``codes`` (k element codes)."""
        k = self.k
        fields = [("data", k * self.input_format.bits)]
        if self.rounding in ("stochastic", "runtime"):
            fields.append(("random", k * self.random_bits))
        if self.rounding == "runtime":
            fields.append(("rounding", 2))
        if self.scale_mode == "runtime":
            fields.append(("scale_mode", 1))
        return fields, [("scale", 8), ("codes", k * self.fmt.bits)]

    def _modes(self, field: str, setting: str, ids: dict[str, int]) -> list[int]:
        if setting != "runtime":
            return [ids[setting]]
        if field not in self.in_layout.fields:
            raise ValueError(f"{field} is 'runtime' but the input payload has no {field} field")
        encoding = self.in_layout.fields[field].get("encoding", {})
        unknown = sorted(set(encoding) - set(ids))
        if unknown or not encoding:
            raise ValueError(f"the {field} field's encoding must name modes of "
                             f"{', '.join(ids)}; got {sorted(encoding)}")
        return [ids[name] for name in sorted(encoding, key=ids.get)]

    def runtime_fields(self, rounding_ids, scale_mode_ids) -> dict:
        """The runtime payload fields of blocks in these modes (golden ids), in the RTL's
        encoding."""
        ids = {"rounding": rounding_ids, "scale_mode": scale_mode_ids}
        return {field: codes[np.asarray(ids[field])] for field, codes in self.rtl_codes.items()}

    def coverage_model(self):
        modes = self.all_modes()
        return quantizer_model(self.fmt, self.input_format,
                               sorted({ROUNDINGS[r] for r, _ in modes}, key=ROUNDING_IDS.get),
                               sorted({SCALE_MODES[s] for _, s in modes},
                                      key=SCALE_MODE_IDS.get))

    # -- modes and batches -----------------------------------------------------------------
    def random_modes(self, rng, n):
        """Per-block rounding and scale-mode ids (random if runtime, else the fixed one)."""
        r = (rng.choice(self.rounding_modes, n) if self.rounding == "runtime"
             else np.full(n, self.rounding_modes[0]))
        s = (rng.choice(self.scale_modes, n) if self.scale_mode == "runtime"
             else np.full(n, self.scale_modes[0]))
        return r, s

    def all_modes(self):
        """Every (rounding id, scale mode id) combination the build supports."""
        return [(r, s) for r in self.rounding_modes for s in self.scale_modes]

    def batch(self, rng, raw, rounding_ids=None, scale_mode_ids=None) -> QuantizerBatch:
        """A batch of ``raw`` blocks in the given modes (default: :meth:`random_modes`), with
        random values of ``random_bits`` bits per element."""
        if rounding_ids is None:
            rounding_ids, scale_mode_ids = self.random_modes(rng, raw.shape[0])
        random = rng.integers(0, 1 << max(self.random_bits, 1), raw.shape)
        return QuantizerBatch(self, raw, rounding_ids, scale_mode_ids, random)

    def expected(self, raw, rounding_ids, scale_mode_ids, random):
        """(scales (n,), codes (n, k)) from golden, block by block in its own modes."""
        n = raw.shape[0]
        scales = np.empty(n, np.uint8)
        codes = np.empty((n, self.k), np.uint8)
        values = raw.view(self.input_format.dtype)
        for r in np.unique(rounding_ids):
            for s in np.unique(scale_mode_ids):
                sel = (rounding_ids == r) & (scale_mode_ids == s)
                if not sel.any():
                    continue
                stochastic = ROUNDINGS[r] == "stochastic"
                mx = golden.quantize(values[sel], self.fmt, block_size=self.k,
                                     scale_mode=SCALE_MODES[s], rounding=ROUNDINGS[r],
                                     random=random[sel] if stochastic else None,
                                     random_bits=self.random_bits if stochastic else 8)
                scales[sel] = mx.scales[:, 0]
                codes[sel] = mx.codes
        return scales, codes

    # -- the standard tests' sets ----------------------------------------------------------
    def random_batch(self, rng, n):
        return self.batch(rng, random_blocks(rng, n, self.k, self.input_format))

    def stream_phases(self, rng):
        """Directed and random blocks; the first half under random patterns, the second
        under bursty ones."""
        raw = np.concatenate([directed_blocks(self.k, self.input_format, self.fmt, rng),
                              random_blocks(rng, self.config.blocks, self.k, self.input_format)])
        half = raw.shape[0] // 2
        return [("random", self.batch(rng, raw[:half])), ("bursty", self.batch(rng, raw[half:]))]

    def bulk_jobs(self, rng):
        """Random and directed blocks (the directed ones in every mode combination of the build,
        so each corner case meets each mode) with random gaps and backpressure; the exhaustive
        sweeps with the stream kept full, which is the throughput case."""
        def job(what, make_raw, patterns, every_mode=False):
            def make():
                raw = make_raw()
                if not (self.config.full or every_mode):  # a random mode combination per block
                    return self.batch(rng, raw)
                # SIM_FULL, and the directed set: every mode combination over the whole set
                modes = self.all_modes()
                nb = raw.shape[0]
                rounding_ids = np.concatenate([np.full(nb, r) for r, _ in modes])
                scale_mode_ids = np.concatenate([np.full(nb, s) for _, s in modes])
                return self.batch(rng, np.tile(raw, (len(modes), 1)), rounding_ids,
                                  scale_mode_ids)
            idle, stall = (int(x) for x in rng.integers(0, 100, 2)) if patterns else (0, 0)
            return BulkJob(what, make, idle, stall, drain=self.drain)

        k, input_format = self.k, self.input_format
        jobs = [job("random", lambda: random_blocks(rng, 20 * self.config.blocks, k,
                                                    input_format), True),
                job("directed", lambda: directed_blocks(k, input_format, self.fmt, rng), True,
                    every_mode=True)]
        # The exhaustive domain of a bf16/fp16 build contains the five-anchor sweeps.
        if self.config.sweeps and not (self.config.exhaustive
                                       and input_format is not golden.FP32):
            sources = ([golden.BF16, golden.FP16] if input_format is golden.FP32
                       else [input_format])
            jobs += [job(f"all {src.name}",
                         lambda src=src: sweep_blocks(k, input_format, src,
                                                      sweep_anchors(input_format)), False)
                     for src in sources]
        if self.config.exhaustive:
            jobs += self.exhaustive_jobs()
        return jobs

    # -- the exhaustive element domain (SIM_FULL) -------------------------------------------
    def exhaustive_blocks(self) -> np.ndarray:
        """The blocks of the exhaustive element domain (docs/verification.md, "Exhaustive
        element domains"): a bf16 or fp16 build gets every value of its input format at every
        shared exponent it can occur at (:func:`golden.stimulus.exponent_anchors`); an fp32
        build the significand set of :func:`golden.stimulus.fp32_significand_sweep`."""
        ff = self.input_format
        if ff is golden.FP32:
            values, anchor = fp32_significand_sweep(self.fmt, self.random_bits or 8)
            return anchored_blocks(values, self.k, ff, [anchor])
        return sweep_blocks(self.k, ff, ff, exponent_anchors(ff))

    def exhaustive_passes(self) -> list[tuple[int, int, str | None]]:
        """``(rounding id, scale mode id, random pattern)`` of every pass over the domain:
        each mode combination of the build, stochastic once per :data:`STOCHASTIC_PATTERNS`."""
        return [(r, s, pattern) for r, s in self.all_modes()
                for pattern in (STOCHASTIC_PATTERNS if ROUNDINGS[r] == "stochastic"
                                else (None,))]

    def stochastic_random(self, raw, rounding_ids, scale_mode_ids, pattern: str, below=None):
        """Per element random values of a stochastic pass in ``pattern``; ``below`` is
        :meth:`largest_random_rounding_down` of the same blocks if already known."""
        ones = (1 << self.random_bits) - 1
        if pattern == "zero":
            return np.zeros(raw.shape, np.int64)
        if pattern == "all ones":
            return np.full(raw.shape, ones, np.int64)
        below = (self.largest_random_rounding_down(raw, rounding_ids, scale_mode_ids)
                 if below is None else below)
        if pattern == "below threshold":
            return below
        if pattern == "at threshold":
            return np.minimum(below + 1, ones)
        raise ValueError(f"unknown random pattern {pattern!r}; expected one of "
                         f"{', '.join(STOCHASTIC_PATTERNS)}")

    def largest_random_rounding_down(self, raw, rounding_ids, scale_mode_ids) -> np.ndarray:
        """Per element, the largest random value with which golden's stochastic rounding
        does not round it up: ``2^R - f_R - 1`` (``2^R - 1`` when no value does).

        Found by bisection on golden itself (rounding up is monotone in the random value):
        R + 1 golden passes, and no copy of the rounder.  The coverage model
        (:mod:`tb.coverage.quantizer`) states ``f_R`` once more, from the exact fraction, to
        classify lanes; its ``random.below_threshold``/``at_threshold`` bins being hit by
        these passes is the cross-check of the two.
        """
        down = self.expected(raw, rounding_ids, scale_mode_ids, np.zeros(raw.shape, np.int64))[1]
        largest = np.zeros(raw.shape, np.int64)
        for bit in reversed(range(self.random_bits)):
            trial = largest | (1 << bit)
            codes = self.expected(raw, rounding_ids, scale_mode_ids, trial)[1]
            largest = np.where(codes == down, trial, largest)
        return largest

    def exhaustive_jobs(self) -> list[BulkJob]:
        """The exhaustive domain once per pass, with the stream kept full: one bulk job per
        wrapper load and pass."""
        blocks = self.exhaustive_blocks()
        chunks = [slice(lo, min(len(blocks), lo + DEPTH)) for lo in range(0, len(blocks), DEPTH)]

        last_bisection = {}  # (r, s, chunk start) -> its threshold bisection, the last one only

        def make(r, s, pattern, sl):
            raw = blocks[sl]
            n = raw.shape[0]
            rounding_ids, scale_mode_ids = np.full(n, r), np.full(n, s)
            below = None
            if pattern in ("below threshold", "at threshold"):
                key = (r, s, sl.start)
                if key not in last_bisection:
                    last_bisection.clear()
                    last_bisection[key] = self.largest_random_rounding_down(
                        raw, rounding_ids, scale_mode_ids)
                below = last_bisection[key]
            random = (self.stochastic_random(raw, rounding_ids, scale_mode_ids, pattern, below)
                      if pattern else np.zeros(raw.shape, np.int64))
            return QuantizerBatch(self, raw, rounding_ids, scale_mode_ids, random)

        # Chunk-major within a mode pair: a chunk's stochastic patterns are consecutive jobs,
        # so the two threshold patterns share one bisection (R + 1 golden passes).
        patterns = {}  # (rounding id, scale mode id) -> its passes' random patterns
        for r, s, pattern in self.exhaustive_passes():
            patterns.setdefault((r, s), []).append(pattern)
        return [BulkJob(f"exhaustive {ROUNDINGS[r]}/{SCALE_MODES[s]}"
                        + (f" r={pattern}" if pattern else "") + f" [{sl.start}:{sl.stop}]",
                        lambda r=r, s=s, p=pattern, sl=sl: make(r, s, p, sl), drain=self.drain)
                for (r, s), mode_patterns in patterns.items() for sl in chunks
                for pattern in mode_patterns]


# The cocotb tests of this testbench: the standard tests on this unit's model.
standard_tests.register(globals(), QuantizerModel)
