"""The command lines' output paths and option spellings: an output path that cannot be
written is one line and exit status 2 (never a traceback), every option's stated range is
enforced, and the options mean one thing across the commands."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tb.runner import ROOT

SMALL_QUANTIZER = ["quantizer", "--format", "int8", "--block-size", "2", "--stages", "1"]


def _run(*args, cwd):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _one_line(r, pattern: str) -> None:
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert re.search(pattern, lines[0]), lines[0]


@pytest.fixture
def afile(tmp_path):
    """An existing file where a directory would have to be."""
    path = tmp_path / "afile"
    path.write_text("a file\n")
    return path


@pytest.mark.parametrize("where", [["-o", "/proc/g.v"], ["-o", "afile/g.v"],
                                   ["--fusesoc", "afile"]],
                         ids=["proc", "under-a-file", "fusesoc-a-file"])
def test_hw_generate_unwritable_output(where, afile, tmp_path):
    r = _run("-m", "hw", "generate", *SMALL_QUANTIZER, *where, cwd=tmp_path)
    _one_line(r, r"^python -m hw: error: cannot write (into )?\S+: ")


def test_golden_vectors_output_is_a_file(afile, tmp_path):
    r = _run("-m", "golden", "vectors", "--unit", "quantizer", "--format", "int8", "--count",
             2, "-o", "afile", cwd=tmp_path)
    _one_line(r, r"^python -m golden: error: cannot write into afile: ")


def test_tb_check_build_dir_is_a_file(afile, tmp_path):
    r = _run("-m", "hw", "generate", *SMALL_QUANTIZER, "-o", "g.v", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = _run("-m", "tb", "check", "--sidecar", "g.json", "g.v", "--build-dir", "afile",
             cwd=tmp_path)
    _one_line(r, r"^python -m tb check: error: --build-dir .*afile: not a directory$")


@pytest.mark.parametrize("k", [1, 3, 128])
def test_golden_vectors_block_size_range(k, tmp_path):
    r = _run("-m", "golden", "vectors", "--unit", "quantizer", "--format", "int8",
             "--block-size", k, "--count", 2, "-o", "v", cwd=tmp_path)
    _one_line(r, rf"--block-size must be a power of two in 2\.\.64, got {k}$")
    assert not (tmp_path / "v").exists()


def test_generate_writes_only_what_tb_check_reads(tmp_path):
    """tb check reads .v, .sv, .vh, .svh files; generate writes no other name."""
    r = _run("-m", "hw", "generate", *SMALL_QUANTIZER, "-o", "g.txt", cwd=tmp_path)
    _one_line(r, r"-o g\.txt: a Verilog file's name must end in \.v, \.sv, \.vh, \.svh")
    assert not list(tmp_path.iterdir())


def test_dequantizer_output_format_option(tmp_path):
    """--output-format is the dequantizer's output format (as for golden vectors);
    --output, its deprecated spelling, still means the same."""
    base = ["-m", "hw", "generate", "dequantizer", "--format", "int8", "--block-size", "2",
            "--stages", "1"]
    r = _run(*base, "--output-format", "bf16", "-o", "a.v", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = _run(*base, "--output", "bf16", "-o", "b.v", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    a, b = (json.loads((tmp_path / f"{n}.json").read_text()) for n in "ab")
    assert a["parameters"]["output"] == b["parameters"]["output"] == "bf16"
    assert (tmp_path / "a.v").read_text() == (tmp_path / "b.v").read_text()
    r = _run(*base[:4], "--help", cwd=tmp_path)
    assert "--output-format" in r.stdout and "--output " not in r.stdout
    r = _run("-m", "golden", "vectors", "--unit", "dequantizer", "--format", "int8",
             "--block-size", 4, "--count", 2, "--output-format", "fp16", "-o", "v",
             cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "output=fp16" in (tmp_path / "v" / "README.txt").read_text()


def test_mx_hdl_check_help_names_itself_and_each_default_once(tmp_path):
    r = _run("-m", "hw.console", "check", "--help", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: mx-hdl check "), r.stdout
    assert "python -m tb" not in r.stdout
    text = " ".join(r.stdout.split())
    assert text.count("default 200") + text.count("default: 200") == 1, text
    assert "(default: None)" not in text
    r = _run("-m", "hw.console", "check", "--sidecar", "x.json", "x.v", "--blocks", 0,
             cwd=tmp_path)
    _one_line(r, r"^mx-hdl check: error: --blocks must be >= 1")


def test_no_option_states_its_default_twice():
    """The help formatter appends every default: an option's own help must not state it too
    ("(default 5) (default: 5)")."""
    from hw.cli import HelpFormatter
    from hw.registry import units

    for name, spec in units().items():
        text = " ".join(spec.parser(formatter_class=HelpFormatter).format_help().split())
        assert not re.search(r"\(default[^)]*\) \(default", text), (name, text)
