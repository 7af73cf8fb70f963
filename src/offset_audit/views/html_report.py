"""The `report` command's page: one HTML file of charts and tables that summarises an audit folder and
opens anywhere, with no network (plotly.js and the styles are inline, and the page's content security
policy forbids every fetch).

`read_audit` is the one function that reads: the audit's Delta tables through `results` (delta-rs and
pyarrow, never Spark). Everything else is a pure function of pyarrow tables, so a test builds its input
from a few rows: the numbers each chart shows (`report_numbers`), the plotly figures (`report_charts`),
then the page (here).

Every name from the dump (group ids, topics, snapshot ids, the folder) leaves through `escaping`:
`html_text` for the page's text, `chart_text` (html_text in the entities plotly decodes) for chart labels,
which plotly draws as a subset of HTML, and `json_for_html` for the figures' JSON inside <script>.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.durations import format_minutes
from offset_audit.escaping import html_text, json_for_html
from offset_audit.snapshot_totals import SnapshotTotals, snapshot_totals
from offset_audit.storage import LOCAL, Storage
from offset_audit.table_names import DELETION_CANDIDATES, GROUP_VERDICTS, PARTITION_VERDICTS, WHATIF_TABLE
from offset_audit.views.audit_folder import Snapshot, by_cluster, has_table, pick_snapshot, read_snapshot, snapshots
from offset_audit.views.moments import exact_utc
from offset_audit.views.report_charts import (
    Chart,
    expiry_chart,
    groups_chart,
    history_chart,
    lag_chart,
    shown_time,
    whatif_chart,
)
from offset_audit.views.report_numbers import DEFAULT_DAYS, listed_totals, soonest_expiries, top_candidates

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


def read_audit(
    folder: str, snapshot_id: str | None = None, storage: Storage = LOCAL, cluster: str | None = None
) -> Audit:
    """An audit folder's tables for the page: the given snapshot (default: the newest, of `cluster` when
    given), the totals of every snapshot of its cluster, and its cluster's newest what-if if one was run.
    delta-rs and pyarrow only: no Spark."""
    known = snapshots(folder, storage=storage)
    snapshot = pick_snapshot(folder, snapshot_id, storage=storage, known=known, cluster=cluster)
    known = next(group for group in by_cluster(known).values() if snapshot in group)
    partitions = read_snapshot(folder, PARTITION_VERDICTS, snapshot, storage, PARTITION_COLUMNS)
    groups = read_snapshot(folder, GROUP_VERDICTS, snapshot, storage, GROUP_COLUMNS)
    candidates = read_snapshot(folder, DELETION_CANDIDATES, snapshot, storage, CANDIDATE_COLUMNS)
    history = [
        listed_totals(s)
        if s.totals is not None and s.key != snapshot.key
        else snapshot_totals(
            s.snapshot_id,
            s.judged_at,
            partitions
            if s.key == snapshot.key
            else read_snapshot(folder, PARTITION_VERDICTS, s, storage, HISTORY_COLUMNS),
        )
        for s in known
    ]
    whatif, whatif_snapshot = None, None
    scenarios = snapshots(folder, WHATIF_TABLE, storage) if has_table(folder, WHATIF_TABLE, storage) else []
    scenarios = [s for s in scenarios if s.same_cluster(snapshot)]
    if scenarios:
        newest_whatif = pick_snapshot(folder, None, WHATIF_TABLE, storage, known=scenarios)
        whatif, whatif_snapshot = read_snapshot(folder, WHATIF_TABLE, newest_whatif, storage), newest_whatif.snapshot_id
    return Audit(folder, snapshot, partitions, groups, candidates, history, whatif, whatif_snapshot)


def build_charts(audit: Audit, days: int = DEFAULT_DAYS) -> list[Chart]:
    return [
        expiry_chart(audit.partitions, audit.snapshot.judged_at, days),
        groups_chart(audit.groups),
        whatif_chart(audit.whatif),
        lag_chart(audit.partitions),
        history_chart(audit.history),
    ]


# How a table column is shown: a name from the dump (may break anywhere: a group id can be 3,000
# characters), a constant of ours (breaks after its underscores), a number, or other text.
NAME, CONSTANT, NUMBER, TEXT = "name", "constant", "num", "text"


def html_table(columns: list[tuple[str, str]], rows: list[list[object]]) -> str:
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
        return html_text(shown_time(value) + " UTC")
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
    return html_table(columns, [[r[k] for k in keys] for r in rows])


def expiries_table(partitions: pa.Table) -> str:
    rows = soonest_expiries(partitions)
    if not rows:
        return '<p class="note">no offset in this snapshot will expire by time.</p>'
    columns = [("group", NAME), ("topic", NAME), ("partition", NUMBER), ("rule", CONSTANT), ("expires_at", TEXT)]
    keys = ["group_id", "topic", "partition", "rule", "expires_at"]
    return html_table(columns, [[r[k] for k in keys] for r in rows])


def chart_block(chart: Chart) -> str:
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
        *([("cluster", snapshot.cluster)] if snapshot.cluster else []),
        ("snapshot", snapshot.snapshot_id),
        ("as_of", exact_utc(snapshot.judged_at)),
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


def plotly_js() -> str:
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
        f'<section class="pair"><div>{chart_block(by_key["expiry"])}</div>'
        f"<div><h2>Soonest expiries</h2>{expiries_table(audit.partitions)}</div></section>",
        f'<section class="pair"><div>{chart_block(by_key["lag"])}</div>'
        f"<div><h2>Top deletion candidates</h2>{candidates_table(audit.candidates)}</div></section>",
        f'<section class="pair"><div>{chart_block(by_key["groups"])}</div>'
        f"<div>{chart_block(by_key[WHATIF_TABLE])}</div></section>",
        f"<section>{chart_block(by_key['history'])}</section>",
    ]
    html = page_html(f"Offset audit {audit.snapshot.snapshot_id}", _header(audit, drawn), sections, charts)
    return Page(html, charts, audit.snapshot.snapshot_id)


def page_html(title: str, header: str, sections: list[str], charts: list[Chart]) -> str:
    """A whole page: its escaped title, the header and sections (HTML already), and the script that
    draws the charts that have a figure (data-charts on <body> says how many)."""
    figures = [{"id": f"chart-{c.key}", **c.figure} for c in charts if c.figure is not None]
    draw = (
        f"const figures = {json_for_html(figures)};\n"
        "for (const figure of figures) {\n"
        "  Plotly.newPlot(figure.id, figure.data, figure.layout, {responsive: true, displaylogo: false});\n"
        "}\n"
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
        f"<title>{html_text(title)}</title>"
        f"<style>{STYLE}</style></head>\n"
        f'<body data-charts="{len(figures)}">\n{header}\n'
        + "\n".join(sections)
        + f'\n<script>{plotly_js()}</script>\n<script>"use strict";\n{draw}</script>\n</body></html>\n'
    )
