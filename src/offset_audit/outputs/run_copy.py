"""A run's tables written again where the caller keeps them (`api.write`): into another audit folder
through the writers the command uses, or into catalog tables through the session."""

from __future__ import annotations

import copy

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession

from offset_audit.decoding.report import DecodeReport
from offset_audit.outputs.delta import TableWriter, has_delta, write_delta
from offset_audit.outputs.runs_table import write_run
from offset_audit.outputs.snapshot_tables import own_rows, record_snapshot, write_snapshot
from offset_audit.storage import Storage, join
from offset_audit.table_names import SNAPSHOTS_TABLE


def snapshot_rows(folder: str, snapshot_id: str, report: DecodeReport, storage: Storage) -> list[dict]:
    """The run's rows of its folder's `snapshots` table, read through delta-rs so that as_of keeps its
    UTC zone whatever the driver's."""
    from deltalake import DeltaTable

    rows = DeltaTable(join(folder, SNAPSHOTS_TABLE), storage_options=storage.delta_options).to_pyarrow_table()
    mine = pc.and_(
        pc.equal(rows.column("snapshot_id"), snapshot_id),
        pc.is_in(pc.fill_null(rows.column("cluster"), ""), pa.array(sorted(own_rows(report).replaced))),
    )
    return rows.filter(mine).to_pylist()


def to_folder(
    spark: SparkSession,
    frames: dict[str, DataFrame],
    output: str,
    snapshot_id: str | None,
    listed: list[dict],
    report: DecodeReport,
    writer: TableWriter,
) -> None:
    """Each table's rows into `output`: a snapshot's (replacing that snapshot's rows of its cluster there,
    if any; other snapshots and clusters stay), with its `snapshots` rows; or, for the decode tables
    (`snapshot_id` None), the whole table as decode writes it. Then the run's row in `runs`."""
    report = copy.deepcopy(report)  # its table counts become those of `output`
    for name, frame in frames.items():
        if snapshot_id is None:
            report.wrote(name, write_delta(frame, join(output, name), writer, run_id=report.run_id))
        else:
            write_snapshot(frame, output, name, snapshot_id, report, writer)
    for row in listed:
        record_snapshot(spark, output, row, report, writer)
    write_run(spark, writer, report, output)


def to_catalog(spark: SparkSession, frames: dict[str, DataFrame], prefix: str) -> None:
    """Each table appended to the catalog table PREFIX + name (Delta where the session has it)."""
    kind = "delta" if has_delta(spark) else "parquet"
    for name, frame in frames.items():
        frame.write.format(kind).mode("append").saveAsTable(f"{prefix}{name}")
