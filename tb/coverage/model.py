"""The coverage model's data and its database: cover points with named bins, excluded bins
with their reasons, and the collector that records per-batch bin counts.

A unit's classifier (:mod:`tb.coverage.quantizer`, ...) turns a whole batch (stimulus arrays
and golden's results) into bin hit counts with numpy; :class:`Coverage` keeps those counts
exactly and samples each bin hit in a batch once into cocotb-coverage's database
(``cocotb_coverage.coverage.coverage_db``), so the database exported to YAML/XML holds real
:class:`~cocotb_coverage.coverage.CoverPoint` objects whose hit count is the number of batches
that hit a bin, and the exact element/block counts are stored alongside in JSON.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Point", "CoverageModel", "Coverage", "COUNTS_FORMAT", "YAML_NAME", "XML_NAME",
           "COUNTS_NAME"]

#: Files of one coverage database (per run, per session, per merged regression).
YAML_NAME, XML_NAME, COUNTS_NAME = "coverage.yml", "coverage.xml", "coverage-counts.json"
COUNTS_FORMAT = 1


@dataclass(frozen=True)
class Point:
    """One cover point: its defined bins, and the bins it excludes with the reason for each.

    Parameters
    ----------
    name : str
        Dotted name below the configuration class, e.g. ``"rne.floor.element"``.
    bins : tuple of str
        Bins that must be hit (100 % closure means every one of them).
    excluded : dict of str to str
        Bins that cannot occur in this configuration, each with the reason.
    """

    name: str
    bins: tuple[str, ...]
    excluded: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if not self.name or any(not part for part in self.name.split(".")):
            raise ValueError(f"cover point name {self.name!r} must be dotted non-empty parts")
        overlap = set(self.bins) & set(self.excluded)
        if overlap:
            raise ValueError(f"{self.name}: bins both defined and excluded: {sorted(overlap)}")
        if not self.bins:
            raise ValueError(f"{self.name}: a cover point needs at least one defined bin")


def point(name: str, candidates, exclusions: Mapping[str, str | None]) -> Point:
    """A :class:`Point` from its candidate bins and the reason (or None) each is excluded."""
    excluded = {b: exclusions[b] for b in candidates if exclusions.get(b)}
    return Point(name, tuple(b for b in candidates if b not in excluded), excluded)


@dataclass(frozen=True)
class CoverageModel:
    """The cover points of one unit in one configuration class.

    ``unit`` and ``config_class`` name the database node ``{unit}.{config_class}``; the
    configuration class is the part of a configuration that changes the numerics (formats,
    modes), not block size or pipeline depth, so configurations of one class share bins.
    """

    unit: str
    config_class: str
    points: tuple[Point, ...]

    @property
    def prefix(self) -> str:
        return f"{self.unit}.{self.config_class}"


class Coverage:
    """A configuration's coverage: exact hit counts, and cocotb-coverage's database.

    Parameters
    ----------
    model : CoverageModel
    log : logging.Logger, optional
        Where a hit of an excluded bin is reported (the exclusion's reason was wrong).
    """

    def __init__(self, model: CoverageModel, log: logging.Logger | None = None):
        from cocotb_coverage.coverage import CoverPoint

        self.model = model
        self.log = log or logging.getLogger("cocotb.coverage")
        self.points = {f"{model.prefix}.{p.name}": p for p in model.points}
        self.hits = {name: dict.fromkeys(p.bins, 0) for name, p in self.points.items()}
        self.excluded_hits: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()  # bulk checks sample from the job pipeline's worker
        self._samplers = {}
        for name, p in self.points.items():
            # A sampling call passes the set of bins hit in one batch; each matches once.
            cover = CoverPoint(name, xf=lambda hit: hit, rel=lambda hit, b: b in hit,
                               bins=list(p.bins), inj=False)
            self._samplers[name] = cover(_sample)

    def add(self, counts: Mapping[str, Mapping[str, int]]) -> None:
        """Record one batch's hit counts ``{point name below the class: {bin: count}}``."""
        with self._lock:
            for rel_name, bins in counts.items():
                name = f"{self.model.prefix}.{rel_name}"
                if name not in self.points:
                    raise KeyError(f"no cover point {name!r} in the model")
                p, hit = self.points[name], set()
                for b, n in bins.items():
                    n = int(n)
                    if n <= 0:
                        continue
                    if b in p.excluded:
                        self.excluded_hits.setdefault(name, {}).setdefault(b, 0)
                        self.excluded_hits[name][b] += n
                        self.log.error("coverage: excluded bin %s.%s hit %d times (excluded "
                                       "because: %s)", name, b, n, p.excluded[b])
                        continue
                    if b not in self.hits[name]:
                        raise KeyError(f"no bin {b!r} in cover point {name!r}")
                    self.hits[name][b] += n
                    hit.add(b)
                if hit:
                    self._samplers[name](frozenset(hit))

    def counts_document(self) -> dict:
        """The exact counts with the model (defined and excluded bins), as written to JSON."""
        return {"format": COUNTS_FORMAT,
                "points": {name: {"hits": dict(self.hits[name]),
                                  "excluded": dict(p.excluded),
                                  "excluded_hits": dict(self.excluded_hits.get(name, {}))}
                           for name, p in self.points.items()}}

    def write(self, directory: Path) -> Path:
        """Write the database (YAML, XML: cocotb-coverage's exports of every point of this
        process) and the exact counts (JSON) under ``directory``; returns it."""
        from cocotb_coverage.coverage import coverage_db

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        with self._lock:
            coverage_db.export_to_yaml(str(directory / YAML_NAME))
            coverage_db.export_to_xml(str(directory / XML_NAME))
            (directory / COUNTS_NAME).write_text(
                json.dumps(self.counts_document(), indent=1, sort_keys=True) + "\n")
        return directory


def _sample(hit: frozenset) -> None:
    """The sampling function the cocotb-coverage decorators wrap (they do the matching)."""
