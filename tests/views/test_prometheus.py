"""`offset-audit metrics`: an audited snapshot as Prometheus text, checked with the official client's parser
against the tables it came from."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families
from repo_paths import DOCS

from offset_audit.cli.main import main
from offset_audit.views.audit_folder import read_snapshot, snapshots
from offset_audit.views.metric_scope import Scope
from offset_audit.views.prometheus import GROUP_COLUMNS, PARTITION_COLUMNS, RUN_COLUMNS, exposition, snapshot_metrics

DASHBOARDS = DOCS / "dashboards.md"
PREFIX = "kafka_offset_audit_"
AS_OF = datetime(2026, 10, 29, 7, 0, tzinfo=UTC)
AS_OF_MS = 1_793_257_200_000
DAY_MS = 86_400_000
# Every series of every offset, as before granularity existed: what the tables' columns are checked against.
EVERYTHING = Scope(granularity="partition", max_samples=10**9)


def _parsed(text: str) -> dict[str, list]:
    """Samples by metric name, as Prometheus' own client reads the text."""
    families = list(text_string_to_metric_families(text))
    assert all(f.type == "gauge" and f.documentation for f in families)
    return {f.name: f.samples for f in families}


def _partition_rows(rows: list[dict]) -> pa.Table:
    types = {
        "group_id": pa.string(),
        "topic": pa.string(),
        "partition": pa.int32(),
        "committed_offset": pa.int64(),
        "commit_timestamp_ms": pa.int64(),
        "time_to_expiry_ms": pa.int64(),
        "expired": pa.bool_(),
        "deletable_now": pa.bool_(),
        "lag": pa.int64(),
        "stale_lag": pa.int64(),
    }
    return pa.table({c: pa.array([r[c] for r in rows], t) for c, t in types.items()})


def _group_rows(rows: list[dict]) -> pa.Table:
    types = {
        "snapshot_id": pa.string(),
        "as_of": pa.timestamp("us", "UTC"),
        "retention_minutes": pa.int32(),
        "group_id": pa.string(),
        "group_type": pa.string(),
        "protocol_type": pa.string(),
        "group_state": pa.string(),
        "member_count": pa.int32(),
        "offset_count": pa.int64(),
        "expired_offset_count": pa.int64(),
        "next_expiry_at_ms": pa.int64(),
        "group_expires_at_ms": pa.int64(),
        "would_delete": pa.bool_(),
    }
    return pa.table({c: pa.array([r[c] for r in rows], t) for c, t in types.items()})


def _offset(group: str, topic: str, partition: int, **values) -> dict:
    row = {
        "group_id": group,
        "topic": topic,
        "partition": partition,
        "committed_offset": 100,
        "commit_timestamp_ms": AS_OF_MS - DAY_MS,
        "time_to_expiry_ms": 6 * DAY_MS,
        "expired": False,
        "deletable_now": False,
        "lag": None,
        "stale_lag": None,
    }
    if values.get("lag") is not None and "stale_lag" not in values:
        row["stale_lag"] = 0
    return {**row, **values}


def _group(group: str, **values) -> dict:
    row = {
        "snapshot_id": "20261029T070000Z-3f2a9c10",
        "as_of": AS_OF,
        "retention_minutes": 10080,
        "group_id": group,
        "group_type": "classic",
        "protocol_type": "consumer",
        "group_state": "Empty",
        "member_count": 0,
        "offset_count": 0,
        "expired_offset_count": 0,
        "next_expiry_at_ms": None,
        "group_expires_at_ms": None,
        "would_delete": False,
    }
    return {**row, **values}


def _orders_app():
    """The docs' sample: a group with two partitions of `orders`, one expired a day ago."""
    partitions = _partition_rows(
        [
            _offset("orders-app", "orders", 0, committed_offset=1200, time_to_expiry_ms=DAY_MS, lag=40),
            _offset("orders-app", "orders", 1, committed_offset=980, time_to_expiry_ms=-DAY_MS, expired=True, lag=3500),
        ]
    )
    groups = _group_rows(
        [
            _group(
                "orders-app",
                offset_count=2,
                expired_offset_count=1,
                next_expiry_at_ms=AS_OF_MS + DAY_MS,
                group_expires_at_ms=AS_OF_MS + DAY_MS,
            )
        ]
    )
    return partitions, groups


