"""The same state judged by the rules of different broker versions (--kafka-version). Each expectation
is written from that version's released coordinator (docs/rules.md, "By version"), as of 2026-01-10
00:00 UTC with a 7-day retention."""

from __future__ import annotations

import pytest
from audit_frames import AS_OF, WEEK, at, frames, group, offset
from pyspark.sql import functions as F

from offset_audit import constants as K
from offset_audit.broker_versions import parse_version
from offset_audit.coordinator import replay, rules, verdicts
from offset_audit.errors import UserError


def judged(spark, groups, offsets, version: str, retention=WEEK):
    broker = parse_version(version)
    group_frame, offset_frame = frames(spark, groups, offsets)
    offsets_judged = verdicts.judged_offsets(offset_frame, group_frame, broker)
    partitions = verdicts.partition_verdicts(offsets_judged, AS_OF, retention, 600000, version=broker)
    rows = {(r.group_id, r.topic, r.partition): r for r in partitions.collect()}
    by_group = verdicts.group_verdicts(partitions, group_frame, AS_OF, retention, 600000, broker)
    return rows, {r.group_id: r for r in by_group.collect()}


STABLE = group("stable", topics=["orders"])
EMPTY = group("empty", state="Empty", cst=at(8), members=0, topics=[])
SIMPLE = group("simple", protocol_type=None, state="Empty", members=0, topics=None)
STATE = [STABLE, EMPTY, SIMPLE]
OFFSETS = [
    offset("stable", topic="orders", commit=at(1)),
    offset("stable", topic="payments", commit=at(2)),  # a topic the group left
    offset("empty", commit=at(1)),  # Empty since 8 Jan: under KIP-211 it waits until 15 Jan
    offset("simple", commit=at(5)),
]


def test_before_kip_211_every_offset_expires_from_its_commit_whatever_its_group_does(spark):
    """2.0 (GroupMetadata.removeExpiredOffsets): expireTimestamp = commit + retention, `< now`."""
    rows, _ = judged(spark, STATE, OFFSETS, "2.0")
    assert {key: (r.rule, r.expired) for key, r in rows.items()} == {
        ("stable", "orders", 0): (rules.COMMIT_EXPIRY, True),
        ("stable", "payments", 0): (rules.COMMIT_EXPIRY, True),
        ("empty", "orders", 0): (rules.COMMIT_EXPIRY, True),
        ("simple", "orders", 0): (rules.COMMIT_EXPIRY, False),
    }
    assert rows[("stable", "orders", 0)].expires_at.timestamp() == at(8).timestamp()
    # 2.1+ keeps the running group's subscribed topic and counts the Empty group from when it emptied
    rows, _ = judged(spark, STATE, OFFSETS, "2.1")
    assert rows[("stable", "orders", 0)].rule == rules.GROUP_HAS_MEMBERS
    assert (rows[("empty", "orders", 0)].rule, rows[("empty", "orders", 0)].expired) == (rules.EMPTY_GROUP, False)


@pytest.mark.parametrize(("ms_later", "expired"), [(0, False), (1, True)])
def test_before_kip_211_the_expire_timestamp_must_be_passed(spark, ms_later, expired):
    """2.0 tests `expireTimestamp < now`; 2.1 on, `now >= expireTimestamp`."""
    commit = at(3, ms=-ms_later)  # expires 10 Jan 00:00 minus ms_later: as_of is ms_later past it
    rows, _ = judged(spark, [SIMPLE], [offset("simple", commit=commit)], "2.0.1")
    assert rows[("simple", "orders", 0)].expired is expired
    rows, _ = judged(spark, [SIMPLE], [offset("simple", commit=commit)], "2.1.0")
    assert rows[("simple", "orders", 0)].expired is True


def test_a_v1_explicit_expire_timestamp_before_kip_211_is_the_offsets_own_clock(spark):
    rows, _ = judged(spark, [STABLE], [offset("stable", commit=at(1), expire=at(20))], "2.0")
    row = rows[("stable", "orders", 0)]
    assert (row.rule, row.expired, row.expires_at.timestamp()) == (rules.COMMIT_EXPIRY, False, at(20).timestamp())


