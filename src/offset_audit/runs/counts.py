"""What a run read, decoded, skipped and quarantined, the check that those numbers add up, and the run's
row in the `runs` table."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pyarrow as pa
from pyspark.sql import SparkSession

from offset_audit.decoding import records
from offset_audit.decoding.decoder import SKIP_REASONS
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


@dataclass(frozen=True)
class TypeCount:
    record_type: int | None
    record_name: str
    value_version: int | None
    layout_era: str | None
    records: int
    tombstones: int


@dataclass
class DecodeReport:
    run_id: str
    command: str
    started_at: datetime
    input: str
    input_format: str
    records_read: int = 0
    records_skipped: int = 0
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    by_class: dict[str, int] = field(default_factory=dict)
    tombstones: int = 0
    bytes_skipped: int = 0
    decoded_by_type: list[TypeCount] = field(default_factory=list)
    table_rows: dict[str, int] = field(default_factory=dict)
    # The Delta version of each table this run committed (see outputs.delta.committed_version).
    table_versions: dict[str, int] = field(default_factory=dict)
    finished_at: datetime | None = None
    snapshot_id: str | None = None
    as_of: datetime | None = None
    retention_minutes: int | None = None
    kafka_version: str | None = None
    format_notes: dict[str, int] = field(default_factory=dict)

    @classmethod
    def start(cls, command: str, inputs: list[str], input_format: str, bootstrap_servers: str) -> DecodeReport:
        """A new run's report; a live-Kafka run names its bootstrap servers as the input."""
        return cls(
            run_id=uuid.uuid4().hex,
            command=command,
            started_at=datetime.now(UTC),
            input=", ".join(inputs) if inputs else bootstrap_servers,
            input_format=input_format,
        )

    def wrote(self, table: str, written) -> None:
        """Note a table this run committed (an outputs.delta.WriteResult): its rows, and its version."""
        self.table_rows[table] = written.rows
        if written.version is not None:
            self.table_versions[table] = written.version

    @property
    def records_decoded(self) -> int:
        return sum(n for c, n in self.by_class.items() if c in records.DECODED_CLASSES)

    @property
    def other_records(self) -> int:
        return self.by_class.get(records.OTHER, 0)

    @property
    def quarantined(self) -> int:
        return self.by_class.get(records.QUARANTINE, 0)

    @property
    def reconciles(self) -> bool:
        return self.records_read == (
            self.records_skipped + self.records_decoded + self.other_records + self.quarantined
        )

    def as_row(self) -> dict:
        return {
            "run_id": self.run_id,
            "command": self.command,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "input": self.input,
            "input_format": self.input_format,
            "snapshot_id": self.snapshot_id,
            "as_of": self.as_of,
            "retention_minutes": self.retention_minutes,
            "kafka_version": self.kafka_version,
            "records_read": self.records_read,
            "records_skipped": self.records_skipped,
            "skipped_by_reason": dict(self.skipped_by_reason),
            "records_decoded": self.records_decoded,
            "tombstones": self.tombstones,
            "other_records": self.other_records,
            "quarantined": self.quarantined,
            "bytes_skipped": self.bytes_skipped,
            "decoded_by_type": [t.__dict__ for t in self.decoded_by_type],
            "table_rows": dict(self.table_rows),
            "table_versions": dict(self.table_versions),
            "format_notes": dict(self.format_notes),
        }


RUNS_TABLE = "runs"


def fill_counts(report: DecodeReport, counts: Counter, layouts: dict[int, RecordLayout] | None = None) -> None:
    """Record counts keyed (class, record type, value version, layout era, tombstone) into the report;
    `layouts` name the record types (those of __consumer_offsets unless given)."""
    names = {t: layout.name for t, layout in (record_layouts() if layouts is None else layouts).items()}
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
