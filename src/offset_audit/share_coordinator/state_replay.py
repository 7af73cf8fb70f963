"""The share coordinator's replay as Spark passes: per share-partition, its records in log order replayed
into one wide row schema (its share_partitions row, its batches and its problems side by side, `row_kind`
telling them apart), which outputs.share_tables splits into the three tables.

Records of one share-partition always sit in one log partition, so each replay is a grouped map: Spark
groups the records by share-partition and a Python function replays each group.
- replay_share_state: the decoded `__share_group_state` records (ShareSnapshot, ShareUpdate), record by
  record, as Kafka 4.1's share coordinator does (share_partition); the folded route (fold) shapes its rows
  with the same share_partition_rows;
- replay_kip932: the KIP-932 draft's checkpoint/delta control records, as the draft's share-partition
  leader would (draft_chain).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructField, StructType

from offset_audit.decoding.share_records import SHARE_STATE
from offset_audit.layouts.tables import parse_type, table_schema
from offset_audit.share_coordinator import cover, draft_chain, share_partition


@cache
def _replay_schema() -> StructType:
    """The wide schema of the grouped replay: share_partitions, share_state_batches and share_problems
    columns side by side, plus row_kind. TIMESTAMPs are not among them: they are shown from their exact
    milliseconds (`<name>_ms`) when the tables are shaped (offset_audit.timestamps)."""
    seen: dict[str, StructField] = {"row_kind": StructField("row_kind", parse_type("string"))}
    for table in ("share_partitions", "share_state_batches", "share_problems"):
        for column in table_schema(table).columns:
            if column.type != "timestamp":
                seen.setdefault(column.name, StructField(column.name, parse_type(column.type)))
    return StructType(list(seen.values()))


def _share_record(row: dict[str, Any]) -> dict[str, Any]:
    """A decoded row as `share_coordinator.share_partition` takes it: partition/offset are where it was read."""
    return {
        "kind": row["kind"],
        "snapshot_epoch": row["snapshot_epoch"],
        "state_epoch": row["state_epoch"],
        "leader_epoch": row["leader_epoch"],
        "start_offset": row["start_offset"],
        "create_timestamp": row["create_timestamp"],
        "write_timestamp": row["write_timestamp"],
        "delivery_complete_count": row["delivery_complete_count"],
        "state_batches": list(row["state_batches"]) if row["state_batches"] is not None else [],
        "partition": row["source_partition"],
        "offset": row["source_offset"],
    }


def _state_name(value: int) -> str:
    return share_partition.DELIVERY_STATE_NAMES.get(value, f"UNKNOWN({value})")


def _problem_rows(key: dict[str, Any], problems) -> list[dict[str, Any]]:
    """share_problems rows of one share-partition (ReplayProblem or ChainProblem: partition, offset, reason)."""
    return [
        {**key, "row_kind": "problem", "log_partition": p.partition, "log_offset": p.offset, "reason": p.reason}
        for p in problems
    ]


def _batch_rows(key: dict[str, Any], batches) -> list[dict[str, Any]]:
    """share_state_batches rows of one share-partition."""
    return [
        {
            **key,
            "row_kind": "batch",
            "first_offset": b.first_offset,
            "last_offset": b.last_offset,
            "state": _state_name(b.state),
            "delivery_count": b.delivery_count,
        }
        for b in batches
    ]


def share_partition_rows(
    key: dict[str, Any],
    result: share_partition.ShareReplay,
    records_replayed: int,
    last_snapshot: tuple[int | None, ...] | None,
    delivery_count_limit: int,
) -> list[dict[str, Any]]:
    """One share-partition's rows of the wide replay schema: its problems, then (when it has state) its
    share_partitions row and its batches. `last_snapshot` is (source offset, source partition) of its
    last ShareSnapshot record. Both replays (record by record here, folded in offset_audit.share_coordinator.fold)
    shape their rows with this one function."""
    out = _problem_rows(key, result.problems)
    current = result.state
    if current is None:
        return out
    out.append(
        {
            **key,
            "row_kind": "partition",
            "start_offset": current.start_offset,
            "end_offset": current.end_offset,
            "snapshot_epoch": current.snapshot_epoch,
            "state_epoch": current.state_epoch,
            "leader_epoch": current.leader_epoch,
            "available_records": current.available_records,
            "acknowledged_records": current.acknowledged_records,
            "archived_records": current.archived_records,
            "archiving_records": current.archiving_records,
            "max_delivery_count": current.max_delivery_count,
            "records_at_delivery_limit": current.records_at_or_over(delivery_count_limit),
            "delivery_count_limit": delivery_count_limit,
            "create_timestamp_ms": current.create_timestamp or None,  # 0: not recorded
            "write_timestamp_ms": current.write_timestamp or None,
            "delivery_complete_count": None if current.delivery_complete_count < 0 else current.delivery_complete_count,
            "checkpoint_offset": None if last_snapshot is None else last_snapshot[0],
            "checkpoint_log_partition": None if last_snapshot is None else last_snapshot[1],
            "records_replayed": records_replayed,
            "problems": len(result.problems),
            "start_offset_moves_back": result.start_offset_moves_back,
        }
    )
    return out + _batch_rows(key, current.effective_batches)


def log_order(row: dict[str, Any]) -> tuple[int, int]:
    """The order a share-partition's records are replayed in: source offset, then source partition (two
    log partitions hold one share-partition only in a damaged dump; -1 where the input gave none)."""
    partition = row["source_partition"]
    return (row["source_offset"], -1 if partition is None else partition)


def replay_arrow_schema() -> pa.Schema:
    """The wide replay schema as Arrow."""
    return to_arrow_schema(_replay_schema(), timezone="UTC")


def replay_share_state(decoded: DataFrame, delivery_count_limit: int) -> DataFrame:
    """Per share-partition, Kafka 4.1's replay of its ShareSnapshot/ShareUpdate records, record by record."""
    schema = _replay_schema()
    arrow = to_arrow_schema(schema, timezone="UTC")

    def replay(table: pa.Table) -> pa.Table:
        rows = sorted(table.to_pylist(), key=log_order)
        first = rows[0]
        key = {"group_id": first["group_id"], "topic_id": first["topic_id"], "partition": int(first["partition"])}
        result = share_partition.replay_checked([_share_record(r) for r in rows])
        snapshots = [r for r in rows if r["kind"] == "snapshot"]
        last = (snapshots[-1]["source_offset"], snapshots[-1]["source_partition"]) if snapshots else None
        return pa.Table.from_pylist(share_partition_rows(key, result, len(rows), last, delivery_count_limit), arrow)

    records = decoded.where(F.col("record_class") == SHARE_STATE)
    return records.groupBy("group_id", "topic_id", "partition").applyInArrow(replay, schema)


