"""Verilator simulation speed with no Python in the loop, fed from golden's vector files.

For each unit in :data:`UNITS`: ``python -m golden vectors`` writes inputs and expected outputs
(the files any user gets); the unit's JSON sidecar maps those fields onto its input payload;
the stand-alone bulk top of :mod:`tb.bulk` (``verilator --binary -DMX_BULK_MAIN``) streams them
through the RTL at full speed and dumps the outputs, which are compared with the expected files
bit for bit. So this both measures the simulator and proves the vector files work.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np

from golden import vectors
from tb.bulk import VERILATOR_ARGS, prepare_unit
from tb.report import SUMMARY_ENV, read_summary
from tb.runner import BUILD, run_cocotb, verilator_env
from tb.stream import BitLayout

from . import perfdoc

OUT = perfdoc.ROOT / "build" / "bench"
COUNT = 1 << 16  # the bulk wrapper's memory depth
BARE_RUNS = 5  # runs of the bare binary; the table shows the median
K = 32

#: (label, unit for hw, its CLI args, unit for golden vectors, its keyword arguments)
UNITS = (
    ("quantizer fp32 -> fp8_e4m3", "quantizer", ["--format", "fp8_e4m3", "--input", "fp32"],
     "quantizer", {"fmt": "fp8_e4m3", "input_format": "fp32"}),
    ("quantizer bf16 -> fp4_e2m1", "quantizer", ["--format", "fp4_e2m1", "--input", "bf16"],
     "quantizer", {"fmt": "fp4_e2m1", "input_format": "bf16"}),
    ("dequantizer fp8_e4m3 -> fp32", "dequantizer", ["--format", "fp8_e4m3"],
     "dequantizer", {"fmt": "fp8_e4m3"}),
    ("dot fp8_e4m3 x fp8_e4m3", "dot", ["--format", "fp8_e4m3"], "dot", {"fmt": "fp8_e4m3"}),
)

#: Vector field name (without in_/expected_) -> payload field name where they differ.
FIELD_NAMES = {"scale_a": "a.scale", "codes_a": "a.codes", "scale_b": "b.scale",
               "codes_b": "b.codes"}


def _payload(layout: BitLayout, vec_dir: Path, role: str, n: int) -> dict:
    prefix = "in_" if role == "input" else "expected_"
    files = sorted(p.stem for p in vec_dir.glob(f"{prefix}*.hex"))
    out = {}
    for stem in files:
        name = stem[len(prefix):]
        name = FIELD_NAMES.get(name, name)
        if name not in layout.fields:
            raise KeyError(f"vector field {stem} has no payload field {name!r} "
                           f"(payload fields: {', '.join(layout.fields)})")
        v = vectors.read_field(vec_dir, stem)
        out[name] = v if layout.fields[name].get("array") else v[:, 0]
    assert all(len(v) == n for v in out.values())
    return out


def run_one(label, unit, argv, vunit, vkw, log=print) -> dict:
    d = OUT / unit / "_".join(argv).replace("-", "")
    sources, top, sidecar_path = prepare_unit(unit, [*argv, "--block-size", str(K)], d)
    meta = json.loads(sidecar_path.read_text())
    exe = verilator_env()
    obj = d / "obj_dir"
    main_top = f"{top}_main"
    t0 = time.perf_counter()
    # the whole compile, as on a first build: without ccache (verilator_env's OBJCACHE)
    subprocess.run([exe, "--binary", "-O3", "-Wno-fatal", *VERILATOR_ARGS, "-DMX_BULK_MAIN",
                    "--top-module", main_top, "-Mdir", str(obj), "-o", main_top,
                    *map(str, sources)], check=True, capture_output=True, text=True,
                   env={**os.environ, "OBJCACHE": ""})
    build_s = time.perf_counter() - t0
    vec = vectors.generate(vunit, d / "vectors", count=COUNT, seed=1, block_size=K, **vkw)
    in_l = BitLayout.from_sidecar(meta, "i.payload")
    out_l = BitLayout.from_sidecar(meta, "o.payload")
    (d / "stim.bin").write_bytes(in_l.to_bin(in_l.pack(COUNT, **_payload(in_l, vec, "input",
                                                                        COUNT))))
    out_file = d / "out.bin"
    out_file.unlink(missing_ok=True)
    times = []
    for _ in range(BARE_RUNS):  # the median of a few runs: one short run is at the mercy of load
        out_file.unlink(missing_ok=True)
        t0 = time.perf_counter()
        r = subprocess.run([str(obj / main_top), f"+stim={d / 'stim.bin'}", f"+out={out_file}",
                            f"+n={COUNT}", "+idle=0", "+stall=0"], capture_output=True,
                           text=True, cwd=d, check=True)
        times.append(time.perf_counter() - t0)
    run_s = float(np.median(times))
    got = out_l.unpack(out_l.from_bin(out_file.read_bytes()))
    want = _payload(out_l, vec, "expected", COUNT)
    mismatches = 0
    for name, w in want.items():
        g = got[name]
        if w.ndim == 2:
            mismatches += int(np.any(g != w, axis=1).sum())
        else:
            mismatches += int((g != w).sum())
    lanes = K
    res = {"label": label, "blocks": COUNT, "elements": COUNT * lanes,
           "build_s": round(build_s, 1), "run_s": round(run_s, 3),
           "blocks_per_s": COUNT / run_s, "mismatches": mismatches,
           "sim_log": r.stdout.strip().splitlines()[-1:]}
    log(f"{label}: {COUNT} blocks in {run_s:.2f} s ({COUNT / run_s:,.0f} blocks/s, "
        f"{COUNT * lanes / run_s / 1e6:.1f} M elements/s), {mismatches} mismatches vs "
        f"golden's vector files; build {build_s:.0f} s")
    if mismatches:
        raise AssertionError(f"{label}: {mismatches} blocks differ from the golden vectors")
    return res


#: The cocotb testbench module of each unit (the checking rates run every unit of UNITS).
TB_MODULES = {"quantizer": "tb.quantizer", "dequantizer": "tb.dequantizer", "dot": "tb.dot"}
TB_BLOCKS = 10000  # stream-mode blocks per run; bulk random runs use 20x
#: Random blocks of the full-stream checking-rate set (MX_RATE_BLOCKS): 16 wrapper loads, so
#: that filling the host pipeline (the first batch) weighs little.
RATE_BLOCKS = 16 * COUNT


def run_tb(label, unit, argv, log=print) -> dict:
    """The unit's whole cocotb testbench at k = 32, then :data:`RATE_BLOCKS` random blocks
    with the stream full; returns its stream, bulk and rate rows."""
    from tb.standard_tests import RATE_BLOCKS_ENV

    module = TB_MODULES[unit]
    name = "bench_" + "_".join([unit, *argv]).replace("-", "")
    sources, top, sidecar = prepare_unit(unit, [*argv, "--block-size", str(K)],
                                         BUILD / name / "rtl")
    summary = BUILD / name / "summary.jsonl"
    summary.unlink(missing_ok=True)
    t0 = time.perf_counter()
    run_cocotb(sources=sources, toplevel=top, test_module=module, name=name, seed=1,
               build_args=VERILATOR_ARGS,
               extra_env={"MX_SIDECAR": sidecar, "MX_CONFIG": label, "MX_BLOCKS": TB_BLOCKS,
                          "MX_SEED": 1, RATE_BLOCKS_ENV: RATE_BLOCKS, SUMMARY_ENV: summary})
    rows = {}
    for r in read_summary(summary):
        mode = r["config"].rsplit("[", 1)[-1].rstrip("]")
        if mode in ("stream", "bulk", "rate"):
            rows[mode] = r
    res = {"label": label, "seconds": round(time.perf_counter() - t0, 1), **rows}
    log(f"{label}: stream {rows['stream']['checked_per_s']:,} elements/s, bulk "
        f"{rows['bulk']['checked_per_s']:,} elements/s ({rows['bulk']['elements']:,} elements, "
        f"{rows['bulk']['mismatches']} mismatches), full stream "
        f"{rows['rate']['checked_per_s']:,} elements/s")
    return res


def run(log=print) -> dict:
    return {"rows": [run_one(*u, log=log) for u in UNITS],
            "tb": [run_tb(label, unit, argv, log=log) for label, unit, argv, *_ in UNITS]}


def markdown(res) -> str:
    lines = [
        "### Verilator simulation speed (no Python in the loop)", "",
        f"`verilator --binary` on the stand-alone bulk top of `tb/bulk/`, k = {K}, "
        f"{COUNT:,} blocks per unit from `python -m golden vectors` (random and corner cases), "
        "valid held high and ready never stalled, outputs compared bit for bit with the "
        "vector files' expected values. Time is the whole simulator process (file I/O "
        f"included), the median of {BARE_RUNS} runs.", "",
        "| unit | blocks/s | M elements/s | mismatches | Verilator build s (0 if cached) |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in res["rows"]:
        lines.append(f"| {r['label']} | {r['blocks_per_s']:,.0f} | "
                     f"{r['elements'] / r['run_s'] / 1e6:.1f} | {r['mismatches']} | "
                     f"{r['build_s']} |")
    lines += [
        "", "### Testbench checking rate (cocotb on Verilator, bit for bit against golden)", "",
        f"Each unit of the table above, same configuration, through its whole cocotb testbench "
        f"(`BLOCKS={TB_BLOCKS}`, seed 1, no coverage sampling). Elements checked per second of "
        "wall time, stimulus generation, golden, file I/O and simulation included. *Stream*: "
        "one block per clock driven from Python, with idle and backpressure patterns. *Bulk*: "
        "the bulk test's sets (random gaps and backpressure on most) loaded beside the unit "
        "and run self-clocked (`tb/bulk/`). *Full stream*: "
        f"{RATE_BLOCKS:,} random blocks with the stream kept full (`MX_RATE_BLOCKS`), the "
        "traffic of the bare Verilator run; *testbench / bare* divides it by that run's "
        "rate (target: at least 80 %). `make sim` prints the same figures for every "
        "configuration (`checked_per_s`).", "",
        "| unit | stream elements/s | bulk elements/s | full stream elements/s | bare Verilator "
        "elements/s | testbench / bare | elements checked | mismatches |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    bare = {r["label"]: r["elements"] / r["run_s"] for r in res["rows"]}
    for r in res.get("tb", []):
        st, bu, ra = r["stream"], r["bulk"], r["rate"]
        b = bare.get(r["label"])
        ratio = f"{ra['checked_per_s'] / b:.0%}" if b else "-"
        lines.append(f"| {r['label']} | {st['checked_per_s']:,} | {bu['checked_per_s']:,} | "
                     f"{ra['checked_per_s']:,} | {f'{b:,.0f}' if b else '-'} | {ratio} | "
                     f"{st['elements'] + bu['elements'] + ra['elements']:,} | "
                     f"{st['mismatches'] + bu['mismatches'] + ra['mismatches']} |")
    return "\n".join(lines) + "\n"
