"""`offset-audit share` end to end: a generated __share_group_state dump with the share groups of the
same cluster, the KIP-932 draft's worked example as JSON lines, broken input, end offsets and a broker
config."""

from __future__ import annotations

import dataclasses
import json

import pytest
from deltalake import DeltaTable
from test_share_chain import NEW_CHECKPOINT_137, WORKED_EXAMPLE

from offset_audit.config import load_settings
from offset_audit.errors import UserError
from offset_audit.generator import generate_dump, generate_share_state
from offset_audit.share.run import run_share

CLUSTER = 30_000  # records of the __consumer_offsets dump whose share groups the state belongs to


def rows(output, table):
    return DeltaTable(f"{output}/{table}").to_pyarrow_table().to_pylist()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("share")
    generate_dump(str(root / "offsets"), CLUSTER, seed=3)
    generate_share_state(str(root / "state"), 3_000, seed=3, world_records=CLUSTER, corrupt=2)
    return root


@pytest.fixture(scope="module")
def shared(spark, cluster, tmp_path_factory):
    output = tmp_path_factory.mktemp("share-out")
    result = run_share(
        spark, [str(cluster / "state")], str(output), load_settings(), groups_inputs=[str(cluster / "offsets")]
    )
    return result, output


def test_counts_reconcile_and_bad_records_are_quarantined(shared):
    result, output = shared
    report = result.report
    assert report.records_read == 3_000 + 2 and report.quarantined == 2 and report.reconciles
    assert len(rows(output, "quarantine")) == 2
    assert result.table_rows["share_problems"] == 0


def test_share_partitions_have_names_and_consistent_counts(shared):
    _, output = shared
    partitions = rows(output, "share_partitions")
    assert partitions and all(p["topic"] for p in partitions), "type 15 records name the topic ids"
    batches = rows(output, "share_state_batches")
    for p in partitions:
        assert p["start_offset"] <= p["end_offset"]
        mine = [
            b
            for b in batches
            if (b["group_id"], b["topic_id"], b["partition"]) == (p["group_id"], p["topic_id"], p["partition"])
        ]
        assert all(b["first_offset"] >= p["start_offset"] and b["last_offset"] < p["end_offset"] for b in mine)
        in_flight = sum(b["last_offset"] - b["first_offset"] + 1 for b in mine)
        assert in_flight == p["available_records"] + p["acknowledged_records"] + p["archived_records"]
        at_limit = sum(b["last_offset"] - b["first_offset"] + 1 for b in mine if b["delivery_count"] >= 5)
        assert p["records_at_delivery_limit"] == at_limit
    cleanup = rows(output, "share_cleanup")
    assert {c["log"] for c in cleanup} == {"__share_group_state"}
    assert sum(c["share_partitions"] for c in cleanup) == len(partitions)
    for c in cleanup:
        mine = [p["checkpoint_offset"] for p in partitions if p["checkpoint_log_partition"] == c["partition"]]
        assert c["earliest_share_offset"] == min(mine)


def test_share_groups_come_from_the_offsets_dump(shared):
    result, output = shared
    groups = {g["group_id"]: g for g in rows(output, "share_groups")}
    assert {p["group_id"] for p in result.partitions} <= set(groups)
    for g in groups.values():
        assert g["left_behind"] == (g["member_count"] == 0 and g["has_persisted_state"])
        assert (g["delete_command"] is not None) == g["left_behind"]


def test_kip932_worked_example_replays_to_the_seed_state(spark, tmp_path):
    """Seed 004, records 130-137, both endings, through the share command (JSON lines)."""
    for name, records in (("delta", WORKED_EXAMPLE), ("checkpoint", [*WORKED_EXAMPLE[:-1], NEW_CHECKPOINT_137])):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in records) + "\nnot json\n")
        output = tmp_path / f"out-{name}"
        result = run_share(spark, [str(path)], str(output), load_settings())
        assert result.report.input_format == "kip932-json"
        assert result.report.records_read == len(records) + 1 and result.report.quarantined == 1
        (p,) = rows(output, "share_partitions")
        assert (p["group_id"], p["topic"], p["partition"]) == ("G1", "T", 0)
        assert (p["start_offset"], p["end_offset"]) == (120, 120)
        assert p["checkpoint_offset"] == (137 if name == "checkpoint" else 130)
        assert rows(output, "share_state_batches") == []
        (cleanup,) = rows(output, "share_cleanup")
        assert (cleanup["log"], cleanup["partition"], cleanup["earliest_share_offset"]) == (
            "T",
            0,
            p["checkpoint_offset"],
        )
        (bad,) = rows(output, "quarantine")
        assert bad["reason"].startswith("not JSON") and f"{path}, line {len(records) + 1}]" in bad["reason"]


