"""The digits network's first layer through the RTL GEMM tile, bit for bit against
:func:`golden.matmul`.

The layer is 64 inputs -> 64 outputs: ``x @ w1 + b1`` with the images ``x`` quantized along
their pixels (K) and ``w1`` along its inputs (K), MX blocks of 32 in ``fmt`` (fp8_e4m3 by
default), and the bias as every output's fp32 accumulator start (``c0`` of
:class:`hw.gemm.MXGemm`, ``acc`` of :func:`golden.matmul`).  A small tile
(:data:`TILE`: 2 x 2 lanes, k = 32) computes it in cocotb/Verilator simulation
(:mod:`examples.digits.rtl_bench`, on the project's bench machinery: :mod:`tb.gemm`'s runs
and :class:`tb.bulk.BulkRunner`): the images x outputs are cut into 2 x 2 output tiles, one
run of K = 2 blocks each, the runs interleaved over the tile's contexts.  The tile's output
is fp32: its MX output quantizes each row's C = 2 results as one block, not the layer's
blocks of 32 along N, so the layer's MX output is not the tile's to make.  Every fp32
output is compared bit for bit with ``golden.matmul`` of the whole layer's operands.

Run it from the project root (it builds the tile with Verilator under ``build/sim``)::

    .venv/bin/python -m examples.digits.rtl_layer [--images 450]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import golden

__all__ = ["TILE", "LAYER_ENV", "LayerResult", "layer_operands", "tile_runs", "run_layer",
           "main"]

#: The tile that runs the layer: ``python -m hw generate gemm`` options.
TILE = ["--format", "fp8_e4m3", "--rows", "2", "--cols", "2", "--block-size", "32"]
#: The environment variable naming the operands file the cocotb module reads.
LAYER_ENV = "DIGITS_LAYER"
BLOCK = 32


@dataclass(frozen=True)
class LayerResult:
    """The layer run through the tile: its fp32 outputs (images x 64), golden's, the count
    of outputs whose bits differ, and the beats and clock cycles the tile took."""

    got: np.ndarray
    expected: np.ndarray
    mismatches: int
    beats: int
    cycles: int


def layer_operands(net, images: np.ndarray, fmt: str = "fp8_e4m3"):
    """``(x, w, acc)``: the images as an MXArray blocked along K (axis -1), the first layer's
    weights blocked along K (axis 0), blocks of 32 in ``fmt``, and the bias as fp32
    accumulator starts (images x outputs)."""
    x = golden.quantize(np.asarray(images, np.float32), fmt, block_size=BLOCK, axis=-1)
    w = golden.quantize(net.w1, fmt, block_size=BLOCK, axis=0)
    acc = np.ascontiguousarray(np.broadcast_to(net.b1.astype(np.float32),
                                               (len(images), net.b1.size)))
    return x, w, acc


def tile_runs(model, x: golden.MXArray, w: golden.MXArray, acc: np.ndarray) -> list:
    """The tile's runs of the product ``x @ w + acc``: ``[(i0, j0, run)]``, ``run`` a
    :class:`tb.gemm.GemmRun` of rows ``i0..i0+R-1`` of ``x`` and columns ``j0..j0+C-1`` of
    ``w`` over every K block, from ``acc`` of those outputs."""
    from tb.gemm import GemmRun

    (m, kk), n = x.shape, w.shape[1]
    r, c, k = model.rows, model.cols, model.k
    if m % r or n % c or k != x.block_size or k != w.block_size:
        raise ValueError(f"a {m} x {kk} by {kk} x {n} product in blocks of {x.block_size} "
                         f"does not cut into {r} x {c} tiles of k = {k}")
    nb = kk // k
    out = []
    for i0 in range(0, m, r):
        ca = x.codes[i0:i0 + r].reshape(r, nb, k).transpose(1, 0, 2)
        sa = x.scales[i0:i0 + r].T
        for j0 in range(0, n, c):
            cb = w.codes[:, j0:j0 + c].reshape(nb, k, c).transpose(0, 2, 1)
            sb = w.scales[:, j0:j0 + c]
            c0 = acc[i0:i0 + r, j0:j0 + c].view(np.uint32)
            out.append((i0, j0, GemmRun(model, np.ascontiguousarray(ca),
                                        np.ascontiguousarray(sa), np.ascontiguousarray(cb),
                                        np.ascontiguousarray(sb), f"tile ({i0}, {j0})", c0)))
    return out


def run_layer(net, images: np.ndarray, *, fmt: str = "fp8_e4m3", build_dir=None,
              seed: int = 1) -> LayerResult:
    """Run the first layer on ``images`` through the tile :data:`TILE` (in ``fmt``) in
    simulation and compare every output with ``golden.matmul`` of the same operands."""
    from tb.bulk import VERILATOR_ARGS, prepare_unit
    from tb.runner import BUILD, run_cocotb

    from .rtl_bench import OUT_NAME

    argv = [*TILE]
    argv[1] = fmt
    build_dir = Path(build_dir) if build_dir is not None else BUILD / f"digits-layer-{fmt}"
    sources, top, sidecar = prepare_unit("gemm", argv, build_dir / "rtl")
    x, w, acc = layer_operands(net, images, fmt)
    operands = build_dir / "layer.npz"
    np.savez(operands, x_codes=x.codes, x_scales=x.scales, w_codes=w.codes,
             w_scales=w.scales, acc=acc, fmt=fmt)
    (build_dir / OUT_NAME).unlink(missing_ok=True)
    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:  # cocotb's simulator imports the bench through sys.path
        sys.path.append(root)
    run_cocotb(sources=sources, toplevel=top, test_module="examples.digits.rtl_bench",
               name=build_dir.name, build_dir=build_dir, seed=seed,
               build_args=VERILATOR_ARGS, log_dir=build_dir,
               extra_env={"MX_SIDECAR": Path(sidecar).resolve(), "MX_SEED": seed,
                          "MX_CONFIG": f"digits layer 1 {fmt}", LAYER_ENV: operands.resolve()})
    done = np.load(build_dir / OUT_NAME)
    got = done["got"].view(np.float32)
    expected = golden.matmul(x, w, acc=acc)
    bad = int(np.count_nonzero(got.view(np.uint32) != expected.view(np.uint32)))
    return LayerResult(got, expected, bad, int(done["beats"]), int(done["cycles"]))


def main(argv=None) -> int:
    from .digits import train

    parser = argparse.ArgumentParser(prog="python -m examples.digits.rtl_layer",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=450,
                        help="test images to run (even, at most 450; default 450)")
    parser.add_argument("--seed", type=int, default=0, help="training seed (default 0)")
    args = parser.parse_args(argv)
    if not 2 <= args.images <= 450 or args.images % 2:
        print(f"error: --images must be even, 2..450; got {args.images}", file=sys.stderr)
        return 2
    net = train(seed=args.seed)
    res = run_layer(net, net.x_test[:args.images])
    n = res.got.size
    print(f"digits layer 1 (64 -> 64, fp8_e4m3 blocks of 32, bias as c0) on a 2 x 2, k = 32 "
          f"tile: {args.images} images, {n} outputs, {res.mismatches} mismatches against "
          f"golden.matmul, {res.beats} beats in {res.cycles} cycles")
    return 0 if res.mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
