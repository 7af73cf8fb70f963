"""The one place a SparkSession is built.

Five cases. A run given a Spark Connect server (--remote, SPARK_REMOTE, or [spark] "spark.remote")
opens a session of its own there: the server keeps its settings, the run sets the ones it relies on and
sizes its shuffles to the dump and the server's cores (`remote_session`). A warm session's run
(offset_audit.warm) is handed its session as a value (`WarmSession`), which the command line gives
`start_spark`. Code that already started Spark (a notebook, the tests) keeps its session as it is.
Under spark-submit the session is built from what was submitted, so the cluster's master and every
--conf win; the job adds only what it needs and what the user did not set (UTC, its own quiet log4j
settings, shuffle partitions sized to the input and the cluster, see `fit_to_cluster`). Anywhere else a
local session is built from the `[spark]` settings of the run configuration: a few shuffle partitions
and no UI, which suits a laptop, CI and the demo.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

from pyspark.sql import SparkSession

from offset_audit.errors import UserError
from offset_audit.runtime.gateway import start_gateway
from offset_audit.runtime.local_jvm import check_java, driver_java_options, log_config
from offset_audit.session_kind import classic_start, session_cores
from offset_audit.settings import Settings

if TYPE_CHECKING:
    from offset_audit.decoding.report import DecodeReport
    from offset_audit.inputs.opened import OpenedDump
    from offset_audit.outputs.delta import TableWriter

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
    # PySpark records the Python call site of every DataFrame and Column call in the JVM, for the context
    # of an error in the user's own DataFrame code; the job's users write none, and it cost four py4j
    # round trips a call: building an audit's plans took 1.2 s instead of 2.0-2.5 s without it (warm).
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # A session with delta-spark rebuilds each table's state from its log in this many tasks, 50 unless
    # told: for the small tables of an audit on a laptop that made each run 2.7x slower (39 s against
    # 14.5 s on a 4,000-record dump). Ignored without Delta.
    "spark.databricks.delta.snapshotPartitions": "4",
}

# Settings that the job relies on whatever the session: UTC timestamps and Parquet that Delta accepts.
REQUIRED: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}


# Under spark-submit, added when the submitted configuration does not set them.
SUBMIT_DEFAULTS: dict[str, str] = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    "spark.sql.sources.partitionOverwriteMode": "static",
    "spark.python.worker.reuse": "true",
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
SPARK_SHUFFLE_DEFAULT = "200"
DELTA_SNAPSHOT_PARTITIONS = "spark.databricks.delta.snapshotPartitions"
DELTA_SNAPSHOT_DEFAULT = "50"
# A Spark Connect run's own session, also set when the server has another value: the runtime settings
# of SUBMIT_DEFAULTS (the others are the server's to choose when it starts).
REMOTE_DEFAULTS: dict[str, str] = {
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    "spark.sql.sources.partitionOverwriteMode": "static",
}
# Input per shuffle partition when sizing them to a dump; the decoded state the shuffles carry is a
# fraction of the dump, so this errs towards fewer, fuller partitions.
BYTES_PER_SHUFFLE_PARTITION = 256 << 20
MAX_SHUFFLE_PARTITIONS = 4096


@dataclass(frozen=True)
class WarmSession:
    """What the warm session (offset_audit.warm) hands the one run it starts: the run's own session over
    its JVM, and the check that sees the run's [spark] settings first (it may set them on that session,
    or raise to refuse the run). The command line passes it to `start_spark`."""

    spark: SparkSession
    check: Callable[[Mapping[str, str]], None]


# Set on the session a warm session hands a run: the run's report says where it ran.
WARM_SESSION_CONF = "offset_audit.warmSession"


@classic_start
def adopt(warm: WarmSession) -> None:
    """Make the run's session the active one of its process (pyspark's and the JVM's), for the code that
    asks for the active session, and mark it as the warm session's."""
    spark = warm.spark
    spark.conf.set(WARM_SESSION_CONF, "true")
    SparkSession._activeSession = spark
    assert spark._jvm is not None  # a classic session's: SparkSession.__init__ asserts it, and nothing clears it
    spark._jvm.SparkSession.setActiveSession(spark._jsparkSession)


