"""The shipped ways to run the sharded full regression: Makefile, GitHub workflow, Slurm.

Neither GitHub Actions nor Slurm runs here, so these tests check what can be checked
locally: the workflow's matrix and commands, and the Slurm scripts run against stand-ins for
``sbatch`` and ``make`` that record how they were called.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SLURM = ROOT / "scripts" / "slurm"


def test_make_sim_full_shard_passes_the_split_to_pytest():
    out = subprocess.run(["make", "-n", "sim-full", "SHARD=2/4"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    line = next(ln for ln in out.splitlines() if "-m pytest" in ln)
    for arg in ("SIM_FULL=1", "--splits 4", "--group 2",
                "--durations-path tests/sim_durations.json",
                "--junitxml build/shards/shard-2-of-4/junit.xml",
                "--sim-report build/shards/shard-2-of-4/session.json"):
        assert arg in line, (arg, line)
    merge = subprocess.run(["make", "-n", "sim-merge"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout
    assert "-m tb.report merge build/shards" in merge


def test_workflow_runs_every_shard_then_merges():
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "sim-full.yml").read_text())
    shards = int(flow["env"]["SHARDS"])
    shard_job, merge_job = flow["jobs"]["shard"], flow["jobs"]["merge"]
    assert shard_job["strategy"]["matrix"]["shard"] == list(range(1, shards + 1))
    runs = [s.get("run", "") for s in shard_job["steps"]]
    assert "make install" in runs
    assert any(r.startswith("make sim-full SHARD=${{ matrix.shard }}/${{ env.SHARDS }}")
               and "SEED=${{ env.SEED }}" in r for r in runs)
    assert merge_job["needs"] == "shard" and merge_job["if"] == "always()"
    assert "make sim-merge" in [s.get("run") for s in merge_job["steps"]]


def _stand_ins(tmp_path: Path) -> dict:
    """``sbatch`` and ``make`` that log their arguments; sbatch answers job ids 100, 101..."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    log = tmp_path / "calls.log"
    (bin_ / "sbatch").write_text(
        f'#!/bin/bash\necho "sbatch $*" >> {log}\n'
        f'n=$(grep -c ^sbatch {log}); echo $((99 + n))\n')
    (bin_ / "make").write_text(f'#!/bin/bash\necho "make $*" >> {log}\n')
    for f in bin_.iterdir():
        f.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}", "LOG": str(log)}


def test_slurm_array_task_runs_its_shard(tmp_path):
    env = _stand_ins(tmp_path)
    task = {**env, "SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "16", "SEED": "77",
            "SLURM_SUBMIT_DIR": str(ROOT)}
    subprocess.run(["bash", str(SLURM / "sim-full.sbatch")], env=task, check=True)
    assert Path(env["LOG"]).read_text().split() == [
        "make", "sim-full", "SHARD=3/16", "SEED=77", "JOBS=2"]
    no_seed = {k: v for k, v in task.items() if k != "SEED"}
    r = subprocess.run(["bash", str(SLURM / "sim-full.sbatch")], env=no_seed,
                       capture_output=True, text=True)
    assert r.returncode != 0 and "one SEED" in r.stderr


def test_slurm_submit_chains_the_merge_after_the_array(tmp_path):
    env = _stand_ins(tmp_path)
    out = subprocess.run(["bash", str(SLURM / "submit.sh"), "8", "5"], env=env, check=True,
                         capture_output=True, text=True).stdout
    calls = Path(env["LOG"]).read_text().splitlines()
    assert calls[0] == "make install"
    assert calls[1].startswith("sbatch --parsable --array=1-8 --export=ALL,SEED=5 ")
    assert "--dependency=afterany:100" in calls[2] and "make sim-merge" in calls[2]
    assert "submitted shards 100" in out and "merge 101" in out
    bad = subprocess.run(["bash", str(SLURM / "submit.sh"), "zero"], env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "positive integer" in bad.stderr
