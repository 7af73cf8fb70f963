"""Snapshot retention and table upkeep for an output folder: what `--keep-snapshots` does after a run
that wrote a snapshot, and what `offset-audit tidy` does on its own.

1. Retention: of each kind of snapshot (audit, what-if, history), the ones past `--keep-snapshots` (the
   newest N, or those judged within a duration of the newest) lose their rows in every table of that
   kind and their row in the snapshots table: one delete commit per table, which removes whole
   partitions and rewrites nothing. The state under DIR/state (the incremental positions, carried
   records and the log `history --audit` reads) holds no snapshot and is never touched, nor are the
   runs rows, one per run, which say what each run did.
2. Upkeep of every table under the folder: a table whose partitions hold many small files (appends:
   runs, snapshots, state/log) is compacted; files that no version within the deleted-file retention
   lists are vacuumed; a checkpoint is written and commits past the log's retention cleaned up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta

from pyspark.sql import SparkSession

from offset_audit.decoding.report import DecodeReport
from offset_audit.outputs import table_upkeep
from offset_audit.outputs.delta import TableWriter
from offset_audit.outputs.folder_layout import audit_tables
from offset_audit.runtime import progress
from offset_audit.settings import KeepSnapshots, Settings
from offset_audit.storage import basename, join
from offset_audit.table_names import KIND_OF_TABLE, SNAPSHOT_TABLES, SNAPSHOTS_TABLE
from offset_audit.views.audit_folder import Snapshot, by_cluster, has_table, listed_snapshots, snapshots


@dataclass
class Removed:
    """One kind's snapshots removed by retention, for each cluster whose snapshots went: their ids
    (oldest first) and how many of that cluster's stay; and the files each table's delete commit removed
    (one commit per table for every cluster)."""

    kind: str
    clusters: list[ClusterRemoved]
    files: dict[str, int] = field(default_factory=dict)

    @property
    def snapshot_ids(self) -> list[str]:
        return [s for c in self.clusters for s in c.snapshot_ids]

    @property
    def kept(self) -> int:
        return sum(c.kept for c in self.clusters)


@dataclass
class ClusterRemoved:
    """One cluster's snapshots of a kind that retention removed (its name, "" for the unnamed one), and
    how many of its own it keeps."""

    cluster: str
    snapshot_ids: list[str]
    kept: int


@dataclass
class Upkeep:
    """What retention and upkeep did to a folder, for the summary and --json."""

    keep: str | None
    deleted_file_retention_minutes: int
    removed: list[Removed] = field(default_factory=list)
    compacted: list[str] = field(default_factory=list)
    before: dict[str, table_upkeep.TableFiles] = field(default_factory=dict)
    after: dict[str, table_upkeep.TableFiles] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def vacuumed_files(self) -> int:
        return sum(max(0, self.before[t].data_files - self.after[t].data_files) for t in self.after if t in self.before)

    @property
    def vacuumed_bytes(self) -> int:
        return sum(max(0, self.before[t].data_bytes - self.after[t].data_bytes) for t in self.after if t in self.before)

    def document(self) -> dict:
        """The --json form."""
        totals = {
            moment: {
                "tables": len(files),
                "live_files": sum(f.live_files for f in files.values()),
                "data_files": sum(f.data_files for f in files.values()),
                "data_bytes": sum(f.data_bytes for f in files.values()),
                "log_files": sum(f.log_files for f in files.values()),
                "log_bytes": sum(f.log_bytes for f in files.values()),
            }
            for moment, files in (("before", self.before), ("after", self.after))
        }
        return {
            "keep_snapshots": self.keep,
            "deleted_file_retention_minutes": self.deleted_file_retention_minutes,
            "removed": [
                {
                    "kind": r.kind,
                    "snapshot_ids": r.snapshot_ids,
                    "kept": r.kept,
                    "clusters": [
                        {"cluster": c.cluster, "snapshot_ids": c.snapshot_ids, "kept": c.kept} for c in r.clusters
                    ],
                    "files_removed": r.files,
                }
                for r in self.removed
            ],
            "compacted": self.compacted,
            "vacuumed_files": self.vacuumed_files,
            "vacuumed_bytes": self.vacuumed_bytes,
            **totals,
            "seconds": round(self.seconds, 3),
        }


def to_remove(listed: list[Snapshot], keep: KeepSnapshots) -> list[Snapshot]:
    """The snapshots past `keep`, oldest first: all but the newest `count`, or those judged more than
    `minutes` before the newest one. The newest is always kept."""
    if not listed:
        return []
    if keep.count is not None:
        return listed[: max(0, len(listed) - keep.count)]
    cutoff = listed[-1].judged_at - timedelta(minutes=keep.minutes or 0)
    return [s for s in listed[:-1] if s.judged_at < cutoff]


def prune(
    output: str,
    keep: KeepSnapshots,
    writer: TableWriter,
    spark: SparkSession | None,
    run_id: str | None,
    only: Snapshot | None = None,
) -> list[Removed]:
    """Retention: each kind's snapshots past `keep`, for each cluster (or only the cluster `only`'s
    snapshots belong to: a run's own schedule keeps its own snapshots, never another cluster's), removed
    from its tables, one commit per table. A snapshot is its cluster and its id: another cluster's
    snapshot of the same id stays."""
    storage = writer.storage
    removed = []
    for kind, tables in SNAPSHOT_TABLES.items():
        present = [t for t in tables if has_table(output, t, storage)]
        if not present:
            continue
        # Every snapshot any of the kind's tables holds (a run killed between two tables leaves one in
        # some only), in the first table's order (by as_of, then as written); the sort is stable.
        listed = listed_snapshots(output, kind, storage)  # the snapshots table, read once for the kind
        ordered = snapshots(output, present[0], storage, listed)
        known = {s.key for s in ordered}
        for table in present[1:]:
            more = [s for s in snapshots(output, table, storage, listed) if s.key not in known]
            ordered += more
            known |= {s.key for s in more}
        ordered.sort(key=lambda s: s.judged_at)
        # Per cluster: in a fleet's folder one cluster's schedule never pushes out another's snapshots.
        groups = [g for g in by_cluster(ordered).values() if only is None or any(s.same_cluster(only) for s in g)]
        done = Removed(kind, [])
        going: list[Snapshot] = []
        for group in groups:
            past = to_remove(group, keep)
            going += past
            for name in dict.fromkeys(s.cluster for s in past):  # a cluster named later: each name's own
                their_ids = [s.snapshot_id for s in past if s.cluster == name]
                done.clusters.append(ClusterRemoved(name, their_ids, len(group) - len(past)))
        if not going:
            continue
        ids = {
            name: [s.snapshot_id for s in going if s.cluster == name]
            for name in dict.fromkeys(s.cluster for s in going)
        }
        for table in present:
            done.files[table] = table_upkeep.delete_snapshots(join(output, table), ids, writer, spark, run_id)
        if has_table(output, SNAPSHOTS_TABLE, storage):
            path = join(output, SNAPSHOTS_TABLE)
            done.files[SNAPSHOTS_TABLE] = table_upkeep.delete_snapshots(path, ids, writer, spark, run_id, kind)
        removed.append(done)
    return removed


def keep_and_tidy(
    spark: SparkSession, output: str, settings: Settings, report: DecodeReport, writer: TableWriter
) -> None:
    """After a run that wrote a snapshot: retention and upkeep, when [output] keep_snapshots (or
    --keep-snapshots) is set; noted in the report for the summary and --json."""
    keep = settings.output.keep_snapshots
    if keep is None:
        return
    progress.begin(f"keeping {keep} snapshots and tidying the tables")
    own = Snapshot("", None, None, cluster=report.cluster or "", cluster_id=report.cluster_id)
    retention = settings.output.deleted_file_retention_minutes
    done = tidy(output, writer, spark, keep, retention, report.run_id, only=own)
    report.upkeep = done.document()


def tidy(
    output: str,
    writer: TableWriter,
    spark: SparkSession | None,
    keep: KeepSnapshots | None,
    deleted_file_retention_minutes: int,
    run_id: str | None = None,
    only: Snapshot | None = None,
) -> Upkeep:
    """Retention (when `keep` is given; of the cluster of `only` alone, when given), then upkeep of the
    tables this tool keeps in the audit folder `output` (folder_layout.audit_tables), no other."""
    started = time.monotonic()
    storage = writer.storage
    upkeep = Upkeep(None if keep is None else str(keep), deleted_file_retention_minutes)
    tables = audit_tables(output, storage)
    upkeep.before = {t: table_upkeep.table_files(join(output, t), storage) for t in tables}
    if keep is not None:
        upkeep.removed = prune(output, keep, writer, spark, run_id, only)
    # What this tidy removed is due at once only when the retention is 0; otherwise vacuum waits for files
    # that were unlisted before it (TableFiles.vacuum_due).
    changed = {table for r in upkeep.removed for table in r.files}
    for table in tables:
        path = join(output, table)
        # The counts taken before serve, unless retention has just rewritten the table. A snapshot table is
        # never compacted: each of its files holds one cluster's snapshot, so that a fleet's cluster replaces
        # and removes its own without rewriting another's (outputs.delta.Within), and a snapshot is written
        # once, not appended to.
        snapshot_table = basename(table) in KIND_OF_TABLE
        compacted = not snapshot_table and (
            table_upkeep.needs_compaction(path, storage) if table in changed else upkeep.before[table].needs_compaction
        )
        if compacted:
            table_upkeep.compact(path, writer, spark, run_id)
            upkeep.compacted.append(table)
        now = deleted_file_retention_minutes == 0 and (table in changed or compacted)
        if now or upkeep.before[table].vacuum_due(deleted_file_retention_minutes):
            table_upkeep.vacuum(path, deleted_file_retention_minutes, writer, spark)
        if not writer.delta_spark:  # delta-spark checkpoints and cleans its log as it commits
            table_upkeep.checkpoint(path, storage, changed=table in changed or compacted)
    upkeep.after = {t: table_upkeep.table_files(join(output, t), storage) for t in tables}
    upkeep.seconds = time.monotonic() - started
    return upkeep