def in_warm_session(spark: SparkSession) -> bool:
    """Whether `spark` is a session the warm session handed a run (`adopt`)."""
    return spark.conf.get(WARM_SESSION_CONF, "false") == "true"


def run_report(spark: SparkSession, command: str, inputs: list[str], settings: Settings) -> DecodeReport:
    """A new run's report, noting whether it runs in the warm session (its --json says so)."""
    from offset_audit.decoding.report import DecodeReport

    report = DecodeReport.start(command, inputs, settings.input.format, settings.kafka.bootstrap_servers)
    report.warm_session = in_warm_session(spark)
    return report


def under_spark_submit() -> bool:
    """spark-submit starts the JVM first and hands this Python process its gateway."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def delta_spark_configured(settings: Mapping[str, str]) -> bool:
    """Whether the session this run will use writes through delta-spark, known before it starts: from
    the `[spark]` settings of a local run, or from what spark-submit was given (its JVM is up already)."""
    if remote_url(settings) is not None:
        return True  # a Connect run writes through Spark; the server's Delta is checked once it answers
    extensions = settings.get("spark.sql.extensions", "")
    active = SparkSession.getActiveSession()
    if active is not None:
        extensions = active.conf.get("spark.sql.extensions", "") or ""
    elif under_spark_submit():
        extensions = _submitted_extensions()
    return "DeltaSparkSessionExtension" in extensions


@classic_start
def _submitted_extensions() -> str:
    """spark.sql.extensions as spark-submit was given it, from its JVM (up before any session)."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return SparkConf().get("spark.sql.extensions", "") or ""


REMOTE = "spark.remote"
CONNECT_EXTRA = "pip install 'kafka-offset-audit[connect]'"


def remote_url(settings: Mapping[str, str]) -> str | None:
    """The Spark Connect server a run was given ([spark] "spark.remote", which --remote and SPARK_REMOTE
    set), or None for a session of the usual kinds."""
    return settings.get(REMOTE) or None


def check_remote(settings: Mapping[str, str], writer: str) -> None:
    """Before anything starts: the URL's form, the Connect client's libraries, and a writer a remote
    session can use. Whether the server answers is known when the session opens."""
    url = remote_url(settings)
    if url is None:
        return
    if not re.fullmatch(r"sc://[^/:;\s]+(:\d+)?/?(;[^;\s]+)*", url):
        raise UserError(f"--remote takes a Spark Connect URL, sc://HOST[:PORT][;NAME=VALUE...], not '{url}'")
    try:
        import grpc  # noqa: F401
        import pyspark.sql.connect.session  # noqa: F401
    except ImportError as err:
        raise UserError(
            f"--remote needs Spark Connect's client libraries ({err.name} is missing): {CONNECT_EXTRA}"
        ) from err
    if writer == "delta-rs":
        from offset_audit.outputs.delta import DELTA_RS_REMOTE

        raise UserError(DELTA_RS_REMOTE)


def remote_session(url: str, input_bytes: int | None) -> SparkSession:
    """A session of the run's own on the Spark Connect server at `url` (a Connect session's SQL settings
    are its own, so what the run sets touches no other client's): UTC, Delta's timestamps, and shuffle
    partitions for this dump on the server's cores unless the server's own setting is not Spark's default."""
    check_reachable_server(url)
    builder = SparkSession.builder.remote(url).config("spark.sql.session.timeZone", "UTC")
    spark = builder.getOrCreate()
    for name, value in {**REMOTE_DEFAULTS, **REQUIRED}.items():
        spark.conf.set(name, value)
    check_server_package(spark)
    cores = session_cores(spark)
    if spark.conf.get(SHUFFLE_PARTITIONS, None) == SPARK_SHUFFLE_DEFAULT:
        spark.conf.set(SHUFFLE_PARTITIONS, str(shuffle_partitions(cores, input_bytes)))
    if spark.conf.get(DELTA_SNAPSHOT_PARTITIONS, None) in (None, DELTA_SNAPSHOT_DEFAULT):
        # The audit's tables are small: see LOCAL_DEFAULTS (a history of the demo's dump took 67 s at
        # Delta's 50 on a 2-core server, 25 s at 4).
        spark.conf.set(DELTA_SNAPSHOT_PARTITIONS, str(2 * cores))
    return spark


