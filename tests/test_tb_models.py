"""The units' testbench models without a simulator: batches pack and expect consistently,
the one check loop counts and decodes a wrong output, and every set the standard tests use
can be built (a broken model would otherwise only show up as a confusing simulation failure,
or, for the mismatch reports, only when the RTL is already wrong)."""

from __future__ import annotations

import argparse
import logging

import numpy as np
import pytest

from hw.cli import units
from hw.sidecar import sidecar
from tb.dequantizer import DequantizerModel
from tb.dot import DotModel
from tb.quantizer import QuantizerModel
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


def _model(unit: str, seed: int):
    model_class, argv = UNITS[unit]
    spec = units()[unit]
    p = argparse.ArgumentParser()
    spec.add_arguments(p)
    meta = sidecar(spec.build(p.parse_args(argv)), unit)
    return model_class(UnitConfig(sidecar=meta, seed=seed, label=unit, blocks=40, full=False,
                                  sweeps=True))


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
