"""An audited snapshot as Prometheus metrics: the text exposition format 0.0.4, for node_exporter's textfile
collector or any scrape that serves a file.

Names follow what kminion and kafka-lag-exporter users already query (`group`, `topic`, `partition`
labels, as in kafka-lag-exporter's `kafka_consumergroup_group_lag{group,topic,partition}`), under a prefix
of our own, `kafka_offset_audit_`, so a dashboard can show both side by side and no series of a running
exporter is ever overwritten.

Label cardinality: group metrics have one series per group; partition metrics one per committed offset,
as a lag exporter's do, but by default only for the offsets an operator acts on one by one (expiring
soon, or deletable now), and never past a sample budget (`offset_audit.views.metric_scope`).

A group's type, state and protocol type are not labels of every group metric: a group's state flips
between Stable and Empty as members come and go, and a label that changes starts a new series each time
(and breaks every rate() and graph across the change). They are the labels of one
`kafka_offset_audit_group_info{group,group_type,group_state,protocol_type} 1` series instead, which a
query joins in where it wants them (kube-state-metrics' `*_info` pattern):

    kafka_offset_audit_group_lag * on(group) group_left(group_state) kafka_offset_audit_group_info

Every name from the dump (group ids, topics) passes through `escaping.prometheus_label`: a group id
holding a quote, a backslash or a newline stays one label value and never becomes a line or a series.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.escaping import prometheus_label
from offset_audit.storage import LOCAL, Storage
from offset_audit.views.audit_folder import has_table, pick_snapshot, read_snapshot, read_table, sums_per_group
from offset_audit.views.metric_scope import (
    DEFAULT_SCOPE,
    DELETABLE,
    DETAIL,
    EXPIRING,
    GROUPS,
    SNAPSHOT,
    URGENT_GROUPS,
    Labels,
    Sample,
    Scope,
    Unit,
    detail_rank,
    ordered_groups,
    select,
    watched_rank,
)

PREFIX = "kafka_offset_audit_"

PARTITION_COLUMNS = [
    "group_id",
    "topic",
    "partition",
    "committed_offset",
    "commit_timestamp_ms",
    "time_to_expiry_ms",
    "expired",
    "deletable_now",
    "lag",
    "stale_lag",
]
GROUP_COLUMNS = [
    "snapshot_id",
    "as_of",
    "retention_minutes",
    "group_id",
    "group_type",
    "protocol_type",
    "group_state",
    "member_count",
    "offset_count",
    "expired_offset_count",
    "next_expiry_at_ms",
    "group_expires_at_ms",
    "would_delete",
]
RUN_COLUMNS = ["command", "snapshot_id", "started_at", "finished_at", "records_read"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Every metric's HELP text, by name without the prefix.
HELP = {
    "snapshot_timestamp_seconds": "The time the audited snapshot's verdicts are for (as_of), in seconds since "
    "the epoch.",
    "snapshot_info": "The audited snapshot: its id and the offsets.retention.minutes it was judged with.",
    "last_success_timestamp_seconds": "When the audit run that wrote this snapshot finished, in seconds since "
    "the epoch.",
    "last_run_duration_seconds": "How long the audit run that wrote this snapshot took, in seconds.",
    "last_run_records_read": "Records of __consumer_offsets the audit run that wrote this snapshot read.",
    "metrics_left_out_samples": "Samples of this snapshot's series that --max-samples left out, 0 when none: the "
    "metrics command's stderr says which.",
    "partition_committed_offset": "The offset the group committed for the partition.",
    "partition_lag": "Log end offset minus committed offset (audits run with --end-offsets; absent when unknown).",
    "partition_commit_timestamp_seconds": "When the broker processed the commit, in seconds since the epoch.",
    "partition_expiry_seconds": "Seconds from the snapshot until the committed offset expires, negative once expired; "
    "absent when it never expires while the group stays as it is.",
    "partition_expired": "1 when the committed offset is expired as of the snapshot (the next sweep removes it), "
    "else 0.",
    "partition_deletable": "1 when kafka-consumer-groups --delete-offsets would succeed for it now (KIP-496), else 0.",
    "group_topic_offsets": "Committed offsets the group holds on the topic.",
    "group_topic_lag": "Sum of the group's known partition lags on the topic (audits run with --end-offsets).",
    "group_topic_expired_offsets": "Of the group's committed offsets on the topic, how many are expired.",
    "group_topic_deletable_offsets": "Of the group's committed offsets on the topic, how many --delete-offsets "
    "would remove now.",
    "group_topic_next_expiry_seconds": "Seconds from the snapshot until the group's next offset on the topic "
    "expires, negative once one has; absent when none will.",
    "group_info": "1 for each group the coordinator holds, with its type, state and protocol type as labels "
    "(join them in with * on(group) group_left(...)).",
    "group_members": "Members of the group.",
    "group_offsets": "Committed offsets the group holds.",
    "group_expired_offsets": "Of the group's committed offsets, how many are expired as of the snapshot.",
    "group_deletable_offsets": "Of the group's committed offsets, how many kafka-consumer-groups --delete-offsets "
    "would remove now (KIP-496).",
    "group_lag": "Sum of the group's partition lags where known (audits run with --end-offsets).",
    "group_stale_lag": "Of the group's lag, the part on partitions it does not consume (no members, or a topic "
    "it left): lag that only grows on dashboards (audits run with --end-offsets).",
    "group_next_expiry_seconds": "Seconds from the snapshot until the group's next committed offset expires; "
    "absent when none will.",
    "group_expiry_seconds": "Seconds from the snapshot until the sweep removes the whole group if nothing changes, "
    "negative once due; absent when never.",
    "group_would_delete": "1 when the expiry sweep removes the group as of the snapshot, else 0.",
}


@dataclass(frozen=True)
class Family:
    """One metric: its name without the prefix, its HELP text, and its samples (labels, value)."""

    name: str
    help: str
    samples: tuple[tuple[Labels, int | float], ...]

    @property
    def full_name(self) -> str:
        return PREFIX + self.name


@dataclass(frozen=True)
class Exposition:
    """The metrics of one snapshot, their text, and what the sample budget left out (None: nothing)."""

    snapshot_id: str
    families: tuple[Family, ...]
    groups: int
    wanted: int = 0
    left_out: str | None = None

    @property
    def samples(self) -> int:
        return sum(len(f.samples) for f in self.families)

    @property
    def text(self) -> str:
        return "".join(_family_text(f) for f in self.families)


def exposition(
    partitions: pa.Table, groups: pa.Table, run: dict | None = None, scope: Scope = DEFAULT_SCOPE
) -> Exposition:
    """The metrics of one snapshot from its partition_verdicts and group_verdicts rows (the columns of
    PARTITION_COLUMNS and GROUP_COLUMNS) and the runs row of the audit that wrote it (RUN_COLUMNS, or
    None), within `scope`; ordered by metric name, then by labels."""
    group_rows = [r for r in groups.select(GROUP_COLUMNS).to_pylist() if scope.keeps_group(r["group_id"])]
    if not group_rows:
        return Exposition("", (), 0)
    first = group_rows[0]
    as_of = first["as_of"] if first["as_of"].tzinfo else first["as_of"].replace(tzinfo=UTC)
    as_of_ms = (as_of - _EPOCH) // timedelta(milliseconds=1)
    kept_groups = {r["group_id"] for r in group_rows}
    rows = [r for r in partitions.select(PARTITION_COLUMNS).to_pylist() if r["group_id"] in kept_groups]
    order = ordered_groups(group_rows)
    lag_by_group = _group_lags(partitions.filter(pc.is_in(partitions["group_id"], pa.array(sorted(kept_groups)))))
    deletable: dict[str, int] = {}
    for r in rows:
        if r["deletable_now"]:
            deletable[r["group_id"]] = deletable.get(r["group_id"], 0) + 1
    units = [
        Unit(SNAPSHOT, (), _snapshot_samples(first["snapshot_id"], as_of_ms, first["retention_minutes"], run)),
        *(
            Unit(
                URGENT_GROUPS if scope.is_urgent(g, as_of_ms) else GROUPS,
                (order[g["group_id"]],),
                _group_samples(g, lag_by_group, deletable.get(g["group_id"], 0), as_of_ms),
            )
            for g in group_rows
        ),
    ]
    detailed = [r for r in rows if scope.keeps_topic(r["topic"])]
    watched_series = _partition_samples if scope.granularity == "partition" else _watched_samples
    units += [
        Unit(EXPIRING if scope.expires_soon(r) else DELETABLE, watched_rank(r, order), watched_series(r))
        for r in detailed
        if scope.watches(r)
    ]
    if scope.granularity == "partition":
        units += [Unit(DETAIL, detail_rank(r, order), _partition_samples(r)) for r in detailed if not scope.watches(r)]
    elif scope.granularity == "topic":
        units += [Unit(DETAIL, detail_rank(t, order), samples) for t, samples in _group_topic_units(detailed)]
    # The last sample counts what the budget left out, so a dashboard can tell it is not seeing everything.
    chosen = select(units, scope.max_samples, reserve=1)
    left_out = ("metrics_left_out_samples", (), chosen.wanted - len(chosen.samples) - 1)
    families = _families((*chosen.samples, left_out))
    return Exposition(
        first["snapshot_id"], families, len(group_rows), chosen.wanted, chosen.left_out_text(scope.max_samples)
    )


def snapshot_metrics(
    audit_dir: str, snapshot_id: str | None = None, storage: Storage = LOCAL, scope: Scope = DEFAULT_SCOPE
) -> Exposition:
    """The metrics of one snapshot of an audit's output folder (the newest by default), read with
    delta-rs and pyarrow: no Spark."""
    chosen = pick_snapshot(audit_dir, snapshot_id, storage=storage)
    partitions = read_snapshot(audit_dir, "partition_verdicts", chosen, storage, columns=PARTITION_COLUMNS)
    groups = read_snapshot(audit_dir, "group_verdicts", chosen, storage, columns=GROUP_COLUMNS)
    return exposition(partitions, groups, _run_of(audit_dir, chosen, storage), scope)


def _run_of(audit_dir: str, snapshot_id: str, storage: Storage) -> dict | None:
    """The runs row of the audit that wrote the snapshot (a run has a row only once it finished)."""
    if not has_table(audit_dir, "runs", storage):
        return None
    runs = read_table(audit_dir, "runs", storage, columns=RUN_COLUMNS).to_pylist()
    wrote = [r for r in runs if r["command"] == "audit" and r["snapshot_id"] == snapshot_id and r["finished_at"]]
    return max(wrote, key=lambda r: r["finished_at"]) if wrote else None


def _families(samples: Iterable[Sample]) -> tuple[Family, ...]:
    by_name: dict[str, list[tuple[Labels, int | float]]] = {}
    for name, labels, value in samples:
        by_name.setdefault(name, []).append((labels, value))
    return tuple(Family(name, HELP[name], tuple(sorted(by_name[name], key=_label_order))) for name in sorted(by_name))


def _label_order(sample: tuple[Labels, int | float]) -> tuple:
    return tuple((value is None, value) for _, value in sample[0])


def _snapshot_samples(snapshot_id: str, as_of_ms: int, retention_minutes: int | None, run: dict | None) -> tuple:
    info: Labels = (("snapshot_id", snapshot_id), ("retention_minutes", retention_minutes))
    samples: list[Sample] = [("snapshot_timestamp_seconds", (), as_of_ms / 1000), ("snapshot_info", info, 1)]
    if run is not None:
        finished, started = _aware(run["finished_at"]), _aware(run["started_at"])
        samples.append(("last_success_timestamp_seconds", (), (finished - _EPOCH) / timedelta(seconds=1)))
        samples.append(("last_run_duration_seconds", (), (finished - started) / timedelta(seconds=1)))
        if run["records_read"] is not None:
            samples.append(("last_run_records_read", (), int(run["records_read"])))
    return tuple(samples)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _partition_samples(row: dict) -> tuple[Sample, ...]:
    labels = _partition_labels(row)
    values = (
        ("partition_committed_offset", row["committed_offset"]),
        ("partition_lag", row["lag"]),
        ("partition_commit_timestamp_seconds", _seconds(row["commit_timestamp_ms"])),
        ("partition_expiry_seconds", _seconds(row["time_to_expiry_ms"])),
        ("partition_expired", _flag(row["expired"])),
        ("partition_deletable", _flag(row["deletable_now"])),
    )
    return tuple((name, labels, value) for name, value in values if value is not None)


def _watched_samples(row: dict) -> tuple[Sample, ...]:
    """What says why a partition is watched: its expiry and whether it is deletable now."""
    labels = _partition_labels(row)
    values = (
        ("partition_expiry_seconds", _seconds(row["time_to_expiry_ms"])),
        ("partition_deletable", _flag(row["deletable_now"])),
    )
    return tuple((name, labels, value) for name, value in values if value is not None)


def _group_topic_units(rows: list[dict]) -> list[tuple[dict, tuple[Sample, ...]]]:
    """Per (group, topic): its offsets, expired and deletable ones, known lag and next expiry."""
    by_topic: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        by_topic.setdefault((row["group_id"], row["topic"]), []).append(row)
    units = []
    for (group_id, topic), mine in by_topic.items():
        labels: Labels = (("group", group_id), ("topic", topic))
        lags = [r["lag"] for r in mine if r["lag"] is not None]
        expiries = [r["time_to_expiry_ms"] for r in mine if r["time_to_expiry_ms"] is not None]
        values = (
            ("group_topic_offsets", len(mine)),
            ("group_topic_expired_offsets", sum(bool(r["expired"]) for r in mine)),
            ("group_topic_deletable_offsets", sum(bool(r["deletable_now"]) for r in mine)),
            ("group_topic_lag", sum(lags) if lags else None),  # Python ints: exact past 2**63
            ("group_topic_next_expiry_seconds", _seconds(min(expiries)) if expiries else None),
        )
        samples = tuple((name, labels, value) for name, value in values if value is not None)
        units.append(({"group_id": group_id, "topic": topic}, samples))
    return units


def _group_samples(
    row: dict, lag_by_group: dict[str, tuple[int, int]], deletable: int, as_of_ms: int
) -> tuple[Sample, ...]:
    def until(ms: int | None) -> float | None:
        return None if ms is None else _seconds(ms - as_of_ms)

    group: Labels = (("group", row["group_id"]),)
    values = (
        ("group_members", row["member_count"]),
        ("group_offsets", row["offset_count"]),
        ("group_expired_offsets", row["expired_offset_count"]),
        ("group_deletable_offsets", deletable),
        ("group_lag", lag_by_group.get(row["group_id"], (None, None))[0]),
        ("group_stale_lag", lag_by_group.get(row["group_id"], (None, None))[1]),
        ("group_next_expiry_seconds", until(row["next_expiry_at_ms"])),
        ("group_expiry_seconds", until(row["group_expires_at_ms"])),
        ("group_would_delete", _flag(row["would_delete"])),
    )
    return (("group_info", _info_labels(row), 1), *((n, group, v) for n, v in values if v is not None))


def _group_lags(partitions: pa.Table) -> dict[str, tuple[int, int]]:
    """Each group's known lags, and stale lags, added up exactly: a log end offset may be near 2**63."""
    sums = sums_per_group(partitions, "lag", "stale_lag").to_pylist()
    return {r["group_id"]: (int(r["lag_sum"]), int(r["stale_lag_sum"] or 0)) for r in sums}