def test_before_2_4_no_offset_can_be_deleted_there_is_no_offset_delete_api(spark):
    rows, _ = judged(spark, STATE, OFFSETS, "2.3")
    assert {r.delete_error for r in rows.values()} == {rules.UNSUPPORTED_VERSION}
    assert not any(r.deletable_now for r in rows.values())
    rows, _ = judged(spark, STATE, OFFSETS, "2.4")
    assert rows[("stable", "payments", 0)].deletable_now


def test_kip_496_arrived_in_2_4_a_stable_group_keeps_every_offset_before(spark):
    for version, rule, expired in (("2.3", rules.GROUP_HAS_MEMBERS, False), ("2.4", rules.UNSUBSCRIBED_TOPIC, True)):
        rows, _ = judged(spark, STATE, OFFSETS, version)
        row = rows[("stable", "payments", 0)]
        assert (row.rule, row.expired) == (rule, expired), version
    rows, _ = judged(spark, STATE, OFFSETS, "2.3")  # a running group of another protocol alike
    assert rows[("stable", "orders", 0)].expires_at is None


@pytest.mark.parametrize(("version", "affected"), [("2.1.0", True), ("2.1", True), ("2.2", False), ("2.0", False)])
def test_kafka_8069_names_the_offsets_a_2_1_broker_expires_at_its_first_sweep_after_a_load(spark, version, affected):
    """A v1 value written with expire timestamp -1 (2.1 at an older inter.broker.protocol.version)."""
    minus_one = offset("empty", commit=at(9), value_version=1)  # no explicit expiry: -1 on disk
    rows, _ = judged(spark, [EMPTY], [minus_one], version)
    issue = rows[("empty", "orders", 0)].known_issue
    assert (issue is not None and issue.startswith("KAFKA-8069")) is affected
    rows, _ = judged(spark, [EMPTY], [offset("empty", commit=at(9))], version)  # a v3 value: fine
    assert rows[("empty", "orders", 0)].known_issue is None


@pytest.mark.parametrize(
    ("version", "affected"),
    [("2.4", True), ("2.8.1", True), ("2.8.2", False), ("2.8", False), ("3.0.0", True), ("3.1.1", False),
     ("3.2", False), ("2.3", False)],
)  # fmt: skip
def test_kafka_13636_names_the_offsets_a_rejoining_member_would_take_early(spark, version, affected):
    """An Empty consumer group (since 8 Jan) whose offset was committed more than the retention ago."""
    rows, _ = judged(spark, [EMPTY], [offset("empty", commit=at(1))], version)
    row = rows[("empty", "orders", 0)]
    assert not row.expired and (row.known_issue or "").startswith("KAFKA-13636") is affected
    rows, _ = judged(spark, [EMPTY], [offset("empty", commit=at(9))], version)  # within the retention
    assert rows[("empty", "orders", 0)].known_issue is None


def test_pending_transactions_hold_offsets_only_on_the_java_coordinator(spark):
    pending = [offset("empty", commit=at(1), pending=True)]
    for version, rule in (("3.9", rules.EMPTY_GROUP), ("4.0", rules.PENDING_TRANSACTION)):
        rows, _ = judged(spark, [group("empty", state="Empty", cst=at(1), members=0, topics=[])], pending, version)
        assert rows[("empty", "orders", 0)].rule == rule, version


def test_kafka_4_0_removed_empty_share_groups_4_1_keeps_them(spark):
    share = [group("q", group_type="share", protocol_type=None, state="Empty", members=0, topics=[])]
    _, groups = judged(spark, share, [], "4.0")
    assert groups["q"].would_delete
    _, groups = judged(spark, share, [], "4.1")
    assert not groups["q"].would_delete


def _streams_records(members: int, validated: int | None, topology: int, stored: int = -1):
    """A streams group's live records (the test_modern_states layout): metadata with its validated and
    stored-description epochs, a topology over `orders`, and `members` Stable members."""
    from test_modern_states import SCHEMA

    rows = [
        (K.STREAMS_GROUP_METADATA, "s", 3, None, None, None, None, None, validated, stored),
        (K.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA, "s", 3, None, None, None, None, None, None, None),
        (K.STREAMS_GROUP_TOPOLOGY, "s", topology, None, None, ["orders"], None, None, None, None),
    ]
    for _ in range(members):
        rows.append((K.STREAMS_GROUP_MEMBER_METADATA, "s", None, None, None, None, None, None, None, None))
        rows.append((K.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT, "s", None, None, None, None, 3, 1, None, None))
    return rows, SCHEMA


