"""A mutation campaign: sample mutants of ``hw/``, classify each, report the kill rate.

For each proposed mutant (:class:`~mutate.sample.StratifiedSampler`), in a sandbox copy of
the repository (:class:`~mutate.sandbox.Sandbox`):

1. generate the Verilog and sidecar of every default configuration built from the mutated
   file; if generation raises, the mutant *does not elaborate*; if no configuration's
   Verilog or sidecar changes, it has *no effect*;
2. otherwise simulate the changed configurations with the default regression's test
   (``tests/test_sim_<unit>.py``, same ``SEED`` as the baseline), cheapest first, stopping at
   the first failure: *killed*; a run over its time limit (three times the baseline's time
   for that configuration plus :data:`TIMEOUT_SLACK`) is *killed (hang)*; all passing:
   *survived*.

A mutant that changes only sidecars (the Verilog of every configuration is the same) cannot
be seen by a simulation; it is checked by :data:`SIDECAR_TEST` instead (*killed* or
*survived*, marked "sidecar only" in the report).

A mutant listed in :data:`mutate.equivalents.KNOWN_EQUIVALENTS` (shown equivalent earlier,
with the reason) is reported as *equivalent (known)* without generating or simulating it.

The baseline (unmutated) time of each configuration is measured in a second sandbox the
first time a mutant needs it, and cached in ``build/mutate/baseline.json`` with a digest of
the sources: the unmutated regression must pass, or the campaign stops.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .equivalents import known_equivalent
from .operators import Mutation, find_mutations
from .regression import SimConfig, default_configs, unit_sources
from .sample import StratifiedSampler
from .sandbox import COPIED, Sandbox

__all__ = ["Result", "Campaign", "STATUSES", "TIMEOUT_FACTOR", "TIMEOUT_SLACK"]

#: Outcomes, in report order.  Kill rate = (killed + killed (hang)) / those that changed the
#: Verilog or, for ``Result.sidecar_only``, only sidecars (the first three).
STATUSES = ("killed", "killed (hang)", "survived", "no effect", "does not elaborate",
            "equivalent (known)")
#: A mutant's simulation of a configuration may take this many times the baseline's ...
TIMEOUT_FACTOR = 3.0
#: ... plus this many seconds (a Verilator rebuild under load varies more than a simulation).
TIMEOUT_SLACK = 120.0
#: The test that checks every configuration's sidecar (run for sidecar-only mutants).
SIDECAR_TEST = "tests/test_sidecar.py"
#: Limit of the baseline's simulation of one configuration (it must pass).
BASELINE_TIMEOUT = 3600.0


@dataclass
class Result:
    """What happened to one mutant."""

    key: str
    path: str
    line: int
    operator: str
    description: str
    diff: str
    status: str = ""
    changed: list[str] = field(default_factory=list)  # configurations whose Verilog changed
    simulated: list[str] = field(default_factory=list)
    killed_by: str = ""
    message: str = ""
    seconds: float = 0.0
    sidecar_only: bool = False  # only sidecars changed: judged by SIDECAR_TEST

    @property
    def effective(self) -> bool:
        return self.status in STATUSES[:3]


def source_digest(repo: Path) -> str:
    """SHA-256 over the sources a simulation depends on (every copied file but ``mutate/``)."""
    digest = hashlib.sha256()
    for item in COPIED:
        if item == "mutate":
            continue
        path = repo / item
        files = sorted(path.rglob("*")) if path.is_dir() else [path]
        for f in files:
            if f.is_file() and "__pycache__" not in f.parts:
                digest.update(f.relative_to(repo).as_posix().encode())
                digest.update(f.read_bytes())
    return digest.hexdigest()


class Campaign:
    """One campaign over ``files`` (paths relative to ``repo``).

    Parameters
    ----------
    repo : Path
    files : list of str
        ``hw`` source files to mutate.
    sample : int
        Mutants that change the Verilog to simulate (the sampler keeps proposing until this
        many did, or every mutation was tried).
    seed : int
        Shuffles the mutations and is the ``SEED`` of every simulation.
    jobs : int
        Mutants evaluated in parallel (one sandbox each).
    minutes : float, optional
        Time budget: no new mutant is started after this many minutes.
    log : callable(str)
        Progress output.
    """

    def __init__(self, repo: Path, files: list[str], *, sample: int, seed: int, jobs: int = 1,
                 minutes: float | None = None, log=print):
        if not isinstance(sample, int) or sample < 1:
            raise ValueError(f"sample must be a positive int, got {sample!r}")
        if not isinstance(jobs, int) or jobs < 1:
            raise ValueError(f"jobs must be a positive int, got {jobs!r}")
        self.repo = Path(repo).resolve()
        self.sample, self.seed, self.jobs, self.log = sample, seed, jobs, log
        self.minutes = minutes
        self.sources = {f: (self.repo / f).read_text() for f in files}
        by_file = {f: find_mutations(f, text) for f, text in self.sources.items()}
        self.sampler = StratifiedSampler(by_file, seed)
        configs = default_configs(self.repo)
        uses = unit_sources(self.repo)
        self.configs_of = {f: [c for c in configs if f in uses[c.unit]] for f in files}
        self.out = self.repo / "build" / "mutate"
        self.results: list[Result] = []
        self.lock = threading.Lock()
        self.baseline_lock = threading.Lock()

    # -- baseline ----------------------------------------------------------------------------
    def _baseline_setup(self) -> None:
        self.digest = source_digest(self.repo)
        self.cache_path = self.out / "baseline.json"
        cache = {}
        if self.cache_path.exists():
            cache = json.loads(self.cache_path.read_text())
        if cache.get("digest") != self.digest or cache.get("seed") != self.seed:
            cache = {"digest": self.digest, "seed": self.seed, "seconds": {}}
        self.baseline_seconds: dict[str, float] = cache["seconds"]
        self.baseline = Sandbox(self.repo, "baseline", self.seed)
        needed = sorted({c for cs in self.configs_of.values() for c in cs},
                        key=lambda c: c.nodeid)
        t0 = time.monotonic()
        prints = self.baseline.fingerprints(needed, timeout=3600)
        if "error" in prints:
            raise RuntimeError(f"the unmutated sources do not generate: {prints['error']}")
        self.baseline_prints = prints["fingerprints"]
        self.verilog_sizes = prints["sizes"]
        self.generation_seconds = time.monotonic() - t0
        self.log(f"baseline: {len(needed)} default configurations generated in "
                 f"{self.generation_seconds:.0f} s; {len(self.baseline_seconds)} simulation "
                 f"times cached ({self.cache_path})")

    def _baseline_time(self, config: SimConfig) -> float:
        """The unmutated configuration's simulation time (measured once, then cached)."""
        with self.baseline_lock:
            if config.nodeid not in self.baseline_seconds:
                self.log(f"  baseline: simulating {config.nodeid} ...")
                outcome = self.baseline.simulate(config, BASELINE_TIMEOUT)
                if outcome.status != "pass":
                    raise RuntimeError(f"the unmutated regression fails at SEED={self.seed}: "
                                       f"{config.nodeid}: {outcome.message}")
                self.baseline_seconds[config.nodeid] = round(outcome.seconds, 1)
                self.cache_path.write_text(json.dumps(
                    {"digest": self.digest, "seed": self.seed,
                     "seconds": self.baseline_seconds}, indent=1))
                self.log(f"  baseline: {outcome.seconds:.0f} s")
            return self.baseline_seconds[config.nodeid]

    # -- one mutant --------------------------------------------------------------------------
    def evaluate(self, sandbox: Sandbox, mutation: Mutation) -> Result:
        source = self.sources[mutation.path]
        result = Result(mutation.key, mutation.path, mutation.line, mutation.operator,
                        mutation.description, mutation.diff(source))
        known = known_equivalent(mutation, source)
        if known is not None:
            result.status, result.message = "equivalent (known)", known.reason
            return result
        t0 = time.monotonic()
        sandbox.write(mutation.path, mutation.apply(source))
        try:
            configs = self.configs_of[mutation.path]
            prints = sandbox.fingerprints(configs, timeout=3 * self.generation_seconds + 60)
            if "error" in prints:
                result.status, result.message = "does not elaborate", prints["error"]
                return result
            new, base = prints["fingerprints"], self.baseline_prints
            changed = [c for c in configs if new[c.nodeid][0] != base[c.nodeid][0]]
            sidecar_only = [c for c in configs
                            if c not in changed and new[c.nodeid][1] != base[c.nodeid][1]]
            result.changed = [c.nodeid for c in changed or sidecar_only]
            if changed:
                # cheapest first: known baseline times ascending, then the unknown ones by
                # the size of their Verilog (a proxy of the Verilator build time)
                to_run = sorted(changed, key=lambda c: (c.nodeid not in self.baseline_seconds,
                                                        self.baseline_seconds.get(c.nodeid, 0),
                                                        self.verilog_sizes[c.nodeid]))
            elif sidecar_only:
                # the same Verilog everywhere: the sidecar test, not a simulation, can see it
                result.sidecar_only = True
                to_run = [SimConfig(SIDECAR_TEST, sidecar_only[0].unit, sidecar_only[0].argv)]
            else:
                result.status = "no effect"
                return result
            result.status = "survived"
            for config in to_run:
                limit = TIMEOUT_FACTOR * self._baseline_time(config) + TIMEOUT_SLACK
                outcome = sandbox.simulate(config, limit)
                result.simulated.append(config.nodeid)
                if outcome.status != "pass":
                    result.status = "killed" if outcome.status == "fail" else "killed (hang)"
                    result.killed_by, result.message = config.nodeid, outcome.message
                    break
            return result
        finally:  # the text read at the start: the checkout may change meanwhile
            sandbox.write(mutation.path, source)
            result.seconds = round(time.monotonic() - t0, 1)

    # -- the campaign ------------------------------------------------------------------------
    def _worker(self, index: int) -> None:
        sandbox = Sandbox(self.repo, f"sandbox-{index}", self.seed)
        while True:
            with self.lock:
                effective = sum(r.effective for r in self.results) + self.in_flight
                if effective >= self.sample:
                    return
                if self.minutes and time.time() - self.started > 60 * self.minutes:
                    self.log(f"time budget of {self.minutes} min reached")
                    return
                mutation = self.sampler.next()
                if mutation is None:
                    return
                self.in_flight += 1
            try:
                result = self.evaluate(sandbox, mutation)
            finally:
                with self.lock:
                    self.in_flight -= 1
            with self.lock:
                self.sampler.record(mutation, result.effective)
                self.results.append(result)
                n_eff = sum(r.effective for r in self.results)
                self.log(f"[{len(self.results):3d} tried, {n_eff:3d}/{self.sample} simulated] "
                         f"{mutation.path}:{mutation.line} {mutation.operator} "
                         f"{mutation.description}: {result.status.upper()}"
                         + (f" ({len(result.changed)} configs changed, "
                            f"{len(result.simulated)} simulated)" if result.changed else "")
                         + (f" by {result.killed_by.split('::')[-1]}" if result.killed_by
                            else "")
                         + f" [{result.seconds:.0f} s]")
                if result.message and result.status != "no effect":
                    self.log(f"      {result.message[:200]}")
                self.write_reports()

    def run(self) -> list[Result]:
        self.started = time.time()
        self.load_start = os.getloadavg()
        self.in_flight = 0
        self.out.mkdir(parents=True, exist_ok=True)
        self.log(f"mutation campaign: seed {self.seed}, sample {self.sample}, jobs {self.jobs}, "
                 f"files {', '.join(self.sources)}")
        self._baseline_setup()
        with ThreadPoolExecutor(self.jobs) as pool:
            for future in [pool.submit(self._worker, i) for i in range(self.jobs)]:
                future.result()
        self.finished = time.time()
        self.write_reports(final=True)
        return self.results

    # -- reports -----------------------------------------------------------------------------
    def per_file(self) -> dict[str, Counter]:
        table = {f: Counter() for f in self.sources}
        for r in self.results:
            table[r.path][r.status] += 1
        return table

    def write_reports(self, final: bool = False) -> None:
        wall = (getattr(self, "finished", None) or time.time()) - self.started
        load_now = os.getloadavg()
        meta = {"seed": self.seed, "sample": self.sample, "jobs": self.jobs,
                "minutes": self.minutes,
                "files": list(self.sources), "wall_seconds": round(wall),
                "load_start": self.load_start, "load_end": load_now,
                "cpus": os.cpu_count(), "complete": final,
                "command": f"python -m mutate --seed {self.seed} --sample {self.sample} "
                           f"--jobs {self.jobs}"
                           + (f" --minutes {self.minutes:g}" if self.minutes else "")
                           + f" --files {' '.join(self.sources)}"}
        (self.out / "report.json").write_text(json.dumps(
            {"meta": meta, "results": [asdict(r) for r in self.results]}, indent=1))
        (self.out / "report.md").write_text(self.markdown(meta))
        if final:
            self.log("\n" + self.summary_text(meta))

    def summary_text(self, meta) -> str:
        lines = [f"{'file':28} {'tried':>5} {'no eff':>6} {'no elab':>7} {'simul':>5} "
                 f"{'killed':>6} {'hang':>4} {'surv':>4} {'equiv':>5}  kill rate"]
        totals = Counter()
        for path, c in self.per_file().items():
            lines.append(_row(path, c))
            totals.update(c)
        lines.append(_row("all", totals))
        survivors = [r for r in self.results if r.status == "survived"]
        lines.append(f"\n{len(survivors)} survivors (seed {self.seed}; wall time "
                     f"{meta['wall_seconds'] / 60:.1f} min; load {meta['load_start'][0]:.1f} -> "
                     f"{meta['load_end'][0]:.1f} on {meta['cpus']} cores)")
        for r in survivors:
            lines.append(f"\n{r.path}:{r.line} {r.operator} {r.description}\n{r.diff}")
        return "\n".join(lines)

    def markdown(self, meta) -> str:
        lines = ["# Mutation campaign", "",
                 f"`{meta['command']}`", "",
                 f"Wall time {meta['wall_seconds'] / 60:.1f} min, {meta['jobs']} job(s), "
                 f"load average {meta['load_start'][0]:.1f} at start, "
                 f"{meta['load_end'][0]:.1f} at end, {meta['cpus']} cores"
                 + ("" if meta["complete"] else " (**in progress**)") + ".", "",
                 "| file | tried | no effect | does not elaborate | simulated | killed | "
                 "killed (hang) | survived | equivalent (known) | kill rate |",
                 "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        totals = Counter()
        for path, c in self.per_file().items():
            lines.append(_md_row(f"`{path}`", c))
            totals.update(c)
        lines += [_md_row("**all**", totals), "", "## Survivors", ""]
        survivors = [r for r in self.results if r.status == "survived"]
        if not survivors:
            lines.append("None.")
        for r in survivors:
            what = (f"Only the sidecar changed ({len(r.changed)} configuration(s)); "
                    f"`{SIDECAR_TEST}` passes." if r.sidecar_only else
                    f"Verilog changed in {len(r.changed)} default configuration(s), all "
                    "simulated and passing.")
            lines += [f"### `{r.path}:{r.line}` {r.operator}: {r.description}", "", what, "",
                      "```diff", r.diff.rstrip(), "```", ""]
        lines += ["## Every mutant", "", "| mutant | status | detail |", "|---|---|---|"]
        for r in self.results:
            detail = (r.killed_by.split("::")[-1] + ": " if r.killed_by else "") + r.message
            detail = detail.replace("|", "\\|")[:160]
            status = r.status + (" (sidecar only)" if r.sidecar_only else "")
            lines.append(f"| `{r.path}:{r.line}` {r.operator} {r.description.replace('|', '/')}"
                         f" | {status} | {detail} |")
        return "\n".join(lines) + "\n"


def _counts(c: Counter) -> tuple[int, ...]:
    simulated = c["killed"] + c["killed (hang)"] + c["survived"]
    return (sum(c.values()), c["no effect"], c["does not elaborate"], simulated, c["killed"],
            c["killed (hang)"], c["survived"], c["equivalent (known)"])


def _rate(c: Counter) -> str:
    _, _, _, simulated, killed, hang, _, _ = _counts(c)
    return f"{100 * (killed + hang) / simulated:.0f} %" if simulated else "-"


def _row(name: str, c: Counter) -> str:
    tried, none, noelab, sim, killed, hang, surv, equiv = _counts(c)
    return (f"{name:28} {tried:5d} {none:6d} {noelab:7d} {sim:5d} {killed:6d} {hang:4d} "
            f"{surv:4d} {equiv:5d}  {_rate(c)}")


def _md_row(name: str, c: Counter) -> str:
    return "| " + " | ".join([name, *map(str, _counts(c)), _rate(c)]) + " |"
