"""`history`: every event of the log, and the cause of every deletion, judged on the state replayed up
to that record with the audit's own rules. The dump is a log segment folder laid record by record
(transactions need markers, which only segments and dump-log text carry)."""

from __future__ import annotations

import pytest
from dump_records import DAY, LAYOUTS, T0, group_record, group_tombstone, modern
from segment_files import batch, marker

from offset_audit import constants as K
from offset_audit.coordinator import history
from offset_audit.coordinator.retention_bound import retention_bound
from offset_audit.layouts.encoder import encode_key, encode_value
from offset_audit.runs.audit import run_audit
from offset_audit.runs.history import HISTORY_TABLE, run_history
from offset_audit.runtime.config import load_settings
from offset_audit.views.audit_folder import read_table

MINUTE = 60_000
WEEK = 7 * DAY


def at(day, minutes=0):
    return T0 + day * DAY + minutes * MINUTE


def commit(group, topic, partition, offset, when):
    key = encode_key(LAYOUTS[K.OFFSET_COMMIT], {"group": group, "topic": topic, "partition": partition})
    value = encode_value(
        LAYOUTS[K.OFFSET_COMMIT],
        3,
        {"offset": offset, "leaderEpoch": 1, "metadata": "", "commitTimestamp": when, "expireTimestamp": -1},
    )
    return key, value, when


def deleted(group, topic, partition, when):
    return encode_key(LAYOUTS[K.OFFSET_COMMIT], {"group": group, "topic": topic, "partition": partition}), None, when


def at_time(record, when):
    key, value, _ = record
    return key, value, when


def member(group, member_id, topics, day):
    value = {"ClientId": "c", "ClientHost": "/h", "SubscribedTopicNames": topics, "RebalanceTimeoutMs": 1}
    return modern(K.CONSUMER_GROUP_MEMBER_METADATA, {"GroupId": group, "MemberId": member_id}, value, day)


