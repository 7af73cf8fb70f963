"""Reading an audit's output tables without Spark: the read commands (describe, delete-plan, report,
metrics) answer in about a second, and never start a JVM for a table of a few thousand rows.

Tables are read with delta-rs at their current version; every snapshot table is partitioned by
snapshot_id, so one snapshot is a partition filter.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from offset_audit.errors import InputNotFound, UserError
from offset_audit.storage import LOCAL, Storage, join


def has_table(folder: str, name: str, storage: Storage = LOCAL) -> bool:
    return storage.is_dir(join(folder, name, "_delta_log"))


def read_table(
    folder: str,
    name: str,
    storage: Storage = LOCAL,
    columns: list[str] | None = None,
    partition: tuple[str, str] | None = None,
) -> pa.Table:
    """The table `name` under `folder` at its current version (an error naming the folder if absent),
    optionally only the files of one partition value (`("snapshot_id", id)`).

    delta-rs gives the live files and their partition values; pyarrow reads them. delta-rs' own
    pyarrow dataset is not used: a process that scanned one aborts at exit about half the time
    ("terminate called without an active exception", deltalake 1.6 with pyarrow 26), after its output
    is printed but with exit code 134, which a scheduler reads as a failure.
    """
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    if not has_table(folder, name, storage):
        raise InputNotFound(f"'{folder}' holds no {name} table: run offset-audit audit --output {folder} first")
    path = join(folder, name)
    table = DeltaTable(path, storage_options=storage.delta_options)
    keys = table.metadata().partition_columns
    schema = pa.schema(table.schema().to_arrow())
    schema = pa.schema([pa.field(f.name, pa.string() if f.name in keys else f.type) for f in schema])
    wanted = columns or schema.names
    parts = []
    for action in pa.table(table.get_add_actions(flatten=True)).to_pylist():
        values = {k: action.get(f"partition.{k}") for k in keys}
        if partition is not None and values.get(partition[0]) != partition[1]:
            continue
        stored = [c for c in wanted if c not in keys]
        data = pq.read_table(storage.parquet_source(join(path, action["path"])), columns=stored)
        for key in keys:
            if key in wanted:
                data = data.append_column(key, pa.array([values[key]] * data.num_rows, pa.string()))
        parts.append(data.select(wanted).cast(pa.schema([schema.field(c) for c in wanted])))
    if not parts:
        return pa.schema([schema.field(c) for c in wanted]).empty_table()
    return pa.concat_tables(parts)


@dataclass(frozen=True)
class Snapshot:
    """One audited snapshot: its id, the time it was judged at, and the retention it was judged with."""

    snapshot_id: str
    as_of: object
    retention_minutes: int | None


def snapshots(folder: str, table: str = "group_verdicts", storage: Storage = LOCAL) -> list[Snapshot]:
    """The snapshots a table holds, oldest first (by as_of, then id)."""
    rows = read_table(folder, table, storage, columns=["snapshot_id", "as_of", "retention_minutes"])
    if not rows.num_rows:
        return []
    distinct = rows.group_by(["snapshot_id", "as_of", "retention_minutes"], use_threads=False).aggregate([])
    ordered = distinct.sort_by([("as_of", "ascending"), ("snapshot_id", "ascending")]).to_pylist()
    return [Snapshot(r["snapshot_id"], r["as_of"], r["retention_minutes"]) for r in ordered]


def pick_snapshot(folder: str, snapshot_id: str | None, table: str = "group_verdicts", storage: Storage = LOCAL) -> str:
    """The given snapshot id, checked to be in the table, or the newest one (by as_of)."""
    known = snapshots(folder, table, storage)
    if not known:
        raise UserError(f"the {table} table under '{folder}' is empty: run offset-audit audit first")
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
