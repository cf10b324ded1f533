"""Quantizer coverage: the bins of ``docs/numerics.md`` section 3, per rounding and scale mode,
classified from a batch's input bits, modes and random values and golden's scales and codes.

Cover points, each per ``{rounding}.{scale_mode}`` of the build (configuration class: element
format x input format):

``scale``    the block's scale outcome (step 1-3): ``ordinary``, ``clamped_0`` (e < -127),
             ``clamped_254`` (e > 127), ``nan_block`` (s = 255), ``zero_block``;
``rceil``    (rceil only) the "above max normal" flag of a finite non-zero block: ``set`` when
             amax's significand exceeds max normal's (e = t - emax + 1), ``clear``;
``element``  per lane, from ``q = V * 2^-e`` and golden's code (steps 4-5): ``exact``,
             ``rounded_down``, ``rounded_up``, ``tie_even_down``, ``tie_even_up`` (rne),
             ``tie_away`` (rna), ``saturated`` (|q| > max normal), ``subnormal`` (a subnormal
             code), ``underflow_zero`` (q != 0 gives a zero code), ``neg_zero_kept`` (an input
             -0 gives the -0 code), ``lane_nan_inf``;
``input``    per lane, the input's class: ``normal``, ``subnormal``, ``pos_zero``,
             ``neg_zero``, ``inf``, ``nan``;
``random``   (stochastic only) per inexact lane with ``f_R > 0``: ``at_threshold``
             (r = 2^R - f_R: the smallest r that rounds up), ``below_threshold`` (one less),
             ``zero`` (r = 0), ``all_ones`` (r = 2^R - 1).

A lane can hit several element bins (a subnormal code that was rounded up); the rounding bins
partition the non-zero, non-saturated lanes of finite blocks.
"""

from __future__ import annotations

import numpy as np

import golden
from golden.formats import (
    BF16,
    FP16,
    FP32,
    ROUNDING_IDS,
    SCALE_BIAS,
    SCALE_EMAX,
    SCALE_EMIN,
    SCALE_MODE_IDS,
    SCALE_NAN,
    ElementFormat,
    FloatFormat,
)

from .model import CoverageModel, Point, point

__all__ = ["SCALE_BINS", "RCEIL_BINS", "ELEMENT_BINS", "INPUT_BINS", "RANDOM_BINS",
           "quantizer_model", "classify_quantizer"]

SCALE_BINS = ("ordinary", "clamped_0", "clamped_254", "nan_block", "zero_block")
RCEIL_BINS = ("set", "clear")
ELEMENT_BINS = ("exact", "rounded_down", "rounded_up", "tie_even_down", "tie_even_up",
                "tie_away", "saturated", "subnormal", "underflow_zero", "neg_zero_kept",
                "lane_nan_inf")
INPUT_BINS = ("normal", "subnormal", "pos_zero", "neg_zero", "inf", "nan")
RANDOM_BINS = ("at_threshold", "below_threshold", "zero", "all_ones")

_ROUNDINGS = tuple(sorted(ROUNDING_IDS, key=ROUNDING_IDS.get))
_SCALE_MODES = tuple(sorted(SCALE_MODE_IDS, key=SCALE_MODE_IDS.get))


def _exclusions(fmt: ElementFormat, ff: FloatFormat, rounding: str, scale_mode: str) -> dict:
    """Reason each bin cannot occur in this (format, input, rounding, scale mode), or None."""
    large_clamp = fmt.is_int and scale_mode == "rceil" and ff in (FP32, BF16)
    return {
        "clamped_0": ("fp16 inputs have |V| >= 2^-24, so e >= -24 - emax > -127"
                      if ff is FP16 else None),
        "clamped_254": None if large_clamp else (
            "|V| < 2^128 gives t <= 127, so e <= 127 - emax (+1 in rceil) <= 127: only intN "
            "(emax 0) in rceil mode with fp32/bf16 input reaches e = 128"
            if ff is not FP16 else "fp16 inputs have |V| < 2^16, so e < 16"),
        "rounded_up": "rtz never rounds up" if rounding == "rtz" else None,
        "tie_even_down": None if rounding == "rne" else "ties to even are rne's",
        "tie_even_up": None if rounding == "rne" else "ties to even are rne's",
        "tie_away": None if rounding == "rna" else "ties away from zero are rna's",
        "saturated": None if scale_mode == "floor" or large_clamp else (
            "rceil chooses e with amax <= max_normal * 2^e; only the clamp at e = 127 (intN, "
            "fp32/bf16 input) leaves an element above max normal"),
        "neg_zero_kept": f"{fmt.name} has no -0 (two's complement)" if fmt.is_int else None,
    }


