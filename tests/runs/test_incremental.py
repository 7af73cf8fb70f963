"""audit --incremental against a full read of the same log: random logs of broker folders cut into runs at
random offsets (transactions open across a cut, tombstones and group deletions, the cleaner compacting
between runs, the topic recreated, the log replaced, truncated or grown, with and without partition.metadata),
each run's tables compared row for row with a full audit of the log as it stands then, at the same as_of."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from dump_records import DAY, T0, commit, group_record, group_tombstone, modern, offset_tombstone
from segment_files import TRANSACTIONAL, batch, marker

from offset_audit import constants as K
from offset_audit.coordinator.partitioner import partition_for
from offset_audit.errors import UserError
from offset_audit.generator.writers import SNAPSHOT_SCHEMA
from offset_audit.inputs.opened import open_dump
from offset_audit.inputs.resumed import InputFacts, segments_to_open
from offset_audit.outputs.audit_state import (
    STATE_FORMAT,
    Position,
    StateMergedMeanwhile,
    StoredState,
    read_state,
    state_lock,
    write_positions,
)
from offset_audit.runs.audit import run_audit
from offset_audit.runs.incremental import ReadAgain, check_ends, plan
from offset_audit.runtime.config import load_settings
from offset_audit.views.summary import state_lines

PARTITIONS = 3
TOPIC = "__consumer_offsets"
AS_OF = "2026-03-01T00:00:00"
TABLES = ("partition_verdicts", "group_verdicts", "deletion_candidates")


@dataclass
class Entry:
    """One batch of the log: a record (key, value, ts), transactional under `producer`, or a marker."""

    key: bytes | None
    value: bytes | None
    ts: int
    producer: int = -1
    control: bool | None = None  # a marker: True COMMIT, False ABORT


@dataclass
class Log:
    """Each partition's batches by offset (a cleaner leaves gaps), and the topic's id (written to each
    folder's partition.metadata unless `metadata` is off, as brokers before 2.8 leave it)."""

    entries: dict[int, dict[int, Entry]] = field(default_factory=lambda: {p: {} for p in range(PARTITIONS)})
    topic_id: str = field(default_factory=lambda: uuid.uuid4().hex[:22])
    next_offset: dict[int, int] = field(default_factory=lambda: dict.fromkeys(range(PARTITIONS), 0))
    # group -> (producer id, the run that opened it) of each open transaction; how many were settled in a
    # later run than the one that opened them, and how many cleanings removed something.
    open_txn: dict[str, tuple[int, int]] = field(default_factory=dict)
    settled_across_runs: int = 0
    cleaned: int = 0
    metadata: bool = True

    def append(self, partition: int, entry: Entry) -> None:
        self.entries[partition][self.next_offset[partition]] = entry
        self.next_offset[partition] += 1

    def write(self, data_dir: Path, segment_batches: int) -> None:
        """The log as a broker's data directory: a segment file every `segment_batches` batches."""
        if data_dir.exists():
            for old in data_dir.glob("*/*"):
                old.unlink()
        for partition, entries in self.entries.items():
            folder = data_dir / f"{TOPIC}-{partition}"
            folder.mkdir(parents=True, exist_ok=True)
            if self.metadata:
                (folder / "partition.metadata").write_text(f"version: 0\ntopic_id: {self.topic_id}")
            offsets = sorted(entries)
            for start in range(0, len(offsets), segment_batches):
                chunk = offsets[start : start + segment_batches]
                data = b""
                for offset in chunk:
                    e = entries[offset]
                    if e.control is not None:
                        data += marker(offset, e.producer, e.control, e.ts)
                    else:
                        attributes = TRANSACTIONAL if e.producer >= 0 else 0
                        data += batch(offset, [(e.key, e.value, e.ts)], e.producer, attributes)
                (folder / f"{chunk[0]:020d}.log").write_bytes(data)

    def last_offsets(self) -> dict[int, int]:
        """Each partition's last offset (a run that reads the log now reads up to there)."""
        return {p: max(entries) for p, entries in self.entries.items() if entries}

    def clean(self, below: int, read_up_to: dict[int, int]) -> None:
        """The log cleaner over [0, below): drop ordinary records a later ordinary record of the same key
        replaces, and tombstones the runs have read already (older than delete.retention.ms by then)
        that no earlier record of their key outlives."""
        for partition, entries in self.entries.items():
            last: dict[bytes, int] = {}
            for offset in sorted(entries):
                e = entries[offset]
                if e.control is None and e.producer < 0 and e.key is not None:
                    last[e.key] = offset
            for offset in sorted(entries):
                e = entries[offset]
                if offset >= below or e.control is not None or e.producer >= 0 or e.key is None:
                    continue
                if last[e.key] != offset or (e.value is None and offset < read_up_to.get(partition, 0)):
                    del entries[offset]
                    self.cleaned += 1


def random_log_events(rng: random.Random, log: Log, steps: int, day0: int, run: int, transactions: bool = True) -> None:
    """`steps` random acts of groups: commits, tombstones, group records and deletions, transactional
    commits committed, aborted or left open (unless not `transactions`)."""
    groups = [f"g{i}" for i in range(8)]
    topics = ["orders", "clicks"]
    for step in range(steps):
        day = day0 + step // 4
        group = rng.choice(groups)
        partition = partition_for(group, PARTITIONS)
        roll = rng.random()
        if group in log.open_txn and roll < 0.35:
            producer, opened = log.open_txn.pop(group)
            log.settled_across_runs += opened < run
            log.append(partition, Entry(None, None, T0 + day * DAY, producer, rng.random() < 0.7))
        elif roll < 0.55 or (not transactions and roll >= 0.84):
            key, value, ts = commit(group, rng.choice(topics), rng.randrange(2), rng.randrange(10_000), day)
            log.append(partition, Entry(key, value, ts))
        elif roll < 0.62:
            key, value, ts = offset_tombstone(group, rng.choice(topics), rng.randrange(2), day)
            log.append(partition, Entry(key, value, ts))
        elif roll < 0.78:
            members = [[rng.choice(topics)] for _ in range(rng.randrange(3))]
            key, value, ts = group_record(group, day, members=members)
            log.append(partition, Entry(key, value, ts))
        elif roll < 0.84:
            key, value, ts = group_tombstone(group, day)
            log.append(partition, Entry(key, value, ts))
        else:
            producer, _ = log.open_txn.setdefault(group, (1000 + groups.index(group), run))
            key, value, ts = commit(group, rng.choice(topics), rng.randrange(2), rng.randrange(10_000), day)
            log.append(partition, Entry(key, value, ts, producer))


def table(output: Path, name: str) -> list[dict]:
    rows = DeltaTable(str(output / name)).to_pyarrow_table().to_pylist()
    return sorted(rows, key=repr)


def audit(spark, data_dir: Path, output: Path, keep_state: str | None):
    settings = load_settings(as_of=AS_OF, input_format="segments")
    return run_audit(spark, [str(data_dir)], str(output), settings, snapshot_id="s", keep_state=keep_state)


@pytest.mark.parametrize("seed", range(6))
def test_incremental_runs_equal_a_full_read(spark, tmp_path, seed):
    rng = random.Random(seed)
    log = Log()
    data_dir, state_out = tmp_path / "data", tmp_path / "incremental"
    runs = rng.randrange(2, 8) if seed else 20
    steps = rng.randrange(60, 160)
    read_up_to: dict[int, int] = {}
    last_read: dict[int, int] = {}
    states, expected = [], []
    for run in range(runs):
        recreated = run and rng.random() < 0.12
        if recreated:  # the topic deleted and created again: offsets start over, under a new topic id
            log = Log()
        random_log_events(rng, log, max(1, steps // runs + rng.randrange(-3, 4)), day0=run * 3, run=run)
        if run and rng.random() < 0.5:
            log.clean(rng.randrange(1, 1 + max(log.next_offset.values())), read_up_to)
        # The cleaner may have removed the batch a run read last (a later record of its key replaced it):
        # the next run cannot find it again, and reads everything (inputs.last_read).
        cleaned_away = not recreated and any(o not in log.entries[p] for p, o in last_read.items())
        expected.append("first" if not run else "reset" if recreated or cleaned_away else "resumed")
        log.write(data_dir, segment_batches=rng.choice([3, 7, 50]))
        resumed = audit(spark, data_dir, state_out, "incremental")
        full = audit(spark, data_dir, tmp_path / f"full-{run}", None)
        states.append(resumed.report.state)
        last_read = log.last_offsets()
        if recreated:  # the new topic id, or a partition with no segment yet
            assert "topic id changed" in resumed.report.state_reason or "partition" in resumed.report.state_reason
        elif cleaned_away:
            assert "the log is not the one the state was read from" in resumed.report.state_reason
        assert resumed.report.reconciles
        for name in TABLES:
            assert table(state_out, name) == table(tmp_path / f"full-{run}", name), (seed, run, name, states)
        read_up_to = dict(log.next_offset)
        assert (resumed.offsets, resumed.expired) == (full.offsets, full.expired)
    assert states == expected
    if seed == 0:  # the long history meets every case
        assert log.settled_across_runs and log.cleaned and "reset" in states, (log.settled_across_runs, log.cleaned)


def test_a_segment_below_the_position_is_not_opened(tmp_path):
    from offset_audit.inputs.log_files import LogFile

    files = tuple(LogFile(str(tmp_path / f"{base:020d}.log"), "segments", 0, 100) for base in (0, 40, 90))
    assert [Path(f.path).stem for f in segments_to_open(files, 95)] == ["00000000000000000090"]
    assert len(segments_to_open(files, 90)) == 1  # 90 is the last file's first offset
    assert len(segments_to_open(files, 89)) == 2
    assert segments_to_open(files, 0) == files


def test_state_keeps_pending_and_last_records_only(spark, tmp_path):
    log = Log()
    for day in range(5):
        key, value, ts = commit("g0", "orders", 0, day, day)
        log.append(partition_for("g0", PARTITIONS), Entry(key, value, ts))
    key, value, ts = commit("g0", "orders", 1, 7, 6)
    log.append(partition_for("g0", PARTITIONS), Entry(key, value, ts, producer=77))  # left open
    log.write(tmp_path / "data", 2)
    audit(spark, tmp_path / "data", tmp_path / "out", "incremental")
    stored = DeltaTable(str(tmp_path / "out/state/records")).to_pyarrow_table()
    assert sorted(stored.column("transaction").to_pylist(), key=str) == [None, "pending"]
    assert sorted(stored.column("producer_id").to_pylist(), key=str) == [77, None]
    positions = DeltaTable(str(tmp_path / "out/state/positions")).to_pyarrow_table().to_pylist()
    assert {p["source_partition"]: p["next_offset"] for p in positions}[partition_for("g0", PARTITIONS)] == 6
    assert all(p["topic_id"] == log.topic_id for p in positions)
    assert pa.compute.sum(stored.column("source_offset")).as_py() == 4 + 5


def test_a_resumed_run_takes_carried_group_records_as_kept_decoded_not_decoded_again(spark, tmp_path):
    log = Log()
    group = partition_for("g0", PARTITIONS)
    for entry in (
        group_record("g0", 1, members=[["orders"], ["orders", "audit"]]),
        commit("g0", "orders", 0, 5, 1),
        modern(K.CONSUMER_GROUP_METADATA, {"GroupId": "g0"}, {"Epoch": 5}, 1),
    ):
        log.append(group, Entry(*entry))
    log.write(tmp_path / "data", 2)
    out = tmp_path / "out"
    audit(spark, tmp_path / "data", out, "incremental")
    records_dir = out / "state/records"
    stored = DeltaTable(str(records_dir)).to_pyarrow_table()
    kept = {r["decoded_class"]: r for r in stored.to_pylist()}
    assert set(kept) == {"group_metadata", "modern", None}  # the commit is decoded again each run
    assert kept["group_metadata"]["group_metadata"]["group_id"] == "g0"
    assert [m["member_index"] for m in kept["group_metadata"]["group_members"]] == [0, 1]
    assert kept["group_metadata"]["decoded_value_version"] == 3
    assert kept["modern"]["modern_group_record"]["epoch"] == 5
    assert kept["modern"]["group_members"] is None and kept[None]["group_metadata"] is None

    # The kept rows, altered where they lie: a run that decoded the bytes again would not show it.
    for path in DeltaTable(str(records_dir)).file_uris():
        rows = pq.read_table(path)
        altered = []
        for row in rows.to_pylist():
            if row.get("decoded_class") == "group_metadata":
                row["group_metadata"]["generation"] = 4242
                row["group_members"][1]["client_id"] = "from-the-state"
            altered.append(row)
        pq.write_table(pa.Table.from_pylist(altered, schema=rows.schema), path)
    log.append(group, Entry(*commit("g0", "orders", 1, 9, 2)))
    log.write(tmp_path / "data", 2)
    resumed = audit(spark, tmp_path / "data", out, "incremental")
    assert resumed.report.state == "resumed" and resumed.report.reconciles
    assert [r["generation"] for r in table(out, "decoded/group_metadata")] == [4242]
    assert sorted(str(r["client_id"]) for r in table(out, "decoded/group_members"))[-1] == "from-the-state"
    assert [r["epoch"] for r in table(out, "decoded/modern_group_records")] == [5]
    # Counted as decoding them counts them: by class, record type, version and layout, as a full read.
    full = audit(spark, tmp_path / "data", tmp_path / "full", None)
    assert resumed.report.decoded_by_type == full.report.decoded_by_type
    assert resumed.report.by_class == full.report.by_class
    assert full.report.by_class["group_metadata"] == full.report.by_class["modern"] == 1


# The rules a state is checked by (runs.incremental.plan) ------------------------------------------------


def stored(positions: dict[int, int], **given) -> StoredState:
    merged_at = given.pop("merged_at", datetime.now(UTC))
    state_format = given.pop("state_format", STATE_FORMAT)
    rows = {p: Position(p, n, **{"input_format": "segments", **given}) for p, n in positions.items()}
    return StoredState(rows, 3, 2, state_format, merged_at, "r", {}, 0)


def why(state, facts=None, mode="incremental", retention=86_400_000, input_format="segments"):
    return plan(state, facts or InputFacts(), mode, input_format, retention, "/audit")


def test_a_state_that_holds_resumes_from_its_positions():
    made = why(stored({0: 10, 1: 4}), InputFacts((0, 1), {0: 0, 1: 0}, cleaned_to={}))
    assert (made.state, made.reason, made.resume.floors) == ("resumed", None, {0: 10, 1: 4})
    assert why(None).state == "first" and why(None, mode="full").state == "full"
    assert why(stored({0: 10}), mode="full").resume is None


@pytest.mark.parametrize(
    ("state", "facts", "says"),
    [
        (stored({0: 10}), InputFacts((0,), {0: 11}), "log start offset 11 moved past the position read up to (10)"),
        (stored({0: 10, 1: 3}), InputFacts((0,)), "partition count changed: partition 1"),
        (stored({0: 10}), InputFacts((0, 1), whole_topic=True), "partition count changed from 1 to 2"),
        (stored({0: 10}, topic_id="a"), InputFacts((0,), topic_ids={0: "b"}), "topic id changed"),
        (stored({0: 10}, state_format=STATE_FORMAT - 1), InputFacts(), "older version of this tool"),
        (stored({0: 10}, input_format="parquet"), InputFacts(), "counts positions in parquet input"),
        (
            stored({0: 10}, merged_at=datetime.now(UTC) - timedelta(days=2)),
            InputFacts(),
            "merged 2 days ago, more than delete_retention_ms (1d)",
        ),
        (
            stored({0: 10, 1: 5}, merged_at=datetime.now(UTC) - timedelta(days=2)),
            InputFacts((0, 1), cleaned_to={0: 3, 1: 9}),
            "the cleaner has cleaned partition 1 past its position",
        ),
    ],
)
def test_a_state_that_cannot_be_trusted_is_read_again_and_says_why(state, facts, says):
    made = why(state, facts)
    assert (made.state, made.resume) == ("reset", None)
    assert says in made.reason, made.reason


def test_runs_further_apart_than_delete_retention_resume_where_the_cleaner_has_not_passed():
    old = stored({0: 10, 1: 5}, merged_at=datetime.now(UTC) - timedelta(days=2))
    assert why(old, InputFacts((0, 1), cleaned_to={0: 10, 1: 2})).state == "resumed"


@pytest.mark.parametrize(
    ("state", "facts", "says"),
    [
        (stored({0: 1}, cluster_id="A"), InputFacts(cluster_id="B"), "belongs to cluster A, the input to cluster B"),
        (stored({0: 1}, state_format=STATE_FORMAT + 1), InputFacts(), "newer version of this tool"),
    ],
)
def test_a_state_of_another_cluster_or_a_newer_tool_is_refused(state, facts, says):
    with pytest.raises(UserError, match=says):
        why(state, facts)
    if "cluster" in says:
        with pytest.raises(UserError):
            why(state, facts, mode="full")


def test_offsets_that_went_backwards_are_found_once_read():
    check = check_ends(why(stored({0: 10, 1: 7})))
    check({0: 12})
    with pytest.raises(ReadAgain, match="partition 1's offsets went backwards"):
        check({0: 12, 1: 3})


def test_offsets_gone_backwards_under_the_same_topic_id_read_everything_again(spark, tmp_path):
    rng = random.Random(7)
    log = Log()
    random_log_events(rng, log, 60, 0, 0)
    log.write(tmp_path / "data", 5)
    audit(spark, tmp_path / "data", tmp_path / "out", "incremental")
    again = Log(topic_id=log.topic_id)  # a folder restored from an older copy, say
    random_log_events(rng, again, 12, 0, 0)
    again.write(tmp_path / "data", 5)
    result = audit(spark, tmp_path / "data", tmp_path / "out", "incremental")
    assert result.report.state == "reset" and "went backwards" in result.report.state_reason
    audit(spark, tmp_path / "data", tmp_path / "full", None)
    for name in TABLES:
        assert table(tmp_path / "out", name) == table(tmp_path / "full", name)


def test_a_run_that_finds_the_state_merged_meanwhile_says_so_and_leaves_it(spark, tmp_path):
    log = Log()
    random_log_events(random.Random(3), log, 40, 0, 0)
    log.write(tmp_path / "data", 5)
    audit(spark, tmp_path / "data", tmp_path / "out", "incremental")
    first = DeltaTable(str(tmp_path / "out/state/positions")).version()
    read = read_state(str(tmp_path / "out"))
    audit(spark, tmp_path / "data", tmp_path / "out", "incremental")  # another run merges meanwhile
    with pytest.raises(StateMergedMeanwhile):
        write_positions(str(tmp_path / "out"), list(read.positions.values()), read.records_version, first, "late")
    assert DeltaTable(str(tmp_path / "out/state/positions")).version() == first + 1


def test_what_incremental_cannot_do_is_refused_before_spark_starts(no_spark, tmp_path):
    from click.testing import CliRunner

    from offset_audit.cli.main import main

    text = Path(__file__).parents[1] / "textdumps" / "dump_log_3_8.txt"
    cases = [
        (["--input", str(text)], "cannot resume a dump-log text dump"),
        (["--input", str(text), "--input-format", "console", "--as-of", "now"], "cannot resume a console text dump"),
    ]
    log = Log()
    random_log_events(random.Random(1), log, 10, 0, 0)
    log.write(tmp_path / "data", 5)
    cases.append((["--input", str(tmp_path / "data"), "--keep-decoded"], "cannot be combined with --incremental"))
    for args, says in cases:
        result = CliRunner().invoke(main, ["audit", *args, "--output", str(tmp_path / "out"), "--incremental"])
        assert result.exit_code == 2 and says in result.output and result.output.count("\n") == 1, result.output
    with state_lock(str(tmp_path / "busy")):
        result = CliRunner().invoke(
            main, ["audit", "--input", str(tmp_path / "data"), "--output", str(tmp_path / "busy"), "--incremental"]
        )
    assert result.exit_code == 2 and "another incremental audit (pid" in result.output, result.output


def test_another_clusters_dump_keeps_a_state_of_its_own_and_is_refused_the_firsts(spark, tmp_path, monkeypatch):
    """The dump of another cluster (its meta.properties) is refused the folder unless its run names it,
    and handed to the first's state by the first's name, before Spark starts; named, it gets a state of
    its own beside the first's (runs.clusters, tests/runs/test_fleet.py)."""
    from click.testing import CliRunner

    import offset_audit.runtime.session
    from offset_audit.cli.main import main

    log = Log()
    random_log_events(random.Random(2), log, 20, 0, 0)
    log.write(tmp_path / "data", 5)
    (tmp_path / "data" / "meta.properties").write_text("version=1\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\nnode.id=1\n")
    audit(spark, tmp_path / "data", tmp_path / "out", "incremental")
    assert read_state(str(tmp_path / "out")).cluster_id == "AAAAAAAAAAAAAAAAAAAAAA"
    (tmp_path / "data" / "meta.properties").write_text("version=1\ncluster.id=BBBBBBBBBBBBBBBBBBBBBB\nnode.id=1\n")
    args = ["audit", "--input", str(tmp_path / "data"), "--output", str(tmp_path / "out"), "--incremental"]
    with monkeypatch.context() as patched:
        patched.setattr(offset_audit.runtime.session, "get_spark", lambda *_a, **_k: pytest.fail("Spark started"))
        unnamed = CliRunner().invoke(main, args)
        result = CliRunner().invoke(main, [*args, "--cluster", "AAAAAAAAAAAAAAAAAAAAAA"])
    assert unnamed.exit_code == 2 and unnamed.output.count("\n") == 1, unnamed.output
    assert "holds the audits of cluster AAAAAAAAAAAAAAAAAAAAAA, and this input is cluster BBBB" in unnamed.output
    assert not (tmp_path / "out" / "clusters").exists()
    assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
    assert (
        "names cluster AAAAAAAAAAAAAAAAAAAAAA" in result.output and "is cluster BBBBBBBBBBBBBBBBBBBBBB" in result.output
    )
    named = load_settings(as_of=AS_OF, input_format="segments", cluster="us")
    run_audit(spark, [str(tmp_path / "data")], str(tmp_path / "out"), named, snapshot_id="s", keep_state="incremental")
    assert read_state(str(tmp_path / "out")).cluster_id == "AAAAAAAAAAAAAAAAAAAAAA"
    assert read_state(str(tmp_path / "out" / "clusters" / "us")).cluster_id == "BBBBBBBBBBBBBBBBBBBBBB"


# Kafka-source snapshots that grow -------------------------------------------------------------------


def snapshot_rows(log: Log, since: dict[int, int]) -> pa.Table:
    """The log's records from each partition's `since` on, as Spark's Kafka source writes them."""
    rows = [
        (e.key, e.value, p, o, e.ts)
        for p, entries in log.entries.items()
        for o, e in sorted(entries.items())
        if o >= since.get(p, 0) and e.control is None and e.producer < 0
    ]
    keys, values, partitions, offsets, stamps = zip(*rows, strict=True) if rows else ([],) * 5
    return pa.table(
        {
            "key": pa.array(keys, pa.binary()),
            "value": pa.array(values, pa.binary()),
            "topic": [TOPIC] * len(keys),
            "partition": pa.array(partitions, pa.int32()),
            "offset": pa.array(offsets, pa.int64()),
            "timestamp": pa.array([s * 1000 for s in stamps], pa.timestamp("us", tz="UTC")),
            "timestampType": pa.array([0] * len(keys), pa.int32()),
        },
        schema=SNAPSHOT_SCHEMA,
    )


@pytest.mark.parametrize("kind", ["parquet", "delta"])
def test_a_growing_kafka_source_snapshot_reads_its_new_rows_only(spark, tmp_path, kind):
    import pyarrow.parquet as pq
    from deltalake import write_deltalake

    rng = random.Random(11)
    log, since = Log(), {}
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    for run in range(4):
        random_log_events(rng, log, 30, run * 3, run, transactions=False)
        rows = snapshot_rows(log, since)
        if kind == "parquet":
            pq.write_table(rows, snapshot / f"part-{run:05d}.parquet")
        else:
            write_deltalake(str(snapshot), rows, mode="append")
        settings = load_settings(as_of=AS_OF)
        resumed = run_audit(
            spark, [str(snapshot)], str(tmp_path / "out"), settings, snapshot_id="s", keep_state="incremental"
        )
        run_audit(spark, [str(snapshot)], str(tmp_path / f"full-{run}"), settings, snapshot_id="s")
        for name in TABLES:
            assert table(tmp_path / "out", name) == table(tmp_path / f"full-{run}", name), (run, name)
        assert resumed.report.state == ("first" if run == 0 else "resumed")
        assert resumed.report.records_read - resumed.report.records_carried == rows.num_rows
        since = dict(log.next_offset)


def skewed_log() -> Log:
    """A log whose partition 0 starts far above the others (a topic compacted for years): no row group
    that holds all partitions lies below every position, so footer statistics skip nothing."""
    log = Log()
    log.next_offset[0] = 1 << 40
    return log


def grow_snapshot(rng: random.Random, snapshot: Path, kind: str, log: Log, rows: pa.Table, run: int) -> str:
    """The run's new rows added to the snapshot as a scheduled export would, and now and then what else
    happens to a snapshot's files; what was done."""
    import pyarrow.parquet as pq
    from deltalake import write_deltalake

    rows = rows.sort_by("timestamp")  # an export's order: every partition in each file
    roll = rng.random() if run else 1.0
    if kind == "parquet":
        files = sorted(snapshot.glob("*.parquet"))
        if roll < 0.25:  # the newest file written again with the new rows: a file that grew in place
            grown = pa.concat_tables([pq.read_table(files[-1]), rows])
            pq.write_table(grown, files[-1], row_group_size=8)
            return "grown in place"
        pq.write_table(rows, snapshot / f"part-{run:05d}.parquet", row_group_size=8)
        if roll < 0.45:  # an old file written again, the same rows under the same name
            old = rng.choice(files)
            pq.write_table(pq.read_table(old), old, row_group_size=5)
            return "rewritten"
        return "appended"
    if roll < 0.2:  # the table overwritten with every record of the log: other files, the same log
        write_deltalake(str(snapshot), snapshot_rows(log, {}), mode="overwrite")
        return "overwritten"
    write_deltalake(str(snapshot), rows, mode="append")
    if roll < 0.45:
        DeltaTable(str(snapshot)).optimize.compact()
        return "compacted"
    return "appended"


@pytest.mark.parametrize(("kind", "seed"), [("parquet", 0), ("parquet", 1), ("delta", 0), ("delta", 1)])
def test_snapshots_grown_by_files_compacted_or_rewritten_equal_a_full_read(spark, tmp_path, kind, seed):
    """Runs over a Kafka-source snapshot equal a full read of it as it stands, row for row, while it grows by
    files (Parquet: new files, files written again under their name, a file grown in place; Delta:
    appends, compactions, overwrites with the same records, a replaced log). A run opens only the files
    it has not read as they are now (DIR/state/files), and finds its last records read again only where
    their files changed."""
    rng = random.Random(seed)
    log, since = skewed_log(), {}
    snapshot, out = tmp_path / "snapshot", tmp_path / "out"
    snapshot.mkdir()
    settings = load_settings(as_of=AS_OF)
    done = []
    for run in range(7):
        replaced = kind == "delta" and run > 1 and rng.random() < 0.15
        if replaced:  # another log whose offsets read as this one grown
            log, since = more_records_than(log, skewed_log(), rng, run * 3, transactions=False), {}
            from deltalake import write_deltalake

            write_deltalake(str(snapshot), snapshot_rows(log, {}), mode="overwrite")
            act, rows = "replaced", None
        else:
            random_log_events(rng, log, rng.randrange(8, 30), run * 3, run, transactions=False)
            rows = snapshot_rows(log, since)
            act = grow_snapshot(rng, snapshot, kind, log, rows, run)
        done.append(act)
        resumed = run_audit(spark, [str(snapshot)], str(out), settings, snapshot_id="s", keep_state="incremental")
        run_audit(spark, [str(snapshot)], str(tmp_path / f"full-{run}"), settings, snapshot_id="s")
        for name in TABLES:
            assert table(out, name) == table(tmp_path / f"full-{run}", name), (run, name, done)
        report = resumed.report
        assert report.reconciles
        if run == 0:
            assert report.state == "first"
        elif act == "replaced":
            assert report.state == "reset" and "not the one read last" in report.state_reason, (done, report)
        else:
            assert report.state == "resumed", (done, report.state_reason)
            assert report.records_read - report.records_carried == rows.num_rows, done
            if act in ("appended", "rewritten"):
                assert report.files_note.startswith("files: 1 new read"), report.files_note
            if act == "rewritten":
                assert "1 changed since read again" in report.files_note, report.files_note
            if act in ("compacted", "overwritten"):
                assert "read again, as later versions removed files" in report.files_note, report.files_note
        since = dict(log.next_offset)
    if kind == "parquet":
        assert {"appended", "rewritten", "grown in place"} <= set(done), done
    else:
        assert {"appended", "compacted"} <= set(done) and {"replaced", "overwritten"} & set(done), done


def test_a_new_snapshot_file_of_records_below_the_positions_is_read_again_whole_and_says_why(spark, tmp_path):
    """A new file whose records of a partition all lie below its position is a recreated topic, or an
    export that repeats records read before: the run cannot tell from the new files alone, and reads
    everything again."""
    import pyarrow.parquet as pq

    rng = random.Random(5)
    log, snapshot, out = Log(), tmp_path / "snapshot", tmp_path / "out"
    snapshot.mkdir()
    settings = load_settings(as_of=AS_OF)
    random_log_events(rng, log, 40, 0, 0, transactions=False)
    rows = snapshot_rows(log, {})
    pq.write_table(rows, snapshot / "part-00000.parquet")
    run_audit(spark, [str(snapshot)], str(out), settings, snapshot_id="s", keep_state="incremental")
    pq.write_table(rows.slice(0, 5), snapshot / "part-00001.parquet")  # an export that ran again
    result = run_audit(spark, [str(snapshot)], str(out), settings, snapshot_id="s", keep_state="incremental")
    reason = result.report.state_reason
    assert result.report.state == "reset" and "or those files repeat records read before" in reason, (
        reason,
        result.report.files_note,
        result.report.records_read,
    )
    run_audit(spark, [str(snapshot)], str(tmp_path / "full"), settings, snapshot_id="s")
    for name in TABLES:
        assert table(out, name) == table(tmp_path / "full", name), name


def test_the_files_a_resumed_run_opens():
    from offset_audit.inputs.snapshot_files import SeenFile, SeenFiles, files_to_read

    before = SeenFiles((SeenFile("a", 10, 1), SeenFile("b", 20, 2), SeenFile("c", 30, 3)))
    now = SeenFiles((SeenFile("a", 10, 1), SeenFile("b", 25, 9), SeenFile("d", 5, 4)))
    files = files_to_read(now, before)
    assert (files.paths, files.new, files.changed, files.unopened, files.gone) == (("d", "b"), 1, ("b",), 1, 1)
    assert files.note(before, now) == (
        "files: 1 new read, 1 changed since read again (b), 1 read before left unopened, 1 read before gone"
    )
    assert files.look_for("b") and files.look_for(None) and not files.look_for("a")
    same = files_to_read(before, before)
    assert (same.paths, same.unopened, same.look_for(None)) == ((), 3, False)
    # Delta: files are never changed; a version that removed one read before may have rewritten its records.
    delta_before = SeenFiles((SeenFile("x", 1, 1), SeenFile("y", 1, 1)), table_version=4)
    added = files_to_read(SeenFiles((*delta_before.files, SeenFile("z", 1, 2)), 5), delta_before)
    assert (added.paths, added.rewritten, added.look_for(None)) == (("z",), False, False)
    compacted = files_to_read(SeenFiles((SeenFile("xy", 2, 2),), 6), delta_before)
    assert (compacted.paths, compacted.rewritten, compacted.look_for("x")) == (("xy",), True, True)
    assert compacted.note(delta_before, SeenFiles((), 6)) == (
        "files: every one of the 1 read again, as later versions removed files the run before read "
        "(Delta version 4 read before, 6 now)"
    )


# Kills ------------------------------------------------------------------------------------------------

KILL_AT = (
    "committing the decode tables",
    "judging and writing group_verdicts",
    "committing the state's positions",
    "writing the runs row",
)


@pytest.mark.parametrize("stage", KILL_AT)
def test_a_run_killed_at_any_stage_leaves_a_state_the_next_run_answers_rightly(spark, tmp_path, stage):
    import os
    import signal
    import subprocess
    import sys

    rng = random.Random(5)
    log = Log()
    random_log_events(rng, log, 50, 0, 0)
    log.write(tmp_path / "data", 4)
    audit(spark, tmp_path / "data", tmp_path / "out", "incremental")
    random_log_events(rng, log, 30, 3, 1)
    log.write(tmp_path / "data", 4)
    program = Path(sys.executable).parent / "offset-audit"
    args = [str(program), "audit", "--input", str(tmp_path / "data"), "--output", str(tmp_path / "out")]
    args += ["--incremental", "--as-of", AS_OF, "--snapshot-id", "s"]
    env = {**os.environ, "OFFSET_AUDIT_WARM": "0"}
    child = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    seen = []
    for line in child.stderr:
        seen.append(line)
        if f"offset-audit: {stage} ..." in line:
            os.kill(child.pid, signal.SIGKILL)
            break
    child.wait(timeout=120)
    assert child.returncode == -signal.SIGKILL, "".join(seen)
    resumed = audit(spark, tmp_path / "data", tmp_path / "out", "incremental")
    audit(spark, tmp_path / "data", tmp_path / "full", None)
    for name in TABLES:
        assert table(tmp_path / "out", name) == table(tmp_path / "full", name), (stage, name)
    assert resumed.report.state == "resumed"
    if stage == "committing the state's positions":  # state/log holds the killed run's records, and again
        assert history_rows(spark, tmp_path / "out") == history_rows(spark, tmp_path / "h", [str(tmp_path / "data")])


def test_a_resumed_read_of_unchanged_folders_opens_no_segment_below_the_positions(spark, tmp_path):
    from offset_audit.inputs.dump import resumed_source
    from offset_audit.inputs.resumed import Resume

    log = Log()
    random_log_events(random.Random(4), log, 90, 0, 0)
    log.write(tmp_path / "data", 4)
    audit(spark, tmp_path / "data", tmp_path / "out", "incremental")
    state = read_state(str(tmp_path / "out"))
    floors = {p: position.next_offset for p, position in state.positions.items()}
    source = resumed_source(
        spark,
        open_dump([str(tmp_path / "data")], load_settings(input_format="segments")),
        Resume(floors, state.record_files),
    )
    for unit in source.units:
        files = sorted((tmp_path / "data" / f"{TOPIC}-{unit.partition}").glob("*.log"))
        assert [Path(f.path).name for f in unit.segments] == [files[-1].name], unit.partition
        assert unit.record_files == state.record_files.get(unit.partition, ())
    assert source.files == PARTITIONS < sum(1 for _ in (tmp_path / "data").glob("*/*.log"))


def test_the_resume_filter_keeps_exact_offsets_and_what_it_cannot_place():
    from offset_audit.inputs.resumed import CARRIED, ResumeFilter

    big = 2**53 + 1
    batch = pa.RecordBatch.from_pydict(
        {
            "source_partition": pa.array([0, 0, 0, None, 1, 1], pa.int32()),
            "source_offset": pa.array([big - 5, big, big + 2, None, 3, 1], pa.int64()),
            "source_error": pa.array([None, None, None, "bad bytes", "bad batch", None]),
            CARRIED: [False, False, False, False, False, True],
        }
    )
    kept = ResumeFilter({0: big, 1: 5}).take(batch)
    assert kept.column("source_offset").to_pylist() == [big, big + 2, None, 1]
    assert CARRIED not in kept.schema.names
    only = ResumeFilter({0: big, 1: 5})
    only.take(batch)
    assert only.ends == {0: big + 3} and only.carried == 1


def test_a_resumed_run_starts_the_jvm_for_what_it_reads_not_for_the_whole_log(spark, tmp_path):
    from offset_audit.runs.incremental import resumed_bytes

    log = Log()
    random_log_events(random.Random(6), log, 90, 0, 0)
    log.write(tmp_path / "data", 4)
    settings = load_settings(input_format="segments")
    args = (open_dump([str(tmp_path / "data")], settings), str(tmp_path / "out"))
    assert resumed_bytes(*args, "incremental") is None  # no state yet: the whole input
    audit(spark, tmp_path / "data", tmp_path / "out", "incremental")
    last_files = [sorted(folder.glob("*.log"))[-1] for folder in (tmp_path / "data").glob(f"{TOPIC}-*")]
    state_files = list((tmp_path / "out" / "state" / "records").rglob("*.parquet"))
    expected = sum(f.stat().st_size for f in last_files) + sum(f.stat().st_size for f in state_files)
    assert resumed_bytes(*args, "incremental") == expected
    assert resumed_bytes(*args, "full") is None


# The log the runs keep (state/log) and history --audit -------------------------------------------------


def history_rows(spark, output: Path, inputs: list[str] | None = None, generation: int | None = None) -> list[dict]:
    """offset_history of a dump, or (no `inputs`) of what the audit folder `output` kept."""
    from offset_audit.outputs.kept_log import kept_log
    from offset_audit.runs.history import run_history
    from offset_audit.views.summary import history_summary

    target = output / f"history-{generation}" if inputs is None else output
    if inputs is None:
        kept = kept_log(str(output), generation)
        result = run_history(spark, [], str(target), load_settings(), snapshot_id="s", kept=kept)
        summaries.append(history_summary(result, str(target)))
    else:
        run_history(spark, inputs, str(target), load_settings(input_format="segments"), snapshot_id="s")
    rows = DeltaTable(str(target / "offset_history")).to_pyarrow_table().to_pylist()
    return sorted(({k: v for k, v in r.items() if k != "snapshot_id"} for r in rows), key=repr)


summaries: list[str] = []


def grow(whole: Log, log: Log) -> None:
    """Copy the records `log` gained into `whole`, which the cleaner never touches."""
    for partition, entries in log.entries.items():
        whole.entries[partition].update({o: e for o, e in entries.items() if o >= whole.next_offset[partition]})
        whole.next_offset[partition] = log.next_offset[partition]


@pytest.mark.parametrize("seed", [1, 2])
def test_history_of_an_audit_is_the_history_of_its_log_before_the_cleaner_ran(spark, tmp_path, seed):
    """Runs read a log whose cleaner removes, between runs, superseded records and tombstones the runs have
    read; the topic is recreated once. history --audit explains each generation as a history of that log
    before any cleaning, which the log itself no longer can."""
    rng = random.Random(seed)
    log = Log()
    whole = Log(topic_id=log.topic_id)
    wholes = [whole]
    data_dir, out = tmp_path / "data", tmp_path / "audit"
    read_up_to: dict[int, int] = {}
    recreate_at = 2 + seed
    for run in range(6):
        if run == recreate_at:
            log = Log()
            whole = Log(topic_id=log.topic_id)
            wholes.append(whole)
            read_up_to = {}
        random_log_events(rng, log, 30, day0=run * 3, run=run)
        grow(whole, log)
        if read_up_to:  # behind the batch each partition's run read last, as behind the active segment
            log.clean(min(read_up_to.values()) - 1, read_up_to)
        log.write(data_dir, segment_batches=rng.choice([3, 7]))
        report = audit(spark, data_dir, out, "incremental").report
        assert f"state/log: +{report.records_logged:,} records" in "\n".join(state_lines(report))
        read_up_to = dict(log.next_offset)
    assert log.cleaned + sum(w.cleaned for w in wholes) > 0
    for generation, kept in enumerate(wholes, start=1):
        kept.write(tmp_path / f"whole-{generation}", 5)
        expected = history_rows(spark, tmp_path / f"expected-{generation}", [str(tmp_path / f"whole-{generation}")])
        assert history_rows(spark, out, generation=generation) == expected, (seed, generation)
        others = {1: "2", 2: "1"}[generation]
        assert f"log generation {generation} (" in summaries[-1] and f"other generations: {others}" in summaries[-1]
    forgot = history_rows(spark, tmp_path / "cleaned", [str(data_dir)])
    assert len(forgot) < len(expected)  # the log alone no longer tells it all


def test_the_log_takes_new_settled_records_and_those_a_marker_settled_since():
    from offset_audit.inputs.resumed import CARRIED, LogFloors, logged_rows

    big = 2**53 + 1
    batch = pa.RecordBatch.from_pydict(
        {
            "source_partition": pa.array([0, 0, 0, 0, 1, 1, 1, None], pa.int32()),
            "source_offset": pa.array([big - 1, big, big + 1, 4, 2, 7, 9, None], pa.int64()),
            "record_timestamp_ms": pa.array([1, 2, 3, 4, 5, 6, 7, 8], pa.int64()),
            "key": [b"k"] * 8,
            "value": [b"v", None, b"v", b"v", b"v", b"v", b"v", None],
            "transaction": [None, None, "pending", "committed", "committed", None, "aborted", None],
            "source_error": [None] * 6 + ["bad", "bad"],
            CARRIED: [False, False, False, True, True, True, False, False],
        }
    )
    logged = logged_rows(batch, LogFloors({0: big, 1: 0}, frozenset({(0, 4)})))
    # below the floor, pending, carried and not held, an error row: left out; a tombstone: kept
    assert logged.column("source_offset").to_pylist() == [big, 4]
    assert logged.column("value").to_pylist() == [None, b"v"]
    assert logged.column("transaction").to_pylist() == [None, "committed"]
    everything = logged_rows(batch, LogFloors(carried=True))
    assert everything.column("source_offset").to_pylist() == [big - 1, big, 4, 2, 7]


def test_history_of_an_audit_without_a_log_is_refused_in_one_sentence(no_spark, tmp_path):
    from offset_audit.outputs.kept_log import kept_log

    with pytest.raises(UserError, match="holds no state/log: only audit --incremental keeps one"):
        kept_log(str(tmp_path))


# The log a run resumes is the log it read (inputs.last_read) ------------------------------------------


def more_records_than(old: Log, new: Log, rng: random.Random, day0: int, transactions: bool = True) -> Log:
    """`new` grown with random acts until each partition `old` had records in holds more than it did: a
    log that, by its offsets alone, reads as `old` grown."""
    while any(new.next_offset[p] <= old.next_offset[p] for p in range(PARTITIONS) if old.entries[p]):
        random_log_events(rng, new, 10, day0, 0, transactions)
    return new


def newest_run(output: Path) -> dict:
    return max(DeltaTable(str(output / "runs")).to_pyarrow_table().to_pylist(), key=lambda r: r["started_at"])


def test_a_replaced_log_without_partition_metadata_is_read_again_and_says_why(spark, tmp_path):
    """The bug of issue 54: a log replaced by another with more records, in folders with no
    partition.metadata, was taken for the same log grown."""
    from offset_audit.outputs.audit_state import read_log

    rng = random.Random(21)
    data, out = tmp_path / "data", tmp_path / "out"
    log = Log(metadata=False)
    random_log_events(rng, log, 40, 0, 0)
    log.write(data, 5)
    audit(spark, data, out, "incremental")
    replaced = more_records_than(log, Log(metadata=False), rng, 3)
    replaced.write(data, 5)
    result = audit(spark, data, out, "incremental")
    reason = result.report.state_reason
    assert result.report.state == "reset" and "the log is not the one the state was read from" in reason, reason
    assert "last batch read (offset " in reason and "is another batch now" in reason, reason
    assert state_lines(result.report)[0] == f"  state: read everything again, as {reason}"
    assert (newest_run(out)["state"], newest_run(out)["state_reason"]) == ("reset", reason)
    assert read_log(str(out)).generation == 2  # another log: state/log starts a new generation
    audit(spark, data, tmp_path / "full", None)
    for name in TABLES:
        assert table(out, name) == table(tmp_path / "full", name), name


def write_snapshot(folder: Path, rows: pa.Table) -> None:
    import pyarrow.parquet as pq

    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.parquet"):
        old.unlink()
    pq.write_table(rows, folder / "part-00000.parquet", row_group_size=16)


def test_a_replaced_kafka_source_snapshot_is_read_again_and_says_why(spark, tmp_path):
    rng = random.Random(22)
    snapshot, out = tmp_path / "snapshot", tmp_path / "out"
    settings = load_settings(as_of=AS_OF)
    log = Log()
    random_log_events(rng, log, 40, 0, 0, transactions=False)
    write_snapshot(snapshot, snapshot_rows(log, {}))
    run_audit(spark, [str(snapshot)], str(out), settings, snapshot_id="s", keep_state="incremental")
    replaced = more_records_than(log, Log(), rng, 3, transactions=False)
    write_snapshot(snapshot, snapshot_rows(replaced, {}))
    result = run_audit(spark, [str(snapshot)], str(out), settings, snapshot_id="s", keep_state="incremental")
    reason = result.report.state_reason
    assert result.report.state == "reset" and "the log is not the one the state was read from" in reason, reason
    assert "is not the one read last (its timestamp, key or value differ)" in reason, reason
    assert newest_run(out)["state_reason"] == reason
    run_audit(spark, [str(snapshot)], str(tmp_path / "full"), settings, snapshot_id="s")
    for name in TABLES:
        assert table(out, name) == table(tmp_path / "full", name), name


def test_a_log_generate_writes_in_stages_is_resumed_stage_after_stage_reading_only_the_new_records(spark, tmp_path):
    import re

    from click.testing import CliRunner

    from offset_audit.cli.main import main

    data, out = tmp_path / "data", tmp_path / "out"
    states, new, staged = [], [], [0]
    for stage in ("1/3", "2/3", "3/3"):
        args = ["generate", "--format", "segments", "--records", "1500", "--partitions", "3", "--seed", "4"]
        written = CliRunner().invoke(main, [*args, "--segment-bytes", "8000", "--stage", stage, "--output", str(data)])
        assert written.exit_code == 0, written.output
        staged.append(int(re.search(r": ([\d,]+) records of", written.output).group(1).replace(",", "")))
        report = audit(spark, data, out, "incremental").report
        states.append(report.state)
        new.append(report.records_read - report.records_carried)
    assert states == ["first", "resumed", "resumed"]
    assert new == [b - a for a, b in pairwise(staged)], (new, staged)
    assert len(list(data.glob("*/*.log"))) > 3 * 3  # new segments rolled between the stages
    audit(spark, data, tmp_path / "full", None)
    for name in TABLES:
        assert table(out, name) == table(tmp_path / "full", name), name


def test_a_state_written_before_positions_named_the_last_record_read_is_read_again_once(spark, tmp_path):
    from deltalake import write_deltalake

    rng = random.Random(23)
    data, out = tmp_path / "data", tmp_path / "out"
    log = Log()
    random_log_events(rng, log, 30, 0, 0)
    log.write(data, 5)
    audit(spark, data, out, "incremental")
    # state/positions as the layout before (1) wrote it: without the last_* columns
    positions = DeltaTable(str(out / "state/positions")).to_pyarrow_table()
    positions = positions.drop_columns([n for n in positions.column_names if n.startswith("last_")])
    positions = positions.set_column(
        positions.column_names.index("state_format"), "state_format", pa.array([1] * positions.num_rows, pa.int32())
    )
    write_deltalake(str(out / "state/positions"), positions, mode="overwrite", schema_mode="overwrite")
    states = []
    for run in (1, 2):
        random_log_events(rng, log, 10, run * 3, run)
        log.write(data, 5)
        report = audit(spark, data, out, "incremental").report
        states.append((report.state, report.state_reason))
    assert states == [("reset", "the state was written by an older version of this tool (state layout 1)"),
                      ("resumed", None)]  # fmt: skip


CHANGES = ("replace", "truncate", "recreate")


@pytest.mark.parametrize("seed", range(2))
def test_runs_over_a_log_grown_replaced_truncated_or_recreated_equal_a_full_read(spark, tmp_path, seed):
    """Between runs the log grows, or is replaced by another one with more records under the same topic id
    (a copy of another cluster's, say), or is cut back below what was read and written again (a replica
    truncated), or is recreated under a new topic id; its folders have partition.metadata or not. Every
    run's tables equal a full read's, and a run resumes exactly when the log is the one it read, grown."""
    rng = random.Random(500 + seed)
    data, out = tmp_path / "data", tmp_path / "incremental"
    log = Log(metadata=rng.random() < 0.5)
    random_log_events(rng, log, 40, 0, 0)
    first, second = rng.sample(CHANGES, 2)
    acts = ["first", first, "grow", second]
    states, metadata = [], []
    for run, act in enumerate(acts):
        if act == "grow":
            random_log_events(rng, log, rng.randrange(5, 25), run * 3, run)
        elif act == "replace":
            log = more_records_than(log, Log(topic_id=log.topic_id, metadata=rng.random() < 0.5), rng, run * 3)
        elif act == "truncate":
            for partition, last in log.last_offsets().items():
                cut = rng.randrange(0, last + 1)
                log.entries[partition] = {o: e for o, e in log.entries[partition].items() if o < cut}
                log.next_offset[partition] = cut
            log.open_txn.clear()
            random_log_events(rng, log, rng.randrange(5, 30), run * 3, run)
        elif act == "recreate":
            log = Log(metadata=rng.random() < 0.5)
            random_log_events(rng, log, rng.randrange(20, 60), run * 3, run)
        metadata.append(log.metadata)
        log.write(data, segment_batches=rng.choice([3, 7]))
        report = audit(spark, data, out, "incremental").report
        audit(spark, data, tmp_path / f"full-{run}", None)
        states.append(report.state)
        for name in TABLES:
            assert table(out, name) == table(tmp_path / f"full-{run}", name), (seed, run, name, acts)
    assert states == [{"first": "first", "grow": "resumed"}.get(a, "reset") for a in acts], (acts, metadata)


# The check inside the decode tasks (Kafka-source snapshots, the live topic) ------------------------------


def test_the_resume_filter_notes_the_last_record_read_and_the_record_at_each_probe():
    from offset_audit.inputs.last_read import LastRow, record_digest
    from offset_audit.inputs.resumed import ResumeFilter

    batch = pa.RecordBatch.from_pydict(
        {
            "source_partition": pa.array([0, 0, 0, 1], pa.int32()),
            "source_offset": pa.array([4, 5, 6, 2], pa.int64()),
            "record_timestamp_ms": pa.array([40, 50, 60, 20], pa.int64()),
            "key": [b"a", b"b", b"c", b"d"],
            "value": [b"x", None, b"z", b"w"],
            "source_file": ["f0", "f0", "f1", "g"],
            "source_position": pa.array([0, 70, 0, 9], pa.int64()),
        }
    )
    seen = ResumeFilter({0: 6}, probes={0: 5, 1: 3})
    assert seen.take(batch).column("source_offset").to_pylist() == [6, 2]
    assert seen.last == {
        0: LastRow("f1", 0, record_digest(60, b"c", b"z")),
        1: LastRow("g", 9, record_digest(20, b"d", b"w")),
    }
    assert seen.probed == {0: {record_digest(50, b"b", None)}}  # partition 1 has no record at offset 3


def test_a_record_not_found_where_it_was_read_last_is_another_log():
    from offset_audit.inputs.last_read import LastRead, record_digest

    digest = record_digest(50, b"b", None)
    stored_state = StoredState(
        {0: Position(0, 6, input_format="parquet", last_read=LastRead(record_digest=digest))},
        3, 2, STATE_FORMAT, datetime.now(UTC), "r", {}, 0,
    )  # fmt: skip
    made = why(stored_state, input_format="parquet")
    assert made.state == "resumed" and made.resume.probes == {0: 5} and made.resume.first_needed(0) == 5
    check = check_ends(made)
    check({0: 9}, {0: frozenset({digest})})
    with pytest.raises(ReadAgain, match="partition 0's record at offset 5 is not the one read last"):
        check({0: 9}, {0: frozenset({record_digest(50, b"b", b"")})})
    with pytest.raises(ReadAgain, match=r"partition 0's last record read \(offset 5\) is not in the input any more"):
        check({0: 9}, {})


def test_a_state_without_the_record_read_last_cannot_be_checked_and_is_read_again():
    made = why(stored({0: 10}, input_format="parquet"), input_format="parquet")
    assert made.state == "reset" and "does not say which record of partition 0 it read last" in made.reason


def test_the_live_topic_is_read_from_the_record_read_last_and_a_replaced_topic_again(spark, tmp_path, monkeypatch):
    """--input-format kafka with Spark's Kafka source stood in for by a DataFrame of the topic's rows from
    the starting offsets asked (as failOnDataLoss=false reads them: from the next offset there is), and the
    Admin API by the topic's partitions. tests/runs/test_live_incremental.py runs the same against a broker,
    without replacing its topic."""
    import offset_audit.inputs.dump as dump
    import offset_audit.inputs.kafka_topic as kafka_topic

    topic: dict[str, pa.Table] = {}
    asked: list[dict[int, int] | None] = []

    def read_kafka(session, settings, starting=None):
        asked.append(starting)
        rows = [r for r in topic["rows"].to_pylist() if r["offset"] >= (starting or {}).get(r["partition"], 0)]
        ddl = (
            "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
        )
        return session.createDataFrame(rows, ddl)

    monkeypatch.setattr(dump, "read_kafka", read_kafka)
    partitions = list(range(PARTITIONS))
    facts = kafka_topic.TopicFacts(partitions, dict.fromkeys(partitions, 0), None, None)
    monkeypatch.setattr(kafka_topic, "topic_facts", lambda *_a, **_k: facts)
    monkeypatch.setattr(kafka_topic, "cluster_id", lambda *_a, **_k: None)
    settings = load_settings(as_of=AS_OF, input_format="kafka", bootstrap_servers="stand-in:9092")
    rng = random.Random(24)
    log = Log()
    states = []
    for act in ("first", "grow", "replace"):
        if act == "grow":
            random_log_events(rng, log, 20, 3, 1, transactions=False)
        elif act != "first":
            log = more_records_than(log, Log(), random.Random(25), 6, transactions=False)
        else:
            random_log_events(rng, log, 40, 0, 0, transactions=False)
        before = read_state(str(tmp_path / "out"))
        topic["rows"] = snapshot_rows(log, {})
        report = run_audit(spark, [], str(tmp_path / "out"), settings, snapshot_id="s", keep_state="incremental").report
        states.append((report.state, report.state_reason))
        if act == "grow":  # from each partition's record read last
            assert asked[-1] == {p: position.next_offset - 1 for p, position in before.positions.items()}
        run_audit(spark, [], str(tmp_path / f"full-{act}"), settings, snapshot_id="s")
        for name in TABLES:
            assert table(tmp_path / "out", name) == table(tmp_path / f"full-{act}", name), (act, name)
    assert [s for s, _ in states] == ["first", "resumed", "reset"], states
    assert "the log is not the one the state was read from" in states[-1][1]