def judged_streams(spark, records, offsets, version: str | None):
    """Streams records replayed and judged by one broker version's rules, end to end; with no version,
    by each step's default."""
    rows, schema = records
    broker = {} if version is None else {"version": parse_version(version)}
    groups = replay.modern_groups(spark.createDataFrame(rows, schema), **broker).withColumn(
        "open_transaction", F.lit(False)
    )
    _, offset_frame = frames(spark, [], offsets)
    partitions = verdicts.partition_verdicts(
        verdicts.judged_offsets(offset_frame, groups, **broker), AS_OF, WEEK, 600000, **broker
    )
    by_group = verdicts.group_verdicts(partitions, groups, AS_OF, WEEK, 600000, **broker)
    return {(r.topic, r.partition): r for r in partitions.collect()}, by_group.collect()[0]


def test_kafka_4_1_expires_a_not_ready_streams_groups_offsets_4_2_keeps_them(spark):
    """StreamsGroup.isSubscribedToTopic: 4.1.2 asks the configured topology (not ready: nothing), 4.2.1
    the persisted one. The topology is at epoch 2, the broker validated epoch 1."""
    records = _streams_records(members=1, validated=1, topology=2)
    offsets = [offset("s", topic="orders", commit=at(1))]
    rows, group_row = judged_streams(spark, records, offsets, "4.1")
    row = rows[("orders", 0)]
    assert (group_row.group_state, row.rule, row.expired) == ("NotReady", rules.UNSUBSCRIBED_TOPIC, True)
    assert row.known_issue == rules.KAFKA_19779_EXPIRES
    for version in ("4.2", "4.2.1", "4.4"):
        rows, group_row = judged_streams(spark, records, offsets, version)
        row = rows[("orders", 0)]
        assert (group_row.group_state, row.rule, row.expired, row.known_issue) == (
            "NotReady", rules.SUBSCRIBED_TOPIC, False, None
        ), version  # fmt: skip


def test_a_4_1_log_records_no_readiness_so_4_1_keeps_the_offsets_and_names_the_risk(spark):
    records = _streams_records(members=1, validated=None, topology=0)  # no tags: decoded as null
    offsets = [offset("s", topic="orders", commit=at(1))]
    rows, group_row = judged_streams(spark, records, offsets, "4.1")
    row = rows[("orders", 0)]
    assert (group_row.group_state, row.rule, row.expired) == ("Stable", rules.SUBSCRIBED_TOPIC, False)
    assert row.known_issue == rules.KAFKA_19779_KEPT


def test_kafka_4_4_keeps_an_empty_streams_group_whose_topology_description_is_stored(spark):
    """GroupCoordinatorShard.cleanupGroupMetadata: 4.3.1 deletes an Empty streams group once its offsets
    expired; 4.4.0 expires the offsets but keeps the group while StoredDescriptionTopologyEpoch != -1."""
    offsets = [offset("s", topic="orders", commit=at(1))]
    for stored, version, deleted in ((3, "4.3", True), (3, "4.4", False), (-1, "4.4", True)):
        rows, group_row = judged_streams(spark, _streams_records(0, 1, 1, stored), offsets, version)
        assert rows[("orders", 0)].expired, (stored, version)
        assert group_row.would_delete is deleted, (stored, version)
        assert (group_row.group_expires_at is not None) is deleted, (stored, version)


def test_the_newest_rules_are_the_default(spark):
    """Without --kafka-version an audit judges by the rules of the newest version the project knows,
    the newest the live tests run (the Makefile's matrix): on a state that 4.4 judges unlike 4.3 (an Empty
    streams group whose topology description is stored, which 4.4 keeps), the default gives 4.4's answer."""
    from ci_gate import makefile_kafka_versions
    from kafka_broker import version_tuple

    from offset_audit.broker_versions import NEWEST_VERSION
    from offset_audit.runtime.config import load_settings

    newest_run = max(makefile_kafka_versions(), key=version_tuple)
    assert NEWEST_VERSION.number[:2] == version_tuple(newest_run)[:2] == (4, 4), newest_run
    assert parse_version(load_settings(None).kafka.version) == NEWEST_VERSION
    records, offsets = _streams_records(0, 1, 1, stored=3), [offset("s", topic="orders", commit=at(1))]
    kept = {version: judged_streams(spark, records, offsets, version)[1].would_delete for version in ("4.3", "4.4")}
    assert kept == {"4.3": True, "4.4": False}
    assert judged_streams(spark, records, offsets, None)[1].would_delete is kept["4.4"]


