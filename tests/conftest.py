"""One local SparkSession for the whole test run: few shuffle partitions, no UI."""

from __future__ import annotations

import os
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
# ci_gate: in CI, a skip, an xfail or a deselected slow test fails the run; ci_timings: each test's wall
# and CPU seconds; xdist_units: which tests share a pytest-xdist worker, and in what order; pytester:
# tests of those plugins run pytest itself; quick_run: make check's run of the tests that need no JVM.
pytest_plugins = ["ci_gate", "ci_timings", "xdist_units", "quick_run", "pytester"]
# Spark hands timestamps to Python as naive local times; make local time UTC so tests read the same anywhere.
os.environ["TZ"] = "UTC"
time.tzset()


def pytest_collection_modifyitems(config, items):
    """Tests marked delta_spark need the session with delta-spark's jars, which one JVM cannot give
    beside the suite's: they are deselected here (never skipped) and run, all of them in one session and
    each required to pass, by the launcher in tests/test_spark_jars.py."""
    from spark_jars import SET_ASIDE, jar_session

    if jar_session():
        return
    dropped = [item for item in items if item.get_closest_marker("delta_spark")]
    config.stash[SET_ASIDE] = [item.nodeid for item in dropped]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if not item.get_closest_marker("delta_spark")]


@pytest.fixture(scope="session")
def spark():
    from spark_jars import jar_session, spark_jar_settings

    from offset_audit.jvm import has_class
    from offset_audit.runtime.session import get_spark

    settings = {
        "spark.master": "local[2]",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.driver.memory": "2g",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "1000",
        "spark.databricks.delta.snapshotPartitions": "2",
    }
    if jar_session():  # the run of the delta_spark tests (tests/test_spark_jars.py)
        settings.update(spark_jar_settings())
    session = get_spark(settings)
    if jar_session():
        missing = [name for name in JAR_CLASSES if not has_class(session, name)]
        assert not missing, f"the session given the Spark jars lacks {missing}: {settings['spark.jars'][:300]}"
    yield session
    session.stop()


# What the session with the Spark jars must load: delta-spark's extension and Spark's Kafka source.
JAR_CLASSES = ("io.delta.sql.DeltaSparkSessionExtension", "org.apache.spark.sql.kafka010.KafkaSourceProvider")


@pytest.fixture
def no_spark(monkeypatch):
    """Fails the test if the command starts Spark: mistakes are refused, and the read commands answer,
    before any session (a JVM costs seconds)."""
    import offset_audit.runtime.session

    def refuse(*_args, **_kwargs):
        raise AssertionError("the command started Spark")

    monkeypatch.setattr(offset_audit.runtime.session, "get_spark", refuse)


AUDITED_RETENTIONS = [1440, 10080, 43200]


@pytest.fixture(scope="session")
def audited(spark, tmp_path_factory) -> Path:
    """An audit output folder as the read commands (describe, delete-plan, report, metrics) meet it: a
    generated dump audited at two times (two snapshots: history), the second with end offsets (lag),
    and a what-if over three retentions. Built once per test run; tests must not write into it."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    from offset_audit.generator.demo_dump import generate_dump
    from offset_audit.runs.audit import run_audit
    from offset_audit.runs.whatif import run_whatif
    from offset_audit.runtime.config import load_settings
    from offset_audit.views.audit_folder import read_snapshot, snapshots

    root = tmp_path_factory.mktemp("audited")
    dump, output = str(root / "dump"), str(root / "audit")
    generate_dump(dump, 20_000, seed=7, corrupt=3)
    first = run_audit(spark, [dump], output, load_settings(None))
    committed = read_snapshot(
        output, "partition_verdicts", first.snapshot_id, columns=["topic", "partition", "committed_offset"]
    )
    ends = committed.group_by(["topic", "partition"], use_threads=False).aggregate([("committed_offset", "max")])
    newest = ends.column("committed_offset_max")
    # A lag that varies by partition (0 to 4,999 records past the newest commit), deterministic.
    spread = pc.multiply(pc.add(ends.column("partition"), 1), 977)
    lag = pc.cast(pc.subtract(spread, pc.multiply(pc.divide(spread, 5000), 5000)), pa.int64())
    table = pa.table(
        {
            "topic": ends.column("topic"),
            "partition": ends.column("partition"),
            "log_start_offset": pa.array([0] * ends.num_rows, pa.int64()),
            "log_end_offset": pc.add(newest, lag),
        }
    )
    end_offsets = str(root / "end-offsets.csv")
    pacsv.write_csv(table, end_offsets)
    later = (first.as_of.replace(microsecond=0) + timedelta(days=3)).isoformat()
    run_audit(spark, [dump], output, load_settings(None, as_of=later), end_offsets=end_offsets)
    run_whatif(spark, [dump], output, load_settings(None), AUDITED_RETENTIONS, ["latest"])
    assert len(snapshots(output)) == 2
    return Path(output)


@pytest.fixture(scope="session")
def demo(spark, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The demo's commands run once per test run (offset_audit.cli.docs.EXAMPLES): the folder they ran in,
    which holds demo-input and demo-output as `make demo` leaves them, and each example's printed block."""
    from offset_audit.cli import docs

    workdir = tmp_path_factory.mktemp("demo")
    return workdir, docs.run_examples(workdir)


@pytest.fixture(scope="module")
def chromium():
    """Headless Chromium for one test module (tests/browser.py), stopped after it; skips with the reason
    where it cannot be had."""
    from browser import NOT_FOUND, Chromium, find_chromium

    executable = find_chromium()
    if executable is None:
        pytest.skip(NOT_FOUND)
    with Chromium.start(executable) as browser:
        yield browser


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """An S3-compatible server (moto) on 127.0.0.1 for one test module, stopped by pid after it."""
    from live_services import live, s3_server

    with live(s3_server(tmp_path_factory.mktemp("s3"))) as server:
        yield server


@pytest.fixture(params=["fast", "python"])
def segment_path(request, monkeypatch) -> str:
    """Runs a segment test on both readers: the compiled fast path and the Python path it hands the rest
    to must give the same rows (read_segment's default, in this process)."""
    from offset_audit.inputs.segments import reader

    monkeypatch.setattr(reader, "FAST_BY_DEFAULT", request.param == "fast")
    return request.param
