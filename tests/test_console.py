"""The command lines' help (every default, the format lists) and ``mx-hdl``, the installed
command that runs the ``python -m`` forms."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import golden
from hw import console
from hw.cli import option_defaults, units

REPO = Path(__file__).resolve().parent.parent


def _run(*argv, cwd):
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.parametrize("unit", list(units()))
def test_generate_help_shows_every_default_and_the_formats(unit, tmp_path):
    r = _run("-m", "hw", "generate", unit, "--help", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())  # argparse wraps lines
    defaults = option_defaults(units()[unit])
    assert defaults  # every unit has defaulted options (block size, stages, ...)
    for option, default in defaults.items():
        assert option in text and f"(default: {default})" in text
    if unit not in ("nvfp4-dequantizer", "nvfp4-quantizer"):  # one fixed format: no option
        assert ", ".join(golden.FORMATS) in text


def test_option_defaults_are_the_parsed_defaults():
    # option_defaults reads the parser the unit builds; the parsed values must agree
    for spec in units().values():
        required = spec.defaults[0][:2]  # the format option of the first default configuration
        parsed = vars(spec.parser().parse_args(required))
        for option, default in option_defaults(spec).items():
            assert default in parsed.values(), (spec.name, option)


def test_generate_prints_full_paths(tmp_path):
    r = _run("-m", "hw", "generate", "dequantizer", "--format", "int8", "--block-size", "2",
             "-o", "out/d.v", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "wrote out/d.v and out/d.json"
    assert (tmp_path / "out" / "d.json").is_file()


def test_generate_into_an_existing_directory_names_the_file_after_the_module(tmp_path):
    (tmp_path / "rtl").mkdir()
    r = _run("-m", "hw", "generate", "dequantizer", "--format", "int8", "--block-size", "2",
             "--stages", "1", "-o", "rtl", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    name = "mx_dequantizer_int8_k2_fp32_s1"
    assert r.stdout.strip() == f"wrote rtl/{name}.v and rtl/{name}.json"
    assert f"module {name}(" in (tmp_path / "rtl" / f"{name}.v").read_text()


def test_generate_needs_exactly_one_destination(tmp_path):
    for where in ([], ["-o", "x.v", "--fusesoc", "cores"]):
        r = _run("-m", "hw", "generate", "dot", "--format", "int8", *where, cwd=tmp_path)
        assert r.returncode == 2 and "-o" in r.stderr and "--fusesoc" in r.stderr
    assert not any(tmp_path.iterdir())


def test_mx_hdl_help_lists_commands_units_formats_and_defaults():
    text = console.usage()
    for name, cmd in console.COMMANDS.items():
        assert f"  {name} " in text and f"{cmd.python_m} {name}" in text
    for spec in units().values():
        assert spec.name in text and spec.help in text
        assert " ".join(f"{k} {v}" for k, v in option_defaults(spec).items()) in text
    assert ", ".join(golden.FORMATS) in text


def test_mx_hdl_generate_is_python_m_hw_generate(tmp_path):
    argv = ["generate", "quantizer", "--format", "fp6_e3m2", "--block-size", "2", "--input",
            "fp16", "-o"]
    assert console.main([*argv, str(tmp_path / "a" / "q.v")]) == 0
    r = _run("-m", "hw", *argv, str(tmp_path / "b" / "q.v"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for name in ("q.v", "q.json"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()


def test_mx_hdl_vectors_is_python_m_golden_vectors(tmp_path):
    argv = ["vectors", "--unit", "dequantizer", "--format", "fp4_e2m1", "--block-size", "4",
            "--count", "20", "--seed", "7", "-o"]
    assert console.main([*argv, str(tmp_path / "a")]) == 0
    r = _run("-m", "golden", *argv, str(tmp_path / "b"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    hex_files = sorted(p.name for p in (tmp_path / "a").glob("*.hex"))
    assert hex_files == sorted(p.name for p in (tmp_path / "b").glob("*.hex")) and hex_files
    for name in hex_files:
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()


def test_mx_hdl_errors_exit_2(tmp_path, capsys):
    assert console.main(["synthesize"]) == 2
    assert "unknown command 'synthesize'" in capsys.readouterr().err
    assert console.main([]) == 2
    assert "usage: mx-hdl COMMAND" in capsys.readouterr().err
    assert console.main(["generate", "dot", "--format", "fp7", "-o", str(tmp_path / "x.v")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mx-hdl: error:")


def test_mx_hdl_check_runs_python_m_tb_check(monkeypatch):
    calls = []
    fake = types.ModuleType("tb.__main__")
    fake.main = lambda argv, prog="python -m tb": calls.append((argv, prog)) or 3
    monkeypatch.setitem(sys.modules, "tb.__main__", fake)
    assert console.main(["check", "--sidecar", "u.json", "u.v"]) == 3
    assert calls == [(["check", "--sidecar", "u.json", "u.v"], "mx-hdl")]


def test_mx_hdl_check_without_its_module_says_so(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tb.__main__", None)  # import fails: ModuleNotFoundError
    assert console.main(["check", "u.v"]) == 2
    assert "mx-hdl check is not available" in capsys.readouterr().err


def test_mx_hdl_generate_and_vectors_without_cocotb(tmp_path):
    # mx-hdl must not import cocotb (the sim extra) for anything but check
    code = ("import sys; sys.modules['cocotb'] = None; from hw.console import main; "
            "rc = main(['generate', 'dot', '--format', 'int8', '--block-size', '2', '-o', "
            "'d.v']); rc |= main(['vectors', '--unit', 'dot', '--format', 'int8', "
            "'--block-size', '2', '--count', '3', '-o', 'vec']); "
            "assert 'cocotb' not in {m.split('.')[0] for m in sys.modules if sys.modules[m]}; "
            "sys.exit(rc)")
    r = _run("-c", code, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "d.v").is_file() and (tmp_path / "vec").is_dir()
