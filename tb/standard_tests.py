"""The standard cocotb tests every unit runs, and the model interface a unit plugs into them.

A unit's testbench module (``tb.quantizer``, ``tb.dequantizer``, ``tb.dot``) defines a
:class:`UnitModel` -- which batches to build, golden's expectation for them, how to decode a
mismatch -- and registers the tests it wants as a few cocotb one-liners::

    @cocotb.test()
    async def stream(dut):
        await standard_tests.stream(dut, QuantizerModel)

The tests run on the unit inside its bulk wrapper (:mod:`tb.bulk`), so one Verilator build
serves the cycle-level stream tests (``bulk = 0``) and the bulk sweeps (``bulk = 1``):

* :func:`stream` -- the model's stream phases (random and directed batches), each under an
  idle/backpressure pattern of :data:`PATTERNS`, through :class:`tb.stream.StreamTB`;
* :func:`reset_in_traffic` -- reset with data in flight; the unit must come back empty;
* :func:`bulk` -- the model's throughput check (by default: blocks back to back take exactly
  blocks + latency + 1 cycles), then its bulk jobs (:func:`tb.bulk.run_jobs`).

Each test writes one row of the closing simulation summary (:mod:`tb.report`) before it
fails on a mismatch.  Configuration comes from the environment (set by
``tests/test_sim_*.py`` and ``bench/sim_bench.py``):

``MX_SIDECAR``  the unit's JSON sidecar, schema 1 (:mod:`hw.sidecar`; parameters, latency,
               payload layouts)
``MX_SEED``     the test's seed (default: cocotb's ``RANDOM_SEED``); logged by every test
``MX_CONFIG``   label for the summary table (default: the module name)
``MX_BLOCKS``   the random block budget (its meaning is the model's; default 200)
``MX_FULL``     boolean: the SIM_FULL variant of the model's sets
``MX_SWEEPS``   boolean: the exhaustive sweeps (default on)
``MX_EXHAUSTIVE``  boolean: the model's exhaustive element domain (``make sim-full``; the
               quantizer's every-scale sweeps, the dot unit's every scale pair)
``MX_FLIP_OUTPUT``  non-vacuity tests only: the stream test flips bit 0 of this output as the
               scoreboard receives it (so the run must fail with a decoded mismatch report)
``MX_COVERAGE_DIR``  where the run writes its coverage database (:mod:`tb.coverage`)
``MX_RATE_BLOCKS``  ``make bench`` only: after its jobs, the bulk test checks this many more
               random blocks with the stream kept full and records their checking rate as
               its own summary row (``[rate]``), the figure compared with bare Verilator
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hw.sidecar import GENERATOR, element_formats, validate

from . import coverage
from .batch import Batch
from .bulk import BulkJob, BulkRunner, run_jobs
from .bulk.runner import pass_through
from .coverage.stream import with_stream
from .options import env_flag, env_int
from .report import write_summary
from .stream import BitLayout, StreamTB, bursty_pattern, never, random_pattern

__all__ = ["UnitConfig", "UnitModel", "PATTERNS", "stream", "reset_in_traffic", "bulk",
           "back_to_back", "STANDARD_TESTS", "register"]

#: Environment variable of the non-vacuity tests: the stream output whose bit 0 is flipped.
FLIP_OUTPUT_ENV = "MX_FLIP_OUTPUT"
#: Environment variable of ``make bench``: blocks of the full-stream checking-rate set.
RATE_BLOCKS_ENV = "MX_RATE_BLOCKS"

#: Idle and backpressure patterns of the stream test by name: ``(idle, backpressure)``.
PATTERNS: dict[str, Callable] = {
    "random": lambda rng: (random_pattern(rng, 0.3), random_pattern(rng, 0.3)),
    "bursty": lambda rng: (bursty_pattern(rng), bursty_pattern(rng, 7)),
    "none": lambda rng: (never(), never()),
}


@dataclass(frozen=True)
class UnitConfig:
    """A test's configuration, read from the environment by :meth:`from_env`."""

    sidecar: dict
    seed: int
    label: str
    blocks: int
    full: bool
    sweeps: bool
    exhaustive: bool = False

    @classmethod
    def from_env(cls) -> UnitConfig:
        if not os.environ.get("MX_SIDECAR"):
            raise RuntimeError("MX_SIDECAR is not set: run the testbench through "
                               "tests/test_sim_*.py or tb.runner.run_cocotb with it")
        sidecar = validate(json.loads(Path(os.environ["MX_SIDECAR"]).read_text()))
        import cocotb

        return cls(sidecar=sidecar, seed=env_int("MX_SEED", cocotb.RANDOM_SEED),
                   label=os.environ.get("MX_CONFIG") or sidecar["module"],
                   blocks=env_int("MX_BLOCKS", 200), full=env_flag("MX_FULL"),
                   sweeps=env_flag("MX_SWEEPS", default=True),
                   exhaustive=env_flag("MX_EXHAUSTIVE"))


