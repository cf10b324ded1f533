"""The units' testbench models without a simulator: batches pack and expect consistently,
the one check loop counts and decodes a wrong output, and every set the standard tests use
can be built (a broken model would otherwise only show up as a confusing simulation failure,
or, for the mismatch reports, only when the RTL is already wrong)."""

from __future__ import annotations

import argparse
import copy
import logging

import numpy as np
import pytest

import golden
from hw.cli import units
from hw.sidecar import sidecar
from tb.dequantizer import DequantizerModel
from tb.dot import DotModel
from tb.quantizer import ROUNDINGS, QuantizerModel
from tb.standard_tests import PATTERNS, UnitConfig

UNITS = {
    "quantizer": (QuantizerModel, ["--format", "fp4_e2m1", "--input", "bf16", "--block-size",
                                   "2", "--rounding", "runtime", "--scale-mode", "runtime",
                                   "--stages", "1"]),
    "dequantizer": (DequantizerModel, ["--format", "fp6_e3m2", "--output", "fp16",
                                       "--block-size", "2", "--stages", "1"]),
    "dot": (DotModel, ["--format-a", "fp4_e2m1", "--format-b", "fp6_e2m3", "--block-size", "2",
                       "--stages", "2"]),
    "dot-general": (DotModel, ["--format-a", "fp4_e2m1", "--format-b", "fp4_e2m1",
                               "--block-size", "2", "--stages", "2", "--contexts", "2"]),
}


def _sidecar(unit: str) -> dict:
    spec = units()[unit]
    p = argparse.ArgumentParser()
    spec.add_arguments(p)
    return sidecar(spec.build(p.parse_args(UNITS[unit][1])), unit)


def _model(unit: str, seed: int, meta: dict | None = None):
    """The unit's model as the standard tests start it: built, then its interface checked."""
    model = UNITS[unit][0](UnitConfig(sidecar=meta or _sidecar(unit), seed=seed, label=unit,
                                      blocks=40, full=False, sweeps=True))
    model.check_interface()
    return model


@pytest.mark.parametrize("unit", list(UNITS))
@pytest.mark.parametrize("role", ["i.payload", "o.payload"])
def test_a_payload_field_wider_than_documented_fails_the_model(unit, role, seed):
    # the generator writes the sidecar with the Verilog: a field widened in both (mutation
    # campaign 12) must not pass by the layouts the testbench reads from the sidecar
    meta = _sidecar(unit)
    port = next(p for p in meta["ports"] if p.get("role") == role)
    field = port["fields"][-1]
    grow = field["array"]["length"] if "array" in field else 1
    if "array" in field:
        field["array"]["elem_width"] += 1
    field["width"] += grow
    port["width"] += grow
    with pytest.raises(AssertionError, match=f"{role} fields .* differ from the documented "
                                             "interface"):
        _model(unit, seed, meta)


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.mark.parametrize("unit", list(UNITS))
def test_a_wrong_output_is_counted_and_decoded(unit, seed):
    model = _model(unit, seed)
    batch = model.random_batch(np.random.default_rng(seed), 30)
    log = logging.getLogger(f"test_tb_models.{unit}")
    log.addHandler(collect := _Collect())
    try:
        got = batch.exp.copy()
        assert batch.check(got, log) == 0
        row = batch.exp.shape[0] // 2
        got[row, 0] ^= 0x01
        assert batch.check(got, log) == 1
    finally:
        log.removeHandler(collect)
    assert len(collect.messages) == 1
    assert collect.messages[0].startswith("MISMATCH ")
    assert f"{'output' if unit.startswith('dot') else 'block'} {row}" in collect.messages[0]
    # the stream path decodes the same row from the sink's integer
    ints = model.out_layout.to_ints(got[row:row + 1])
    assert batch.describe(row, model.out_layout.from_ints(ints)[0]) == \
        collect.messages[0].removeprefix("MISMATCH ")


@pytest.mark.parametrize("unit", list(UNITS))
def test_the_standard_tests_sets_build(unit, seed):
    model = _model(unit, seed)
    rng = np.random.default_rng(seed)
    phases = model.stream_phases(rng)
    assert phases and all(pattern in PATTERNS for pattern, _ in phases)
    for _, batch in phases:
        assert batch.stim.shape == (batch.stim.shape[0], model.in_layout.nbytes)
        assert batch.exp.shape == (batch.exp.shape[0], model.out_layout.nbytes)
        assert len(batch) == batch.stim.shape[0]
    jobs = model.bulk_jobs(rng)
    assert jobs
    first = jobs[0].make()
    assert first.stim.shape[0] == len(first) > 0


