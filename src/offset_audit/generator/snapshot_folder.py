"""An audit folder as a year of scheduled runs leaves it, without running them: the newest audit's
snapshot written again under earlier as_of times, each copy one commit per table through outputs/, as a
run's is: its snapshot's partition replaced by one Parquet file committed the way the embedded writer
commits its tasks' files (outputs.delta.replace_partition), and its rows appended to the snapshots and
runs tables as a run appends its own (outputs.runs_table.append_rows, which compacts them). What the
retention tests and `bench/snapshots.py` measure the read commands and upkeep on.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.delta_files import CLUSTER, read_live
from offset_audit.outputs.delta import DELTA_RS, TableWriter, replace_partition
from offset_audit.outputs.runs_table import append_rows
from offset_audit.storage import LOCAL, join
from offset_audit.table_names import AUDIT, RUNS_TABLE, SNAPSHOT_TABLES, SNAPSHOTS_TABLE


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


def _constants(rows: pa.Table) -> dict[str, str]:
    """What the embedded writer notes in a file's statistics besides its rows: its one cluster's name."""
    clusters = pc.unique(rows[CLUSTER]).to_pylist() if CLUSTER in rows.column_names else []
    return {CLUSTER: clusters[0]} if len(clusters) == 1 and clusters[0] is not None else {}


def repeat_snapshot(folder: str, copies: int, every: timedelta = timedelta(hours=1)) -> list[str]:
    """Write the folder's only audit snapshot again `copies` times, `every` apart before it (so it stays
    the newest), oldest first; the ids of the copies."""
    writer = TableWriter(DELTA_RS, LOCAL)
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
        run_id = uuid.uuid4().hex
        for name, template_rows in rows.items():
            moved = _earlier(template_rows, every * i).drop_columns(["snapshot_id"])
            replace_partition(join(folder, name), moved, ("snapshot_id", snapshot_id), LOCAL, _constants(moved))
        written = datetime.now(moment.tzinfo)
        summary = _with(listed, snapshot_id=snapshot_id, as_of=moment, written_at=written)
        append_rows(join(folder, SNAPSHOTS_TABLE), summary, writer, run_id)
        copy = _with(run, run_id=run_id, snapshot_id=snapshot_id, as_of=moment, finished_at=written)
        append_rows(join(folder, RUNS_TABLE), copy, writer, run_id)
        made.append(snapshot_id)
    return made
