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

Every series carries the `cluster` label of the snapshot's cluster (runs.clusters), as Burrow's and
kafka-lag-exporter's do, so one scrape serves a fleet's audits kept in one folder: without --cluster,
`metrics` writes the newest snapshot of each cluster. A cluster without a name has no label (Prometheus
reads an empty label as none).

Every name from the dump (group ids, topics) passes through `escaping.prometheus_label`: a group id
holding a quote, a backslash or a newline stays one label value and never becomes a line or a series.

The samples are built a column at a time with pyarrow.compute (`metric_series`, `metric_text`): a
fleet's every offset is some 800,000 samples, which one Python tuple and f-string each made a 14 s job.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.storage import LOCAL, Storage
from offset_audit.table_names import GROUP_VERDICTS, PARTITION_VERDICTS, RUNS_TABLE
from offset_audit.views.audit_folder import (
    Snapshot,
    by_cluster,
    has_table,
    pick_snapshot,
    read_snapshot,
    read_table,
    snapshots,
)
from offset_audit.views.metric_scope import (
    DEFAULT_SCOPE,
    DELETABLE,
    DETAIL,
    EXPIRING,
    GROUPS,
    SNAPSHOT,
    URGENT_GROUPS,
    Ranked,
    Scope,
    Selection,
    group_places,
    places_of,
    ranked,
    select,
)
from offset_audit.views.metric_series import group_values, partition_sizes, partition_values, topic_units
from offset_audit.views.metric_text import PREFIX, Family, Labels, family

__all__ = ["GROUP_COLUMNS", "HELP", "PARTITION_COLUMNS", "PREFIX", "RUN_COLUMNS", "Exposition", "Family"]

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


Sample = tuple[str, Labels, int | float]  # metric name (without the prefix), labels, value


@dataclass(frozen=True)
class Exposition:
    """The metrics of one snapshot, their text, and what the sample budget left out (None: nothing)."""

    snapshot_id: str
    families: tuple[Family, ...]
    groups: int
    wanted: int = 0
    left_out: str | None = None
    cluster: str = ""

    @property
    def samples(self) -> int:
        return sum(f.count for f in self.families)

    @cached_property
    def text(self) -> str:
        return "".join(f.text for f in self.families)


def exposition(
    partitions: pa.Table,
    groups: pa.Table,
    run: dict | None = None,
    scope: Scope = DEFAULT_SCOPE,
    cluster: str = "",
) -> Exposition:
    """The metrics of one snapshot from its partition_verdicts and group_verdicts rows (the columns of
    PARTITION_COLUMNS and GROUP_COLUMNS) and the runs row of the audit that wrote it (RUN_COLUMNS, or
    None), within `scope`, every series labelled with `cluster` (none when ""); ordered by metric name,
    then by labels (then in the order of importance)."""
    groups = groups.select(GROUP_COLUMNS).combine_chunks()
    groups = groups.filter(scope.kept_groups(groups["group_id"]))
    if not groups.num_rows:
        return Exposition("", (), 0, cluster=cluster)
    first = groups.slice(0, 1).to_pylist()[0]
    as_of = first["as_of"] if first["as_of"].tzinfo else first["as_of"].replace(tzinfo=UTC)
    as_of_ms = (as_of - _EPOCH) // timedelta(milliseconds=1)
    partitions = partitions.select(PARTITION_COLUMNS).combine_chunks()
    partitions = partitions.filter(pc.is_in(partitions["group_id"], value_set=pc.unique(groups["group_id"])))
    detailed = partitions.filter(scope.kept_topics(partitions["topic"]))

    snapshot = _snapshot_samples(first["snapshot_id"], as_of_ms, first["retention_minutes"], run)
    group_texts, group_sizes = group_values(groups, partitions, as_of_ms)
    places = group_places(groups)
    urgent = scope.urgent(groups, as_of_ms)
    group_keys = pa.table({"place": places})
    tiers = [
        Ranked(SNAPSHOT, np.zeros(1, np.int64), np.array([len(snapshot)])),
        ranked(URGENT_GROUPS, group_keys, group_sizes, urgent),
        ranked(GROUPS, group_keys, group_sizes, pc.invert(urgent)),
    ]
    every = scope.granularity == "partition"
    partition_places = places_of(detailed["group_id"], groups["group_id"], places)
    tiers += _partition_tiers(detailed, partition_places, scope, every)
    units = topic_units(detailed) if scope.granularity == "topic" else None
    if units is not None:
        keys = pa.table({"place": places_of(units["group_id"], groups["group_id"], places), "topic": units["topic"]})
        tiers.append(ranked(DETAIL, keys, units["size"].to_numpy()))
    # The last sample counts what the budget left out, so a dashboard can tell it is not seeing everything.
    chosen = select(tiers, scope.max_samples, reserve=1)
    left_out = ("metrics_left_out_samples", (), chosen.wanted - chosen.written - 1)
    written = _python_families([*(snapshot if len(chosen.kept[SNAPSHOT][0]) else ()), left_out])
    written += _group_families(groups, group_texts, chosen)
    written += _partition_families(detailed, chosen, every)
    if units is not None:
        written += _topic_families(units, chosen)
    families = tuple(sorted((_labelled(f, cluster) for f in written if f.count), key=lambda f: f.name))
    return Exposition(
        first["snapshot_id"],
        families,
        groups.num_rows,
        chosen.wanted,
        chosen.left_out_text(scope.max_samples),
        cluster,
    )


