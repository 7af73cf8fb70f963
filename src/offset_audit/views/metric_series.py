"""The values of `offset-audit metrics`' group, partition and group-and-topic series, a column each.

Each family's values come out as the text the exposition writes (`metric_text`), null where a sample is
not written (an unknown lag, an offset that never expires). Lags are summed as decimals: a log end
offset may be near 2**63, and a group's sum must neither wrap around nor pass through a double.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.views.audit_folder import exact, sums_per_group
from offset_audit.views.metric_text import flag_text, integer_text, seconds_text, seconds_until

_NULL_TEXT = pa.scalar(None, pa.string())


def group_values(groups: pa.Table, partitions: pa.Table, as_of_ms: int) -> tuple[dict[str, pa.Array], np.ndarray]:
    """Each group row's values by metric (group_info aside), and the samples of its unit (group_info and
    each value not null). `partitions` are all the groups' offsets, whatever the topic filters."""
    deletable = _per_group(
        groups, partitions.group_by("group_id", use_threads=False).aggregate([("deletable_now", "sum")])
    )
    lags = _per_group(groups, sums_per_group(partitions, "lag", "stale_lag"))
    lag = integer_text(lags["lag_sum"])
    stale = pc.if_else(pc.is_valid(lag), pc.fill_null(integer_text(lags["stale_lag_sum"]), "0"), _NULL_TEXT)
    values = {
        "group_members": integer_text(groups["member_count"]),
        "group_offsets": integer_text(groups["offset_count"]),
        "group_expired_offsets": integer_text(groups["expired_offset_count"]),
        "group_deletable_offsets": pc.fill_null(integer_text(deletable["deletable_now_sum"]), "0"),
        "group_lag": lag,
        "group_stale_lag": stale,
        "group_next_expiry_seconds": seconds_until(groups["next_expiry_at_ms"], as_of_ms),
        "group_expiry_seconds": seconds_until(groups["group_expires_at_ms"], as_of_ms),
        "group_would_delete": flag_text(groups["would_delete"]),
    }
    values = {name: _array(v) for name, v in values.items()}
    return values, 1 + _written(values.values(), groups.num_rows)


def partition_values(rows: pa.Table, every: bool) -> dict[str, pa.Array]:
    """Each offset's values by metric: all six at partition granularity, else the two that say why it is
    watched (its expiry, whether it is deletable now)."""
    values = {
        "partition_expiry_seconds": seconds_text(rows["time_to_expiry_ms"]),
        "partition_deletable": flag_text(rows["deletable_now"]),
    }
    if every:
        values |= {
            "partition_committed_offset": integer_text(rows["committed_offset"]),
            "partition_lag": integer_text(rows["lag"]),
            "partition_commit_timestamp_seconds": seconds_text(rows["commit_timestamp_ms"]),
            "partition_expired": flag_text(rows["expired"]),
        }
    return values


def partition_sizes(rows: pa.Table, every: bool) -> np.ndarray:
    """The samples of each offset's unit: its values that are not null."""
    columns = ["time_to_expiry_ms", "deletable_now"]
    if every:
        columns += ["committed_offset", "lag", "commit_timestamp_ms", "expired"]
    return _written((rows[c] for c in columns), rows.num_rows)


def topic_units(rows: pa.Table) -> pa.Table:
    """Per group and topic of `rows`: group_id, topic, the group_topic_* values (its offsets, expired and
    deletable ones, known lag and next expiry) and `size`, the samples of its unit."""
    counted = pa.table(
        {
            "group_id": rows["group_id"],
            "topic": rows["topic"],
            "offsets": pa.array(np.ones(rows.num_rows, np.int64)),
            "expired": pc.fill_null(rows["expired"], False).cast(pa.int64()),
            "deletable": pc.fill_null(rows["deletable_now"], False).cast(pa.int64()),
            "lag": rows["lag"],
            "expiry": rows["time_to_expiry_ms"],
        }
    )
    sums = exact(counted, "lag").group_by(["group_id", "topic"], use_threads=False)
    sums = sums.aggregate([(c, "sum") for c in ("offsets", "expired", "deletable", "lag")] + [("expiry", "min")])
    values = {
        "group_topic_offsets": integer_text(sums["offsets_sum"]),
        "group_topic_expired_offsets": integer_text(sums["expired_sum"]),
        "group_topic_deletable_offsets": integer_text(sums["deletable_sum"]),
        "group_topic_lag": integer_text(sums["lag_sum"]),
        "group_topic_next_expiry_seconds": seconds_text(sums["expiry_min"]),
    }
    values = {name: _array(v) for name, v in values.items()}
    size = _written(values.values(), sums.num_rows)
    return pa.table({"group_id": sums["group_id"], "topic": sums["topic"], **values, "size": pa.array(size)})


def _per_group(groups: pa.Table, sums: pa.Table) -> pa.Table:
    """The row of `sums` (by group_id) for each group row, nulls where it has none."""
    return sums.take(pc.index_in(groups["group_id"], value_set=sums["group_id"]))


def _written(columns, rows: int) -> np.ndarray:
    """How many of the columns are not null, row by row."""
    written = np.zeros(rows, np.int64)
    for column in columns:
        written += pc.is_valid(column).to_numpy(zero_copy_only=False)
    return written


def _array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
