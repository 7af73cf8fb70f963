"""Scratch folders of runs killed with SIGKILL are cleared by a later run; a running run's never are."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from offset_audit.generator.demo_dump import generate_dump
from offset_audit.outputs.scratch import OWNER, PREFIX, UNOWNED_GRACE_SECONDS, clear_dead_scratch
from offset_audit.runs.audit import run_audit
from offset_audit.runtime.config import load_settings

HOLDER = """
import sys, time
from pathlib import Path
from offset_audit.outputs.scratch import scratch_folder
from offset_audit.storage import LOCAL
with scratch_folder(sys.argv[1], LOCAL) as folder:
    (Path(folder) / "part-00000.parquet").write_bytes(b"commits")
    print(folder, flush=True)
    time.sleep(600)
"""


def _holder(root: Path) -> tuple[subprocess.Popen, Path]:
    """A process holding a scratch folder under `root`, as a run in the middle of its decode does."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(root)], stdout=subprocess.PIPE, text=True)
    return process, Path(process.stdout.readline().strip())


@pytest.fixture
def killed_and_running(tmp_path):
    alive, alive_folder = _holder(tmp_path)  # first: a holder starting later would clear the dead one itself
    dead, dead_folder = _holder(tmp_path)
    os.kill(dead.pid, signal.SIGKILL)
    dead.wait()
    yield dead_folder, alive_folder
    alive.kill()
    alive.wait()


def test_a_killed_runs_scratch_is_cleared_and_a_running_runs_is_not(killed_and_running, tmp_path):
    dead_folder, alive_folder = killed_and_running
    assert (dead_folder / "part-00000.parquet").exists(), "SIGKILL left the scratch behind"
    assert clear_dead_scratch(tmp_path) == [dead_folder]
    assert not dead_folder.exists() and (alive_folder / "part-00000.parquet").exists()


def test_an_audit_clears_dead_scratch_in_its_output_and_leaves_its_own_nowhere(spark, killed_and_running, tmp_path):
    dead_folder, alive_folder = killed_and_running
    generate_dump(str(tmp_path / "dump"), 400, seed=8)
    run_audit(spark, [str(tmp_path / "dump")], str(tmp_path), load_settings())
    assert not dead_folder.exists()
    assert sorted(p.name for p in tmp_path.glob(f"{PREFIX}*")) == [alive_folder.name]


def test_scratch_without_an_owner_file_is_cleared_only_once_old(tmp_path):
    """Left by an older version of the tool, or by a run killed between creating the folder and its lock."""
    young, old = tmp_path / f"{PREFIX}young", tmp_path / f"{PREFIX}old"
    young.mkdir()
    old.mkdir()
    past = time.time() - UNOWNED_GRACE_SECONDS - 60
    os.utime(old, (past, past))
    assert clear_dead_scratch(tmp_path) == [old]
    assert young.exists() and not (young / OWNER).exists()
