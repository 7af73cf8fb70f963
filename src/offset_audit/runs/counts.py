"""A run's counts filled from the decode stage's, the check that they add up, and the run's row in the
`runs` table (the counts themselves: `offset_audit.decoding.report`)."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
from pyspark.sql import SparkSession

from offset_audit.decoding import records
from offset_audit.decoding.decoder import SKIP_REASONS
from offset_audit.decoding.report import CountKey, DecodeReport, TypeCount
from offset_audit.layouts.spec import RecordLayout, record_layouts
from offset_audit.layouts.tables import table_schema
from offset_audit.outputs.delta import (
    TABLE_PROPERTIES,
    check_table_dir,
    commit_properties,
    write_delta,
    writes_with_delta_spark,
)
from offset_audit.storage import LOCAL, Storage, join

RUNS_TABLE = "runs"


def fill_counts(report: DecodeReport, counts: Counter, layouts: dict[int, RecordLayout] | None = None) -> None:
    """Record counts keyed (class, record type, value version, layout era, tombstone) into the report;
    `layouts` name the record types (those of __consumer_offsets unless given)."""
    names = {t: layout.name for t, layout in (record_layouts() if layouts is None else layouts).items()}
    by_type: dict[tuple, list[int]] = {}
    for key, n in counts.items():
        cls, key_type, version, era, tombstone = CountKey(*key)
        if cls in SKIP_REASONS:
            if not n:
                continue
            report.records_skipped += n
            reason = SKIP_REASONS[cls]
            report.skipped_by_reason[reason] = report.skipped_by_reason.get(reason, 0) + n
            continue
        report.by_class[cls] = report.by_class.get(cls, 0) + n
        if cls in records.DECODED_CLASSES:
            slot = by_type.setdefault((key_type, version, era), [0, 0])
            slot[0] += n
            if tombstone:
                slot[1] += n
                report.tombstones += n
    report.decoded_by_type = sorted(
        (TypeCount(t, names.get(t, str(t)), v, e, n, tombstones) for (t, v, e), (n, tombstones) in by_type.items()),
        key=lambda c: (c.record_type, -1 if c.value_version is None else c.value_version, c.layout_era or ""),
    )


def write_run(spark: SparkSession, report: DecodeReport, output: str, storage: Storage = LOCAL) -> None:
    """Append the run's row to `runs`: one row, so without delta-spark it is written without a Spark job."""
    schema = table_schema("runs").struct()
    path = join(output, RUNS_TABLE)
    if not writes_with_delta_spark(spark):
        from deltalake import write_deltalake
        from pyspark.sql.pandas.types import to_arrow_schema

        check_table_dir(path, storage)
        row = report.as_row()
        for name in ("table_rows", "table_versions", "skipped_by_reason", "format_notes"):
            row[name] = list(row[name].items())
        table = pa.Table.from_pylist([row], schema=to_arrow_schema(schema, timezone="UTC"))
        # merge: a runs table written by an older version of this tool gains the new columns.
        write_deltalake(
            path,
            table,
            mode="append",
            schema_mode="merge",
            configuration=TABLE_PROPERTIES,
            commit_properties=commit_properties(report.run_id),
            storage_options=storage.delta_options,
        )
    else:
        frame = spark.createDataFrame([report.as_row()], schema)
        write_delta(frame, path, mode="append", run_id=report.run_id, storage=storage)


def bytes_skipped(quarantine_files: list, storage: Storage = LOCAL) -> int:
    """The bytes the quarantine rows of these files stand for (log segment stretches holding no batch)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    total = 0
    for file in quarantine_files:
        column = pq.read_table(storage.parquet_source(file.path), columns=["skipped_bytes"]).column(0)
        total += int(pc.sum(column).as_py() or 0)
    return total


def check_reconciles(report: DecodeReport) -> None:
    """An internal error when the counts do not add up: a record was lost or counted twice."""
    if not report.reconciles:
        raise RuntimeError(
            f"record counts do not add up: read {report.records_read}, skipped {report.records_skipped}, "
            f"decoded {report.records_decoded}, other {report.other_records}, quarantined {report.quarantined}"
        )
