"""Reading an audit's output tables without Spark: the read commands (describe, delete-plan, report,
metrics) answer in about a second, and never start a JVM for a table of a few thousand rows.

Tables are read with delta-rs at their current version; every snapshot table is partitioned by
snapshot_id, so one snapshot is a partition filter.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.delta_files import live_files, read_live
from offset_audit.errors import InputNotFound, UserError
from offset_audit.snapshot_ids import AUDIT, KIND_OF_TABLE, SNAPSHOTS_TABLE
from offset_audit.storage import LOCAL, Storage, join


def has_table(folder: str, name: str, storage: Storage = LOCAL) -> bool:
    return storage.is_dir(join(folder, name, "_delta_log"))


@contextmanager
def readable(folder: str, name: str) -> Iterator[None]:
    """A damaged, vacuumed or half-written table is one sentence naming the table and what is wrong with
    it (a UserError), never delta-rs' or pyarrow's traceback."""
    from deltalake.exceptions import DeltaError

    try:
        yield
    except FileNotFoundError as err:
        gone = str(err).split("'")[1] if str(err).count("'") >= 2 else err.filename or "a file"
        raise UserError(
            f"the {name} table under '{folder}' cannot be read: a data file its log lists is gone (vacuumed "
            f"or deleted?): {gone}"
        ) from err
    except (DeltaError, OSError, pa.ArrowException) as err:
        what = "its Delta log is damaged or incomplete" if isinstance(err, DeltaError) else "a data file is damaged"
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise UserError(f"the {name} table under '{folder}' cannot be read: {what} ({reason})") from err


def read_table(
    folder: str,
    name: str,
    storage: Storage = LOCAL,
    columns: list[str] | None = None,
    partition: tuple[str, str] | None = None,
) -> pa.Table:
    """The table `name` under `folder` at its current version (an error naming the folder if absent),
    optionally only the files of one partition value (`("snapshot_id", id)`), through delta_files."""
    from deltalake import DeltaTable

    if not has_table(folder, name, storage):
        raise InputNotFound(f"'{folder}' holds no {name} table: run offset-audit audit --output {folder} first")
    path = join(folder, name)
    with readable(folder, name):
        return read_live(
            DeltaTable(path, storage_options=storage.delta_options),
            path,
            storage,
            columns,
            partition,
            missing_type=lambda column: _column_type(name, column),
        )


def _column_type(table: str, column: str) -> pa.DataType:
    from offset_audit.layouts.tables import arrow_type, table_schema

    for known in table_schema(table).columns:
        if known.name == column:
            return arrow_type(known.type)
    raise UserError(f"the {table} table has no column {column}")


@dataclass(frozen=True)
class Snapshot:
    """One audited snapshot: its id, the time it was judged at, and the retention it was judged with;
    for an audit's snapshot listed in the snapshots table, the totals report's history chart draws
    (offsets, expired, expiring_soon, lag, groups), None otherwise; and the cluster it is of (its name,
    "" for none or a snapshot written before fleets, and its id where known)."""

    snapshot_id: str
    as_of: object
    retention_minutes: int | None
    totals: dict | None = None
    cluster: str = ""
    cluster_id: str | None = None

    def same_cluster(self, other: Snapshot) -> bool:
        """Of one cluster: by id where both know it, else by name."""
        if self.cluster_id and other.cluster_id:
            return self.cluster_id == other.cluster_id
        return self.cluster == other.cluster


def cluster_label(name: str | None) -> str:
    return name or "(unnamed)"


def by_cluster(known: list[Snapshot]) -> dict[str, list[Snapshot]]:
    """A folder's snapshots by cluster, each oldest first, the clusters in the order of their newest
    snapshot. A cluster is its id where known (a name's snapshots from before its id was known, as of a
    snapshot dump, go with the id it names later), else its name."""
    ids = {s.cluster: s.cluster_id for s in known if s.cluster_id}
    groups: dict[str, list[Snapshot]] = {}
    for snapshot in known:
        key = snapshot.cluster_id or ids.get(snapshot.cluster) or snapshot.cluster
        groups.setdefault(key, []).append(snapshot)
    return dict(sorted(groups.items(), key=lambda item: known.index(item[1][-1])))


def cluster_names(known: list[Snapshot]) -> list[str]:
    """Each cluster's name as its newest snapshot gives it."""
    return [cluster_label(group[-1].cluster) for group in by_cluster(known).values()]


