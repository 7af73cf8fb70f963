"""kafka-dump-log text back to records: every fixture line's row, and its bytes checked three ways:
against bytes written out here by hand, through the project's decoder, and against the sizes the tool
printed. Fixtures and where their lines come from: tests/textdumps/README.md."""

from __future__ import annotations

import struct
import uuid
from pathlib import Path

import pytest
from repo_paths import TEXT_DUMPS
from vector_files import load

from offset_audit.decoding.records import decode_record
from offset_audit.inputs.log_records import LOG_RECORD_SCHEMA
from offset_audit.inputs.textdumps import dump_log as D
from offset_audit.inputs.textdumps import reencode
from offset_audit.inputs.textdumps.console import looks_like_console_dump
from offset_audit.inputs.textdumps.dump_log import looks_like_dump_log, read_dump_log
from offset_audit.layouts.codec import RecordCodec
from offset_audit.layouts.encoder import encode_key, encode_value
from offset_audit.layouts.spec import record_layouts

FIXTURES = TEXT_DUMPS
CODEC = RecordCodec(record_layouts())
CREATE_TIME = 1_700_000_000_000  # 0x18BCFE56800


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def read_rows(name_or_path: str | Path, **kwargs) -> list[dict]:
    path = FIXTURES / name_or_path if isinstance(name_or_path, str) else name_or_path
    return [row for batch in read_dump_log(str(path), **kwargs) for row in batch.to_pylist()]


def by_line(rows: list[dict]) -> dict[int, dict]:
    return {row["source_position"]: row for row in rows}


def decoded(row: dict) -> dict:
    return decode_record(CODEC, row["key"], row["value"])


@pytest.fixture(scope="module")
def legacy() -> dict[int, dict]:
    return by_line(read_rows("dump_log_3_7.txt"))


@pytest.fixture(scope="module")
def modern() -> dict[int, dict]:
    return by_line(read_rows("dump_log_3_8.txt"))


# Up to 3.7 ---------------------------------------------------------------------------------------


def test_legacy_commit_is_rebuilt_as_v1_with_the_create_time_as_commit_timestamp(legacy):
    row = legacy[4]
    assert row["source_partition"] == 7  # from the __consumer_offsets-7 folder in the Dumping header
    assert row["source_file"] == "/var/lib/kafka/data/__consumer_offsets-7/00000000000000000000.log"
    assert (row["source_offset"], row["record_timestamp_ms"]) == (0, CREATE_TIME)
    assert (row["producer_id"], row["producer_epoch"], row["is_transactional"], row["is_control"]) == (
        -1,
        -1,
        False,
        False,
    )
    assert row["source_error"] is None
    assert row["source_note"] == D.NOTE_LEGACY_COMMIT
    # Key type 1, "my-group", "orders", partition 0; value v1: offset 42, metadata "", commit, expire -1.
    assert row["key"] == h("0001 0008 6d792d67726f7570 0006 6f7264657273 00000000")
    assert row["value"] == h("0001 000000000000002a 0000 0000018bcfe56800 ffffffffffffffff")
    commit = decoded(row)["offset_commit"]
    assert (commit["group_id"], commit["topic"], commit["partition"]) == ("my-group", "orders", 0)
    assert (commit["value_version"], commit["committed_offset"], commit["metadata"]) == (1, 42, "")
    assert (commit["commit_timestamp_ms"], commit["expire_timestamp_ms"], commit["leader_epoch"]) == (
        CREATE_TIME,
        None,
        None,
    )


def test_legacy_metadata_runs_to_the_end_of_the_line_commas_and_all(legacy):
    row = legacy[5]
    assert row["value"] == h("0001 0000000000000007 0005 612c623d63 0000018bcfe56800 ffffffffffffffff")
    assert decoded(row)["offset_commit"]["metadata"] == "a,b=c"