@pytest.fixture(scope="module")
def newest(audited):
    """The newest snapshot's metrics at partition granularity and its rows (the snapshot audited with end
    offsets)."""
    folder = str(audited)
    snapshot_id = snapshots(folder)[-1].snapshot_id
    partitions = read_snapshot(folder, "partition_verdicts", snapshot_id)
    groups = read_snapshot(folder, "group_verdicts", snapshot_id)
    return snapshot_metrics(folder, scope=EVERYTHING), partitions, groups


def test_the_newest_snapshot_is_the_default_and_parses_with_the_official_client(newest):
    result, _, groups = newest
    samples = _parsed(result.text)
    assert result.snapshot_id == groups.column("snapshot_id")[0].as_py()
    assert result.groups == groups.num_rows
    assert result.samples == sum(len(s) for s in samples.values())
    assert set(samples) == {
        PREFIX + name
        for name in [
            "group_deletable_offsets",
            "group_expired_offsets",
            "group_expiry_seconds",
            "group_info",
            "group_lag",
            "group_members",
            "group_stale_lag",
            "group_next_expiry_seconds",
            "group_offsets",
            "group_would_delete",
            "last_run_duration_seconds",
            "last_run_records_read",
            "last_success_timestamp_seconds",
            "metrics_left_out_samples",
            "partition_commit_timestamp_seconds",
            "partition_committed_offset",
            "partition_deletable",
            "partition_expired",
            "partition_expiry_seconds",
            "partition_lag",
            "snapshot_info",
            "snapshot_timestamp_seconds",
        ]
    }


def test_lag_samples_add_up_to_the_lag_column(newest):
    result, partitions, _ = newest
    samples = _parsed(result.text)
    lag = partitions.column("lag")
    assert lag.null_count < partitions.num_rows
    assert len(samples[PREFIX + "partition_lag"]) == partitions.num_rows - lag.null_count
    assert sum(s.value for s in samples[PREFIX + "partition_lag"]) == pc.sum(lag).as_py()
    assert sum(s.value for s in samples[PREFIX + "group_lag"]) == pc.sum(lag).as_py()
    stale = pc.sum(partitions.column("stale_lag")).as_py()
    assert sum(s.value for s in samples[PREFIX + "group_stale_lag"]) == stale > 0


def test_partition_flags_and_expiry_match_the_verdicts(newest):
    result, partitions, _ = newest
    samples = _parsed(result.text)
    rows = {(r["group_id"], r["topic"], str(r["partition"])): r for r in partitions.to_pylist()}

    def by_key(name):
        return {(s.labels["group"], s.labels["topic"], s.labels["partition"]): s.value for s in samples[PREFIX + name]}

    expired = by_key("partition_expired")
    assert set(expired) == set(rows)
    assert sum(expired.values()) == sum(r["expired"] for r in rows.values()) > 0
    assert sum(by_key("partition_deletable").values()) == sum(r["deletable_now"] for r in rows.values())
    expiry = by_key("partition_expiry_seconds")
    assert expiry == {k: r["time_to_expiry_ms"] / 1000 for k, r in rows.items() if r["time_to_expiry_ms"] is not None}
    assert len(expiry) < len(rows)  # offsets that never expire have no sample
    assert by_key("partition_committed_offset") == {k: r["committed_offset"] for k, r in rows.items()}


