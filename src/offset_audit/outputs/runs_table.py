"""The `runs` table: one row per run, appended last, so a run without its row did not finish.

The row is the run's DecodeReport: what it read, decoded, skipped and quarantined, the versions of the
tables it committed, its notes.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import SparkSession

from offset_audit.decoding.report import DecodeReport
from offset_audit.layouts.tables import table_schema
from offset_audit.outputs.delta import TABLE_PROPERTIES, TableWriter, check_table_dir, commit_properties, write_delta
from offset_audit.outputs.table_upkeep import compact_when_many
from offset_audit.storage import join
from offset_audit.table_names import RUNS_TABLE


def write_run(spark: SparkSession, writer: TableWriter, report: DecodeReport, output: str) -> None:
    """Append the run's row to `runs`: one row, so without delta-spark it is written without a Spark job."""
    schema = table_schema(RUNS_TABLE).struct()
    path = join(output, RUNS_TABLE)
    storage = writer.storage
    if not writer.delta_spark:
        from pyspark.sql.pandas.types import to_arrow_schema

        check_table_dir(path, storage)
        row = report.as_row()
        for name in ("table_rows", "table_versions", "skipped_by_reason", "format_notes"):
            row[name] = list(row[name].items())
        table = pa.Table.from_pylist([row], schema=to_arrow_schema(schema, timezone="UTC"))
        append_rows(path, table, writer, report.run_id)
    else:
        frame = spark.createDataFrame([report.as_row()], schema)
        write_delta(frame, path, writer, mode="append", run_id=report.run_id)
        compact_when_many(path, writer, spark, report.run_id)


def append_rows(path: str, rows: pa.Table, writer: TableWriter, run_id: str | None) -> None:
    """Rows appended by delta-rs to a table every run adds to (runs, snapshots), compacted once it holds
    many files (`compact_when_many`). merge: a table written by an older version of this tool gains the
    new columns."""
    from deltalake import write_deltalake

    write_deltalake(
        path,
        rows,
        mode="append",
        schema_mode="merge",
        configuration=TABLE_PROPERTIES,
        commit_properties=commit_properties(run_id),
        storage_options=writer.storage.delta_options,
    )
    compact_when_many(path, writer, None, run_id)
