"""Throughput of the golden codec against the alternatives, measured in the same run.

Quantize and dequantize: fp32 input of 2^24 elements, every format, rne, one thread.
Alternatives: an ml_dtypes pipeline (amax with numpy, scale, clamp, cast with ml_dtypes),
torchao's ``to_mx`` where torch and torchao are installed, and a plain memory copy of the input
(the ceiling for any pass over the data).  Dot products: K = 4096, fp32 result per row.
Matrix products: ``golden.matmul`` at M = N = K = 1024 beside numpy's float32 matmul of the
dequantized operands; BLAS runs on one thread (``OPENBLAS_NUM_THREADS=1`` unless the caller
set it, before numpy loads), like every other figure here.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one thread, like the rest of the bench

import numpy as np  # noqa: E402

import golden  # noqa: E402

N = 1 << 24
K_DOT = 4096
ROWS_DOT = 2048
N_MATMUL = 1024


def best_time(fn, *args, repeat=3) -> float:
    """Best wall time of ``fn(*args)`` over ``repeat`` runs, after a warm-up call."""
    fn(*args)  # warm-up (compilation, page faults)
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t)
    return best


# -- the ml_dtypes pipeline: what a user would write without this project ----------------------
def mldtypes_quantize(x, fmt, k=32):
    xb = x.reshape(-1, k)
    amax = np.abs(xb).max(axis=1)
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(amax)) - fmt.emax
    e = np.clip(np.where(amax > 0, e, 0), -127, 127).astype(np.float32)
    q = xb * np.exp2(-e)[:, None]
    lim = np.float32(fmt.max_normal)
    q = np.clip(q, -lim, lim)
    if fmt.twos_complement:
        codes = np.rint(q * 64).astype(np.int8).view(np.uint8)
    else:
        codes = q.astype(fmt.ml_dtype).view(np.uint8)
    return (e + 127).astype(np.uint8), codes


def mldtypes_dequantize(scales, codes, fmt):
    if fmt.twos_complement:
        v = codes.view(np.int8).astype(np.float32) * np.float32(2.0**-6)
    else:
        v = codes.view(fmt.ml_dtype).astype(np.float32)
    return v * np.exp2(scales.astype(np.float32) - 127)[:, None]


def _torchao():
    try:
        import torch
        from torchao.prototype.mx_formats.mx_tensor import to_mx
    except Exception:  # noqa: BLE001 - any import problem means "not available"
        return None
    torch.set_num_threads(1)
    dtypes = {
        "fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2,
        "fp4_e2m1": getattr(torch, "float4_e2m1fn_x2", None),
    }
    try:
        from torchao.prototype.mx_formats.constants import DTYPE_FP6_E2M3, DTYPE_FP6_E3M2

        dtypes["fp6_e3m2"], dtypes["fp6_e2m3"] = DTYPE_FP6_E3M2, DTYPE_FP6_E2M3
    except Exception:  # noqa: BLE001
        pass
    return torch, to_mx, dtypes


def run(log=print) -> dict:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(N) * np.exp2(rng.integers(-8, 8, N))).astype(np.float32)
    rows = []
    ta = _torchao()
    if ta is None:
        log("torchao not installed: its column is left out (pip install torch torchao to add it)")
    for name, fmt in golden.FORMATS.items():
        copy_s = best_time(x.copy)  # beside each format's figures: the ratio's own reference
        t_q = best_time(golden.quantize, x, fmt)
        mx = golden.quantize(x, fmt)
        t_dq = best_time(golden.dequantize, mx)
        t_mq = best_time(mldtypes_quantize, x, fmt)
        s, c = mldtypes_quantize(x, fmt)
        t_mdq = best_time(mldtypes_dequantize, s, c, fmt)
        row = {"format": name, "golden_q": N / t_q, "golden_dq": N / t_dq,
               "mldtypes_q": N / t_mq, "mldtypes_dq": N / t_mdq, "copy": N / copy_s,
               "torchao_q": None}
        if ta is not None and ta[2].get(name) is not None:
            torch, to_mx, dts = ta
            xt = torch.from_numpy(x)
            try:
                row["torchao_q"] = N / best_time(to_mx, xt, dts[name], 32)
            except Exception as e:  # noqa: BLE001
                log(f"torchao to_mx({name}) failed: {e}")
        rows.append(row)
        log(f"{name:9s} quantize {row['golden_q'] / 1e6:7.1f} M/s (ml_dtypes "
            f"{row['mldtypes_q'] / 1e6:6.1f}"
            + (f", torchao {row['torchao_q'] / 1e6:6.1f}" if row["torchao_q"] else "")
            + f")  dequantize {row['golden_dq'] / 1e6:7.1f} M/s (ml_dtypes "
            f"{row['mldtypes_dq'] / 1e6:6.1f})")
    dots = []
    for fa, fb in (("fp8_e4m3", "fp8_e4m3"), ("fp8_e5m2", "fp8_e5m2"), ("fp4_e2m1", "fp4_e2m1"),
                   ("int8", "int8"), ("fp8_e4m3", "fp4_e2m1")):
        a = golden.quantize(rng.standard_normal((ROWS_DOT, K_DOT)).astype(np.float32), fa)
        b = golden.quantize(rng.standard_normal((ROWS_DOT, K_DOT)).astype(np.float32), fb)
        t = best_time(golden.dot, a, b)
        # Alternative: dequantize with ml_dtypes and a float64 numpy dot (not bit-exact to the
        # contract: no per-block fp32 rounding; a speed reference only).
        da = golden.dequantize(a).astype(np.float64)
        db = golden.dequantize(b).astype(np.float64)
        t_np = best_time(np.einsum, "ij,ij->i", da, db)
        dots.append({"pair": f"{fa} x {fb}", "golden": ROWS_DOT / t,
                     "numpy_f64": ROWS_DOT / t_np})
        log(f"dot {fa} x {fb}: {ROWS_DOT / t:9.0f} dots/s (K={K_DOT}); numpy float64 "
            f"einsum on dequantized data {ROWS_DOT / t_np:9.0f}/s")
    return {"elements": N, "rows": rows, "dots": dots, "k_dot": K_DOT,
            "matmuls": matmul_rows(rng, log), "n_matmul": N_MATMUL,
            "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default")}


def matmul_rows(rng, log) -> list:
    """golden.matmul at N_MATMUL^3 per OCP format, beside numpy's float32 matmul of the
    dequantized operands (not bit-exact: one rounding per BLAS partial sum, not per block);
    best of interleaved runs."""
    n = N_MATMUL
    out = []
    for name in golden.FORMATS:
        a = golden.quantize(rng.standard_normal((n, n)).astype(np.float32), name)
        b = golden.quantize(rng.standard_normal((n, n)).astype(np.float32), name, axis=0)
        da, db = golden.dequantize(a), golden.dequantize(b)
        path = golden.matmul_path(a.fmt, b.fmt, a.block_size)
        golden.matmul(a, b)  # warm-up (compilation)
        t, t_np = float("inf"), float("inf")
        for _ in range(5 if path == "blas" else 2):  # interleaved: both see the same load
            t0 = time.perf_counter()
            np.matmul(da, db)
            t1 = time.perf_counter()
            golden.matmul(a, b)
            t_np, t = min(t_np, t1 - t0), min(t, time.perf_counter() - t1)
        out.append({"format": name, "path": path, "golden": t, "numpy_f32": t_np})
        log(f"matmul {name} {n}^3 ({path} path): golden {t * 1e3:8.1f} ms, numpy float32 "
            f"{t_np * 1e3:6.1f} ms, ratio {t_np / t:.2f}x")
    return out


def markdown(res) -> str:
    def m(v):
        return "n/a" if v is None else f"{v / 1e6:,.0f}"

    lines = [
        f"### Golden codec (fp32 input, {res['elements']:,} elements, rne, one thread; "
        "M elements/s)", "",
        "*memcpy* copies the fp32 input (`x.copy()`, measured beside each row): the ceiling of "
        "any pass over the data. Targets: quantize >= 0.30x memcpy, dequantize (whose output "
        "is that fp32 array) >= 0.50x.", "",
        "| format | golden quantize | ml_dtypes pipeline | torchao `to_mx` | golden / best alt. "
        "| golden dequantize | ml_dtypes dequantize | memcpy | quantize / memcpy "
        "| dequantize / memcpy |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in res["rows"]:
        alts = [v for v in (r["mldtypes_q"], r["torchao_q"]) if v]
        lines.append(
            f"| {r['format']} | {m(r['golden_q'])} | {m(r['mldtypes_q'])} | {m(r['torchao_q'])} "
            f"| {r['golden_q'] / max(alts):.1f}x | {m(r['golden_dq'])} | {m(r['mldtypes_dq'])} "
            f"| {m(r['copy'])} | {r['golden_q'] / r['copy']:.2f}x "
            f"| {r['golden_dq'] / r['copy']:.2f}x |")
    lines += ["", f"### Golden dot product (K = {res['k_dot']}, one fp32 result per row)", "",
              "| formats | golden (bit-exact) dots/s | numpy float64 einsum on dequantized data "
              "(not bit-exact) |", "|---|---:|---:|"]
    for d in res["dots"]:
        lines.append(f"| {d['pair']} | {d['golden']:,.0f} | {d['numpy_f64']:,.0f} |")
    n = res["n_matmul"]
    lines += ["", f"### Golden matrix product (M = N = K = {n}, block size 32, fp32 result; "
              f"BLAS threads: {res['blas_threads']})", "",
              "`golden.matmul` (bit-exact: one fp32 rounding per block pair, in K order) beside "
              "numpy's float32 matmul of the dequantized operands (not bit-exact), measured "
              "alongside. Target: fp8_e4m3 >= 0.20x numpy. Paths: `blas` (exact float64 block "
              "sums by BLAS), `blas-split` (operands split in two exact parts, four BLAS products "
              "per block); see `golden.matmul_path`.", "",
              "| format | path | golden ms | numpy float32 ms | golden / numpy |",
              "|---|---|---:|---:|---:|"]
    for r in res["matmuls"]:
        lines.append(f"| {r['format']} | {r['path']} | {r['golden'] * 1e3:,.1f} "
                     f"| {r['numpy_f32'] * 1e3:,.1f} | {r['numpy_f32'] / r['golden']:.2f}x |")
    return "\n".join(lines) + "\n"