def test_legacy_offset_above_2_53_and_a_v1_sized_value_is_flagged(legacy):
    row = legacy[7]
    commit = decoded(row)["offset_commit"]
    assert commit["committed_offset"] == 9007199254740993  # 2^53 + 1: no float on the way
    assert (commit["topic"], commit["partition"]) == ("clicks", 11)
    assert row["value"][2:10] == struct.pack(">q", 9007199254740993)
    # valueSize 28 = a stored v1 value: its expireTimestamp existed but was not printed.
    assert row["source_note"] == D.NOTE_LEGACY_COMMIT_V1


def test_legacy_group_keeps_members_and_assignments_but_not_subscriptions(legacy):
    row = legacy[9]
    assert row["key"] == h("0002 0008 6d792d67726f7570")
    assert row["source_note"] == "; ".join((D.NOTE_LEGACY_GROUP, D.NOTE_LEGACY_USER_DATA))
    # v0: protocolType, generation, protocol, leader (null), members; no currentStateTimestamp.
    assert row["value"][:2] == h("0000")
    group = decoded(row)["group_metadata"]
    assert (group["value_version"], group["protocol_type"], group["protocol"], group["generation"]) == (
        0,
        "consumer",
        "range",
        7,
    )
    assert (group["leader"], group["current_state_timestamp_ms"], group["member_count"]) == (None, None, 2)
    first, second = group["members"]
    assert (first["member_id"], first["client_id"], first["client_host"]) == ("c-1", "", "")
    assert first["assigned_partitions"] == [{"topic": "orders", "partitions": [0, 1]}]
    assert second["assigned_partitions"] == [
        {"topic": "orders", "partitions": [2]},
        {"topic": "my-topic", "partitions": [1]},  # a dash in the topic name: split at the last one
    ]
    assert second["assignment_user_data"] == h("1a2b")
    for member in (first, second):
        # Unknown, not "subscribed to nothing": the broker's parser fails on it as on any unreadable one.
        assert member["broker_subscribed_topics"] is None
        assert "subscription_error" in member


def test_legacy_group_assignment_bytes_are_consumer_protocol_v0(legacy):
    members_start = legacy[9]["value"]
    # c-1's assignment: int16 version 0, one topic "orders" with partitions 0 and 1, null user data.
    assignment = h("0000 00000001 0006 6f7264657273 00000002 00000000 00000001 ffffffff")
    assert assignment in members_start


def test_legacy_tombstones_have_keys_and_null_values(legacy):
    commit, group = legacy[10], legacy[11]
    assert commit["key"] == h("0001 0008 6d792d67726f7570 0006 6f7264657273 00000000")
    assert commit["value"] is None and commit["source_note"] is None
    assert decoded(commit)["offset_commit"]["is_tombstone"] is True
    assert group["key"] == h("0002 0009 6f6c642d67726f7570") and group["value"] is None
    assert decoded(group)["group_metadata"]["group_id"] == "old-group"


def test_legacy_empty_group_and_null_protocol(legacy):
    row = legacy[13]
    # v0: protocolType "consumer", generation 8, protocol null, leader null, no members.
    assert row["value"] == h("0000 0008 636f6e73756d6572 00000008 ffff ffff 00000000")
    group = decoded(row)["group_metadata"]
    assert (group["protocol"], group["member_count"]) == (None, 0)


def test_legacy_non_consumer_assignment_is_rebuilt_from_hex(legacy):
    row = legacy[14]
    member = decoded(row)["group_metadata"]["members"][0]
    assert member["protocol_type"] == "connect"
    # %X printed 010203 as 10203: the lost leading zero nibble comes back, lost zero bytes cannot.
    assert member["assignment"] == h("010203")
    assert D.NOTE_LEGACY_USER_DATA in row["source_note"]


def test_unknown_key_version_is_quarantined_not_dropped(legacy):
    row = legacy[15]
    assert row["key"] is None and row["value"] is None
    assert row["source_offset"] == 8
    assert "unknown::version=3" in row["source_error"]


