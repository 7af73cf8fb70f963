"""What a session's JVM holds: checked through the loader Spark puts spark.jars, --jars and --packages in."""

from __future__ import annotations

from pyspark.sql import SparkSession


def has_class(spark: SparkSession, name: str) -> bool:
    """Whether the session's JVM can load a class, through the loader that holds spark.jars, --jars and
    --packages (the thread's context loader): the system loader, Class.forName's default, never sees them,
    so a check through it calls delta-spark or the Kafka source absent where they are there."""
    jvm = spark._jvm  # type: ignore[union-attr]
    try:
        jvm.java.lang.Class.forName(name, False, jvm.java.lang.Thread.currentThread().getContextClassLoader())
        return True
    except Exception:
        return False
