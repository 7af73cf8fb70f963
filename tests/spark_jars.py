"""The jars `make spark-jars` fetched into .jars/spark (delta-spark, Spark's Kafka source, hadoop-aws), for
the tests of the Spark-native routes.

One JVM holds one SparkContext, and the suite's session writes through delta-rs, the embedded default. So
the tests of a route that needs these jars are marked `delta_spark`: the suite's session sets them aside
(conftest.py) and one launcher (tests/test_spark_jars.py) runs all of them in one pytest of its own, whose
session has the jars and writes through delta-spark (conftest.py builds it when OFFSET_AUDIT_TEST_SESSION
is set). A test there that wants the embedded writer says `--writer delta-rs`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ci_gate import NESTED_RUN_VARIABLE
from ci_timings import TIMINGS_VARIABLE
from live_services import Unavailable
from repo_paths import ROOT

SPARK_JARS = ROOT / ".jars" / "spark"
SESSION_VARIABLE = NESTED_RUN_VARIABLE
# hadoop-aws and the AWS SDK it needs (700 MiB): only sessions that read or write s3a:// load them.
_S3A = ("hadoop-aws-", "bundle-", "analyticsaccelerator-", "wildfly-openssl-")
# The modules that hold tests marked delta_spark (tests/test_spark_jars.py checks that none is elsewhere).
JAR_MODULES = (
    "tests/outputs/test_writers.py",
    "tests/outputs/test_delta.py",
    "tests/inputs/test_kafka_source.py",
    "tests/runs/test_live_incremental.py",
    "tests/runs/test_upkeep.py",
)
# The ids of the delta_spark tests the suite's session set aside, for the launcher to run.
SET_ASIDE = pytest.StashKey[list]()
# What the nested run must not inherit: the workers of pytest-xdist and their ids, the options of the run
# that started it, and the files that run writes at its end.
_NOT_INHERITED = ("PYTEST_ADDOPTS", "PYTEST_XDIST_", "OFFSET_AUDIT_TIMINGS", "OFFSET_AUDIT_SKIP_SUMMARY")


def spark_jars(s3a: bool = False) -> list[str]:
    """The fetched jars, or Unavailable with the reason `make spark-jars` wrote."""
    unavailable = SPARK_JARS / "unavailable"
    if unavailable.exists():
        raise Unavailable(unavailable.read_text().strip())
    if not (SPARK_JARS / ".fetched").exists():
        raise Unavailable("the Spark jars are not fetched: run make spark-jars (make setup does)")
    return sorted(str(p) for p in SPARK_JARS.glob("*.jar") if s3a or not p.name.startswith(_S3A))


def spark_jar_settings(delta: bool = True, s3a: bool = False) -> dict[str, str]:
    """A local session's settings with the jars on its classpath and, with `delta`, delta-spark's
    extension and catalog (tables are then written through format("delta")), as docs/cluster.md gives them."""
    settings = {"spark.jars": ",".join(spark_jars(s3a))}
    if delta:
        settings["spark.sql.extensions"] = "io.delta.sql.DeltaSparkSessionExtension"
        settings["spark.sql.catalog.spark_catalog"] = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    return settings


def jar_session() -> bool:
    """Whether this run is the one the launcher started, whose session has the jars and delta-spark."""
    return bool(os.environ.get(SESSION_VARIABLE))


def nested_environment() -> dict[str, str]:
    """This process's environment for a pytest run it starts: without what belongs to this run alone."""
    return {k: v for k, v in os.environ.items() if not k.startswith(_NOT_INHERITED)}


def run_in_jar_session(tests: list[str], timeout: float = 3600) -> str:
    """Run `tests` (node ids, or modules whose delta_spark tests to run) in one pytest whose session
    has the jars and writes through delta-spark: each must pass, none skip, none be missing.

    Never from inside that run: a jar session that lacks a class fails its tests at once rather than
    starting another such run."""
    if jar_session():
        raise AssertionError("the run with the Spark jars would start another: its session lacks a class it needs")
    spark_jars()  # Unavailable here, with the reason, rather than inside the other run
    environment = {**nested_environment(), SESSION_VARIABLE: "delta-spark"}
    if timings := jar_session_timings():
        environment[TIMINGS_VARIABLE] = str(timings)  # its tests' own figures, which .ci/run prints too
    modules = all(t in JAR_MODULES for t in tests)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-rs",
         *(["-m", "delta_spark"] if modules else []), *tests],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    output = result.stdout + result.stderr
    outcome = _outcome(result.stdout)
    passed = re.fullmatch(r"(\d+) passed", outcome)
    assert result.returncode == 0 and passed, output[-8000:]
    assert modules or int(passed.group(1)) == len(tests), f"{len(tests)} tests asked, {outcome}: {output[-8000:]}"
    return output


def jar_session_timings() -> Path | None:
    """Where the run with the jars writes its own tests' figures: beside this run's ($OFFSET_AUDIT_TIMINGS),
    since this run sees that run as one test."""
    target = os.environ.get(TIMINGS_VARIABLE)
    return Path(target).with_suffix(".jar-session.tsv") if target else None


def _outcome(stdout: str) -> str:
    """pytest's last line without its deselected count and time ("3 passed"), so a skip, a failure or
    a missing test shows. Only pytest's own summary line counts: a client library's log line on stderr
    ("...:46745 failed: Connection refused") is not an outcome."""
    summary = r"^=*\s*\d+ (passed|failed|skipped|errors?|deselected)\b.* in [\d.]+s"
    lines = [line for line in stdout.splitlines() if re.search(summary, line)]
    last = lines[-1].strip("= ") if lines else ""
    return re.sub(r"(, \d+ deselected)? in [\d.]+s.*$", "", last)
