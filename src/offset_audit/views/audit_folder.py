"""Reading an audit's output tables without Spark: the read commands (describe, delete-plan, report,
metrics) answer in about a second, and never start a JVM for a table of a few thousand rows.

Tables are read with delta-rs at their current version; every snapshot table is partitioned by
snapshot_id, so one snapshot is a partition filter, and its cluster a choice of that partition's files
(a fleet's clusters may give their snapshots one id: a snapshot is its cluster and its id).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.delta_files import CLUSTER, live_files, read_live
from offset_audit.errors import InputNotFound, UserError
from offset_audit.snapshot_totals import EXACT
from offset_audit.storage import LOCAL, Storage, join
from offset_audit.table_names import AUDIT, DELETION_CANDIDATES, GROUP_VERDICTS, KIND_OF_TABLE, SNAPSHOTS_TABLE


def has_table(folder: str, name: str, storage: Storage = LOCAL) -> bool:
    return storage.is_dir(join(folder, name, "_delta_log"))


def no_table(folder: str, name: str, storage: Storage = LOCAL) -> InputNotFound:
    """What a read command says when the audit folder lacks a table it reads: that the folder is not
    there at all, or which table it lacks."""
    if not storage.exists(folder):
        return InputNotFound(f"'{folder}' does not exist: give the --output folder of an audit")
    return InputNotFound(f"'{folder}' holds no {name} table: run offset-audit audit --output {folder} first")


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
    cluster: str | None = None,
) -> pa.Table:
    """The table `name` under `folder` at its current version (an error naming the folder if absent),
    optionally only the files of one partition value (`("snapshot_id", id)`), and of those only the
    rows of one `cluster`, through delta_files."""
    from deltalake import DeltaTable

    if not has_table(folder, name, storage):
        raise no_table(folder, name, storage)
    path = join(folder, name)
    with readable(folder, name):
        return read_live(
            DeltaTable(path, storage_options=storage.delta_options),
            path,
            storage,
            columns,
            partition,
            missing_type=lambda column: _column_type(name, column),
            holding=None if cluster is None else (CLUSTER, frozenset([cluster])),
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
    "" for none or a snapshot written before fleets, and its id where known). `as_of` is None only in a
    Snapshot that just names one for read_snapshot or same_cluster: one read from a table has its time."""

    snapshot_id: str
    as_of: datetime | None
    retention_minutes: int | None
    totals: dict | None = None
    cluster: str = ""
    cluster_id: str | None = None

    @property
    def judged_at(self) -> datetime:
        """`as_of`, of a snapshot read from a table; a Snapshot that only names one has none."""
        if self.as_of is None:
            raise ValueError(f"snapshot {self.snapshot_id!r} only names one: it has no as_of")
        return self.as_of

    @property
    def key(self) -> tuple[str, str]:
        """What names the snapshot in a folder: its cluster's name and its id (two clusters may share an id)."""
        return (self.cluster, self.snapshot_id)

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
    folder: str,
    table: str = GROUP_VERDICTS,
    storage: Storage = LOCAL,
    listed: dict[tuple[str, str], Snapshot] | None = None,
) -> list[Snapshot]:
    """The snapshots a table holds, oldest first: by as_of, then by when they were written (two
    snapshots judged at the same time, as two dumps of one moment, are ordered as they were audited).

    Which snapshots the table holds comes from its log: each file's partition value and, from its
    statistics, its cluster (delta_files.file_values; only a file written by an older version of this
    tool has its footer read). When and how each was judged comes from the folder's snapshots table, one
    small file however many runs came before (after upkeep). Only a snapshot written before that table
    existed is read from its own rows. `listed`: listed_snapshots of the table's kind, when the caller
    has read them already."""
    from deltalake import DeltaTable

    if not has_table(folder, table, storage):
        raise no_table(folder, table, storage)
    path = join(folder, table)
    with readable(folder, table):
        delta = DeltaTable(path, storage_options=storage.delta_options)
        written: dict[tuple[str, str], float] = {}
        for file in live_files(delta, ["snapshot_id"], values_of=CLUSTER, path=path, storage=storage):
            for cluster in file["holds"]:
                key = (cluster, file["values"]["snapshot_id"])
                written[key] = max(written.get(key, 0), file["written"])
    if not written:
        return []
    if listed is None:
        listed = listed_snapshots(folder, KIND_OF_TABLE.get(table), storage)
    found = [listed[key] for key in written if key in listed]
    for cluster, snapshot_id in (key for key in written if key not in listed):
        columns = ["as_of", "retention_minutes"]
        rows = read_snapshot(folder, table, Snapshot(snapshot_id, None, None, cluster=cluster), storage, columns)
        if rows.num_rows:
            first = rows.slice(0, 1).to_pylist()[0]
            found.append(Snapshot(snapshot_id, first["as_of"], first["retention_minutes"], None, cluster))
    return sorted(found, key=lambda s: (s.as_of, written.get(s.key, 0), s.snapshot_id, s.cluster))


