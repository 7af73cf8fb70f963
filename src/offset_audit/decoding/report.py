"""What a run read, decoded, skipped and quarantined: the counts every command reports, that must add up,
and that its row in the `runs` table holds (`offset_audit.runs.counts` fills and writes them). Plain data,
no Spark: the views read it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import NamedTuple

from offset_audit.decoding import records


class CountKey(NamedTuple):
    """What each record is counted by, in every reader (the decode stage, the direct route, the share
    state readers): its class (a decode table, `quarantine`, `other` or a skip reason), and for decoded
    records its record type, value version, layout era and whether it is a tombstone."""

    record_class: str
    record_type: int | None = None
    value_version: int | None = None
    layout_era: str | None = None
    is_tombstone: bool = False


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
    # audit --incremental/--full: how the run used its state (see schemas/tables/runs.json).
    state: str | None = None
    state_reason: str | None = None
    records_carried: int = 0
    # ... and, resuming a Kafka-source snapshot, which of its files it opened (`inputs.snapshot_files`).
    files_note: str | None = None
    # ... and how many records it appended to DIR/state/log (None: it kept no log).
    records_logged: int | None = None
    # --keep-snapshots: what retention and upkeep did after the run (runs.upkeep.Upkeep.document()).
    upkeep: dict | None = None
    # The cluster the run judged (runs.clusters): its name on every row the run writes ("" unnamed), and
    # its id; None until the run has resolved it.
    cluster: str | None = None
    cluster_id: str | None = None
    # Whether the run used the warm session's Spark (offset_audit.warm) instead of starting its own.
    warm_session: bool = False

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

    def reset_counts(self) -> None:
        """Forget what a read counted (an incremental audit that reads everything again after all)."""
        blank = DecodeReport(self.run_id, self.command, self.started_at, self.input, self.input_format)
        for name in ("records_read", "records_skipped", "skipped_by_reason", "by_class", "tombstones"):
            setattr(self, name, getattr(blank, name))
        for name in ("bytes_skipped", "decoded_by_type", "table_rows", "table_versions", "format_notes"):
            setattr(self, name, getattr(blank, name))
        self.records_carried = 0

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
            "state": self.state,
            "state_reason": self.state_reason,
            "records_carried": self.records_carried if self.state is not None else None,
            "cluster": self.cluster,
            "cluster_id": self.cluster_id,
        }