def test_group_metrics_match_the_group_verdicts(newest):
    result, _, groups = newest
    samples = _parsed(result.text)
    rows = {r["group_id"]: r for r in groups.to_pylist()}
    offsets = {s.labels["group"]: s.value for s in samples[PREFIX + "group_offsets"]}
    assert offsets == {g: r["offset_count"] for g, r in rows.items()}
    would_delete = sum(s.value for s in samples[PREFIX + "group_would_delete"])
    assert would_delete == sum(r["would_delete"] for r in rows.values())
    info = {s.labels["group"]: s.labels for s in samples[PREFIX + "group_info"]}
    assert {g: (i["group_type"], i["group_state"]) for g, i in info.items()} == {
        g: (r["group_type"], r["group_state"]) for g, r in rows.items()
    }
    (snapshot,) = samples[PREFIX + "snapshot_info"]
    first = next(iter(rows.values()))
    assert snapshot.labels == {
        "snapshot_id": first["snapshot_id"],
        "retention_minutes": str(first["retention_minutes"]),
    }
    (as_of,) = samples[PREFIX + "snapshot_timestamp_seconds"]
    assert as_of.value == pytest.approx(first["as_of"].timestamp(), abs=1e-3)


def test_the_run_gauges_are_the_audit_run_that_wrote_the_snapshot(audited, newest):
    from offset_audit.views.audit_folder import read_table

    result, _, _ = newest
    samples = _parsed(result.text)
    (run,) = [
        r
        for r in read_table(str(audited), "runs", columns=RUN_COLUMNS).to_pylist()
        if r["command"] == "audit" and r["snapshot_id"] == result.snapshot_id
    ]
    (finished,) = samples[PREFIX + "last_success_timestamp_seconds"]
    assert finished.value == pytest.approx(run["finished_at"].replace(tzinfo=UTC).timestamp(), abs=1e-3)
    (took,) = samples[PREFIX + "last_run_duration_seconds"]
    assert took.value == pytest.approx((run["finished_at"] - run["started_at"]).total_seconds(), abs=1e-3)
    assert [s.value for s in samples[PREFIX + "last_run_records_read"]] == [run["records_read"]] != [0]


def test_a_snapshot_audited_without_end_offsets_has_no_lag_metrics(audited):
    oldest = snapshots(str(audited))[0].snapshot_id
    samples = _parsed(snapshot_metrics(str(audited), oldest, scope=EVERYTHING).text)
    assert PREFIX + "partition_lag" not in samples and PREFIX + "group_lag" not in samples
    assert samples[PREFIX + "snapshot_info"][0].labels["snapshot_id"] == oldest


def test_output_is_ordered_by_metric_then_labels_and_the_same_every_time():
    partitions = _partition_rows(
        [_offset("b", "t", 10), _offset("b", "t", 2), _offset("a", "z", 0), _offset("a", "t", 5)]
    )
    groups = _group_rows([_group("b"), _group("a")])
    text = exposition(partitions, groups, scope=EVERYTHING).text
    assert text == exposition(partitions.take([3, 1, 0, 2]), groups.take([1, 0]), scope=EVERYTHING).text
    names = [line.split(" ")[2] for line in text.splitlines() if line.startswith("# TYPE")]
    assert names == sorted(names)
    lines = [line for line in text.splitlines() if line.startswith(PREFIX + "partition_committed_offset{")]
    assert [re.findall(r'"([^"]*)"', line) for line in lines] == [
        ["a", "t", "5"],
        ["a", "z", "0"],
        ["b", "t", "2"],
        ["b", "t", "10"],
    ]


def test_group_lag_adds_up_past_the_largest_long():
    """Log end offsets may be near 2**63 (a dump's extreme commits): the group's sum must not wrap around."""
    partitions = _partition_rows([_offset("g", "t", 0, lag=2**62), _offset("g", "t", 1, lag=2**62)])
    samples = _parsed(exposition(partitions, _group_rows([_group("g")])).text)
    assert [s.value for s in samples[PREFIX + "group_lag"]] == [2**63]


HOSTILE = [
    'quote"inside',
    "back\\slash",
    "two\nlines",
    'closes"} 1\nkafka_offset_audit_group_would_delete{group="victim"} 1',
    "# HELP fake metric",
    "\\n literally",
    "ünïcødé 😀",
    "carriage\rreturn\ttab\x00nul",
    "",
]


