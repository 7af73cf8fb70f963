"""Both Delta routes behind write_delta."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from pyspark.sql import functions as F

from offset_audit.outputs.delta import (
    DELTA_RS,
    DELTA_SPARK,
    DataFile,
    TableWriter,
    choose_writer,
    commit_files,
    has_delta,
    write_delta,
    write_delta_rs_parts,
)
from offset_audit.storage import LOCAL

RS = TableWriter(DELTA_RS, LOCAL)


def test_delta_rs_route_overwrites_appends_and_replaces_one_partition(spark, tmp_path):
    path = str(tmp_path / "t")
    write_delta(
        spark.createDataFrame([(1, "s1"), (2, "s1"), (3, "s2")], "x int, snap string"),
        path,
        RS,
        partition_by=["snap"],
    )
    result = write_delta(
        spark.createDataFrame([(9, "s1")], "x int, snap string"),
        path,
        RS,
        partition_by=["snap"],
        replace_where={"snap": "s1"},
    )
    assert result.route == "delta-rs" and result.rows == 1
    rows = sorted((r["x"], r["snap"]) for r in DeltaTable(path).to_pyarrow_table().to_pylist())
    assert rows == [(3, "s2"), (9, "s1")]
    write_delta(
        spark.createDataFrame([(4, "s3")], "x int, snap string"), path, RS, mode="append", partition_by=["snap"]
    )
    assert DeltaTable(path).count() == 3


def test_tables_written_in_one_pass_hold_each_its_rows_and_columns_and_replace_only_their_snapshot(spark, tmp_path):
    """The second table is a filtered projection of the first under other names, written by the same
    tasks (one Spark job), a null in the picking column leaving the row out; each table keeps its other
    snapshots, and one whose rows are all left out still replaces its snapshot's."""
    whole, picked = str(tmp_path / "whole"), str(tmp_path / "picked")
    old = spark.createDataFrame([(7, "z", "s0"), (8, "y", "s1")], "x int, name string, snap string")
    write_delta(old, whole, RS, partition_by=["snap"])
    write_delta(old.drop("name"), picked, RS, partition_by=["snap"])
    ids = spark.range(1, 5, numPartitions=2)  # two tasks, each writing a file of each table
    keep = F.when(ids.id == 2, False).when(ids.id == 3, F.lit(None)).otherwise(True)
    frame = ids.select(
        ids.id.cast("int").alias("x"),
        F.element_at(F.array(*[F.lit(c) for c in "abcd"]), ids.id.cast("int")).alias("name"),
        keep.alias("keep"),
        F.lit("s1").alias("snap"),
    )
    sc = spark.sparkContext
    sc.setJobGroup("fused-write", "fused-write")
    try:
        first, second = write_delta_rs_parts(
            frame.withColumn("doubled", frame.x * 2),
            [
                (whole, {"x": "x", "name": "name", "snap": "snap"}, None),
                (picked, {"x": "doubled", "snap": "snap"}, "keep"),
            ],
            "overwrite",
            ["snap"],
            {"snap": "s1"},
            "run-1",
            LOCAL,
        )
    finally:
        sc.setJobGroup("other", "other")
    assert len(sc.statusTracker().getJobIdsForGroup("fused-write")) == 1
    assert (first.rows, second.rows) == (4, 2) and first.version == second.version == 1
    rows = DeltaTable(whole).to_pyarrow_table().to_pylist()
    assert sorted((r["x"], r["name"], r["snap"]) for r in rows) == [
        (1, "a", "s1"),
        (2, "b", "s1"),
        (3, "c", "s1"),
        (4, "d", "s1"),
        (7, "z", "s0"),
    ]
    table = DeltaTable(picked).to_pyarrow_table()
    assert table.column_names == ["x", "snap"] and table.schema.field("x").type == pa.int32()
    assert sorted((r["x"], r["snap"]) for r in table.to_pylist()) == [(2, "s1"), (7, "s0"), (8, "s1")]
    [none] = write_delta_rs_parts(
        frame.withColumn("keep", F.lit(False)),
        [(picked, {"x": "x", "snap": "snap"}, "keep")],
        "overwrite",
        ["snap"],
        {"snap": "s1"},
        None,
        LOCAL,
    )
    assert none.rows == 0 and sorted(r["x"] for r in DeltaTable(picked).to_pyarrow_table().to_pylist()) == [7]


