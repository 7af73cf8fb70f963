"""The Spark decode stage: one pass, projected into the output tables."""

from __future__ import annotations

import datetime as dt

import pytest
from chispa import assert_df_equality
from vector_files import all_vectors, hex_bytes

from offset_audit.decoding import decoder

RAW_SCHEMA = "source_partition int, source_offset bigint, record_timestamp_ms bigint, key binary, value binary"
TS_MS = 1_700_000_000_000


def raw_frame(spark, pairs):
    rows = [(3, i, TS_MS + i, key, value) for i, (key, value) in enumerate(pairs)]
    return spark.createDataFrame(rows, RAW_SCHEMA)


KEY = hex_bytes(["0001", "0008 6d792d67726f7570", "0006 6f7264657273", "00000000"])
V3 = hex_bytes(["0003", "000000000000002a", "00000005", "0000", "0000018bcfe56800"])
V1_NO_EXPIRE = hex_bytes(["0001", "000000000000002a", "0000", "0000018bcfe56800", "ffffffffffffffff"])
GROUP_KEY = hex_bytes(["0002", "0008 6d792d67726f7570"])
GROUP_V2_NO_STATE_TS = hex_bytes(
    ["0002", "0008 636f6e73756d6572", "00000008", "ffff", "ffff", "ffffffffffffffff", "00000000"]
)


@pytest.mark.parametrize("fast", [True, False], ids=["fast-path", "generic-only"])
def test_offset_commits_table(spark, fast):
    decoded = decoder.decode_records(
        raw_frame(spark, [(KEY, V3), (KEY, None), (KEY, V1_NO_EXPIRE)]), use_fast_path=fast
    )
    actual = decoder.offset_commits(decoded)
    commit = dt.datetime(2023, 11, 14, 22, 13, 20)
    stamp = dt.datetime(2023, 11, 14, 22, 13, 20)
    common = {"source_partition": 3, "key_type": 1, "group_id": "my-group", "topic": "orders", "partition": 0}
    expected = spark.createDataFrame(
        [
            dict(
                **common,
                source_offset=0,
                record_timestamp=stamp,
                record_timestamp_ms=TS_MS,
                is_tombstone=False,
                value_version=3,
                committed_offset=42,
                leader_epoch=5,
                metadata="",
                commit_timestamp=commit,
                commit_timestamp_ms=1_700_000_000_000,
                expire_timestamp=None,
                expire_timestamp_ms=None,
                topic_id=None,
                unknown_tagged_fields=None,
            ),
            dict(
                **common,
                source_offset=1,
                record_timestamp=stamp + dt.timedelta(milliseconds=1),
                record_timestamp_ms=TS_MS + 1,
                is_tombstone=True,
                value_version=None,
                committed_offset=None,
                leader_epoch=None,
                metadata=None,
                commit_timestamp=None,
                commit_timestamp_ms=None,
                expire_timestamp=None,
                expire_timestamp_ms=None,
                topic_id=None,
                unknown_tagged_fields=None,
            ),
            dict(
                **common,
                source_offset=2,
                record_timestamp=stamp + dt.timedelta(milliseconds=2),
                record_timestamp_ms=TS_MS + 2,
                is_tombstone=False,
                value_version=1,
                committed_offset=42,
                leader_epoch=None,
                metadata="",
                commit_timestamp=commit,
                commit_timestamp_ms=1_700_000_000_000,
                expire_timestamp=None,
                expire_timestamp_ms=None,
                topic_id=None,
                unknown_tagged_fields=None,
            ),
        ],
        actual.schema,
    )
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def test_sentinel_timestamps_become_null(spark):
    decoded = decoder.decode_records(raw_frame(spark, [(GROUP_KEY, GROUP_V2_NO_STATE_TS)]))
    row = decoder.group_metadata(decoded).collect()[0]
    assert row.current_state_timestamp is None and row.current_state_timestamp_ms is None
    assert row.protocol_type == "consumer" and row.member_count == 0


V3_FAR_FUTURE = hex_bytes(["0003", "000000000000002a", "00000005", "0000", "3fffffffffffffff"])
V1_EXTREMES = hex_bytes(["0001", "000000000000002a", "0000", "c000000000000000", "7fffffffffffffff"])
GROUP_V3_FAR_STATE = hex_bytes(
    ["0003", "0008 636f6e73756d6572", "00000008", "ffff", "ffff", "7ffffffffffffff0", "00000000"]
)


