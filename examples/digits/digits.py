"""A small MLP on scikit-learn's digits, run in fp32 and through MX matrix products.

The network is 64 -> 64 (ReLU) -> 10, trained in fp32 by scikit-learn on the bundled
8 x 8 digits (1,797 images, no download).  Its MX form runs every layer as one
:func:`golden.matmul`: the activations are quantized along their features (the product's K
axis), the weights along their inputs (K again), the bias is the accumulator's fp32 start,
and the hidden layer's fp32 results are quantized back to MX in blocks of 32 along its
outputs (``out_format``), as an MX GEMM tile with MX output produces them.  ReLU then acts on
the codes: a code with its sign bit set becomes +0 (exact: a block's scale does not change).
The hidden layer's MX output is the next layer's MX input as it is: its blocks already run
along that layer's K axis.

Run it from the project root::

    .venv/bin/python -m examples.digits.digits [--plot accuracy.png]

It prints the accuracy table of docs in ``examples/digits/README.md``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from dataclasses import dataclass

import numpy as np

import golden

__all__ = ["FORMATS", "Mlp", "train", "forward_fp32", "forward_mx", "relu_codes", "accuracy_table",
           "main"]

#: The element formats of the table: name in the table -> golden's format name.
FORMATS = {"MXFP8 (e4m3)": "fp8_e4m3", "MXFP6 (e2m3)": "fp6_e2m3", "MXFP4 (e2m1)": "fp4_e2m1"}
BLOCK = 32


@dataclass(frozen=True)
class Mlp:
    """The trained network's fp32 parameters (``w1``: 64 x 64, ``w2``: 64 x 10, inputs
    along axis 0) and the held-out test set (pixels scaled to [0, 1])."""

    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def train(*, hidden: int = 64, seed: int = 0, test_size: float = 0.25) -> Mlp:
    """Train the fp32 network on a stratified split of the digits (deterministic in ``seed``)."""
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=test_size, random_state=seed, stratify=y)
    with warnings.catch_warnings():
        # a fixed iteration budget keeps the run short and reproducible; the test accuracy
        # (printed) says whether it is enough
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = MLPClassifier(hidden_layer_sizes=(hidden,), random_state=seed,
                            max_iter=300).fit(x_train, y_train)
    f32 = [np.asarray(a, dtype=np.float32) for a in (*clf.coefs_, *clf.intercepts_)]
    return Mlp(f32[0], f32[2], f32[1], f32[3], x_test, y_test)


def forward_fp32(net: Mlp, x: np.ndarray) -> np.ndarray:
    """Logits in fp32 (numpy's float32 matmul)."""
    h = np.maximum(x @ net.w1 + net.b1, np.float32(0))
    return h @ net.w2 + net.b2


def relu_codes(mx: golden.MXArray) -> golden.MXArray:
    """ReLU on an MX array: every code with its sign bit set becomes +0 (code 0)."""
    negative = (mx.codes >> mx.fmt.sign_bit) & 1 == 1
    return golden.MXArray(mx.scales, np.where(negative, np.uint8(0), mx.codes), mx.fmt,
                          mx.block_size, mx.axis, mx.shape)


def _start(bias: np.ndarray, rows: int) -> np.ndarray:
    """The accumulators' fp32 start: the bias on every row."""
    return np.ascontiguousarray(np.broadcast_to(bias.astype(np.float32), (rows, bias.size)))


def forward_mx(net: Mlp, x: np.ndarray, fmt: str) -> np.ndarray:
    """Logits through two :func:`golden.matmul` calls in ``fmt`` (MX output between layers)."""
    xq = golden.quantize(x, fmt, block_size=BLOCK, axis=-1)
    w1 = golden.quantize(net.w1, fmt, block_size=BLOCK, axis=0)
    w2 = golden.quantize(net.w2, fmt, block_size=BLOCK, axis=0)
    h = golden.matmul(xq, w1, acc=_start(net.b1, len(x)), out_format=fmt,
                      out_block_size=BLOCK)
    return golden.matmul(relu_codes(h), w2, acc=_start(net.b2, len(x)))


def accuracy_table(net: Mlp, x=None, y=None) -> dict[str, float]:
    """Test accuracy of fp32 and of every format of :data:`FORMATS` (label -> fraction)."""
    x = net.x_test if x is None else x
    y = net.y_test if y is None else y
    table = {"fp32": float(np.mean(forward_fp32(net, x).argmax(axis=1) == y))}
    for label, fmt in FORMATS.items():
        table[label] = float(np.mean(forward_mx(net, x, fmt).argmax(axis=1) == y))
    return table


def _plot(table: dict[str, float], path: str):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3))
    labels = list(table)
    bars = ax.bar([k.replace(" (", "\n(") for k in labels], [100 * table[k] for k in labels],
                  color="#4c72b0")
    ax.bar_label(bars, fmt="%.1f")
    ax.set_ylim(min(80.0, 100 * min(table.values()) - 5), 100)
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("digits MLP 64-64-10, MX blocks of 32")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.digits.digits",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="split and training seed (default 0)")
    parser.add_argument("--plot", metavar="PNG", help="also write a bar chart of the table")
    args = parser.parse_args(argv)
    net = train(seed=args.seed)
    table = accuracy_table(net)
    print(f"digits MLP 64-64-10, seed {args.seed}, {len(net.y_test)} test images")
    print("| arithmetic | test accuracy |\n|---|---|")
    for label, acc in table.items():
        print(f"| {label} | {100 * acc:.2f} % |")
    if args.plot:
        _plot(table, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
