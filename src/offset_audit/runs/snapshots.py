"""A snapshot: the moment a dump is judged at (--as-of), and its id (its rows in each table it writes:
`offset_audit.outputs.snapshot_tables`)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import cast

from offset_audit.decoding.report import DecodeReport
from offset_audit.errors import UserError
from offset_audit.inputs import formats
from offset_audit.snapshot_ids import check_snapshot_id
from offset_audit.timestamps import datetime_of, millis_of


def resolve_as_of(spec: str, newest_record: datetime | None) -> datetime:
    """--as-of: "latest" (the newest record in the dump), "now", or an ISO-8601 timestamp (UTC if naive)."""
    if spec == "latest":
        if newest_record is None:
            raise UserError("--as-of latest needs records with timestamps; give --as-of now or a timestamp")
        return newest_record if newest_record.tzinfo else newest_record.replace(tzinfo=UTC)
    if spec == "now":
        return datetime.now(UTC)
    try:
        parsed = datetime.fromisoformat(spec.replace("Z", "+00:00"))
    except ValueError as err:
        raise UserError(
            f"--as-of takes latest, now or an ISO timestamp like 2026-11-21T10:00:00Z, not '{spec}'"
        ) from err
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def check_as_of(spec: str, input_format: str) -> None:
    """--as-of parses, and `latest` has record timestamps to come from."""
    if spec == "latest":
        if not formats.named(input_format).timestamps:
            raise UserError(
                "--as-of latest needs record timestamps, which console-consumer dumps do not have; "
                "give --as-of now or a timestamp"
            )
        return
    resolve_as_of(spec, None)


def snapshot_id_for(report: DecodeReport, newest_record: datetime | None, as_of: datetime, given: str | None) -> str:
    """The snapshot's name: the as_of time, then a digest of the dump, so that the same dump gets the
    same id wherever it lies (copied, mounted elsewhere, on S3) and a re-run replaces its rows, while
    another dump judged at the same time does not. The digest covers what every route and decode mode
    agrees on: the records read and the newest record's time (to the millisecond). Two dumps that
    agree on both and are judged at the same time share an id; name them with --snapshot-id."""
    if given:
        return check_snapshot_id(given)
    # A record's time comes from a UTC TIMESTAMP column, so datetime_of always shows it.
    counts = [
        report.records_read,
        None if newest_record is None else cast(datetime, datetime_of(millis_of(newest_record))).isoformat(),
        as_of.isoformat(),
    ]
    digest = hashlib.sha1(repr(counts).encode())
    return f"{as_of:%Y%m%dT%H%M%SZ}-{digest.hexdigest()[:8]}"