@pytest.mark.parametrize("fast", [True, False], ids=["fast-path", "generic-only"])
def test_times_no_date_can_show_are_kept_in_milliseconds_and_never_become_wrong_dates(spark, fast):
    """2^62-1 ms once came out as 1969-12-31 (int64 overflow of ms * 1000)."""
    raw = spark.createDataFrame(
        [
            (3, 0, 2**62, KEY, V3_FAR_FUTURE),
            (3, 1, -(2**62), KEY, V1_EXTREMES),
            (3, 2, 2**63 - 1, GROUP_KEY, GROUP_V3_FAR_STATE),
        ],
        RAW_SCHEMA,
    )
    decoded = decoder.decode_records(raw, use_fast_path=fast)
    commits = decoder.offset_commits(decoded).orderBy("source_offset").collect()
    assert [(c.commit_timestamp, c.commit_timestamp_ms) for c in commits] == [(None, 2**62 - 1), (None, -(2**62))]
    assert [(c.expire_timestamp, c.expire_timestamp_ms) for c in commits] == [(None, None), (None, 2**63 - 1)]
    assert [(c.record_timestamp, c.record_timestamp_ms) for c in commits] == [(None, 2**62), (None, -(2**62))]
    group = decoder.group_metadata(decoded).collect()[0]
    assert (group.current_state_timestamp, group.current_state_timestamp_ms) == (None, 2**63 - 16)
    assert (group.record_timestamp, group.record_timestamp_ms) == (None, 2**63 - 1)


def test_tables_have_their_declared_schemas(spark):
    from offset_audit.layouts.tables import table_schema

    decoded = decoder.decode_records(raw_frame(spark, [(KEY, V3)]))
    for name, build in decoder.TABLE_BUILDERS.items():
        frame = build(decoded)
        assert [f.name for f in frame.schema] == table_schema(name).column_names(), name
        assert [f.dataType for f in frame.schema] == [f.dataType for f in table_schema(name).struct()], name


def test_every_vector_lands_in_exactly_one_table_and_counts_reconcile(spark):
    vectors = all_vectors()
    decoded = decoder.decode_records(raw_frame(spark, [(v.key, v.value) for v in vectors])).cache()
    per_table = {name: build(decoded).count() for name, build in decoder.TABLE_BUILDERS.items()}
    expected = {
        "offset_commits": sum(v.record_class == "offset_commit" for v in vectors),
        "group_metadata": sum(v.record_class == "group_metadata" for v in vectors),
        "modern_group_records": sum(v.record_class == "modern" for v in vectors),
        "other_records": sum(v.record_class == "other" for v in vectors),
        "quarantine": sum(v.record_class == "quarantine" for v in vectors),
    }
    # Members are counted from the decode itself: not every group vector lists its members.
    members = decoder.group_metadata(decoded).where("not is_tombstone").selectExpr("sum(member_count) n")
    expected["group_members"] = members.collect()[0].n
    assert per_table == expected
    counted = sum(r.records for r in decoder.decode_counts(decoded).collect())
    assert decoder.decode_counts(decoded).where("record_class = 'skipped'").count() == 0
    assert counted == len(vectors)


def test_quarantine_rows_carry_source_coordinates(spark):
    decoded = decoder.decode_records(raw_frame(spark, [(KEY, V3), (KEY, b"\x00\x09")]))
    row = decoder.quarantine(decoded).collect()[0]
    assert (row.source_partition, row.source_offset) == (3, 1)
    assert row.record_type == 1 and row.value_version == 9
    assert "unknown value version 9" in row.reason
    assert bytes(row.key) == KEY and bytes(row.value) == b"\x00\x09"


def test_members_are_exploded_with_their_group_coordinates(spark):
    from vector_files import load

    vector = next(v for v in load("group_metadata") if v.name.startswith("v0 value"))
    decoded = decoder.decode_records(raw_frame(spark, [(KEY, V3), (vector.key, vector.value)]))
    member = decoder.group_members(decoded).collect()[0]
    assert (member.group_id, member.source_offset, member.member_id) == ("my-group", 1, "c-1")
    assert member.subscribed_topics == ["orders"] and member.broker_subscribed_topics == ["orders"]
    assert [(p.topic, p.partitions) for p in member.assigned_partitions] == [("orders", [0, 1])]


@pytest.mark.parametrize("fast", [True, False], ids=["fast-path", "generic-only"])
def test_each_commit_is_counted_under_the_layout_era_that_read_it(spark, fast):
    """A v4 value with a tag 0 that is no topicId is read with the 3.5-4.0 layout, beside 4.1's own."""
    pre_4_1 = hex_bytes(["0004", "000000000000002a", "00000005", "01", "0000018bcfe56800", "01", "00", "00"])
    with_id = hex_bytes(["0004", "000000000000002a", "00000005", "01", "0000018bcfe56800", "01", "00", "10", "00" * 16])
    decoded = decoder.decode_records(
        raw_frame(spark, [(KEY, pre_4_1), (KEY, with_id), (KEY, None)]), use_fast_path=fast
    )
    counts = {(r.layout_era, r.is_tombstone): r.records for r in decoder.decode_counts(decoded).collect()}
    assert counts == {("3.5-4.0", False): 1, ("0.9.0+", False): 1, (None, True): 1}
    tags = [r.unknown_tagged_fields for r in decoder.offset_commits(decoded).orderBy("source_offset").collect()]
    assert [None if t is None else [(x.tag, bytes(x.data)) for x in t] for t in tags] == [[(0, b"")], None, None]