SWEEP = 5  # minutes after expiry at which the scenario's sweeps ran (the interval is 10)
PLAIN = [
    # An Empty consumer group: its clock starts when it became Empty (day 2), not at the commit (day 1).
    group_record("emptied", 0, members=[["orders"]]),
    commit("emptied", "orders", 0, 100, at(1)),
    group_record("emptied", 2, members=[], state_day=2),
    deleted("emptied", "orders", 0, at(2) + WEEK + SWEEP * MINUTE),
    at_time(group_tombstone("emptied", 0), at(2) + WEEK + SWEEP * MINUTE),
    # A simple group (no metadata): from the commit.
    commit("simple", "orders", 0, 7, at(1)),
    deleted("simple", "orders", 0, at(1) + WEEK + 3 * MINUTE),
    # A Stable group that left a topic (KIP-496): from the commit.
    group_record("left", 0, members=[["orders"]]),
    commit("left", "payments", 0, 9, at(1)),
    deleted("left", "payments", 0, at(1) + WEEK + 1 * MINUTE),
    # A Stable group's subscribed topic never expires: its tombstone was a request.
    group_record("subscribed", 0, members=[["orders"]]),
    commit("subscribed", "orders", 0, 11, at(1)),
    deleted("subscribed", "orders", 0, at(9)),
    # DeleteGroups while the offsets had days left: offsets and group in one batch, at one time.
    group_record("removed", 1, members=[]),
    commit("removed", "orders", 0, 13, at(1)),
    deleted("removed", "orders", 0, at(3)),
    at_time(group_tombstone("removed", 0), at(3)),
    # The same, the group tombstone a millisecond after its offsets' (one request, two appends).
    group_record("removed-apart", 1, members=[]),
    commit("removed-apart", "orders", 0, 14, at(1)),
    deleted("removed-apart", "orders", 0, at(3)),
    at_time(group_tombstone("removed-apart", 0), at(3) + 1),
    # A re-commit restarts a simple group's clock: the tombstone came too early for a sweep.
    commit("recommit", "orders", 0, 1, at(0)),
    commit("recommit", "orders", 0, 2, at(5)),
    deleted("recommit", "orders", 0, at(0) + WEEK + 5 * MINUTE),
    # Two days past the sweep window: not the sweep at this retention.
    commit("late", "orders", 0, 3, at(0)),
    deleted("late", "orders", 0, at(9)),
    # A tombstone whose commit is not in the dump.
    deleted("ghost", "orders", 0, at(4)),
    # A simple group (commits only) deleted on request: its offsets' tombstones, then the group's (as a
    # real 4.1 broker writes DeleteGroups of a standalone consumer's group).
    commit("simple-removed", "orders", 0, 15, at(1)),
    deleted("simple-removed", "orders", 0, at(3)),
    at_time(group_tombstone("simple-removed", 0), at(3)),
    # A simple group the sweep removed with its last offset.
    commit("simple-swept", "orders", 0, 16, at(1)),
    deleted("simple-swept", "orders", 0, at(1) + WEEK + 3 * MINUTE),
    at_time(group_tombstone("simple-swept", 0), at(1) + WEEK + 3 * MINUTE),
    # A group tombstone of a group the dump shows nothing else of.
    at_time(group_tombstone("ghost-group", 0), at(4)),
    # A KIP-848 group: subscribed to orders, it left payments; its member left on day 3.
    member("k", "x", ["orders"], 1),  # the coordinator writes the member, then the group's new epoch
    modern(K.CONSUMER_GROUP_METADATA, {"GroupId": "k"}, {"Epoch": 1}, 1),
    commit("k", "payments", 0, 21, at(1)),
    modern(K.CONSUMER_GROUP_MEMBER_METADATA, {"GroupId": "k", "MemberId": "x"}, None, 3),
    modern(K.CONSUMER_GROUP_METADATA, {"GroupId": "k"}, {"Epoch": 2}, 3),
    deleted("k", "payments", 0, at(1) + WEEK + 2 * MINUTE),
    # KIP-848 groups that consumed orders until day 9, past their commit's week: the offset could go only
    # once the member left (the group Empty), and the next sweep took it (as a live 4.3 broker did to a
    # streams application's offsets). Two days after the leave it was not the sweep.
    *[
        record
        for group, gone in (("k-ran-on", at(9) + 2 * MINUTE), ("k-ran-on-late", at(11)))
        for record in (
            member(group, "x", ["orders"], 1),
            modern(K.CONSUMER_GROUP_METADATA, {"GroupId": group}, {"Epoch": 1}, 1),
            commit(group, "orders", 0, 22, at(1)),
            modern(K.CONSUMER_GROUP_MEMBER_METADATA, {"GroupId": group, "MemberId": "x"}, None, 9),
            modern(K.CONSUMER_GROUP_METADATA, {"GroupId": group}, {"Epoch": 2}, 9),
            deleted(group, "orders", 0, gone),
        )
    ],
]


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    """__consumer_offsets-0: the records above one per batch, then a transactional commit of "txn"
    (producer 5) with its COMMIT marker, expired by the sweep in time."""
    root = tmp_path_factory.mktemp("history-dump")
    folder = root / "__consumer_offsets-0"
    folder.mkdir()
    batches = [batch(i, [record]) for i, record in enumerate(PLAIN)]
    n = len(PLAIN)
    batches.append(batch(n, [commit("txn", "orders", 0, 50, at(1))], producer_id=5, attributes=0x10))
    batches.append(marker(n + 1, 5, True, at(1)))
    batches.append(batch(n + 2, [deleted("txn", "orders", 0, at(1) + WEEK + 4 * MINUTE)]))
    (folder / "00000000000000000000.log").write_bytes(b"".join(batches))
    return str(root)


@pytest.fixture(scope="module")
def traced(spark, dump, tmp_path_factory):
    output = str(tmp_path_factory.mktemp("history"))
    result = run_history(spark, [dump], output, load_settings())
    rows = read_table(output, HISTORY_TABLE).to_pylist()
    return result, output, sorted(rows, key=lambda r: (r["source_partition"], r["source_offset"]))


def deletion(rows, group, event=history.OFFSET_DELETED):
    (row,) = [r for r in rows if r["group_id"] == group and r["event"] == event]
    return row


@pytest.mark.parametrize(
    ("group", "cause", "rule"),
    [
        ("emptied", history.EXPIRED, "EMPTY_GROUP"),
        ("simple", history.EXPIRED, "SIMPLE_GROUP"),
        ("left", history.EXPIRED, "UNSUBSCRIBED_TOPIC"),
        ("subscribed", history.DELETED_BY_REQUEST, "SUBSCRIBED_TOPIC"),
        ("removed", history.DELETED_BY_REQUEST, "EMPTY_GROUP"),
        ("recommit", history.DELETED_BY_REQUEST, "SIMPLE_GROUP"),
        ("late", history.DELETED_BY_REQUEST, "SIMPLE_GROUP"),
        ("k", history.EXPIRED, "UNSUBSCRIBED_TOPIC"),
        ("k-ran-on", history.EXPIRED, "UNSUBSCRIBED_TOPIC"),
        ("k-ran-on-late", history.DELETED_BY_REQUEST, "UNSUBSCRIBED_TOPIC"),
        ("txn", history.EXPIRED, "SIMPLE_GROUP"),
        ("ghost", history.UNKNOWN, None),
    ],
)
def test_every_offset_tombstone_gets_its_cause_and_the_rule_that_held(traced, group, cause, rule):
    _, _, rows = traced
    row = deletion(rows, group)
    assert (row["cause"], row["rule"]) == (cause, rule)


