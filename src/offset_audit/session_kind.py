"""Classic sessions and Spark Connect sessions: which one a run holds, and the one rule for code that only
a classic session can run.

A classic session is a JVM in this process's reach: `sparkContext`, RDDs, py4j's `_jvm`. A Spark Connect
session (`SparkSession.builder.remote("sc://host:port")`, Databricks' serverless and shared compute) is a
gRPC client of a server elsewhere: DataFrames, SQL, the Python data sources and UDFs work, the rest does
not exist. The two session classes share no base class, so `isinstance(x, SparkSession)` is false for a
remote one.

Code that reaches into the JVM or the SparkContext is marked `@connect_route(other)`, which names the
function that does the same work on a remote session and sends the call there when the session it is given
is remote. tests/test_connect_routes.py fails when a module the API reaches uses them unmarked.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

from pyspark.sql import DataFrame, SparkSession

F = TypeVar("F", bound=Callable[..., Any])

CONNECT_MODULE = "pyspark.sql.connect."


def is_remote(spark: object) -> bool:
    """Whether `spark` is a Spark Connect session (its class lives in pyspark.sql.connect, imported only
    where the Connect client's own dependencies, grpcio among them, are installed)."""
    return type(spark).__module__.startswith(CONNECT_MODULE) and type(spark).__name__ == "SparkSession"


def is_session(obj: object) -> bool:
    """Whether `obj` is a SparkSession of either kind."""
    return isinstance(obj, SparkSession) or is_remote(obj)


def _session_in(args: tuple[Any, ...], kwargs: dict[str, Any]) -> object | None:
    """The session a call is about: the first argument that is one, a DataFrame's, or one held as `.spark`
    (a reporter)."""
    given: tuple[object, ...] = (*args, *kwargs.values())
    for value in given:
        if is_session(value):
            return value
        if isinstance(value, DataFrame):  # either kind's: its attributes are its columns
            return cast(object, value.sparkSession)
        held: object = None if isinstance(value, str | bytes | int | float) else getattr(value, "spark", None)
        if held is not None and is_session(held):
            return held
    return None


def connect_route(remote: Callable[..., Any]) -> Callable[[F], F]:
    """Marks a function that only a classic session can run, and names `remote`, which takes the same
    arguments and does the same work on a Spark Connect session; a call with a remote session goes there."""

    def mark(classic: F) -> F:
        @functools.wraps(classic)
        def dispatch(*args: Any, **kwargs: Any) -> Any:
            session = _session_in(args, kwargs)
            return (remote if session is not None and is_remote(session) else classic)(*args, **kwargs)

        dispatch.connect_route = remote  # type: ignore[attr-defined]
        return dispatch  # type: ignore[return-value]

    return mark


# What a remote session's server was found to have, by session: asked once (it costs a small job).
_server_cores: dict[str, int] = {}
# Spark splits a range without a partition count into the session's default parallelism (its leaf
# nodes'); this many rows leave no slice empty on any cluster smaller than it.
_PROBE_ROWS = 1 << 16


def _remote_cores(spark: SparkSession) -> int:
    """A Spark Connect server's parallelism, which its client cannot read: the slices it splits a range
    into, counted in one small job."""
    from pyspark.sql import functions as F

    key = spark.session_id  # type: ignore[attr-defined]
    if key not in _server_cores:
        slices = spark.range(_PROBE_ROWS).select(F.spark_partition_id().alias("slice"))
        probe = slices.agg(F.max("slice").alias("last")).collect()
        _server_cores[key] = max(1, int(probe[0]["last"] or 0) + 1)
    return _server_cores[key]


@connect_route(_remote_cores)
def session_cores(spark: SparkSession) -> int:
    """The cores the session runs tasks on: Spark's default parallelism."""
    return max(1, spark.sparkContext.defaultParallelism)


_server_package: dict[str, str | None] = {}


def server_package_version(spark: SparkSession) -> str | None:
    """The version of offset_audit that a session's Python workers import (None: they cannot), from one
    small task; asked once per session."""
    import pyarrow as pa

    def ask(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _ in batches:
            pass
        try:
            import offset_audit

            version: str | None = offset_audit.__version__
        except ImportError:
            version = None
        yield pa.RecordBatch.from_pydict({"version": [version]}, schema=pa.schema([("version", pa.string())]))

    key = spark.session_id  # type: ignore[attr-defined]
    if key not in _server_package:
        _server_package[key] = spark.range(0, 1, 1, 1).mapInArrow(ask, "version string").collect()[0]["version"]
    return _server_package[key]


def classic_start(function: F) -> F:
    """Marks a function that starts or sizes a classic session (this process's JVM, spark-submit's, the
    warm session's): a run on a Spark Connect server never calls it, since `runtime.session.get_spark` opens
    the remote session (`remote_session`) before any of them. Only runtime/session.py and runtime/gateway.py
    hold such functions (tests/test_connect_routes.py)."""
    return function
