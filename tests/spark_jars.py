"""The jars `make spark-jars` fetched into .jars/spark (delta-spark, Spark's Kafka source, hadoop-aws), for
the tests of the Spark-native routes.

One JVM holds one SparkContext, and the suite's session writes through delta-rs, the embedded default. So
a test of a route that needs these jars runs itself again in a pytest of its own whose session has them
(`run_with_spark_jars`; conftest.py builds that session when OFFSET_AUDIT_TEST_SESSION is set).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from live_services import Unavailable
from repo_paths import ROOT

SPARK_JARS = ROOT / ".jars" / "spark"
SESSION_VARIABLE = "OFFSET_AUDIT_TEST_SESSION"
# hadoop-aws and the AWS SDK it needs (700 MiB): only sessions that read or write s3a:// load them.
_S3A = ("hadoop-aws-", "bundle-", "analyticsaccelerator-", "wildfly-openssl-")


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


def jar_session() -> str | None:
    """ "delta-spark" or "spark-jars" (the jars without Delta's extension) in a run `run_with_spark_jars`
    started, None in the suite's own."""
    return os.environ.get(SESSION_VARIABLE)


def run_with_spark_jars(nodeid: str, delta: bool = True, timeout: float = 1200) -> str:
    """Run one test in a pytest of its own whose session has the jars (and, with `delta`, writes through
    delta-spark); it must pass, not skip."""
    spark_jars()  # Unavailable here, with the reason, rather than inside the other run
    environment = {**os.environ, SESSION_VARIABLE: "delta-spark" if delta else "spark-jars"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", nodeid],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0 and _outcome(result.stdout) == "1 passed", output[-6000:]
    return output


def run_marked_with_spark_jars(module: str, expected: int, timeout: float = 2400) -> str:
    """Run the tests of `module` marked delta_spark in a pytest of its own whose session writes through
    delta-spark: all `expected` of them must run and pass (none skipped, none missing)."""
    spark_jars()
    environment = {**os.environ, SESSION_VARIABLE: "delta-spark"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "-m", "delta_spark", module],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0 and _outcome(result.stdout) == f"{expected} passed", output[-8000:]
    return output


def _outcome(stdout: str) -> str:
    """pytest's last line without its deselected count and time ("3 passed"), so a skip, a failure or
    a missing test shows. Only pytest's own summary line counts: a client library's log line on stderr
    ("...:46745 failed: Connection refused") is not an outcome."""
    summary = r"^=*\s*\d+ (passed|failed|skipped|errors?|deselected)\b.* in [\d.]+s"
    lines = [line for line in stdout.splitlines() if re.search(summary, line)]
    last = lines[-1].strip("= ") if lines else ""
    return re.sub(r"(, \d+ deselected)? in [\d.]+s.*$", "", last)