def test_an_empty_groups_clock_is_when_it_became_empty(traced):
    row = deletion(traced[2], "emptied")
    assert row["base_timestamp_ms"] == at(2) and row["expires_at_ms"] == at(2) + WEEK
    assert row["committed_offset"] == 100 and row["group_state"] == "Empty"


def test_a_recommit_is_the_offset_the_tombstone_deleted(traced):
    row = deletion(traced[2], "recommit")
    assert row["committed_offset"] == 2 and row["base_timestamp_ms"] == at(5)


def test_group_tombstones_swept_or_requested(traced):
    rows = traced[2]
    assert deletion(rows, "emptied", history.GROUP_DELETED)["cause"] == history.EXPIRED
    assert deletion(rows, "removed", history.GROUP_DELETED)["cause"] == history.DELETED_BY_REQUEST
    assert deletion(rows, "removed-apart", history.GROUP_DELETED)["cause"] == history.DELETED_BY_REQUEST


def test_a_simple_groups_tombstone_after_its_offsets_is_judged_as_the_empty_group_the_broker_held(traced):
    """DeleteGroups of a standalone consumer's group tombstones its offsets, then the group: just before
    the group tombstone the coordinator holds it Empty with no offsets. Seen on a live 4.1 broker."""
    rows = traced[2]
    removed = deletion(rows, "simple-removed", history.GROUP_DELETED)
    assert (removed["cause"], removed["group_type"], removed["group_state"]) == (
        history.DELETED_BY_REQUEST,
        "classic",
        "Empty",
    )
    assert deletion(rows, "simple-swept", history.GROUP_DELETED)["cause"] == history.EXPIRED
    assert deletion(rows, "ghost-group", history.GROUP_DELETED)["cause"] == history.UNKNOWN


def test_group_state_events_classic_and_kip848(traced):
    rows = traced[2]
    states = [
        (r["event"], r["member_count"]) for r in rows if r["group_id"] == "emptied" and r["event"].startswith("GROUP_")
    ]
    assert states == [(history.GROUP_STABLE, 1), (history.GROUP_EMPTY, 0), (history.GROUP_DELETED, 0)]
    modern_states = [(r["event"], r["generation"]) for r in rows if r["group_id"] == "k" and r["event"] != "COMMITTED"]
    assert modern_states[:2] == [(history.GROUP_STABLE, 1), (history.GROUP_EMPTY, 2)]


def test_commits_in_log_order_with_their_transaction(traced):
    rows = traced[2]
    commits = [r for r in rows if r["event"] == history.COMMITTED]
    assert len(commits) == 15
    (txn,) = [r for r in commits if r["group_id"] == "txn"]
    assert txn["transaction"] == "committed" and txn["committed_offset"] == 50
    assert [r["committed_offset"] for r in commits if r["group_id"] == "recommit"] == [1, 2]


def test_the_retention_consistent_with_every_sweep_and_the_tombstones_that_bound_it(traced):
    result = traced[0]
    bound = result.retention
    # Sweeps ran 5, 3, 3, 1, 2 and 4 minutes after expiry at 7 days, every 10 minutes: 7d-5m to 7d+1m.
    # k-ran-on's came 2 minutes after its member left, 8 days after its commit: at most 8d+2m, no least.
    assert (bound.low, bound.high) == (10080 - 5, 10080 + 1)
    assert bound.low_by["group_id"] == "emptied" and bound.high_by["group_id"] == "left"
    assert bound.tombstones == 7


def test_retention_bound_of_no_sweep_bounds_nothing():
    assert retention_bound([], 600_000).low is None


def test_another_retention_changes_the_causes(spark, dump, tmp_path):
    result = run_history(spark, [dump], str(tmp_path), load_settings(retention_minutes=1440))
    rows = read_table(str(tmp_path), HISTORY_TABLE).to_pylist()
    # At one day every sweep above would have run six days earlier: none of them is a sweep now, but for
    # the one that came right after its group's member left (its offset could not go before).
    assert deletion(rows, "simple")["cause"] == history.DELETED_BY_REQUEST
    assert deletion(rows, "k-ran-on")["cause"] == history.EXPIRED
    assert result.retention.tombstones == 1


