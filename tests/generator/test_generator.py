"""The generated dump: deterministic, placed by Kafka's group hash, covering every record type."""

from __future__ import annotations

import pyarrow.parquet as pq

from offset_audit.coordinator.partitioner import java_string_hash, partition_for
from offset_audit.decoding import records
from offset_audit.generator.demo_dump import generate_dump
from offset_audit.layouts.codec import RecordCodec


def test_java_string_hash_matches_java():
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE: Utils.abs maps it to 0
    assert partition_for("polygenelubricants", 50) == 0


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    generate_dump(str(tmp_path / "a"), 2000, seed=11)
    generate_dump(str(tmp_path / "b"), 2000, seed=11)
    generate_dump(str(tmp_path / "c"), 2000, seed=12)
    a, b, c = (pq.read_table(tmp_path / x) for x in "abc")
    assert a.equals(b)
    assert not a.equals(c)


def test_a_topic_scale_widens_the_same_topics_and_the_groups_hold_that_many_more_offsets(tmp_path):
    """--topic-scale multiplies each topic's partitions and changes nothing else of the world: the same
    groups read the same topics, and with commits enough the live offsets grow by about the scale."""
    from offset_audit.generator.world import World

    plain, wide = World(20_000, 3, 10), World(20_000, 3, 10, topic_scale=5)
    assert wide.topics == {topic: 5 * count for topic, count in plain.topics.items()}
    assert [(g.group_id, sorted(g.topics)) for g in wide.groups] == [
        (g.group_id, sorted(g.topics)) for g in plain.groups
    ]

    def live_offsets(scale: int) -> int:
        generate_dump(str(tmp_path / str(scale)), 60_000, seed=3, topic_scale=scale)
        codec, keys = RecordCodec(), set()
        for row in pq.read_table(tmp_path / str(scale), columns=["key"]).to_pylist():
            decoded = records.decode_record(codec, row["key"], None)
            commit = decoded.get("offset_commit")
            if commit:
                keys.add((commit["group_id"], commit["topic"], commit["partition"]))
        return len(keys)

    assert live_offsets(5) > 3 * live_offsets(1)


def kafka_partition(spark, group_id: str, partitions: int) -> int:
    """What the broker computes, asked of the JVM: Utils.abs(groupId.hashCode()) % partitions, where
    Utils.abs maps Integer.MIN_VALUE to 0 (GroupCoordinator partitionFor)."""
    hash_code = spark.sparkContext._jvm.java.util.Objects.hashCode(group_id)
    return (0 if hash_code == -(2**31) else abs(hash_code)) % partitions


def test_every_group_sits_in_the_partition_java_hashes_it_to_with_growing_offsets(spark, tmp_path):
    generate_dump(str(tmp_path), 3000, seed=1, partitions=7)
    codec = RecordCodec()
    table = pq.read_table(tmp_path).to_pylist()
    last = {}
    groups = set()
    for row in table:
        decoded = records.decode_record(codec, row["key"], row["value"])
        payload = decoded.get(decoded["record_class"], {})
        group = payload.get("group_id")
        if group is not None:
            groups.add(group)
            assert row["partition"] == kafka_partition(spark, group, 7), group
        assert row["offset"] > last.get(row["partition"], -1)
        last[row["partition"]] = row["offset"]
    assert len(groups) > 10 and len({kafka_partition(spark, g, 7) for g in groups}) > 3


def test_partition_for_is_java_string_hash_code_for_every_kind_of_name(spark):
    """UTF-16 code units, surrogate pairs, and Integer.MIN_VALUE (which Utils.abs maps to 0)."""
    names = ["", "a", "console-consumer-12345", "Grüße", "组-消费者", "emoji-\U0001f600-group", "polygenelubricants"]
    for name in names:
        assert java_string_hash(name) == spark.sparkContext._jvm.java.util.Objects.hashCode(name), name
        assert partition_for(name, 50) == kafka_partition(spark, name, 50), name


def test_dump_covers_every_kind_of_record(tmp_path):
    generate_dump(str(tmp_path), 6000, seed=1, corrupt=8)
    codec = RecordCodec()
    seen_types, classes, versions = set(), set(), set()
    for row in pq.read_table(tmp_path).to_pylist():
        decoded = records.decode_record(codec, row["key"], row["value"])
        classes.add(decoded["record_class"])
        seen_types.add(decoded.get("key_type"))
        if decoded["record_class"] in (records.OFFSET_COMMIT, records.GROUP_METADATA):
            versions.add((decoded["key_type"], decoded["value_version"]))
    assert classes == set(records.RECORD_CLASSES)
    assert set(codec.layouts) <= seen_types
    assert {
        (0, 0),
        (1, 1),
        (1, 2),
        (1, 3),
        (1, 4),
        (2, 0),
        (2, 1),
        (2, 2),
        (2, 3),
        (2, 4),
        (1, None),
        (2, None),
    } <= versions


def folder_bytes(data_dir) -> dict[str, bytes]:
    return {f"{path.parent.name}/{path.name}": path.read_bytes() for path in sorted(data_dir.glob("*/*.log"))}


def test_the_stages_of_a_log_grow_as_a_brokers_segments_do(tmp_path):
    """Stage k of n holds the first records of each partition in the whole log's segments: the earlier
    files byte for byte, the last one a shorter copy of its file, cut after a whole batch, none rolled early."""
    from offset_audit.generator.writers import snapshot_to_segments

    generate_dump(str(tmp_path / "snapshot"), 2000, seed=5, partitions=3)
    args = {"batch_records": 3, "segment_bytes": 6000}
    whole = snapshot_to_segments(str(tmp_path / "snapshot"), str(tmp_path / "whole"), **args)
    full = folder_bytes(tmp_path / "whole")
    counts = []
    for k in range(1, 5):
        staged = snapshot_to_segments(str(tmp_path / "snapshot"), str(tmp_path / "staged"), stage=(k, 4), **args)
        counts.append(staged["records"])
        files = folder_bytes(tmp_path / "staged")
        assert set(files) <= set(full), k
        for partition in {name.split("/")[0] for name in files}:
            mine = sorted(name for name in files if name.startswith(f"{partition}/"))
            assert all(files[name] == full[name] for name in mine[:-1]), (k, partition)
            assert full[mine[-1]].startswith(files[mine[-1]]), (k, partition)
    assert files == full and counts[-1] == whole["records"] == 2000
    assert counts == sorted(counts) and 450 <= counts[0] <= 500  # a quarter, less each partition's split batch


def test_stages_are_asked_for_as_k_of_n_and_only_of_segments(tmp_path):
    from click.testing import CliRunner

    from offset_audit.cli.main import main

    for args, says in [
        (["--stage", "3/2"], "--stage takes K/N with 1 <= K <= N, as 2/5, not '3/2'"),
        (["--stage", "half"], "--stage takes K/N"),
        (["--format", "parquet", "--stage", "1/2"], "--stage and --segment-bytes go with --format segments"),
        (["--stage", "1/2", "--end-offsets", str(tmp_path / "e")], "give them without --stage"),
    ]:
        fmt = [] if "--format" in args else ["--format", "segments"]
        result = CliRunner().invoke(main, ["generate", "--output", str(tmp_path / "d"), "--records", "10", *fmt, *args])
        assert result.exit_code == 2 and says in result.output and result.output.count("\n") == 1, result.output
