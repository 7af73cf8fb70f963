"""The one place a SparkSession is built.

Under spark-submit (or any code that already started Spark) the active session is used as it is, so a
cluster's master and settings win. Otherwise a local session is built from the `[spark]` settings of
the run configuration: a few shuffle partitions and no UI, which suits a laptop, CI and the demo.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib import resources

from pyspark.sql import SparkSession

from offset_audit.errors import JavaMissing

LOCAL_DEFAULTS: dict[str, str] = {
    "spark.master": "local[*]",
    "spark.app.name": "kafka-offset-audit",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "4g",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.sources.partitionOverwriteMode": "static",
    "spark.python.worker.reuse": "true",
}

# Settings that the job relies on whatever the session: UTC timestamps and Parquet that Delta accepts.
REQUIRED: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}


def check_java() -> str:
    """Spark needs Java 17 or newer; say so plainly instead of letting py4j fail obscurely."""
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    hint = "install a Java 17+ runtime (e.g. 'apt-get install openjdk-17-jre-headless') or set JAVA_HOME"
    if not java or not os.path.exists(java):
        raise JavaMissing(f"Java was not found; {hint}.")
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except OSError as err:
        raise JavaMissing(f"Java at {java} could not run ({err}); {hint}.") from err
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        raise JavaMissing(f"could not read the Java version from '{out.strip()}'; {hint}.")
    major = int(match.group(1))
    if major == 1:  # "1.8.0_xxx" style
        major = int(match.group(2) or 0)
    if major < 17:
        raise JavaMissing(f"Java {major} found at {java}, Spark 4 needs 17 or newer; {hint}.")
    return out.splitlines()[0] if out else java


def get_spark(settings: Mapping[str, str] | None = None) -> SparkSession:
    active = SparkSession.getActiveSession()
    if active is not None:
        for name, value in REQUIRED.items():
            active.conf.set(name, value)
        return active
    check_java()
    # Python workers must run the interpreter that has this package and pyarrow, not whatever
    # `python3` is on the PATH; and a local session should not guess at the machine's network.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder
    log_config = resources.files("offset_audit") / "conf" / "log4j2.properties"
    local = {**LOCAL_DEFAULTS, "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={log_config}"}
    for name, value in {**local, **(settings or {})}.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    for name, value in REQUIRED.items():
        spark.conf.set(name, value)
    return spark


def has_delta(spark: SparkSession) -> bool:
    """True when the session can write format("delta"): delta-spark's jars are on the classpath and its
    catalog extension is configured (a cluster started with delta-spark)."""
    extensions = spark.conf.get("spark.sql.extensions", "") or ""
    if "DeltaSparkSessionExtension" not in extensions:
        return False
    try:
        spark._jvm.java.lang.Class.forName("org.apache.spark.sql.delta.DeltaLog")  # type: ignore[union-attr]
        return True
    except Exception:
        return False


@contextmanager
def scoped_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Runtime SQL settings for the `with` block only; the session's own values come back after it,
    so a shared (spark-submit) session is left as it was found."""
    before = {name: spark.conf.get(name, None) for name in settings}
    for name, value in settings.items():
        spark.conf.set(name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                spark.conf.unset(name)
            else:
                spark.conf.set(name, value)