def _partition_labels(row: dict) -> Labels:
    return (("group", row["group_id"]), ("topic", row["topic"]), ("partition", row["partition"]))


def _info_labels(row: dict) -> Labels:
    return (
        ("group", row["group_id"]),
        ("group_type", row["group_type"]),
        ("group_state", row["group_state"]),
        ("protocol_type", row["protocol_type"]),
    )


def _seconds(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(value)


def _family_text(family: Family) -> str:
    help_text = family.help.replace("\\", "\\\\").replace("\n", "\\n")
    lines = [f"# HELP {family.full_name} {help_text}", f"# TYPE {family.full_name} gauge"]
    lines.extend(f"{family.full_name}{_labels_text(labels)} {_value_text(value)}" for labels, value in family.samples)
    return "\n".join(lines) + "\n"


def _labels_text(labels: Iterable[tuple[str, object]]) -> str:
    """A null value (simple and modern groups have no protocol type) leaves its label out: Prometheus
    reads an empty label value as no label anyway."""
    pairs = [f'{name}="{prometheus_label(value)}"' for name, value in labels if value is not None]
    return "{" + ",".join(pairs) + "}" if pairs else ""


def _value_text(value: int | float) -> str:
    """Integers as written (offsets pass 2**53; Prometheus rounds them to a double itself), floats as the
    shortest text that reads back as the same double."""
    return str(value) if isinstance(value, int) else repr(float(value))