def test_hostile_group_and_topic_names_round_trip_through_the_parser():
    partitions = _partition_rows([_offset(name, name + "-topic", 0, lag=7) for name in HOSTILE])
    groups = _group_rows([_group(name, protocol_type=name) for name in HOSTILE])
    text = exposition(partitions, groups, scope=EVERYTHING).text
    samples = _parsed(text)
    assert {s.labels["group"] for s in samples[PREFIX + "partition_lag"]} == set(HOSTILE)
    assert {s.labels["topic"] for s in samples[PREFIX + "partition_lag"]} == {n + "-topic" for n in HOSTILE}
    assert {s.labels["group"] for s in samples[PREFIX + "group_would_delete"]} == set(HOSTILE)
    assert all(s.value == 0 for s in samples[PREFIX + "group_would_delete"])
    assert {s.labels.get("protocol_type", "") for s in samples[PREFIX + "group_info"]} == set(HOSTILE)
    # One line per sample, one HELP and one TYPE per metric: no name added a line (the format's lines
    # end at a line feed only; a carriage return inside a label value is text).
    assert len(text.rstrip("\n").split("\n")) == sum(len(s) for s in samples.values()) + 2 * len(samples)


def test_the_sample_in_the_dashboards_doc_is_what_the_command_prints_for_its_rows():
    sample = DASHBOARDS.read_text().split("<!-- metrics-sample -->\n```\n", 1)[1].split("```", 1)[0]
    printed = set(exposition(*_orders_app(), scope=EVERYTHING).text.splitlines())
    assert sample.strip()
    for line in sample.splitlines():
        assert line in printed, line


# The command ---------------------------------------------------------------------------------------------


def _run(*args: str):
    return CliRunner().invoke(main, ["metrics", *args])


def test_cli_prints_the_exposition_and_nothing_else_on_stdout(audited, no_spark):
    result = _run("--audit", str(audited))
    assert result.exit_code == 0, result.output
    assert result.stdout == snapshot_metrics(str(audited)).text
    assert result.stderr == ""


def test_cli_picks_a_snapshot_by_id(audited, no_spark):
    oldest = snapshots(str(audited))[0].snapshot_id
    result = _run("--audit", str(audited), "--snapshot-id", oldest)
    assert result.exit_code == 0, result.output
    assert f'snapshot_id="{oldest}"' in result.stdout


def test_cli_writes_a_prom_file_by_renaming_a_finished_temporary_one(audited, no_spark, tmp_path, monkeypatch):
    target = tmp_path / "offset_audit.prom"
    target.write_text("# the previous scrape's file\n")
    renames = []
    replace = os.replace

    def watched(source, destination):
        renames.append((Path(source), Path(destination), Path(source).read_text()))
        replace(source, destination)

    monkeypatch.setattr(os, "replace", watched)
    result = _run("--audit", str(audited), "--output", str(target))
    assert result.exit_code == 0, result.output
    expected = snapshot_metrics(str(audited))
    (source, destination, written) = renames[0]
    assert len(renames) == 1 and destination == target and source.parent == tmp_path
    assert not source.name.endswith(".prom")  # the collector never reads the half-written file
    assert written == expected.text == target.read_text()
    assert os.listdir(tmp_path) == ["offset_audit.prom"]
    assert target.stat().st_mode & 0o777 == 0o644
    assert result.stdout == ""
    assert result.stderr == f"wrote {expected.samples} samples of {expected.groups} groups to {target}\n"


def test_cli_refuses_an_output_the_textfile_collector_would_not_read(audited, no_spark, tmp_path):
    target = tmp_path / "offset_audit.txt"
    result = _run("--audit", str(audited), "--output", str(target))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --output ") and ".prom" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stdout == ""
    assert not target.exists()


def test_cli_missing_audit_folder_is_one_sentence_and_exit_2(no_spark, tmp_path):
    result = _run("--audit", str(tmp_path / "nowhere"))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and "nowhere" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stdout == ""


