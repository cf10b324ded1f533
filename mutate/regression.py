"""The default simulation regression as data: which configurations ``make sim`` runs, the
pytest node of each, and which ``hw/`` files each unit is built from.

The configurations come from the simulation tests themselves (``tests/test_sim_*.py``: each
test's list of configurations, its id function and its ``python -m hw generate`` arguments,
named in :data:`SIM_TESTS`), so the campaign always mutates against the regression as it is,
every unit's included (MX, NVFP4, the GPU modes, the GEMM tile).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import inspect
import json
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SimTest", "SIM_TESTS", "SimConfig", "default_configs", "unit_sources", "fingerprint"]

@dataclass(frozen=True)
class SimTest:
    """A simulation test of the default regression, by the names in its module.

    Attributes
    ----------
    path : str
        The module, relative to the repository root.
    test : str
        The test function, parametrized over ``configs`` with ids ``ids``.
    configs, ids, args : str
        The module's list of configurations, its id function and its function giving a
        configuration's ``(unit, argv)``, or ``argv`` alone when ``unit`` is given.
    unit : str or None
        The unit of every configuration, where ``args`` gives ``argv`` alone.
    """

    path: str
    test: str
    configs: str = "CONFIGS"
    ids: str = "config_id"
    args: str = "unit_args"
    unit: str | None = None


#: The simulation tests of the default regression (``make sim``).
SIM_TESTS = (
    SimTest("tests/test_sim_quantizer.py", "test_quantizer_sim"),
    SimTest("tests/test_sim_dequantizer.py", "test_dequantizer_sim"),
    SimTest("tests/test_sim_dot.py", "test_dot_rtl_matches_golden"),
    SimTest("tests/test_sim_dot_gpu.py", "test_dot_gpu_rtl_matches_golden"),
    SimTest("tests/test_sim_nvfp4.py", "test_nvfp4_dequantizer_sim"),
    SimTest("tests/test_sim_nvfp4.py", "test_nvfp4_quantizer_sim", "QUANT_CONFIGS",
            "quantizer_id", "quantizer_args"),
    SimTest("tests/test_sim_nvfp4_dot.py", "test_nvfp4_dot_rtl_matches_golden"),
    SimTest("tests/test_sim_gemm.py", "test_gemm_rtl_matches_golden", unit="gemm"),
)


@dataclass(frozen=True)
class SimConfig:
    """One configuration of the default simulation regression.

    Attributes
    ----------
    nodeid : str
        Its pytest node id, e.g. ``"tests/test_sim_dot.py::test_dot_rtl_matches_golden[..]"``.
    unit : str
        The ``python -m hw generate`` subcommand.
    argv : tuple of str
        Its arguments.
    """

    nodeid: str
    unit: str
    argv: tuple[str, ...]


def _load(root: Path, relpath: str):
    name = "_mutate_" + Path(relpath).stem
    spec = importlib.util.spec_from_file_location(name, root / relpath)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def default_configs(root: Path) -> list[SimConfig]:
    """Every configuration of the default simulation regression (``make sim``), in order.

    ``SIM_FULL`` must be unset (the test modules read it at import).
    """
    configs, modules = [], {}
    for sim in SIM_TESTS:
        module = modules.get(sim.path) or modules.setdefault(sim.path, _load(root, sim.path))
        names = (sim.test, sim.configs, sim.ids, sim.args)
        missing = [name for name in names if not hasattr(module, name)]
        if missing or not inspect.isfunction(getattr(module, sim.test)):
            raise ValueError(f"{sim.path}: no simulation test {sim.test} with "
                             f"{', '.join(names[1:])} (missing: {', '.join(missing)})")
        config_id, args = getattr(module, sim.ids), getattr(module, sim.args)
        for config in getattr(module, sim.configs):
            unit, argv = (sim.unit, args(config)) if sim.unit else args(config)
            configs.append(SimConfig(f"{sim.path}::{sim.test}[{config_id(config)}]",
                                     unit, tuple(argv)))
    return configs


def _imports(root: Path, path: Path) -> set[Path]:
    """The ``hw`` modules that ``path`` imports (absolute ``hw.`` and relative imports)."""
    found = set()
    package = path.parent
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package
            for _ in range(node.level - 1):
                base = base.parent
            parts = node.module.split(".") if node.module else []
        elif node.module and node.module.split(".")[0] == "hw":
            base, parts = root, node.module.split(".")
        else:
            continue
        target = base.joinpath(*parts)
        candidates = [target.with_suffix(".py"), target / "__init__.py"]
        candidates += [target / f"{alias.name}.py" for alias in node.names]
        found.update(c for c in candidates if c.is_file())
    return found


def unit_sources(root: Path) -> dict[str, set[str]]:
    """For each unit (``generate`` subcommand), the ``hw/`` files its Verilog depends on:
    the module that builds it, everything that module imports from ``hw``, transitively,
    and ``hw/cli.py`` (Verilog and sidecar writer)."""
    import hw.cli

    result = {}
    for name, spec in hw.cli.units().items():
        start = Path(inspect.getsourcefile(spec.build)).resolve()
        start = root / start.relative_to(Path(hw.cli.__file__).resolve().parent.parent)
        seen, todo = set(), [start, root / "hw" / "cli.py"]
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            todo.extend(_imports(root, path))
        result[name] = {p.relative_to(root).as_posix() for p in seen}
    return result


def fingerprint(config: SimConfig) -> tuple[list[str], int]:
    """SHA-256 of a configuration's generated Verilog and of its JSON sidecar (what a
    simulation of it depends on from ``hw``), and the Verilog's size in characters (a proxy
    of its build time).  Raises whatever elaboration raises."""
    import argparse

    from hw.cli import sidecar, to_verilog, units

    spec = units()[config.unit]
    parser = argparse.ArgumentParser()
    spec.add_arguments(parser)
    component = spec.build(parser.parse_args(list(config.argv)))
    verilog = to_verilog(component)
    side = json.dumps(sidecar(component, config.unit), sort_keys=True)
    return ([hashlib.sha256(verilog.encode()).hexdigest(),
             hashlib.sha256(side.encode()).hexdigest()], len(verilog))
