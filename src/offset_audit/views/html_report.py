"""The `report` command's page: one HTML file of charts and tables that summarises an audit folder and
opens anywhere, with no network (plotly.js and the styles are inline, and the page's content security
policy forbids every fetch).

`read_audit` is the one function that reads: the audit's Delta tables through `results` (delta-rs and
pyarrow, never Spark). Everything else is a pure function of pyarrow tables, so a test builds its input
from a few rows: first the numbers each chart shows, then the plotly figures, then the page.

Every name from the dump (group ids, topics, snapshot ids, the folder) leaves through `escaping`:
`html_text` for the page's text, `chart_text` (html_text in the entities plotly decodes) for chart labels,
which plotly draws as a subset of HTML, and `json_for_html` for the figures' JSON inside <script>.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.durations import format_minutes
from offset_audit.escaping import html_text, json_for_html
from offset_audit.storage import LOCAL, Storage
from offset_audit.views.audit_folder import (
    EXACT,
    Snapshot,
    exact,
    has_table,
    pick_snapshot,
    read_snapshot,
    snapshots,
    sums_per_group,
)

DEFAULT_DAYS = 28
# The history chart's second line: offsets a dashboard will see vanish within a week.
SOON_DAYS = 7
TOP_ROWS = 20
DAY_MS = 86_400_000
MINUTES_PER_DAY = 1440
# Longer names are cut on chart axes (in full in the tables); the hover shows this many characters.
AXIS_LABEL_CHARS = 40
HOVER_LABEL_CHARS = 300

# The rules under which an offset expires by time (rules.TIME_RULES, the broker's order), each with one
# colour on every chart. Named here rather than imported: rules.py builds Spark columns, and this page
# must not load pyspark.
EXPIRING_RULES = ("EXPLICIT_EXPIRE_TIMESTAMP", "EMPTY_GROUP", "SIMPLE_GROUP", "UNSUBSCRIBED_TOPIC")
RULE_COLOURS = {
    "EXPLICIT_EXPIRE_TIMESTAMP": "#7f7f7f",
    "EMPTY_GROUP": "#1f77b4",
    "SIMPLE_GROUP": "#2ca02c",
    "UNSUBSCRIBED_TOPIC": "#ff7f0e",
}
DELETED_COLOUR, KEPT_COLOUR, STALE_COLOUR = "#d62728", "#1f77b4", "#ff7f0e"

PARTITION_COLUMNS = [
    "group_id",
    "topic",
    "partition",
    "rule",
    "expires_at",
    "expired",
    "lag",
    "stale_lag",
]
HISTORY_COLUMNS = ["expires_at", "expired", "lag"]
GROUP_COLUMNS = ["group_id", "group_type", "group_state", "would_delete"]
CANDIDATE_COLUMNS = ["priority", "reason", "group_id", "topic", "partition", "lag"]


# ---- The numbers each chart and table shows -------------------------------------------------------


def _utc(moment: datetime) -> datetime:
    """A datetime from a table or a test, as an aware UTC datetime (a naive one is UTC, as Delta's are)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _ms_after(column: pa.ChunkedArray, moment: datetime) -> pa.ChunkedArray:
    """Milliseconds from `moment` to each timestamp of `column` (null stays null)."""
    instants = column.cast(pa.timestamp("ms", "UTC"))
    return pc.milliseconds_between(pa.scalar(_utc(moment), pa.timestamp("ms", "UTC")), instants)


def _pending(partitions: pa.Table) -> pa.Table:
    """Offsets not yet expired that will expire by time (expires_at set; null is never)."""
    not_expired = pc.invert(pc.fill_null(partitions["expired"], False))
    return partitions.filter(pc.and_(not_expired, pc.is_valid(partitions["expires_at"])))


@dataclass(frozen=True)
class ExpiryDays:
    """Offsets expiring per day after as_of: day k runs from as_of + k days for 24 hours."""

    starts: list[datetime]
    by_rule: dict[str, list[int]]  # rule -> offsets per day, rules that have some, in the broker's order


def expiring_per_day(partitions: pa.Table, as_of: datetime, days: int = DEFAULT_DAYS) -> ExpiryDays:
    """How many offsets not yet expired at `as_of` expire within each of the `days` days after it, by the
    rule that decides their expiry (columns rule, expires_at, expired of partition_verdicts)."""
    pending = _pending(partitions)
    day = pc.floor(pc.divide(pc.cast(_ms_after(pending["expires_at"], as_of), pa.float64()), DAY_MS))
    within = pc.and_(pc.greater_equal(day, 0), pc.less(day, days))
    counted = pa.table({"rule": pending["rule"], "day": pc.cast(day, pa.int64())}).filter(within)
    counts = counted.group_by(["rule", "day"], use_threads=False).aggregate([("day", "count")])
    by_rule: dict[str, list[int]] = {}
    for row in counts.to_pylist():
        by_rule.setdefault(row["rule"], [0] * days)[row["day"]] += row["day_count"]
    order = [*EXPIRING_RULES, *sorted(set(by_rule) - set(EXPIRING_RULES))]
    start = _utc(as_of)
    return ExpiryDays(
        starts=[start + timedelta(days=k) for k in range(days)],
        by_rule={rule: by_rule[rule] for rule in order if rule in by_rule},
    )


@dataclass(frozen=True)
class GroupCount:
    group_type: str | None
    group_state: str | None
    would_delete: bool
    groups: int


def groups_by_verdict(groups: pa.Table) -> list[GroupCount]:
    """Groups by type, state and whether the next sweep removes them (group_verdicts.would_delete)."""
    keyed = pa.table(
        {
            "group_type": groups["group_type"],
            "group_state": groups["group_state"],
            "would_delete": pc.fill_null(groups["would_delete"], False),
        }
    )
    counts = keyed.group_by(["group_type", "group_state", "would_delete"], use_threads=False).aggregate(
        [([], "count_all")]
    )
    rows = [
        GroupCount(r["group_type"], r["group_state"], r["would_delete"], r["count_all"]) for r in counts.to_pylist()
    ]
    return sorted(rows, key=lambda r: (r.group_type or "", r.group_state or "", r.would_delete))


@dataclass(frozen=True)
class WhatIfPoint:
    as_of: datetime
    retention_minutes: int
    offsets_expired: int
    offsets_total: int
    groups_deleted: int
    groups_total: int


def whatif_points(whatif: pa.Table) -> list[WhatIfPoint]:
    """One what-if snapshot's scenarios, by as_of then retention."""
    rows = whatif.sort_by([("as_of", "ascending"), ("retention_minutes", "ascending")]).to_pylist()
    return [
        WhatIfPoint(
            _utc(r["as_of"]),
            r["retention_minutes"],
            r["offsets_expired"],
            r["offsets_total"],
            r["groups_deleted"],
            r["groups_total"],
        )
        for r in rows
    ]


@dataclass(frozen=True)
class GroupLag:
    group_id: str
    lag: int
    stale_lag: int  # the part of `lag` on partitions the group does not consume


def _has_values(table: pa.Table, column: str) -> bool:
    return column in table.column_names and table[column].null_count < table.num_rows


def _int(value: object) -> int | None:
    return None if value is None else int(value)


def lag_by_group(partitions: pa.Table, top: int = TOP_ROWS) -> list[GroupLag]:
    """The `top` groups by lag (the sum over their partitions), with their stale lag; empty when the
    audit had no end offsets (lag all null)."""
    if not _has_values(partitions, "lag"):
        return []
    totals = sums_per_group(partitions, "lag", "stale_lag")
    ordered = totals.sort_by([("lag_sum", "descending"), ("group_id", "ascending")]).slice(0, top)
    return [GroupLag(r["group_id"], int(r["lag_sum"]), _int(r["stale_lag_sum"]) or 0) for r in ordered.to_pylist()]


@dataclass(frozen=True)
class SnapshotTotals:
    """What the history chart shows of one snapshot."""

    snapshot_id: str
    as_of: datetime
    offsets: int
    expired: int
    expiring_soon: int  # not expired, expiring within SOON_DAYS of as_of
    lag: int | None  # null without end offsets


def snapshot_totals(snapshot: Snapshot, partitions: pa.Table, soon_days: int = SOON_DAYS) -> SnapshotTotals:
    """Totals of one snapshot's partition_verdicts (columns expires_at, expired, lag)."""
    expired = pc.sum(pc.cast(pc.fill_null(partitions["expired"], False), pa.int64())).as_py() or 0
    pending = _pending(partitions)
    soon = pc.less(_ms_after(pending["expires_at"], snapshot.as_of), soon_days * DAY_MS)
    lag = _int(pc.sum(partitions["lag"].cast(EXACT)).as_py()) if _has_values(partitions, "lag") else None
    return SnapshotTotals(
        snapshot.snapshot_id,
        _utc(snapshot.as_of),
        partitions.num_rows,
        expired,
        pc.sum(pc.cast(soon, pa.int64())).as_py() or 0,
        lag,
    )


def partition_ranges(partitions: list[int]) -> str:
    """`[0, 1, 2, 3, 7]` -> `0-3, 7`."""
    spans: list[list[int]] = []
    for number in sorted(set(partitions)):
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def top_candidates(candidates: pa.Table, top: int = TOP_ROWS) -> list[dict]:
    """Deletion candidates by group, topic and reason (partitions together), most useful first: by
    priority, then the most lag."""
    keys = ["priority", "reason", "group_id", "topic"]
    grouped = (
        exact(candidates, "lag").group_by(keys, use_threads=False).aggregate([("partition", "list"), ("lag", "sum")])
    )
    rows = grouped.to_pylist()
    rows.sort(key=lambda r: (r["priority"], -(r["lag_sum"] or 0), r["group_id"], r["topic"]))
    return [
        {
            "group_id": r["group_id"],
            "topic": r["topic"],
            "partitions": partition_ranges(r["partition_list"]),
            "reason": r["reason"],
            "priority": r["priority"],
            "lag": _int(r["lag_sum"]),
        }
        for r in rows[:top]
    ]


def soonest_expiries(partitions: pa.Table, top: int = TOP_ROWS) -> list[dict]:
    """The offsets not yet expired that expire first."""
    pending = _pending(partitions).select(["group_id", "topic", "partition", "rule", "expires_at"])
    order = [("expires_at", "ascending"), ("group_id", "ascending"), ("topic", "ascending"), ("partition", "ascending")]
    return pending.sort_by(order).slice(0, top).to_pylist()


# ---- Charts: plotly figures of those numbers ------------------------------------------------------


@dataclass(frozen=True)
class Chart:
    """One chart of the page: a plotly figure, or None with a note saying why there is nothing to draw."""

    key: str  # the chart's element id is chart-<key>
    title: str
    figure: dict | None
    note: str


def _figure(traces: list, layout: dict) -> dict:
    """A plotly figure as plain JSON values (data, layout), checked by plotly's own validators."""
    import plotly.graph_objects as go

    base = {"template": "plotly_white", "margin": {"l": 60, "r": 30, "t": 40, "b": 50}, "height": 380}
    base["legend"] = {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"}  # above the plot
    return json.loads(go.Figure(data=traces, layout={**base, **layout}).to_json())


def chart_text(text: object) -> str:
    """A name from the dump as plotly text (labels, ticks, hover), which shows as itself. Plotly reads its
    text as a small subset of HTML: it drops tags it does not know and decodes numeric entities and only
    &amp; &lt; &gt; (and a few symbols) of the named ones, so html_text's &quot; is spelled &#34; here."""
    return html_text(text).replace("&quot;", "&#34;")


def _label(name: object, limit: int) -> str:
    """A name from the dump as a chart label, cut to `limit` characters."""
    text = "" if name is None else str(name)
    return chart_text(text if len(text) <= limit else text[: limit - 1] + "…")


def _iso(moment: datetime) -> str:
    return _utc(moment).strftime("%Y-%m-%d %H:%M:%S")


def expiry_chart(partitions: pa.Table, as_of: datetime, days: int = DEFAULT_DAYS) -> Chart:
    import plotly.graph_objects as go

    expiry = expiring_per_day(partitions, as_of, days)
    title = f"Offsets expiring per day, next {days} days"
    if not expiry.by_rule:
        return Chart("expiry", title, None, f"no offset expires in the {days} days after as_of.")
    starts = [_iso(s) for s in expiry.starts]
    traces = [
        go.Bar(
            x=starts,
            y=counts,
            name=rule,
            marker_color=RULE_COLOURS.get(rule),
            xperiod=DAY_MS,
            xperiodalignment="start",
            hovertemplate="%{y} offsets expire in the 24 h from %{x|%Y-%m-%d %H:%M} UTC<extra>%{fullData.name}</extra>",
        )
        for rule, counts in expiry.by_rule.items()
    ]
    layout = {"barmode": "stack", "xaxis": {"title": {"text": "day after as_of (UTC)"}}}
    layout["yaxis"] = {"title": {"text": "offsets"}}
    note = "Offsets not yet expired, by the day their retention runs out and the rule that decides it."
    return Chart("expiry", title, _figure(traces, layout), note)


def groups_chart(groups: pa.Table) -> Chart:
    import plotly.graph_objects as go

    counts = groups_by_verdict(groups)
    title = "Groups by type, state and verdict"
    if not counts:
        return Chart("groups", title, None, "the snapshot holds no group.")
    categories = list(dict.fromkeys(_label(f"{c.group_type} · {c.group_state}", 80) for c in counts))
    traces = []
    for deleted, name, colour in ((True, "removed by the next sweep", DELETED_COLOUR), (False, "kept", KEPT_COLOUR)):
        per_category = dict.fromkeys(categories, 0)
        for c in counts:
            if c.would_delete == deleted:
                per_category[_label(f"{c.group_type} · {c.group_state}", 80)] += c.groups
        traces.append(go.Bar(x=categories, y=list(per_category.values()), name=name, marker_color=colour))
    layout = {"barmode": "stack", "xaxis": {"type": "category"}, "yaxis": {"title": {"text": "groups"}}}
    note = "Every group the coordinator holds after loading the log; red ones the next sweep removes (would_delete)."
    return Chart("groups", title, _figure(traces, layout), note)


def whatif_chart(whatif: pa.Table | None) -> Chart:
    import plotly.graph_objects as go

    title = "What if: offsets expired and groups deleted by retention"
    points = whatif_points(whatif) if whatif is not None else []
    if not points:
        note = (
            "no what-if run in this folder: run offset-audit whatif --input DUMP --output THIS_FOLDER "
            "--retention-minutes 1d,7d,30d."
        )
        return Chart("whatif", title, None, note)
    traces = []
    moments = list(dict.fromkeys(p.as_of for p in points))
    for moment in moments:
        at = [p for p in points if p.as_of == moment]
        suffix = f" (as of {_iso(moment)})" if len(moments) > 1 else ""
        days = [p.retention_minutes / MINUTES_PER_DAY for p in at]
        spelled = [format_minutes(p.retention_minutes) for p in at]
        traces.append(
            go.Scatter(
                x=days,
                y=[p.offsets_expired for p in at],
                customdata=spelled,
                name="offsets expired" + suffix,
                mode="lines+markers",
                hovertemplate="retention %{customdata}: %{y} offsets expired<extra></extra>",
            )
        )
        traces.append(
            go.Scatter(
                x=days,
                y=[p.groups_deleted for p in at],
                customdata=spelled,
                name="groups deleted" + suffix,
                mode="lines+markers",
                yaxis="y2",
                line={"dash": "dot"},
                hovertemplate="retention %{customdata}: %{y} groups deleted<extra></extra>",
            )
        )
    layout = {
        "xaxis": {"title": {"text": "offsets.retention.minutes, in days"}, "rangemode": "tozero"},
        "yaxis": {"title": {"text": "offsets expired"}, "rangemode": "tozero"},
        "yaxis2": {
            "title": {"text": "groups deleted"},
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
            "dtick": max(1, math.ceil(max(p.groups_deleted for p in points) / 5)),  # whole groups
        },
        "margin": {"l": 60, "r": 60, "t": 40, "b": 50},
    }
    total = points[-1]
    note = f"Of {total.offsets_total:,} offsets and {total.groups_total:,} groups, had the broker run with each."
    return Chart("whatif", title, _figure(traces, layout), note)


def lag_chart(partitions: pa.Table) -> Chart:
    import plotly.graph_objects as go

    lags = lag_by_group(partitions)
    title = f"Lag by group (top {TOP_ROWS})"
    if not lags:
        return Chart("lag", title, None, "no lag in this snapshot: audit with --end-offsets FILE to see it.")
    # Categories are the full escaped names (two names may share a cut prefix); ticks show them cut.
    names = [chart_text(g.group_id) for g in lags]
    hover = [_label(g.group_id, HOVER_LABEL_CHARS) for g in lags]
    consumed = [g.lag - g.stale_lag for g in lags]
    traces = [
        go.Bar(
            y=names,
            x=consumed,
            orientation="h",
            name="lag of consumed partitions",
            marker_color=KEPT_COLOUR,
            customdata=hover,
            hovertemplate="%{customdata}: %{x} records<extra>consumed</extra>",
        ),
        go.Bar(
            y=names,
            x=[g.stale_lag for g in lags],
            orientation="h",
            name="stale lag (not consumed)",
            marker_color=STALE_COLOUR,
            customdata=hover,
            hovertemplate="%{customdata}: %{x} records<extra>stale</extra>",
        ),
    ]
    ticks = [_label(g.group_id, AXIS_LABEL_CHARS) for g in lags]
    layout = {
        "barmode": "stack",
        "height": max(380, 60 + 24 * len(lags)),
        "margin": {"l": 260, "r": 30, "t": 40, "b": 50},
        "yaxis": {"type": "category", "autorange": "reversed", "tickvals": names, "ticktext": ticks},
        "xaxis": {"title": {"text": "records behind the log end"}},
    }
    note = "Stale lag is on partitions the group does not consume: it only grows on dashboards."
    return Chart("lag", title, _figure(traces, layout), note)


def history_chart(history: list[SnapshotTotals]) -> Chart:
    import plotly.graph_objects as go

    title = "History of the snapshots in this folder"
    if len(history) < 2:
        note = "one snapshot in this folder: audit again later with the same --output to see a history."
        return Chart("history", title, None, note)
    moments = [_iso(h.as_of) for h in history]
    ids = [chart_text(h.snapshot_id) for h in history]
    traces = [
        go.Scatter(
            x=moments,
            y=[h.expired for h in history],
            customdata=ids,
            name="expired offsets",
            mode="lines+markers",
            hovertemplate="%{customdata}: %{y} expired<extra></extra>",
        ),
        go.Scatter(
            x=moments,
            y=[h.expiring_soon for h in history],
            customdata=ids,
            name=f"expiring within {SOON_DAYS} days",
            mode="lines+markers",
            hovertemplate=f"%{{customdata}}: %{{y}} expiring within {SOON_DAYS} days<extra></extra>",
        ),
    ]
    layout = {
        "xaxis": {"title": {"text": "as_of (UTC)"}},
        "yaxis": {"title": {"text": "offsets"}, "rangemode": "tozero"},
    }
    if any(h.lag is not None for h in history):
        traces.append(
            go.Scatter(
                x=moments,
                y=[h.lag for h in history],
                customdata=ids,
                name="total lag",
                mode="lines+markers",
                yaxis="y2",
                line={"dash": "dot"},
                hovertemplate="%{customdata}: lag %{y}<extra></extra>",
            )
        )
        layout["yaxis2"] = {"title": {"text": "total lag"}, "overlaying": "y", "side": "right", "rangemode": "tozero"}
        layout["margin"] = {"l": 60, "r": 60, "t": 40, "b": 50}
    note = "Per audited snapshot, by the time it was judged at (as_of); total lag where end offsets were given."
    return Chart("history", title, _figure(traces, layout), note)


# ---- The page -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Audit:
    """What the page is made of: one snapshot's tables, every snapshot's totals, and the newest what-if."""

    folder: str
    snapshot: Snapshot
    partitions: pa.Table  # partition_verdicts of the snapshot
    groups: pa.Table  # group_verdicts of the snapshot
    candidates: pa.Table  # deletion_candidates of the snapshot
    history: list[SnapshotTotals]  # every snapshot in the folder, oldest first
    whatif: pa.Table | None = None  # the newest what-if snapshot's scenarios
    whatif_snapshot: str | None = None


@dataclass(frozen=True)
class Page:
    html: str
    charts: list[Chart]
    snapshot_id: str

    @property
    def drawn(self) -> int:
        """Charts with a figure (the others show their note)."""
        return sum(chart.figure is not None for chart in self.charts)


def read_audit(folder: str, snapshot_id: str | None = None, storage: Storage = LOCAL) -> Audit:
    """An audit folder's tables for the page: the given snapshot (default: the newest), the totals of
    every snapshot, and the newest what-if if one was run. delta-rs and pyarrow only: no Spark."""
    known = snapshots(folder, storage=storage)
    chosen = pick_snapshot(folder, snapshot_id, storage=storage, known=known)
    snapshot = next(s for s in known if s.snapshot_id == chosen)
    partitions = read_snapshot(folder, "partition_verdicts", chosen, storage, PARTITION_COLUMNS)
    groups = read_snapshot(folder, "group_verdicts", chosen, storage, GROUP_COLUMNS)
    candidates = read_snapshot(folder, "deletion_candidates", chosen, storage, CANDIDATE_COLUMNS)
    history = [
        snapshot_totals(
            s,
            partitions
            if s.snapshot_id == chosen
            else read_snapshot(folder, "partition_verdicts", s.snapshot_id, storage, HISTORY_COLUMNS),
        )
        for s in known
    ]
    whatif, whatif_snapshot = None, None
    scenarios = snapshots(folder, "whatif", storage) if has_table(folder, "whatif", storage) else []
    if scenarios:
        whatif_snapshot = pick_snapshot(folder, None, "whatif", storage, known=scenarios)
        whatif = read_snapshot(folder, "whatif", whatif_snapshot, storage)
    return Audit(folder, snapshot, partitions, groups, candidates, history, whatif, whatif_snapshot)


def build_charts(audit: Audit, days: int = DEFAULT_DAYS) -> list[Chart]:
    return [
        expiry_chart(audit.partitions, audit.snapshot.as_of, days),
        groups_chart(audit.groups),
        whatif_chart(audit.whatif),
        lag_chart(audit.partitions),
        history_chart(audit.history),
    ]


# How a table column is shown: a name from the dump (may break anywhere: a group id can be 3,000
# characters), a constant of ours (breaks after its underscores), a number, or other text.
NAME, CONSTANT, NUMBER, TEXT = "name", "constant", "num", "text"


def _table(columns: list[tuple[str, str]], rows: list[list[object]]) -> str:
    """An HTML table of (header, kind) columns; every cell escaped."""
    head = "".join(f'<th class="{kind}">{html_text(header)}</th>' for header, kind in columns)
    kinds = [kind for _, kind in columns]
    body = "".join(
        "<tr>"
        + "".join(f'<td class="{kind}">{_cell(v, kind)}</td>' for kind, v in zip(kinds, row, strict=True))
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(value: object, kind: str) -> str:
    """A table cell's HTML: escaped text, with <wbr> added only after escaping."""
    if value is None:
        return "–"
    if kind == NUMBER:
        return html_text(f"{value:,}")
    if isinstance(value, datetime):
        return html_text(_iso(value) + " UTC")
    if kind == CONSTANT:
        return html_text(value).replace("_", "_<wbr>")
    return html_text(value)


def candidates_table(candidates: pa.Table) -> str:
    rows = top_candidates(candidates)
    if not rows:
        return '<p class="note">no deletion candidates in this snapshot.</p>'
    columns = [("group", NAME), ("topic", NAME), ("partitions", TEXT), ("reason", CONSTANT)]
    columns += [("priority", NUMBER), ("lag", NUMBER)]
    keys = ["group_id", "topic", "partitions", "reason", "priority", "lag"]
    return _table(columns, [[r[k] for k in keys] for r in rows])


def expiries_table(partitions: pa.Table) -> str:
    rows = soonest_expiries(partitions)
    if not rows:
        return '<p class="note">no offset in this snapshot will expire by time.</p>'
    columns = [("group", NAME), ("topic", NAME), ("partition", NUMBER), ("rule", CONSTANT), ("expires_at", TEXT)]
    keys = ["group_id", "topic", "partition", "rule", "expires_at"]
    return _table(columns, [[r[k] for k in keys] for r in rows])


def _chart_block(chart: Chart) -> str:
    title = f"<h2>{html_text(chart.title)}</h2>"
    if chart.figure is None:
        return f'{title}<p class="note" id="note-{chart.key}">{html_text(chart.note)}</p>'
    caption = f'<p class="caption">{html_text(chart.note)}</p>'
    return f'{title}<div class="chart" id="chart-{chart.key}" data-chart></div>{caption}'


def _header(audit: Audit, drawn: int) -> str:
    snapshot = audit.snapshot
    partitions, groups = audit.partitions, audit.groups
    expired = pc.sum(pc.cast(pc.fill_null(partitions["expired"], False), pa.int64())).as_py() or 0
    deleted = pc.sum(pc.cast(pc.fill_null(groups["would_delete"], False), pa.int64())).as_py() or 0
    retention = snapshot.retention_minutes
    facts = [
        ("audit folder", audit.folder),
        ("snapshot", snapshot.snapshot_id),
        ("as_of", _iso(snapshot.as_of) + " UTC"),
        ("retention", "–" if retention is None else f"{retention:,} minutes ({format_minutes(retention)})"),
        ("groups", f"{groups.num_rows:,} ({deleted:,} removed by the next sweep)"),
        ("committed offsets", f"{partitions.num_rows:,} ({expired:,} expired)"),
        ("deletion candidates", f"{audit.candidates.num_rows:,} partitions"),
        ("snapshots in the folder", f"{len(audit.history):,}"),
    ]
    if audit.whatif_snapshot is not None:
        facts.append(("what-if snapshot", audit.whatif_snapshot))
    items = "".join(f"<dt>{html_text(k)}</dt><dd>{html_text(v)}</dd>" for k, v in facts)
    return f'<header><h1>Kafka offset audit</h1><dl>{items}</dl><p class="note">{drawn} charts</p></header>'


# No fetch of any kind: the page must open offline, and a name from the dump must not reach the network.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; font-src data:"
)
STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 24px 40px; color: #222; }
header dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; }
header dt { color: #666; } header dd { margin: 0; overflow-wrap: anywhere; }
section { margin-top: 28px; }
.pair { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 24px; align-items: start; }
.pair > div { overflow-x: auto; }
.note, .caption { color: #666; } .note { font-style: italic; }
table { border-collapse: collapse; width: 100%; font-size: 12px; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 6px; text-align: left; vertical-align: top; }
td.name { min-width: 10ch; overflow-wrap: anywhere; } td.num, td.text { white-space: nowrap; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
h2 { font-size: 16px; margin: 0 0 6px; }
"""


def _plotly_js() -> str:
    """plotly.js, to inline once. A bundle holding `</script` or `<!--` would end or bend the <script>
    block it sits in; it does not, and this says so if a release ever does."""
    import plotly.offline

    source = plotly.offline.get_plotlyjs()
    lowered = source.lower()
    if "</script" in lowered or "<!--" in lowered:
        raise RuntimeError("this plotly.js bundle cannot be inlined in a <script> block")
    return source


def render(audit: Audit, days: int = DEFAULT_DAYS) -> Page:
    """The page of an audit: header, charts (each beside its table where it has one), and the script
    that draws them."""
    charts = build_charts(audit, days)
    by_key = {chart.key: chart for chart in charts}
    drawn = sum(chart.figure is not None for chart in charts)
    sections = [
        f'<section class="pair"><div>{_chart_block(by_key["expiry"])}</div>'
        f"<div><h2>Soonest expiries</h2>{expiries_table(audit.partitions)}</div></section>",
        f'<section class="pair"><div>{_chart_block(by_key["lag"])}</div>'
        f"<div><h2>Top deletion candidates</h2>{candidates_table(audit.candidates)}</div></section>",
        f'<section class="pair"><div>{_chart_block(by_key["groups"])}</div>'
        f"<div>{_chart_block(by_key['whatif'])}</div></section>",
        f"<section>{_chart_block(by_key['history'])}</section>",
    ]
    figures = [{"id": f"chart-{c.key}", **c.figure} for c in charts if c.figure is not None]
    draw = (
        f"const figures = {json_for_html(figures)};\n"
        "for (const figure of figures) {\n"
        "  Plotly.newPlot(figure.id, figure.data, figure.layout, {responsive: true, displaylogo: false});\n"
        "}\n"
    )
    html = (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
        f"<title>Offset audit {html_text(audit.snapshot.snapshot_id)}</title>"
        f"<style>{STYLE}</style></head>\n"
        f'<body data-charts="{drawn}">\n{_header(audit, drawn)}\n'
        + "\n".join(sections)
        + f'\n<script>{_plotly_js()}</script>\n<script>"use strict";\n{draw}</script>\n</body></html>\n'
    )
    return Page(html, charts, audit.snapshot.snapshot_id)