def test_history_and_audit_agree_on_the_last_state(spark, dump, traced, tmp_path):
    _, _, rows = traced
    run_audit(spark, [dump], str(tmp_path), load_settings(as_of="2026-01-20T00:00:00Z"))
    live = {
        (r["group_id"], r["topic"], r["partition"]): r["committed_offset"]
        for r in read_table(str(tmp_path), "partition_verdicts").to_pylist()
    }
    last: dict = {}
    for r in rows:
        if r["event"] == history.COMMITTED:
            last[(r["group_id"], r["topic"], r["partition"])] = r["committed_offset"]
        elif r["event"] == history.OFFSET_DELETED:
            last.pop((r["group_id"], r["topic"], r["partition"]), None)
    assert live == last
    groups = {r["group_id"]: r["group_state"] for r in read_table(str(tmp_path), "group_verdicts").to_pylist()}
    state: dict = {}
    for r in rows:
        if r["event"] in (history.GROUP_STABLE, history.GROUP_EMPTY):
            state[r["group_id"]] = r["group_state"]
        elif r["event"] == history.GROUP_DELETED:
            state.pop(r["group_id"], None)
    assert {g: s for g, s in groups.items() if g in state} == state


def run_cli(*args):
    from click.testing import CliRunner

    from offset_audit.cli.main import main

    return CliRunner().invoke(main, [str(a) for a in args])


def test_the_command_prints_a_readable_timeline_and_the_retention_range(spark, dump, tmp_path):
    groups = ["--group", "emptied", "--group", "removed", "--group", "left"]
    result = run_cli("history", "--input", dump, "--output", tmp_path, *groups, "-q")
    assert result.exit_code == 0, result.output
    text = result.stdout
    # Only the groups asked for: two sweeps bound the retention, one on each side.
    assert "offsets.retention.minutes consistent with all 2 swept tombstones: 10,075 to 10,081" in text
    assert "at least by emptied orders-0" in text and "at most by left payments-0" in text
    emptied = text.split("  emptied:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert emptied == [
        "  2026-01-01 00:00 is Stable (generation 4, 1 member)",
        "  2026-01-02 00:00 orders-0 committed offset 100",
        "  2026-01-03 00:00 became Empty (generation 4, 0 members)",
        "  2026-01-10 00:05 orders-0 deleted: expired, EMPTY_GROUP, 7 days 5 min after the group became Empty",
        "  2026-01-10 00:05 group removed by the expiry sweep; it was Empty",
    ]
    removed = text.split("  removed:\n", 1)[1].split("\n\n", 1)[0]
    assert (
        "deleted by a request (OffsetDelete or an admin tool): EMPTY_GROUP, it would have expired 2026-01-09" in removed
    )
    assert "group deleted by a request (DeleteGroups)" in removed


def test_the_command_json(spark, dump, tmp_path):
    import json

    document = json.loads(run_cli("history", "--input", dump, "--output", tmp_path / "a", "--json", "-q").stdout)
    assert document["command"] == "history" and document["consistent_retention_minutes"]["low"] == 10075
    swept = [e for e in document["events"] if e["event"] == history.OFFSET_DELETED and e["cause"] == history.EXPIRED]
    assert swept == [{"event": history.OFFSET_DELETED, "cause": history.EXPIRED, "rows": 7}]


def test_the_command_refuses_mistakes_before_spark_starts(no_spark, dump, tmp_path):
    missing = run_cli("history", "--input", tmp_path / "nope", "--output", tmp_path / "b")
    assert missing.exit_code == 2 and "does not exist" in missing.stderr
    bad = run_cli("history", "--input", dump, "--output", tmp_path / "b", "--retention-minutes", "soon")
    assert bad.exit_code == 2


def test_one_topic_keeps_its_groups_whole_for_the_causes(spark, dump, tmp_path):
    run_history(spark, [dump], str(tmp_path), load_settings(), topic="payments")
    rows = read_table(str(tmp_path), HISTORY_TABLE).to_pylist()
    assert {r["group_id"] for r in rows} == {"left", "k"}
    assert {r["topic"] for r in rows} == {"payments", None}
    assert deletion(rows, "left")["cause"] == history.EXPIRED


# ---- topics deleted under the groups ------------------------------------------------------------------

OLD_ID = "11111111-1111-1111-1111-111111111111"
NEW_ID = "22222222-2222-2222-2222-222222222222"
OTHER_ID = "33333333-3333-3333-3333-333333333333"


