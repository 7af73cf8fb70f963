"""Reading Kafka-source snapshots: Parquet files, folders, globs and Delta tables."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from offset_audit.errors import UserError
from offset_audit.generator.demo_dump import generate_dump
from offset_audit.inputs.kafka_source import pieces_of, to_raw_records
from offset_audit.inputs.kafka_source import read_kafka_source as read_files
from offset_audit.inputs.opened import open_dump
from offset_audit.runtime.config import load_settings


def read_kafka_source(spark, inputs: list[str], input_format: str):
    """A snapshot as Spark reads it, the inputs opened as a run opens them."""
    dump = open_dump(inputs, load_settings(input_format=input_format))
    return read_files(spark, dump.source_files, dump.storage)


def source_pieces(inputs: list[str], input_format: str, rows_per_piece: int = 1_000_000):
    """A snapshot's pieces as Python workers read them, the inputs opened as a run opens them."""
    return pieces_of(open_dump(inputs, load_settings(input_format=input_format)).data_files, rows_per_piece)


def test_delta_snapshot_is_read_through_its_log(spark, tmp_path):
    import pyarrow.parquet as pq

    generate_dump(str(tmp_path / "pq"), 300, seed=9)
    table = pq.read_table(tmp_path / "pq")
    write_deltalake(str(tmp_path / "delta"), table.slice(0, 100))
    write_deltalake(str(tmp_path / "delta"), table.slice(0, 50), mode="overwrite")
    frame = read_kafka_source(spark, [str(tmp_path / "delta")], "parquet")  # detected as Delta
    assert frame.count() == 50


def test_files_globs_and_repeated_inputs(spark, tmp_path):
    generate_dump(str(tmp_path), 1200, seed=9)
    files = sorted(str(p) for p in tmp_path.glob("*.parquet"))
    assert read_kafka_source(spark, [str(tmp_path / "part-*.parquet")], "parquet").count() == 1200
    assert (
        read_kafka_source(spark, files[:1], "parquet").count() + read_kafka_source(spark, files[1:], "parquet").count()
        == 1200
    )


def test_a_snapshot_without_kafka_columns_is_refused(spark, tmp_path):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1]}), tmp_path / "x.parquet")
    with pytest.raises(UserError, match="no column key, value, partition, offset"):
        read_kafka_source(spark, [str(tmp_path)], "parquet")


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
        read_kafka_source(spark, [str(tmp_path)], "delta")


def test_python_pieces_give_the_same_raw_records_as_spark(spark, tmp_path):
    import pyarrow as pa

    from offset_audit.decoding.decoder import for_decode
    from offset_audit.inputs.kafka_source import read_piece

    generate_dump(str(tmp_path), 2500, seed=4)
    pieces = source_pieces([str(tmp_path)], "parquet", rows_per_piece=1000)
    assert sum(p.rows for p in pieces) == 2500 and len(pieces) >= 2
    from_python = pa.Table.from_batches([b for p in pieces for b in read_piece(p, "__consumer_offsets")])
    frame = for_decode(to_raw_records(read_kafka_source(spark, [str(tmp_path)], "parquet")), "__consumer_offsets")
    from_spark = spark.createDataFrame(from_python.to_pandas(), frame.schema)
    assert from_spark.exceptAll(frame).count() == 0 and frame.exceptAll(from_spark).count() == 0


def test_pieces_refuse_files_without_kafka_columns(tmp_path):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1]}), tmp_path / "x.parquet")
    with pytest.raises(UserError, match="no column key"):
        source_pieces([str(tmp_path)], "parquet")


def _partition_files(sizes: dict[int, list[int]]):
    from offset_audit.inputs.log_files import LogFile, PartitionFiles

    return [
        PartitionFiles(p, tuple(LogFile(f"/d/p-{p}/{i:020d}.log", "segments", p, size) for i, size in enumerate(s)))
        for p, s in sizes.items()
    ]


def test_units_are_dealt_into_one_task_per_core_balanced_by_weight():
    """Spark's own split of the list by position put 46% of the records in one of four tasks."""
    from offset_audit.inputs.dump import FileUnits, unit_weight

    mib = 2**20
    units = _partition_files({0: [20 * mib], 1: [3 * mib, 2 * mib], 2: [9 * mib], 3: [1 * mib], 4: [8 * mib]})
    slices = FileUnits(units, read=lambda unit: iter(()), rows=None).slices(cores=2)
    assert len(slices) == 2
    loads = sorted(sum(unit_weight(u) for u in task) for task in slices)
    assert loads == [21 * mib // 128, 22 * mib // 128]  # 20+1 and 9+8+5
    # Every unit once, each task in input order (a partition's files keep their log order).
    assert sorted(u.partition for task in slices for u in task) == [0, 1, 2, 3, 4]
    for task in slices:
        assert [u.partition for u in task] == sorted(u.partition for u in task)
    # Never more tasks than units.
    assert len(FileUnits(units[:1], read=lambda unit: iter(()), rows=None).slices(cores=8)) == 1


def test_a_large_input_is_split_into_waves_of_one_task_per_core():
    from offset_audit.inputs.dump import RECORDS_PER_TASK, SEGMENT_BYTES_PER_RECORD, FileUnits
    from offset_audit.inputs.kafka_source import Piece

    pieces = [Piece(f"/s/{i}.parquet", (0,), RECORDS_PER_TASK // 2) for i in range(20)]  # 10 tasks' worth
    assert len(FileUnits(pieces, read=lambda unit: iter(()), rows=None).slices(cores=4)) == 12
    big = SEGMENT_BYTES_PER_RECORD * RECORDS_PER_TASK
    units = _partition_files({p: [big // 2] for p in range(9)})  # 4.5 tasks' worth on 2 cores
    assert len(FileUnits(units, read=lambda unit: iter(()), rows=None).slices(cores=2)) == 6


def test_units_kept_in_order_are_cut_into_stretches_of_about_equal_weight():
    from offset_audit.inputs.dump import FileUnits
    from offset_audit.inputs.kafka_source import Piece

    pieces = [Piece(f"/s/{i}.parquet", (0,), rows) for i, rows in enumerate([5, 1, 1, 1, 1, 1, 4, 6])]
    slices = FileUnits(pieces, read=lambda unit: iter(()), rows=None).slices(cores=2, keep_order=True)
    assert [[p.rows for p in task] for task in slices] == [[5, 1, 1, 1, 1, 1], [4, 6]]
    slices = FileUnits(pieces, read=lambda unit: iter(()), rows=None).slices(cores=3, keep_order=True)
    assert [[p.rows for p in task] for task in slices] == [[5, 1, 1], [1, 1, 1, 4], [6]]  # 7, 7 and 6 rows
