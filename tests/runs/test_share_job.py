"""`offset-audit share` end to end: a generated __share_group_state dump with the share groups of the
same cluster, the KIP-932 draft's worked example as JSON lines, broken input, end offsets and a broker
config."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from draft_chain_records import NEW_CHECKPOINT_137, WORKED_EXAMPLE

from offset_audit.errors import UserError
from offset_audit.generator.demo_dump import generate_dump
from offset_audit.generator.share_world import generate_share_state
from offset_audit.runs.share import run_share
from offset_audit.runtime.config import load_settings

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
    from offset_audit.runs.decode import run_decode

    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(WORKED_EXAMPLE[0]) + "\n")
    with pytest.raises(UserError, match="offset-audit share"):
        run_decode(spark, [str(path)], str(tmp_path / "out"), load_settings())
    with pytest.raises(UserError, match="share reads"):
        run_share(spark, [str(path)], str(tmp_path / "o"), load_settings(input_format="console"))


def _batches_by_topic_id(output):
    out = rows(output, "share_state_batches")
    for r in out:
        r["topic"] = None  # the snapshot run named topics from --groups-input; compare on topic ids
    return sorted(map(repr, out))


def test_share_state_segments_replay_like_the_snapshot(spark, cluster, shared, tmp_path):
    """A broker data directory holding both internal topics: share reads __share_group_state-N and
    skips __consumer_offsets-N; decode does the opposite; both count what they skip."""
    from offset_audit.generator.writers import snapshot_to_segments
    from offset_audit.runs.decode import run_decode

    data_dir = tmp_path / "data"
    snapshot_to_segments(str(cluster / "state"), str(data_dir), batch_records=3, topic="__share_group_state")
    snapshot_to_segments(str(cluster / "offsets"), str(data_dir))
    result = run_share(spark, [str(data_dir)], str(tmp_path / "out"), load_settings())
    assert result.report.input_format == "segments"
    assert result.report.records_skipped == CLUSTER and result.report.reconciles
    assert result.report.quarantined == shared[0].report.quarantined
    assert _batches_by_topic_id(tmp_path / "out") == _batches_by_topic_id(shared[1])
    # The record-by-record route reads the segments' copy states too (it once failed on them).
    by_record = run_share(spark, [str(data_dir)], str(tmp_path / "by-record"), load_settings(fast_path=False))
    assert by_record.report.reconciles and by_record.report.records_skipped == CLUSTER
    assert _batches_by_topic_id(tmp_path / "by-record") == _batches_by_topic_id(shared[1])
    decoded = run_decode(spark, [str(data_dir)], str(tmp_path / "decoded"), load_settings())
    assert decoded.records_skipped == result.report.records_read - CLUSTER
    assert decoded.skipped_by_reason == {"other topic": decoded.records_skipped}


def test_generated_share_groups_the_assignor_cannot_assign_end_with_findings_and_every_table(spark, tmp_path):
    """`generate --format share-state` with its cluster's groups once died with ShareAssignorError after
    some share tables were committed and before share_groups, share_findings and runs (Kafka 4.1's
    assignor: its round-robin runs out of members on these groups)."""

    generate_dump(str(tmp_path / "offsets"), 2_000, seed=1, partitions=10)
    generate_share_state(str(tmp_path / "state"), 6_000, seed=1, world_records=2_000)
    output = tmp_path / "out"
    settings = load_settings(kafka_version="4.1")
    result = run_share(
        spark, [str(tmp_path / "state")], str(output), settings, groups_inputs=[str(tmp_path / "offsets")]
    )
    assert any(f["kind"] == "ASSIGNMENT_NOT_COMPUTED" for f in rows(output, "share_findings"))
    (run,) = rows(output, "runs")
    assert run["run_id"] == result.report.run_id
    assert {name for name, _ in run["table_versions"]} >= {"share_groups", "share_findings", "share_partitions"}


def _damaged_share_dump(root) -> str:
    """A generated dump plus records the generator never writes: another topic's record, a start offset
    moving backwards (left to the exact replay), a batch in state 1, a refused batch, a 4.0 snapshot, a
    tombstone and an update after it."""
    import pyarrow.parquet as pq

    from offset_audit.generator.writers import SNAPSHOT_SCHEMA
    from offset_audit.layouts.encoder import encode_value
    from offset_audit.layouts.spec import share_state_layouts

    path = root / "damaged"
    generate_share_state(str(path), 4_000, seed=5, world_records=CLUSTER, corrupt=3)
    table = pq.read_table(path / "part-00000.parquet")
    layouts = share_state_layouts()
    keys = {}
    for key, partition in zip(table["key"].to_pylist(), table["partition"].to_pylist(), strict=True):
        keys.setdefault(key[2:], partition)
    (snapshot_key, update_key), *_ = [((b"\x00\x00" + k), (b"\x00\x01" + k)) for k in keys]
    (other_key, _), *_ = [((b"\x00\x00" + k), None) for k in list(keys)[1:]]
    partition, other_partition = keys[snapshot_key[2:]], keys[other_key[2:]]

    def update(start, *batches):
        value = {"SnapshotEpoch": 1, "LeaderEpoch": 2, "StartOffset": start, "StateBatches": list(batches)}
        return encode_value(layouts[1], 0, value, era="4.1+")

    def batch(first, last, state, count):
        return {"FirstOffset": first, "LastOffset": last, "DeliveryState": state, "DeliveryCount": count}

    snapshot_40 = {"SnapshotEpoch": 7, "StateEpoch": 1, "LeaderEpoch": 1, "StartOffset": 0, "StateBatches": []}
    extra = [
        (update_key, update(10**9, batch(10**9, 10**9 + 4, 1, 1)), partition, "__share_group_state"),
        (update_key, update(5, batch(4, 3, 0, 1)), partition, "__share_group_state"),  # refused batch
        (update_key, update(100), partition, "__share_group_state"),  # backwards
        (snapshot_key, encode_value(layouts[0], 0, snapshot_40, era="4.0"), other_partition, "__share_group_state"),
        (other_key, None, other_partition, "__share_group_state"),
        (other_key, update(3, batch(3, 9, 2, 1)), other_partition, "__share_group_state"),
        (other_key, update(3), other_partition, "another-topic"),
    ]
    next_offset = {p: max(o for o, q in zip(table["offset"].to_pylist(), table["partition"].to_pylist(), strict=True)
                          if q == p) + 1 for p in (partition, other_partition)}  # fmt: skip
    rows = {name: [] for name in ("key", "value", "topic", "partition", "offset")}
    for key, value, log_partition, topic in extra:
        for name, item in zip(rows, (key, value, topic, log_partition, next_offset[log_partition]), strict=True):
            rows[name].append(item)
        next_offset[log_partition] += 1
    n = len(extra)
    added = {**rows, "timestamp": [table["timestamp"][0].as_py()] * n, "timestampType": [0] * n}
    pq.write_table(pa.table(added, schema=SNAPSHOT_SCHEMA), path / "part-00001.parquet")
    return str(path)


def _check_runs_row(dump: str, output) -> None:
    """The runs row against the dump, counted here from the raw records: every count of the row."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from offset_audit.outputs.share_tables import SHARE_TABLES

    raw = pq.read_table(dump)
    mine = pc.equal(raw["topic"], "__share_group_state")
    (run,) = rows(output, "runs")
    assert run["command"] == "share" and run["records_read"] == raw.num_rows
    assert run["records_skipped"] == raw.num_rows - pc.sum(mine).as_py() == 1
    assert dict(run["skipped_by_reason"]) == {"other topic": 1}
    quarantine = rows(output, "quarantine")
    assert run["quarantined"] == len(quarantine) and run["other_records"] == 0
    assert run["bytes_skipped"] == sum(q["skipped_bytes"] or 0 for q in quarantine)
    # Tombstones: the share topic's null values, less any the quarantine holds (none here).
    quarantined_tombstones = sum(q["value"] is None for q in quarantine)
    tombstones = pc.sum(pc.and_(mine, pc.is_null(raw["value"]))).as_py() - quarantined_tombstones
    assert run["tombstones"] == tombstones == 1
    by_type = run["decoded_by_type"]
    assert run["records_decoded"] == sum(t["records"] for t in by_type) == raw.num_rows - 1 - len(quarantine)
    assert sum(t["tombstones"] for t in by_type) == tombstones
    assert {t["record_name"] for t in by_type} == {"ShareSnapshot", "ShareUpdate"}
    (older,) = [t for t in by_type if t["layout_era"] == "4.0"]
    assert (older["record_name"], older["records"]) == ("ShareSnapshot", 1)
    assert run["records_read"] == run["records_skipped"] + run["records_decoded"] + run["quarantined"]
    table_rows = dict(run["table_rows"])
    assert set(table_rows) == set(SHARE_TABLES)
    for name in SHARE_TABLES:
        assert table_rows[name] == len(rows(output, name)), name