def commit_with_id(group, topic, offset, when, topic_id):
    """A v4 commit carrying the topic id (Kafka 4.1+ with a client that sends ids, every commit from 4.3)."""
    key = encode_key(LAYOUTS[K.OFFSET_COMMIT], {"group": group, "topic": topic, "partition": 0})
    fields = {"offset": offset, "leaderEpoch": 1, "metadata": "", "commitTimestamp": when, "topicId": topic_id}
    return key, encode_value(LAYOUTS[K.OFFSET_COMMIT], 4, fields), when


DELETIONS = [
    # Two Stable groups read "gone"; the topic is deleted on day 4: both offsets in one write.
    group_record("td-a", 0, members=[["gone"]]),
    group_record("td-b", 0, members=[["gone"]]),
    commit("td-a", "gone", 0, 5, at(1)),
    commit("td-b", "gone", 0, 6, at(1)),
    # "again" is deleted on day 4 and created again: its id changes across td-c's tombstone.
    group_record("td-c", 0, members=[["again"]]),
    commit_with_id("td-c", "again", 7, at(1), OLD_ID),
    # td-d's offset is stored with a third id, which another group still commits after day 4.
    group_record("td-d", 0, members=[["again"]]),
    commit_with_id("td-d", "again", 8, at(2), OTHER_ID),
    # One group's tombstone alone, a topic whose id never changes: a request (--delete-offsets).
    group_record("td-e", 0, members=[["kept"]]),
    commit("td-e", "kept", 0, 9, at(1)),
]
DELETED_AT = at(4)
AFTER = [
    deleted("td-c", "again", 0, DELETED_AT),
    deleted("td-d", "again", 0, DELETED_AT + 1),
    commit_with_id("td-f", "again", 1, at(5), NEW_ID),
    commit_with_id("td-g", "again", 2, at(6), OTHER_ID),
    deleted("td-e", "kept", 0, at(6)),
]


@pytest.fixture(scope="module")
def deletions_dump(tmp_path_factory):
    root = tmp_path_factory.mktemp("topic-deletions")
    folder = root / "__consumer_offsets-0"
    folder.mkdir()
    batches = [batch(i, [record]) for i, record in enumerate(DELETIONS)]
    n = len(DELETIONS)
    # The coordinator's one write for the deleted topic: both groups' tombstones in one batch.
    batches.append(batch(n, [deleted("td-a", "gone", 0, DELETED_AT), deleted("td-b", "gone", 0, DELETED_AT)]))
    batches += [batch(n + 2 + i, [record]) for i, record in enumerate(AFTER)]
    (folder / "00000000000000000000.log").write_bytes(b"".join(batches))
    return str(root)


@pytest.mark.parametrize(("version", "third_id"), [("4.2", history.TOPIC_DELETED), ("4.4", history.DELETED_BY_REQUEST)])
def test_offsets_deleted_with_their_topic_say_so(spark, deletions_dump, tmp_path, version, third_id):
    """OffsetMetadataManager.onPartitionsDeleted (4.2.1) tombstones every offset of the deleted topic's
    name; onTopicsDeleted (4.3.1) only those stored with its id or none: td-d's, stored with another
    id, is not the deletion's by 4.3+ rules."""
    settings = load_settings(kafka_version=version)
    run_history(spark, [deletions_dump], str(tmp_path), settings)
    rows = read_table(str(tmp_path), HISTORY_TABLE).to_pylist()
    causes = {r["group_id"]: r["cause"] for r in rows if r["event"] == history.OFFSET_DELETED}
    assert causes == {
        "td-a": history.TOPIC_DELETED,  # several groups' tombstones of one topic in one write
        "td-b": history.TOPIC_DELETED,
        "td-c": history.TOPIC_DELETED,  # the topic's id changed across it
        "td-d": third_id,
        "td-e": history.DELETED_BY_REQUEST,
    }
    assert all(r["rule"] == "SUBSCRIBED_TOPIC" for r in rows if r["event"] == history.OFFSET_DELETED)


def test_the_timeline_says_an_offset_went_with_its_topic():
    from datetime import UTC, datetime

    from offset_audit.views.summary import timeline_line

    line = timeline_line(
        {"event": history.OFFSET_DELETED, "cause": history.TOPIC_DELETED,
         "event_time": datetime(2026, 1, 5, tzinfo=UTC), "topic": "gone\x1b[2J", "partition": 0,
         "rule": "SUBSCRIBED_TOPIC"}
    )  # fmt: skip
    assert "deleted with its topic" in line and "\x1b" not in line