def _labelled(family_: Family, cluster: str) -> Family:
    """The family with the `cluster` label first on every sample; as it was for a cluster without a name."""
    if not cluster:
        return family_
    column = pa.array([cluster] * family_.count, pa.string())
    return Family(family_.name, family_.help, (("cluster", column), *family_.labels), family_.values)


def snapshot_metrics(
    audit_dir: str,
    snapshot_id: str | None = None,
    storage: Storage = LOCAL,
    scope: Scope = DEFAULT_SCOPE,
    cluster: str | None = None,
) -> Exposition:
    """The metrics of an audit's output folder, read with delta-rs and pyarrow (no Spark): of the given
    snapshot, or the newest of `cluster`, or else the newest of each cluster the folder holds, each
    cluster's series labelled with its name. A fleet shares the sample budget equally."""
    known = snapshots(audit_dir, storage=storage)
    if snapshot_id is not None or cluster:
        chosen = [pick_snapshot(audit_dir, snapshot_id, storage=storage, known=known, cluster=cluster)]
    else:
        chosen = [group[-1] for group in by_cluster(known).values()] or [pick_snapshot(audit_dir, None)]
    each = scope if len(chosen) == 1 else replace(scope, max_samples=max(1, scope.max_samples // len(chosen)))
    parts = []
    for snapshot in chosen:
        partitions = read_snapshot(audit_dir, PARTITION_VERDICTS, snapshot, storage, columns=PARTITION_COLUMNS)
        groups = read_snapshot(audit_dir, GROUP_VERDICTS, snapshot, storage, columns=GROUP_COLUMNS)
        run = _run_of(audit_dir, snapshot, storage)
        parts.append(exposition(partitions, groups, run, each, snapshot.cluster))
    return parts[0] if len(parts) == 1 else fleet_exposition(parts)


def fleet_exposition(parts: list[Exposition]) -> Exposition:
    """One exposition of several clusters' (each labelled already): each metric's samples of every
    cluster under one HELP and TYPE, the clusters in the order of their names."""
    parts = sorted(parts, key=lambda p: p.cluster)
    by_name: dict[str, list[Family]] = {}
    for part in parts:
        for family_ in part.families:
            by_name.setdefault(family_.name, []).append(family_)
    families = []
    for name in sorted(by_name):
        same = by_name[name]
        columns = {label for f in same for label, _ in f.labels}
        order = [label for label, _ in max(same, key=lambda f: len(f.labels)).labels]
        labels = []
        for label in order if columns == set(order) else sorted(columns):
            arrays = [dict(f.labels).get(label, pa.nulls(f.count, pa.string())) for f in same]
            labels.append((label, pa.concat_arrays([a.cast(pa.string()) for a in arrays])))
        values = pa.concat_arrays([f.values.cast(pa.string()) for f in same])
        families.append(Family(name, same[0].help, tuple(labels), values))
    left_out = [f"cluster {p.cluster or '(unnamed)'}: {p.left_out}" for p in parts if p.left_out]
    return Exposition(
        ",".join(p.snapshot_id for p in parts),
        tuple(families),
        sum(p.groups for p in parts),
        sum(p.wanted for p in parts),
        "; ".join(left_out) or None,
        ",".join(p.cluster for p in parts),
    )


def _run_of(audit_dir: str, snapshot: Snapshot, storage: Storage) -> dict | None:
    """The runs row of the audit that wrote the snapshot (a run has a row only once it finished), of its
    cluster (a row written before fleets names none)."""
    if not has_table(audit_dir, RUNS_TABLE, storage):
        return None
    runs = read_table(audit_dir, RUNS_TABLE, storage, columns=[*RUN_COLUMNS, "cluster"]).to_pylist()
    wrote = [
        r
        for r in runs
        if r["command"] == "audit"
        and r["snapshot_id"] == snapshot.snapshot_id
        and (r["cluster"] or "") == snapshot.cluster
        and r["finished_at"]
    ]
    return max(wrote, key=lambda r: r["finished_at"]) if wrote else None


def _partition_tiers(detailed: pa.Table, places: pa.Array, scope: Scope, every: bool) -> list[Ranked]:
    """The watched offsets, the soonest expiry first (never-expiring deletable ones last), then in the
    groups' order; at partition granularity the others, in the groups' order. A watched offset's unit is
    the two series that say why it is watched, or at partition granularity all six."""
    watched = scope.watches(detailed)
    soon = scope.expires_soon(detailed)
    sizes = partition_sizes(detailed, every)
    keys = pa.table({"place": places, "topic": detailed["topic"], "partition": detailed["partition"]})
    watched_keys = keys.add_column(0, "expiry", detailed["time_to_expiry_ms"])
    tiers = [
        ranked(EXPIRING, watched_keys, sizes, pc.and_(watched, soon)),
        ranked(DELETABLE, watched_keys, sizes, pc.and_(watched, pc.invert(soon))),
    ]
    if every:
        tiers.append(ranked(DETAIL, keys, sizes, pc.invert(watched)))
    return tiers


def _kept(table: pa.Table, chosen: Selection, tiers: tuple[int, ...], order: list[str]) -> pa.Table:
    """The rows of `table` the budget kept in these tiers, in the order of `order`'s columns, then of
    importance (which only rows of the same labels, if any, need)."""
    rows, places = (np.concatenate([chosen.kept[t][i] for t in tiers]) for i in (0, 1))
    kept = table.take(rows).append_column("__place", pa.array(places, pa.int64()))
    sort = pc.sort_indices(kept, [(c, "ascending") for c in [*order, "__place"]])
    return kept.take(sort)


def _group_families(groups: pa.Table, texts: dict[str, pa.Array], chosen: Selection) -> list[Family]:
    table = groups.append_column("__index", pa.array(np.arange(groups.num_rows)))
    kept = _kept(table, chosen, (URGENT_GROUPS, GROUPS), ["group_id"])
    index = kept["__index"]
    group = [("group", kept["group_id"])]
    families = [family(name, HELP[name], group, pc.take(values, index)) for name, values in texts.items()]
    info_names = ("group_type", "group_state", "protocol_type")
    info = _kept(table, chosen, (URGENT_GROUPS, GROUPS), ["group_id", *info_names])
    labels = [("group", info["group_id"]), *((name, info[name]) for name in info_names)]
    families.append(family("group_info", HELP["group_info"], labels, pa.array(["1"] * info.num_rows)))
    return families


def _partition_families(detailed: pa.Table, chosen: Selection, every: bool) -> list[Family]:
    tiers = (EXPIRING, DELETABLE, DETAIL) if every else (EXPIRING, DELETABLE)  # else DETAIL is topic units
    kept = _kept(detailed, chosen, tiers, ["group_id", "topic", "partition"])
    labels = [("group", kept["group_id"]), ("topic", kept["topic"]), ("partition", kept["partition"])]
    values = partition_values(kept, every)
    return [family(name, HELP[name], labels, texts) for name, texts in values.items()]


def _topic_families(units: pa.Table, chosen: Selection) -> list[Family]:
    kept = _kept(units, chosen, (DETAIL,), ["group_id", "topic"])
    labels = [("group", kept["group_id"]), ("topic", kept["topic"])]
    names = [n for n in kept.column_names if n.startswith("group_topic_")]
    return [family(name, HELP[name], labels, kept[name]) for name in names]


def _python_families(samples: list[Sample]) -> list[Family]:
    """The snapshot's own few samples, built in Python as they are few."""
    by_name: dict[str, list[tuple[Labels, int | float]]] = {}
    for name, labels, value in samples:
        by_name.setdefault(name, []).append((labels, value))
    families = []
    for name, mine in by_name.items():
        mine.sort(key=lambda s: tuple((v is None, v) for _, v in s[0]))
        names = [n for n, _ in mine[0][0]]
        label_columns = [(n, pa.array([dict(s[0])[n] for s in mine])) for n in names]
        texts = pa.array([str(v) if isinstance(v, int) else repr(float(v)) for _, v in mine], pa.string())
        families.append(family(name, HELP[name], label_columns, texts))
    return families


def _snapshot_samples(snapshot_id: str, as_of_ms: int, retention_minutes: int | None, run: dict | None) -> list:
    info: Labels = (("snapshot_id", snapshot_id), ("retention_minutes", retention_minutes))
    samples: list[Sample] = [("snapshot_timestamp_seconds", (), as_of_ms / 1000), ("snapshot_info", info, 1)]
    if run is not None:
        finished, started = _aware(run["finished_at"]), _aware(run["started_at"])
        samples.append(("last_success_timestamp_seconds", (), (finished - _EPOCH) / timedelta(seconds=1)))
        samples.append(("last_run_duration_seconds", (), (finished - started) / timedelta(seconds=1)))
        if run["records_read"] is not None:
            samples.append(("last_run_records_read", (), int(run["records_read"])))
    return samples


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