def of_cluster(known: list[Snapshot], cluster: str, folder: str) -> list[Snapshot]:
    """The snapshots of --cluster NAME: by its name, or by its id (a cluster audited under its id
    before it was given a name); a cluster the folder does not hold is refused in one sentence."""
    groups = by_cluster(known).values()
    chosen = {id(s) for group in groups if any(cluster in (s.cluster, s.cluster_id) for s in group) for s in group}
    mine = [s for s in known if id(s) in chosen]
    if not mine:
        names = ", ".join(cluster_names(known)) or "none"
        raise UserError(f"'{folder}' holds no snapshot of cluster {cluster} (its clusters: {names})")
    return mine


TOTALS = ("offsets", "expired", "expiring_soon", "lag", "groups")


def snapshots(
    folder: str, table: str = "group_verdicts", storage: Storage = LOCAL, listed: dict[str, Snapshot] | None = None
) -> list[Snapshot]:
    """The snapshots a table holds, oldest first: by as_of, then by when they were written (two
    snapshots judged at the same time, as two dumps of one moment, are ordered as they were audited).

    Which snapshots the table holds comes from its log (its partition values: no data file is read);
    when and how each was judged from the folder's snapshots table, one small file however many runs
    came before (after upkeep). Only a snapshot written before that table existed (an older version of
    this tool) is read from its own rows, its partition's files alone. `listed`: listed_snapshots of the
    table's kind, when the caller has read them already."""
    from deltalake import DeltaTable

    if not has_table(folder, table, storage):
        raise InputNotFound(f"'{folder}' holds no {table} table: run offset-audit audit --output {folder} first")
    with readable(folder, table):
        delta = DeltaTable(join(folder, table), storage_options=storage.delta_options)
        written: dict[str, float] = {}
        for file in live_files(delta, ["snapshot_id"]):
            key = file["values"]["snapshot_id"]
            written[key] = max(written.get(key, 0), file["written"])
    if not written:
        return []
    if listed is None:
        listed = listed_snapshots(folder, KIND_OF_TABLE.get(table), storage)
    found = [listed[s] for s in written if s in listed]
    for snapshot_id in (s for s in written if s not in listed):
        columns = ["as_of", "retention_minutes", "cluster"]
        rows = read_snapshot(folder, table, snapshot_id, storage, columns).slice(0, 1).to_pylist()
        if rows:
            first = rows[0]
            found.append(
                Snapshot(snapshot_id, first["as_of"], first["retention_minutes"], None, first["cluster"] or "")
            )
    return sorted(found, key=lambda s: (s.as_of, written.get(s.snapshot_id, 0), s.snapshot_id))


def listed_snapshots(folder: str, kind: str | None, storage: Storage) -> dict[str, Snapshot]:
    """The snapshots table's rows of one kind, by id (the newest written where a concurrent first write
    left two)."""
    if kind is None or not has_table(folder, SNAPSHOTS_TABLE, storage):
        return {}
    rows = read_table(folder, SNAPSHOTS_TABLE, storage)
    rows = rows.filter(pc.equal(rows["kind"], kind)).sort_by([("written_at", "ascending")])
    listed = {}
    for row in rows.to_pylist():
        totals = {name: row[name] for name in TOTALS} if kind == AUDIT else None
        listed[row["snapshot_id"]] = Snapshot(
            row["snapshot_id"], row["as_of"], row["retention_minutes"], totals, row["cluster"] or "", row["cluster_id"]
        )
    return listed


