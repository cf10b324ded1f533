"""The dequantizer's non-finite outputs, bit for bit, against the contract's own statement
(docs/numerics.md section 4), not against a constant of golden or of the RTL: golden's NaN
and Inf bits as the testbench expects them, the documents and the sidecar that state them,
and the mismatch report of a design that writes another NaN."""

from __future__ import annotations

import argparse
import re

import numpy as np
import pytest

import golden
from hw.cli import units
from hw.sidecar import SidecarError, sidecar, validate
from tb.dequantizer import DequantizerBatch, DequantizerModel
from tb.describe import nan_differs_only
from tb.runner import ROOT
from tb.standard_tests import UnitConfig

#: The contract, written out by hand: (NaN, +Inf, -Inf) of each output format.
CONTRACT = {"fp32": (0x7FC00000, 0x7F800000, 0xFF800000),
            "bf16": (0x7FC0, 0x7F80, 0xFF80),
            "fp16": (0x7E00, 0x7C00, 0xFC00)}


def _meta(fmt: str, output: str, k: int = 4) -> dict:
    spec = units()["dequantizer"]
    p = argparse.ArgumentParser()
    spec.add_arguments(p)
    args = p.parse_args(["--format", fmt, "--output-format", output, "--block-size", str(k)])
    return sidecar(spec.build(args), "dequantizer")


def _model(fmt: str, output: str) -> DequantizerModel:
    return DequantizerModel(UnitConfig(sidecar=_meta(fmt, output), seed=0, label="d", blocks=1,
                                       full=False, sweeps=False))


@pytest.mark.parametrize("output", list(CONTRACT))
def test_golden_writes_the_contracts_nan_and_inf(output):
    nan, pos_inf, neg_inf = CONTRACT[output]
    e4m3 = _model("fp8_e4m3", output)
    # NaN codes of both signs at a finite scale, and finite codes at the NaN scale
    got = e4m3.expected(np.array([127, 255]), np.array([[0x7F, 0xFF, 0x7F, 0xFF],
                                                        [0x00, 0x80, 0x38, 0xB8]]))
    assert [int(b) for b in got.ravel()] == [nan] * 8
    # overflow keeps the sign: 448 x 2^127 is beyond every output's range
    got = e4m3.expected(np.array([254]), np.array([[0x7E, 0xFE, 0x00, 0x80]]))
    assert [int(b) for b in got.ravel()[:2]] == [pos_inf, neg_inf]
    e5m2 = _model("fp8_e5m2", output)
    got = e5m2.expected(np.array([127]), np.array([[0x7C, 0xFC, 0x7D, 0xFF]]))
    assert [int(b) for b in got.ravel()] == [pos_inf, neg_inf, nan, nan]


@pytest.mark.parametrize("output", list(CONTRACT))
def test_the_sidecar_states_the_contracts_patterns(output):
    nan, pos_inf, neg_inf = CONTRACT[output]
    meta = _meta("fp4_e2m1", output)
    assert int(meta["parameters"]["nan_bits"], 16) == nan
    assert [int(b, 16) for b in meta["parameters"]["inf_bits"]] == [pos_inf, neg_inf]
    validate(meta)
    meta["parameters"]["nan_bits"] = hex(nan | golden.float_format(output).sign_mask)
    with pytest.raises(SidecarError, match=r"parameters\.nan_bits .*docs/numerics\.md"):
        validate(meta)


def test_the_documents_state_the_contracts_patterns():
    numerics = (ROOT / "docs" / "numerics.md").read_text()
    section = numerics[numerics.index("## 4. Dequantization"):numerics.index("## 5.")]
    for output, bits in CONTRACT.items():
        width = 10 if output == "fp32" else 6
        row = " | ".join(f"`{b:#0{width}X}`".replace("0X", "0x") for b in bits)
        assert f"| {output} | {row} |" in section, output
    verify = (ROOT / "docs" / "verify-your-rtl.md").read_text()
    for nan, _, _ in CONTRACT.values():
        assert re.search(f"{nan:#x}", verify, re.I), hex(nan)


def test_a_nan_with_another_sign_is_reported_as_such():
    model = _model("fp8_e4m3", "fp32")
    batch = DequantizerBatch(model, np.array([127]), np.array([[0xFF, 0x38, 0x00, 0x7F]]))
    expected = batch.exp[0].copy()
    got = model.out_layout.pack(1, data=np.array([[0xFFC00000, 0x3F800000, 0, 0x7FC00000]],
                                                 np.uint64))[0]
    report = batch.describe(0, got)
    assert "lane 0:" in report and "lane 1:" not in report
    assert "NaN with another sign or payload" in report and "0x7fc00000" in report
    # a wrong finite lane besides the NaN: not only a NaN difference
    got = model.out_layout.pack(1, data=np.array([[0xFFC00000, 0x40000000, 0, 0x7FC00000]],
                                                 np.uint64))[0]
    assert "NaN with another sign" not in batch.describe(0, got)
    assert (batch.exp[0] == expected).all()


@pytest.mark.parametrize("output", list(CONTRACT))
def test_nan_differs_only(output):
    nan, pos_inf, _ = CONTRACT[output]
    ff = golden.float_format(output)
    sign = ff.sign_mask
    assert nan_differs_only([nan, 0], [nan | sign, 0], ff)
    assert nan_differs_only([nan], [nan | 1], ff)  # another payload
    assert not nan_differs_only([nan], [nan], ff)  # no difference at all
    assert not nan_differs_only([nan], [pos_inf], ff)  # Inf is not a NaN
    assert not nan_differs_only([pos_inf], [nan], ff)
    assert not nan_differs_only([nan, 0], [nan | sign, 1], ff)
