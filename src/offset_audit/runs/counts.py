"""A run's counts filled from the decode stage's, and the check that they add up (the counts themselves:
`offset_audit.decoding.report`; the run's row in the `runs` table: `offset_audit.outputs.runs_table`)."""

from __future__ import annotations

from collections import Counter

from offset_audit.decoding import records
from offset_audit.decoding.decoder import SKIP_REASONS
from offset_audit.decoding.report import CountKey, DecodeReport, TypeCount
from offset_audit.layouts.spec import RecordLayout, record_layouts


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


def check_reconciles(report: DecodeReport) -> None:
    """An internal error when the counts do not add up: a record was lost or counted twice."""
    if not report.reconciles:
        raise RuntimeError(
            f"record counts do not add up: read {report.records_read}, skipped {report.records_skipped}, "
            f"decoded {report.records_decoded}, other {report.other_records}, quarantined {report.quarantined}"
        )
