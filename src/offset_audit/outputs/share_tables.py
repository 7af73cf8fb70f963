"""The share tables shaped from the replay's rows, in Arrow on the driver.

Every replay route (folded, record by record, the KIP-932 draft's chain) ends with one wide row per
share-partition, state batch or problem, so the tables are as small as the coordinator's state: a few
rows per share-partition, whatever the number of records replayed. Shaping them with Spark cost a job
per table and per lookup, about 1 s a run; here they are Arrow tables from start to commit.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.decoding.decoder import arrow_schema
from offset_audit.layouts.tables import table_schema
from offset_audit.timestamps import arrow_timestamps, ms_column

# The tables `share` writes under its output folder (besides runs, and decoded/ with --groups-input).
SHARE_TABLES = (
    "share_partitions",
    "share_state_batches",
    "share_problems",
    "share_cleanup",
    "quarantine",
    "share_groups",
    "share_findings",
)
# The tables split out of the replay's wide rows, by their row_kind.
REPLAY_TABLES = {"share_partitions": "partition", "share_state_batches": "batch", "share_problems": "problem"}


def shaped(rows: pa.Table, name: str, absent: tuple[str, ...] = ()) -> pa.Table:
    """`rows` with exactly the columns of table `name`: each TIMESTAMP shown from its exact milliseconds
    (offset_audit.timestamps), every other column cast to the table's type, and the columns named in
    `absent`, which `rows` need not have, null where they do not. `cluster` is always such a column:
    the run sets it as it writes (with_cluster)."""
    schema = arrow_schema(name)
    columns = []
    for column in table_schema(name).columns:
        if column.type == "timestamp":
            columns.append(arrow_timestamps(rows.column(ms_column(column.name))))
        elif column.name in (*absent, "cluster") and column.name not in rows.column_names:
            columns.append(pa.nulls(rows.num_rows, schema.field(column.name).type))
        else:
            columns.append(rows.column(column.name).cast(schema.field(column.name).type))
    return pa.Table.from_arrays(columns, schema=schema)


def split_replay(replayed: pa.Table) -> dict[str, pa.Table]:
    """The wide replay rows (share.job.replay_arrow_schema) as share_partitions, share_state_batches
    and share_problems, each in the replay's row order."""
    kinds = replayed.column("row_kind")
    return {name: shaped(replayed.filter(pc.equal(kinds, kind)), name) for name, kind in REPLAY_TABLES.items()}


def with_topic_names(tables: dict[str, pa.Table], names: Iterable[tuple[str, str]]) -> dict[str, pa.Table]:
    """Fill a null `topic` from its topic id where the share groups' records name it. `names` are
    (topic id, topic name) pairs; an id named twice (only a damaged dump does that) keeps its first
    name in sorted order, so that no row is doubled by the lookup."""
    first: dict[str, str] = {}
    for topic_id, name in sorted(set(names)):
        first.setdefault(topic_id, name)
    if not first:
        return tables
    ids, known = pa.array(list(first), pa.string()), pa.array(list(first.values()), pa.string())
    out = {}
    for name, table in tables.items():
        found = pc.take(known, pc.index_in(table.column("topic_id"), value_set=ids))
        topic = pc.coalesce(table.column("topic"), found)
        out[name] = table.set_column(table.schema.get_field_index("topic"), "topic", topic)
    return out


def with_share_lag(partitions: pa.Table, end_offsets: pa.Table | None) -> pa.Table:
    """share_lag = log end offset - SPSO (never below 0), and broker_lag = that minus the delivery complete
    count as Kafka 4.2+ reports it, where the end offsets (one row per topic
    partition: sources.end_offsets) know the share-partition's topic partition; null elsewhere, and
    where the SPSO is -1: state initialised but never fetched, whose start share.auto.offset.reset sets
    on the first fetch (kafka-share-groups.sh prints "-" for both, as seen on live 4.1 and 4.3 brokers)."""
    if end_offsets is None:
        return partitions
    row = "__row"
    ends = end_offsets.select(["topic", "partition", "log_end_offset"])
    keyed = partitions.select(["topic", "partition", "start_offset"]).append_column(
        row, pa.array(range(partitions.num_rows), pa.int64())
    )
    joined = keyed.join(ends, ["topic", "partition"], join_type="left outer").sort_by(row)
    end = joined.column("log_end_offset")
    known = pc.and_(pc.is_valid(end), pc.greater_equal(joined.column("start_offset"), 0))
    behind = pc.subtract(end, joined.column("start_offset"))
    lag = pc.if_else(known, pc.max_element_wise(behind, 0), pa.scalar(None, pa.int64()))
    # GroupCoordinatorService.computeShareGroupLagAndBuildResponse (4.2+): end - start - count, as it
    # is (no floor), where the start offset and the count are both known.
    completed = partitions.column("delivery_complete_count").cast(pa.int64())
    broker_lag = pc.if_else(
        pc.and_(known, pc.is_valid(completed)), pc.subtract(behind, completed), pa.scalar(None, pa.int64())
    )
    out = partitions.set_column(partitions.schema.get_field_index("share_lag"), "share_lag", lag.cast(pa.int64()))
    return out.set_column(out.schema.get_field_index("broker_lag"), "broker_lag", broker_lag.cast(pa.int64()))


def cleanup_cutoffs(partitions: pa.Table, log: str | None) -> pa.Table:
    """ESO per log partition: the lowest checkpoint offset of the share-partitions whose state is stored
    there. `log` names the log holding the state (__share_group_state); None where each share-partition
    keeps it in its own topic's log (the KIP-932 draft's control records)."""
    stored = partitions.filter(pc.is_valid(partitions.column("checkpoint_offset")))
    logs = pa.array([log] * stored.num_rows, pa.string()) if log is not None else stored.column("topic")
    grouped = (
        pa.table(
            {"log": logs, "partition": stored.column("checkpoint_log_partition"), "offset": stored["checkpoint_offset"]}
        )
        .group_by(["log", "partition"], use_threads=False)
        .aggregate([("offset", "min"), ("offset", "count")])
    )
    return shaped(
        pa.table(
            {
                "log": grouped.column("log"),
                "partition": grouped.column("partition"),
                "earliest_share_offset": grouped.column("offset_min"),
                "share_partitions": grouped.column("offset_count"),
            }
        ).sort_by([("log", "ascending"), ("partition", "ascending")]),
        "share_cleanup",
    )


def with_cluster(table: pa.Table, cluster: str | None) -> pa.Table:
    """`table` (a share table's rows) with its `cluster` column set to the run's cluster ("" unnamed)."""
    if "cluster" not in table.column_names:
        return table
    index = table.schema.get_field_index("cluster")
    return table.set_column(index, table.schema.field(index), pa.array([cluster or ""] * table.num_rows, pa.string()))
