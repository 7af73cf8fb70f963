"""The audit end to end on a dump written record by record: replay (later records win, tombstones
delete), then verdicts, then the snapshot-partitioned Delta tables."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from dump_records import DAY, T0, commit, group_record, group_tombstone, modern, offset_tombstone, snapshot_table

from offset_audit import constants as K
from offset_audit.coordinator import rules
from offset_audit.outputs.fast_write import bucket_of
from offset_audit.runs import state
from offset_audit.runs.audit import run_audit
from offset_audit.runs.whatif import run_whatif
from offset_audit.runtime.config import load_settings
from offset_audit.views.audit_folder import delete_plan

SCENARIO = [
    commit("reset", "orders", 0, 100, 1),
    commit("reset", "orders", 0, 200, 2),  # the later commit wins
    commit("swept", "orders", 0, 5, 1),
    offset_tombstone("swept", "orders", 0, 2),  # already expired by the broker
    group_record("deleted", 1, members=[["orders"]]),
    commit("deleted", "orders", 0, 7, 1),
    offset_tombstone("deleted", "orders", 0, 2),
    group_tombstone("deleted", 2),  # DeleteGroups: nothing of it is left
    group_record("orphan", 1, members=[]),
    group_tombstone("orphan", 2),
    commit("orphan", "orders", 0, 9, 3),  # metadata gone, offsets stay: a simple group
    group_record("stable", 2, members=[["orders"], ["orders", "clicks"]]),
    commit("stable", "orders", 0, 10, 2),
    commit("stable", "payments", 0, 11, 1),
    group_record("rebalanced", 1, members=[["orders"]]),
    group_record("rebalanced", 3, members=[], state_day=3),  # the last member left on day 3
    commit("rebalanced", "orders", 0, 12, 1),
    group_record("old-meta", 1, members=[], version=1),  # v1: no currentStateTimestamp
    commit("old-meta", "orders", 0, 13, 5),
    group_record("bare", 9, members=[]),  # Empty, no offsets
    modern(K.CONSUMER_GROUP_METADATA, {"GroupId": "k"}, {"Epoch": 5}, 1),
    modern(K.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, {"GroupId": "k"}, {"AssignmentEpoch": 5}, 1),
    modern(
        K.CONSUMER_GROUP_MEMBER_METADATA,
        {"GroupId": "k", "MemberId": "x"},
        {"ClientId": "c", "ClientHost": "/h", "SubscribedTopicNames": ["orders"], "RebalanceTimeoutMs": 1},
        1,
    ),
    modern(
        K.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
        {"GroupId": "k", "MemberId": "x"},
        {
            "MemberEpoch": 5,
            "PreviousMemberEpoch": 4,
            "State": 0,
            "AssignedPartitions": [],
            "PartitionsPendingRevocation": [],
        },
        1,
    ),
    commit("k", "orders", 0, 20, 8, version=4),
    commit("k", "payments", 0, 21, 1, version=4),
    modern(
        K.CONSUMER_GROUP_MEMBER_METADATA,
        {"GroupId": "k2", "MemberId": "y"},
        {"ClientId": "c", "ClientHost": "/h", "SubscribedTopicNames": ["orders"], "RebalanceTimeoutMs": 1},
        1,
    ),
    modern(K.CONSUMER_GROUP_METADATA, {"GroupId": "k2"}, {"Epoch": 2}, 1),
    modern(K.CONSUMER_GROUP_MEMBER_METADATA, {"GroupId": "k2", "MemberId": "y"}, None, 8),  # the member left
    commit("k2", "orders", 0, 30, 8, version=4),
]
AS_OF = "2026-01-10T00:00:00Z"


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    path = tmp_path_factory.mktemp("scenario")
    pq.write_table(snapshot_table(SCENARIO), path / "part-0.parquet")
    return str(path)


@pytest.fixture(scope="module")
def split_dump(dump, tmp_path_factory):
    """The scenario cut into three files, written newest first: three decode tasks, and a later record
    (a re-commit, a tombstone) in another task than the record it replaces."""
    path = tmp_path_factory.mktemp("split")
    table = pq.read_table(f"{dump}/part-0.parquet")
    cut = table.num_rows // 3
    for name, start in (("a", 2 * cut), ("b", cut), ("c", 0)):
        pq.write_table(table.slice(start, cut if start < 2 * cut else None), path / f"{name}.parquet")
    return str(path)


@pytest.fixture(scope="module")
def audited(spark, dump, tmp_path_factory):
    output = str(tmp_path_factory.mktemp("audit"))
    settings = load_settings(as_of=AS_OF)
    result = run_audit(spark, [dump], output, settings)

    def read(name):
        return DeltaTable(f"{output}/{name}").to_pyarrow_table().to_pylist()

    partitions = {(r["group_id"], r["topic"]): r for r in read("partition_verdicts")}
    groups = {r["group_id"]: r for r in read("group_verdicts")}
    return result, output, partitions, groups


def ts(day):
    return datetime.fromtimestamp((T0 + day * DAY) / 1000, tz=UTC)


def test_later_records_replace_earlier_ones_and_tombstones_delete(audited):
    _, _, partitions, groups = audited
    assert partitions[("reset", "orders")]["committed_offset"] == 200
    assert ("swept", "orders") not in partitions
    assert "deleted" not in groups and ("deleted", "orders") not in partitions


def test_group_tombstone_leaves_its_offsets_to_a_simple_group(audited):
    _, _, partitions, groups = audited
    assert groups["orphan"]["protocol_type"] is None and groups["orphan"]["group_state"] == "Empty"
    assert partitions[("orphan", "orders")]["rule"] == rules.SIMPLE_GROUP


def test_classic_groups_from_their_last_metadata_record(audited):
    _, _, partitions, groups = audited
    assert groups["stable"]["group_state"] == "Stable" and groups["stable"]["subscribed_topics"] == ["clicks", "orders"]
    assert partitions[("stable", "orders")]["rule"] == rules.SUBSCRIBED_TOPIC
    assert partitions[("stable", "payments")]["rule"] == rules.UNSUBSCRIBED_TOPIC
    rebalanced = partitions[("rebalanced", "orders")]
    assert rebalanced["rule"] == rules.EMPTY_GROUP and rebalanced["base_timestamp"] == ts(3)
    old = partitions[("old-meta", "orders")]
    assert old["rule"] == rules.EMPTY_GROUP and old["base_timestamp"] == ts(5)


def test_kip848_groups_from_member_records(audited):
    _, _, partitions, groups = audited
    assert (groups["k"]["group_type"], groups["k"]["group_state"], groups["k"]["member_count"]) == (
        "consumer",
        "Stable",
        1,
    )
    assert partitions[("k", "orders")]["rule"] == rules.SUBSCRIBED_TOPIC
    assert (
        partitions[("k", "payments")]["rule"] == rules.UNSUBSCRIBED_TOPIC and partitions[("k", "payments")]["expired"]
    )
    assert groups["k2"]["group_state"] == "Empty" and groups["k2"]["member_count"] == 0
    assert partitions[("k2", "orders")]["rule"] == rules.UNSUBSCRIBED_TOPIC


def test_groups_without_offsets_and_group_removal(audited):
    _, _, _, groups = audited
    assert groups["bare"]["offset_count"] == 0 and groups["bare"]["would_delete"]
    # Empty since 4 Jan (day 3): its only offset expires 7 days later, on 11 Jan, the day after as_of.
    assert not groups["rebalanced"]["would_delete"] and groups["rebalanced"]["group_expires_at"] == ts(10)
    assert not groups["stable"]["would_delete"]


def test_every_row_carries_the_snapshot(audited):
    result, output, partitions, _ = audited
    assert {r["snapshot_id"] for r in partitions.values()} == {result.snapshot_id}
    assert all(
        r["as_of"] == datetime(2026, 1, 10, tzinfo=UTC) and r["retention_minutes"] == 10080 for r in partitions.values()
    )
    runs = DeltaTable(f"{output}/runs").to_pyarrow_table().to_pylist()
    assert runs[-1]["command"] == "audit" and runs[-1]["snapshot_id"] == result.snapshot_id
    assert runs[-1]["records_read"] == len(SCENARIO)


def test_the_printed_summary_counts_what_the_tables_hold(audited):
    result, output, partitions, groups = audited
    by_state = Counter((g["group_type"], g["group_state"], g["would_delete"]) for g in groups.values())
    assert {(t, s, d): n for t, s, d, n in result.group_summary} == by_state
    assert [(t, s) for t, s, _, _ in result.group_summary] == sorted((t, s) for t, s, _, _ in result.group_summary)
    day = 86_400_000
    ttl = [
        r["time_to_expiry_ms"] for r in partitions.values() if not r["expired"] and r["time_to_expiry_ms"] is not None
    ]
    assert result.offsets == len(partitions) and result.expired == sum(r["expired"] for r in partitions.values())
    assert result.expiring_24h == sum(0 <= t < day for t in ttl) == result.expiring_within(day)
    assert result.expiring_1_to_7d == sum(day <= t < 7 * day for t in ttl)
    assert result.expiring_later == sum(t >= 7 * day for t in ttl)
    never = sum(not r["expired"] and r["time_to_expiry_ms"] is None for r in partitions.values())
    assert result.not_expiring == never and never > 0
    active = {"Empty", "Dead"}
    assert result.expired_in_active_groups() == sum(
        r["expired"] and r["group_state"] not in active for r in partitions.values()
    )
    candidates = DeltaTable(f"{output}/deletion_candidates").to_pyarrow_table().to_pylist()
    per_topic = Counter((c["priority"], c["reason"], c["group_id"], c["topic"]) for c in candidates)
    expected = sorted(per_topic.items(), key=lambda kv: (kv[0][0], -kv[1], kv[0][2], kv[0][3]))[:10]
    assert [
        (c["priority"], c["reason"], c["group_id"], c["topic"], c["partitions"]) for c in result.top_candidates
    ] == [(*k, n) for k, n in expected]
    assert all(c["lag"] is None for c in result.top_candidates)  # no --end-offsets: no lag


def test_rerunning_a_snapshot_replaces_it_and_other_snapshots_stay(spark, dump, tmp_path):
    settings = load_settings(as_of=AS_OF)
    run_audit(spark, [dump], str(tmp_path), settings, snapshot_id="s1")
    run_audit(spark, [dump], str(tmp_path), settings, snapshot_id="s1")
    run_audit(spark, [dump], str(tmp_path), settings, snapshot_id="s2")
    rows = DeltaTable(f"{tmp_path}/partition_verdicts").to_pyarrow_table().to_pylist()
    per_snapshot = {s: sum(r["snapshot_id"] == s for r in rows) for s in ("s1", "s2")}
    assert per_snapshot["s1"] == per_snapshot["s2"] > 0


def test_compacted_replay_judges_exactly_like_the_full_commit_history(spark, split_dump, tmp_path, monkeypatch):
    """Each decode task decodes only its last record of each key; the verdicts must not change for it.
    The full-history run also replays the state spread over partitions and compiles its expressions, as
    a large state would; the compact one, a tiny state, evaluates them without compiling."""
    settings = load_settings(as_of=AS_OF)
    layouts = []
    load_state = state.load_state

    def spy(*args):
        # commits_latest (merged on the driver), single_partition, and how expressions are evaluated
        layouts.append((*args[5:7], spark.conf.get("spark.sql.codegen.factoryMode")))
        return load_state(*args)

    monkeypatch.setattr(state, "load_state", spy)
    compact = run_audit(spark, [split_dump], str(tmp_path / "compact"), settings, snapshot_id="s")
    monkeypatch.setattr(state, "SMALL_STATE_ROWS", 0)
    monkeypatch.setattr(state, "TINY_STATE_ROWS", 0)  # and compiled, as a large state is
    full = run_audit(spark, [split_dump], str(tmp_path / "full"), settings, snapshot_id="s", keep_decoded=True)
    assert layouts == [(True, True, "NO_CODEGEN"), (False, False, "FALLBACK")]
    for table in ("partition_verdicts", "group_verdicts", "deletion_candidates"):
        a = spark.read.parquet(*DeltaTable(f"{tmp_path}/compact/{table}").file_uris())
        b = spark.read.parquet(*DeltaTable(f"{tmp_path}/full/{table}").file_uris())
        assert a.count() > 0 and a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0, table
    assert compact.report.table_rows["decoded/offset_commits"] == 0
    commit_records = sum(1 for key, _, _ in SCENARIO if key[:2] in (b"\0\0", b"\0\1"))
    assert full.report.table_rows["decoded/offset_commits"] == commit_records
    superseded = compact.report.skipped_by_reason["superseded"]
    assert superseded > 0 and "superseded" not in full.report.skipped_by_reason
    assert compact.report.records_decoded + superseded == full.report.records_decoded
    assert compact.report.reconciles and compact.report.records_read == full.report.records_read == len(SCENARIO)
    assert not list((tmp_path / "compact").glob("_replay-*")), "the scratch folder is removed"


def test_a_wide_state_judged_on_every_core_and_written_by_spark_gives_the_same_tables(
    spark, split_dump, tmp_path, monkeypatch
):
    """From WIDE_STATE_ROWS a state replayed in one partition is judged spread over the cores, and the
    verdicts are written by Spark's own Parquet writer, the candidates read back from their files: the
    tables (rows and Delta schema) must be those of the Python workers' single pass."""
    from offset_audit.runs import audit

    settings = load_settings(as_of=AS_OF)
    spreads = []
    load_state = state.load_state

    def spy(*args):
        spreads.append(args[-1])
        return load_state(*args)

    monkeypatch.setattr(state, "load_state", spy)
    run_audit(spark, [split_dump], str(tmp_path / "few"), settings, snapshot_id="s")
    monkeypatch.setattr(state, "WIDE_STATE_ROWS", 0)
    monkeypatch.setattr(audit, "WIDE_STATE_ROWS", 0)
    run_audit(spark, [split_dump], str(tmp_path / "wide"), settings, snapshot_id="s")
    assert spreads == [1, spark.sparkContext.defaultParallelism] and spreads[1] > 1
    for table in ("partition_verdicts", "group_verdicts", "deletion_candidates"):
        few, wide = (DeltaTable(f"{tmp_path}/{kind}/{table}") for kind in ("few", "wide"))
        assert few.schema().to_arrow() == wide.schema().to_arrow(), table
        rows = [sorted(map(repr, t.to_pyarrow_table().to_pylist())) for t in (few, wide)]
        assert rows[0] == rows[1] and rows[0], table
    names = [
        a["path"] for a in pa.table(DeltaTable(f"{tmp_path}/wide/partition_verdicts").get_add_actions()).to_pylist()
    ]
    assert names and all(n.endswith(".snappy.parquet") for n in names)  # Spark's own writer names its files


