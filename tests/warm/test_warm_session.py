"""A warm session, started as a user starts it (`offset-audit warm start`) in a cache folder of the test's own,
and the `offset-audit` program handing runs to it (offset_audit.warm): what a run writes and prints there is
what it writes and prints in a process of its own, exit statuses and user errors come through, Ctrl-C reaches
the run, and a run the session cannot take runs alone, saying why."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from offset_audit.generator.demo_dump import generate_dump
from offset_audit.warm import place

PROGRAM = str(Path(sys.executable).parent / "offset-audit")
TABLES = ("partition_verdicts", "group_verdicts", "deletion_candidates")
DECLINED = "running without the warm session"
pytestmark = pytest.mark.heavy  # every test here runs through the warm session's JVM


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A running warm session whose socket and log live in a cache folder of this module's own (the
    class archive of small runs is linked in, so the runs made alone start as they would). Stopped by pid."""
    cache = tmp_path_factory.mktemp("cache")
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    env.pop("OFFSET_AUDIT_WARM", None)
    (cache / "kafka-offset-audit").mkdir()
    for archive in place.cache_folder().glob("*.jsa"):
        (cache / "kafka-offset-audit" / archive.name).symlink_to(archive)
    started = subprocess.run([PROGRAM, "warm", "start", "--idle", "30m"], env=env, capture_output=True, text=True)
    assert started.returncode == 0, started.stdout + started.stderr
    assert "warm session ready" in started.stdout
    status = json.loads(_run(env, "warm", "status", "--json").stdout)
    yield env, status["pid"]
    subprocess.run([PROGRAM, "warm", "stop"], env=env, capture_output=True, timeout=120)
    with contextlib.suppress(ProcessLookupError):
        os.kill(status["pid"], signal.SIGKILL)


def _run(env, *argv: str, **options) -> subprocess.CompletedProcess:
    return subprocess.run([PROGRAM, *argv], env=env, capture_output=True, text=True, timeout=600, **options)


def _runs(env) -> int:
    return json.loads(_run(env, "warm", "status", "--json").stdout)["runs"]


def _rows(folder: Path, table: str) -> list[dict]:
    rows = DeltaTable(str(folder / table)).to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda row: json.dumps(row, sort_keys=True, default=str))


def test_an_audit_in_the_warm_session_writes_and_prints_what_an_audit_of_its_own_does(warm, tmp_path):
    env, _ = warm
    dump = tmp_path / "dump"
    generate_dump(str(dump), 3000, seed=11, corrupt=3)
    before = _runs(env)
    in_session = _run(env, "audit", "--input", str(dump), "--output", str(tmp_path / "warm"))
    alone = _run({**env, "OFFSET_AUDIT_WARM": "0"}, "audit", "--input", str(dump), "--output", str(tmp_path / "alone"))
    assert in_session.returncode == alone.returncode == 0, in_session.stderr[-3000:] + alone.stderr[-3000:]
    assert _runs(env) == before + 1, "the audit ran in the warm session"
    assert DECLINED not in in_session.stderr
    assert "offset-audit: joining the warm session done" in in_session.stderr, "its progress says where it ran"
    assert "starting Spark" not in in_session.stderr and "offset-audit: starting Spark done" in alone.stderr
    assert in_session.stdout.replace(str(tmp_path / "warm"), "OUT") == alone.stdout.replace(
        str(tmp_path / "alone"), "OUT"
    )
    for table in TABLES:
        assert _rows(tmp_path / "warm", table) == _rows(tmp_path / "alone", table), table


