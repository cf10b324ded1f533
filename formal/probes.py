"""Where a unit's pipeline control lives in its RTLIL: the valid, hold and enable-copy
registers of every registered boundary (:func:`pipeline_probes`), for the formal harness
(:mod:`formal.harness`) and the datapath proofs (:mod:`formal.datapath`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from hw.pipeline import registered_boundaries

__all__ = ["pipeline_probes", "lane_probes", "replicas", "replica_names",
           "enable_copies"]


def lane_probes(text: str, sections, stages: int, prefix: str, lanes, **options):
    """:func:`pipeline_probes` of a pipeline with ``lanes`` (:attr:`FormalUnit.lanes`), the
    replicas read off the unit's RTLIL ``text``."""
    boundaries = registered_boundaries(sections, stages)
    named = [lane for lane in lanes if lane is not None]
    lane_replicas = replicas(text, f"{prefix}_{named[0]}", boundaries) if named else {}
    return pipeline_probes(sections, stages, prefix, **options,
                           replicas=replica_names(text, prefix, boundaries, named),
                           lanes=lanes, lane_replicas=lane_replicas)


def replicas(text: str, prefix: str, boundaries, lanes=()) -> dict[str, int]:
    """How many replica registers (:meth:`hw.pipeline.Pipeline.replicate`) each registered
    boundary of a :class:`hw.pipeline.Pipeline` named ``prefix`` carries (those with any),
    read off the unit's RTLIL ``text``: the counts of :func:`replica_names`."""
    return {boundary: len(names)
            for boundary, names in replica_names(text, prefix, boundaries, lanes).items()}


def replica_names(text: str, prefix: str, boundaries, lanes=()) -> dict[str, list[str]]:
    """The replica registers (:meth:`hw.pipeline.Pipeline.replicate`) of each registered
    boundary of a :class:`hw.pipeline.Pipeline` named ``prefix`` (those with any), read off
    the unit's RTLIL ``text``, in the order they were made (the order they load on the
    stage's enable copies): the registers ``<prefix>_<boundary>_r<c>``, numbered from 0.
    Each call of ``replicate`` numbers its copies from 0, so where several values cross one
    boundary in replicas (a value per lane), the later calls' registers repeat the names and
    Amaranth makes them unique as ``<prefix>_<boundary>_r<c>$<n>``: a boundary's replicas
    are runs, each numbered from 0 without a gap.  Those of the named ``lanes``
    (``<prefix>_<lane>_<boundary>_r<c>``, a lane's replicas beside the boundary's register,
    :meth:`hw.scope.PipelineScope.replicate`) are left out (their count:
    ``replicas(text, "<prefix>_<lane>", boundaries)``)."""
    names = _numbered_wires(text, prefix, boundaries, r"_r(\d+)", 0, "replicas",
                            skip=tuple(f"{prefix}_{lane}_" for lane in lanes), runs=True)
    return {boundary: found for boundary, found in names.items() if found}


def enable_copies(text: str, prefix: str, boundaries) -> dict[str, int]:
    """How many copies of its stage enable each registered boundary of a
    :class:`hw.pipeline.Pipeline` named ``prefix`` has (its ``enable_load``: the stage
    register loads in parts, one per copy, and each replica on copies of its own), read off
    the unit's RTLIL ``text``: the wires ``<prefix>_<boundary>_en<c>_advance`` besides
    ``..._en_advance``."""
    names = _numbered_wires(text, prefix, boundaries, r"_en(\d+)_advance", 1,
                            "enable copies")
    return {boundary: 1 + len(found) for boundary, found in names.items()}