def test_the_folded_and_the_record_by_record_replay_write_the_same_tables(spark, tmp_path):
    from offset_audit.outputs.share_tables import SHARE_TABLES

    dump = _damaged_share_dump(tmp_path)
    tables = {}
    for fast_path in (True, False):
        output = tmp_path / f"out-{fast_path}"
        result = run_share(spark, [dump], str(output), load_settings(fast_path=fast_path))
        assert result.report.reconciles and result.report.records_skipped == 1
        _check_runs_row(dump, output)
        tables[fast_path] = {name: sorted(rows(output, name), key=repr) for name in SHARE_TABLES}
    assert tables[True]["share_problems"] and tables[True]["quarantine"]
    for name in SHARE_TABLES:
        assert tables[True][name] == tables[False][name], name
    (moved,) = [p for p in tables[True]["share_partitions"] if p["start_offset_moves_back"]]
    assert moved["start_offset_moves_back"] == 1  # a 4.0 snapshot comes after it: reported all the same
    assert any("back from 1000000000 to 100" in p["reason"] for p in tables[True]["share_problems"])
    (finding,) = [f for f in tables[True]["share_findings"] if f["kind"] == "START_OFFSET_MOVED_BACK"]
    assert (finding["group_id"], finding["partition"]) == (moved["group_id"], moved["partition"])
    # Judged as 4.4 (the default), such an update says the dump's broker is older; as 4.3 it is expected.
    (note,) = [n for n in result.report.format_notes if "start offset back" in n]
    assert result.report.format_notes[note] == 1 and "only brokers before 4.4" in note
    settings = load_settings(kafka_version="4.3")
    older = run_share(spark, [dump], str(tmp_path / "out-4.3"), settings)
    assert not [n for n in older.report.format_notes if "start offset back" in n]
    assert any(f["kind"] == "START_OFFSET_MOVED_BACK" for f in older.findings)


