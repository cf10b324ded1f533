"""Golden beside the seeds (torchao, torchmx, AMD Quark, pychop) on the same input, in one run.

Every seed quantizes the same bf16-exact fp32 array (torchmx takes bf16 only; the values are
the same), block size 32, blocks along the last axis, one thread.  Each seed runs every format
in one worker process (``python -m bench.seeds_bench --worker SEED IN OUTDIR``): a seed missing,
failing or pinning other versions of torch/torchao than the others gives "n/a" and its reason, and a
seed can run in its own environment: ``BENCH_PYTHON_<SEED>=/path/to/python`` (for example
torchmx, which pins torchao 0.6.1 while Quark needs a newer one).  The worker writes the seed's
dequantized values (fp32); the agreement is against ``golden.fake_quantize`` with the golden
options that reproduce that seed (docs/numerics.md, "Known differences from the seeds").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ("torchao", "torchmx", "quark", "pychop")
FORMATS = ("fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1", "int8")
N = 1 << 22
#: pychop quantizes element by element in Python (about 0.1 M elements/s): a prefix of the input.
N_SLOW = {"pychop": 1 << 18}
#: The seed's call, as the table shows it.
CALLS = {
    "torchao": "MXTensor.to_mx(x, dtype, 32)",
    "torchmx": "MXTensor.to_mx(x_bf16, dtype, 32)",
    "quark": 'fake_quantize_mx(x, -1, 32, scale_calculation_mode="floor")',
    "pychop": 'mx_quantize(x, "mx" + fmt, 32, backend="numpy")',
}
#: golden.fake_quantize options that reproduce each seed (beyond the defaults).
GOLDEN_OPTIONS = {"pychop": {"int8": {"int8_range": "asymmetric"}}}
TIMEOUT_S = 900


def make_input(n: int) -> np.ndarray:
    """Normal values over 16 binades, rounded to bf16 (exact in fp32), with a few zeros; every
    fifth block of 32 starts with -1.9921875 * 2^j, its largest magnitude, which int8 rounds
    to -128 (the code only pychop's and Quark's [-128, 127] range keeps)."""
    import ml_dtypes

    rng = np.random.default_rng(0)
    x = rng.standard_normal(n) * np.exp2(rng.integers(-8, 8, n))
    x[::97] = 0.0
    x = np.clip(x, -300.0, 300.0)
    edge = np.arange(0, n, 32 * 5)
    x[edge] = -1.9921875 * np.exp2(rng.integers(9, 12, edge.size))
    return x.astype(ml_dtypes.bfloat16).astype(np.float32)


# -- worker side: numpy and the seed only ----------------------------------------------------------
def _seed_call(seed: str, fmt: str):
    """(quantize, dequantize-to-fp32-numpy) for one seed and format; raises if unsupported."""
    import torch

    torch.set_num_threads(1)
    if seed == "torchao":
        from torchao.prototype.mx_formats.mx_tensor import MXTensor

        dt = {"fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2,
              "fp4_e2m1": getattr(torch, "float4_e2m1fn_x2", None)}.get(fmt)
        if dt is None:
            raise LookupError(f"torchao's MXTensor has no {fmt}")
        return (lambda x: MXTensor.to_mx(torch.from_numpy(x), dt, 32),
                lambda m: m.dequantize(torch.float32).numpy())
    if seed == "torchmx":
        from torchmx import dtypes
        from torchmx.mx_tensor import MXTensor

        name = {"fp8_e4m3": "float8_e4m3", "fp6_e3m2": "float6_e3m2",
                "fp6_e2m3": "float6_e2m3", "fp4_e2m1": "float4_e2m1", "int8": "int8"}.get(fmt)
        if name is None or not hasattr(dtypes, name):
            raise LookupError(f"torchmx has no {fmt}")
        dt = getattr(dtypes, name)
        return (lambda x: MXTensor.to_mx(torch.from_numpy(x).to(torch.bfloat16), dt, 32),
                lambda m: m.to_dtype(torch.float32).numpy())
    if seed == "quark":
        from quark.torch.kernel.hw_emulation.hw_emulation_interface import fake_quantize_mx

        dt = {"fp4_e2m1": "fp4"}.get(fmt, fmt)
        return (lambda x: fake_quantize_mx(torch.from_numpy(x).reshape(1, -1), axis=-1,
                                           block_size=32, scale_calculation_mode="floor",
                                           mx_element_dtype=dt),
                lambda m: m.reshape(-1).numpy())
    if seed == "pychop":
        from pychop.mx_formats import mx_quantize

        return (lambda x: mx_quantize(x, format="mx" + fmt, block_size=32, backend="numpy"),
                lambda m: np.asarray(m, np.float32))
    raise ValueError(f"unknown seed {seed!r}")


def _version(seed: str) -> str:
    dist = {"quark": "amd-quark"}.get(seed, seed)
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"


def worker(seed: str, src: str, outdir: str) -> dict:
    """Run one seed on the saved input, every format: {fmt: its result} (see :func:`_one`)."""
    x = np.load(src)
    return {fmt: _one(seed, fmt, x, f"{outdir}/{seed}-{fmt}.npy") for fmt in FORMATS}


def _one(seed, fmt, x, dst) -> dict:
    """The seed's best time of 3 (1 for slow seeds) and its values in ``dst``, or the error."""
    try:
        quantize, to_f32 = _seed_call(seed, fmt)
        m = quantize(x)  # warm-up: imports, compilation
        best = float("inf")
        for _ in range(1 if seed in N_SLOW else 3):
            t = time.perf_counter()
            m = quantize(x)
            best = min(best, time.perf_counter() - t)
        np.save(dst, np.ascontiguousarray(to_f32(m), np.float32).reshape(-1))
    except Exception as e:  # noqa: BLE001 - any failure of a seed is reported, not raised
        message = str(e).splitlines()[0][:160] if str(e) else ""
        return {"error": f"{type(e).__name__}: {message}", "version": _version(seed)}
    return {"seconds": best, "version": _version(seed)}