def test_delta_rs_route_writes_no_spark_markers(spark, tmp_path):
    path = tmp_path / "t"
    write_delta(spark.createDataFrame([(1,)], "x int"), str(path), RS)
    assert not list(path.rglob("_SUCCESS")) and not list(path.rglob(".*.crc"))


@pytest.mark.parametrize("snapshot", ["s1", "a b/../c"])
def test_spark_and_the_python_workers_write_the_same_table(spark, tmp_path, snapshot):
    """A local table of many rows is written by Spark's own Parquet writer (its rows never leave the JVM),
    others by the Python workers: the same schema, rows and partition values either way, the folder
    holding only the files the log names, and no file of no rows (a task with none)."""
    ids = spark.range(0, 6, numPartitions=3)  # the first task's rows are all left out
    frame = ids.where(ids.id >= 2).select(
        ids.id.cast("int").alias("x"),
        F.when(ids.id < 4, F.lit(None)).otherwise(ids.id.cast("string")).alias("name"),
        (F.lit(10**9) * ids.id).cast("timestamp").alias("at"),
        F.lit(snapshot).alias("snap"),
    )
    tables = {}
    for route in ("spark", "python"):
        path, writer = tmp_path / route, TableWriter(DELTA_RS, LOCAL, spark_parquet=route == "spark")
        write_delta(frame, str(path), writer, partition_by=["snap"], replace_where={"snap": snapshot})
        table = DeltaTable(str(path))
        actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
        named = {str(path / a["path"]) for a in actions}
        on_disk = {str(f) for f in path.rglob("*") if f.is_file() and "_delta_log" not in f.parts}
        assert on_disk == named and len(named) == 2, route
        assert all(n.endswith(".snappy.parquet") == (route == "spark") for n in named)  # Spark names its own
        assert all(a["num_records"] > 0 for a in actions)
        tables[route] = table.to_pyarrow_table()
    assert tables["spark"].schema.equals(tables["python"].schema)
    assert sorted(map(repr, tables["spark"].to_pylist())) == sorted(map(repr, tables["python"].to_pylist()))
    assert {r["snap"] for r in tables["spark"].to_pylist()} == {snapshot}