def test_the_route_is_chosen_on_the_state_merged_across_decode_tasks(spark, tmp_path, monkeypatch):
    """Each decode task keeps its last commit of a key, so a key both tasks read is counted twice until
    the driver merges them: the expressions' evaluation (TINY_STATE_ROWS), the spread and the writer
    (WIDE_STATE_ROWS) follow the merged state, one record per key."""
    from offset_audit.runs import audit

    keys = [(group, topic) for group in ("a", "b", "c") for topic in ("orders", "clicks")]
    table = snapshot_table([commit(g, t, 0, day, day) for day in (1, 2) for g, t in keys])
    dump = tmp_path / "dump"
    dump.mkdir()
    pq.write_table(table.slice(0, len(keys)), dump / "first.parquet")  # one decode task each
    pq.write_table(table.slice(len(keys)), dump / "second.parquet")
    # the six keys merged lie below the bound, the twelve records the two tasks kept above it
    for module in (state, audit):
        monkeypatch.setattr(module, "WIDE_STATE_ROWS", 2 * len(keys) - 2)
    monkeypatch.setattr(state, "TINY_STATE_ROWS", 2 * len(keys) - 2)
    seen = []
    load_state = state.load_state

    def spy(*args):
        seen.append((args[-1], spark.conf.get("spark.sql.codegen.factoryMode")))
        return load_state(*args)

    monkeypatch.setattr(state, "load_state", spy)
    result = run_audit(spark, [str(dump)], str(tmp_path / "out"), load_settings(as_of=AS_OF), snapshot_id="s")
    # no task held two records of a key: both tasks kept all six of theirs
    assert "superseded" not in result.report.skipped_by_reason and result.offsets == len(keys)
    assert seen == [(1, "NO_CODEGEN")]  # one partition, evaluated as it stands
    added = DeltaTable(f"{tmp_path}/out/partition_verdicts").get_add_actions()
    assert not any(name.endswith(".snappy.parquet") for name in pa.table(added).column("path").to_pylist())


