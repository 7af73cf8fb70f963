"""A Delta table read through its live files, without Spark: delta-rs lists the files of the table's
current version and their partition values, and pyarrow reads them. The read commands use it (views),
and so does the generator of a year of snapshots, which copies a real audit's tables.

delta-rs' own pyarrow dataset is not used: a process that scanned one aborts at exit about half the
time ("terminate called without an active exception", deltalake 1.6 with pyarrow 26), after its output
is printed but with exit code 134, which a scheduler reads as a failure.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.storage import LOCAL, Storage, join


def live_files(table, keys: list[str], partition: tuple[str, str] | None = None) -> list[dict]:
    """The live files of an opened DeltaTable: path, partition values and when each was written (ms),
    optionally only those of one partition value (`("snapshot_id", id)`)."""
    actions = pa.table(table.get_add_actions(flatten=True))
    actions = actions.select(["path", "modification_time", *(f"partition.{k}" for k in keys)])
    if partition is not None and f"partition.{partition[0]}" in actions.column_names:
        # In Arrow, not row by row: a folder of a year of snapshots lists thousands of files.
        actions = actions.filter(pc.equal(actions[f"partition.{partition[0]}"], partition[1]))
    files = []
    for action in actions.to_pylist():
        values = {k: action.get(f"partition.{k}") for k in keys}
        if partition is not None and values.get(partition[0]) != partition[1]:
            continue
        written = action.get("modification_time")
        written = written.timestamp() * 1000 if hasattr(written, "timestamp") else written
        files.append({"path": action["path"], "values": values, "written": written or 0})
    return files


def read_live(
    table,
    path: str,
    storage: Storage = LOCAL,
    columns: list[str] | None = None,
    partition: tuple[str, str] | None = None,
    missing_type: Callable[[str], pa.DataType] | None = None,
) -> pa.Table:
    """The rows of an opened DeltaTable at `path`, its partition columns as strings (as Delta stores
    them). A column asked for that the table lacks (written only by an older version of this tool)
    reads as nulls of `missing_type(column)`; without `missing_type` it is an error."""
    import pyarrow.parquet as pq

    keys = table.metadata().partition_columns
    schema = pa.schema(table.schema().to_arrow())
    schema = pa.schema([pa.field(f.name, pa.string() if f.name in keys else f.type) for f in schema])
    wanted = columns or schema.names
    missing = [c for c in wanted if c not in schema.names]
    if missing:
        if missing_type is None:
            raise KeyError(f"{path} has no column {', '.join(missing)}")
        schema = pa.schema([*schema, *(pa.field(c, missing_type(c)) for c in missing)])
    parts = []
    for action in live_files(table, keys, partition):
        values = action["values"]
        source = pq.ParquetFile(storage.parquet_source(join(path, action["path"])))
        in_file = set(source.schema_arrow.names)
        data = source.read(columns=[c for c in wanted if c not in keys and c in in_file])
        for column in wanted:
            # Files written before the table gained a column (an older version of this tool) hold none.
            if column not in keys and column not in in_file:
                data = data.append_column(schema.field(column), pa.nulls(data.num_rows, schema.field(column).type))
        for key in keys:
            if key in wanted:
                data = data.append_column(key, pa.array([values[key]] * data.num_rows, pa.string()))
        parts.append(data.select(wanted).cast(pa.schema([schema.field(c) for c in wanted])))
    if not parts:
        return pa.schema([schema.field(c) for c in wanted]).empty_table()
    return pa.concat_tables(parts)