class UnitModel:
    """What a unit's testbench provides to the standard tests (subclass and override).

    Parameters
    ----------
    config : UnitConfig

    Attributes
    ----------
    k : int
        Elements per block.
    blocks_per_beat : int
        Blocks in one payload (the summary table counts ``beats * blocks_per_beat`` blocks and
        ``k`` elements per block).
    formats : dict
        The element format (:class:`golden.ElementFormat`) of each format parameter, by
        parameter name (:func:`hw.sidecar.element_formats`: the sidecar's ``element_formats``,
        else the names).
    latency : int
        Cycles from input to output (the sidecar's).
    in_layout, out_layout : BitLayout
        Payload codecs of the unit's ``i`` and ``o`` ports.
    drain : int
        Cycles the bulk wrapper keeps ``ready`` high after the last expected output (an
        extra output within them fails the run).
    throughput_blocks : int
        Blocks of the default back-to-back throughput check.
    """

    drain = 16
    throughput_blocks = 1000
    blocks_per_beat = 1

    def __init__(self, config: UnitConfig):
        self.config = config
        self.parameters = config.sidecar["parameters"]
        self.formats = element_formats(config.sidecar)
        self.k = self.parameters["block_size"]
        self.latency = config.sidecar["latency"]
        self.in_layout = BitLayout.from_sidecar(config.sidecar, "i.payload")
        self.out_layout = BitLayout.from_sidecar(config.sidecar, "o.payload")

    @property
    def elements_per_beat(self) -> int:
        return self.k * self.blocks_per_beat

    def check_interface(self):
        """Fail unless the sidecar's payload fields are those of :meth:`interface` (the
        standard tests check it once the model is built, before any stimulus): in order
        and width for this project's generated units (whose offsets are documented); by name
        and width for a design of another generator, which may order its fields as it likes
        (docs/verify-your-rtl.md).  The layouts above come from the sidecar, which the
        generator writes with the Verilog: a field made wider in both would otherwise pass
        every run (docs/verification.md, "Mutation score")."""
        stated = self.interface()
        if stated is None:
            return
        ordered = self.config.sidecar["generator"]["name"] == GENERATOR
        for (role, layout), fields in zip((("i.payload", self.in_layout),
                                           ("o.payload", self.out_layout)), stated, strict=True):
            found = [(f["name"], f["width"])
                     for f in sorted(layout.fields.values(), key=lambda f: f["lsb"])]
            fields = list(fields)
            if not ordered:
                found, fields = sorted(found), sorted(fields)
            if found != fields:
                raise AssertionError(f"{role} fields {found} differ from the documented "
                                     f"interface {fields}")

    def interface(self) -> tuple[list, list] | None:
        """The ``i`` and ``o`` payload fields as (name, width) pairs, LSB first, from the
        unit's documented interface and parameters alone; None: not stated."""
        return None

    def coverage_model(self):
        """The unit's :class:`tb.coverage.model.CoverageModel` for this configuration (the
        standard tests add the stream cover point)."""
        raise NotImplementedError

    def stream_phases(self, rng: np.random.Generator) -> list[tuple[str, Batch]]:
        """The stream test's batches, each with the name of its pattern in :data:`PATTERNS`."""
        raise NotImplementedError

    def random_batch(self, rng: np.random.Generator, n: int) -> Batch:
        """About ``n`` random blocks (the reset test and the default throughput check)."""
        raise NotImplementedError

    def bulk_jobs(self, rng: np.random.Generator) -> list[BulkJob]:
        """The bulk sweeps, in order (built and checked by :func:`tb.bulk.run_jobs`)."""
        raise NotImplementedError

    async def throughput(self, runner: BulkRunner, rng: np.random.Generator, seed: int,
                         log) -> tuple[int, int]:
        """Check the unit's throughput; returns ``(blocks, mismatches)`` checked on the way.

        Default: :func:`back_to_back` with :attr:`throughput_blocks` random blocks."""
        batch = self.random_batch(rng, self.throughput_blocks)
        return len(batch), await back_to_back(runner, batch, self.latency, seed=seed,
                                              drain=self.drain, log=log)


