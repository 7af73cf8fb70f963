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

from offset_audit.escaping import stored_text
from offset_audit.inputs.log_records import LOG_RECORD_SCHEMA

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
    """The rows as one batch of LOG_RECORD_SCHEMA, built column by column: Arrow converts a list per
    column several times faster than a list of dicts, which matters at a few hundred thousand lines a
    second. Every row holds every column (the readers build them whole)."""
    columns = [_column(list(map(itemgetter(field.name), rows)), field.type) for field in LOG_RECORD_SCHEMA]
    return pa.RecordBatch.from_arrays(columns, schema=LOG_RECORD_SCHEMA)


def _column(values: list, arrow_type: pa.DataType) -> pa.Array:
    try:
        return pa.array(values, arrow_type)
    except UnicodeEncodeError:
        # Text of a damaged dump (bytes that were not UTF-8, read as surrogate escapes) in an error
        # message, a file name or a note: kept, with those bytes shown as \xNN.
        return pa.array([None if v is None else stored_text(v) for v in values], arrow_type)


def checked(row: Row, what: str) -> Row:
    """The row, or an error row in its place when one of its numbers does not fit its column (a damaged
    line can print any digits), instead of failing the whole file. `what` names the line."""
    wrong = [
        name for name, (low, high) in _INT_RANGES.items() if row[name] is not None and not low <= row[name] <= high
    ]
    if not wrong:
        return row
    reason = f"{what}: {', '.join(f'{name} {row[name]}' for name in wrong)} does not fit its column"
    return {**row, **dict.fromkeys(wrong), "key": None, "value": None, "source_error": reason, "source_note": None}


_INT_RANGES = {
    field.name: (-(2 ** (field.type.bit_width - 1)), 2 ** (field.type.bit_width - 1) - 1)
    for field in LOG_RECORD_SCHEMA
    if pa.types.is_integer(field.type)
}


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


MAX_LINE_CHARS = 64 << 20
"""No line of a text dump is held beyond this many characters (a kafka-dump-log line is one record, at
most a few MiB); past it the rest of the line is skipped and counted, so a binary file or a file with
no line breaks costs bounded memory."""


class LongLine(str):
    """The first MAX_LINE_CHARS characters of a line that went on; `skipped` counts the rest."""

    skipped: int


def bounded_lines(stream, limit: int = MAX_LINE_CHARS) -> Iterator[str]:
    """The stream's lines, each at most `limit` characters (a longer one comes as a LongLine)."""
    while True:
        line = stream.readline(limit)
        if not line:
            return
        if len(line) < limit or line.endswith("\n"):
            yield line
            continue
        skipped = 0
        while True:
            rest = stream.readline(limit)
            skipped += len(rest)
            if not rest or rest.endswith("\n"):
                break
        long_line = LongLine(line)
        long_line.skipped = skipped
        yield long_line
