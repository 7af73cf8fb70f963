"""A snapshot's rows in each table it writes: each run's rows replace the same snapshot's in one commit
while other snapshots stay, as history; and the rows just written read back for what builds on them.

A snapshot is (cluster, kind, snapshot id): the tables are partitioned by snapshot_id, and two clusters
of a fleet's folder may give their snapshots one id (an hourly id per schedule), so a run replaces only
its own cluster's rows of that id (`Within`), and the snapshots table is merged on all three."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from offset_audit.decoding.report import DecodeReport
from offset_audit.delta_files import CLUSTER
from offset_audit.inputs.parquet_files import read_parquet_files
from offset_audit.layouts.tables import table_schema
from offset_audit.outputs.delta import (
    DELTA_SPARK,
    TableWriter,
    Within,
    WriteResult,
    again_on_conflict,
    write_delta,
    write_delta_rs_parts,
)
from offset_audit.outputs.table_upkeep import compact_when_many
from offset_audit.storage import LOCAL, Storage, join, spark_path
from offset_audit.table_names import SNAPSHOTS_TABLE


def own_rows(report: DecodeReport) -> Within:
    """The rows a run's snapshot replaces: its cluster's, under its name or its id (a cluster audited
    under its id before it was named keeps one snapshot of each id, not two)."""
    name = report.cluster or ""
    return Within(CLUSTER, name, frozenset({name, *([report.cluster_id] if report.cluster_id else [])}))


def own_snapshot(frame: DataFrame, snapshot_id: str, report: DecodeReport) -> DataFrame:
    """A snapshot table's rows, as Spark reads them, of the run's own snapshot: its id, and its cluster's
    rows under any of the names `own_rows` replaces (another cluster may have given its snapshot the id)."""
    mine = sorted(own_rows(report).replaced)
    return frame.where((F.col("snapshot_id") == snapshot_id) & F.coalesce(F.col(CLUSTER), F.lit("")).isin(mine))


def _with_snapshot(frame: DataFrame, snapshot_id: str, table: str, cluster: str | None) -> DataFrame:
    """The rows in the table's shape, each naming its snapshot and the cluster judged (runs.clusters)."""
    named = frame.withColumn("snapshot_id", F.lit(snapshot_id)).withColumn("cluster", F.lit(cluster or ""))
    return named.select(*table_schema(table).column_names())


def write_snapshot(
    frame: DataFrame, output: str, table: str, snapshot_id: str, report: DecodeReport, writer: TableWriter
) -> None:
    """Replace this snapshot's rows of `table` in one commit; other snapshots stay for history."""
    _write(_with_snapshot(frame, snapshot_id, table, report.cluster), output, table, snapshot_id, report, writer)


def _write(
    shaped: DataFrame,
    output: str,
    table: str,
    snapshot_id: str,
    report: DecodeReport,
    writer: TableWriter,
    note: bool = True,
    like: StructType | None = None,
) -> WriteResult:
    """Write rows already in the table's shape (`_with_snapshot`), noting rows and version in `report`
    (unless not to `note`: the caller does, in the order its tables are listed); `like`: see write_delta."""
    result = write_delta(
        shaped,
        join(output, table),
        writer,
        partition_by=["snapshot_id"],
        replace_where={"snapshot_id": snapshot_id},
        run_id=report.run_id,
        within=own_rows(report),
        like=like,
    )
    if note:
        report.wrote(table, result)
    return result


@dataclass(frozen=True)
class Written:
    """One snapshot's rows of a table just written: `frame` reads them back from the new files."""

    frame: DataFrame
    result: WriteResult
    storage: Storage = LOCAL

    def columns(self, names: list[str], dictionaries: tuple[str, ...] = ()) -> pa.Table:
        """A few columns on the driver, for the printed summary: with delta-rs, straight from the new
        Parquet files (no Spark job; three of them cost 0.4-0.7 s); otherwise through Spark.

        `dictionaries`: string columns that, from the files, stay dictionary-encoded (one dictionary for
        the whole table). A grouping over 1.6M deletion candidates' group ids and topics read and
        grouped that way took 0.05-0.1 s warm, against 0.25-0.7 s for the strings."""
        if not self.result.data_files:
            return self.frame.select(*names).toArrow()
        files = self.result.data_files
        read = [
            pq.read_table(self.storage.parquet_source(f), columns=names, read_dictionary=list(dictionaries))
            for f in files
        ]
        return pa.concat_tables(read).unify_dictionaries()