def test_describe_lanes_reports_the_first_lanes_and_counts_the_rest():
    from tb.describe import MAX_LANES, describe_lanes

    bad = np.arange(MAX_LANES + 3)
    lines = describe_lanes(bad, lambda lane: f"lane {lane}")
    assert lines == [f"lane {j}" for j in range(MAX_LANES)] + ["  ... 3 more lanes"]
    assert describe_lanes(bad[:2], lambda lane: f"lane {lane}") == ["lane 0", "lane 1"]


def _runtime_field(meta, name):
    port = next(p for p in meta["ports"] if p["role"] == "i.payload")
    return next(f for f in port["fields"] if f["name"] == name)


def test_quantizer_drives_runtime_fields_in_the_sidecar_encoding(seed):
    """A user's RTL may encode the modes its own way (and leave some out): the model drives
    the sidecar's codes, only for the modes listed, and golden still sees the mode."""
    model_class, argv = UNITS["quantizer"]
    spec = units()["quantizer"]
    p = argparse.ArgumentParser()
    spec.add_arguments(p)
    meta = sidecar(spec.build(p.parse_args(argv)), "quantizer")
    _runtime_field(meta, "rounding")["encoding"] = {"rtz": 0, "rne": 3, "rna": 1}
    _runtime_field(meta, "scale_mode")["encoding"] = {"rceil": 0, "floor": 1}
    model = model_class(UnitConfig(sidecar=meta, seed=seed, label="quantizer", blocks=40,
                                   full=False, sweeps=True))
    batch = model.random_batch(np.random.default_rng(seed), 200)
    fields = model.in_layout.unpack(batch.stim)
    names = [ROUNDINGS[r] for r in batch.rounding_ids]
    assert set(names) == {"rtz", "rne", "rna"}  # 200 random blocks: all three, no stochastic
    assert list(fields["rounding"]) == [{"rtz": 0, "rne": 3, "rna": 1}[n] for n in names]
    assert list(fields["scale_mode"]) == [1 - int(s) for s in batch.scale_mode_ids]


def _quantizer(argv, seed, **config):
    spec = units()["quantizer"]
    meta = sidecar(spec.build_from(argv), "quantizer")
    return QuantizerModel(UnitConfig(sidecar=meta, seed=seed, label="quantizer", blocks=40,
                                     full=True, sweeps=True, **config))


RUNTIME = ["--rounding", "runtime", "--scale-mode", "runtime", "--stages", "1"]


def test_exhaustive_stochastic_thresholds_agree_with_the_fraction_oracle(seed):
    """The random values of the 'below/at threshold' passes (found by bisection on golden)
    are checked against the exact-arithmetic oracle: with ``below`` an element does not
    round up, with ``below + 1`` it does (when any random value rounds it up at all)."""
    from oracle import decode_input, quantize_block

    model = _quantizer(["--format", "fp6_e2m3", "--input", "fp16", "--block-size", "32",
                        *RUNTIME], seed, exhaustive=True)
    rng = np.random.default_rng(seed)
    blocks = model.exhaustive_blocks()
    rows = blocks[rng.choice(len(blocks), 40, replace=False)]
    stochastic = ROUNDINGS.index("stochastic")
    ones = (1 << model.random_bits) - 1
    for scale_mode in model.scale_modes:
        r_ids, s_ids = np.full(len(rows), stochastic), np.full(len(rows), scale_mode)
        below = model.stochastic_random(rows, r_ids, s_ids, "below threshold")
        at = model.stochastic_random(rows, r_ids, s_ids, "at threshold")
        assert ((at == below + 1) | (at == ones)).all()
        mode = ("floor", "rceil")[scale_mode]
        for raw, b in zip(rows, below, strict=True):
            values = [(bool(neg), mag) for neg, mag in decode_input(raw.view(np.float16))]
            down = quantize_block("fp6_e2m3", values, mode, "stochastic", [0] * 32)
            assert quantize_block("fp6_e2m3", values, mode, "stochastic", b) == down
            for lane in np.flatnonzero(b < ones):
                rand = [0] * 32
                rand[lane] = int(b[lane]) + 1
                up = quantize_block("fp6_e2m3", values, mode, "stochastic", rand)[1][lane]
                assert up != down[1][lane], f"lane {lane}: random {rand[lane]} did not round up"