def test_the_one_pass_gives_each_task_a_stretch_of_the_input_so_the_fold_holds(spark, tmp_path):
    """Six pieces on two cores, each share-partition's records in every piece. Dealt by weight, a task
    held pieces 0, 2 and 4 and the other 1, 3 and 5: every share-partition's summaries interleaved and
    all of them went to the record-by-record replay (make bench at 5M records: 92 s instead of 2.6 s)."""
    import pyarrow.parquet as pq

    from offset_audit.inputs.dump import FileUnits, raw_source
    from offset_audit.inputs.opened import open_dump
    from offset_audit.runs import share_fast_replay
    from offset_audit.runs.share_state_reads import SHARE_STATE_TOPIC

    generate_share_state(str(tmp_path / "state"), 6_000, seed=1, world_records=2_000)
    table = pq.read_table(tmp_path / "state").sort_by([("offset", "ascending"), ("partition", "ascending")])
    folder = tmp_path / "pieces"
    folder.mkdir()
    step = -(-table.num_rows // 6)
    for piece in range(6):
        pq.write_table(table.slice(piece * step, step), folder / f"part-{piece}.parquet")
    dump = open_dump([str(folder)], load_settings(), share=True).on_topic(SHARE_STATE_TOPIC)
    source = raw_source(spark, dump)
    assert isinstance(source, FileUnits) and len(source.units) == 6

    def no_exact_replay():
        raise AssertionError("a share-partition went to the record-by-record replay")

    done = share_fast_replay.replay_dump(spark, source, no_exact_replay, 5)
    assert done.replayed_exactly == 0
    assert sum(n for key, n in done.counts.items() if key[0] == "share_state") == table.num_rows


def test_two_clusters_share_audits_in_one_folder_keep_their_tables_apart(spark, cluster, shared, tmp_path):
    """A fleet's folder (docs/fleet.md): the first cluster's share tables at DIR, another's under
    DIR/clusters/NAME, every row naming its cluster; the same state gives both the same rows."""
    _, alone = shared
    fleet = tmp_path / "fleet"
    for name in ("eu", "us"):
        run_share(spark, [str(cluster / "state")], str(fleet), load_settings(cluster=name),
                  groups_inputs=[str(cluster / "offsets")])  # fmt: skip
    for table in ("share_partitions", "share_groups", "share_findings", "share_cleanup"):
        eu, us = rows(fleet, table), rows(fleet / "clusters" / "us", table)
        assert {r["cluster"] for r in eu} == {"eu"} and {r["cluster"] for r in us} == {"us"}, table
        theirs = sorted(({k: v for k, v in r.items() if k != "cluster"} for r in rows(alone, table)), key=repr)
        for found in (eu, us):
            assert sorted(({k: v for k, v in r.items() if k != "cluster"} for r in found), key=repr) == theirs, table
    assert {(r["command"], r["cluster"]) for r in rows(fleet, "runs")} == {("share", "eu"), ("share", "us")}
    assert (fleet / "clusters" / "us" / "decoded" / "modern_group_records" / "_delta_log").is_dir()
