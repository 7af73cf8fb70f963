"""Log segment folders through decode and audit: transactions as the broker applies them, markers in a
later segment than their commits, unreadable batches quarantined, and --input-format auto."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable
from dump_records import DAY, T0, commit, group_record
from repo_paths import TEXT_DUMPS
from segment_files import batch, marker

from offset_audit.coordinator import rules
from offset_audit.errors import UserError
from offset_audit.runs.audit import run_audit
from offset_audit.runs.decode import run_decode
from offset_audit.runtime.config import load_settings

AS_OF = "2026-01-10T00:00:00Z"


def assert_same_decode_tables(left, right):
    """Every decode table holds the same rows under both folders (order aside)."""
    from offset_audit.decoding.decoder import TABLES

    for name in TABLES:
        a = sorted(map(repr, DeltaTable(f"{left}/{name}").to_pyarrow_table().to_pylist()))
        b = sorted(map(repr, DeltaTable(f"{right}/{name}").to_pyarrow_table().to_pylist()))
        assert a == b, name


def records(*items):
    return list(items)


@pytest.fixture(scope="module")
def segments(tmp_path_factory):
    """__consumer_offsets-3: two segments. Producer 7 commits, 8 aborts, 9 never ends its transaction;
    the markers of 7 and 8 are in the second segment."""
    root = tmp_path_factory.mktemp("segments")
    folder = root / "__consumer_offsets-3"
    folder.mkdir()
    first = b"".join(
        [
            batch(0, records(group_record("g", 1, members=[]), commit("g", "orders", 0, 10, 1))),
            batch(2, records(commit("g", "payments", 0, 25, 1), commit("g", "clicks", 0, 35, 1))),
            batch(4, records(commit("g", "orders", 0, 20, 2)), producer_id=7, attributes=0x10),
            batch(5, records(commit("g", "payments", 0, 30, 2)), producer_id=8, attributes=0x10),
            batch(6, records(commit("g", "clicks", 0, 40, 2)), producer_id=9, attributes=0x10),
        ]
    )
    (folder / "00000000000000000000.log").write_bytes(first)
    second = marker(7, 7, True, T0 + 2 * DAY) + marker(8, 8, False, T0 + 2 * DAY)
    # A batch whose CRC does not match: quarantined with its file and position, never trusted.
    bad = bytearray(batch(9, records(commit("g", "orders", 0, 999, 3))))
    bad[-1] ^= 0xFF
    (folder / "00000000000000000007.log").write_bytes(second + bytes(bad))
    return str(root)


@pytest.fixture(scope="module")
def audited(spark, segments, tmp_path_factory):
    output = tmp_path_factory.mktemp("audit")
    settings = load_settings(as_of=AS_OF)
    result = run_audit(spark, [segments], str(output), settings)
    partitions = {r["topic"]: r for r in DeltaTable(f"{output}/partition_verdicts").to_pyarrow_table().to_pylist()}
    groups = {r["group_id"]: r for r in DeltaTable(f"{output}/group_verdicts").to_pyarrow_table().to_pylist()}
    return result, output, partitions, groups


def test_format_is_detected_and_every_record_is_accounted_for(audited):
    result, _, _, _ = audited
    report = result.report
    assert report.input_format == "segments"
    assert report.records_read == 10  # 7 data records, 2 markers; the bad batch counts as one row
    # The first orders commit is replaced by producer 7's committed one: the audit never decodes it.
    assert report.skipped_by_reason == {"aborted transaction": 1, "transaction marker": 2, "superseded": 1}
    assert report.quarantined == 1 and report.reconciles


def test_committed_transaction_applies_and_aborted_one_is_discarded(audited):
    _, _, partitions, _ = audited
    assert partitions["orders"]["committed_offset"] == 20
    assert partitions["payments"]["committed_offset"] == 25
    assert partitions["payments"]["rule"] == rules.EMPTY_GROUP


def test_pending_transaction_blocks_expiry_and_group_removal(audited):
    _, _, partitions, groups = audited
    clicks = partitions["clicks"]
    assert clicks["committed_offset"] == 35 and clicks["rule"] == rules.PENDING_TRANSACTION
    assert clicks["expires_at"] is None and not clicks["expired"]
    assert groups["g"]["open_transaction"] and not groups["g"]["would_delete"]


def test_the_python_segment_reader_gives_the_same_audit(spark, segments, audited, tmp_path):
    """Transactions across segments, a pending one and a bad CRC: the same verdicts with the compiled
    walker off (decode.fast_path = false)."""
    output = audited[1]
    settings = load_settings(as_of=AS_OF, fast_path=False)
    run_audit(spark, [segments], str(tmp_path), settings)
    for table in ("partition_verdicts", "group_verdicts"):
        fast = DeltaTable(f"{output}/{table}").to_pyarrow_table()
        python = DeltaTable(f"{tmp_path}/{table}").to_pyarrow_table()
        key = [(c, "ascending") for c in ("group_id", "topic", "partition") if c in fast.column_names]
        assert python.sort_by(key).equals(fast.sort_by(key)), table


def test_bad_crc_is_quarantined_with_file_and_position(spark, segments, tmp_path):
    run_decode(spark, [segments], str(tmp_path), load_settings())
    rows = DeltaTable(f"{tmp_path}/quarantine").to_pyarrow_table().to_pylist()
    assert len(rows) == 1
    assert "00000000000000000007.log" in rows[0]["reason"] and "CRC" in rows[0]["reason"].upper()
    commits = DeltaTable(f"{tmp_path}/offset_commits").to_pyarrow_table().to_pylist()
    assert {r["transaction"] for r in commits} == {None, "committed", "pending"}
    assert 30 not in {r["committed_offset"] for r in commits}  # the aborted commit is never decoded


def test_flat_segment_files_need_a_partition(spark, segments, tmp_path):
    import shutil

    flat = tmp_path / "flat"
    flat.mkdir()
    shutil.copy(f"{segments}/__consumer_offsets-3/00000000000000000000.log", flat / "00000000000000000000.log")
    with pytest.raises(UserError, match="--partition"):
        run_decode(spark, [str(flat)], str(tmp_path / "out"), load_settings())
    report = run_decode(spark, [str(flat)], str(tmp_path / "out"), load_settings(partition=3))
    # Without the second segment no marker is seen: all three transactional commits stay pending.
    assert report.records_read == 7 and report.records_skipped == 0 and report.records_decoded == 7
    commits = DeltaTable(f"{tmp_path}/out/offset_commits").to_pyarrow_table().to_pylist()
    assert sum(r["transaction"] == "pending" for r in commits) == 3
    assert {r["source_partition"] for r in commits} == {3}


def test_input_format_auto_refuses_console_text_mixed_with_other_inputs(spark, segments, tmp_path):
    """Segments, snapshots and kafka-dump-log text mix (read as copies: tests/inputs/test_copies.py), but
    console text has no offsets to merge by."""
    with pytest.raises(UserError, match="mix formats"):
        run_decode(spark, [segments, str(TEXT_DUMPS / "console_json_4_x.txt")], str(tmp_path / "out"), load_settings())


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast", "python"])
@pytest.mark.parametrize(
    ("compression", "batch_records"), [("none", 1), ("zstd", 1), ("zstd", 7), ("snappy", 50), ("gzip", 3), ("lz4", 5)]
)
def test_segments_decode_exactly_like_the_same_records_from_a_snapshot(
    spark, tmp_path, compression, batch_records, fast_path
):
    """The generated dump (every record type, corrupt records included) written as segment files of
    another shape must decode to the very same tables as the Kafka-source snapshot it came from, on the
    compiled segment walker and on the Python reader alone (decode.fast_path)."""
    from offset_audit.generator.demo_dump import generate_dump
    from offset_audit.generator.writers import snapshot_to_segments

    generate_dump(str(tmp_path / "snapshot"), 1500, seed=5, corrupt=6)
    snapshot_to_segments(str(tmp_path / "snapshot"), str(tmp_path / "segments"), batch_records, compression)
    parquet = run_decode(spark, [str(tmp_path / "snapshot")], str(tmp_path / "a"), load_settings())
    settings = load_settings(fast_path=fast_path)
    segments = run_decode(spark, [str(tmp_path / "segments")], str(tmp_path / "b"), settings)
    assert segments.input_format == "segments" and parquet.input_format == "parquet"
    assert (segments.records_read, segments.records_decoded, segments.quarantined) == (
        parquet.records_read,
        parquet.records_decoded,
        parquet.quarantined,
    )
    assert_same_decode_tables(tmp_path / "a", tmp_path / "b")


@pytest.mark.parametrize(
    ("fixture", "expected_format"),
    [
        ("dump_log_3_8.txt", "dump-log"),
        ("dump_log_3_7.txt", "dump-log"),
        ("dump_log_2_x.txt", "dump-log"),
        ("console_scala_offsets.txt", "console"),
        ("console_json_4_x.txt", "console"),
    ],
)
def test_text_dumps_are_detected_and_reconcile(spark, tmp_path, fixture, expected_format):
    report = run_decode(spark, [str(TEXT_DUMPS / fixture)], str(tmp_path), load_settings())
    assert report.input_format == expected_format and report.reconciles and report.records_read > 0
    if fixture == "dump_log_3_8.txt":
        # producer 77's commit is aborted by the marker that follows it
        assert report.skipped_by_reason == {"aborted transaction": 1, "transaction marker": 1}
        reasons = [r["reason"] for r in DeltaTable(f"{tmp_path}/quarantine").to_pyarrow_table().to_pylist()]
        assert reasons and all(f"{fixture}, line " in r for r in reasons)
    if fixture in ("dump_log_3_7.txt", "console_scala_offsets.txt", "console_json_4_x.txt"):
        assert report.format_notes, "what the format cannot tell is reported"


def test_audit_summary_says_what_a_text_dump_could_not_tell(spark, tmp_path):
    from offset_audit.views.summary import audit_summary

    settings = load_settings(as_of="now")
    result = run_audit(spark, [str(TEXT_DUMPS / "dump_log_3_7.txt")], str(tmp_path), settings)
    text = audit_summary(result, str(tmp_path))
    assert "notes on the input:" in text and "CreateTime" in text


def test_delta_spark_route_reads_log_dumps_through_the_python_data_source(spark, segments, tmp_path):
    """Sessions with delta-spark decode through DataFrames: the log dump arrives through a Spark
    Python data source (one partition per file) and must give the same tables."""
    direct = run_decode(spark, [segments], str(tmp_path / "direct"), load_settings())
    frame = run_decode(spark, [segments], str(tmp_path / "frame"), load_settings(), route="dataframe")
    assert (frame.records_read, frame.skipped_by_reason, frame.quarantined) == (
        direct.records_read,
        direct.skipped_by_reason,
        direct.quarantined,
    )
    assert_same_decode_tables(tmp_path / "direct", tmp_path / "frame")