def listed_snapshots(folder: str, kind: str | None, storage: Storage) -> dict[tuple[str, str], Snapshot]:
    """The snapshots table's rows of one kind, by cluster and id (the newest written where a concurrent
    first write left two); a row without a cluster (written before fleets) is the unnamed cluster's."""
    if kind is None or not has_table(folder, SNAPSHOTS_TABLE, storage):
        return {}
    rows = read_table(folder, SNAPSHOTS_TABLE, storage)
    rows = rows.filter(pc.equal(rows["kind"], kind)).sort_by([("written_at", "ascending")])
    listed = {}
    for row in rows.to_pylist():
        totals = {name: row[name] for name in TOTALS} if kind == AUDIT else None
        snapshot = Snapshot(
            row["snapshot_id"], row["as_of"], row["retention_minutes"], totals, row["cluster"] or "", row["cluster_id"]
        )
        listed[snapshot.key] = snapshot
    return listed


def pick_snapshot(
    folder: str,
    snapshot_id: str | None,
    table: str = GROUP_VERDICTS,
    storage: Storage = LOCAL,
    known: list[Snapshot] | None = None,
    cluster: str | None = None,
) -> Snapshot:
    """The given snapshot, checked to be in the table, or the newest one (by as_of), of `cluster` when
    given. `known`: the table's `snapshots`, when the caller has read them already. The newest of a
    folder of several clusters' audits is no one snapshot, nor is an id several of them gave theirs:
    without --cluster, refused."""
    known = snapshots(folder, table, storage) if known is None else known
    if not known:
        raise UserError(f"the {table} table under '{folder}' is empty: run offset-audit audit first")
    if cluster:
        known = of_cluster(known, cluster, folder)
    elif len(by_cluster(known)) > 1:
        named = known if snapshot_id is None else [s for s in known if s.snapshot_id == snapshot_id]
        names = cluster_names(named)
        if snapshot_id is None:
            raise UserError(
                f"'{folder}' holds the audits of {len(names)} clusters ({', '.join(names)}): give --cluster NAME"
            )
        if len(names) > 1:
            raise UserError(
                f"snapshot '{snapshot_id}' under '{folder}' is of {len(names)} clusters ({', '.join(names)}): "
                "give --cluster NAME"
            )
    if snapshot_id is None:
        return known[-1]
    matching = [s for s in known if s.snapshot_id == snapshot_id]
    if not matching:
        newest = known[-1].snapshot_id
        raise UserError(f"snapshot '{snapshot_id}' is not in {table} under '{folder}' (newest: '{newest}')")
    return matching[-1]


def read_snapshot(
    folder: str,
    table: str,
    snapshot: Snapshot | str,
    storage: Storage = LOCAL,
    columns: list[str] | None = None,
) -> pa.Table:
    """One snapshot's rows of a snapshot-partitioned table: a Snapshot's, of its cluster alone; an id's,
    of every cluster that gave its snapshot that id (a folder of one cluster)."""
    if isinstance(snapshot, str):
        return read_table(folder, table, storage, columns=columns, partition=("snapshot_id", snapshot))
    partition = ("snapshot_id", snapshot.snapshot_id)
    return read_table(folder, table, storage, columns=columns, partition=partition, cluster=snapshot.cluster)


def check_audit_dir(audit_dir: str, storage: Storage = LOCAL, table: str = DELETION_CANDIDATES) -> None:
    """An audit's output folder, holding `table`: checked before anything is read or written."""
    if not has_table(audit_dir, table, storage):
        raise no_table(audit_dir, table, storage)


def delete_plan(
    audit_dir: str, snapshot_id: str | None = None, storage: Storage = LOCAL, cluster: str | None = None
) -> tuple[str, list[dict]]:
    """The deletion candidates of one snapshot (the newest audited by default), in the order the plan
    lists them. No candidates in the snapshot is an empty list, not an error.

    The newest snapshot is the newest audit's (group_verdicts holds every audited snapshot), not the
    newest that had candidates: a plan must never come from an older state than the last audit saw."""
    check_audit_dir(audit_dir, storage)
    table = GROUP_VERDICTS
    audited = snapshots(audit_dir, table, storage) if has_table(audit_dir, table, storage) else []
    if not audited:  # a folder written before group_verdicts existed
        table = DELETION_CANDIDATES
        audited = snapshots(audit_dir, table, storage)
    if not audited and snapshot_id is None:
        return "", []
    snapshot = pick_snapshot(audit_dir, snapshot_id, table, storage, known=audited, cluster=cluster)
    rows = read_snapshot(audit_dir, DELETION_CANDIDATES, snapshot, storage)
    ordered = rows.sort_by([(c, "ascending") for c in ("priority", "group_id", "topic", "partition")])
    return snapshot.snapshot_id, ordered.to_pylist()


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
