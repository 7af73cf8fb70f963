"""The decode job end to end: sources -> decode -> sinks, with the counts that must reconcile.

The CLI and the spark-submit entry scripts in jobs/ both call `run_decode`; neither holds logic.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from offset_audit import decode, records
from offset_audit.config import Settings
from offset_audit.layouts.spec import record_layouts
from offset_audit.report import DecodeReport, TypeCount
from offset_audit.sinks.delta import write_delta
from offset_audit.sources import load_raw_records
from offset_audit.tables import table_schema

DECODE_TABLES = tuple(decode.TABLE_BUILDERS)


def split_by_topic(raw: DataFrame, topic: str) -> tuple[DataFrame, DataFrame]:
    """Records of `topic` (or of a snapshot without a topic column) and the rest, which are skipped."""
    wanted = F.col("source_topic").isNull() | (F.col("source_topic") == topic)
    return raw.where(wanted), raw.where(~wanted)


def collect_counts(decoded: DataFrame) -> tuple[dict[str, int], int, list[TypeCount]]:
    names = {t: layout.name for t, layout in record_layouts().items()}
    by_class: dict[str, int] = {}
    tombstones = 0
    by_type = []
    for row in decode.decode_counts(decoded).collect():
        by_class[row.record_class] = by_class.get(row.record_class, 0) + row.records
        if row.record_class in (records.OFFSET_COMMIT, records.GROUP_METADATA, records.MODERN):
            tombstones += row.tombstones
            by_type.append(
                TypeCount(
                    row.key_type,
                    names.get(row.key_type, str(row.key_type)),
                    row.value_version,
                    row.layout_era,
                    row.records,
                    row.tombstones,
                )
            )
    by_type.sort(key=lambda t: (t.record_type, -1 if t.value_version is None else t.value_version, t.layout_era or ""))
    return by_class, tombstones, by_type


def write_run(spark: SparkSession, report: DecodeReport, output: str) -> None:
    schema = table_schema("runs").struct()
    frame = spark.createDataFrame([report.as_row()], schema)
    write_delta(frame, str(Path(output) / "runs"), mode="append")


def run_decode(spark: SparkSession, inputs: list[str], output: str, settings: Settings) -> DecodeReport:
    report = DecodeReport(
        run_id=uuid.uuid4().hex,
        command="decode",
        started_at=datetime.now(UTC),
        input=", ".join(inputs) if inputs else settings.bootstrap_servers,
        input_format=settings.input_format,
    )
    raw = load_raw_records(spark, inputs, settings)
    report.records_read = raw.count()
    wanted, skipped = split_by_topic(raw, settings.topic)
    report.records_skipped = skipped.count()

    decoded = decode.decode_records(wanted, use_fast_path=settings.fast_path).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        report.by_class, report.tombstones, report.decoded_by_type = collect_counts(decoded)
        if not report.reconciles:
            raise RuntimeError(
                f"record counts do not add up: read {report.records_read}, skipped {report.records_skipped}, "
                f"decoded {report.records_decoded}, other {report.other_records}, quarantined {report.quarantined}"
            )
        for name, build in decode.TABLE_BUILDERS.items():
            result = write_delta(build(decoded), str(Path(output) / name))
            report.table_rows[name] = result.rows
    finally:
        decoded.unpersist()
    report.finished_at = datetime.now(UTC)
    write_run(spark, report, output)
    return report