def test_transactional_commit_and_its_commit_marker(legacy):
    commit, marker = legacy[17], legacy[19]
    assert (commit["producer_id"], commit["producer_epoch"], commit["is_transactional"]) == (4001, 2, True)
    assert commit["is_control"] is False
    assert decoded(commit)["offset_commit"]["committed_offset"] == 1000
    assert (marker["is_control"], marker["control_type"], marker["is_transactional"]) == (True, "COMMIT", True)
    assert marker["producer_id"] == 4001
    assert marker["key"] == h("0000 0001")  # version 0, type COMMIT
    assert marker["value"] == h("0000 0000000c")  # version 0, coordinatorEpoch 12
    assert marker["record_timestamp_ms"] == 1_700_000_006_000


def test_unicode_group_id_is_utf8_in_the_key(legacy):
    row = legacy[21]
    group = "grüppe-日本".encode()
    assert row["key"] == h("0001 000e") + group + h("0006 6f7264657273 00000000")
    assert decoded(row)["offset_commit"]["group_id"] == "grüppe-日本"
    assert D.NOTE_SIZE_MISMATCH not in row["source_note"]  # keySize 30 agrees


def test_garbage_trailing_bytes_and_a_line_cut_short_become_error_rows(legacy):
    garbage, trailing, cut = legacy[22], legacy[23], legacy[24]
    assert garbage["source_error"] == "unparseable line 22: this line is not kafka-dump-log output"
    assert garbage["source_offset"] is None and garbage["key"] is None
    assert "37 invalid bytes" in trailing["source_error"]
    # The file ends mid-line: the record's coordinates survive, its content does not.
    assert cut["source_offset"] == 12 and cut["key"] is None
    assert "partition=ord" in cut["source_error"]


def test_every_line_of_the_legacy_fixture_is_accounted_for(legacy):
    assert sorted(legacy) == [4, 5, 7, 9, 10, 11, 13, 14, 15, 17, 19, 21, 22, 23, 24]
    offsets = [row["source_offset"] for _, row in sorted(legacy.items()) if row["source_offset"] is not None]
    assert offsets == list(range(13))


# 3.8+ JSON ---------------------------------------------------------------------------------------


def test_json_v4_commit_is_byte_identical_to_the_real_record(modern):
    row = modern[4]
    assert row["source_partition"] == 12 and row["source_offset"] == 12345
    assert row["key"] == h("0001 0008 6d792d67726f7570 0006 6f7264657273 00000000")
    # franz-go#1105: a real Kafka 4.1 value (reference 1.3).
    assert row["value"] == h("0004 000000000021d4a8 ffffffff 01 0000019964f2d836 00")
    assert row["source_note"] is None


def test_json_v4_topic_id_goes_back_into_its_tagged_field(modern):
    row = modern[5]
    topic_id = uuid.UUID(bytes=h("30a5f1d5 f224 432d 89f6 35c784af26d7"))  # MKXx1fIkQy2J9jXHhK8m1w
    assert str(topic_id) == decoded(row)["offset_commit"]["topic_id"]
    assert row["value"] == (
        h("0004 0000000000000064 0000000a 09 6d65746164617461 00000000000004d2") + h("01 00 10") + topic_id.bytes
    )
    assert row["source_note"] is None  # 50 bytes, as valueSize says


def test_json_v1_keeps_its_explicit_expire_timestamp(modern):
    row = modern[7]
    assert row["value"] == h("0001 0000000000000064 0008 6d65746164617461 00000000000004d2 000000000000162e")
    assert decoded(row)["offset_commit"]["expire_timestamp_ms"] == 5678


def test_json_numbers_stay_integers_above_2_53(modern):
    assert decoded(modern[8])["offset_commit"]["committed_offset"] == 9007199254740993


def test_json_unicode_escapes_and_raw_utf8_give_the_same_key(modern, legacy):
    assert modern[9]["key"] == legacy[21]["key"]


def test_json_consumer_group_metadata_record_from_kafkas_test(modern):
    row = modern[11]
    assert row["key"] == h("0003 0005 67726f7570")
    assert row["value"] == h("0000 0000000a 00")  # v0, epoch 10, no tagged fields
    assert decoded(row)["modern"]["epoch"] == 10


