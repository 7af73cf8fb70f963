"""The `report` command's HTML page: the numbers each chart shows (from a few hand-built rows), names
from the dump that stay text, the command itself, and the page drawn by a real headless Chromium."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pyarrow as pa
from browser import DRAWN_CHARTS
from click.testing import CliRunner

from offset_audit.cli.main import main
from offset_audit.snapshot_totals import snapshot_totals
from offset_audit.views import html_report as report
from offset_audit.views import report_charts as charts
from offset_audit.views import report_numbers as numbers
from offset_audit.views.audit_folder import Snapshot

AS_OF = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
TIMESTAMP = pa.timestamp("us", "UTC")

PARTITION_SCHEMA = pa.schema(
    [
        ("group_id", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("rule", pa.string()),
        ("expires_at", TIMESTAMP),
        ("expired", pa.bool_()),
        ("lag", pa.int64()),
        ("stale_lag", pa.int64()),
    ]
)


def offsets(*rows: tuple) -> pa.Table:
    """partition_verdicts rows: (group, topic, partition, rule, expires_at, expired[, lag, stale_lag])."""
    full = [(*row, None, None) if len(row) == 6 else row for row in rows]
    return pa.Table.from_pylist([dict(zip(PARTITION_SCHEMA.names, r, strict=True)) for r in full], PARTITION_SCHEMA)


def groups(*rows: tuple) -> pa.Table:
    """group_verdicts rows: (group, type, state, would_delete)."""
    names = ["group_id", "group_type", "group_state", "would_delete"]
    schema = pa.schema([(n, pa.bool_() if n == "would_delete" else pa.string()) for n in names])
    return pa.Table.from_pylist([dict(zip(names, r, strict=True)) for r in rows], schema)


def candidates(*rows: tuple) -> pa.Table:
    """deletion_candidates rows: (priority, reason, group, topic, partition, lag)."""
    names = ["priority", "reason", "group_id", "topic", "partition", "lag"]
    types = [pa.int32(), pa.string(), pa.string(), pa.string(), pa.int32(), pa.int64()]
    schema = pa.schema(list(zip(names, types, strict=True)))
    return pa.Table.from_pylist([dict(zip(names, r, strict=True)) for r in rows], schema)


def whatif(*rows: tuple, as_of: datetime = AS_OF) -> pa.Table:
    """whatif rows: (retention_minutes, offsets_expired, groups_deleted), of 100 offsets and 10 groups."""
    return pa.table(
        {
            "snapshot_id": ["s1"] * len(rows),
            "retention_minutes": pa.array([r[0] for r in rows], pa.int32()),
            "as_of": pa.array([as_of] * len(rows), TIMESTAMP),
            "offsets_total": pa.array([100] * len(rows), pa.int64()),
            "offsets_expired": pa.array([r[1] for r in rows], pa.int64()),
            "groups_total": pa.array([10] * len(rows), pa.int64()),
            "groups_deleted": pa.array([r[2] for r in rows], pa.int64()),
        }
    )


# ---- The numbers of each chart --------------------------------------------------------------------


def test_offsets_expiring_are_counted_per_day_after_as_of_by_rule():
    table = offsets(
        ("g", "t", 0, "EMPTY_GROUP", AS_OF + HOUR, False),  # day 0: the first 24 hours
        ("g", "t", 1, "EMPTY_GROUP", AS_OF + 23 * HOUR, False),  # day 0
        ("g", "t", 2, "EMPTY_GROUP", AS_OF + 25 * HOUR, False),  # day 1
        ("s", "t", 0, "SIMPLE_GROUP", AS_OF + 2 * DAY, False),  # day 2, at its first instant
        ("u", "t", 0, "UNSUBSCRIBED_TOPIC", AS_OF + 3 * DAY - HOUR, False),  # day 2
        ("x", "t", 0, "EXPLICIT_EXPIRE_TIMESTAMP", AS_OF - HOUR, True),  # expired already: not counted
        ("n", "t", 0, "SUBSCRIBED_TOPIC", None, False),  # never expires while the group stays as it is
        ("late", "t", 0, "EMPTY_GROUP", AS_OF + 3 * DAY, False),  # past the last day shown
    )
    expiry = numbers.expiring_per_day(table, AS_OF, days=3)
    assert expiry.starts == [AS_OF, AS_OF + DAY, AS_OF + 2 * DAY]
    assert expiry.by_rule == {"EMPTY_GROUP": [2, 1, 0], "SIMPLE_GROUP": [0, 0, 1], "UNSUBSCRIBED_TOPIC": [0, 0, 1]}


def test_the_expiry_chart_stacks_one_bar_series_per_rule_in_the_brokers_order():
    table = offsets(
        ("u", "t", 0, "UNSUBSCRIBED_TOPIC", AS_OF + HOUR, False),
        ("e", "t", 0, "EMPTY_GROUP", AS_OF + DAY + HOUR, False),
    )
    chart = charts.expiry_chart(table, AS_OF, days=2)
    traces = chart.figure["data"]
    assert [t["name"] for t in traces] == ["EMPTY_GROUP", "UNSUBSCRIBED_TOPIC"]
    assert [t["y"] for t in traces] == [[0, 1], [1, 0]]
    assert traces[0]["x"] == ["2026-03-01 12:00:00", "2026-03-02 12:00:00"]
    assert chart.figure["layout"]["barmode"] == "stack"


def test_the_expiry_chart_says_so_when_nothing_expires_within_the_days():
    chart = charts.expiry_chart(offsets(("n", "t", 0, "SUBSCRIBED_TOPIC", None, False)), AS_OF, days=28)
    assert chart.figure is None
    assert chart.note == "no offset expires in the 28 days after as_of."


def test_groups_are_counted_by_type_state_and_whether_the_sweep_removes_them():
    table = groups(
        ("a", "classic", "Empty", True),
        ("b", "classic", "Empty", False),
        ("c", "classic", "Empty", True),
        ("d", "consumer", "Stable", False),
        ("e", "classic", "Stable", None),  # no verdict reads as kept
    )
    assert numbers.groups_by_verdict(table) == [
        numbers.GroupCount("classic", "Empty", False, 1),
        numbers.GroupCount("classic", "Empty", True, 2),
        numbers.GroupCount("classic", "Stable", False, 1),
        numbers.GroupCount("consumer", "Stable", False, 1),
    ]
    removed, kept = charts.groups_chart(table).figure["data"]
    assert removed["x"] == ["classic · Empty", "classic · Stable", "consumer · Stable"]
    assert removed["y"] == [2, 0, 0]
    assert kept["y"] == [1, 1, 1]


def test_the_whatif_curve_shows_retention_in_days_against_offsets_expired_and_groups_deleted():
    chart = charts.whatif_chart(whatif((10080, 40, 2), (1440, 90, 6), (43200, 5, 0)))
    expired, deleted = chart.figure["data"]
    assert expired["x"] == [1, 7, 30] and deleted["x"] == [1, 7, 30]
    assert expired["y"] == [90, 40, 5]
    assert deleted["y"] == [6, 2, 0]
    assert expired["customdata"] == ["1d", "7d", "30d"]
    assert deleted["yaxis"] == "y2"


def test_without_a_whatif_run_the_page_says_which_command_makes_one():
    chart = charts.whatif_chart(None)
    assert chart.figure is None
    assert chart.note.startswith("no what-if run in this folder: run offset-audit whatif ")


def test_lag_by_group_sums_partitions_and_keeps_the_stale_part():
    table = offsets(
        ("busy", "t", 0, "SUBSCRIBED_TOPIC", None, False, 500, 0),
        ("busy", "t", 1, "SUBSCRIBED_TOPIC", None, False, 700, 0),
        ("left", "old", 0, "UNSUBSCRIBED_TOPIC", AS_OF + DAY, False, 900, 900),
        ("left", "t", 0, "SUBSCRIBED_TOPIC", None, False, 100, 0),
        ("unknown", "t", 0, "SUBSCRIBED_TOPIC", None, False, None, None),  # no end offset for it
    )
    assert numbers.lag_by_group(table) == [numbers.GroupLag("busy", 1200, 0), numbers.GroupLag("left", 1000, 900)]
    assert numbers.lag_by_group(table, top=1) == [numbers.GroupLag("busy", 1200, 0)]
    consumed, stale = charts.lag_chart(table).figure["data"]
    assert consumed["y"] == ["busy", "left"] and consumed["x"] == [1200, 100]
    assert stale["x"] == [0, 900]


def test_lag_sums_are_exact_past_the_largest_long():
    huge = 2**62
    table = offsets(
        ("g", "t", 0, "SUBSCRIBED_TOPIC", None, False, huge, 0), ("g", "t", 1, "SUBSCRIBED_TOPIC", None, False, huge, 0)
    )
    assert numbers.lag_by_group(table) == [numbers.GroupLag("g", 2**63, 0)]


def test_without_end_offsets_there_is_no_lag_chart():
    table = offsets(("g", "t", 0, "SUBSCRIBED_TOPIC", None, False))
    assert numbers.lag_by_group(table) == []
    assert charts.lag_chart(table).note == "no lag in this snapshot: audit with --end-offsets FILE to see it."


def test_a_snapshots_totals_count_expired_offsets_those_expiring_within_a_week_and_lag():
    table = offsets(
        ("g", "t", 0, "EMPTY_GROUP", AS_OF - DAY, True, 10, 10),
        ("g", "t", 1, "EMPTY_GROUP", AS_OF + 6 * DAY, False, 20, 0),
        ("g", "t", 2, "EMPTY_GROUP", AS_OF + 8 * DAY, False, 30, 0),
        ("g", "t", 3, "SUBSCRIBED_TOPIC", None, False, None, None),
    )
    totals = snapshot_totals("s1", AS_OF, table)
    assert totals == numbers.SnapshotTotals("s1", AS_OF, offsets=4, expired=1, expiring_soon=1, lag=60)
    no_lag = offsets(("g", "t", 0, "EMPTY_GROUP", AS_OF - DAY, True))
    assert snapshot_totals("s0", AS_OF, no_lag).lag is None


def test_history_draws_each_snapshot_by_as_of_and_needs_two_of_them():
    first = numbers.SnapshotTotals("s1", AS_OF, 10, 1, 5, None)
    second = numbers.SnapshotTotals("s2", AS_OF + 3 * DAY, 10, 4, 2, 1234)
    expired, soon, lag = charts.history_chart([first, second]).figure["data"]
    assert expired["x"] == ["2026-03-01 12:00:00", "2026-03-04 12:00:00"]
    assert (expired["y"], soon["y"], lag["y"]) == ([1, 4], [5, 2], [None, 1234])
    assert charts.history_chart([first]).figure is None


def test_partitions_of_a_candidate_are_written_as_ranges():
    assert numbers.partition_ranges([7, 0, 1, 2, 3, 9, 10]) == "0-3, 7, 9-10"
    assert numbers.partition_ranges([4]) == "4"


def test_deletion_candidates_are_grouped_by_topic_and_ordered_by_priority_then_lag():
    table = candidates(
        (3, "INACTIVE_GROUP", "idle", "t", 0, 5),
        (1, "UNSUBSCRIBED_TOPIC_OF_ACTIVE_GROUP", "app", "old", 0, 10),
        (1, "UNSUBSCRIBED_TOPIC_OF_ACTIVE_GROUP", "app", "old", 1, 10),
        (1, "UNSUBSCRIBED_TOPIC_OF_ACTIVE_GROUP", "big", "gone", 3, 5000),
        (2, "EXPIRED_AWAITING_SWEEP", "done", "t", 2, None),
    )
    rows = numbers.top_candidates(table)
    assert [(r["group_id"], r["topic"], r["partitions"], r["priority"], r["lag"]) for r in rows] == [
        ("big", "gone", "3", 1, 5000),
        ("app", "old", "0-1", 1, 20),
        ("done", "t", "2", 2, None),
        ("idle", "t", "0", 3, 5),
    ]


def test_the_soonest_expiries_are_those_not_yet_expired_first_to_go():
    table = offsets(
        ("late", "t", 0, "EMPTY_GROUP", AS_OF + 3 * DAY, False),
        ("gone", "t", 0, "EMPTY_GROUP", AS_OF - DAY, True),
        ("soon", "t", 1, "SIMPLE_GROUP", AS_OF + HOUR, False),
        ("never", "t", 0, "SUBSCRIBED_TOPIC", None, False),
    )
    rows = numbers.soonest_expiries(table)
    assert [(r["group_id"], r["partition"], r["rule"]) for r in rows] == [
        ("soon", 1, "SIMPLE_GROUP"),
        ("late", 0, "EMPTY_GROUP"),
    ]


# ---- Names from the dump stay text ----------------------------------------------------------------

SCRIPT_GROUP = "</script><script>window.pwned = 1</script>"
IMG_GROUP = '<img src=x onerror="window.pwned = 2">'
QUOTED_TOPIC = "t'\"&amp;<!--"


def hostile_audit() -> report.Audit:
    names = [SCRIPT_GROUP, IMG_GROUP]
    partitions = offsets(
        *[
            (g, QUOTED_TOPIC, 0, "EMPTY_GROUP", AS_OF + (i + 1) * HOUR, False, 100 * (i + 1), 50)
            for i, g in enumerate(names)
        ]
    )
    return report.Audit(
        folder="/audits/<b>folder</b>",
        snapshot=Snapshot('snap"><script>window.pwned = 3</script>', AS_OF, 10080),
        partitions=partitions,
        groups=groups(*[(g, "classic", "Empty", True) for g in names]),
        candidates=candidates(*[(3, "INACTIVE_GROUP", g, QUOTED_TOPIC, 0, 100) for g in names]),
        history=[
            numbers.SnapshotTotals("<i>old</i>", AS_OF - DAY, 2, 0, 2, None),
            numbers.SnapshotTotals('snap"><script>window.pwned = 3</script>', AS_OF, 2, 0, 2, 300),
        ],
    )


def page_outside_plotly(html: str) -> str:
    """The page without the inlined plotly.js (its own source is not ours to check)."""
    start = html.index("<script>/**")
    return html[:start] + html[html.index("</script>", start) + len("</script>") :]


def test_names_from_the_dump_are_escaped_in_html_and_in_the_figures_json():
    html = report.render(hostile_audit()).html
    ours = page_outside_plotly(html)
    for name in (SCRIPT_GROUP, IMG_GROUP, QUOTED_TOPIC, "<b>folder</b>", "<i>old</i>", "window.pwned = 3</script>"):
        assert name not in ours
    assert "&lt;/script&gt;&lt;script&gt;window.pwned = 1&lt;/script&gt;" in ours  # table cell
    start = ours.index("const figures = ") + len("const figures = ")
    figures_json = ours[start : ours.index(";\nfor (const figure", start)]
    assert "<" not in figures_json and ">" not in figures_json and "&" not in figures_json
    lag = next(f for f in json.loads(figures_json) if f["id"] == "chart-lag")
    assert "&lt;img src=x onerror=&#34;window.pwned = 2&#34;&gt;" in lag["layout"]["yaxis"]["ticktext"]
    assert ours.count("<script") == 1 and ours.count("</script>") == 1  # the figures' block
    assert html.count("<script") == 2 and html.count("</script>") == 2  # and plotly.js


def test_chart_text_uses_only_entities_plotly_decodes():
    # plotly decodes &amp; &lt; &gt; and numeric entities, once, and not &quot;
    assert charts.chart_text("a\"b'c&amp;<br>") == "a&#34;b&#x27;c&amp;amp;&lt;br&gt;"


def test_chart_labels_are_escaped_for_plotly_which_reads_them_as_html():
    chart = charts.lag_chart(hostile_audit().partitions)
    ticks = chart.figure["layout"]["yaxis"]["ticktext"]
    assert "&lt;img src=x onerror=&#34;window.pwned = 2&#34;&gt;" in ticks


# ---- The command ----------------------------------------------------------------------------------


def test_report_writes_one_page_of_the_newest_snapshot_without_spark(audited, tmp_path, no_spark):
    from offset_audit.views.audit_folder import snapshots

    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", "--audit", str(audited), "--output", str(out)])
    assert result.exit_code == 0, result.output
    newest = snapshots(str(audited))[-1].snapshot_id
    size = out.stat().st_size
    assert result.stdout == f"wrote {out} ({size // 1024:,} KiB): 5 charts, snapshot {newest}\n"
    html = out.read_text()
    assert 'data-charts="5"' in html
    assert html.count('class="chart"') == 5
    assert "http://" not in page_outside_plotly(html) and "https://" not in page_outside_plotly(html)


def test_report_of_an_older_snapshot_over_fewer_days(audited, tmp_path):
    from offset_audit.views.audit_folder import snapshots

    oldest = snapshots(str(audited))[0].snapshot_id
    out = tmp_path / "old.html"
    args = ["report", "--audit", str(audited), "--output", str(out), "--snapshot-id", oldest, "--days", "7"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert "Offsets expiring per day, next 7 days" in html
    assert result.stdout.endswith(f"snapshot {oldest}\n")
    assert 'id="note-lag"' in html  # the first audit had no end offsets


def test_a_snapshot_not_in_the_folder_is_one_sentence_and_exit_2(audited, tmp_path):
    out = tmp_path / "r.html"
    result = CliRunner().invoke(
        main, ["report", "--audit", str(audited), "--output", str(out), "--snapshot-id", "nope"]
    )
    assert result.exit_code == 2
    assert result.output.startswith("error: snapshot 'nope' is not in group_verdicts under ")
    assert len(result.output.splitlines()) == 1
    assert not out.exists()


def test_a_folder_without_an_audit_is_one_sentence_and_exit_2(tmp_path):
    result = CliRunner().invoke(
        main, ["report", "--audit", str(tmp_path / "none"), "--output", str(tmp_path / "r.html")]
    )
    assert result.exit_code == 2
    none = tmp_path / "none"
    assert result.output == f"error: '{none}' does not exist: give the --output folder of an audit\n"
    (tmp_path / "none").mkdir()
    empty = CliRunner().invoke(main, ["report", "--audit", str(none), "--output", str(tmp_path / "r.html")])
    assert (
        empty.exit_code == 2
        and empty.output
        == f"error: '{none}' holds no group_verdicts table: run offset-audit audit --output {none} first\n"
    )


def test_the_output_is_checked_before_the_audit_is_read(tmp_path):
    missing = tmp_path / "no-such-folder" / "r.html"
    result = CliRunner().invoke(main, ["report", "--audit", str(tmp_path / "none"), "--output", str(missing)])
    assert result.exit_code == 2
    assert "cannot be written: the folder" in result.output
    result = CliRunner().invoke(main, ["report", "--audit", str(tmp_path / "none"), "--output", str(tmp_path)])
    assert result.output == f"error: --output {tmp_path} is a folder; give a file name\n"


def test_group_lag_matches_group_verdicts_lag_total(audited):
    from offset_audit.views.audit_folder import pick_snapshot, read_snapshot

    newest = pick_snapshot(str(audited), None)
    verdicts = read_snapshot(str(audited), "group_verdicts", newest)
    assert "lag_total" in verdicts.column_names, "group_verdicts lost its lag_total column"
    partitions = read_snapshot(str(audited), "partition_verdicts", newest, columns=report.PARTITION_COLUMNS)
    summed = {g.group_id: g.lag for g in numbers.lag_by_group(partitions, top=10**6)}
    stored = {r["group_id"]: r["lag_total"] for r in verdicts.to_pylist() if r["lag_total"] is not None}
    assert stored and all(summed[g] == lag for g, lag in stored.items())


# ---- In a real browser ----------------------------------------------------------------------------


def test_the_page_draws_every_chart_it_announces_in_chromium_without_an_error(audited, tmp_path, chromium):
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", "--audit", str(audited), "--output", str(out)])
    assert result.exit_code == 0, result.output
    chromium.load(out.as_uri())
    announced = chromium.evaluate("Number(document.body.dataset.charts)")
    assert announced == 5
    assert chromium.wait_until(f"{DRAWN_CHARTS} === {announced}", timeout=20)
    bars = chromium.evaluate("document.querySelectorAll('#chart-expiry .trace.bars .point').length")
    assert bars > 0
    assert chromium.problems() == []


def test_hostile_names_show_as_text_and_run_nothing_in_chromium(tmp_path, chromium):
    out = tmp_path / "hostile.html"
    out.write_text(report.render(hostile_audit()).html)
    chromium.load(out.as_uri())
    assert chromium.wait_until(f"{DRAWN_CHARTS} === Number(document.body.dataset.charts)", timeout=20)
    assert chromium.evaluate("typeof window.pwned") == "undefined"
    assert chromium.evaluate("document.querySelectorAll('img, b, i').length") == 0
    text = chromium.evaluate("document.body.innerText")
    assert SCRIPT_GROUP in text and IMG_GROUP in text and QUOTED_TOPIC in text
    ticks = chromium.evaluate("document.querySelector('#chart-lag').textContent")
    assert IMG_GROUP in ticks and SCRIPT_GROUP[: charts.AXIS_LABEL_CHARS - 1] + "…" in ticks  # cut on the axis
    assert chromium.problems() == []
