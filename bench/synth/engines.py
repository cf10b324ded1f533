"""The GEMM tiles beside the published MX matrix engines: throughput (2 x MACs per clock x
Fmax) and throughput per 1,000 LUTs, the measure issue #51 sets its target in (>= 2 GFLOPS
per 1,000 LUT4 on ECP5).

The tiles' rows are this project's stored results (:data:`bench.synth.configs.CONFIGS`); the
engines' rows are their authors' published figures, not measured here, on other devices
(an UltraScale+ LUT has six inputs, an ECP5 LUT four) or in silicon (no LUTs at all): a
scale to read the tiles against, not a ranking.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Engine", "ENGINES", "TARGET_GFLOPS_PER_KLUT", "engines_md"]

#: Issue #51's bar for a tile: GFLOPS per 1,000 ECP5 LUT4 at the placed Fmax.
TARGET_GFLOPS_PER_KLUT = 2.0


@dataclass(frozen=True)
class Engine:
    """A published MX matrix engine, in its authors' figures.

    Members
    -------
    name, source : str
        The design and where its figures are published.
    platform : str
        Device or process.
    macs : int
        Multiply-accumulates per clock at peak.
    mhz : float
        Its clock.
    luts : int or None
        LUTs of the device's own kind (None: an ASIC).
    note : str
        What else the source states that the columns cannot.
    """

    name: str
    source: str
    platform: str
    macs: int
    mhz: float
    luts: int | None = None
    note: str = ""

    @property
    def gflops(self) -> float:
        return 2 * self.macs * self.mhz / 1000


ENGINES = (
    Engine("Ten-Four (one Vortex tensor core)", "Rout and Tine, arXiv 2512.00053 v2",
           "AMD Alveo U55C (LUT6)", 256, 262.3, 188_077,
           "134.3 GFLOPS published; FP8/BF8/INT8/INT4 and MX inputs, FP32 accumulation"),
    Engine("MXDOTP cluster (8 Snitch cores)", "İslamoğlu et al., ASAP 2025, arXiv 2505.13159",
           "12 nm FinFET", 64, 1000.0, None,
           "8 MXFP8 products per core per clock; up to 80 % utilization, 356 GFLOPS/W"),
    Engine("MXCore", "İslamoğlu, Jonnalagadda et al., ISVLSI 2026; pulp-platform/MXCore",
           "ASIC", 1024, 0.0, None,
           "1,024-MAC configurations (VectorSize x NPE) with an FP32 -> MXFP8 result "
           "quantizer; clock and area not stated in its repository"),
)


def _tile_macs(r: dict) -> int:
    p = r["parameters"]
    return p["rows"] * p["cols"] * p["block_size"]


def _tile_row(r: dict) -> str:
    p, e = r["parameters"], r["ecp5"]
    macs = _tile_macs(r)
    name = (f"MXGemm {p['rows']} x {p['cols']} {p['format_a']}, MX out "
            f"(latency {r['latency']})")
    area = (f"{e['LUT4']:,} LUT4 + {e['CCU2C']:,} CCU2C, {e['FF']:,} FF"
            + (f", {e['TRELLIS_DPR16X4']:,} DPR16X4" if e.get("TRELLIS_DPR16X4") else ""))
    mem = f"{e.get('MULT18X18D', 0)} / {e.get('DP16KD', 0)}"
    fmax = e.get("fmax_mhz")
    if fmax is None:
        at200 = 2 * macs * 200 / 1000 / (e["LUT4"] / 1000)
        return (f"| {name} | ECP5-85F | {macs:,} | not placed | | {area} | {mem} | | "
                f"{at200:.1f} per 1,000 LUT4 if placed at 200 MHz |")
    gflops = 2 * macs * fmax / 1000
    per = gflops / (e["LUT4"] / 1000)
    met = "" if per >= TARGET_GFLOPS_PER_KLUT else " (**below 2**)"
    seeds = len(e.get("placements", {})) or 1
    return (f"| {name} | ECP5-85F | {macs:,} | {fmax:g} ({seeds} seed{'s' * (seeds > 1)}) | "
            f"{gflops:.1f} | {area} | {mem} | {per:.2f}{met} | |")


def _engine_row(g: Engine) -> str:
    clock = f"{g.mhz:g}" if g.mhz else "not stated"
    gflops = f"{g.gflops:.1f}" if g.mhz else ""
    luts = f"{g.luts:,} LUT" if g.luts else "(ASIC)"
    per = f"{g.gflops / (g.luts / 1000):.2f}" if g.luts and g.mhz else ""
    return (f"| {g.name} | {g.platform} | {g.macs:,} | {clock} | {gflops} | {luts} | | {per} "
            f"| {g.note}; {g.source} |")


def engines_md(results: list[dict]) -> list[str]:
    """The tiles of ``results`` (the stored results of ``gemm`` configurations) and
    :data:`ENGINES` as a table, with the sentence that says how to read it."""
    tiles = [r for r in results if r.get("unit") == "gemm" and "ecp5" in r]
    lines = [
        "#### GEMM tiles beside the published MX matrix engines", "",
        "GFLOPS = 2 x MACs per clock x Fmax. The tiles: this flow (LUT4 excludes the carry "
        "cells, CCU2C, and the distributed RAM's LUTs, DPR16X4); target >= "
        f"{TARGET_GFLOPS_PER_KLUT:g} GFLOPS per 1,000 LUT4 at the placed Fmax. The engines: "
        "their authors' figures, on other devices or in silicon (not measured here; an "
        "UltraScale+ LUT has six inputs).", "",
        "| design | device | MACs / clock | Fmax MHz | GFLOPS | area | DSP / EBR "
        "| GFLOPS per 1,000 LUT | notes |",
        "|---|---|---:|---:|---:|---|---|---:|---|",
    ]
    lines += [_tile_row(r) for r in tiles] + [_engine_row(g) for g in ENGINES]
    return lines + [""]
