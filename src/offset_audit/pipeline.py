"""The decode job end to end: sources -> decode -> sinks, with the counts that must reconcile.

The CLI and the spark-submit entry scripts in jobs/ both call `run_decode`; neither holds logic.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from offset_audit import progress
from offset_audit.config import Settings
from offset_audit.decoding import decoder, records
from offset_audit.decoding.decoder import SKIP_REASONS
from offset_audit.inputs.dump import FileUnits, load_raw_records, raw_source, resolved
from offset_audit.layouts.spec import record_layouts
from offset_audit.layouts.tables import table_schema
from offset_audit.outputs.delta import TABLE_PROPERTIES, check_table_dir, commit_properties, has_delta, write_delta
from offset_audit.outputs.direct import commit_decoded, decode_to_files
from offset_audit.report import DecodeReport, TypeCount
from offset_audit.storage import LOCAL, Storage, for_settings, join


def fill_counts(report: DecodeReport, counts: Counter) -> None:
    """Record counts keyed (class, record type, value version, layout era, tombstone) into the report."""
    names = {t: layout.name for t, layout in record_layouts().items()}
    by_type: dict[tuple, list[int]] = {}
    for (cls, key_type, version, era, tombstone), n in counts.items():
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
    path = join(output, "runs")
    if not has_delta(spark):
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


def _check(report: DecodeReport) -> None:
    if not report.reconciles:
        raise RuntimeError(
            f"record counts do not add up: read {report.records_read}, skipped {report.records_skipped}, "
            f"decoded {report.records_decoded}, other {report.other_records}, quarantined {report.quarantined}"
        )


@dataclass
class Decoded:
    """A decode pass as the audit needs it: the newest timestamp among the records the coordinator
    state is rebuilt from (None when the route did not work it out), and, when asked for, the files
    holding each task's commits (its last record of every key) instead of the offset_commits table."""

    newest_record: datetime | None = None
    compacted_commits: list[str] | None = None
    compacted_rows: int = 0


def decode_dump(
    spark: SparkSession,
    inputs: list[str],
    output: str,
    settings: Settings,
    report: DecodeReport,
    route: str | None = None,
    compact_commits_to: str | None = None,
) -> Decoded:
    """Decode the dump into the decode tables under `output`, filling `report`'s counts.

    route "direct" (the default without Delta jars) decodes and writes in one pass and commits with
    delta-rs; "dataframe" builds one DataFrame per table and writes it with `write_delta` (the route of
    delta-spark sessions). Both produce the same tables. `compact_commits_to` (direct route only) makes
    every task decode only its last record of each key and write its commits to that folder instead of
    offset_commits, which is then committed empty.
    """
    settings = resolved(settings, inputs)
    storage = for_settings(settings)
    report.input_format = settings.input_format
    route = route or ("dataframe" if has_delta(spark) else "direct")
    if route == "direct":
        source = raw_source(spark, inputs, settings)
        # Known up front for Parquet (footers) and Kafka (a count); log dumps are counted as read, and
        # their readers turn unreadable input into error rows, so nothing escapes the count.
        known = source.rows if isinstance(source, FileUnits) else source.count()
        if known is not None:
            progress.begin(f"decoding {known:,} records ({settings.input_format})")
        else:
            progress.begin(f"decoding {source.files:,} files ({settings.input_format})")
        result = decode_to_files(spark, source, output, settings.topic, settings.fast_path, compact_commits_to, storage)
        report.records_read = result.records_read if known is None else known
        fill_counts(report, result.counts)
        report.format_notes = dict(result.notes)
        report.bytes_skipped = bytes_skipped(result.files["quarantine"], storage)
        _check(report)  # nothing is committed unless every record is accounted for
        decoded = Decoded(result.newest_record)
        if compact_commits_to is not None:
            decoded.compacted_commits = [str(f.path) for f in result.files["offset_commits"]]
            decoded.compacted_rows = sum(f.rows for f in result.files["offset_commits"])
            result.files["offset_commits"] = []
        progress.begin("committing the decode tables")
        for name, written in commit_decoded(output, result.files, run_id=report.run_id, storage=storage).items():
            report.wrote(name, written)
        return decoded
    raw = load_raw_records(spark, inputs, settings)
    progress.begin(f"decoding the dump ({settings.input_format})")
    report.records_read = raw.count()
    decoded = decoder.decode_records(raw, settings.topic, settings.fast_path).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        counts = Counter()
        for row in decoder.decode_counts(decoded).collect():
            counts[(row.record_class, row.key_type, row.value_version, row.layout_era, row.is_tombstone)] += row.records
        fill_counts(report, counts)
        report.bytes_skipped = decoder.quarantine(decoded).agg(F.sum("skipped_bytes")).collect()[0][0] or 0
        if "source_note" in raw.columns:
            notes = raw.where(F.col("source_note").isNotNull()).groupBy("source_note").count().collect()
            report.format_notes = {row.source_note: row["count"] for row in notes}
        _check(report)
        for name, build in decoder.TABLE_BUILDERS.items():
            written = write_delta(build(decoded), join(output, name), run_id=report.run_id, storage=storage)
            report.wrote(name, written)
    finally:
        decoded.unpersist()
    return Decoded()


def run_decode(
    spark: SparkSession, inputs: list[str], output: str, settings: Settings, route: str | None = None
) -> DecodeReport:
    """The decode command: every decode table under `output`, and its row in `output/runs`."""
    report = DecodeReport.start("decode", inputs, settings.input_format, settings.bootstrap_servers)
    decode_dump(spark, inputs, output, settings, report, route)
    report.finished_at = datetime.now(UTC)
    progress.begin("writing the runs row")
    write_run(spark, report, output, for_settings(settings))
    return report
