"""The proof matrix: one job per unit x block size x depth x property group, and the table.

Property groups (the harnesses of :mod:`formal.harness` and :mod:`formal.chain_harness`):

* ``flow`` -- properties 1-3 (stream rules, scoreboard with exact latency, reset), proven
  together by k-induction (they and the control-register invariants support each other);
  MXDotGeneral by BMC (its scoreboard counts runs, and the invariant relating runs to the
  stages' ``last`` bits is not stated);
* ``order`` -- no reordering, on the datapath-free pipeline with sequence-number tags
  (k-induction; MXDotGeneral's ``hold_when`` pipeline by BMC);
* ``miter`` -- property 4, depth ``stages`` against depth 1 (BMC; ``stages`` > 1);
* ``datapath`` -- property 4 for all inputs, by the register-bypass proof of
  :mod:`formal.datapath` (``stages`` > 1, every depth), at k = 2 and 4 and for every default
  configuration of ``python -m hw generate`` at its block size; for MXDotGeneral the fused
  step after its accumulator input;
* ``chain`` -- MXDotGeneral only: the other half of its property 4, the accumulator chaining
  per context (BMC, every depth at k = 2 and 4).

Each unit also runs, at k = 2, in an element format beyond OCP's six
(:data:`formal.units.CUSTOM_UNITS`), with the same property groups at the same depths.
MXGemm (:data:`formal.units.GEMM_UNITS`, k = 2, not in ``--quick``) has MXDotGeneral's
groups: flow and order bounded, register bypass (with its MX output too), chain for its
fp32 tile, its miter with ``--all`` only.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from .chain_harness import ChainHarness
from .datapath import prove_same_datapath
from .harness import FlowHarness, MiterHarness, OrderHarness
from .sby import SbyResult, run_sby
from .units import (
    CUSTOM_UNITS,
    GEMM_UNITS,
    GPU_BLOCK_SIZES,
    GPU_UNITS,
    NVFP4_QUANTIZER_UNITS,
    NVFP4_UNITS,
    UNITS,
    FormalUnit,
    default_configurations,
)

__all__ = ["Job", "proof_jobs", "report_table", "PROPERTIES", "SLOW_MITERS"]

#: Property group -> what it proves (the report's column heads).
PROPERTIES = {
    "flow": "1-3 stream rules, no loss/dup, exact latency, reset",
    "order": "2 in order (tags, pipeline skeleton)",
    "miter": "4 same outputs as stages=1",
    "datapath": "4 same datapath function as stages=1 (register bypass, all inputs)",
    "chain": "4 per-context chaining of the accumulators (MXDotGeneral, MXGemm)",
}

#: Extra BMC steps beyond the pipeline depth: enough for a reset, a block through the
#: deepest pipeline and a few cycles of backpressure behind it.
BMC_MARGIN = {"flow": 10, "order": 8, "miter": 4, "chain": 10}


#: Units whose miter the SMT solver does not settle in minutes (the dot units' fused step:
#: two copies of the alignment and normalization shifters, and no SAT sweeping in the
#: smtbmc flow): only with ``--all``.  Names of :data:`formal.units.UNITS` (``FormalUnit.kind``).
SLOW_MITERS = ("dot", "dot-general", "gemm")


@dataclass(frozen=True)
class Job:
    """One SymbiYosys run."""

    unit: FormalUnit
    k: int
    stages: int
    prop: str
    mode: str
    depth: int

    @property
    def name(self) -> str:
        return f"{self.unit.name}-k{self.k}-s{self.stages}-{self.prop}"

    def harness(self):
        """The harness and its probe connections."""
        if self.prop == "flow":
            h = FlowHarness(self.unit, self.k, self.stages, probes=self.mode == "prove")
            return h, {"probe": h.probe_wires}
        if self.prop == "order":
            h = OrderHarness(self.unit, self.k, self.stages, probes=self.mode == "prove")
            return h, {"probe": h.probe_wires}
        if self.prop == "chain":
            h = ChainHarness(self.unit, self.k, self.stages)
            return h, {"probe": h.probe_wires}
        return MiterHarness(self.unit, self.k, self.stages), {}

    def run(self, outdir: Path, timeout: float) -> SbyResult:
        if self.prop == "datapath":
            return prove_same_datapath(self.unit, self.k, self.stages,
                                       Path(outdir) / self.name, timeout=timeout)
        harness, probes = self.harness()
        return run_sby(harness, Path(outdir) / self.name, mode=self.mode, depth=self.depth,
                       timeout=timeout, probes=probes)


def _jobs_for(unit: FormalUnit, k: int, stages: int) -> list[Job]:
    drain = unit.drain_cycles(stages)
    jobs = []
    if unit.runs:
        jobs.append(Job(unit, k, stages, "flow", "bmc", drain + BMC_MARGIN["flow"]))
    else:  # induction needs the exact-latency window inside its unrolling
        jobs.append(Job(unit, k, stages, "flow", "prove", drain + 3))
    if unit.runs:  # no order invariants with hold_when
        jobs.append(Job(unit, k, stages, "order", "bmc", drain + BMC_MARGIN["order"]))
    else:
        jobs.append(Job(unit, k, stages, "order", "prove", 3))
    if stages > 1:
        jobs.append(Job(unit, k, stages, "miter", "bmc", stages + BMC_MARGIN["miter"]))
    return jobs


def _depth_equivalence_jobs(unit: FormalUnit, k: int, depths, *, chain: bool = True) -> list[Job]:
    """The register-bypass jobs at ``depths`` (beyond 1), and (``chain``) for a unit with runs
    the chain jobs at every depth (the chaining depends on the timing, so depth 1 too)."""
    jobs = []
    if unit.runs and chain:
        jobs += [Job(unit, k, s, "chain", "bmc", unit.drain_cycles(s) + BMC_MARGIN["chain"])
                 for s in depths]
    return jobs + [Job(unit, k, s, "datapath", "equiv", 1) for s in depths if s > 1]


def _gemm_jobs(full: bool) -> list[Job]:
    """MXGemm's jobs (:data:`formal.units.GEMM_UNITS`), at k = 2: flow and order at 1, the
    middle and the deepest setting (its MX output's too: the tile's pipeline, then the output
    quantizers' at their depth); the register-bypass jobs of both and the fp32 tile's chain
    jobs at every depth, as MXDotGeneral's (the MX output's result is not the accumulators'
    fp32: no chain job; its tile is the fp32 build's)."""
    jobs = []
    for unit in GEMM_UNITS:
        settings = unit.stage_settings(2)
        for stages in settings:
            jobs += [j for j in _jobs_for(unit, 2, stages) if j.prop != "miter" or full]
        jobs += _depth_equivalence_jobs(unit, 2, range(1, unit.max_stages(2) + 1),
                                        chain=not unit.tail)
    return jobs


def _gpu_jobs() -> list[Job]:
    """The GPU accumulation modes' jobs (:data:`formal.units.GPU_UNITS`), at k = 32, their
    only block size (nvfp4's 16, :data:`formal.units.GPU_BLOCK_SIZES`): flow and order at 1,
    the middle and the deepest setting, and for MXDotGeneral's mode the chain at the middle
    one."""
    jobs = []
    for unit in GPU_UNITS:
        k = GPU_BLOCK_SIZES.get(unit.name, 32)
        settings = unit.stage_settings(k)
        jobs += [j for s in settings for j in _jobs_for(unit, k, s)
                 if j.prop in ("flow", "order")]
        if unit.runs:
            mid = settings[len(settings) // 2]
            jobs.append(Job(unit, k, mid, "chain", "bmc",
                            unit.drain_cycles(mid) + BMC_MARGIN["chain"]))
    return jobs


def proof_jobs(*, quick: bool = False, full: bool = False, only: str | None = None,
               block_sizes=(2, 4)) -> list[Job]:
    """The jobs of the matrix.

    Parameters
    ----------
    quick : bool
        k = 2 only, no miter jobs at the deepest setting, no default configurations and no
        custom-format units.
    full : bool
        Also the miters of :data:`SLOW_MITERS` (no verdict within the default budget; see
        ``docs/verification.md``).
    only : str, optional
        A shell pattern on job names (``dot-k2-*``, ``*-miter``).
    block_sizes : tuple of int
    """
    rows = [(unit, k) for unit in UNITS for k in ((2,) if quick else block_sizes)]
    if not quick:
        rows += [(unit, 2) for unit in CUSTOM_UNITS + NVFP4_UNITS]
    jobs = []
    for unit, k in rows:
        settings = unit.stage_settings(k)
        for stages in settings:
            for job in _jobs_for(unit, k, stages):
                if job.prop == "miter" and quick and stages == settings[-1]:
                    continue
                if job.prop == "miter" and not full and unit.kind in SLOW_MITERS:
                    continue
                jobs.append(job)
        jobs += _depth_equivalence_jobs(unit, k, range(1, unit.max_stages(k) + 1))
    if not quick:
        jobs += _gemm_jobs(full) + _gpu_jobs()
        # the NVFP4 quantizer at k = 2: flow and order at its three depths
        jobs += [j for unit in NVFP4_QUANTIZER_UNITS for s in unit.stage_settings(2)
                 for j in _jobs_for(unit, 2, s) if j.prop in ("flow", "order")]
        # the NVFP4 dot units and quantizer at k = 4: flow at their three depths (their
        # sections do not depend on k, so the k = 2 order proofs hold the same skeletons)
        jobs += [j for unit in NVFP4_UNITS + NVFP4_QUANTIZER_UNITS
                 for s in unit.stage_settings(4) for j in _jobs_for(unit, 4, s)
                 if j.prop == "flow"]
        # The full-size rows: the datapath at each default configuration's depths, and the
        # pipeline skeleton's order proof at any (sections, depth) the small units do not
        # already have (the quantizer's sections grow with log2 k).
        covered = {(j.unit.prefix, tuple(j.unit.sections(j.k, j.stages)), j.stages)
                   for j in jobs if j.prop == "order"}
        for unit, k in default_configurations():
            jobs += _depth_equivalence_jobs(unit, k, unit.stage_settings(k), chain=False)
            for stages in unit.stage_settings(k):
                key = (unit.prefix, tuple(unit.sections(k, stages)), stages)
                if key not in covered and not unit.runs:
                    covered.add(key)
                    jobs.append(Job(unit, k, stages, "order", "prove", 3))
    if only:
        jobs = [j for j in jobs if fnmatch.fnmatch(j.name, only)]
    return jobs


def report_table(results: list[tuple[Job, SbyResult]]) -> str:
    """Markdown: one row per unit x k x stages, one column per property group, each cell the
    verdict (proven / bounded to N / failed ...) and the run time."""
    rows: dict[tuple, dict[str, str]] = {}
    units = {}
    for job, res in results:
        key = (job.unit.name, job.k, job.stages)
        units[job.unit.name] = job.unit
        cell = f"{res.verdict} ({res.seconds:.0f} s)"
        if res.failed:
            cell += ": " + ", ".join(res.failed)
        rows.setdefault(key, {})[job.prop] = cell
    head = "| unit | k | stages | " + " | ".join(PROPERTIES.values()) + " |"
    lines = [head, "|---" * (3 + len(PROPERTIES)) + "|"]
    for (name, k, stages), cells in rows.items():
        unit = units[name]
        slow = unit.kind in SLOW_MITERS and stages in unit.stage_settings(k)
        missing = {"miter": "`--all` only" if slow else "-",
                   "chain": "-" if unit.runs else "n/a (no runs)"}
        if stages == 1:
            missing.update(miter="n/a (stages = 1)", datapath="n/a (stages = 1)")
        lines.append(f"| {name} | {k} | {stages} | "
                     + " | ".join(cells.get(p, missing.get(p, "-")) for p in PROPERTIES)
                     + " |")
    return "\n".join(lines)