def quantizer_model(fmt, input_format, roundings, scale_modes) -> CoverageModel:
    """The quantizer's cover points for element format ``fmt``, input format
    ``input_format`` and the rounding and scale modes the build supports (names)."""
    fmt, ff = golden.element_format(fmt), golden.float_format(input_format)
    if ff not in (FP32, BF16, FP16):
        raise ValueError(f"the quantizer takes fp32, bf16 or fp16 input, not {ff.name}")
    points: list[Point] = []
    for r in roundings:
        for s in scale_modes:
            if r not in ROUNDING_IDS or s not in SCALE_MODE_IDS:
                raise ValueError(f"unknown mode pair {r!r}, {s!r}")
            why = _exclusions(fmt, ff, r, s)
            points += [point(f"{r}.{s}.scale", SCALE_BINS, why),
                       point(f"{r}.{s}.element", ELEMENT_BINS, why),
                       point(f"{r}.{s}.input", INPUT_BINS, why)]
            if s == "rceil":
                points.append(point(f"{r}.{s}.rceil", RCEIL_BINS, why))
            if r == "stochastic":
                points.append(point(f"{r}.{s}.random", RANDOM_BINS, why))
    return CoverageModel("quantizer", f"{fmt.name}-{ff.name}", tuple(points))


def classify_quantizer(raw, rounding_ids, scale_mode_ids, random, scales, codes, *, fmt,
                       input_format, random_bits: int) -> dict[str, dict[str, int]]:
    """Bin hit counts of a batch: ``{"{rounding}.{scale_mode}.{point}": {bin: count}}``.

    Parameters
    ----------
    raw : ndarray (n, k)
        Input bit patterns of ``input_format``.
    rounding_ids, scale_mode_ids : ndarray (n,)
        Each block's modes (``golden.formats`` runtime ids).
    random : ndarray (n, k)
        The random values (read for stochastic blocks).
    scales, codes : ndarray (n,), (n, k)
        golden's output for the batch.
    fmt, input_format : element format, float format (names or objects)
    random_bits : int
        R of stochastic rounding.
    """
    fmt, ff = golden.element_format(fmt), golden.float_format(input_format)
    raw = np.asarray(raw).astype(np.uint64)
    if raw.ndim != 2:
        raise ValueError(f"raw must be (blocks, k), got shape {raw.shape}")
    n, k = raw.shape
    scales = np.asarray(scales).astype(np.int64).reshape(n)
    codes = np.asarray(codes).astype(np.int64).reshape(n, k)
    random = np.asarray(random).astype(np.int64).reshape(n, k)
    mode = (np.asarray(rounding_ids).astype(np.int64).reshape(n) * len(_SCALE_MODES)
            + np.asarray(scale_mode_ids).astype(np.int64).reshape(n))

    # -- inputs, exactly (every fp32/bf16/fp16 value is a float64) --------------------------
    with np.errstate(invalid="ignore"):  # NaN patterns convert to NaN
        values = raw.astype(ff.uint).view(ff.dtype).astype(np.float64)
    sign = (raw >> np.uint64(ff.bits - 1)).astype(bool)
    exp_field = (raw >> np.uint64(ff.mbits)) & np.uint64((1 << ff.ebits) - 1)
    nan, inf = np.isnan(values), np.isinf(values)
    zero = values == 0
    lane_class = {"normal": ~nan & ~inf & ~zero & (exp_field != 0),
                  "subnormal": ~zero & (exp_field == 0), "pos_zero": zero & ~sign,
                  "neg_zero": zero & sign, "inf": inf, "nan": nan}

    # -- scale outcome ----------------------------------------------------------------------
    nan_block = (nan | inf).any(axis=1)
    amax = np.where(nan_block, 0.0, np.abs(np.where(nan | inf, 0.0, values)).max(axis=1))
    zero_block = ~nan_block & (amax == 0)
    live = ~nan_block & ~zero_block  # finite, non-zero blocks
    significand, t = np.frexp(np.where(live, amax, 1.0))  # amax = 2 * significand * 2^(t-1)
    t = t - 1
    above = live & (2 * significand > fmt.max_significand / (1 << fmt.mbits))
    rceil = (mode % len(_SCALE_MODES)) == SCALE_MODE_IDS["rceil"]
    e_unclamped = t - fmt.emax + (rceil & above)
    scale_bins = {"nan_block": nan_block, "zero_block": zero_block,
                  "clamped_0": live & (e_unclamped < SCALE_EMIN),
                  "clamped_254": live & (e_unclamped > SCALE_EMAX),
                  "ordinary": live & (e_unclamped >= SCALE_EMIN) & (e_unclamped <= SCALE_EMAX)}
    rceil_bins = {"set": live & rceil & above, "clear": live & rceil & ~above}

    # -- elements: q = V * 2^-e with golden's e; its unit in the last place; golden's code ---
    e = np.where(live & (scales != SCALE_NAN), scales - SCALE_BIAS, 0)
    q = np.abs(np.ldexp(np.where(nan | inf, 0.0, values), -e[:, None]))
    inb = live[:, None] & (q > 0)
    saturated = inb & (q > float(fmt.max_normal))
    _, tq = np.frexp(np.where(inb, q, 1.0))
    unit = np.maximum(tq - 1, fmt.emin) - fmt.mbits  # exponent of the grid's last place
    x = np.ldexp(q, -unit)
    trunc = np.floor(x)
    frac = x - trunc  # exact: x has at most 24 significant bits
    result_units = np.ldexp(np.abs(golden.decode(codes, fmt)), -unit)
    rounding_lanes = inb & ~saturated
    inexact = rounding_lanes & (frac > 0)
    up = inexact & (result_units == trunc + 1)
    down = inexact & (result_units == trunc)
    tie = inexact & (frac == 0.5)
    rounding_id = (mode // len(_SCALE_MODES))[:, None]
    rne = rounding_id == ROUNDING_IDS["rne"]
    rna = rounding_id == ROUNDING_IDS["rna"]
    tie_mode = tie & (rne | rna)
    if fmt.is_int:
        signed = np.where(codes >= 1 << (fmt.bits - 1), codes - (1 << fmt.bits), codes)
        magnitude = np.abs(signed)
    else:
        magnitude = codes & ((1 << (fmt.bits - 1)) - 1)
    zero_code = magnitude == 0
    element_bins = {
        "exact": rounding_lanes & (frac == 0), "rounded_down": down & ~tie_mode,
        "rounded_up": up & ~tie_mode, "tie_even_down": tie & rne & down,
        "tie_even_up": tie & rne & up, "tie_away": tie & rna & up, "saturated": saturated,
        "subnormal": live[:, None] & ~zero_code & ((magnitude >> fmt.mbits) == 0),
        "underflow_zero": inb & zero_code,
        "neg_zero_kept": (live[:, None] & zero & sign & (codes == 1 << (fmt.bits - 1))
                          if not fmt.is_int else np.zeros_like(inb)),
        "lane_nan_inf": nan | inf}

    # -- stochastic: the random value against the threshold 2^R - f_R ----------------------
    stochastic = rounding_id == ROUNDING_IDS["stochastic"]
    f_r = np.floor(np.ldexp(frac, random_bits)).astype(np.int64)
    moving = inexact & stochastic & (f_r > 0)
    threshold = (1 << random_bits) - f_r
    random_bins = {"at_threshold": moving & (random == threshold),
                   "below_threshold": moving & (random == threshold - 1),
                   "zero": moving & (random == 0),
                   "all_ones": moving & (random == (1 << random_bits) - 1)}

    # -- counts per mode pair ---------------------------------------------------------------
    modes = len(_ROUNDINGS) * len(_SCALE_MODES)
    out: dict[str, dict[str, int]] = {}
    for point_name, bins in (("scale", scale_bins), ("rceil", rceil_bins),
                             ("element", element_bins), ("input", lane_class),
                             ("random", random_bins)):
        for b, mask in bins.items():
            per_block = mask.sum(axis=1) if mask.ndim == 2 else mask
            counts = np.bincount(mode, weights=per_block, minlength=modes)
            for m in np.flatnonzero(counts):
                r, s = _ROUNDINGS[m // len(_SCALE_MODES)], _SCALE_MODES[m % len(_SCALE_MODES)]
                out.setdefault(f"{r}.{s}.{point_name}", {})[b] = int(counts[m])
    return out
