"""examples/digits: the MLP through golden.matmul (a reduced run of the example)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import golden

pytest.importorskip("sklearn", reason="scikit-learn (the dev extra) trains the example's network")

from examples.digits import digits  # noqa: E402


@pytest.fixture(scope="module")
def net():
    return digits.train(seed=0)


def test_fp32_forward_is_scikit_learns(net):
    """The example's fp32 network is the one scikit-learn trained: its predictions are
    MLPClassifier's own on the test set (same split, same seed)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier

    x, y = load_digits(return_X_y=True)
    x_train, _, y_train, _ = train_test_split(x / 16.0, y, test_size=0.25, random_state=0,
                                              stratify=y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = MLPClassifier(hidden_layer_sizes=(64,), random_state=0, max_iter=300)
        clf.fit(x_train.astype(np.float32), y_train)
    mine = digits.forward_fp32(net, net.x_test).argmax(axis=1)
    assert np.mean(mine == clf.predict(net.x_test)) > 0.99


@pytest.mark.parametrize("fmt", [*golden.FORMATS])
def test_relu_codes_is_relu_of_the_values(fmt):
    """ReLU on codes gives max(x, 0) of every dequantized value, scales untouched."""
    x = np.random.default_rng(7).standard_normal((3, 64)).astype(np.float32) * 4
    mx = golden.quantize(x, fmt, block_size=32)
    out = digits.relu_codes(mx)
    np.testing.assert_array_equal(out.scales, mx.scales)
    want = np.maximum(golden.dequantize(mx), np.float32(0))
    got = golden.dequantize(out)
    np.testing.assert_array_equal(got, want)
    assert not np.signbit(got).any()


def test_reduced_accuracy_table(net):
    """Every format of the table classifies the first 200 test images; MXFP8 stays within two
    points of fp32 (its elements carry 3 mantissa bits: inference is near lossless)."""
    table = digits.accuracy_table(net, net.x_test[:200], net.y_test[:200])
    assert list(table) == ["fp32", *digits.FORMATS]
    assert table["fp32"] > 0.9
    assert table["MXFP8 (e4m3)"] >= table["fp32"] - 0.02
    assert all(0.5 < v <= 1 for v in table.values()), table


@pytest.mark.sim
def test_first_layer_through_the_rtl_tile_is_golden_matmuls(net, seed):
    """The first layer (64 -> 64, fp8_e4m3 blocks of 32, the bias as c0) on 8 test images
    through a 2 x 2, k = 32 MXGemm in Verilator: every fp32 output bit for bit golden.matmul's
    of the same operands, a beat per clock (back to back: beats + latency + 1 cycles), and
    the outputs are the layer's (within MXFP8's error of the fp32 layer)."""
    from examples.digits import rtl_layer
    from hw.gemm import MXGemm

    images = net.x_test[:8]
    res = rtl_layer.run_layer(net, images, seed=seed)
    assert res.got.shape == res.expected.shape == (8, 64)
    np.testing.assert_array_equal(res.got.view(np.uint32), res.expected.view(np.uint32))
    assert res.mismatches == 0
    assert res.beats == (8 // 2) * (64 // 2) * 2  # 2 x 2 output tiles, K = 2 blocks each
    latency = MXGemm("fp8_e4m3", rows=2, cols=2, block_size=32).latency
    assert res.cycles == res.beats + latency + 1
    fp32 = images @ net.w1 + net.b1
    assert np.abs(res.got - fp32).max() < 0.05 * np.abs(fp32).max()
    assert np.count_nonzero(res.got) > 0.9 * res.got.size
