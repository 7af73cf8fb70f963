"""The history command end to end: decode everything -> offset_history (coordinator/history.py) -> Delta,
and what the summary needs: each group's reach back in time, causes counted, and the retentions that
agree with every tombstone the sweep wrote.

Named as coordinator/history.py is by design: each module of runs/ is named after the command it runs.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from offset_audit.broker_versions import BrokerVersion
from offset_audit.coordinator import history
from offset_audit.coordinator.retention_bound import RetentionBound, retention_bound
from offset_audit.decoding.report import DecodeReport
from offset_audit.inputs.opened import OpenedDump, opened
from offset_audit.outputs.folder_layout import DECODED
from offset_audit.outputs.kept_log import KeptLog, kept_records
from offset_audit.outputs.read_back import read_table
from offset_audit.outputs.runs_table import write_run
from offset_audit.outputs.snapshot_tables import own_snapshot, record_snapshot, write_snapshot
from offset_audit.runs.clusters import UNASKED, home, judge_as, resolve
from offset_audit.runs.decode import decode_dump
from offset_audit.runs.snapshots import resolve_as_of, snapshot_id_for
from offset_audit.runs.state import (
    GROUP_TABLES,
    SMALL_STATE_CONF,
    SMALL_STATE_ROWS,
    TINY_STATE_CONF,
    TINY_STATE_ROWS,
    broker_rules,
    decoded_tables,
    newest_record,
)
from offset_audit.runs.upkeep import keep_and_tidy
from offset_audit.runtime import progress
from offset_audit.runtime.session import run_report, scoped_conf, table_writer
from offset_audit.session_kind import connect_route
from offset_audit.settings import Settings
from offset_audit.storage import for_settings, join
from offset_audit.table_names import HISTORY, RUNS_TABLE, SNAPSHOT_TABLES, SNAPSHOTS_TABLE
from offset_audit.timestamps import datetime_of

(HISTORY_TABLE,) = SNAPSHOT_TABLES[HISTORY]


def written_tables() -> list[str]:
    """Every table a history run writes under its output folder, checked before Spark starts."""
    return [HISTORY_TABLE, SNAPSHOTS_TABLE, RUNS_TABLE, *decoded_tables()]


class Held:
    """The frames a history run computes once and reads again (`history.offset_history`'s `hold`),
    each a local checkpoint: its rows kept by the executors and its plan cut short, so that what is
    built on it neither computes it nor plans it again. As one query, history replayed every tombstone's
    moment four times over (the offset deletions thrice) in 78 Spark jobs, all planned at once: writing
    offset_history took 26-74 s for 300,000 records, and 35 s for 3,000. A local checkpoint does not
    survive the loss of the executor holding it: history runs locally (jobs/ has no entry for it).
    Released when the block ends."""

    def __init__(self) -> None:
        self.frames: list[DataFrame] = []

    def __call__(self, frame: DataFrame) -> DataFrame:
        kept = frame.localCheckpoint(eager=True)
        self.frames.append(kept)
        return kept

    def __enter__(self) -> Held:
        return self

    def __exit__(self, *exc) -> None:
        for frame in self.frames:
            _release(frame)
        self.frames.clear()


def _dropped(frame: DataFrame) -> None:
    """On a Spark Connect session a checkpoint's blocks are the server's, released when the client lets
    go of the last DataFrame that names them: nothing to ask for."""


@connect_route(_dropped)
def _release(frame: DataFrame) -> None:
    """Unpersist a local checkpoint's blocks now rather than when the JVM's cleaner gets to them."""
    with contextlib.suppress(Exception):  # a Spark whose plan has no RDD there: the cleaner frees it
        frame._jdf.queryExecution().analyzed().rdd().unpersist(False)


@dataclass
class HistoryResult:
    report: DecodeReport
    snapshot_id: str
    retention_minutes: int
    events_by_kind: dict[tuple[str, str | None], int] = field(default_factory=dict)
    reach: list[dict] = field(default_factory=list)  # per group: first and last event, events
    timeline: list[dict] = field(default_factory=list)  # the events of --group, in log order
    retention: RetentionBound = field(default_factory=RetentionBound)
    groups: list[str] = field(default_factory=list)
    kept: KeptLog | None = None


def run_history(
    spark: SparkSession,
    dump: OpenedDump | list[str],
    output: str,
    settings: Settings,
    groups: list[str] | None = None,
    topic: str | None = None,
    snapshot_id: str | None = None,
    kept: KeptLog | None = None,
) -> HistoryResult:
    """`dump`: as `inputs.opened.open_dump` opened it before Spark started (else its paths, opened here);
    `kept` (history --audit): the records incremental audits kept in an audit folder are the dump, read as
    they were kept (nothing listed)."""
    source = None
    if kept is not None:
        settings = settings.replaced("input", format=kept.input_format)
        dump = OpenedDump((kept.path,), (kept.path,), settings, for_settings(settings))
    dump = opened(dump, settings)
    settings = dump.settings
    report = run_report(spark, "history", list(dump.inputs), settings)
    writer = table_writer(spark, settings)
    storage = writer.storage
    # The records an audit kept are of the cluster its state names.
    found = (kept.state.cluster_id if kept.state is not None else None) if kept is not None else UNASKED
    cluster = resolve(spark, dump, output, found=found)
    judge_as(report, cluster)
    if kept is not None:
        source = kept_records(spark, kept, settings.input.topic, storage)
    cluster_home = home(output, cluster, settings)
    decoded_dir = join(cluster_home, DECODED)
    decoded = decode_dump(spark, dump, decoded_dir, report, writer, source=source)
    named = join(cluster_home[len(output) :].strip("/"), DECODED) if cluster_home != output else DECODED
    report.table_rows = {f"{named}/{name}": rows for name, rows in report.table_rows.items()}
    report.table_versions = {f"{named}/{name}": v for name, v in report.table_versions.items()}
    tables = {
        name: read_table(spark, decoded_dir, name, storage)
        for name in ("offset_commits", "group_metadata", "group_members", "modern_group_records")
    }
    log = history.DecodedLog(*tables.values()).only(groups, topic)
    newest = decoded.newest_record
    if newest is None:  # decoded through Spark (a session with Delta): the decode tables say
        newest = newest_record(tables["offset_commits"], tables["group_metadata"], tables["modern_group_records"])
    as_of = datetime.now(UTC) if newest is None else resolve_as_of("latest", newest)
    snapshot = snapshot_id_for(report, newest, as_of, snapshot_id)
    version = broker_rules(settings, report)
    group_rows = sum(report.table_rows.get(f"{named}/{name}", 0) for name in GROUP_TABLES)
    with Held() as hold:
        events = _events(spark, log, settings, topic, version, group_rows, hold)
        shaped = events.withColumn("as_of", F.lit(as_of).cast("timestamp")).withColumn(
            "retention_minutes", F.lit(settings.audit.retention_minutes)
        )
        progress.begin(f"writing {HISTORY_TABLE}")
        write_snapshot(shaped, output, HISTORY_TABLE, snapshot, report, writer)
    row = {"kind": HISTORY, "snapshot_id": snapshot, "as_of": as_of, "written_at": datetime.now(UTC)}
    record_snapshot(spark, output, row | {"retention_minutes": settings.audit.retention_minutes}, report, writer)
    result = HistoryResult(report, snapshot, settings.audit.retention_minutes, groups=list(groups or []), kept=kept)
    _summarise(spark, result, output, snapshot, storage, groups, settings.audit.check_interval_ms)
    report.snapshot_id, report.as_of, report.retention_minutes = snapshot, as_of, settings.audit.retention_minutes
    report.finished_at = datetime.now(UTC)
    progress.begin("writing the runs row")
    write_run(spark, writer, report, output)
    keep_and_tidy(spark, output, settings, report, writer)
    return result


def _events(
    spark: SparkSession,
    log: history.DecodedLog,
    settings: Settings,
    topic: str | None,
    version: BrokerVersion,
    group_rows: int,
    hold: Held,
) -> DataFrame:
    """offset_history's events, the parts read more than once computed and held first: the records the
    tombstones are judged on, then the deletions and the group events. What is judged is small in most
    logs, however big (the commits of the few partitions and groups deleted): it is replayed as the
    audit replays a small state (runs.state, SMALL_STATE_ROWS and TINY_STATE_ROWS)."""
    progress.begin("finding the records each tombstone is judged on")
    judged = log.judged_part()
    assert judged.incarnations is not None  # judged_part always works them out
    judged_commits, incarnations = hold(judged.commits), hold(judged.incarnations)  # both read every commit
    judged_rows = judged_commits.count() + group_rows
    small = judged_rows <= SMALL_STATE_ROWS
    progress.begin("replaying every group's log and judging its tombstones")
    with scoped_conf(spark, TINY_STATE_CONF if judged_rows <= TINY_STATE_ROWS else SMALL_STATE_CONF if small else {}):
        if small:
            judged_commits = judged_commits.coalesce(1)
            log = history.DecodedLog(log.commits, *(f.coalesce(1) for f in (log.metadata, log.members, log.modern)))
        judged = history.DecodedLog(judged_commits, log.metadata, log.members, log.modern, incarnations)
        retention, interval = settings.audit.retention_minutes, settings.audit.check_interval_ms
        return history.offset_history(log, retention, interval, topic, version, judged=judged, hold=hold)


def _summarise(spark, result: HistoryResult, output: str, snapshot: str, storage, groups, interval_ms: int) -> None:
    """What the summary prints, read back from the table just written (a few aggregations)."""
    table = own_snapshot(read_table(spark, output, HISTORY_TABLE, storage), snapshot, result.report)
    counts = table.groupBy("event", "cause").count().collect()
    result.events_by_kind = {(r["event"], r["cause"]): r["count"] for r in counts}
    reach = (
        table.groupBy("group_id")
        .agg(
            F.min("event_time_ms").alias("first_ms"),
            F.max("event_time_ms").alias("last_ms"),
            F.count(F.lit(1)).alias("events"),
            F.sum((F.col("event") == history.COMMITTED).cast("int")).alias("commits"),
            F.sum(F.col("event").isin(history.OFFSET_DELETED, history.GROUP_DELETED).cast("int")).alias("deletions"),
        )
        .orderBy("group_id")
        .collect()
    )
    result.reach = [
        {**r.asDict(), "first": datetime_of(r["first_ms"]), "last": datetime_of(r["last_ms"])} for r in reach
    ]
    swept = (
        table.where((F.col("event") == history.OFFSET_DELETED) & (F.col("cause") == history.EXPIRED))
        .select(
            "group_id",
            "topic",
            "partition",
            "event_time_ms",
            "rule",
            "base_timestamp_ms",
            "expires_at_ms",
            "sweep_window_end_ms",
            "source_partition",
            "source_offset",
        )
        .collect()
    )
    result.retention = retention_bound([r.asDict() for r in swept], interval_ms)
    if groups:
        result.timeline = timeline_rows(table.where(F.col("group_id").isin(*groups)))


COMMIT_RUN = "COMMIT_RUN"


def timeline_rows(events: DataFrame) -> list[dict]:
    """The events of a few groups for their printed timeline, in log order: every event but commits as
    it is, and each run of commits between two other events folded, per partition, into one row
    (`COMMIT_RUN`: first and last time and offset, commits, transactional ones). A busy group commits
    thousands of times; the deletions and state changes are what an operator reads."""
    order = Window.partitionBy("group_id").orderBy("source_partition", "source_offset")
    marked = events.withColumn(
        "_segment",
        F.sum((F.col("event") != history.COMMITTED).cast("int")).over(order.rowsBetween(Window.unboundedPreceding, 0)),
    )
    others = marked.where(F.col("event") != history.COMMITTED).drop("_segment").collect()
    position = F.struct("source_partition", "source_offset")
    runs = (
        marked.where(F.col("event") == history.COMMITTED)
        .groupBy("group_id", "_segment", "topic", "partition")
        .agg(
            F.min(position).alias("_first"),
            F.min_by("event_time", position).alias("event_time"),
            F.max_by("event_time", position).alias("last_time"),
            F.min_by("committed_offset", position).alias("committed_offset"),
            F.max_by("committed_offset", position).alias("last_offset"),
            F.count(F.lit(1)).alias("commits"),
            F.sum(F.col("transaction").isNotNull().cast("int")).alias("transactional"),
        )
        .collect()
    )
    rows = [r.asDict() for r in others]
    for run in runs:
        row = run.asDict()
        first = row.pop("_first")
        row.update(event=COMMIT_RUN, source_partition=first["source_partition"], source_offset=first["source_offset"])
        rows.append(row)
    return sorted(rows, key=lambda r: (r["group_id"], r["source_partition"], r["source_offset"]))