def test_tables_checkpoint_every_ten_commits(tmp_path):
    """Scheduled runs add a commit per run: the log must not grow unchecked (delta-rs alone waits for 100)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("x", pa.int64())])
    for version in range(11):
        file = tmp_path / f"f{version}.parquet"
        pq.write_table(pa.table({"x": [version]}, schema=schema), file)
        commit_files(str(tmp_path), [DataFile(str(file), 1, file.stat().st_size)], schema, storage=LOCAL)
    log = sorted(p.name for p in (tmp_path / "_delta_log").iterdir())
    assert [n for n in log if "checkpoint.parquet" in n] == ["00000000000000000009.checkpoint.parquet"]
    table = DeltaTable(str(tmp_path))
    assert table.version() == 10 and table.to_pyarrow_table().column("x").to_pylist() == [10]
    assert table.metadata().configuration == {"delta.checkpointInterval": "10"}


def test_empty_frames_still_make_a_table_with_the_schema(spark, tmp_path):
    path = str(tmp_path / "t")
    write_delta(spark.createDataFrame([], "x int, ts timestamp"), path, RS)
    table = DeltaTable(path)
    assert table.count() == 0 and [f.name for f in table.schema().fields] == ["x", "ts"]


@pytest.mark.delta_spark
def test_delta_spark_route(spark, tmp_path):
    """With delta-spark's jars (make spark-jars) and its extension, tables are written through
    format("delta"); run in the session with the jars (tests/spark_jars.py)."""
    assert has_delta(spark), "the session with the Spark jars has no delta-spark"
    writer = choose_writer(spark, "auto", LOCAL)  # a session with Delta where the run chose no writer (--writer)
    assert writer.route == DELTA_SPARK
    path = str(tmp_path / "t")
    result = write_delta(spark.createDataFrame([(1, "a")], "x int, s string"), path, writer)
    assert result.rows == 1 and DeltaTable(path).count() == 1
    import pyarrow as pa

    from offset_audit.outputs.delta import write_arrow

    small = write_arrow(spark, pa.table({"x": pa.array([5, 6], pa.int32()), "s": ["b", "c"]}), path, writer, run_id="r")
    assert small.route == "delta-spark" and small.rows == 2 and small.version == 1


def test_partition_values_that_are_no_safe_folder_name_are_kept_exactly(spark, tmp_path):
    """Folder names are cosmetic (the log holds the values): a snapshot id with slashes, spaces or dots
    must come back as given and never make a folder outside the table."""
    path = tmp_path / "t"
    odd = ["../../escape", "a b/c", "é", None]
    frame = spark.createDataFrame([(i, v) for i, v in enumerate(odd)], "x int, snap string")
    write_delta(frame, str(path), RS, partition_by=["snap"])
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    assert sorted((r["x"], r["snap"]) for r in rows) == sorted(enumerate(odd), key=lambda r: r[0])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]


def test_a_folder_of_other_files_is_never_taken_over_as_a_table(spark, tmp_path):
    from offset_audit.errors import UserError

    path = tmp_path / "t"
    path.mkdir()
    (path / "data.csv").write_text("mine")
    with pytest.raises(UserError, match="not a Delta table"):
        write_delta(spark.createDataFrame([(1,)], "x int"), str(path), RS)
    assert [p.name for p in path.iterdir()] == ["data.csv"]


def test_write_arrow_replaces_the_table_and_names_the_version_of_its_run(spark, tmp_path):
    """The share tables' route: the driver writes one file (none for no rows) and delta-rs commits it."""
    import pyarrow as pa

    from offset_audit.outputs.delta import write_arrow

    path = str(tmp_path / "t")
    schema = pa.schema([("x", pa.int32()), ("ts", pa.timestamp("us", tz="UTC"))])
    first = write_arrow(spark, pa.table({"x": [1, 2], "ts": [None, None]}, schema), path, RS, run_id="run-1")
    assert (first.rows, first.files, first.route, first.version) == (2, 1, "delta-rs", 0)
    second = write_arrow(spark, schema.empty_table(), path, RS, run_id="run-2")
    assert (second.rows, second.files, second.version) == (0, 0, 1)
    table = DeltaTable(path)
    assert table.count() == 0 and [f.name for f in table.schema().fields] == ["x", "ts"]
    third = write_arrow(spark, pa.table({"x": [7], "ts": [None]}, schema), path, RS, run_id="run-3")
    assert third.version == 2 and DeltaTable(path).to_pyarrow_table().column("x").to_pylist() == [7]


def test_write_arrow_never_takes_over_a_folder_of_other_files(spark, tmp_path):
    import pyarrow as pa

    from offset_audit.errors import UserError
    from offset_audit.outputs.delta import write_arrow

    path = tmp_path / "t"
    path.mkdir()
    (path / "data.csv").write_text("mine")
    with pytest.raises(UserError, match="not a Delta table"):
        write_arrow(spark, pa.table({"x": [1]}), str(path), RS)
    assert [p.name for p in path.iterdir()] == ["data.csv"]


def test_a_run_that_chose_delta_spark_is_never_written_by_delta_rs_instead(spark):
    """The run's writer is chosen once when it starts (runtime.session.table_writer); in a session without
    Delta, delta-spark is refused again there, rather than quietly written by delta-rs."""
    from offset_audit.errors import UserError

    if not has_delta(spark):
        with pytest.raises(UserError, match="--writer delta-spark needs a Spark session with Delta"):
            choose_writer(spark, "delta-spark", LOCAL)
    else:
        assert choose_writer(spark, "delta-spark", LOCAL).route == DELTA_SPARK
    assert choose_writer(spark, "delta-rs", LOCAL).route == DELTA_RS
    assert choose_writer(spark, "auto", LOCAL).delta_spark is has_delta(spark)