def test_exhaustive_domain_reaches_every_value_at_every_exponent(seed):
    """fp16 build: each of the 65,536 patterns once per anchor (41 anchors: none, then
    2^-24 .. 2^15); 14 passes (3 deterministic modes + 4 random patterns, x 2 scale modes)."""
    from golden.stimulus import exponent_anchors

    model = _quantizer(["--format", "fp4_e2m1", "--input", "fp16", "--block-size", "32",
                        *RUNTIME], seed, exhaustive=True)
    blocks = model.exhaustive_blocks()
    anchors = exponent_anchors(golden.FP16)
    assert len(anchors) == 41 and anchors[1] == 2.0 ** -24 and anchors[-1] == 2.0 ** 15
    lanes = blocks[:, 1:][blocks[:, 0] == np.float16(1.0).view(np.uint16)]
    values, counts = np.unique(lanes, return_counts=True)
    assert values.size == 1 << 16  # every pattern, NaN payloads included
    assert len(model.exhaustive_passes()) == 14
    jobs = model.exhaustive_jobs()
    assert len(jobs) == 14 * -(-len(blocks) // 65536)
    names = [job.what for job in model.bulk_jobs(np.random.default_rng(seed))]
    assert not any(n.startswith("all fp16") for n in names)  # contained in the domain


def test_fp32_significand_sweep_is_the_derived_set():
    from golden.stimulus import fp32_significand_sweep

    raw, anchor = fp32_significand_sweep("fp8_e4m3", 8)
    f = golden.element_format("fp8_e4m3")
    exponents = np.unique(((raw >> 23) & 0xFF).astype(int) - 127)
    binades = range(1 - f.bias - f.mbits - 8 - 1, f.emax + 1)  # 2^-18 .. 2^8
    assert list(exponents) == list(binades)
    fractions = raw & 0x7FFFFF
    assert np.unique(fractions >> 12).size == 1 << 11  # every first 3 + 8 bits
    assert set(np.unique(fractions & 0xFFF)) == {0, 1}  # sticky tail: clear or set
    assert raw.size == 2 * len(binades) * (1 << 12) and anchor == 2.0 ** 8
    with pytest.raises(ValueError, match="random_bits"):
        fp32_significand_sweep("int8", 17)


def test_dot_scale_pair_sweep_covers_every_scale_pair(seed):

    spec = units()["dot"]
    meta = sidecar(spec.build_from(["--format-a", "int8", "--format-b", "fp4_e2m1",
                                    "--block-size", "4", "--stages", "1"]), "dot")
    model = DotModel(UnitConfig(sidecar=meta, seed=seed, label="dot", blocks=40, full=True,
                                sweeps=True, exhaustive=True))
    # int8: 127 (largest), 1 (smallest positive), -64 (-1.0); fp4_e2m1: 6.0, 0.5, -1.0
    assert list(golden.decode(model.scale_pair_codes("int8"), "int8")) == \
        [127 / 64, 1 / 64, -1.0]
    assert list(golden.decode(model.scale_pair_codes("fp4_e2m1"), "fp4_e2m1")) == \
        [6.0, 0.5, -1.0]
    jobs = model.scale_pair_jobs()
    batches = [job.make() for job in jobs]
    sa = np.concatenate([b.blocks_in[1] for b in batches]).astype(int)
    sb = np.concatenate([b.blocks_in[3] for b in batches]).astype(int)
    pairs, counts = np.unique(sa * 256 + sb, return_counts=True)
    assert pairs.size == 256 * 256 and (counts == 9).all()  # 3 x 3 code pairs per scale pair
    assert any(job.what == "every scale pair" for job in model.bulk_jobs(np.random.default_rng(1)))


def test_exhaustive_threshold_passes_share_one_bisection_per_chunk(monkeypatch):
    """The "below" and "at threshold" jobs of a chunk are consecutive and bisect once; their
    random values are the threshold neighbours (at = below + 1)."""
    model = _quantizer(["--format", "fp4_e2m1", "--input", "fp16", "--block-size", "32",
                        *RUNTIME], 5, exhaustive=True)
    calls = []
    bisect = model.largest_random_rounding_down
    monkeypatch.setattr(model, "largest_random_rounding_down",
                        lambda *a: calls.append(1) or bisect(*a))
    jobs = [j for j in model.exhaustive_jobs() if "threshold" in j.what][:4]
    assert [j.what.split(" r=")[1].split(" [")[0] for j in jobs] == [
        "below threshold", "at threshold"] * 2
    below, at = jobs[0].make(), jobs[1].make()
    assert len(calls) == 1
    ones = (1 << model.random_bits) - 1
    assert np.array_equal(at.random, np.minimum(below.random + 1, ones))
    jobs[2].make()
    assert len(calls) == 2


def test_field_order_is_checked_for_generated_units_only(seed):
    # the project's units document their offsets; another generator's design (the
    # verify-your-rtl example: codes below the scale) may order its fields as it likes
    meta = _sidecar("quantizer")
    port = next(p for p in meta["ports"] if p.get("role") == "o.payload")
    scale, codes = (next(f for f in port["fields"] if f["name"] == n) for n in ("scale", "codes"))
    codes["lsb"], scale["lsb"] = 0, codes["width"]
    with pytest.raises(AssertionError, match="o.payload fields .* differ from the documented"):
        _model("quantizer", seed, copy.deepcopy(meta))
    meta["generator"] = {"name": "hand-written", "version": "1.0"}
    model = _model("quantizer", seed, meta)
    assert model.out_layout.fields["scale"]["lsb"] == codes["width"]