def _start(dut, model_class, seed_offset: int):
    config = UnitConfig.from_env()
    model = model_class(config)
    model.check_interface()
    seed = config.seed + seed_offset
    dut._log.info("%s: seed %d (MX_SEED=%d)", config.label, seed, config.seed)
    if coverage.enabled():
        coverage.start(with_stream(model.coverage_model()), dut._log)
    pass_through(dut)
    return config, model, np.random.default_rng(seed)


def _record(config: UnitConfig, model: UnitModel, test: str, blocks: int, mismatches: int,
            *, elements_per_s: float | None = None) -> None:
    """One row of the closing simulation summary table; the coverage so far is saved."""
    blocks *= model.blocks_per_beat
    row = {"config": f"{config.label} [{test}]", "blocks": blocks, "elements": blocks * model.k,
           "mismatches": mismatches, "seed": config.seed}
    if elements_per_s is not None:
        row["checked_per_s"] = round(elements_per_s)
    write_summary(**row)
    coverage.save()


async def stream(dut, model_class: type[UnitModel]) -> None:
    """Random and directed batches under random, bursty or no idle cycles and backpressure;
    a scoreboard compares every output with golden."""
    config, model, rng = _start(dut, model_class, 0)
    phases = model.stream_phases(rng)
    tb = StreamTB(dut, model.in_layout, model.out_layout, latency=model.latency)
    if os.environ.get(FLIP_OUTPUT_ENV):
        tb.scoreboard.flip_bits(env_int(FLIP_OUTPUT_ENV, 0))
    await tb.reset()
    t0 = time.perf_counter()
    try:
        for pattern, batch in phases:
            idle, backpressure = PATTERNS[pattern](rng)
            await tb.run_batch(batch, idle=idle, backpressure=backpressure)
            batch.sample_coverage()
    finally:
        coverage.sample(tb.stream_coverage())
        blocks = sum(len(b) for _, b in phases)
        _record(config, model, "stream", blocks, tb.scoreboard.mismatches,
                elements_per_s=blocks * model.elements_per_beat / (time.perf_counter() - t0))
    tb.scoreboard.assert_clean()


async def reset_in_traffic(dut, model_class: type[UnitModel]) -> None:
    """Reset while blocks are in flight (with backpressure): nothing comes out afterwards until
    new input, and new blocks come out right."""
    config, model, rng = _start(dut, model_class, 1)
    before, after = model.random_batch(rng, 40), model.random_batch(rng, 30)
    tb = StreamTB(dut, model.in_layout, model.out_layout,
                  backpressure=random_pattern(rng, 0.5), latency=model.latency)
    await tb.reset()
    checked = False
    try:
        await tb.reset_with_data_in_flight(before, after)
        after.sample_coverage()
        checked = True
    finally:  # the row and the reset's stream coverage also when the test fails
        coverage.sample(tb.stream_coverage())
        _record(config, model, "reset", len(after) if checked else tb.scoreboard.checked,
                tb.scoreboard.mismatches)


async def back_to_back(runner: BulkRunner, batch: Batch, latency: int, *, seed: int,
                       drain: int, log) -> int:
    """Run ``batch`` with valid held high and ready never stalled: n blocks must take exactly
    n + latency + 1 cycles (+1: the wrapper notices completion one cycle after the last
    output).  Returns the number of mismatching outputs."""
    got, cycles = await runner.run(batch.stim, seed=seed, out_count=batch.out_count,
                                   drain=drain)
    bad = batch.check(got, log)
    n = batch.stim.shape[0]
    assert cycles == n + latency + 1, \
        f"{n} blocks took {cycles} cycles, expected {n} + latency {latency} + 1"
    return bad


