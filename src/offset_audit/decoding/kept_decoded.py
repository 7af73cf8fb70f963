"""Group records an incremental audit's state keeps decoded (state/records' `decoded_*` and row columns,
docs/incremental.md), so that a resumed run decodes only what is new.

A group record's value is read field by field by the generic reader (tens of microseconds each), while
offset commits, nearly all of the state, go through the vectorised reader faster than a stored row is
read back. So the state keeps the rows of group records only. A decode task holds the carried records'
rows (`KeptDecoded.take`), and once it has kept its last record of each key, takes the rows of those
that are carried records instead of decoding them (`KeptDecoded.split`). What it writes, counts and
carries on is what decoding them would give: the rows are the ones the run before decoded from the same
bytes, with the same count key. The equality tests of incremental runs against full reads hold this.

The kept rows travel apart from the records, where they are read in bulk: in a batch of their own ahead
of a partition's carried records, in a file of their own beside each task's records to carry, and in
state/records in a file of their own per partition (the other file holds no kept column, which Delta
reads as null). Held beside every offset commit, their nested columns would cost more to write and read
back than decoding the group records again.

A change to how group records decode must raise the state's layout (`outputs.audit_state.STATE_FORMAT`):
a state kept decoded by another version is then read again from the start.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.decoding import records
from offset_audit.decoding.report import CountKey
from offset_audit.inputs.resumed import KEPT_COLUMNS, KEPT_SCHEMA

# The kept columns that hold the count key, in CountKey's order.
COUNT_COLUMNS = KEPT_COLUMNS[: len(CountKey._fields)]
# Each kept class's table, and the column of state/records that holds its row.
ROW_COLUMNS = {
    records.GROUP_METADATA: ("group_metadata", "group_metadata"),
    records.MODERN: ("modern_group_records", "modern_group_record"),
}
MEMBERS = "group_members"
_WHERE = ("source_partition", "source_offset")
# How a file of kept rows is named beside the records to carry (`outputs.fast_write`).
KEPT = "-kept.parquet"


@dataclass
class Taken:
    """What a task takes from the kept rows instead of decoding: each table's rows, their counts, and the
    kept columns of the records they came from (carried on to the next state)."""

    tables: dict[str, pa.Table]
    counts: Counter
    kept: pa.Table


class KeptDecoded:
    """In a decode task: the carried records' kept rows, by partition and offset."""

    def __init__(self) -> None:
        self.parts: list[pa.Table] = []

    def take(self, batch: pa.RecordBatch) -> bool:
        """Whether the batch is one of kept rows (`inputs.resumed.carried_records`), now held here."""
        if KEPT_COLUMNS[0] not in batch.schema.names:
            return False
        self.parts.append(pa.Table.from_batches([batch]))
        return True

    def split(self, last: pa.Table) -> tuple[pa.Table, Taken | None]:
        """`last` less the records whose rows are kept, and what those rows give."""
        if not self.parts or not last.num_rows:
            return last, None
        kept = pa.concat_tables(self.parts).combine_chunks()
        found = _find(kept, last)
        hit = found >= 0
        if not hit.any():
            return last, None
        rows = kept.take(pa.array(found[hit]))
        return last.filter(pa.array(~hit)), Taken(_tables(rows), _counts(rows), rows)


def _find(kept: pa.Table, rows: pa.Table) -> np.ndarray:
    """For each of `rows`, the index of the kept row at the same partition and offset, else -1."""
    found = np.full(rows.num_rows, -1, np.int64)
    kept_parts = kept.column("source_partition").to_numpy()
    kept_offs = kept.column("source_offset").to_numpy()
    parts = rows.column("source_partition").fill_null(-1).to_numpy(zero_copy_only=False)
    offs = rows.column("source_offset").fill_null(-1).to_numpy(zero_copy_only=False)
    for partition in np.unique(kept_parts).tolist():
        at = np.flatnonzero(kept_parts == partition)
        at = at[np.argsort(kept_offs[at], kind="stable")]
        sorted_offs = kept_offs[at]
        mine = np.flatnonzero(parts == partition)
        if not len(mine):
            continue
        where = np.minimum(np.searchsorted(sorted_offs, offs[mine]), len(at) - 1)
        same = sorted_offs[where] == offs[mine]
        found[mine[same]] = at[where[same]]
    return found


def _tables(rows: pa.Table) -> dict[str, pa.Table]:
    from offset_audit.decoding.decoder import arrow_schema

    classes = rows.column("decoded_class")
    out = {}
    for cls, (table, column) in ROW_COLUMNS.items():
        of_class = rows.filter(pc.equal(classes, cls))
        out[table] = _as_table(of_class.column(column), arrow_schema(table))
        if cls == records.GROUP_METADATA:
            out[MEMBERS] = _as_table(pc.list_flatten(of_class.column(MEMBERS)), arrow_schema(MEMBERS))
    return out


