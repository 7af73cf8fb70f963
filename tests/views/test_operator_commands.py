"""What operators script against: --json, alert exit codes, durations, describe, stable snapshot ids,
what-if scenarios that accumulate. One JSON document on stdout and nothing else."""

from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pytest
from click.testing import CliRunner

from offset_audit.cli.main import main
from offset_audit.durations import format_minutes, parse_minutes
from offset_audit.errors import UserError
from offset_audit.views.audit_folder import read_snapshot, read_table, snapshots


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    from offset_audit.generator.demo_dump import generate_dump

    folder = tmp_path_factory.mktemp("ops") / "dump"
    generate_dump(str(folder), 3_000, seed=11, corrupt=2)
    return folder


@pytest.mark.parametrize(
    ("text", "minutes"), [("90", 90), ("30m", 30), ("24h", 1440), ("7d", 10080), ("2w", 20160), (" 7D ", 10080)]
)
def test_durations_as_operators_write_them(text, minutes):
    assert parse_minutes(text, "--x") == minutes


@pytest.mark.parametrize("text", ["", "7 days", "1.5h", "-1d", "d", "7s"])
def test_a_duration_that_is_not_one_is_a_sentence_naming_the_option(text):
    with pytest.raises(UserError, match="--x takes minutes or a duration"):
        parse_minutes(text, "--x")


def test_minutes_print_in_their_shortest_exact_form():
    assert [format_minutes(m) for m in (10080, 1440, 90, 20160, 60, 43200)] == ["7d", "1d", "90m", "2w", "1h", "30d"]


def test_audit_json_is_one_document_and_the_alert_exit_codes(spark, dump, tmp_path):
    output = tmp_path / "audit"
    result = run(
        "audit",
        "--input",
        dump,
        "--output",
        output,
        "--json",
        "--quiet",
        "--retention-minutes",
        "7d",
        "--fail-if-expiring-within",
        "24h",
    )
    document = json.loads(result.stdout)  # the whole of stdout is one JSON document
    offsets = document["offsets"]
    assert document["retention_minutes"] == 10080 and document["command"] == "audit"
    assert offsets["total"] == sum(
        offsets[k] for k in ("expired", "expire_within_24h", "expire_in_1_to_7_days", "expire_later", "no_expiry")
    )
    counts = document["counts"]
    assert counts["reconciles"] and counts["records_read"] == 3_000
    rows = read_snapshot(str(output), "partition_verdicts", document["snapshot_id"])
    assert rows.num_rows == offsets["total"] == document["tables"]["partition_verdicts"]["rows"]
    alert = document["alerts"]["expiring_within"]
    assert alert["offsets"] == offsets["expire_within_24h"] > 0
    assert result.exit_code == 3
    assert "alert: " in result.stderr and "(exit 3)" in result.stderr
    assert "offset-audit:" not in result.stderr  # --quiet

    calm = run("audit", "--input", dump, "--output", output, "--json", "-q", "--fail-if-expiring-within", "1m")
    assert calm.exit_code == (3 if json.loads(calm.stdout)["alerts"]["expiring_within"]["offsets"] else 0)

    expired = run(
        "audit",
        "--input",
        dump,
        "--output",
        output,
        "--json",
        "-q",
        "--fail-if-expired",
        "--fail-if-expiring-within",
        "24h",
    )
    found = json.loads(expired.stdout)["offsets"]["expired_in_active_groups"]
    states = read_snapshot(
        str(output), "partition_verdicts", document["snapshot_id"], columns=["expired", "group_state"]
    )
    assert found == sum(e and s not in ("Empty", "Dead") for e, s in zip(*states.to_pydict().values(), strict=True))
    assert expired.exit_code == (4 if found else 3)


def test_progress_goes_to_stderr_as_lines_when_it_is_not_a_terminal(spark, dump, tmp_path):
    result = run("decode", "--input", dump, "--output", tmp_path / "decoded")
    assert result.exit_code == 0, result.output
    assert "offset-audit: decoding 3,000 records (parquet) done" in result.stderr
    assert "offset-audit:" not in result.stdout
    document = json.loads(run("decode", "--input", dump, "--output", tmp_path / "again", "--json", "-q").stdout)
    assert document["counts"]["records_read"] == 3_000
    assert document["tables"]["offset_commits"]["version"] == 0


def test_the_same_dump_gets_the_same_snapshot_id_wherever_it_lies(spark, dump, tmp_path):
    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(dump, copy)
    ids = [
        json.loads(run("audit", "--input", path, "--output", tmp_path / name, "--json", "-q").stdout)["snapshot_id"]
        for path, name in ((dump, "a"), (copy, "b"))
    ]
    assert ids[0] == ids[1]
    whatif = run("whatif", "--input", copy, "--output", tmp_path / "a", "--retention-minutes", "1d", "--json", "-q")
    assert json.loads(whatif.stdout)["snapshot_id"] == ids[0]


def test_whatif_scenarios_accumulate_and_one_judged_again_is_replaced(spark, dump, tmp_path):
    output = tmp_path / "whatif"
    first = run("whatif", "--input", dump, "--output", output, "--retention-minutes", "1d,7d,30d", "-q")
    assert first.exit_code == 0, first.output
    second = run("whatif", "--input", dump, "--output", output, "--retention-minutes", "7d,90d", "--json", "-q")
    scenarios = json.loads(second.stdout)["scenarios"]
    assert [s["retention_minutes"] for s in scenarios] == [10080, 129600]
    table = read_table(str(output), "whatif")
    assert sorted(table.column("retention_minutes").to_pylist()) == [1440, 10080, 43200, 129600]
    assert table.num_rows == 4  # 7d judged twice is one row


