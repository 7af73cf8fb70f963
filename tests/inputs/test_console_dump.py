"""kafka-console-consumer formatter output back to records: the Scala line formatters and the Java JSON
formatters of 3.9, 4.0 and 4.1+, whose records arrive glued together with no separator. Each row's
bytes are checked against hand-written bytes and through the project's decoder. Fixtures and where
their strings come from: tests/textdumps/README.md."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from repo_paths import TEXT_DUMPS

from offset_audit.decoding.records import decode_record
from offset_audit.inputs.log_records import LOG_RECORD_SCHEMA
from offset_audit.inputs.textdumps import console as C
from offset_audit.inputs.textdumps import json_stream
from offset_audit.inputs.textdumps.console import looks_like_console_dump, read_console_dump
from offset_audit.inputs.textdumps.dump_log import looks_like_dump_log
from offset_audit.layouts.codec import RecordCodec
from offset_audit.layouts.spec import record_layouts

FIXTURES = TEXT_DUMPS
CODEC = RecordCodec(record_layouts())

# Key type 0 and 1 of Kafka's formatter tests: group "group-id", topic "foo", partition 1.
GROUP_ID_FOO_1 = "0008 67726f75702d6964 0003 666f6f 00000001"


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def read_rows(name_or_path: str | Path, **kwargs) -> list[dict]:
    path = FIXTURES / name_or_path if isinstance(name_or_path, str) else name_or_path
    return [row for batch in read_console_dump(str(path), **kwargs) for row in batch.to_pylist()]


def decoded(row: dict) -> dict:
    return decode_record(CODEC, row["key"], row["value"])


def test_every_row_says_what_the_console_format_cannot_tell():
    rows = read_rows("console_json_4_x.txt", partition=17)
    assert [row["source_offset"] for row in rows] == list(range(len(rows)))  # ordinals, in file order
    for row in rows:
        assert row["source_partition"] == 17 and row["record_timestamp_ms"] is None
        assert (row["producer_id"], row["producer_epoch"], row["is_transactional"]) == (-1, -1, False)
        assert row["source_file"].endswith("console_json_4_x.txt")
        assert (row["source_note"] is None) == (row["source_error"] is not None)
        if row["source_note"]:
            assert row["source_note"].startswith(C.NOTE_CONSOLE)
    assert read_rows("console_json_4_x.txt")[0]["source_partition"] is None


# Scala formatters ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scala_offsets() -> list[dict]:
    return read_rows("console_scala_offsets.txt")


def test_scala_commit_with_leader_epoch_is_v3(scala_offsets):
    row = scala_offsets[0]
    # The reference's v3 example (1.3): offset 42, leader epoch 5, metadata "", commit 1700000000000.
    assert row["key"] == h("0001 0008 6d792d67726f7570 0006 6f7264657273 00000000")
    assert row["value"] == h("0003 000000000000002a 00000005 0000 0000018bcfe56800")
    assert row["source_note"] == C.NOTE_SCALA_COMMIT
    assert row["source_position"] == 1


def test_scala_commit_without_epoch_is_v1_and_keeps_big_offsets(scala_offsets):
    row = scala_offsets[1]
    assert row["value"] == h("0001 0020000000000001 0004 636b7074 0000018bcfe56801 ffffffffffffffff")
    commit = decoded(row)["offset_commit"]
    assert (commit["committed_offset"], commit["metadata"], commit["commit_timestamp_ms"]) == (
        9007199254740993,
        "ckpt",
        1_700_000_000_001,
    )


def test_scala_explicit_expiry_and_metadata_with_commas_and_parentheses(scala_offsets):
    commit = decoded(scala_offsets[2])["offset_commit"]
    assert (commit["value_version"], commit["expire_timestamp_ms"], commit["metadata"]) == (
        1,
        1_500_086_400_000,
        "a, b=c)",
    )


def test_scala_tombstone(scala_offsets):
    row = scala_offsets[3]
    assert row["key"] == h("0001 0008 6d792d67726f7570 0006 6f7264657273 00000000") and row["value"] is None


def test_scala_group_with_a_comma_and_unicode(scala_offsets):
    commit = decoded(scala_offsets[4])["offset_commit"]
    assert (commit["group_id"], commit["topic"], commit["partition"]) == ("grüppe-日本,my", "topic", 3)


def test_scala_impossible_and_foreign_lines_are_error_rows(scala_offsets):
    assert "no value version holds both" in scala_offsets[5]["source_error"]
    assert scala_offsets[6]["source_error"].startswith("unparseable line 7: [2024-05-01")
    assert len(scala_offsets) == 7  # "Processed a total of 6 messages" is not a record


@pytest.fixture(scope="module")
def scala_groups() -> list[dict]:
    return read_rows("console_scala_groups.txt")


def test_scala_group_line_keeps_members_but_not_their_subscriptions(scala_groups):
    row = scala_groups[0]
    assert row["source_note"] == C.NOTE_SCALA_GROUP
    group = decoded(row)["group_metadata"]
    assert (group["value_version"], group["protocol_type"], group["protocol"], group["generation"]) == (
        1,
        "consumer",
        "range",
        7,
    )
    assert (group["leader"], group["current_state_timestamp_ms"]) == (None, None)
    (member,) = group["members"]
    assert (member["member_id"], member["client_id"], member["client_host"]) == ("c-1", "cl", "/10.0.0.1")
    assert (member["session_timeout_ms"], member["rebalance_timeout_ms"]) == (45000, 300000)
    assert member["broker_subscribed_topics"] is None  # unknown, never "subscribed to nothing"
    # v1: protocolType, generation, protocol, leader null, one member with empty subscription/assignment.
    assert row["value"] == h(
        "0001 0008 636f6e73756d6572 00000007 0005 72616e6765 ffff 00000001"
        "0003 632d31 0002 636c 0009 2f31302e302e302e31 000493e0 0000afc8 00000000 00000000"
    )


def test_scala_2_12_map_with_a_static_member_is_v3(scala_groups):
    group = decoded(scala_groups[1])["group_metadata"]
    assert (group["value_version"], group["protocol"], group["member_count"]) == (3, "cooperative-sticky", 2)
    assert [m["group_instance_id"] for m in group["members"]] == ["pod-0", None]


def test_scala_empty_and_simple_groups(scala_groups):
    empty, simple = decoded(scala_groups[2])["group_metadata"], decoded(scala_groups[3])["group_metadata"]
    assert (empty["protocol_type"], empty["member_count"], empty["protocol"]) == ("consumer", 0, None)
    assert simple["protocol_type"] is None  # protocolType=None is stored as ""
    assert scala_groups[3]["value"][2:4] == h("0000")


def test_scala_tombstones_in_a_group_formatter_dump_are_group_tombstones(scala_groups):
    # `[a,b,1]::NULL` could be an offset tombstone, but this file comes from the group formatter.
    assert scala_groups[4]["key"] == h("0002 0007 5b612c622c315d") and scala_groups[4]["value"] is None
    assert scala_groups[5]["key"] == h("0002 0009 6f6c642d67726f7570")


# Java formatters -----------------------------------------------------------------------------------


def test_3_9_offsets_formatter_strings_from_kafkas_test():
    rows = read_rows("console_json_3_9_offsets.txt")
    assert len(rows) == 11
    assert "record type 10" in rows[0]["source_error"]
    for row, version in zip(rows[1:6], range(5), strict=True):
        assert row["key"] == h("0000" + GROUP_ID_FOO_1)  # key type 0, as the test writes it
        commit = decoded(row)["offset_commit"]
        assert (commit["value_version"], commit["committed_offset"], commit["commit_timestamp_ms"]) == (
            version,
            100,
            1234,
        )
        assert commit["metadata"] == "metadata"
        assert commit["leader_epoch"] == (10 if version >= 3 else None)
    assert rows[1]["value"] == h("0000 0000000000000064 0008 6d65746164617461 00000000000004d2")
    assert rows[5]["value"] == h("0004 0000000000000064 0000000a 09 6d65746164617461 00000000000004d2 00")
    assert "record type 5" in rows[6]["source_error"]
    assert "value version 5" in rows[7]["source_error"]
    assert rows[8]["value"] is None and decoded(rows[8])["offset_commit"]["is_tombstone"]
    assert "no key" in rows[9]["source_error"] and "no key" in rows[10]["source_error"]


def test_3_9_group_formatter_strings_from_kafkas_test():
    rows = read_rows("console_json_3_9_groups.txt")
    assert [decoded(r)["value_version"] for r in rows[:5]] == [0, 1, 2, 3, 4]
    for row in rows[:5]:
        assert row["key"] == h("0002 0008 67726f75702d6964")
        member = decoded(row)["group_metadata"]["members"][0]
        assert member["subscription"] == h("0001")  # "AAE=": too short to parse, kept as bytes
        assert member["broker_subscribed_topics"] is None
    v0 = rows[0]["value"]
    assert v0 == h(
        "0000 0008 636f6e73756d6572 00000001 0005 72616e6765 0006 6c6561646572 00000001"
        "0008 6d656d6265722d31 0008 636c69656e742d31 0006 686f73742d31 000005dc 00000002 0001 00000002 0102"
    )
    v3 = decoded(rows[3])["group_metadata"]
    assert (v3["current_state_timestamp_ms"], v3["members"][0]["group_instance_id"]) == (1234, "group-instance-1")
    assert rows[4]["value"][:2] == h("0004") and decoded(rows[4])["group_metadata"]["leader"] == "leader"
    assert rows[5]["value"] is None


def test_4_x_strings_from_kafkas_tests():
    rows = read_rows("console_json_4_x.txt")
    assert len(rows) == 9  # "Processed a total of 9 messages" glued after the last record is not one
    assert decoded(rows[0])["offset_commit"]["key_type"] == 0
    assert "value version 5" in rows[2]["source_error"]
    v1 = decoded(rows[3])["offset_commit"]
    assert (v1["key_type"], v1["value_version"], v1["expire_timestamp_ms"]) == (1, 1, 5678)
    assert rows[4]["value"] == h(
        "0004 0000000000000064 0000000a 09 6d65746164617461 00000000000004d2 01 00 10 30a5f1d5f224432d89f635c784af26d7"
    )
    assert decoded(rows[4])["offset_commit"]["topic_id"] == "30a5f1d5-f224-432d-89f6-35c784af26d7"
    assert rows[5]["key"] == h("0001" + GROUP_ID_FOO_1) and rows[5]["value"] is None
    assert decoded(rows[6])["offset_commit"]["committed_offset"] == 9007199254740993
    unicode_key = decoded(rows[7])["offset_commit"]
    assert unicode_key["group_id"] == "grüppe-日本"
    assert rows[7]["key"] == h("0001 000e") + "grüppe-日本".encode() + h("0006 6f7264657273 00000000")
    assert decoded(rows[8])["group_metadata"]["members"][0]["assignment"] == h("0102")


# Damaged streams ---------------------------------------------------------------------------------


def test_stream_cut_mid_object_keeps_what_came_before(tmp_path):
    text = (FIXTURES / "console_json_4_x.txt").read_text()
    cut = text[: text.index('{"key":{"type":1,"data":{"group":"legacy-app"') + 40]
    path = tmp_path / "cut.txt"
    path.write_text(cut)
    rows = read_rows(path)
    assert len(rows) == 7
    assert [r["source_error"] is None for r in rows[:6]] == [True, True, False, True, True, True]
    assert rows[6]["source_error"].startswith("record at line 1 is cut off at the end of the file")


def test_garbage_between_objects_costs_only_itself(tmp_path):
    good = '{"key":{"type":1,"data":{"group":"g","topic":"t","partition":0}},"value":null}'
    path = tmp_path / "garbage.txt"
    path.write_text(good + '{"key":{"type":1,"data":{"gro' + good + "\nnot json at all\n" + good + "{}")
    rows = read_rows(path)
    assert [r["source_error"] is None for r in rows] == [True, False, True, False, True, False]
    assert rows[1]["source_error"].startswith("unreadable JSON at line 1")
    assert rows[3]["source_error"] == "unparseable line 2: not json at all"
    assert rows[3]["source_position"] == 2 and rows[4]["source_position"] == 3
    assert rows[0]["key"] == h("00 01 00 01 67 00 01 74 00 00 00 00")
    assert "{}" in rows[5]["source_error"]


def test_objects_split_across_chunks_are_read_whole():
    text = (FIXTURES / "console_json_4_x.txt").read_text()
    whole = list(json_stream.pieces(io.StringIO(text)))
    for chunk_chars in (1, 7, 64):
        assert list(json_stream.pieces(io.StringIO(text), chunk_chars=chunk_chars)) == whole
    assert [p.kind for p in whole] == [json_stream.JSON_OBJECT] * 9 + [json_stream.TEXT_LINE]


def test_objects_one_per_line_or_pretty_printed_are_read_too():
    obj = '{"key":{"type":1,"data":{"group":"g","topic":"t","partition":0}},\n "value":null}'
    pieces = list(json_stream.pieces(io.StringIO(obj + "\n" + obj + "\n")))
    assert [(p.kind, p.line) for p in pieces] == [(json_stream.JSON_OBJECT, 1), (json_stream.JSON_OBJECT, 3)]


def test_stream_is_read_in_chunks_not_all_at_once():
    record = '{"key":{"type":1,"data":{"group":"g","topic":"t","partition":0}},"value":null}'

    class Endless:
        """A stream with no end: reading it whole would never return."""

        def read(self, size: int) -> str:
            return record * (size // len(record) + 1)

    pieces = json_stream.pieces(Endless(), chunk_chars=1024)
    assert [next(pieces).kind for _ in range(100)] == [json_stream.JSON_OBJECT] * 100


def test_batches_hold_at_most_batch_rows():
    batches = list(read_console_dump(str(FIXTURES / "console_json_3_9_offsets.txt"), batch_rows=3))
    assert [b.num_rows for b in batches] == [3, 3, 3, 2]
    assert all(b.schema.equals(LOG_RECORD_SCHEMA) for b in batches)


def test_format_detection():
    for name in ("console_json_3_9_offsets.txt", "console_json_4_x.txt", "console_scala_offsets.txt"):
        head = (FIXTURES / name).read_text()[:4096]
        assert looks_like_console_dump(head) and not looks_like_dump_log(head), name
    assert looks_like_console_dump((FIXTURES / "console_scala_groups.txt").read_text())
    assert not looks_like_console_dump((FIXTURES / "dump_log_3_8.txt").read_text()[:4096])


def test_an_internal_error_in_the_reader_is_a_crash_not_a_quarantine_row(monkeypatch):
    """Only what a damaged dump can make wrong becomes a row with an error; a bug in the reader must be
    seen, not counted as bad input."""

    def broken(self, line, value):
        raise KeyError("a bug in the reader")

    monkeypatch.setattr(C.ConsoleReader, "json_record", broken)
    with pytest.raises(KeyError, match="a bug in the reader"):
        read_rows("console_json_4_x.txt")


@pytest.mark.parametrize("partition", [None, 7])
def test_a_stable_groups_subscription_counts_with_or_without_partition(spark, tmp_path, partition):
    """Console text has no partitions: a group's members must still meet their metadata record (joined
    null-safely), or a Stable group's subscription reads as unknown. Kafka 4.3.1's own output."""
    from click.testing import CliRunner
    from live_services import table_rows

    from offset_audit.cli.main import main

    given = [] if partition is None else ["--partition", str(partition)]
    args = ["--input", str(TEXT_DUMPS / "console_json_4_3_live.txt"), "--input-format", "console", *given]
    audit = CliRunner().invoke(main, ["audit", *args, "--output", str(tmp_path / "a"), "--as-of", "now", "--quiet"])
    assert audit.exit_code == 0, audit.output
    verdicts = table_rows(str(tmp_path / "a" / "partition_verdicts")).to_pylist()
    assert [(v["group_id"], v["topic"], v["rule"]) for v in verdicts] == [
        ("classic-stable", "payments", "SUBSCRIBED_TOPIC")
    ]
    history = CliRunner().invoke(main, ["history", *args, "--output", str(tmp_path / "h"), "--quiet"])
    assert history.exit_code == 0, history.output
    events = table_rows(str(tmp_path / "h" / "offset_history")).to_pylist()
    states = [(e["event"], e["member_count"], e["source_partition"]) for e in events if e["event"].startswith("GROUP_")]
    assert states == [("GROUP_EMPTY", 0, partition), ("GROUP_STABLE", 1, partition)]