def test_json_group_with_decoded_consumer_protocol_from_kafkas_test(modern):
    row = modern[12]
    assert row["source_note"] == D.NOTE_PROTOCOL_REBUILT
    group = decoded(row)["group_metadata"]
    assert (group["value_version"], group["generation"], group["leader"]) == (4, 10, "member")
    member = group["members"][0]
    assert (member["group_instance_id"], member["rebalance_timeout_ms"], member["session_timeout_ms"]) == (
        "instance",
        1000,
        100,
    )
    assert (member["subscription_version"], member["subscribed_topics"], member["rack_id"]) == (3, ["foo"], "rack")
    assert member["owned_partitions"] == [{"topic": "foo", "partitions": [0]}]
    assert member["broker_subscribed_topics"] == ["foo"]
    assert member["assigned_partitions"] == [{"topic": "foo", "partitions": [0]}]


def test_json_group_with_undecodable_protocol_keeps_the_exact_bytes(modern):
    row = modern[13]
    member = decoded(row)["group_metadata"]["members"][0]
    assert member["subscription"] == b"Subscription"
    assert member["assignment"] == b"Assignment"
    assert member["broker_subscribed_topics"] is None  # the broker cannot parse it either
    assert row["source_note"] is None


def test_json_tombstone_of_a_modern_record(modern):
    row = modern[14]
    assert row["key"] == h("0003 0005 67726f7570") and row["value"] is None


def test_tool_skip_lines_are_quarantined_with_the_tools_words(modern):
    assert modern[15]["source_error"] == "Unknown record type 32767 at offset 12354, skipping."
    assert modern[15]["source_offset"] == 12354
    assert modern[17]["source_error"].startswith("Error at offset 12355, skipping. Could not read record")


def test_json_null_and_empty_strings_stay_apart(modern):
    null_row, empty_row = modern[18], modern[19]
    assert null_row["value"] == h("0003 0000 00000000 ffff ffff 0000019964f2e118 00000000")
    assert empty_row["value"] == h("0003 0000 00000000 0000 0000 0000019964f2e118 00000000")
    null_group, empty_group = decoded(null_row)["group_metadata"], decoded(empty_row)["group_metadata"]
    assert (null_group["protocol"], null_group["leader"]) == (None, None)
    assert (empty_group["protocol"], empty_group["leader"]) == ("", "")


def test_json_layout_era_follows_the_printed_fields(modern):
    era_40, era_41 = decoded(modern[20])["modern"], decoded(modern[21])["modern"]
    assert modern[20]["value"] == h("0000 00000002 00")
    assert (era_40["layout_era"], era_41["layout_era"]) == ("4.0", "4.1+")
    assert era_41["metadata_hash"] == 99


def test_json_transactional_commit_and_abort_marker(modern):
    commit, marker = modern[23], modern[25]
    assert (commit["producer_id"], commit["producer_epoch"], commit["is_transactional"]) == (77, 0, True)
    assert (marker["control_type"], marker["key"], marker["value"]) == ("ABORT", h("0000 0000"), h("0000 00000003"))