def _numbered_wires(text: str, prefix: str, boundaries, suffix: str, first: int,
                    what: str, skip: tuple[str, ...] = (),
                    runs: bool = False) -> dict[str, list[str]]:
    """Per boundary, the names of the wires ``<prefix>_<boundary>`` + ``suffix`` (a pattern
    with one number group) of the RTLIL ``text``, numbered from ``first`` without a gap;
    with ``runs``, in the text's order, in runs each numbered so, a run after the first with
    Amaranth's suffix of a repeated name, ``$<n>``.  Any other such wire (except those
    starting with one of ``skip``) is an error."""
    repeat = r"(\$\d+)?" if runs else r"()"
    found = [(name, tag, int(n), again) for name, tag, n, again in
             re.findall(rf"^\s*wire .*\\(({re.escape(prefix)}_\w+){suffix}{repeat})$", text,
                        flags=re.MULTILINE)
             if not tag.startswith(skip)]
    if not runs:
        found.sort(key=lambda wire: wire[2])
    names = {}
    for boundary in boundaries:
        tag, numbers, names[boundary] = f"{prefix}_{boundary}", [], []
        for name, t, n, again in found:
            if t != tag:
                continue
            if n != (numbers[-1] + 1 if numbers else first) and not (numbers and n == first
                                                                      and again):
                break
            numbers.append(n)
            names[boundary].append(name)
    if sum(len(v) for v in names.values()) != len(found):
        raise ValueError(f"{what} of {prefix!r} outside the registered boundaries or not "
                         f"numbered from {first}: {sorted(name for name, *_ in found)}")
    return names


def pipeline_probes(sections: Mapping[str, float], stages: int, prefix: str,
                    *, scope: str = "", data: bool = False,
                    copies: Mapping[str, int] | None = None,
                    hold_when: bool = False,
                    replicas: Mapping[str, int | Sequence[str]] | None = None,
                    lanes=(None,),
                    lane_replicas: Mapping[str, int] | None = None) -> dict[str, list[str]]:
    """Names, in the flattened netlist, of the registers of a :class:`hw.pipeline.Pipeline`
    named ``prefix`` (as its ``name``) built in the module at ``scope`` (``"dut."``, or ``""``
    for the top module).

    Returns ``valid`` (one per registered stage, in datapath order), ``advance`` (the
    per-stage enable copies, and with ``copies`` (boundary -> number, :func:`enable_copies`)
    each stage's further copies after its first) and with ``hold_when`` ``hold`` (the one
    register saying whether the last stage's block waits); with ``data``, also ``data`` (each
    stage's data register), ``skid`` (the skid register after the last stage) and ``replicas``
    (with ``replicas``, boundary -> number, :func:`replicas`, the registers ``..._r<c>``, or
    boundary -> the registers' names, :func:`replica_names`: each boundary's replica
    registers, in order; their enables are the stage's enable copies after its own parts) and
    ``beside``: with several ``lanes`` (:attr:`FormalUnit.lanes`), the registers beside the
    boundary's, lane by lane: a named first lane's replicas, each other lane's register
    ``<prefix>_<lane>_<boundary>`` and its replicas ``..._r<c>`` (``lane_replicas``,
    boundary -> number, as many per lane), with ``beside_stages`` the boundary's register
    each stands beside; they load on the stage's enable copies after the first lane's own, in
    this order, and at the last boundary a lane's register has its skid register
    ``..._skid`` on the same copies.
    The names follow :class:`Pipeline`'s naming; a name that does not exist makes the Yosys
    script fail.
    """
    boundaries = registered_boundaries(sections, stages)
    tags = [f"{scope}{prefix}_{b}" for b in boundaries]
    copies = copies or {}
    probes = {"valid": [f"{t}_valid" for t in tags],
              "advance": [f"{t}_en{c or ''}_advance"
                          for b, t in zip(boundaries, tags, strict=True)
                          for c in range(copies.get(b, 1))]}
    if hold_when:
        probes["hold"] = [f"{scope}{prefix}_hold0"]
    if data:
        probes["data"] = tags
        probes["skid"] = [f"{tags[-1]}_skid"]
        given = replicas or {}
        probes["replicas"] = [
            name for b, t in zip(boundaries, tags, strict=True)
            for name in ([f"{t}_r{c}" for c in range(given.get(b, 0))]
                         if isinstance(given.get(b, 0), int)
                         else [f"{scope}{r}" for r in given[b]])]
        lane_regs = [(f"{scope}{prefix}_{lane}_{b}{r}", t)
                     for j, lane in enumerate(lanes) if lane is not None
                     for b, t in zip(boundaries, tags, strict=True)
                     for r in [""] * (j > 0)
                     + [f"_r{c}" for c in range((lane_replicas or {}).get(b, 0))]]
        probes["beside"] = [reg for reg, _ in lane_regs]
        probes["beside_stages"] = [t for _, t in lane_regs]
    return probes