@pytest.mark.parametrize("wide", [True, False], ids=["wide", "small"])
def test_a_wide_state_has_its_groups_built_before_the_verdicts_are_judged(spark, tmp_path, monkeypatch, wide):
    """From WIDE_STATE_ROWS the rebuilding stage builds the groups into their cache, so that judging and
    writing partition_verdicts is that alone; below it the verdicts' query replays them (one job less)."""
    from offset_audit.coordinator import verdicts
    from offset_audit.runs import audit

    dump = tmp_path / "dump"
    dump.mkdir()
    pq.write_table(snapshot_table([commit("g", "orders", p, 5, 1) for p in range(3)]), dump / "one.parquet")
    bound = 1 if wide else 10**6
    for module in (state, audit):
        monkeypatch.setattr(module, "WIDE_STATE_ROWS", bound)
    cached = spark._jsparkSession.sharedState().cacheManager()
    built = []
    judged_offsets = verdicts.judged_offsets

    def spy(offsets, groups, version):
        found = cached.lookupCachedData(groups._jdf)
        builder = found.isDefined() and found.get().cachedRepresentation().cacheBuilder()
        built.append(bool(builder) and builder.isCachedColumnBuffersLoaded())
        return judged_offsets(offsets, groups, version)

    monkeypatch.setattr(verdicts, "judged_offsets", spy)
    result = run_audit(spark, [str(dump)], str(tmp_path / "out"), load_settings(as_of=AS_OF), snapshot_id="s")
    assert result.offsets == 3 and built == [wide]