async def bulk(dut, model_class: type[UnitModel]) -> None:
    """The model's throughput check, then its bulk jobs, built, simulated and checked as a
    pipeline (:func:`tb.bulk.run_jobs`)."""
    config, model, rng = _start(dut, model_class, 2)
    log = dut._log
    runner = BulkRunner(dut, model.in_layout, model.out_layout, latency=model.latency)
    await runner.reset()
    blocks, bad = await model.throughput(runner, rng, config.seed, log)
    tally = await run_jobs(runner, model.bulk_jobs(rng), seed=config.seed + 1, log=log)
    # The rate is the jobs' elements over their wall time (stimulus, golden, simulation and
    # checks); the throughput blocks are counted but not timed.
    rate = tally.blocks * model.elements_per_beat / tally.seconds if tally.blocks else None
    log.info("bulk: %d elements checked in %.2f s (%s elements/s; simulation %.2f s)",
             tally.blocks * model.elements_per_beat, tally.seconds,
             f"{rate:.3g}" if rate else "-",
             runner.sim_seconds)
    blocks += tally.blocks
    bad += tally.mismatches
    _record(config, model, "bulk", blocks, bad, elements_per_s=rate)
    if env_int(RATE_BLOCKS_ENV, 0) > 0:
        bad += await checking_rate(config, model, runner, env_int(RATE_BLOCKS_ENV, 0), log)
    assert bad == 0, f"{bad} mismatching outputs"


async def checking_rate(config: UnitConfig, model: UnitModel, runner: BulkRunner,
                        blocks: int, log) -> int:
    """Check ``blocks`` random blocks with the stream kept full (no idle cycle, no
    backpressure: the traffic of a bare ``verilator --binary`` run), one job per wrapper load,
    and record the elements checked per second of wall time (stimulus, golden, simulation and
    the comparison) as the summary row ``[rate]``.  Returns the mismatch count."""
    # A generator of its own: the bulk jobs before it ran in a host process and did not
    # advance the test's generator (tb.bulk.BulkJob), so that one would repeat their blocks.
    rng = np.random.default_rng((config.seed, 3))
    sizes = [min(runner.depth, blocks - lo) for lo in range(0, blocks, runner.depth)]
    jobs = [BulkJob("full stream", lambda n=n: model.random_batch(rng, n), drain=model.drain)
            for n in sizes]
    sim_before = runner.sim_seconds
    tally = await run_jobs(runner, jobs, seed=config.seed + 3, log=log)
    rate = tally.blocks * model.elements_per_beat / tally.seconds
    log.info("rate: %d elements checked in %.2f s with the stream full (%.3g elements/s): "
             "simulation %.2f s, waiting for stimulus %.2f s, for the last checks %.2f s",
             tally.blocks * model.elements_per_beat, tally.seconds, rate,
             runner.sim_seconds - sim_before,
             tally.waited, tally.finishing)
    _record(config, model, "rate", tally.blocks, tally.mismatches, elements_per_s=rate)
    return tally.mismatches


#: The standard tests by name, in the order a testbench runs them.
STANDARD_TESTS: dict[str, Callable] = {"stream": stream, "reset_in_traffic": reset_in_traffic,
                                       "bulk": bulk}


def register(namespace: dict, model_class: type[UnitModel],
             names=tuple(STANDARD_TESTS)) -> None:
    """Add one cocotb test per standard test ``names`` on ``model_class`` to a testbench
    module's ``namespace`` (its ``globals()``: cocotb collects ``Test`` objects from there).

    Imported outside a simulator (docs, offline model tests) it adds nothing.
    """
    try:
        import cocotb
    except ImportError:
        return
    for name in names:
        if name not in STANDARD_TESTS:
            raise ValueError(f"unknown standard test {name!r}; expected one of "
                             f"{', '.join(STANDARD_TESTS)}")
        run = STANDARD_TESTS[name]

        async def test(dut, run=run):
            await run(dut, model_class)

        test.__name__ = test.__qualname__ = name
        test.__module__ = namespace["__name__"]
        test.__doc__ = run.__doc__
        namespace[name] = cocotb.test()(test)