def write_and_read_back(
    spark: SparkSession,
    frame: DataFrame,
    output: str,
    table: str,
    snapshot_id: str,
    report: DecodeReport,
    writer: TableWriter,
    note: bool = True,
    like: DataFrame | None = None,
) -> Written:
    """Write this snapshot's rows of `table`, then give them back as read from the files just written.

    The later tables and the summary build on these rows. Reading them back replaces a persisted copy,
    which cost more than the write itself: 2.8 s to cache 132k partition verdicts against a 0.6 s scan.
    `like`: rows whose schema the table takes (write_delta), when `frame`'s were read back from files.
    """
    shaped = _with_snapshot(frame, snapshot_id, table, report.cluster)
    schema = None if like is None else _with_snapshot(like, snapshot_id, table, report.cluster).schema
    written = _write(shaped, output, table, snapshot_id, report, writer, note, schema)
    return _read_back(spark, shaped, written, snapshot_id, report, writer)


def _read_back(
    spark: SparkSession,
    shaped: DataFrame,
    result: WriteResult,
    snapshot_id: str,
    report: DecodeReport,
    writer: TableWriter,
) -> Written:
    storage = writer.storage
    shape = shaped.drop("snapshot_id")
    if result.route == DELTA_SPARK:
        written = own_snapshot(spark.read.format("delta").load(spark_path(result.path)), snapshot_id, report)
        return Written(written.select(*shape.columns), result, storage)
    return Written(read_parquet_files(spark, list(result.data_files), shape.schema, storage), result, storage)


@dataclass(frozen=True)
class Along:
    """A table whose rows are some of another's, as other columns: those `rows` picks, as `columns`
    (each table column's expression over the other table's row, or the name of its column)."""

    table: str
    rows: Column
    columns: dict[str, Column | str]

    def expressions(self) -> list[Column]:
        return [F.col(c).alias(n) if isinstance(c, str) else c.alias(n) for n, c in self.columns.items()]


def write_along_and_read_back(
    spark: SparkSession,
    frame: DataFrame,
    output: str,
    table: str,
    along: Along,
    snapshot_id: str,
    report: DecodeReport,
    writer: TableWriter,
) -> tuple[Written, Written]:
    """`write_and_read_back` of `table` and of the table `along` it, in one Spark pass where delta-rs
    commits (`outputs.delta.write_delta_rs_parts`): the second table's rows are written by the tasks that
    write the first's, instead of a Spark job over the first table's rows read back; where Spark's own
    writer writes them (`TableWriter.spark_writes`), and with delta-spark, the second table's rows are
    read back from the first's files. `table` is noted in `report`; `along` is left for the caller to
    note, where its tables are listed."""
    if writer.delta_spark or writer.spark_writes(output):
        first = write_and_read_back(spark, frame, output, table, snapshot_id, report, writer)
        picked = first.frame.where(along.rows).select(*along.expressions())
        # The schema the second table had when its rows came from the judged rows themselves.
        like = _with_snapshot(frame, snapshot_id, table, report.cluster).where(along.rows).select(*along.expressions())
        second = write_and_read_back(spark, picked, output, along.table, snapshot_id, report, writer, False, like)
        return first, second
    shaped = _with_snapshot(frame, snapshot_id, table, report.cluster)
    names = table_schema(along.table).column_names()
    computed = {n: c for n, c in along.columns.items() if not isinstance(c, str)}
    fused = shaped.select("*", *[c.alias(f"_along_{n}") for n, c in computed.items()], along.rows.alias("_along_rows"))
    first_columns = {c: c for c in shaped.columns}
    # The snapshot's own columns (snapshot_id, cluster) and those taken as they are come from the first
    # table's columns: no copy of a string column goes to the tasks twice.
    # What `computed` leaves of along.columns are names (str).
    second_columns = {n: f"_along_{n}" if n in computed else cast(str, along.columns.get(n, n)) for n in names}
    first_result, second_result = write_delta_rs_parts(
        fused,
        [(join(output, table), first_columns, None), (join(output, along.table), second_columns, "_along_rows")],
        "overwrite",
        ["snapshot_id"],
        {"snapshot_id": snapshot_id},
        report.run_id,
        writer.storage,
        own_rows(report),
    )
    report.wrote(table, first_result)
    picked = fused.select(*[F.col(second_columns[n]).alias(n) for n in names])
    return (
        _read_back(spark, shaped, first_result, snapshot_id, report, writer),
        _read_back(spark, picked, second_result, snapshot_id, report, writer),
    )