def test_json_modern_records_map_camel_case_uuids_nested_structs_and_tagged_fields(tmp_path):
    prefix = "| offset: {} CreateTime: 1 keySize: {} valueSize: {} sequence: -1 headerKeys: [] key: "
    path = tmp_path / "modern.txt"
    path.write_text(
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
        "position: 0 CreateTime: 1 size: 200 magic: 2 compresscodec: none crc: 1 isvalid: true\n"
        + prefix.format(0, 10, 40)
        + '{"type":"8","data":{"groupId":"g","memberId":"m-1"}} payload: {"version":"0","data":{"memberEpoch":5,'
        '"previousMemberEpoch":4,"state":0,"assignedPartitions":[{"topicId":"MKXx1fIkQy2J9jXHhK8m1w",'
        '"partitions":[0,1]}],"partitionsPendingRevocation":[]}}\n'
        + prefix.format(1, 10, 37)
        + '{"type":"5","data":{"groupId":"g","memberId":"m-1"}} payload: {"version":"0","data":{"instanceId":null,'
        '"rackId":null,"clientId":"c","clientHost":"h","subscribedTopicNames":["t"],"subscribedTopicRegex":null,'
        '"rebalanceTimeoutMs":1000,"serverAssignor":null,"classicMemberMetadata":{"sessionTimeoutMs":45000,'
        '"supportedProtocols":[{"name":"range","metadata":"AAE="}]}}}\n'
    )
    assignment, member = read_rows(path)
    # v0 flexible: epochs, state, one topic (uuid, compact partitions, no tags), no revocations, no tags.
    assert assignment["key"] == h("0008 0001 67 0003 6d2d31")
    assert assignment["value"] == h(
        "0000 00000005 00000004 00 02 30a5f1d5f224432d89f635c784af26d7 03 00000000 00000001 00 01 00"
    )
    assert assignment["source_note"] is None  # 40 bytes, as valueSize says
    assert decoded(assignment)["modern"]["assigned_partitions"] == [
        {"topic_id": "30a5f1d5-f224-432d-89f6-35c784af26d7", "partitions": [0, 1]}
    ]
    fields = CODEC.decode_value(5, member["value"]).fields
    assert (fields["SubscribedTopicNames"], fields["RebalanceTimeoutMs"], fields["InstanceId"]) == (["t"], 1000, None)
    classic = fields["ClassicMemberMetadata"]
    assert classic == {"SessionTimeoutMs": 45000, "SupportedProtocols": [{"Name": "range", "Metadata": h("0001")}]}
    assert member["source_note"] is None


# 2.x shapes --------------------------------------------------------------------------------------


def test_two_x_record_lines_and_the_pre_2_4_decoder():
    rows = by_line(read_rows("dump_log_2_x.txt"))
    first = rows[4]
    assert (first["source_partition"], first["source_offset"], first["record_timestamp_ms"]) == (
        3,
        0,
        1_600_000_000_000,
    )
    assert first["source_error"] is None and first["source_note"] == D.NOTE_LEGACY_COMMIT
    assert decoded(first)["offset_commit"]["committed_offset"] == 42
    old = decoded(rows[6])["offset_commit"]
    assert (old["partition"], old["committed_offset"], old["metadata"]) == (1, 43, "ckpt")
    group = decoded(rows[7])["group_metadata"]
    assert (group["group_id"], group["generation"], group["members"][0]["member_id"]) == ("my-group", 3, "c-1")
    # Before 2.4 a tombstone prints no key at all: nothing to rebuild, so it is quarantined.
    assert rows[8]["source_offset"] == 3 and "no key printed" in rows[8]["source_error"]


# Reading ---------------------------------------------------------------------------------------


def test_partition_argument_overrides_the_folder():
    rows = read_rows("dump_log_3_7.txt", partition=31)
    assert {row["source_partition"] for row in rows} == {31}


def test_batches_hold_at_most_batch_rows_in_input_order():
    batches = list(read_dump_log(str(FIXTURES / "dump_log_3_7.txt"), batch_rows=4))
    assert [b.num_rows for b in batches] == [4, 4, 4, 3]
    assert all(b.schema.equals(LOG_RECORD_SCHEMA) for b in batches)
    positions = [p for b in batches for p in b.column("source_position").to_pylist()]
    assert positions == sorted(positions)


def test_record_without_its_batch_header_says_so(tmp_path):
    path = tmp_path / "cut_head.txt"
    path.write_text(
        "| offset: 5 CreateTime: 1700000000000 keySize: 12 valueSize: 24 sequence: -1 headerKeys: [] "
        "key: offset_commit::group=g,partition=t-0 payload: offset=1\n"
    )
    (row,) = read_rows(path)
    assert (row["producer_id"], row["is_transactional"]) == (-1, False)
    assert row["source_note"] == "; ".join((D.NOTE_NO_BATCH, D.NOTE_LEGACY_COMMIT))
    # Key type 1, "g", "t", partition 0, written out by hand (12 bytes, as keySize says).
    assert row["key"] == h("00 01 00 01 67 00 01 74 00 00 00 00")


