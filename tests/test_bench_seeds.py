"""bench.seeds_bench: the agreement measure, a seed that cannot run, and the table."""

from __future__ import annotations

import numpy as np

from bench import seeds_bench as S


def test_agreement_bits_and_values():
    got = np.float32([1.0, -0.0, np.nan, 2.0])
    want = np.float32([1.0, 0.0, np.nan, 3.0])
    assert S.agreement(got, want) == (0.5, 0.75)  # -0 vs +0: equal value, other bits


def test_a_seed_that_cannot_run_is_na_for_every_format(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_PYTHON_PYCHOP", str(tmp_path / "no-such-python"))
    res = S._run_worker("pychop", str(tmp_path / "x.npy"), str(tmp_path))
    assert set(res) == set(S.FORMATS)
    assert all(r["error"].startswith("FileNotFoundError") for r in res.values())


def test_worker_reports_an_unknown_seed(tmp_path):
    np.save(tmp_path / "x.npy", np.ones(64, np.float32))
    res = S.worker("nosuchseed", str(tmp_path / "x.npy"), str(tmp_path))
    assert res["int8"]["error"] == "ValueError: unknown seed 'nosuchseed'" or \
        res["int8"]["error"].startswith("ModuleNotFoundError")  # torch absent: also n/a
    assert res["int8"]["version"] == "?"


def test_input_has_the_minus_128_blocks():
    x = S.make_input(32 * 10)
    assert x.dtype == np.float32 and x.size == 320
    blocks = np.abs(x.reshape(-1, 32))
    assert np.array_equal(blocks.argmax(axis=1)[::5], [0, 0])
    assert (x[::160] / np.exp2(np.floor(np.log2(-x[::160])))).tolist() == [-1.9921875] * 2


def test_markdown_rows():
    rows = [{"seed": "pychop", "format": "int8", "elements": 8, "options": {"int8_range":
             "asymmetric"}, "golden_q": 5e8, "golden_fq": 2e8, "version": "0.6.2",
             "seconds": 1.0, "rate": 8.0, "bits": 0.75, "values": 1.0, "defaults": 0.875},
            {"seed": "torchao", "format": "int8", "elements": 8, "options": {},
             "golden_q": 5e8, "golden_fq": 2e8, "error": "LookupError: no int8"}]
    text = S.markdown({"elements": 8, "rows": rows})
    assert '| pychop (0.6.2) | int8 |' in text and 'int8_range="asymmetric" | 75.00% | 100.00% ' \
        '| 87.50% |' in text
    assert "| torchao (n/a) | int8 |" in text and "n/a (LookupError: no int8) | n/a | n/a |" in text
