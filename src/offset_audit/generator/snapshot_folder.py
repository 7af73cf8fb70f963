"""An audit folder as a year of scheduled runs leaves it, without running them: the newest audit's
snapshot written again under earlier as_of times, each copy one commit per table through delta-rs, as
a run's is: its snapshot's partition replaced by a Parquet file committed with delta-rs' write
transaction, the way the embedded writer commits its tasks' files (outputs.delta.commit_files, whose
files carry a row count and their one cluster's name as statistics), and its rows appended to the
snapshots and runs tables. What the retention tests and `bench/snapshots.py` measure the read commands and upkeep on.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from offset_audit.delta_files import CLUSTER, file_stats, read_live
from offset_audit.storage import join
from offset_audit.table_names import AUDIT, RUNS_TABLE, SNAPSHOT_TABLES, SNAPSHOTS_TABLE

# What each run does to the tables it appends a row to (outputs.table_upkeep.compact_when_many): compact
# them, through delta-rs' own optimize, once they hold this many files.
COMPACT_AT_FILES = 8


def _table(path: str) -> pa.Table:
    """A whole Delta table (small tables: the template snapshot's)."""
    from deltalake import DeltaTable

    return read_live(DeltaTable(path), path)


def _earlier(table: pa.Table, by: timedelta) -> pa.Table:
    """`table` with every timestamp moved `by` earlier: the same audit judged that much before, so each
    copy's totals (expired, expiring within a week) are the template's."""
    for index, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type):
            moved = pc.subtract(table.column(index), pa.scalar(by, pa.duration(field.type.unit)))
            table = table.set_column(index, field, moved.cast(field.type))
    return table


def _with(table: pa.Table, **values) -> pa.Table:
    """`table` with these columns set to one value each."""
    for name, value in values.items():
        if name in table.column_names:
            index = table.schema.get_field_index(name)
            field = table.schema.field(index)
            table = table.set_column(index, field, pa.array([value] * table.num_rows, field.type))
    return table


def _replace_partition(path: str, rows: pa.Table, snapshot_id: str) -> None:
    """One snapshot's rows of a snapshot-partitioned table, replaced in one commit."""
    import os

    from deltalake import DeltaTable
    from deltalake.transaction import AddAction

    relative = f"part-copy-{uuid.uuid4().hex[:8]}/snapshot_id={snapshot_id}/part-00000.parquet"
    os.makedirs(os.path.dirname(join(path, relative)), exist_ok=True)
    pq.write_table(rows, join(path, relative), compression="snappy")
    table = DeltaTable(path)
    schema = pa.schema(table.schema().to_arrow())
    action = AddAction(
        path=relative,
        size=os.path.getsize(join(path, relative)),
        partition_values={"snapshot_id": snapshot_id},
        modification_time=int(datetime.now().timestamp() * 1000),
        data_change=True,
        stats=_stats(rows),
    )
    table.create_write_transaction(
        [action],
        mode="overwrite",
        schema=schema,
        partition_by=["snapshot_id"],
        partition_filters=[("snapshot_id", "=", snapshot_id)],
    )


def _stats(rows: pa.Table) -> str:
    """A file's statistics as the embedded writer records them: its rows, and its cluster's name."""
    clusters = pc.unique(rows[CLUSTER]).to_pylist() if CLUSTER in rows.column_names else []
    return file_stats(rows.num_rows, {CLUSTER: clusters[0]} if len(clusters) == 1 and clusters[0] is not None else {})


def repeat_snapshot(folder: str, copies: int, every: timedelta = timedelta(hours=1)) -> list[str]:
    """Write the folder's only audit snapshot again `copies` times, `every` apart before it (so it stays
    the newest), oldest first; the ids of the copies."""
    from deltalake import DeltaTable, write_deltalake

    tables = {name: _table(join(folder, name)) for name in (*SNAPSHOT_TABLES[AUDIT], SNAPSHOTS_TABLE, RUNS_TABLE)}
    listed = tables[SNAPSHOTS_TABLE].filter(pc.equal(tables[SNAPSHOTS_TABLE]["kind"], AUDIT))
    if listed.num_rows != 1:
        raise ValueError(f"{folder} must hold one audit snapshot to copy, not {listed.num_rows}")
    template = listed["snapshot_id"][0].as_py()
    as_of: datetime = listed["as_of"][0].as_py()
    runs = tables[RUNS_TABLE]
    run = runs.filter(pc.equal(runs["snapshot_id"], template)).slice(0, 1)
    rows = {
        name: tables[name].filter(pc.equal(tables[name]["snapshot_id"], template)) for name in SNAPSHOT_TABLES[AUDIT]
    }
    made = []
    for i in range(copies, 0, -1):
        moment = as_of - every * i
        snapshot_id = f"{moment:%Y%m%dT%H%M%SZ}-copy{i:05d}"
        for name, template_rows in rows.items():
            _replace_partition(
                join(folder, name), _earlier(template_rows, every * i).drop_columns(["snapshot_id"]), snapshot_id
            )
        written = datetime.now(moment.tzinfo)
        summary = _with(listed, snapshot_id=snapshot_id, as_of=moment, written_at=written)
        write_deltalake(join(folder, SNAPSHOTS_TABLE), summary, mode="append")
        copy = _with(run, run_id=uuid.uuid4().hex, snapshot_id=snapshot_id, as_of=moment, finished_at=written)
        write_deltalake(join(folder, RUNS_TABLE), copy, mode="append")
        for name in (SNAPSHOTS_TABLE, RUNS_TABLE):
            table = DeltaTable(join(folder, name))
            if len(table.file_uris()) >= COMPACT_AT_FILES:
                table.optimize.compact()
        made.append(snapshot_id)
    return made