def test_size_mismatch_is_noted_when_the_rebuilt_bytes_cannot_be_the_stored_ones(tmp_path):
    path = tmp_path / "sizes.txt"
    path.write_text(
        "| offset: 0 CreateTime: 1 keySize: 12 valueSize: 30 sequence: -1 headerKeys: [] "
        'key: {"type":"1","data":{"group":"g","topic":"t","partition":0}} '
        'payload: {"version":"3","data":{"offset":1,"leaderEpoch":0,"metadata":"","commitTimestamp":1}}\n'
    )
    (row,) = read_rows(path)
    assert D.NOTE_SIZE_MISMATCH in row["source_note"]  # 24 bytes rebuilt, the record had 30


def test_a_batch_that_failed_its_crc_is_quarantined_with_its_bytes(tmp_path):
    path = tmp_path / "crc.txt"
    path.write_text(
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
        "position: 0 CreateTime: 1 size: 80 magic: 2 compresscodec: none crc: 1 isvalid: false\n"
        "| offset: 0 CreateTime: 1 keySize: 12 valueSize: 28 sequence: -1 headerKeys: [] "
        "key: offset_commit::group=g,partition=t-0 payload: offset=1\n"
    )
    (row,) = read_rows(path)
    assert row["source_error"] == D.ERROR_BAD_CRC
    assert row["key"] == h("0001 0001 67 0001 74 00000000")


def test_commit_without_any_timestamp_is_quarantined(tmp_path):
    path = tmp_path / "magic0.txt"
    path.write_text(
        "offset: 0 position: 0 NoTimestampType: -1 size: 60 magic: 0 compresscodec: none crc: 1 isvalid: true\n"
        "| offset: 0 NoTimestampType: -1 keySize: 12 valueSize: 22 isValid: true crc: 7} "
        "key: offset_commit::group=g,partition=t-0 payload: offset=1\n"
    )
    (row,) = read_rows(path)
    assert row["record_timestamp_ms"] is None
    assert "no CreateTime" in row["source_error"]