def record_snapshot(spark: SparkSession, output: str, row: dict, report: DecodeReport, writer: TableWriter) -> None:
    """Add (or replace, for a snapshot judged again) the snapshot's row in SNAPSHOTS_TABLE, through Delta's
    merge on (cluster, kind, snapshot_id): what the read commands list snapshots from, and report's
    history chart draws, without opening every snapshot's rows. A table an older version of this tool
    wrote gains the columns added since (the merge's schema evolution); its rows without a cluster are
    the unnamed cluster's."""
    row = row | {CLUSTER: report.cluster or "", "cluster_id": report.cluster_id}
    schema = table_schema(SNAPSHOTS_TABLE).arrow_schema()
    table = pa.Table.from_pylist([{name: row.get(name) for name in schema.names}], schema=schema)
    path = join(output, SNAPSHOTS_TABLE)
    condition = f"t.kind = s.kind AND t.snapshot_id = s.snapshot_id AND {own_rows(report).condition('t.')}"
    if writer.delta_spark:
        from offset_audit.outputs.delta import is_delta_table, spark_commit, table_path

        target = spark_path(path)
        source = spark.createDataFrame(table.to_pandas(), table_schema(SNAPSHOTS_TABLE).struct())
        if not is_delta_table(spark, target):
            report.wrote(SNAPSHOTS_TABLE, write_delta(source, path, writer, mode="append", run_id=report.run_id))
            return
        spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", report.run_id)

        def merge() -> None:
            # Delta's SQL rather than its DeltaTable API: a Spark Connect server runs it as it is, where
            # DeltaTable needs Delta's Connect plugin on the server.
            spark.sql(
                f"MERGE WITH SCHEMA EVOLUTION INTO {table_path(target)} t USING {{source}} s ON {condition} "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
                source=source,
            ).collect()

        try:
            # A merge reads the whole table: another run's row appended meanwhile is a conflict
            # (ConcurrentAppendException), and the merge is made again on the table as it now is.
            again_on_conflict(path, merge)
        finally:
            spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
        version, _ = spark_commit(spark, target, report.run_id)
        report.wrote(SNAPSHOTS_TABLE, WriteResult(SNAPSHOTS_TABLE, path, 1, -1, DELTA_SPARK, version=version))
        compact_when_many(path, writer, spark, report.run_id)
        return
    from deltalake import DeltaTable, write_deltalake

    from offset_audit.outputs.delta import DELTA_RS, TABLE_PROPERTIES, commit_properties, committed_version

    storage = writer.storage
    options = storage.delta_options
    if not DeltaTable.is_deltatable(path, storage_options=options):
        write_deltalake(
            path,
            table,
            mode="append",
            configuration=TABLE_PROPERTIES,
            storage_options=options,
            commit_properties=commit_properties(report.run_id),
        )
    else:
        again_on_conflict(
            path,
            lambda: (
                DeltaTable(path, storage_options=options)
                .merge(
                    table,
                    condition,
                    source_alias="s",
                    target_alias="t",
                    merge_schema=True,
                    commit_properties=commit_properties(report.run_id),
                )
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute()
            ),
        )
    version = committed_version(path, report.run_id, storage)
    report.wrote(SNAPSHOTS_TABLE, WriteResult(SNAPSHOTS_TABLE, path, 1, 1, DELTA_RS, version=version))
    compact_when_many(path, writer, spark, report.run_id)