def _unreadable(record):
    """The record with a value whose body is cut short after its version: its key still reads."""
    key, value, stamp = record
    return key, value[:3], stamp


MEMBER = {"ClientId": "c", "ClientHost": "/h", "SubscribedTopicNames": ["orders"], "RebalanceTimeoutMs": 1}
# Read by one decode task; UNREADABLE_LATE by the next, so a key's last record can be in either.
UNREADABLE_EARLY = [
    commit("across", "orders", 0, 40, 1),
    commit("back", "orders", 0, 41, 1),
    group_record("meta", 1, members=[["orders"]]),
    commit("meta", "orders", 0, 43, 1),
    modern(K.CONSUMER_GROUP_METADATA, {"GroupId": "k3"}, {"Epoch": 5}, 1),
    modern(K.CONSUMER_GROUP_MEMBER_METADATA, {"GroupId": "k3", "MemberId": "z"}, MEMBER, 1),
    commit("k3", "orders", 0, 44, 1, version=4),
]
UNREADABLE_LATE = [
    _unreadable(commit("across", "orders", 0, 0, 2)),  # hides the readable commit of the other task
    commit("within", "orders", 0, 45, 1),
    _unreadable(commit("within", "orders", 0, 0, 2)),  # hides the readable commit of its own task
    _unreadable(commit("back", "orders", 0, 0, 2)),
    commit("back", "orders", 0, 42, 3),  # readable again: this commit is the state
    _unreadable(group_record("meta", 2, members=[["orders"]])),
    _unreadable(modern(K.CONSUMER_GROUP_MEMBER_METADATA, {"GroupId": "k3", "MemberId": "z"}, MEMBER, 2)),
]


