"""Times no date can show (a client of OffsetCommit v1 could set any commit timestamp): kept exactly in
milliseconds, never turned into a wrong date, and judged with the broker's long arithmetic, in every
input format. Once, 2^62-1 ms came out as 1969-12-31 23:59:59.999 and the offset was called expired."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from audit_frames import AS_OF, WEEK, at, frames, group, offset
from deltalake import DeltaTable
from dump_records import LAYOUTS, T0, snapshot_table
from segment_files import batch

from offset_audit import constants as K
from offset_audit.coordinator import rules, verdicts
from offset_audit.layouts.encoder import encode_key, encode_value
from offset_audit.runs.audit import run_audit
from offset_audit.runtime.config import load_settings

FAR_FUTURE = 2**62 - 1
FAR_PAST = -(2**62)
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)
RETENTION_MS = WEEK * 60_000


def test_a_commit_far_in_the_future_never_expires_and_shows_no_date(spark):
    row = one(spark, FAR_FUTURE)
    assert (row.commit_timestamp, row.commit_timestamp_ms) == (None, FAR_FUTURE)
    assert (row.base_timestamp, row.base_timestamp_ms) == (None, FAR_FUTURE)
    assert (row.expires_at, row.expires_at_ms) == (None, FAR_FUTURE + RETENTION_MS)
    assert row.expired is False and row.time_to_expiry_ms > 0 and row.sweep_window_end is None


def test_base_plus_retention_beyond_a_long_is_never(spark):
    """No broker clock reaches Long.MAX_VALUE, so `now - base >= retention` never holds."""
    row = one(spark, LONG_MAX - 10)
    assert (row.expires_at_ms, row.expired, row.time_to_expiry_ms) == (None, False, None)


def test_a_commit_far_in_the_past_is_expired(spark):
    row = one(spark, FAR_PAST)
    assert row.commit_timestamp is None and row.expired is True
    assert row.expires_at_ms == FAR_PAST + RETENTION_MS


def test_an_age_that_overflows_a_long_wraps_as_in_java_and_is_kept(spark):
    """now - (Long.MIN_VALUE + 1) leaves the long range; Java wraps it to a negative age."""
    row = one(spark, LONG_MIN + 1)
    assert row.expired is False


def test_explicit_expiry_at_long_max_is_not_reached(spark):
    row = one(spark, at(1), expire=LONG_MAX)
    assert row.rule == rules.EXPLICIT_EXPIRE_TIMESTAMP
    assert (row.explicit_expire_timestamp, row.explicit_expire_timestamp_ms) == (None, LONG_MAX)
    assert (row.expires_at_ms, row.expired) == (LONG_MAX, False)


def test_an_empty_group_whose_state_time_no_date_shows_keeps_its_offsets(spark):
    rows, partitions, group_frame = verdict_rows(
        spark, group("g", state="Empty", cst=FAR_FUTURE, members=0, topics=[]), offset("g", commit=at(1))
    )
    assert (rows.rule, rows.base_timestamp_ms, rows.expired) == (rules.EMPTY_GROUP, FAR_FUTURE, False)
    summary = verdicts.group_verdicts(partitions, group_frame, AS_OF, WEEK, 600_000).collect()[0]
    assert (summary.current_state_timestamp, summary.current_state_timestamp_ms) == (None, FAR_FUTURE)
    assert (summary.group_expires_at, summary.group_expires_at_ms) == (None, FAR_FUTURE + RETENTION_MS)
    assert summary.would_delete is False


def test_whatif_judges_the_same_milliseconds(spark):
    group_frame, offset_frame = frames(
        spark,
        [group("s", protocol_type=None, state="Empty", members=0, topics=None)],
        [offset("s", "far", commit=FAR_FUTURE), offset("s", "past", commit=FAR_PAST)],
    )
    judged = verdicts.judged_offsets(offset_frame, group_frame)
    (row,) = verdicts.whatif(verdicts.whatif_groups(judged, group_frame, [WEEK], [AS_OF])).collect()
    assert (row.offsets_total, row.offsets_expired, row.groups_deleted) == (2, 1, 0)


def verdict_rows(spark, g, o):
    group_frame, offset_frame = frames(spark, [g], [o])
    partitions = verdicts.partition_verdicts(verdicts.judged_offsets(offset_frame, group_frame), AS_OF, WEEK, 600_000)
    return partitions.collect()[0], partitions, group_frame


def one(spark, commit, expire=None):
    simple = group("s", protocol_type=None, state="Empty", members=0, topics=None)
    return verdict_rows(spark, simple, offset("s", commit=commit, expire=expire))[0]


# Every input format, end to end ------------------------------------------------------------------------

KEY_FAR = {"group": "far", "topic": "t", "partition": 0}
KEY_PAST = {"group": "past", "topic": "t", "partition": 0}
RECORD_TS = T0 + 86_400_000


def _commit(key: dict, commit_ms: int) -> tuple[bytes, bytes]:
    value = {"offset": 42, "leaderEpoch": 5, "metadata": "", "commitTimestamp": commit_ms, "expireTimestamp": -1}
    return encode_key(LAYOUTS[K.OFFSET_COMMIT], key), encode_value(LAYOUTS[K.OFFSET_COMMIT], 3, value)


def _json_commit(key: dict, commit_ms: int) -> tuple[str, str]:
    data = f'{{"group":"{key["group"]}","topic":"t","partition":0}}'
    value = f'{{"offset":42,"leaderEpoch":5,"metadata":"","commitTimestamp":{commit_ms}}}'
    return data, value


def write_parquet(folder):
    records = [(*_commit(KEY_FAR, FAR_FUTURE), RECORD_TS), (*_commit(KEY_PAST, FAR_PAST), RECORD_TS)]
    pq.write_table(snapshot_table(records), folder / "dump.parquet")
    return str(folder / "dump.parquet")


def write_segments(folder):
    partition = folder / "__consumer_offsets-0"
    partition.mkdir()
    far, past = ((*k, RECORD_TS) for k in (_commit(KEY_FAR, FAR_FUTURE), _commit(KEY_PAST, FAR_PAST)))
    (partition / "00000000000000000000.log").write_bytes(batch(0, [far]) + batch(1, [past]))
    return str(folder)


def write_dump_log(folder):
    lines = ["Dumping /data/__consumer_offsets-0/00000000000000000000.log", "Log starting offset: 0"]
    for offset_, (key, commit_ms) in enumerate([(KEY_FAR, FAR_FUTURE), (KEY_PAST, FAR_PAST)]):
        data, value = _json_commit(key, commit_ms)
        lines.append(
            f"baseOffset: {offset_} lastOffset: {offset_} count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
            "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: "
            f"OptionalLong.empty position: 0 CreateTime: {RECORD_TS} size: 100 magic: 2 compresscodec: none "
            "crc: 1 isvalid: true"
        )
        lines.append(
            f"| offset: {offset_} CreateTime: {RECORD_TS} keySize: 14 valueSize: 25 sequence: -1 headerKeys: [] "
            f'key: {{"type":"1","data":{data}}} payload: {{"version":"3","data":{value}}}'
        )
    (folder / "dump.txt").write_text("\n".join(lines) + "\n")
    return str(folder / "dump.txt")


def write_console(folder):
    text = ""
    for key, commit_ms in [(KEY_FAR, FAR_FUTURE), (KEY_PAST, FAR_PAST)]:
        data, value = _json_commit(key, commit_ms)
        text += f'{{"key":{{"type":1,"data":{data}}},"value":{{"version":3,"data":{value}}}}}'
    (folder / "console.txt").write_text(text)
    return str(folder / "console.txt")


@pytest.mark.parametrize(
    ("write", "input_format"),
    [
        (write_parquet, "parquet"),
        (write_segments, "segments"),
        (write_dump_log, "dump-log"),
        (write_console, "console"),
    ],
)
def test_every_input_format_keeps_the_milliseconds_and_the_broker_verdict(spark, tmp_path, write, input_format):
    source = tmp_path / "in"
    source.mkdir()
    settings = load_settings(input_format=input_format, as_of="2026-01-10T00:00:00Z", partition=0)
    run_audit(spark, [write(source)], str(tmp_path / "out"), settings)
    verdict = {
        r["group_id"]: r for r in DeltaTable(f"{tmp_path}/out/partition_verdicts").to_pyarrow_table().to_pylist()
    }
    assert (verdict["far"]["commit_timestamp"], verdict["far"]["commit_timestamp_ms"]) == (None, FAR_FUTURE)
    assert (verdict["far"]["expired"], verdict["far"]["expires_at"]) == (False, None)
    assert (verdict["past"]["commit_timestamp_ms"], verdict["past"]["expired"]) == (FAR_PAST, True)
    candidates = DeltaTable(f"{tmp_path}/out/deletion_candidates").to_pyarrow_table().to_pylist()
    assert {(c["group_id"], c["reason"]) for c in candidates} == {
        ("far", "INACTIVE_GROUP"),
        ("past", "EXPIRED_AWAITING_SWEEP"),
    }


def _java_minus(a: int, b: int) -> int:
    """Java's long subtraction: the difference wrapped into [-2^63, 2^63)."""
    return (a - b + 2**63) % 2**64 - 2**63


def test_the_difference_wraps_exactly_as_javas(spark):
    import random

    from pyspark.sql import functions as F

    edges = [0, 1, -1, LONG_MAX, LONG_MIN, LONG_MAX - 1, LONG_MIN + 1, FAR_FUTURE, FAR_PAST, 1_767_225_600_000]
    rng = random.Random(7)
    pairs = [(a, b) for a in edges for b in edges] + [
        (rng.randrange(LONG_MIN, 2**63), rng.randrange(LONG_MIN, 2**63)) for _ in range(200)
    ]
    frame = spark.createDataFrame(pairs, "later long, earlier long")
    got = frame.select("later", "earlier", rules.java_long_difference(F.col("later"), F.col("earlier")).alias("d"))
    assert {(r.later, r.earlier): r.d for r in got.collect()} == {(a, b): _java_minus(a, b) for a, b in pairs}