def pick_snapshot(
    folder: str,
    snapshot_id: str | None,
    table: str = "group_verdicts",
    storage: Storage = LOCAL,
    known: list[Snapshot] | None = None,
    cluster: str | None = None,
) -> str:
    """The given snapshot id, checked to be in the table, or the newest one (by as_of), of `cluster`
    when given. `known`: the table's `snapshots`, when the caller has read them already. The newest of
    a folder of several clusters' audits is no one snapshot: without --cluster or an id, refused."""
    known = snapshots(folder, table, storage) if known is None else known
    if not known:
        raise UserError(f"the {table} table under '{folder}' is empty: run offset-audit audit first")
    if cluster:
        known = of_cluster(known, cluster, folder)
    elif snapshot_id is None and len(by_cluster(known)) > 1:
        names = cluster_names(known)
        raise UserError(
            f"'{folder}' holds the audits of {len(names)} clusters ({', '.join(names)}): give --cluster NAME"
        )
    if snapshot_id is None:
        return known[-1].snapshot_id
    if snapshot_id not in {s.snapshot_id for s in known}:
        newest = known[-1].snapshot_id
        raise UserError(f"snapshot '{snapshot_id}' is not in {table} under '{folder}' (newest: '{newest}')")
    return snapshot_id


def read_snapshot(
    folder: str,
    table: str,
    snapshot_id: str,
    storage: Storage = LOCAL,
    columns: list[str] | None = None,
) -> pa.Table:
    """One snapshot's rows of a snapshot-partitioned table."""
    return read_table(folder, table, storage, columns=columns, partition=("snapshot_id", snapshot_id))


def check_audit_dir(audit_dir: str, storage: Storage = LOCAL, table: str = "deletion_candidates") -> None:
    """An audit's output folder, holding `table`: checked before anything is read or written."""
    if not has_table(audit_dir, table, storage):
        raise InputNotFound(f"'{audit_dir}' holds no {table} table: run offset-audit audit --output {audit_dir} first")


def delete_plan(
    audit_dir: str, snapshot_id: str | None = None, storage: Storage = LOCAL, cluster: str | None = None
) -> tuple[str, list[dict]]:
    """The deletion candidates of one snapshot (the newest audited by default), in the order the plan
    lists them. No candidates in the snapshot is an empty list, not an error.

    The newest snapshot is the newest audit's (group_verdicts holds every audited snapshot), not the
    newest that had candidates: a plan must never come from an older state than the last audit saw."""
    check_audit_dir(audit_dir, storage)
    table = "group_verdicts"
    audited = snapshots(audit_dir, table, storage) if has_table(audit_dir, table, storage) else []
    if not audited:  # a folder written before group_verdicts existed
        table = "deletion_candidates"
        audited = snapshots(audit_dir, table, storage)
    if not audited and snapshot_id is None:
        return "", []
    snapshot_id = pick_snapshot(audit_dir, snapshot_id, table, storage, known=audited, cluster=cluster)
    rows = read_snapshot(audit_dir, "deletion_candidates", snapshot_id, storage)
    ordered = rows.sort_by([(c, "ascending") for c in ("priority", "group_id", "topic", "partition")])
    return snapshot_id, ordered.to_pylist()


# Sums of offsets are exact: offsets reach 2^63 - 1, and pyarrow's int64 sum wraps around past it.
EXACT = pa.decimal128(38, 0)


def exact(table: pa.Table, *columns: str) -> pa.Table:
    """`table` with these integer columns as decimals, so that their sums cannot overflow."""
    for column in columns:
        table = table.set_column(table.schema.get_field_index(column), column, table[column].cast(EXACT))
    return table


def sums_per_group(partitions: pa.Table, *columns: str) -> pa.Table:
    """Each group's exact sums of `columns` (lag, stale_lag) over its partitions of known lag, as
    group_id and `<column>_sum`: no row for a group whose lags are all unknown (no end offsets). Summed
    from partition_verdicts rather than read from group_verdicts' lag_total, which is null where a
    group's sum passes a long."""
    known = exact(partitions.filter(pc.is_valid(partitions["lag"])), *columns)
    return known.group_by("group_id", use_threads=False).aggregate([(c, "sum") for c in columns])
