"""The incremental state's lock (outputs/audit_state.py, state_lock), as scheduled runs meet it."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from offset_audit.errors import UserError
from offset_audit.generator.demo_dump import generate_dump
from offset_audit.generator.writers import snapshot_to_segments
from offset_audit.outputs.audit_state import LOCK_FILE, STATE, check_unlocked

REFUSED = "another incremental audit (pid "


@pytest.mark.heavy
def test_of_two_incremental_audits_started_together_one_is_refused_before_its_spark_starts(tmp_path):
    """The lock is taken, and held, before Spark starts: the run that comes second says so in one line
    and never starts a JVM, however close together the two were started (docs/incremental.md)."""
    generate_dump(str(tmp_path / "snapshot"), 2_000, seed=4, partitions=2)
    snapshot_to_segments(str(tmp_path / "snapshot"), str(tmp_path / "data"))
    command = [
        str(Path(sys.executable).parent / "offset-audit"),
        "audit",
        "--input",
        str(tmp_path / "data"),
        "--output",
        str(tmp_path / "out"),
        "--incremental",
    ]
    env = {**os.environ, "OFFSET_AUDIT_WARM": "0"}  # each in its own process
    runs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in "ab"]
    finished = [(run.wait(timeout=600), *run.communicate()) for run in runs]
    codes = sorted(code for code, _, _ in finished)
    assert codes == [0, 2], finished
    _, out, err = next(f for f in finished if f[0] == 2)
    assert out == "" and err.count("\n") == 1 and REFUSED in err, err
    # Progress (on stderr, not a terminal) names each stage as it starts: the refused run reached none.
    assert "starting Spark" not in err
    _, out, err = next(f for f in finished if f[0] == 0)
    assert "starting Spark" in err and out.startswith("Audited ")


def test_a_run_refused_in_the_instant_before_the_holder_writes_its_pid_still_names_it(tmp_path):
    """The holder takes the lock, then writes who it is: a run refused between the two waits for the
    line instead of naming no one."""
    folder = tmp_path / "out" / STATE
    folder.mkdir(parents=True)
    with open(folder / LOCK_FILE, "a+") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)

        def write_late() -> None:
            time.sleep(0.3)
            holder.write("pid 4242, since 2026-12-03 10:00:00 UTC")
            holder.flush()

        writer = threading.Thread(target=write_late)
        writer.start()
        with pytest.raises(UserError, match=r"another incremental audit \(pid 4242, since"):
            check_unlocked(str(tmp_path / "out"))
        writer.join()