def test_a_key_whose_last_record_is_unreadable_has_no_state_whichever_records_were_decoded(
    spark, tmp_path, monkeypatch
):
    """The audit decodes each task's last record of a key; --keep-decoded (and delta-spark) decode them
    all. A quarantined last record must leave its key without state in both, wherever the key's readable
    records were read."""
    table = snapshot_table(UNREADABLE_EARLY + UNREADABLE_LATE)
    dump = tmp_path / "dump"
    dump.mkdir()
    pq.write_table(table.slice(0, len(UNREADABLE_EARLY)), dump / "early.parquet")
    pq.write_table(table.slice(len(UNREADABLE_EARLY)), dump / "late.parquet")
    settings = load_settings(as_of=AS_OF)
    runs = {"merged": {}, "full": {"keep_decoded": True}}
    results = {name: run_audit(spark, [str(dump)], str(tmp_path / name), settings, **kw) for name, kw in runs.items()}
    # the tasks' commits merged a bucket of groups per Spark task, then replayed spread over partitions
    monkeypatch.setattr(state, "SMALL_STATE_ROWS", 0)
    monkeypatch.setattr(state, "TINY_STATE_ROWS", 0)
    merges = []
    by_bucket = state.merge_latest_commits_by_bucket

    def spy(spark, files, *args):
        merges.append((files, by_bucket(spark, files, *args)))
        return merges[-1][1]

    monkeypatch.setattr(state, "merge_latest_commits_by_bucket", spy)
    results["spread"] = run_audit(spark, [str(dump)], str(tmp_path / "spread"), settings)
    [(files, merged)] = merges
    # both tasks hold a commit of "back": one merge met its two copies, and a file per bucket each
    assert len({bucket_of(f) for f in files}) == len(merged) > 1 and len(files) > len(merged)
    tables = {}
    for name in results:
        tables[name] = {
            table: sorted(
                (r for r in DeltaTable(f"{tmp_path}/{name}/{table}").to_pyarrow_table().to_pylist()),
                key=lambda r: (r["group_id"], r.get("topic") or "", r.get("partition") or 0),
            )
            for table in ("partition_verdicts", "group_verdicts")
        }
        for rows in tables[name].values():
            for row in rows:
                row.pop("snapshot_id")
    assert tables["merged"] == tables["full"] == tables["spread"]
    offsets = {(r["group_id"], r["topic"]): r for r in tables["full"]["partition_verdicts"]}
    groups = {r["group_id"]: r for r in tables["full"]["group_verdicts"]}
    assert ("across", "orders") not in offsets and ("within", "orders") not in offsets
    assert offsets[("back", "orders")]["committed_offset"] == 42
    # The group's metadata is unreadable: its offsets stay, judged as a group without metadata.
    assert groups["meta"]["protocol_type"] is None and offsets[("meta", "orders")]["rule"] == rules.SIMPLE_GROUP
    assert groups["k3"]["member_count"] == 0 and groups["k3"]["group_state"] == "Empty"
    quarantine = DeltaTable(f"{tmp_path}/full/decoded/quarantine").to_pyarrow_table().to_pylist()
    assert len(quarantine) == 5 and all(q["group_id"] is not None for q in quarantine)
    keyed = {(q["group_id"], q["topic"], q["partition"], q["member_id"]) for q in quarantine}
    assert (
        ("across", "orders", 0, None) in keyed
        and ("k3", None, None, "z") in keyed
        and ("meta", None, None, None) in keyed
    )


