"""The `report` page of a folder holding several clusters' audits: one row per cluster (its newest
snapshot), the clusters with urgent groups first, then the urgent groups of the whole fleet, soonest
first. `report --cluster NAME` gives one cluster's page (html_report).

A group is urgent as the metrics' scope has it (views.metric_scope.Scope.urgent): the next sweep removes
it, it holds expired offsets, or its next offset expires within a day of its snapshot.

Reads each cluster's newest group_verdicts and the snapshots table's totals (delta-rs and pyarrow, no
Spark); everything after `read_fleet` is a pure function of those rows. Every name from the dump leaves
through `escaping`, as on the one-cluster page.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.escaping import html_text
from offset_audit.snapshot_totals import as_utc
from offset_audit.storage import LOCAL, Storage
from offset_audit.table_names import GROUP_VERDICTS
from offset_audit.views.audit_folder import Snapshot, by_cluster, read_snapshot, snapshots
from offset_audit.views.html_report import (
    CONSTANT,
    NAME,
    NUMBER,
    TEXT,
    Page,
    chart_block,
    html_table,
    page_html,
)
from offset_audit.views.metric_scope import DEFAULT_SCOPE
from offset_audit.views.moments import exact_utc
from offset_audit.views.report_charts import (
    DELETED_COLOUR,
    KEPT_COLOUR,
    STALE_COLOUR,
    Chart,
    chart_label,
    figure_of,
)

GROUP_COLUMNS = [
    "group_id",
    "group_type",
    "group_state",
    "member_count",
    "offset_count",
    "expired_offset_count",
    "next_expiry_at",
    "next_expiry_at_ms",
    "would_delete",
    "lag_total",
]
# How many urgent groups the page lists, across the fleet.
URGENT_SHOWN = 100


@dataclass(frozen=True)
class FleetCluster:
    """One cluster of the folder: its newest snapshot (with the snapshots table's totals, when listed)
    and that snapshot's group verdicts."""

    snapshot: Snapshot
    snapshots: int
    groups: pa.Table

    @property
    def name(self) -> str:
        return self.snapshot.cluster or "(unnamed)"

    @property
    def urgent(self) -> pa.Array:
        as_of_ms = int(as_utc(self.snapshot.judged_at).timestamp() * 1000)
        return DEFAULT_SCOPE.urgent(self.groups, as_of_ms)


@dataclass(frozen=True)
class Fleet:
    folder: str
    clusters: list[FleetCluster]


def read_fleet(folder: str, storage: Storage = LOCAL) -> Fleet:
    """Every cluster of the folder with its newest audit's group verdicts."""
    clusters = []
    for group in by_cluster(snapshots(folder, storage=storage)).values():
        newest = group[-1]
        rows = read_snapshot(folder, GROUP_VERDICTS, newest, storage, GROUP_COLUMNS)
        clusters.append(FleetCluster(newest, len(group), rows))
    return Fleet(folder, clusters)


def cluster_rows(fleet: Fleet) -> list[dict]:
    """A row per cluster, those with the most urgent groups first (then by name)."""
    rows = []
    for cluster in fleet.clusters:
        groups, totals = cluster.groups, cluster.snapshot.totals or {}
        rows.append(
            {
                "cluster": cluster.name,
                "cluster_id": cluster.snapshot.cluster_id,
                "snapshot": cluster.snapshot.snapshot_id,
                "as_of": as_utc(cluster.snapshot.judged_at),
                "snapshots": cluster.snapshots,
                "groups": groups.num_rows,
                "urgent": pc.sum(pc.cast(cluster.urgent, pa.int64())).as_py() or 0,
                "removed": _count(groups["would_delete"]),
                "offsets": _total(groups["offset_count"]),
                "expired": _total(groups["expired_offset_count"]),
                "expiring_soon": totals.get("expiring_soon"),
                "lag": totals.get("lag"),
            }
        )
    return sorted(rows, key=lambda r: (-r["urgent"], -r["expired"], r["cluster"]))


def urgent_groups(fleet: Fleet, limit: int = URGENT_SHOWN) -> list[dict]:
    """The fleet's urgent groups: those due now (removed by the sweep, or holding expired offsets) first,
    then by how soon their next offset expires."""
    found = []
    for cluster in fleet.clusters:
        chosen = cluster.groups.filter(cluster.urgent).to_pylist()
        as_of_ms = int(as_utc(cluster.snapshot.judged_at).timestamp() * 1000)
        for group in chosen:
            due = bool(group["would_delete"]) or bool(group["expired_offset_count"])
            found.append({"cluster": cluster.name, **group, "due_now": due, "as_of_ms": as_of_ms})
    # Each by its own snapshot's clock: the clusters' newest audits need not be of one moment.
    found.sort(
        key=lambda g: (not g["due_now"], g["next_expiry_at_ms"] is None, (g["next_expiry_at_ms"] or 0) - g["as_of_ms"])
    )
    return [{**g, "why": _why(g)} for g in found[:limit]]


def _why(group: dict) -> str:
    reasons = []
    if group["would_delete"]:
        reasons.append("removed by the next sweep")
    if group["expired_offset_count"]:
        reasons.append(f"{group['expired_offset_count']:,} expired offsets")
    if group["next_expiry_at_ms"] is not None and not group["would_delete"]:
        hours = (group["next_expiry_at_ms"] - group["as_of_ms"]) / 3_600_000
        if 0 <= hours <= 24:
            reasons.append(f"next offset expires {hours:.1f} h after the snapshot")
    return "; ".join(reasons)


def _count(flags: pa.ChunkedArray) -> int:
    return pc.sum(pc.cast(pc.fill_null(flags, False), pa.int64())).as_py() or 0


def _total(values: pa.ChunkedArray) -> int:
    return int(pc.sum(values.cast(pa.int64())).as_py() or 0)


def fleet_chart(rows: list[dict]) -> Chart:
    """Each cluster's offsets: expired, expiring within a week, the rest; its urgent groups on hover."""
    import plotly.graph_objects as go

    title = "Committed offsets by cluster"
    names = [chart_label(r["cluster"], 60) for r in rows]
    soon = [r["expiring_soon"] or 0 for r in rows]
    later = [max(r["offsets"] - r["expired"] - s, 0) for r, s in zip(rows, soon, strict=True)]
    traces = [
        go.Bar(x=names, y=[r["expired"] for r in rows], name="expired", marker_color=DELETED_COLOUR),
        go.Bar(
            x=names, y=[r["expiring_soon"] or 0 for r in rows], name="expiring within 7 days", marker_color=STALE_COLOUR
        ),
        go.Bar(x=names, y=later, name="later, or never", marker_color=KEPT_COLOUR),
    ]
    layout = {"barmode": "stack", "xaxis": {"type": "category"}, "yaxis": {"title": {"text": "offsets"}}}
    note = "Each cluster's newest audit; the clusters with the most urgent groups first."
    return Chart("fleet", title, figure_of(traces, layout), note)


# The clusters table's columns, in order, as cluster_rows names them.
CLUSTER_KEYS: tuple[str, ...] = ("cluster", "snapshot", "as_of", "groups", "urgent", "removed", "offsets", "expired")
CLUSTER_KEYS += ("expiring_soon", "lag", "snapshots")


def _cells(row: dict, keys: tuple[str, ...]) -> list[object]:
    return [exact_utc(row[k]) if k == "as_of" else row[k] for k in keys]


def render_fleet(fleet: Fleet) -> Page:
    """The fleet's page: its clusters, then its urgent groups, each row naming its cluster."""
    rows = cluster_rows(fleet)
    chart = fleet_chart(rows)
    clusters = html_table(
        [
            ("cluster", NAME),
            ("snapshot", TEXT),
            ("as_of", TEXT),
            ("groups", NUMBER),
            ("urgent groups", NUMBER),
            ("removed by the sweep", NUMBER),
            ("offsets", NUMBER),
            ("expired", NUMBER),
            ("expiring within 7 days", NUMBER),
            ("lag", NUMBER),
            ("snapshots", NUMBER),
        ],
        [[*_cells(r, CLUSTER_KEYS)] for r in rows],
    )
    urgent = urgent_groups(fleet)
    groups = (
        html_table(
            [("cluster", NAME), ("group", NAME), ("state", CONSTANT), ("members", NUMBER), ("why", TEXT)],
            [[g["cluster"], g["group_id"], g["group_state"], g["member_count"], g["why"]] for g in urgent],
        )
        if urgent
        else '<p class="note">no urgent group in any cluster.</p>'
    )
    facts = [
        ("audit folder", fleet.folder),
        ("clusters", f"{len(rows):,}"),
        ("urgent groups", f"{sum(r['urgent'] for r in rows):,}"),
    ]
    items = "".join(f"<dt>{html_text(k)}</dt><dd>{html_text(v)}</dd>" for k, v in facts)
    hint = "One cluster's page: offset-audit report --audit DIR --cluster NAME."
    header = f'<header><h1>Kafka offset audit: fleet</h1><dl>{items}</dl><p class="note">{html_text(hint)}</p></header>'
    sections = [
        f"<section><h2>Clusters</h2>{clusters}</section>",
        f"<section>{chart_block(chart)}</section>",
        f"<section><h2>Urgent groups</h2>{groups}</section>",
    ]
    html = page_html(f"Offset audit: {len(rows)} clusters", header, sections, [chart])
    return Page(html, [chart], ",".join(r["snapshot"] for r in rows))
