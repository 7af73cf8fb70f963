"""Reading Kafka-source snapshots: Parquet files, folders, globs and Delta tables."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from offset_audit.errors import UserError
from offset_audit.generator import generate_dump
from offset_audit.sources.snapshot import read_snapshot, to_raw_records


def test_delta_snapshot_is_read_through_its_log(spark, tmp_path):
    import pyarrow.parquet as pq

    generate_dump(str(tmp_path / "pq"), 300, seed=9)
    table = pq.read_table(tmp_path / "pq")
    write_deltalake(str(tmp_path / "delta"), table.slice(0, 100))
    write_deltalake(str(tmp_path / "delta"), table.slice(0, 50), mode="overwrite")
    frame = read_snapshot(spark, [str(tmp_path / "delta")], "parquet")  # detected as Delta
    assert frame.count() == 50


def test_files_globs_and_repeated_inputs(spark, tmp_path):
    generate_dump(str(tmp_path), 1200, seed=9)
    files = sorted(str(p) for p in tmp_path.glob("*.parquet"))
    assert read_snapshot(spark, [str(tmp_path / "part-*.parquet")], "parquet").count() == 1200
    assert (
        read_snapshot(spark, files[:1], "parquet").count() + read_snapshot(spark, files[1:], "parquet").count() == 1200
    )


def test_a_snapshot_without_kafka_columns_is_refused(spark, tmp_path):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1]}), tmp_path / "x.parquet")
    with pytest.raises(UserError, match="no column key, value, partition, offset"):
        read_snapshot(spark, [str(tmp_path)], "parquet")


def test_raw_records_keep_coordinates_and_nulls(spark):
    frame = spark.createDataFrame(
        [(b"\x00\x01", None, "__consumer_offsets", 4, 99, None)],
        "key binary, value binary, topic string, partition int, offset bigint, timestamp timestamp",
    )
    row = to_raw_records(frame).collect()[0]
    assert (row.source_topic, row.source_partition, row.source_offset, row.value) == (
        "__consumer_offsets",
        4,
        99,
        None,
    )


def test_delta_flag_on_a_plain_folder(spark, tmp_path):
    generate_dump(str(tmp_path), 10, seed=1)
    with pytest.raises(UserError, match="not a Delta table"):
        read_snapshot(spark, [str(tmp_path)], "delta")