# Spark Connect's own port when a URL names none.
CONNECT_PORT = 15002
CONNECT_TIMEOUT_S = 10.0


def check_reachable_server(url: str) -> None:
    """One sentence when nothing answers at the server's address: the Connect client would retry with
    backoff for minutes before giving up."""
    import socket

    address = url.removeprefix("sc://").split("/", 1)[0].split(";", 1)[0]
    host, _, port = address.rpartition(":") if ":" in address else (address, "", "")
    try:
        socket.create_connection((host.strip("[]"), int(port or CONNECT_PORT)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as err:
        raise UserError(f"cannot reach the Spark Connect server at {url}: {err.strerror or err}") from err


def check_server_package(spark: SparkSession) -> None:
    """That the Python workers of a remote session's server import this package, at this version: the
    decoding runs there. One sentence if they do not, rather than a ModuleNotFoundError from a task.
    Asked once per session."""
    from offset_audit import __version__
    from offset_audit.session_kind import server_package_version

    found = server_package_version(spark)
    if found != __version__:
        where = "cannot import offset_audit" if found is None else f"import offset_audit {found}"
        raise UserError(
            f"the Spark Connect server's Python workers {where}, and this run needs {__version__}: install the "
            "same kafka-offset-audit where the server runs its Python (docs/cluster.md, Spark Connect)"
        )


def get_spark(settings: Mapping[str, str] | None = None, input_bytes: int | None = None) -> SparkSession:
    """The session (see the module's docstring); `input_bytes`, the dump's size when known, lets a local
    session over a small dump start a JVM suited to it (`local_jvm.QUICK_JVM_BYTES`)."""
    url = remote_url(settings or {})
    if url is not None:
        return remote_session(url, input_bytes)
    active = SparkSession.getActiveSession()
    if active is not None:
        for name, value in REQUIRED.items():
            active.conf.set(name, value)
        return active
    if under_spark_submit():
        return _submitted_session()
    java_version = check_java()
    # Python workers must run the interpreter that has this package and pyarrow, not whatever
    # `python3` is on the PATH; and a local session should not guess at the machine's network.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder
    options = driver_java_options(log_config(), input_bytes, java_version)
    local = {**LOCAL_DEFAULTS, "spark.driver.extraJavaOptions": options, **(settings or {})}
    start_gateway(local)
    for name, value in local.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    for name, value in REQUIRED.items():
        spark.conf.set(name, value)
    return spark


@classic_start
def _submitted_session() -> SparkSession:
    """The session of a spark-submit run: the submitted master and settings, plus what the job needs."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # the gateway spark-submit started; no SparkContext yet
    jvm = SparkContext._jvm
    log_file = quiet_spark_logs(jvm)
    submitted = SparkConf()  # what spark-submit was given (--conf, --properties-file, spark-defaults.conf)
    builder = SparkSession.builder
    for name, value in {**SUBMIT_DEFAULTS, **REQUIRED}.items():
        if name in REQUIRED or not submitted.contains(name):
            builder = builder.config(name, value)
    spark = builder.getOrCreate()
    if log_file is not None:
        _load_log_settings(jvm, log_file)  # again, in case the SparkContext put Spark's defaults back
    return spark


def quiet_spark_logs(jvm) -> str | None:
    """Load the project's log4j settings into a running JVM (spark-submit's, before the SparkContext and
    its hundreds of INFO lines), unless the user chose a log4j file (-Dlog4j2.configurationFile in
    --driver-java-options or spark.driver.extraJavaOptions). The file loaded, if any.

    Two things stand in the way. spark-submit set up Spark's INFO defaults and marked them as such, and a
    new SparkContext loads them again while that mark is set: it is cleared (an internal of Spark's
    logging, reached only if present; without it the settings are loaded again once the session is up,
    after a few INFO lines). And log4j keeps a logging context per class loader (and a default one);
    spark-submit runs the application under a loader of its own, so each of them gets the file."""
    if jvm.java.lang.System.getProperty("log4j2.configurationFile"):
        return None
    text = (resources.files("offset_audit") / "conf" / "log4j2.properties").read_text()
    # The package may be inside a zip (--py-files): log4j reads a file, so a copy is written out. It is
    # kept until the driver exits: log4j reads it again if anything asks for a reconfiguration.
    with tempfile.NamedTemporaryFile("w", prefix="offset-audit-log4j2-", suffix=".properties", delete=False) as copy:
        copy.write(text)
    atexit.register(_remove, copy.name)
    try:
        logging = jvm.java.lang.Class.forName("org.apache.spark.internal.Logging$").getField("MODULE$").get(None)
        getattr(logging, "org$apache$spark$internal$Logging$$defaultSparkLog4jConfig_$eq")(False)
    except Exception:  # another Spark version: the settings are loaded again after the session starts
        pass
    _load_log_settings(jvm, copy.name)
    return copy.name


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _load_log_settings(jvm, path: str) -> None:
    uri = jvm.java.io.File(path).toURI()
    manager = jvm.org.apache.logging.log4j.LogManager
    spark_loader = jvm.java.lang.Class.forName("org.apache.spark.SparkContext").getClassLoader()
    contexts = [manager.getContext(spark_loader, False), manager.getContext()]
    contexts.append(manager.getContext(jvm.java.lang.Thread.currentThread().getContextClassLoader(), False))
    for context in contexts:
        if context.getConfigLocation() is None or context.getConfigLocation().toString() != uri.toString():
            context.setConfigLocation(uri)


@classic_start
def fit_to_cluster(spark: SparkSession, input_bytes: int | None) -> dict[str, str]:
    """Waits for the cluster's executors (see `cluster_cores`), so the decode's task count sees them,
    then sets the shuffle partitions for this input on this cluster unless the user set them. Returns
    what it set."""
    cores = cluster_cores(spark)
    if spark.sparkContext.getConf().contains(SHUFFLE_PARTITIONS):
        return {}
    partitions = shuffle_partitions(cores, input_bytes)
    spark.conf.set(SHUFFLE_PARTITIONS, str(partitions))
    return {SHUFFLE_PARTITIONS: str(partitions)}


def shuffle_partitions(cores: int, input_bytes: int | None) -> int:
    """At least two per core (one wave, with slack for skew), more for big dumps (one per 256 MiB of
    input), at most 4096. With Spark's own default, 200, an audit on two one-core workers took 10-20%
    longer than with 4 (2M records: 38.4 s against 34.3 s), most of the plan's shuffles holding a few
    thousand rows."""
    wanted = math.ceil((input_bytes or 0) / BYTES_PER_SHUFFLE_PARTITION)
    return min(MAX_SHUFFLE_PARTITIONS, max(2 * cores, wanted))


@classic_start
def cluster_cores(spark: SparkSession, poll_seconds: float = 0.5) -> int:
    """The cores the run can use (Spark's default parallelism), once the executors asked for have
    registered. On a cluster they register a few seconds after the session starts; counted at once, a
    100-core cluster would look like 2 and get 4 decode tasks. Waits until the cores the submission
    asks for are there (spark.cores.max, or executor instances x cores), or, when it does not say, until
    the count has held for two seconds; never past spark.scheduler.maxRegisteredResourcesWaitingTime
    (Spark's own bound for the same wait, 30 s by default). Dynamic allocation adds executors only for
    pending tasks, so there is nothing to wait for."""
    sc = spark.sparkContext
    conf = sc.getConf()
    assert sc.master is not None  # a started context's: SparkContext refuses to start without spark.master
    if sc.master.startswith("local") or conf.get("spark.dynamicAllocation.enabled", "false") == "true":
        return sc.defaultParallelism
    if conf.contains("spark.default.parallelism"):
        return sc.defaultParallelism
    expected = _expected_cores(conf)
    deadline = time.monotonic() + _seconds(conf.get("spark.scheduler.maxRegisteredResourcesWaitingTime", "30s"))
    seen, steady_since = _registered(sc), time.monotonic()
    while time.monotonic() < deadline:
        executors, cores = seen
        if expected is not None and cores >= expected:
            break
        if expected is None and executors > 0 and time.monotonic() - steady_since >= 2:
            break
        time.sleep(poll_seconds)
        now = _registered(sc)
        if now != seen:
            seen, steady_since = now, time.monotonic()
    return sc.defaultParallelism


@classic_start
def _registered(sc) -> tuple[int, int]:
    """Executors registered (block managers but the driver's) and their cores (the coarse-grained
    scheduler's default parallelism is their sum, or 2 while there are fewer)."""
    executors = sc._jsc.sc().getExecutorMemoryStatus().size() - 1
    return executors, sc.defaultParallelism if executors > 0 else 0


def _expected_cores(conf) -> int | None:
    if conf.contains("spark.cores.max"):
        return int(conf.get("spark.cores.max"))
    if conf.contains("spark.executor.instances"):
        return int(conf.get("spark.executor.instances")) * int(conf.get("spark.executor.cores", "1"))
    return None


def _seconds(text: str) -> float:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*", text)
    if not match:
        return 30.0
    value, unit = float(match.group(1)), match.group(2) or "s"
    return value * {"ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600}[unit]


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
        for name, old in before.items():
            if old is None:
                spark.conf.unset(name)
            else:
                spark.conf.set(name, old)


def start_spark(
    settings: Settings, dump: OpenedDump | list[str], input_size: int | None = None, warm: WarmSession | None = None
) -> SparkSession:
    """The run's SparkSession, its progress shown; under spark-submit, with shuffles sized to the dump and
    the cluster (each setting chosen is said on stderr). `dump`: the run's, as preflight opened it (its
    paths, opened here, where a caller has only those); `input_size`: the bytes the run will read, where
    that is not the whole input (an incremental audit's); `warm`: what the warm session handed this run,
    whose session it then runs in."""
    from offset_audit.inputs.opened import opened
    from offset_audit.runtime import progress

    if warm is not None:
        warm.check(settings.spark)  # before any output: a run the warm session refuses starts again elsewhere
        # A warm session's run starts nothing: the stage says whose Spark it runs in, in place of the start.
        progress.begin("joining the warm session")
        for name, value in REQUIRED.items():
            warm.spark.conf.set(name, value)
        progress.attach_spark(warm.spark)
        return warm.spark
    progress.begin("starting Spark")
    remote = remote_url(settings.spark) is not None
    submitted = not remote and under_spark_submit()
    local = not submitted and not remote and SparkSession.getActiveSession() is None
    size = None
    if submitted or local or remote:
        size = input_size if input_size is not None else opened(dump, settings).size
    spark = get_spark(settings.spark, size if local or remote else None)
    progress.attach_spark(spark)
    if submitted:
        for name, value in fit_to_cluster(spark, size).items():
            cores = session_cores(spark)
            data = "a live topic" if size is None else f"{size / 2**20:,.1f} MiB of input"
            print(f"offset-audit: {name}={value} for {cores} cores and {data} (set it to choose)", file=sys.stderr)
    return spark


def table_writer(spark: SparkSession, settings: Settings) -> TableWriter:
    """The run's writer, chosen once when the run starts and handed to every stage that writes."""
    from offset_audit.outputs.delta import choose_writer
    from offset_audit.storage import for_settings

    return choose_writer(spark, settings.output.writer, for_settings(settings))