def test_non_utf8_bytes_quarantine_the_record_instead_of_renaming_its_group(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(
        b"| offset: 0 CreateTime: 1 keySize: 12 valueSize: 28 sequence: -1 headerKeys: [] "
        b"key: offset_commit::group=gr\xfc,partition=t-0 payload: offset=1\n"
    )
    (row,) = read_rows(path)
    assert row["key"] is None and "not UTF-8" in row["source_error"]


def test_stderr_chatter_of_the_tool_is_not_a_record(tmp_path):
    path = tmp_path / "stderr.txt"
    path.write_text("Non-consecutive offsets in /x/__consumer_offsets-1/0.log\n  3 is followed by 7\n\n")
    assert read_rows(path) == []


def test_index_and_snapshot_files_dumped_alongside_are_skipped(tmp_path):
    path = tmp_path / "dir.txt"
    path.write_text(
        "Dumping /k/__consumer_offsets-4/00000000000000000000.index\n"
        "offset: 0 position: 0\n"
        "Dumping /k/__consumer_offsets-4/00000000000000000000.timeindex\n"
        "timestamp: 1700000000000 offset: 0\n"
        "Dumping /k/__consumer_offsets-4/00000000000000000000.log\n"
        "Log starting offset: 0\n"
        "| offset: 0 CreateTime: 1 keySize: 12 valueSize: 28 sequence: -1 headerKeys: [] "
        "key: offset_commit::group=g,partition=t-0 payload: offset=1\n"
    )
    (row,) = read_rows(path)
    assert (row["source_partition"], row["source_position"], row["source_error"]) == (4, 7, None)


def test_json_line_cut_mid_object_is_an_error_row_with_its_coordinates(tmp_path):
    path = tmp_path / "cut_json.txt"
    path.write_text(
        "| offset: 77 CreateTime: 1 keySize: 12 valueSize: 24 sequence: -1 headerKeys: [] "
        'key: {"type":"1","data":{"group":"g","topic":"t","partition":0}} payload: {"version":"3","data":{"offs'
    )
    (row,) = read_rows(path)
    assert (row["source_offset"], row["key"]) == (77, None)
    assert row["source_error"].startswith("payload at line 1 is not whole JSON")


def test_lines_are_read_as_they_come_not_all_at_once():
    def endless():
        line = (
            "| offset: {} CreateTime: 1 keySize: 12 valueSize: 28 sequence: -1 headerKeys: [] "
            "key: offset_commit::group=g,partition=t-0 payload: offset=1"
        )
        n = 0
        while True:
            yield line.format(n)
            n += 1

    rows = D.DumpLogReader("endless.txt").rows(endless())
    assert [next(rows)["source_offset"] for _ in range(3)] == [0, 1, 2]


def test_empty_file_gives_no_batches(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("")
    assert list(read_dump_log(str(path))) == []


def test_format_detection():
    for name in ("dump_log_3_7.txt", "dump_log_3_8.txt", "dump_log_2_x.txt"):
        head = (FIXTURES / name).read_text()[:4096]
        assert looks_like_dump_log(head) and not looks_like_console_dump(head), name
    console = (FIXTURES / "console_scala_offsets.txt").read_text()
    assert not looks_like_dump_log(console)


# The offset-commit fast path against the generic, layout-driven encoder ---------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("metadata", ["", "ckpt", "m" * 200, "日本"])
def test_fast_commit_value_matches_the_generic_encoder(version, metadata):
    layout = record_layouts()[1]
    topic_id = "30a5f1d5-f224-432d-89f6-35c784af26d7" if version == 4 else None
    fields = {
        "offset": (1 << 62) + 3,
        "leaderEpoch": 7,
        "metadata": metadata,
        "commitTimestamp": CREATE_TIME,
        "expireTimestamp": CREATE_TIME + 1,
        "topicId": topic_id,
    }
    generic = encode_value(layout, version, fields)
    fast = reencode.offset_commit_value(version, (1 << 62) + 3, metadata, CREATE_TIME, 7, CREATE_TIME + 1, topic_id)
    assert fast == generic


@pytest.mark.parametrize("record_type", [0, 1])
def test_fast_commit_key_matches_the_generic_encoder(record_type):
    fields = {"group": "grüppe", "topic": "orders.v2", "partition": 2**31 - 1}
    assert reencode.offset_commit_key("grüppe", "orders.v2", 2**31 - 1, record_type) == encode_key(
        record_layouts()[record_type], fields
    )


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_json_fast_and_generic_paths_agree(version):
    data = {"offset": 42, "metadata": "x", "commitTimestamp": CREATE_TIME}
    if version == 1:
        data["expireTimestamp"] = -1
    if version >= 3:
        data["leaderEpoch"] = 3
    if version == 4:
        data["topicId"] = "MKXx1fIkQy2J9jXHhK8m1w"
    fast = reencode._commit_value_fast(1, version, data)
    generic = reencode.encode_value_fields(
        1, version, reencode.fields_from_json(record_layouts()[1].values[0].fields, version, data)
    )
    assert fast == generic


def test_json_values_out_of_range_are_errors_not_wrapped_numbers():
    with pytest.raises(reencode.ReencodeError, match="int32"):
        reencode.value_from_json(1, 3, {"offset": 1, "leaderEpoch": 2**31, "metadata": "", "commitTimestamp": 1})
    with pytest.raises(reencode.ReencodeError, match="int64"):
        reencode.value_from_json(1, 3, {"offset": 2**63, "leaderEpoch": 0, "metadata": "", "commitTimestamp": 1})


def test_bytes_that_are_not_utf8_anywhere_in_a_line_cost_that_line_only(tmp_path):
    """Once, a line of invalid UTF-8 ended the run with 'UnicodeEncodeError: surrogates not allowed'."""
    path = tmp_path / "damaged.txt"
    good = (
        b"| offset: 1 CreateTime: 1 keySize: 12 valueSize: 28 sequence: -1 headerKeys: [] "
        b"key: offset_commit::group=g,partition=t-0 payload: offset=1\n"
    )
    path.write_bytes(
        b"Dumping /data/__consumer_offsets-\xff3/00000000000000000000.log\n\xff\xfe\x00 not a line of the tool\n" + good
    )
    first, second = read_rows(path)
    assert first["key"] is None and "unparseable line 2: \\xff\\xfe" in first["source_error"]
    assert second["source_error"] is None and decoded(second)["offset_commit"]["group_id"] == "g"
    assert second["source_file"] == "/data/__consumer_offsets-\\xff3/00000000000000000000.log"


def test_a_line_beyond_the_length_bound_is_one_error_row_and_reading_goes_on(tmp_path):
    from offset_audit.inputs.textdumps.text_rows import bounded_lines

    path = tmp_path / "long.txt"
    good = "| offset: 5 CreateTime: 1 keySize: 12 valueSize: 28 sequence: -1 headerKeys: [] key: "
    good += "offset_commit::group=g,partition=t-0 payload: offset=1\n"
    path.write_text("x" * 1000 + "\n" + good)
    reader = D.DumpLogReader(str(path))
    with open(path) as stream:
        rows = list(reader.rows(bounded_lines(stream, limit=300)))
    assert "longer than 300 characters (701 more skipped)" in rows[0]["source_error"]
    assert rows[1]["source_offset"] == 5 and rows[1]["source_error"] is None


def test_a_number_beyond_its_column_is_an_error_row_not_a_failed_file(tmp_path):
    path = tmp_path / "digits.txt"
    path.write_text(
        "| offset: 99999999999999999999 CreateTime: 1 keySize: 12 valueSize: 28 sequence: -1 headerKeys: [] "
        "key: offset_commit::group=g,partition=t-0 payload: offset=1\n"
    )
    (row,) = read_rows(path)
    assert row["source_offset"] is None and row["key"] is None
    assert "source_offset 99999999999999999999 does not fit its column" in row["source_error"]


def test_an_internal_error_in_the_reader_is_a_crash_not_a_quarantine_row(monkeypatch):
    """Only what a damaged dump can make wrong becomes a row with an error; a bug in the reader must be
    seen, not counted as bad input."""
    from offset_audit.inputs.textdumps import dump_log

    def broken(self, line):
        raise KeyError("a bug in the reader")

    monkeypatch.setattr(dump_log.DumpLogReader, "batch_header", broken)
    with pytest.raises(KeyError, match="a bug in the reader"):
        read_rows("dump_log_3_8.txt")


JSON_VECTORS = [v for name in ("modern_groups", "tagged_defaults") for v in load(name) if v.json is not None]


@pytest.mark.parametrize("vector", JSON_VECTORS, ids=[v.name for v in JSON_VECTORS])
def test_json_of_every_modern_record_type_reencodes_to_the_hand_written_bytes(vector):
    """Types 4-23 as kafka-dump-log 3.8+ and the JSON console formatters print them, rebuilt into bytes:
    exactly the bytes written by hand from the schema (tests/vectors/modern_groups.json), every era."""
    record_type = int.from_bytes(vector.key[:2], "big")
    assert reencode.key_from_json(record_type, vector.json["key"]) == vector.key
    version = int.from_bytes(vector.value[:2], "big")
    value, unknown = reencode.value_from_json(record_type, version, vector.json["value"])
    assert (value.hex(), unknown) == (vector.value.hex(), [])


def test_json_vectors_cover_every_modern_record_type_the_reencoder_writes():
    covered = {int.from_bytes(v.key[:2], "big") for v in JSON_VECTORS}
    assert covered == set(range(4, 24)) - {18}  # 18 was never released (reference 2.8)
