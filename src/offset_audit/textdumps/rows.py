"""Rows of LOG_RECORD_SCHEMA as the text readers build them, and the batches they are cut into.

Both readers produce one dict per record (or per piece of input that could not be read) and leave
batching to `batches`, so a reader's logic reads as "line in, row out" and the memory bound (at most
`batch_rows` rows held at once) lives in one place.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from operator import itemgetter
from pathlib import PurePath
from typing import Any

import pyarrow as pa

from offset_audit.sources.log_records import LOG_RECORD_SCHEMA

Row = dict[str, Any]

_PARTITION_DIR = re.compile(r"^__consumer_offsets-(\d+)$")


def partition_from_path(path: str) -> int | None:
    """The partition Kafka's folder naming gives a segment (`.../__consumer_offsets-N/000...0.log`), or
    None when the file's folder has another name (the same rule as the segment reader's)."""
    match = _PARTITION_DIR.match(PurePath(path).parent.name)
    return int(match.group(1)) if match else None


def join_notes(*notes: str | None) -> str | None:
    """Several things one record's text could not tell, as one note (None when there is none)."""
    present = [n for n in notes if n]
    return "; ".join(present) if present else None


def record_batch(rows: list[Row]) -> pa.RecordBatch:
    """The same batch as `log_record_batch(rows)`, built column by column: Arrow converts a list per
    column several times faster than a list of dicts, which matters at a few hundred thousand lines a
    second. Every row holds every column (the readers build them whole)."""
    columns = [pa.array(list(map(itemgetter(field.name), rows)), field.type) for field in LOG_RECORD_SCHEMA]
    return pa.RecordBatch.from_arrays(columns, schema=LOG_RECORD_SCHEMA)


def batches(rows: Iterable[Row], batch_rows: int) -> Iterator[pa.RecordBatch]:
    """Cut rows into batches of at most `batch_rows`, in input order."""
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be at least 1, not {batch_rows}")
    pending: list[Row] = []
    for row in rows:
        pending.append(row)
        if len(pending) >= batch_rows:
            yield record_batch(pending)
            pending = []
    if pending:
        yield record_batch(pending)


def open_text(path: str):
    """The dump as text. Kafka's tools print UTF-8; bytes that are not (a damaged file, a dump made on a
    machine with another default charset) are kept as surrogate escapes, so re-encoding a name that
    holds them fails and the record is quarantined instead of silently renamed."""
    return open(path, encoding="utf-8", errors="surrogateescape", newline="\n")