# -- parent side --------------------------------------------------------------------------------
def _run_worker(seed, src, outdir) -> dict:
    """{fmt: result} from one worker process (every format an error if the worker fails)."""
    py = os.environ.get(f"BENCH_PYTHON_{seed.upper()}", sys.executable)
    try:
        r = subprocess.run([py, "-m", "bench.seeds_bench", "--worker", seed, src, outdir],
                           cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S)
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
        if r.returncode == 0 and lines:
            return json.loads(lines[-1])
        error = f"worker exit {r.returncode}: " + (r.stderr.strip().splitlines() or ["-"])[-1]
    except (OSError, subprocess.TimeoutExpired) as e:
        error = f"{type(e).__name__}: {e}"
    return {fmt: {"error": error[:160]} for fmt in FORMATS}


def agreement(got: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    """(bit-identical share, equal-value share): NaN matches NaN; the second counts -0 == +0."""
    nan = np.isnan(got) & np.isnan(want)
    bits = (got.view(np.uint32) == want.view(np.uint32)) | nan
    return float(bits.mean()), float(((got == want) | nan).mean())


def run(log=print) -> dict:
    import golden

    x = make_input(N)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for seed in SEEDS:
            n = N_SLOW.get(seed, N)
            np.save(f"{tmp}/{seed}-x.npy", x[:n])
            log(f"{seed}: worker running")
            results[seed] = _run_worker(seed, f"{tmp}/{seed}-x.npy", tmp)
        for fmt in FORMATS:
            g_q = _best(golden.quantize, x, fmt)
            g_fq = _best(golden.fake_quantize, x, fmt)
            for seed in SEEDS:
                n, dst = N_SLOW.get(seed, N), f"{tmp}/{seed}-{fmt}.npy"
                res = results[seed][fmt]
                opts = GOLDEN_OPTIONS.get(seed, {}).get(fmt, {})
                row = {"seed": seed, "format": fmt, "elements": n, "options": opts,
                       "golden_q": N / g_q, "golden_fq": N / g_fq, **res}
                if "error" not in res:
                    got = np.load(dst)
                    want = golden.fake_quantize(x[:n], fmt, **opts)
                    row["bits"], row["values"] = agreement(got, want)
                    row["defaults"] = agreement(got, golden.fake_quantize(x[:n], fmt))[1]
                    row["rate"] = n / res["seconds"]
                rows.append(row)
                log(f"{seed:8s} {fmt:9s} " + (f"n/a ({res['error']})" if "error" in res else
                    f"{row['rate'] / 1e6:8.2f} M/s, golden {row['golden_q'] / 1e6:7.1f} M/s; "
                    f"bit-identical {row['bits']:.4%}, equal values {row['values']:.4%}"))
    return {"elements": N, "rows": rows}


def _best(fn, *args) -> float:
    fn(*args)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t)
    return best


def markdown(res) -> str:
    lines = [
        "### Golden beside the seeds (the same bf16-exact fp32 input, k = 32, one thread; "
        "M elements/s)", "",
        f"Each seed quantizes {res['elements']:,} elements (pychop, which loops in Python: the "
        f"first {N_SLOW['pychop']:,}) in its own worker process; *agreement* compares its "
        "dequantized fp32 values with `golden.fake_quantize` on the same elements (with the "
        "golden options shown). *bit-identical* counts equal fp32 bit patterns (NaN = NaN); "
        "*equal values* also counts -0 = +0; the last column compares with golden's OCP "
        "defaults instead. Differences are explained in docs/numerics.md, "
        '"Known differences from the seeds".', "",
        "| seed (version) | format | seed's call | seed M/s | golden quantize M/s "
        "| golden fake_quantize M/s | golden options | bit-identical | equal values "
        "| equal values, golden defaults |",
        "|---|---|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for r in res["rows"]:
        opts = ", ".join(f'{k}="{v}"' for k, v in r["options"].items()) or "defaults"
        head = f"| {r['seed']} ({r.get('version', 'n/a')}) | {r['format']} | `{CALLS[r['seed']]}`"
        g = f"| {r['golden_q'] / 1e6:,.0f} | {r['golden_fq'] / 1e6:,.0f}"
        if "error" in r:
            lines.append(f"{head} | n/a {g} | {opts} | n/a ({r['error']}) | n/a | n/a |")
        else:
            bit = "**bit-exact**" if r["bits"] == 1.0 else f"{r['bits']:.2%}"
            lines.append(f"{head} | {r['rate'] / 1e6:,.2f} {g} | {opts} | {bit} "
                         f"| {r['values']:.2%} | {r['defaults']:.2%} |")
    return "\n".join(lines) + "\n"


def _main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.seeds_bench", description=__doc__)
    p.add_argument("--worker", nargs=3, metavar=("SEED", "IN", "OUTDIR"),
                   help="run one seed (internal: the bench starts these)")
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(*args.worker)), flush=True)
        return 0
    print(markdown(run()))
    return 0


if __name__ == "__main__":
    sys.exit(_main())