def test_a_run_in_the_warm_session_reads_relative_paths_from_the_callers_folder_and_writes_json_to_a_pipe(
    warm, tmp_path
):
    env, _ = warm
    generate_dump(str(tmp_path / "dump"), 500, seed=12)
    done = _run(env, "decode", "--input", "dump", "--output", "out", "--json", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert DECLINED not in done.stderr
    assert json.loads(done.stdout)["counts"]["records_read"] == 500
    assert json.loads(done.stdout)["warm_session"] is True
    alone = _run(
        {**env, "OFFSET_AUDIT_WARM": "0"},
        "decode",
        "--input",
        "dump",
        "--output",
        "alone",
        "--json",
        "--quiet",
        cwd=tmp_path,
    )
    assert json.loads(alone.stdout)["warm_session"] is False
    assert (tmp_path / "out" / "offset_commits" / "_delta_log").is_dir()


def test_a_user_error_in_the_warm_session_is_one_sentence_and_exit_2(warm, tmp_path):
    env, _ = warm
    before = _runs(env)
    failed = _run(env, "audit", "--input", str(tmp_path / "missing"), "--output", str(tmp_path / "out"))
    assert failed.returncode == 2
    assert failed.stderr.startswith("error: ") and len(failed.stderr.strip().splitlines()) == 1, failed.stderr
    assert _runs(env) == before + 1


def test_a_run_whose_jvm_environment_differs_runs_alone_and_says_which_variable(warm):
    env, _ = warm
    before = _runs(env)
    shown = _run({**env, "AWS_REGION": "eu-west-3"}, "--version")
    assert shown.returncode == 0 and "version" in shown.stdout
    assert f"{DECLINED}: it started with another AWS_REGION" in shown.stderr
    assert _runs(env) == before


def test_a_run_whose_spark_settings_need_another_jvm_runs_alone_and_one_that_can_be_set_runs_warm(warm, tmp_path):
    env, _ = warm
    generate_dump(str(tmp_path / "dump"), 300, seed=13)
    (tmp_path / "sql.toml").write_text('[spark]\n"spark.sql.shuffle.partitions" = "3"\n')
    (tmp_path / "jvm.toml").write_text('[spark]\n"spark.driver.memory" = "3g"\n')
    before = _runs(env)
    sql = _run(env, "decode", "--input", "dump", "--output", "sql", "--conf", "sql.toml", "--quiet", cwd=tmp_path)
    assert sql.returncode == 0 and DECLINED not in sql.stderr, sql.stderr[-3000:]
    jvm = _run(env, "decode", "--input", "dump", "--output", "jvm", "--conf", "jvm.toml", "--quiet", cwd=tmp_path)
    assert jvm.returncode == 0, jvm.stderr[-3000:]
    assert f"{DECLINED}: the run's [spark] setting spark.driver.memory differs from the session's" in jvm.stderr
    assert _runs(env) == before + 2  # the declined run was handed over, then ran alone
    assert _rows(tmp_path / "sql", "quarantine") == _rows(tmp_path / "jvm", "quarantine")


def test_ctrl_c_reaches_the_run_in_the_warm_session_which_takes_the_next_run_after_it(warm, tmp_path):
    env, pid = warm
    running = subprocess.Popen(
        [PROGRAM, "generate", "--output", str(tmp_path / "big"), "--records", "20000000", "--seed", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not json.loads(_run(env, "warm", "status", "--json").stdout)["busy"]:
        assert time.monotonic() < deadline, "the run never reached the session"
        time.sleep(0.1)
    busy = _run(env, "--version")
    assert f"{DECLINED}: another run is using it" in busy.stderr and busy.returncode == 0
    running.send_signal(signal.SIGINT)
    _, err = running.communicate(timeout=60)
    assert running.returncode != 0, "the run was interrupted"
    assert "Aborted" in err or "KeyboardInterrupt" in err, err[-2000:]
    os.kill(pid, 0)  # the session lives on
    after = _run(env, "--version")
    assert after.returncode == 0 and DECLINED not in after.stderr, after.stderr


def test_warm_status_json_gives_the_start_as_an_iso_utc_time_as_every_other_document_does(warm):
    from datetime import UTC, datetime, timedelta

    env, pid = warm
    status = json.loads(_run(env, "warm", "status", "--json").stdout)
    assert status["pid"] == pid
    started = datetime.fromisoformat(status["started"].removesuffix("Z") + "+00:00")
    assert status["started"].endswith("Z") and timedelta(0) < datetime.now(UTC) - started < timedelta(hours=1)
    shown = _run(env, "warm", "status").stdout
    assert f"up since {started:%Y-%m-%d %H:%M:%S} UTC" in shown