def _as_table(structs: pa.ChunkedArray | pa.Array, schema: pa.Schema) -> pa.Table:
    if isinstance(structs, pa.ChunkedArray):
        structs = structs.combine_chunks() if structs.num_chunks else pa.array([], structs.type)
    return pa.Table.from_struct_array(structs).cast(schema)


def _counts(rows: pa.Table) -> Counter:
    counted = (
        rows.select(list(COUNT_COLUMNS)).group_by(list(COUNT_COLUMNS), use_threads=False).aggregate([([], "count_all")])
    )
    return Counter({CountKey(*(r[name] for name in COUNT_COLUMNS)): r["count_all"] for r in counted.to_pylist()})


def decoded_kept(classified: list[dict], tables: dict[str, pa.Table]) -> pa.Table:
    """The kept columns of the group records a task has just decoded: `classified` is their class and
    count key (`DecodedBatch.classified`), `tables` the rows decoded from them."""
    chosen = [c for c in classified if c["class"] in ROW_COLUMNS]
    if not chosen:
        return KEPT_SCHEMA.empty_table()
    where = [(c["payload"]["source_partition"], c["payload"]["source_offset"]) for c in chosen]
    columns: dict[str, pa.Array] = {
        "source_partition": pa.array([w[0] for w in where], pa.int32()),
        "source_offset": pa.array([w[1] for w in where], pa.int64()),
        "decoded_class": pa.array([c["key"].record_class for c in chosen], pa.string()),
        "decoded_record_type": pa.array([c["key"].record_type for c in chosen], pa.int16()),
        "decoded_value_version": pa.array([c["key"].value_version for c in chosen], pa.int16()),
        "decoded_layout_era": pa.array([c["key"].layout_era for c in chosen], pa.string()),
        "decoded_is_tombstone": pa.array([c["key"].is_tombstone for c in chosen], pa.bool_()),
    }
    for table, column in ROW_COLUMNS.values():
        columns[column] = _rows_at(tables[table], where, KEPT_SCHEMA.field(column).type)
    columns[MEMBERS] = _members_at(tables[MEMBERS], tables["group_metadata"], where, KEPT_SCHEMA.field(MEMBERS).type)
    return pa.table([columns[name] for name in KEPT_SCHEMA.names], schema=KEPT_SCHEMA)


def _where(table: pa.Table) -> list[tuple[int, int]]:
    partitions, offsets = (table.column(name).to_pylist() for name in _WHERE)
    return list(zip(partitions, offsets, strict=True))


def _rows_at(table: pa.Table, where: list[tuple[int, int]], kind: pa.DataType) -> pa.Array:
    """The row of `table` decoded from each record at `where`, as a struct (null: none)."""
    at = {w: i for i, w in enumerate(_where(table))}
    structs = pa.StructArray.from_arrays([c.combine_chunks() for c in table.columns], fields=list(table.schema)).cast(
        kind
    )
    return structs.take(pa.array([at.get(w) for w in where], pa.int64()))


def _members_at(members: pa.Table, groups: pa.Table, where: list[tuple[int, int]], kind: pa.ListType) -> pa.Array:
    """Each group record's member rows, as a list (null for a record that is not a classic group's): the
    decoder writes a record's members together, in the order of its group rows."""
    counts = Counter(_where(members))
    group_where = _where(groups)
    offsets = np.zeros(len(group_where) + 1, np.int32)
    np.cumsum([counts.get(w, 0) for w in group_where], out=offsets[1:])
    values = pa.StructArray.from_arrays(
        [c.combine_chunks() for c in members.columns], fields=list(members.schema)
    ).cast(kind.value_type)
    lists = pa.ListArray.from_arrays(pa.array(offsets), values, type=kind)
    at = {w: i for i, w in enumerate(group_where)}
    return lists.take(pa.array([at.get(w) for w in where], pa.int64()))


def are_kept(kept: pa.Table, records: pa.Table) -> np.ndarray:
    """Which of `records` have their rows in `kept`."""
    if not kept.num_rows:
        return np.zeros(records.num_rows, bool)
    return _find(kept, records) >= 0


def kept_of(kept: pa.Table, records: pa.Table) -> pa.Table:
    """The rows of `kept` whose record is one of `records` (the records a merge keeps)."""
    if not kept.num_rows or not records.num_rows:
        return kept.slice(0, 0)
    found = _find(kept, records)
    return kept.take(pa.array(np.sort(found[found >= 0])))


def with_kept(records: pa.Table, kept: pa.Table, schema: pa.Schema) -> pa.Table:
    """`records` (all kept, in `schema`'s other columns) with their kept columns, in `schema`."""
    found = _find(kept, records)
    if (found < 0).any():
        raise ValueError("a record is not among the kept rows")  # a bug: the caller picks them from `kept`
    rows = kept.take(pa.array(found))
    return pa.table(
        [records.column(f.name) if f.name not in KEPT_COLUMNS else rows.column(f.name) for f in schema],
        schema=schema,
    )
