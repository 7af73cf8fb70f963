"""The decode job end to end on a generated dump: Delta tables, counts that add up, re-runs."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable

from offset_audit.decoding.decoder import TABLES as DECODE_TABLES
from offset_audit.generator.demo_dump import generate_dump
from offset_audit.runs.decode import run_decode
from offset_audit.runtime.config import load_settings


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    path = tmp_path_factory.mktemp("dump")
    generate_dump(str(path), 6000, seed=3, corrupt=16)
    return str(path)


@pytest.fixture(scope="module")
def decoded(spark, dump, tmp_path_factory):
    output = str(tmp_path_factory.mktemp("out"))
    report = run_decode(spark, [dump], output, load_settings())
    return report, output


def test_counts_reconcile_and_match_the_tables(decoded):
    report, output = decoded
    assert report.records_read == 6000
    assert report.reconciles
    assert report.quarantined > 0 and report.other_records > 0
    for name in DECODE_TABLES:
        assert DeltaTable(f"{output}/{name}").count() == report.table_rows[name], name
    assert (
        report.table_rows["offset_commits"]
        + report.table_rows["group_metadata"]
        + report.table_rows["modern_group_records"]
        == report.records_decoded
    )
    assert sum(t.records for t in report.decoded_by_type) == report.records_decoded
    assert sum(t.tombstones for t in report.decoded_by_type) == report.tombstones


def test_runs_table_holds_the_same_numbers(decoded):
    report, output = decoded
    runs = DeltaTable(f"{output}/runs").to_pyarrow_table().to_pylist()
    run = next(r for r in runs if r["run_id"] == report.run_id)
    assert run["records_read"] == report.records_read
    assert run["quarantined"] == report.quarantined
    assert dict(run["table_rows"]) == report.table_rows
    for table in ("runs", "offset_commits"):
        assert DeltaTable(f"{output}/{table}").metadata().configuration == {"delta.checkpointInterval": "10"}


def test_rerun_replaces_tables_atomically_and_appends_a_run(spark, dump, tmp_path):
    output = str(tmp_path)
    first = run_decode(spark, [dump], output, load_settings())
    version = DeltaTable(f"{output}/offset_commits").version()
    second = run_decode(spark, [dump], output, load_settings())
    table = DeltaTable(f"{output}/offset_commits")
    assert table.version() == version + 1
    assert table.count() == first.table_rows["offset_commits"] == second.table_rows["offset_commits"]
    assert DeltaTable(f"{output}/runs").count() == 2


def test_generic_reader_alone_gives_the_same_tables(spark, dump, decoded, tmp_path):
    report, output = decoded
    settings = load_settings(fast_path=False)
    generic = run_decode(spark, [dump], str(tmp_path), settings)
    assert generic.table_rows == report.table_rows
    fast_rows = spark.read.parquet(*DeltaTable(f"{output}/offset_commits").file_uris())
    slow_rows = spark.read.parquet(*DeltaTable(f"{tmp_path}/offset_commits").file_uris())
    assert fast_rows.exceptAll(slow_rows).count() == 0
    assert slow_rows.exceptAll(fast_rows).count() == 0


def test_records_of_other_topics_are_skipped_and_counted(spark, tmp_path):
    import pyarrow.parquet as pq

    src = tmp_path / "src"
    generate_dump(str(src), 500, seed=5)
    table = pq.read_table(src)
    topics = table.column("topic").to_pylist()
    topics[:7] = ["orders"] * 7
    import pyarrow as pa

    table = table.set_column(table.schema.get_field_index("topic"), "topic", pa.array(topics))
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    pq.write_table(table, mixed / "part-0.parquet")
    report = run_decode(spark, [str(mixed)], str(tmp_path / "out"), load_settings())
    assert report.records_skipped == 7
    assert report.records_read == 500 and report.reconciles


def test_dataframe_route_writes_the_same_tables_as_the_direct_route(spark, dump, decoded, tmp_path):
    report, output = decoded
    other = run_decode(spark, [dump], str(tmp_path), load_settings(), route="dataframe")
    assert other.table_rows == report.table_rows
    assert other.decoded_by_type == report.decoded_by_type
    for name in DECODE_TABLES:
        direct = spark.read.parquet(*DeltaTable(f"{output}/{name}").file_uris())
        frame = spark.read.parquet(*DeltaTable(f"{tmp_path}/{name}").file_uris())
        assert direct.schema == frame.schema, name
        assert direct.exceptAll(frame).count() == 0 and frame.exceptAll(direct).count() == 0, name


def test_direct_route_from_a_dataframe_source_equals_the_pieces_route(spark, dump, decoded, tmp_path):
    """Live Kafka and object stores reach the fast route as a DataFrame, not as file pieces."""
    from offset_audit.inputs.dump import load_raw_records
    from offset_audit.inputs.opened import open_dump
    from offset_audit.outputs.fast_write import commit_decoded, decode_to_files
    from offset_audit.storage import LOCAL

    report, output = decoded
    result = decode_to_files(
        spark,
        load_raw_records(spark, open_dump([dump], load_settings())),
        str(tmp_path),
        "__consumer_offsets",
        storage=LOCAL,
    )
    assert sum(result.counts.values()) == report.records_read
    results = commit_decoded(str(tmp_path), result.files, storage=LOCAL)
    assert {name: r.rows for name, r in results.items()} == report.table_rows
    for name in DECODE_TABLES:
        direct = spark.read.parquet(*DeltaTable(f"{output}/{name}").file_uris())
        frame = spark.read.parquet(*DeltaTable(f"{tmp_path}/{name}").file_uris())
        assert direct.exceptAll(frame).count() == 0 and frame.exceptAll(direct).count() == 0, name