@pytest.mark.parametrize("text", ["1.1", "4.5", "5.0", "latest", "3", "3.9.x", ""])
def test_a_version_outside_2_0_to_4_4_is_one_sentence(text):
    with pytest.raises(UserError) as raised:
        parse_version(text)
    assert "\n" not in str(raised.value)


def test_records_newer_than_the_version_make_one_note():
    from offset_audit.broker_versions import newer_than
    from offset_audit.decoding.report import TypeCount

    dump = [
        TypeCount(1, "OffsetCommit", 3, None, 900, 0),
        TypeCount(2, "GroupMetadata", 3, None, 40, 0),
        TypeCount(3, "ConsumerGroupMetadata", 0, "3.7+", 5, 0),
        TypeCount(8, "ConsumerGroupCurrentMemberAssignment", 0, "3.8+", 7, 0),
    ]
    assert newer_than(dump, parse_version("3.7")) == {}
    assert newer_than(dump, parse_version("2.3")) == {
        "written only by Kafka 3.7 or later (KIP-848 consumer group records), but judged by Kafka 2.3's rules "
        "(--kafka-version)": 12
    }
    ((note, records),) = newer_than(dump, parse_version("2.0")).items()
    assert note.startswith("written only by Kafka 3.7 or later") and records == 900 + 40 + 12
    assert newer_than([TypeCount(1, "OffsetCommit", 1, None, 10, 0)], parse_version("2.0")) == {}


@pytest.fixture(scope="module")
def early_commits(tmp_path_factory):
    """A compacted partition as the cleaner leaves it: each group's commit, then its group records."""
    from dump_records import commit, modern
    from segment_files import batch

    records = [
        commit("app", "words", 0, 5, 1),
        modern(K.STREAMS_GROUP_METADATA, {"GroupId": "app"}, {"Epoch": 3, "MetadataHash": 1}, 2),
        commit("kip848", "orders", 0, 6, 1),
        modern(K.CONSUMER_GROUP_METADATA, {"GroupId": "kip848"}, {"Epoch": 2}, 2),
        modern(K.STREAMS_GROUP_METADATA, {"GroupId": "fine"}, {"Epoch": 1, "MetadataHash": 1}, 1),
        commit("fine", "words", 0, 7, 2),
    ]
    root = tmp_path_factory.mktemp("early-commits")
    (root / "__consumer_offsets-0").mkdir()
    log = b"".join(batch(i, [record]) for i, record in enumerate(records))
    (root / "__consumer_offsets-0" / "00000000000000000000.log").write_bytes(log)
    return str(root)


@pytest.mark.parametrize(
    ("version", "jira", "group"),
    [("4.2.0", "KAFKA-20254", "'app'"), ("4.1", "KAFKA-20254", "'app'"), ("4.2.1", None, None),
     ("3.9", "KAFKA-17306", "'kip848'"), ("4.0", None, None)],
)  # fmt: skip
def test_a_commit_before_its_groups_records_fails_the_load_of_the_versions_that_had_the_bug(
    spark, early_commits, tmp_path, version, jira, group
):
    """GroupMetadataManager.getOrMaybeCreatePersistedStreamsGroup (4.2.0 against 4.2.1) and
    getOrMaybeCreatePersistedConsumerGroup (3.9.1 against 4.0.0): a simple classic group a commit
    created is replaced only from the fix on."""

    from offset_audit.runs.audit import run_audit
    from offset_audit.runtime.config import load_settings

    settings = load_settings(kafka_version=version)
    notes = run_audit(spark, [early_commits], str(tmp_path), settings).report.format_notes
    found = {note: n for note, n in notes.items() if note.startswith("KAFKA-")}
    if jira is None:
        assert found == {}
    else:
        ((note, commits),) = found.items()
        assert note.startswith(jira) and note.endswith(f"{group} (partition 0)") and commits == 1
        assert "'fine'" not in note
