"""The `report` page's charts: plotly figures of the numbers in `report_numbers`, or a note saying why
there is nothing to draw. Every name from the dump in a label goes through `chart_text`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime

import pyarrow as pa

from offset_audit.coordinator.rule_names import (
    COMMIT_EXPIRY,
    EMPTY_GROUP,
    EXPLICIT_EXPIRE_TIMESTAMP,
    SIMPLE_GROUP,
    UNSUBSCRIBED_TOPIC,
)
from offset_audit.durations import format_minutes
from offset_audit.escaping import html_text
from offset_audit.snapshot_totals import DAY_MS, SOON_DAYS, SnapshotTotals, as_utc
from offset_audit.table_names import WHATIF_TABLE
from offset_audit.views.report_numbers import (
    DEFAULT_DAYS,
    TOP_ROWS,
    expiring_per_day,
    groups_by_verdict,
    lag_by_group,
    whatif_points,
)

MINUTES_PER_DAY = 1440
# Longer names are cut on chart axes (in full in the tables); the hover shows this many characters.
AXIS_LABEL_CHARS = 40
HOVER_LABEL_CHARS = 300
# One colour per expiring rule (report_numbers.EXPIRING_RULES) on every chart.
RULE_COLOURS = {
    EXPLICIT_EXPIRE_TIMESTAMP: "#7f7f7f",
    EMPTY_GROUP: "#1f77b4",
    SIMPLE_GROUP: "#2ca02c",
    UNSUBSCRIBED_TOPIC: "#ff7f0e",
    COMMIT_EXPIRY: "#9467bd",
}
DELETED_COLOUR, KEPT_COLOUR, STALE_COLOUR = "#d62728", "#1f77b4", "#ff7f0e"


@dataclass(frozen=True)
class Chart:
    """One chart of the page: a plotly figure, or None with a note saying why there is nothing to draw."""

    key: str  # the chart's element id is chart-<key>
    title: str
    figure: dict | None
    note: str


def figure_of(traces: list, layout: dict) -> dict:
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


def chart_label(name: object, limit: int) -> str:
    """A name from the dump as a chart label, cut to `limit` characters."""
    text = "" if name is None else str(name)
    return chart_text(text if len(text) <= limit else text[: limit - 1] + "…")


def shown_time(moment: datetime) -> str:
    return as_utc(moment).strftime("%Y-%m-%d %H:%M:%S")


def expiry_chart(partitions: pa.Table, as_of: datetime, days: int = DEFAULT_DAYS) -> Chart:
    import plotly.graph_objects as go

    expiry = expiring_per_day(partitions, as_of, days)
    title = f"Offsets expiring per day, next {days} days"
    if not expiry.by_rule:
        return Chart("expiry", title, None, f"no offset expires in the {days} days after as_of.")
    starts = [shown_time(s) for s in expiry.starts]
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
    return Chart("expiry", title, figure_of(traces, layout), note)


def groups_chart(groups: pa.Table) -> Chart:
    import plotly.graph_objects as go

    counts = groups_by_verdict(groups)
    title = "Groups by type, state and verdict"
    if not counts:
        return Chart("groups", title, None, "the snapshot holds no group.")
    categories = list(dict.fromkeys(chart_label(f"{c.group_type} · {c.group_state}", 80) for c in counts))
    traces = []
    for deleted, name, colour in ((True, "removed by the next sweep", DELETED_COLOUR), (False, "kept", KEPT_COLOUR)):
        per_category = dict.fromkeys(categories, 0)
        for c in counts:
            if c.would_delete == deleted:
                per_category[chart_label(f"{c.group_type} · {c.group_state}", 80)] += c.groups
        traces.append(go.Bar(x=categories, y=list(per_category.values()), name=name, marker_color=colour))
    layout = {"barmode": "stack", "xaxis": {"type": "category"}, "yaxis": {"title": {"text": "groups"}}}
    note = "Every group the coordinator holds after loading the log; red ones the next sweep removes (would_delete)."
    return Chart("groups", title, figure_of(traces, layout), note)


def whatif_chart(whatif: pa.Table | None) -> Chart:
    import plotly.graph_objects as go

    title = "What if: offsets expired and groups deleted by retention"
    points = whatif_points(whatif) if whatif is not None else []
    if not points:
        note = (
            "no what-if run in this folder: run offset-audit whatif --input DUMP --output THIS_FOLDER "
            "--retention-minutes 1d,7d,30d."
        )
        return Chart(WHATIF_TABLE, title, None, note)
    traces = []
    moments = list(dict.fromkeys(p.as_of for p in points))
    for moment in moments:
        at = [p for p in points if p.as_of == moment]
        suffix = f" (as of {shown_time(moment)})" if len(moments) > 1 else ""
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
    return Chart(WHATIF_TABLE, title, figure_of(traces, layout), note)


def lag_chart(partitions: pa.Table) -> Chart:
    import plotly.graph_objects as go

    lags = lag_by_group(partitions)
    title = f"Lag by group (top {TOP_ROWS})"
    if not lags:
        return Chart("lag", title, None, "no lag in this snapshot: audit with --end-offsets FILE to see it.")
    # Categories are the full escaped names (two names may share a cut prefix); ticks show them cut.
    names = [chart_text(g.group_id) for g in lags]
    hover = [chart_label(g.group_id, HOVER_LABEL_CHARS) for g in lags]
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
    ticks = [chart_label(g.group_id, AXIS_LABEL_CHARS) for g in lags]
    layout = {
        "barmode": "stack",
        "height": max(380, 60 + 24 * len(lags)),
        "margin": {"l": 260, "r": 30, "t": 40, "b": 50},
        "yaxis": {"type": "category", "autorange": "reversed", "tickvals": names, "ticktext": ticks},
        "xaxis": {"title": {"text": "records behind the log end"}},
    }
    note = "Stale lag is on partitions the group does not consume: it only grows on dashboards."
    return Chart("lag", title, figure_of(traces, layout), note)


def history_chart(history: list[SnapshotTotals]) -> Chart:
    import plotly.graph_objects as go

    title = "History of the snapshots in this folder"
    if len(history) < 2:
        note = "one snapshot in this folder: audit again later with the same --output to see a history."
        return Chart("history", title, None, note)
    moments = [shown_time(h.as_of) for h in history]
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
    return Chart("history", title, figure_of(traces, layout), note)