def test_describe_reads_like_kafka_consumer_groups_without_spark(no_spark, audited):
    newest = snapshots(str(audited))[-1].snapshot_id
    offsets = read_snapshot(str(audited), "partition_verdicts", newest)
    lagging = offsets.filter(pa.compute.greater(offsets.column("lag"), 0)).to_pylist()[0]
    group = lagging["group_id"]
    result = run("describe", "--audit", audited, "--group", group)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("GROUP"))
    assert header.split() == [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "COMMITTED-AT",
        "RULE",
        "EXPIRES-AT",
        "DELETABLE-NOW",
    ]
    rows = [line.split() for line in lines[lines.index(header) + 1 :] if line.strip()]
    mine = [r for r in offsets.to_pylist() if r["group_id"] == group]
    assert len(rows) == len(mine)
    row = next(r for r in rows if r[1] == lagging["topic"] and r[2] == str(lagging["partition"]))
    assert row[3:6] == [str(lagging["committed_offset"]), str(lagging["log_end_offset"]), str(lagging["lag"])]
    assert int(row[4]) - int(row[3]) == lagging["lag"]
    assert any(line.startswith(f"Group '{group}'") for line in lines)


def test_describe_expiring_within_and_json(no_spark, audited):
    newest = snapshots(str(audited))[-1].snapshot_id
    offsets = read_snapshot(str(audited), "partition_verdicts", newest).to_pylist()
    day = 86_400_000
    expected = [
        o for o in offsets if o["expired"] or (o["time_to_expiry_ms"] is not None and o["time_to_expiry_ms"] < day)
    ]
    result = run("describe", "--audit", audited, "--expiring-within", "24h", "--json")
    document = json.loads(result.stdout)
    assert document["snapshot_id"] == newest
    assert len(document["offsets"]) == len(expected) > 0
    assert {g["group_id"] for g in document["groups"]} == {o["group_id"] for o in expected}


def test_describe_mistakes_are_one_sentence(no_spark, audited, tmp_path):
    result = run("describe", "--audit", audited, "--group", "no-such-group")
    assert result.exit_code == 2 and "no committed offsets of group 'no-such-group'" in result.stderr
    result = run("describe", "--audit", tmp_path, "--group", "g")
    assert result.exit_code == 2 and "holds no partition_verdicts table" in result.stderr
    result = run("describe", "--audit", audited, "--expiring-within", "soon")
    assert result.exit_code == 2 and "duration" in result.stderr


def test_delete_plan_json_without_spark(no_spark, audited):
    result = run("delete-plan", "--audit", audited, "--json")
    document = json.loads(result.stdout)
    newest = snapshots(str(audited))[-1].snapshot_id
    candidates = read_snapshot(str(audited), "deletion_candidates", newest)
    assert document["snapshot_id"] == newest and document["partitions"] == candidates.num_rows
    assert sum(len(t["partitions"]) for g in document["groups"] for t in g["topics"]) == candidates.num_rows


def test_delete_plan_of_an_earlier_snapshot_and_of_one_never_audited(no_spark, audited):
    """delete-plan chooses its snapshot as describe, report and metrics do: among the audited snapshots
    (group_verdicts), the newest by default; one never audited is refused with the newest named."""
    known = snapshots(str(audited))
    older = known[0].snapshot_id
    document = json.loads(run("delete-plan", "--audit", audited, "--snapshot-id", older, "--json").stdout)
    candidates = read_snapshot(str(audited), "deletion_candidates", older)
    assert document["snapshot_id"] == older and document["partitions"] == candidates.num_rows
    result = run("delete-plan", "--audit", audited, "--snapshot-id", "never")
    assert result.exit_code == 2 and result.stdout == ""
    newest = known[-1].snapshot_id
    assert result.stderr == f"error: snapshot 'never' is not in group_verdicts under '{audited}' (newest: '{newest}')\n"


def test_the_config_takes_a_duration_for_the_retention(tmp_path):
    from offset_audit.runtime.config import load_settings

    conf = tmp_path / "c.toml"
    conf.write_text('[audit]\nretention_minutes = "30d"\n')
    assert load_settings(str(conf)).audit.retention_minutes == 43200
    conf.write_text('[audit]\nretention_minutes = "a week"\n')
    with pytest.raises(UserError, match="retention_minutes in the config takes minutes or a duration"):
        load_settings(str(conf))


def test_describe_one_topic(no_spark, audited):
    newest = snapshots(str(audited))[-1].snapshot_id
    offsets = read_snapshot(str(audited), "partition_verdicts", newest, columns=["topic"])
    topic = offsets.column("topic")[0].as_py()
    document = json.loads(run("describe", "--audit", audited, "--topic", topic, "--json").stdout)
    assert {o["topic"] for o in document["offsets"]} == {topic}
    assert len(document["offsets"]) == offsets.column("topic").to_pylist().count(topic)


def test_share_json_is_one_document(spark, tmp_path):
    from offset_audit.generator.share_world import generate_share_state

    state = tmp_path / "share-state"
    generate_share_state(str(state), 2_000, seed=3, world_records=3_000, corrupt=1)
    result = run("share", "--input", state, "--output", tmp_path / "share", "--json", "--quiet")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["command"] == "share" and document["counts"]["records_read"] == 2_001
    assert document["counts"]["quarantined"] == 1 and document["counts"]["reconciles"]
    partitions = read_table(str(tmp_path / "share"), "share_partitions")
    assert document["share_partitions"] == partitions.num_rows == document["tables"]["share_partitions"]["rows"]
