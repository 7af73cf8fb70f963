"""A Delta table read through its live files, without Spark: delta-rs lists the files of the table's
current version and their partition values, and pyarrow reads them. The read commands use it (views),
and so does the generator of a year of snapshots, which copies a real audit's tables.

A snapshot table is partitioned by snapshot_id alone, and one partition may hold the rows of several
clusters of a fleet (two schedules that name their snapshots alike). Which clusters a file holds
(`file_values`) comes from its add action's statistics where they tell it exactly (the writer of this
tool records the one cluster of every file it writes), else from the Parquet file's own footer, else from
the column itself: so a snapshot of one cluster is read, replaced and removed without touching another's.

delta-rs' own pyarrow dataset is not used: a process that scanned one aborts at exit about half the
time ("terminate called without an active exception", deltalake 1.6 with pyarrow 26), after its output
is printed but with exit code 134, which a scheduler reads as a failure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.storage import LOCAL, Storage, join

if TYPE_CHECKING:
    from deltalake import DeltaTable

# The column a fleet's snapshot rows name their cluster in; a file written before fleets has none, and
# its rows are of the unnamed cluster "".
CLUSTER = "cluster"
# Delta's own writers cut string statistics to this many characters (delta-spark's
# dataSkippingStringPrefixLength): a minimum and maximum this long may be prefixes, not the value.
STATS_PREFIX = 32


def file_stats(rows: int, constants: dict[str, str] | None = None) -> str:
    """An add action's statistics as this tool writes them: the row count, and for the columns whose
    every row holds one value (a snapshot file's cluster) that value as its exact min and max."""
    import json

    stats: dict[str, Any] = {"numRecords": rows}
    if constants:
        stats |= {"minValues": constants, "maxValues": constants, "nullCount": dict.fromkeys(constants, 0)}
    return json.dumps(stats)


def live_files(
    table: DeltaTable,
    keys: list[str],
    partition: tuple[str, str] | None = None,
    *,
    values_of: str | None = None,
    path: str | None = None,
    storage: Storage = LOCAL,
) -> list[dict[str, Any]]:
    """The live files of an opened DeltaTable: path, partition values and when each was written (ms),
    optionally only those of one partition value (`("snapshot_id", id)`). With `values_of` (a column
    name; the table's `path` and `storage` given), also the set of that column's values each file holds,
    as `file_values` finds them, under "holds"."""
    actions = pa.table(table.get_add_actions(flatten=True))
    stats = [f"{kind}.{values_of}" for kind in ("min", "max", "null_count")] if values_of else []
    stats = [name for name in stats if name in actions.column_names]
    sizes = [name for name in ("size_bytes", "num_records") if name in actions.column_names]
    actions = actions.select(["path", "modification_time", *sizes, *(f"partition.{k}" for k in keys), *stats])
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
        file = {"path": action["path"], "values": values, "written": written or 0, "size": action.get("size_bytes")}
        if values_of is not None:
            file["holds"] = file_values(path or "", action, values_of, storage)
        files.append(file)
    return files


def file_values(table_path: str, action: dict[str, Any], column: str, storage: Storage = LOCAL) -> frozenset[str]:
    """The values of `column` one live file holds (a null counted as ""), from the cheapest source that
    tells them exactly: its add action's statistics (min equal to max, no nulls, shorter than a cut
    prefix), else its Parquet footer's (every row group's min equal to max), else the column read. A
    file without the column holds only "", a file without rows nothing."""
    if action.get("num_records") == 0:
        return frozenset()
    low, high, nulls = (action.get(f"{kind}.{column}") for kind in ("min", "max", "null_count"))
    if low is not None and low == high and nulls == 0 and len(low) < STATS_PREFIX:
        return frozenset([low])
    import pyarrow.parquet as pq

    source = pq.ParquetFile(storage.parquet_source(join(table_path, action["path"])))
    if not source.metadata.num_rows:
        return frozenset()
    if column not in source.schema_arrow.names:
        return frozenset([""])
    leaves = source.metadata.schema
    index = next(i for i in range(len(leaves)) if leaves.column(i).path == column)
    found: set[str] = set()
    for group in range(source.metadata.num_row_groups):
        statistics = source.metadata.row_group(group).column(index).statistics
        if statistics is None or not statistics.has_min_max or statistics.min != statistics.max:
            break
        found.add(statistics.min)
        if statistics.null_count:
            found.add("")
    else:
        return frozenset(found or [""])
    values = pc.unique(pc.fill_null(source.read(columns=[column]).column(column), "")).to_pylist()
    return frozenset(values or [""])


def read_live(
    table: DeltaTable,
    path: str,
    storage: Storage = LOCAL,
    columns: list[str] | None = None,
    partition: tuple[str, str] | None = None,
    missing_type: Callable[[str], pa.DataType] | None = None,
    holding: tuple[str, frozenset[str]] | None = None,
) -> pa.Table:
    """The rows of an opened DeltaTable at `path`, its partition columns as strings (as Delta stores
    them). A column asked for that the table lacks (written only by an older version of this tool)
    reads as nulls of `missing_type(column)`; without `missing_type` it is an error. `holding` (a column
    and values): only the rows whose value is one of them (a null counted as ""), read from the files
    that hold them."""
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
    picked_by, chosen = holding if holding is not None else (None, frozenset())
    for action in live_files(table, keys, partition, values_of=picked_by, path=path, storage=storage):
        if picked_by is not None and not action["holds"] & chosen:
            continue
        values = action["values"]
        source = pq.ParquetFile(storage.parquet_source(join(path, action["path"])))
        in_file = set(source.schema_arrow.names)
        data = source.read(columns=[c for c in wanted if c not in keys and c in in_file])
        if picked_by is not None and not action["holds"] <= chosen:  # a file of several: its rows picked
            held = source.read(columns=[picked_by]).column(picked_by)  # in the file: it holds more than ""
            data = data.filter(pc.is_in(pc.fill_null(held, ""), pa.array(sorted(chosen))))
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