def test_a_broken_chain_is_reported_not_applied(spark, tmp_path):
    broken = [dict(r) for r in WORKED_EXAMPLE]
    broken[3]["BackOffset"] = 120  # does not point at 132
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in broken))
    result = run_share(spark, [str(path)], str(tmp_path / "out"), load_settings())
    problems = rows(tmp_path / "out", "share_problems")
    assert problems and problems[0]["log_offset"] == 133 and "BackOffset" in problems[0]["reason"]
    assert result.partitions[0]["problems"] == len(problems)


def test_end_offsets_give_share_lag_and_broker_config_is_checked(spark, cluster, shared, tmp_path):
    first = shared[0].partitions[0]
    ends = tmp_path / "ends.csv"
    end = first["start_offset"] + 42
    ends.write_text(f"topic,partition,log_start_offset,log_end_offset\n{first['topic']},{first['partition']},0,{end}\n")
    config = tmp_path / "server.properties"
    config.write_text("group.share.delivery.count.limit=3\ngroup.share.max.size = 5000\n")
    run_share(
        spark,
        [str(cluster / "state")],
        str(tmp_path / "out"),
        load_settings(),
        groups_inputs=[str(cluster / "offsets")],
        end_offsets=str(ends),
        broker_config=str(config),
    )
    partitions = rows(tmp_path / "out", "share_partitions")
    for p in partitions:
        if (p["topic"], p["partition"]) == (first["topic"], first["partition"]):
            assert p["share_lag"] == max(end - p["start_offset"], 0)
        else:
            assert p["share_lag"] is None
    findings = rows(tmp_path / "out", "share_findings")
    assert any(f["severity"] == "error" and "group.share.max.size" in f["message"] for f in findings)
    # an out-of-range setting does not stop the audit; the valid delivery count limit is used
    assert {p["delivery_count_limit"] for p in partitions} == {3}


def test_other_commands_refuse_share_input(spark, tmp_path):
    from offset_audit.pipeline import run_decode

    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(WORKED_EXAMPLE[0]) + "\n")
    with pytest.raises(UserError, match="offset-audit share"):
        run_decode(spark, [str(path)], str(tmp_path / "out"), load_settings())
    with pytest.raises(UserError, match="share reads"):
        run_share(spark, [str(path)], str(tmp_path / "o"), dataclasses.replace(load_settings(), input_format="console"))


def _batches_by_topic_id(output):
    out = rows(output, "share_state_batches")
    for r in out:
        r["topic"] = None  # the snapshot run named topics from --groups-input; compare on topic ids
    return sorted(map(repr, out))


def test_share_state_segments_replay_like_the_snapshot(spark, cluster, shared, tmp_path):
    """A broker data directory holding both internal topics: share reads __share_group_state-N and
    skips __consumer_offsets-N; decode does the opposite; both count what they skip."""
    from offset_audit.generator import snapshot_to_segments
    from offset_audit.pipeline import run_decode

    data_dir = tmp_path / "data"
    snapshot_to_segments(str(cluster / "state"), str(data_dir), batch_records=3, topic="__share_group_state")
    snapshot_to_segments(str(cluster / "offsets"), str(data_dir))
    result = run_share(spark, [str(data_dir)], str(tmp_path / "out"), load_settings())
    assert result.report.input_format == "segments"
    assert result.report.records_skipped == CLUSTER and result.report.reconciles
    assert result.report.quarantined == shared[0].report.quarantined
    assert _batches_by_topic_id(tmp_path / "out") == _batches_by_topic_id(shared[1])
    decoded = run_decode(spark, [str(data_dir)], str(tmp_path / "decoded"), load_settings())
    assert decoded.records_skipped == result.report.records_read - CLUSTER
    assert decoded.skipped_by_reason == {"other topic": decoded.records_skipped}


def test_generated_share_groups_the_assignor_cannot_assign_end_with_findings_and_every_table(spark, tmp_path):
    """`generate --format share-state` with its cluster's groups once died with ShareAssignorError after
    some share tables were committed and before share_groups, share_findings and runs."""
    generate_dump(str(tmp_path / "offsets"), 2_000, seed=1, partitions=10)
    generate_share_state(str(tmp_path / "state"), 6_000, seed=1, world_records=2_000)
    output = tmp_path / "out"
    result = run_share(
        spark, [str(tmp_path / "state")], str(output), load_settings(), groups_inputs=[str(tmp_path / "offsets")]
    )
    assert any(f["kind"] == "ASSIGNMENT_NOT_COMPUTED" for f in rows(output, "share_findings"))
    (run,) = rows(output, "runs")
    assert run["run_id"] == result.report.run_id
    assert {name for name, _ in run["table_versions"]} >= {"share_groups", "share_findings", "share_partitions"}
