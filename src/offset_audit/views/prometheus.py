"""An audited snapshot as Prometheus metrics: the text exposition format 0.0.4, for node_exporter's textfile
collector or any scrape that serves a file.

Names follow what kminion and kafka-lag-exporter users already query (`group`, `topic`, `partition`
labels, as in kafka-lag-exporter's `kafka_consumergroup_group_lag{group,topic,partition}`), under a prefix
of our own, `kafka_offset_audit_`, so a dashboard can show both side by side and no series of a running
exporter is ever overwritten.

Label cardinality: partition metrics have one series per committed offset, as a lag exporter's do; group
metrics one per group. The group's type, state and protocol type are not labels of every group metric:
a group's state flips between Stable and Empty as members come and go, and a label that changes starts a
new series each time (and breaks every rate() and graph across the change). They are the labels of one
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

from offset_audit.escaping import prometheus_label
from offset_audit.storage import LOCAL, Storage
from offset_audit.views.audit_folder import pick_snapshot, read_snapshot, sums_per_group

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

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Labels = tuple[tuple[str, object], ...]


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
    """The metrics of one snapshot, and their text."""

    snapshot_id: str
    families: tuple[Family, ...]
    groups: int

    @property
    def samples(self) -> int:
        return sum(len(f.samples) for f in self.families)

    @property
    def text(self) -> str:
        return "".join(_family_text(f) for f in self.families)


def exposition(partitions: pa.Table, groups: pa.Table) -> Exposition:
    """The metrics of one snapshot from its partition_verdicts and group_verdicts rows (the columns of
    PARTITION_COLUMNS and GROUP_COLUMNS), ordered by metric name, then by labels."""
    group_rows = groups.select(GROUP_COLUMNS).to_pylist()
    if not group_rows:
        return Exposition("", (), 0)
    first = group_rows[0]
    as_of = first["as_of"] if first["as_of"].tzinfo else first["as_of"].replace(tzinfo=UTC)
    as_of_ms = (as_of - _EPOCH) // timedelta(milliseconds=1)
    families = [
        *_snapshot_families(first["snapshot_id"], as_of_ms, first["retention_minutes"]),
        *_partition_families(partitions.select(PARTITION_COLUMNS).to_pylist()),
        *_group_families(group_rows, _group_lag(partitions), as_of_ms),
    ]
    ordered = sorted((f for f in families if f.samples), key=lambda f: f.name)
    return Exposition(first["snapshot_id"], tuple(ordered), len(group_rows))


def snapshot_metrics(audit_dir: str, snapshot_id: str | None = None, storage: Storage = LOCAL) -> Exposition:
    """The metrics of one snapshot of an audit's output folder (the newest by default), read with
    delta-rs and pyarrow: no Spark."""
    chosen = pick_snapshot(audit_dir, snapshot_id, storage=storage)
    partitions = read_snapshot(audit_dir, "partition_verdicts", chosen, storage, columns=PARTITION_COLUMNS)
    groups = read_snapshot(audit_dir, "group_verdicts", chosen, storage, columns=GROUP_COLUMNS)
    return exposition(partitions, groups)


def _snapshot_families(snapshot_id: str, as_of_ms: int, retention_minutes: int | None) -> list[Family]:
    info: Labels = (("snapshot_id", snapshot_id), ("retention_minutes", retention_minutes))
    return [
        Family(
            "snapshot_timestamp_seconds",
            "The time the audited snapshot's verdicts are for (as_of), in seconds since the epoch.",
            (((), as_of_ms / 1000),),
        ),
        Family(
            "snapshot_info",
            "The audited snapshot: its id and the offsets.retention.minutes it was judged with.",
            ((info, 1),),
        ),
    ]


def _partition_families(rows: list[dict]) -> list[Family]:
    rows = sorted(rows, key=lambda r: (r["group_id"], r["topic"], r["partition"]))

    def samples(value_of) -> tuple:
        labelled = ((_partition_labels(r), value_of(r)) for r in rows)
        return tuple((labels, value) for labels, value in labelled if value is not None)

    return [
        Family(
            "partition_committed_offset",
            "The offset the group committed for the partition.",
            samples(lambda r: r["committed_offset"]),
        ),
        Family(
            "partition_lag",
            "Log end offset minus committed offset (audits run with --end-offsets; absent when unknown).",
            samples(lambda r: r["lag"]),
        ),
        Family(
            "partition_commit_timestamp_seconds",
            "When the broker processed the commit, in seconds since the epoch.",
            samples(lambda r: _seconds(r["commit_timestamp_ms"])),
        ),
        Family(
            "partition_expiry_seconds",
            "Seconds from the snapshot until the committed offset expires, negative once expired; "
            "absent when it never expires while the group stays as it is.",
            samples(lambda r: _seconds(r["time_to_expiry_ms"])),
        ),
        Family(
            "partition_expired",
            "1 when the committed offset is expired as of the snapshot (the next sweep removes it), else 0.",
            samples(lambda r: _flag(r["expired"])),
        ),
        Family(
            "partition_deletable",
            "1 when kafka-consumer-groups --delete-offsets would succeed for it now (KIP-496), else 0.",
            samples(lambda r: _flag(r["deletable_now"])),
        ),
    ]


def _group_families(rows: list[dict], lag_by_group: dict[str, int], as_of_ms: int) -> list[Family]:
    rows = sorted(rows, key=lambda r: r["group_id"])

    def samples(value_of) -> tuple:
        labelled = (((("group", r["group_id"]),), value_of(r)) for r in rows)
        return tuple((labels, value) for labels, value in labelled if value is not None)

    def until(ms: int | None) -> float | None:
        return None if ms is None else _seconds(ms - as_of_ms)

    return [
        Family(
            "group_info",
            "1 for each group the coordinator holds, with its type, state and protocol type as labels "
            "(join them in with * on(group) group_left(...)).",
            tuple((_info_labels(r), 1) for r in rows),
        ),
        Family("group_members", "Members of the group.", samples(lambda r: r["member_count"])),
        Family("group_offsets", "Committed offsets the group holds.", samples(lambda r: r["offset_count"])),
        Family(
            "group_expired_offsets",
            "Of the group's committed offsets, how many are expired as of the snapshot.",
            samples(lambda r: r["expired_offset_count"]),
        ),
        Family(
            "group_lag",
            "Sum of the group's partition lags where known (audits run with --end-offsets).",
            samples(lambda r: lag_by_group.get(r["group_id"])),
        ),
        Family(
            "group_next_expiry_seconds",
            "Seconds from the snapshot until the group's next committed offset expires; absent when none will.",
            samples(lambda r: until(r["next_expiry_at_ms"])),
        ),
        Family(
            "group_expiry_seconds",
            "Seconds from the snapshot until the sweep removes the whole group if nothing changes, negative "
            "once due; absent when never.",
            samples(lambda r: until(r["group_expires_at_ms"])),
        ),
        Family(
            "group_would_delete",
            "1 when the expiry sweep removes the group as of the snapshot, else 0.",
            samples(lambda r: _flag(r["would_delete"])),
        ),
    ]


def _group_lag(partitions: pa.Table) -> dict[str, int]:
    """Each group's known lags added up exactly: a log end offset may be near 2**63."""
    return {r["group_id"]: int(r["lag_sum"]) for r in sums_per_group(partitions, "lag").to_pylist()}


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