def replay_kip932(lines: DataFrame, delivery_count_limit: int, use_fast_path: bool = True) -> DataFrame:
    """Per share-partition, the draft's checkpoint + deltas chain (offset_audit.share_coordinator.draft_chain); with
    `use_fast_path` its batches are overlaid by `offset_audit.share_coordinator.cover`."""
    schema = _replay_schema()
    arrow = to_arrow_schema(schema, timezone="UTC")

    def replay(table: pa.Table) -> pa.Table:
        records = [json.loads(t) for t in table.column("text").to_pylist()]
        result = draft_chain.replay_chain(
            records, cover.cover_ranked if use_fast_path else share_partition.cover_by_priority
        )
        key = {"group_id": result.group_id, "topic": result.topic, "partition": result.partition}
        out = _problem_rows(key, result.problems)
        if result.share_checkpoint_offset is not None:
            batches = result.batches
            out.append(
                {
                    **key,
                    "row_kind": "partition",
                    "start_offset": result.start_offset,
                    "end_offset": result.end_offset,
                    "snapshot_epoch": result.checkpoint_epoch,
                    "available_records": share_partition.records_in_state(batches, share_partition.AVAILABLE),
                    "acknowledged_records": share_partition.records_in_state(batches, share_partition.ACKNOWLEDGED),
                    "archived_records": share_partition.records_in_state(batches, share_partition.ARCHIVED),
                    "archiving_records": share_partition.records_in_state(batches, share_partition.ARCHIVING),
                    "max_delivery_count": share_partition.max_delivery_count(batches),
                    "records_at_delivery_limit": share_partition.records_at_or_over(batches, delivery_count_limit),
                    "delivery_count_limit": delivery_count_limit,
                    "checkpoint_offset": result.share_checkpoint_offset,
                    "checkpoint_log_partition": result.partition,
                    "records_replayed": len(records),
                    "problems": len(result.problems),
                }
            )
            out += _batch_rows(key, batches)
        return pa.Table.from_pylist(out, schema=arrow)

    good = lines.where(F.col("error").isNull())
    return good.groupBy("group_id", "topic", "partition").applyInArrow(replay, schema)