def test_a_failed_state_load_leaves_no_scratch_folder(spark, dump, tmp_path, monkeypatch):
    def broken(*args):
        raise RuntimeError("load failed")

    monkeypatch.setattr(state, "load_state", broken)
    with pytest.raises(RuntimeError, match="load failed"):
        run_audit(spark, [dump], str(tmp_path), load_settings())
    assert (tmp_path / "decoded").exists() and not list(tmp_path.glob("_replay-*"))


def test_a_dump_without_offsets_writes_empty_offset_tables_and_still_judges_its_groups(spark, dump, tmp_path):
    """The later tables are built from the rows written before them: none written must still work."""
    table = pq.read_table(f"{dump}/part-0.parquet")
    bare_group = pa.array([k == group_record("bare", 9)[0] for k in table.column("key").to_pylist()])
    path = tmp_path / "bare"
    path.mkdir()
    pq.write_table(table.filter(bare_group), path / "part-0.parquet")
    settings = load_settings(as_of=AS_OF)
    result = run_audit(spark, [str(path)], str(tmp_path / "out"), settings, snapshot_id="s")
    rows = result.report.table_rows
    assert (rows["partition_verdicts"], rows["group_verdicts"], rows["deletion_candidates"]) == (0, 1, 0)
    (group,) = DeltaTable(f"{tmp_path}/out/group_verdicts").to_pyarrow_table().to_pylist()
    assert (group["group_id"], group["offset_count"], group["would_delete"]) == ("bare", 0, True)
    assert result.offsets == 0 and result.group_summary == [("classic", "Empty", True, 1)]


def test_delete_plan_reads_the_newest_snapshot(spark, audited):
    result, output, _, _ = audited
    snapshot, candidates = delete_plan(output)
    assert snapshot == result.snapshot_id
    assert ("stable", "payments") in {(c["group_id"], c["topic"]) for c in candidates}
    assert all(c["expected_answer"] == "NONE" for c in candidates)


def test_whatif_on_the_scenario(spark, dump, tmp_path):
    report, rows = run_whatif(spark, [dump], str(tmp_path), load_settings(), [1440, 10080], [AS_OF], per_group=True)
    detail = DeltaTable(f"{tmp_path}/whatif_groups").to_pyarrow_table().to_pylist()
    assert {r["retention_minutes"] for r in detail} == {1440, 10080}
    assert report.table_rows["whatif_groups"] == len(detail)
    by_retention = {r["retention_minutes"]: r for r in rows}
    assert by_retention[1440]["offsets_total"] == by_retention[10080]["offsets_total"]
    assert by_retention[1440]["offsets_expired"] >= by_retention[10080]["offsets_expired"]
