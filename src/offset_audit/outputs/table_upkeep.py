"""Keeping a folder's Delta tables small as runs accumulate: removing rows in one commit, compacting the
small files appends leave, vacuuming files no version still lists, and checkpoints. Each through the
engines' own operations (delta-rs' delete, optimize.compact, vacuum and create_checkpoint; delta-spark's
DELETE, OPTIMIZE and VACUUM in SQL, which a Spark Connect server runs as it is), by the route the run
writes with.

A scheduled audit adds a commit and a few files to each table every run: in a year of hourly runs a
table without upkeep lists 8,760 snapshots, and runs/ holds 8,760 one-row files that every read opens.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from offset_audit.outputs.delta import TABLE_PROPERTIES, TableWriter, again_on_conflict, commit_properties
from offset_audit.snapshot_ids import id_list
from offset_audit.storage import Storage, join, spark_path

# A table is compacted once one of its partitions holds this many live files: appends (runs, snapshots,
# state/log) add one or a few files a run, while a snapshot's partition is written once and stays as it is.
COMPACT_AT_FILES = 8
# The commits a table's log may hold past its newest checkpoint before upkeep writes one (the tables'
# own delta.checkpointInterval).
CHECKPOINT_INTERVAL = int(TABLE_PROPERTIES["delta.checkpointInterval"])


@dataclass(frozen=True)
class TableFiles:
    """A table's size on the store: its live files (those its current version lists), every data file
    under its folder (live, or removed but not yet vacuumed), and its _delta_log; and when the oldest
    data file it no longer lists was written (seconds since the epoch; None: every file is live); and the
    live files of its fullest partition (the whole table's when unpartitioned), which compaction goes by."""

    live_files: int
    data_files: int
    data_bytes: int
    log_files: int
    log_bytes: int
    oldest_unlisted: float | None = None
    fullest_partition: int = 0

    @property
    def needs_compaction(self) -> bool:
        return self.fullest_partition >= COMPACT_AT_FILES

    def vacuum_due(self, retention_minutes: int, now: float | None = None) -> bool:
        """Whether vacuum can delete anything: a file is removed after it was written, and vacuum deletes
        only files removed more than the retention ago, so when every unlisted file was written within it,
        vacuum would only list the folder (seconds through delta-spark) to delete nothing."""
        if self.oldest_unlisted is None:
            return False
        return self.oldest_unlisted < (time.time() if now is None else now) - retention_minutes * 60


def table_files(path: str, storage: Storage) -> TableFiles:
    from deltalake import DeltaTable

    files = storage.file_sizes(path)
    log = {name: size for name, (size, _) in files.items() if name.startswith("_delta_log/")}
    data = {name: stat for name, stat in files.items() if name not in log and not name.endswith(".crc")}
    table = DeltaTable(path, storage_options=storage.delta_options)
    actions = pa.table(table.get_add_actions(flatten=True))
    live = {unquote(p) for p in actions.column("path").to_pylist()}
    unlisted = [written for name, (_, written) in data.items() if name not in live]
    return TableFiles(
        len(live),
        len(data),
        sum(size for size, _ in data.values()),
        len(log),
        sum(log.values()),
        min(unlisted) if unlisted else None,
        _fullest_partition(actions, table.metadata().partition_columns),
    )


def _fullest_partition(actions: pa.Table, keys: list[str]) -> int:
    """The live files of the table's fullest partition, from its add actions."""
    if not actions.num_rows or not keys:
        return actions.num_rows
    counts = actions.group_by([f"partition.{k}" for k in keys], use_threads=False).aggregate([([], "count_all")])
    return int(pc.max(counts["count_all"]).as_py())


def delete_rows(path: str, predicate: str, writer: TableWriter, spark: SparkSession | None, run_id: str | None) -> int:
    """Remove the rows matching `predicate` (SQL text of our own making: column names and snapshot ids,
    which need no quoting) in one commit; the number of files it removed. A predicate on the partition
    column only removes whole files, rewriting none. A commit that meets another writer's is made again
    on the table as it now is, as every write of this tool is."""
    if writer.delta_spark:
        from offset_audit.outputs.delta import table_path

        assert spark is not None  # a delta-spark writer is chosen on a session (choose_writer)

        def spark_delete() -> int:
            target = table_path(spark_path(path))
            spark.sql(f"DELETE FROM {target} WHERE {predicate}").collect()
            metrics = spark.sql(f"DESCRIBE HISTORY {target} LIMIT 1").collect()[0].operationMetrics or {}
            return int(metrics.get("numRemovedFiles", 0))

        return again_on_conflict(path, spark_delete)
    from deltalake import DeltaTable

    def delete() -> int:
        table = DeltaTable(path, storage_options=writer.storage.delta_options)
        metrics = table.delete(predicate, commit_properties=commit_properties(run_id))
        return int(metrics.get("num_removed_files", 0))

    return again_on_conflict(path, delete)


def delete_snapshots(
    path: str,
    ids: dict[str, list[str]],
    writer: TableWriter,
    spark: SparkSession | None,
    run_id: str | None,
    kind: str | None = None,
) -> int:
    """Remove the rows of these snapshots (each cluster's ids; `kind`: of that kind, in the snapshots
    table) in one commit; the files it removed. A snapshot is its cluster's rows of its id: another
    cluster's snapshot of the same id stays. A table without the cluster column (an older version of
    this tool wrote it) holds only the unnamed cluster's rows, as do rows without a cluster."""
    from deltalake import DeltaTable

    from offset_audit.delta_files import CLUSTER, live_files
    from offset_audit.outputs.delta import Within

    table = DeltaTable(path, storage_options=writer.storage.delta_options)
    has_cluster = CLUSTER in table.schema().to_arrow().names
    going = {(name, s) for name, snapshot_ids in ids.items() for s in snapshot_ids if has_cluster or name == ""}
    # An id whose every file holds only the clusters going is removed by its partition value alone: whole
    # files, none read. Only an id two clusters share (one of them staying) needs the cluster column.
    shared: set[str] = set()
    if has_cluster and "snapshot_id" in table.metadata().partition_columns:
        for file in live_files(table, ["snapshot_id"], values_of=CLUSTER, path=path, storage=writer.storage):
            snapshot_id = file["values"]["snapshot_id"]
            if any((name, snapshot_id) not in going for name in file["holds"]):
                shared.add(snapshot_id)
    elif has_cluster:  # the snapshots table: a row each, not partitioned
        shared = {snapshot_id for _, snapshot_id in going}
    clauses = []
    whole = sorted({snapshot_id for _, snapshot_id in going} - shared)
    if whole:
        clauses.append(f"(snapshot_id IN ({id_list(whole)}))")
    for name, snapshot_ids in ids.items():
        mine = [s for s in snapshot_ids if s in shared and (name, s) in going]
        if mine:
            condition = Within(CLUSTER, name, frozenset([name])).condition()
            clauses.append(f"({condition} AND snapshot_id IN ({id_list(mine)}))")
    if not clauses:
        return 0
    rows = " OR ".join(clauses)
    return delete_rows(path, rows if kind is None else f"kind = '{kind}' AND ({rows})", writer, spark, run_id)


def needs_compaction(path: str, storage: Storage, at_files: int = COMPACT_AT_FILES) -> bool:
    """Whether one of the table's partitions holds `at_files` live files or more."""
    from deltalake import DeltaTable

    table = DeltaTable(path, storage_options=storage.delta_options)
    actions = pa.table(table.get_add_actions(flatten=True))
    return _fullest_partition(actions, table.metadata().partition_columns) >= at_files


def compact(path: str, writer: TableWriter, spark: SparkSession | None, run_id: str | None) -> None:
    """Rewrite each partition's small files as few large ones, in one commit that changes no row."""
    if writer.delta_spark:
        from offset_audit.outputs.delta import table_path

        assert spark is not None  # a delta-spark writer is chosen on a session (choose_writer)
        again_on_conflict(path, lambda: spark.sql(f"OPTIMIZE {table_path(spark_path(path))}").collect())
        return
    from deltalake import DeltaTable

    again_on_conflict(
        path,
        lambda: DeltaTable(path, storage_options=writer.storage.delta_options).optimize.compact(
            commit_properties=commit_properties(run_id)
        ),
    )


def compact_when_many(path: str, writer: TableWriter, spark: SparkSession | None, run_id: str | None) -> bool:
    """Compact a table every run appends a row to (runs, snapshots) once it holds COMPACT_AT_FILES files:
    every read command opens it whole, and a year of hourly one-row files took 0.6 s to read where one
    file takes milliseconds. Whether it compacted."""
    if not needs_compaction(path, writer.storage):
        return False
    compact(path, writer, spark, run_id)
    return True


def vacuum(path: str, retention_minutes: int, writer: TableWriter, spark: SparkSession | None) -> None:
    """Delete the files no version within `retention_minutes` lists (nor any newer one). A reader still
    on an older version keeps its files for that long, which is what Delta's retention is for; a
    retention under Delta's own week is the operator's choice ([output] deleted_file_retention), so
    Delta's check against it is turned off here rather than refused."""
    hours = math.ceil(retention_minutes / 60)
    if writer.delta_spark:
        from offset_audit.outputs.delta import table_path
        from offset_audit.session_kind import session_cores

        assert spark is not None  # a delta-spark writer is chosen on a session (choose_writer)
        spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        # delta-spark lists the table's folder in spark.sql.sources.parallelPartitionDiscovery.parallelism
        # tasks, 10,000 by default: 20-45 s a table on 2 local cores, against 2 s in as many tasks as the
        # session has cores. The setting is the session's again afterwards.
        listing = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
        before = spark.conf.get(listing, None)
        spark.conf.set(listing, str(session_cores(spark)))
        try:
            spark.sql(f"VACUUM {table_path(spark_path(path))} RETAIN {hours} HOURS").collect()
        finally:
            if before is None:
                spark.conf.unset(listing)
            else:
                spark.conf.set(listing, before)
        return
    from deltalake import DeltaTable

    DeltaTable(path, storage_options=writer.storage.delta_options).vacuum(
        retention_hours=hours, dry_run=False, enforce_retention_duration=False
    )


def checkpoint(path: str, storage: Storage, interval: int = CHECKPOINT_INTERVAL, changed: bool = False) -> bool:
    """A checkpoint of the table's current version when the newest one is `interval` commits behind or
    more (a table created without delta.checkpointInterval, or whose commits skipped the hook), or when
    upkeep just `changed` it (retention removed most of its files: readers would otherwise replay the
    checkpoint that lists them all, then the removes), and the
    commits and checkpoints older than the log's retention (delta.logRetentionDuration, 30 days by
    default) removed: opening the table reads one checkpoint and fewer than `interval` commits after it,
    however many runs came before. Whether a checkpoint was written."""
    from deltalake import DeltaTable

    table = DeltaTable(path, storage_options=storage.delta_options)
    behind = table.version() - _last_checkpoint(path, storage)
    due = behind >= interval or (changed and behind > 0)
    if due:
        table.create_checkpoint()
    table.cleanup_metadata()
    return due


def _last_checkpoint(path: str, storage: Storage) -> int:
    """The version of the table's newest checkpoint (-1: none)."""
    try:
        with storage.open_input_file(join(path, "_delta_log", "_last_checkpoint")) as handle:
            return int(json.loads(handle.read())["version"])
    except (FileNotFoundError, OSError, ValueError, KeyError):
        return -1
