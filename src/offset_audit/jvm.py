"""What a session's JVM holds: checked through the loader Spark puts spark.jars, --jars and --packages in."""

from __future__ import annotations

from pyspark.sql import SparkSession

from offset_audit.session_kind import connect_route


def _server_has_class(spark: SparkSession, name: str) -> bool:
    """A Spark Connect server's classes cannot be asked for from its client: the route that needs one is
    taken, and the server's own error names what it lacks (callers turn it into one sentence)."""
    return True


@connect_route(_server_has_class)
def has_class(spark: SparkSession, name: str) -> bool:
    """Whether the session's JVM can load a class, through the loader that holds spark.jars, --jars and
    --packages (the thread's context loader): the system loader, Class.forName's default, never sees them,
    so a check through it calls delta-spark or the Kafka source absent where they are there."""
    jvm = spark._jvm
    assert jvm is not None  # a classic session's: SparkSession.__init__ asserts it, and nothing clears it
    try:
        jvm.java.lang.Class.forName(name, False, jvm.java.lang.Thread.currentThread().getContextClassLoader())
        return True
    except Exception:
        return False