def test_cli_unknown_snapshot_is_one_sentence_and_exit_2(audited, no_spark):
    result = _run("--audit", str(audited), "--snapshot-id", "no-such-snapshot")
    assert result.exit_code == 2
    assert "'no-such-snapshot' is not in" in result.stderr and len(result.stderr.splitlines()) == 1


def test_the_columns_read_are_in_the_table_schemas():
    from offset_audit.layouts.tables import table_schema

    assert set(PARTITION_COLUMNS) <= {c.name for c in table_schema("partition_verdicts").columns}
    assert set(GROUP_COLUMNS) <= {c.name for c in table_schema("group_verdicts").columns}


def test_the_docs_table_lists_every_metric_the_command_writes():
    from offset_audit.views.prometheus import HELP, PREFIX

    rows = [line for line in DASHBOARDS.read_text().splitlines() if line.startswith("| `kafka_offset_audit_")]
    listed = {m for row in rows for m in re.findall(r"`(kafka_offset_audit_\w+)`", row.split(" | ")[0])}
    # The group_topic_* row names the first in full and the others by their suffix.
    listed |= {
        PREFIX + "group_topic" + suffix
        for row in rows
        if "group_topic_offsets" in row
        for suffix in re.findall(r"`(_\w+)`", row.split(" | ")[0])
    }
    assert listed == {PREFIX + name for name in HELP}


def test_cli_granularity_and_budget_and_what_it_left_out(audited, no_spark):
    full = _run("--audit", str(audited), "--granularity", "partition", "--max-samples", "1000000")
    assert full.exit_code == 0 and full.stderr == ""
    assert full.stdout == snapshot_metrics(str(audited), scope=EVERYTHING).text
    cut = _run("--audit", str(audited), "--granularity", "partition", "--max-samples", "50")
    assert cut.exit_code == 0, cut.output
    assert len(_parsed(cut.stdout)) and sum(len(s) for s in _parsed(cut.stdout).values()) <= 50
    (note,) = cut.stderr.splitlines()
    assert note.startswith("note: left out past --max-samples 50: ") and note.endswith("would write everything")


def test_cli_config_sets_the_scope_and_flags_win(audited, no_spark, tmp_path):
    conf = tmp_path / "metrics.toml"
    conf.write_text('[metrics]\ngranularity = "partition"\nmax_samples = 1000000\ngroups = ["nothing-like-this"]\n')
    nothing = _run("--audit", str(audited), "--conf", str(conf))
    assert nothing.exit_code == 0 and nothing.stdout == ""
    assert nothing.stderr == "note: no group of the snapshot is left by the group filters: no metrics to write\n"
    flagged = _run("--audit", str(audited), "--conf", str(conf), "--group", ".*")
    assert flagged.stdout == snapshot_metrics(str(audited), scope=EVERYTHING).text


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--group", "orders-("], "--group takes a regular expression"),
        (["--granularity", "member"], "--granularity"),
        (["--max-samples", "3"], "--max-samples"),
        (["--watch-expiring-within", "soon"], "--watch-expiring-within"),
        (["--push-grouping-key", "cluster=prod"], "give --push-gateway URL too"),
        (["--push-gateway", "pushgateway:9091"], "--push-gateway takes a Pushgateway's URL"),
        (["--push-gateway", "http://pg:9091/metrics/job/x"], "without a path"),
        (["--push-gateway", "http://pg:9091", "--push-grouping-key", "job=x"], "label name like cluster"),
        (["--push-gateway", "http://pg:9091", "--push-grouping-key", "cluster="], "needs a value"),
    ],
)
def test_cli_bad_metrics_options_are_one_sentence_before_anything_is_read(args, words, no_spark, tmp_path):
    result = _run("--audit", str(tmp_path / "not-read"), *args)
    assert result.exit_code == 2, result.output
    assert words in result.stderr and len(result.stderr.splitlines()) == 1 and result.stdout == ""
