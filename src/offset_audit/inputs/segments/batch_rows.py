"""Decoded batches gathered into Arrow batches of LOG_RECORD_SCHEMA, exactly `batch_rows` rows each (the
last of a file may be shorter).

A segment of 100 MiB holds about a million records, often one per Kafka batch, so the cost per record
and per batch is what matters here:

- columns that change per record (offset, timestamp, key, value) are Python lists, extended a batch at
  a time and turned into Arrow in C; a dict per row would cost more than decoding;
- columns that are constant within a Kafka batch (producer, flags, position) are kept as one value per
  batch and expanded by Arrow's run-end decoding;
- columns that are nearly always null (control type, error, note) are kept sparse, by row number.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.escaping import stored_text
from offset_audit.inputs.log_records import LOG_RECORD_SCHEMA
from offset_audit.inputs.segments.decoded import NO_TIMESTAMP, DecodedBatch

_STRING = pa.string()


class RowBuffer:
    """The rows read so far from one file and not yet handed out."""

    def __init__(self, source_file: str, partition: int | None, batch_rows: int) -> None:
        self.source_file = stored_text(source_file)  # a file name need not be UTF-8
        self.partition = partition
        self.batch_rows = batch_rows
        self._clear()
        # Rows already in Arrow form (the fast path's, and what is left over from the last emit), in file
        # order before the rows in the lists.
        self._arrow_parts: list[pa.RecordBatch] = []
        self._arrow_rows = 0

    def _clear(self) -> None:
        # one entry per row
        self.offsets: list[int | None] = []
        self.timestamps_ms: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        # one entry per Kafka batch (or error row); run_ends[i] is the row count after batch i
        self.run_ends: list[int] = []
        self.producer_ids: list[int] = []
        self.producer_epochs: list[int] = []
        self.transactional: list[bool] = []
        self.control: list[bool] = []
        self.positions: list[int] = []
        # row number -> value, for the rare rows that have one
        self.control_types: dict[int, str] = {}
        self.errors: dict[int, str] = {}
        self.notes: dict[int, str] = {}
        self.skipped_bytes: dict[int, int] = {}

    def __len__(self) -> int:
        return self._arrow_rows + len(self.offsets)

    def add_batch(self, position: int, batch: DecodedBatch) -> None:
        first_row = len(self.offsets)
        count = len(batch.offsets)
        if not count:
            return
        self.offsets += batch.offsets
        self.timestamps_ms += batch.timestamps_ms
        self.keys += batch.keys
        self.values += batch.values
        self.run_ends.append(first_row + count)
        self.producer_ids.append(batch.producer_id)
        self.producer_epochs.append(batch.producer_epoch)
        self.transactional.append(batch.is_transactional)
        self.control.append(batch.control_types is not None)
        self.positions.append(position)
        if batch.control_types is not None:
            self.control_types.update(enumerate(batch.control_types, first_row))

    def add_error(self, position: int, offset: int | None, reason: str, skipped_bytes: int | None = None) -> None:
        """One row standing for bytes that could not be read: no key, no value, no timestamp; with
        `skipped_bytes` when it stands for bytes that held no batch (not for a batch refused as a whole)."""
        self.errors[len(self.offsets)] = reason
        if skipped_bytes is not None:
            self.skipped_bytes[len(self.offsets)] = skipped_bytes
        self.add_batch(position, DecodedBatch([offset], [NO_TIMESTAMP], [None], [None]))

    def add_records(
        self,
        offsets: np.ndarray,
        timestamps_ms: np.ndarray,
        keys: pa.Array,
        values: pa.Array,
        producer_ids: np.ndarray,
        producer_epochs: np.ndarray,
        transactional: np.ndarray,
        positions: np.ndarray,
    ) -> None:
        """Data records decoded elsewhere (the fast path), one array entry per row; no control records,
        no errors."""
        count = len(offsets)
        if not count:
            return
        self._to_parts()
        timestamps = pa.array(timestamps_ms, pa.int64())
        arrays = [
            pa.repeat(pa.scalar(self.partition, pa.int32()), count),
            pa.array(offsets, pa.int64()),
            pc.if_else(pc.equal(timestamps, NO_TIMESTAMP), pa.scalar(None, pa.int64()), timestamps),
            keys,
            values,
            pa.array(producer_ids, pa.int64()),
            pa.array(producer_epochs, pa.int16()),
            pa.array(transactional, pa.bool_()),
            pa.repeat(pa.scalar(False), count),
            pa.nulls(count, _STRING),
            pa.repeat(pa.scalar(self.source_file, pa.string()), count),
            pa.array(positions, pa.int64()),
            pa.nulls(count, _STRING),
            pa.nulls(count, _STRING),
            pa.nulls(count, pa.int64()),
        ]
        self._arrow_parts.append(pa.RecordBatch.from_arrays(arrays, schema=LOG_RECORD_SCHEMA))
        self._arrow_rows += count

    def _to_parts(self) -> None:
        """The rows in the lists to Arrow, after those already there."""
        if self.offsets:
            rows = self._to_arrow()
            self._arrow_parts.append(rows)
            self._arrow_rows += rows.num_rows

    def full_batches(self) -> Iterator[pa.RecordBatch]:
        """Every complete batch of `batch_rows` rows; the rest stays for later."""
        if len(self) >= self.batch_rows:
            yield from self._emit(final=False)

    def last_batches(self) -> Iterator[pa.RecordBatch]:
        """Everything left, at the end of the file."""
        if len(self):
            yield from self._emit(final=True)

    def _emit(self, final: bool) -> Iterator[pa.RecordBatch]:
        self._to_parts()
        parts, self._arrow_parts, self._arrow_rows = self._arrow_parts, [], 0
        if len(parts) == 1:
            rows = parts[0]
        else:
            rows = pa.Table.from_batches(parts).combine_chunks().to_batches()[0]
        start = 0
        while rows.num_rows - start >= self.batch_rows:
            yield rows.slice(start, self.batch_rows)
            start += self.batch_rows
        if start < rows.num_rows:
            if final:
                yield rows.slice(start)
            else:
                self._arrow_parts.append(rows.slice(start))
                self._arrow_rows = rows.num_rows - start

    def _to_arrow(self) -> pa.RecordBatch:
        count = len(self.offsets)
        run_ends = pa.array(self.run_ends, pa.int32())

        def per_batch(values: list, arrow_type: pa.DataType) -> pa.Array:
            return pc.run_end_decode(pa.RunEndEncodedArray.from_arrays(run_ends, pa.array(values, arrow_type)))

        def sparse(values_by_row: dict, arrow_type: pa.DataType = _STRING) -> pa.Array:
            if not values_by_row:
                return pa.nulls(count, arrow_type)
            column: list = [None] * count
            for row, value in values_by_row.items():
                column[row] = value
            return pa.array(column, arrow_type)

        timestamps = pa.array(self.timestamps_ms, pa.int64())
        # Kafka's milliseconds as they are (any long); only NO_TIMESTAMP means "none".
        record_timestamp_ms = pc.if_else(pc.equal(timestamps, NO_TIMESTAMP), pa.scalar(None, pa.int64()), timestamps)
        arrays = [
            pa.repeat(pa.scalar(self.partition, pa.int32()), count),
            pa.array(self.offsets, pa.int64()),
            record_timestamp_ms,
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            per_batch(self.producer_ids, pa.int64()),
            per_batch(self.producer_epochs, pa.int16()),
            per_batch(self.transactional, pa.bool_()),
            per_batch(self.control, pa.bool_()),
            sparse(self.control_types),
            pa.repeat(pa.scalar(self.source_file, pa.string()), count),
            per_batch(self.positions, pa.int64()),
            sparse(self.errors),
            sparse(self.notes),
            sparse(self.skipped_bytes, pa.int64()),
        ]
        self._clear()
        return pa.RecordBatch.from_arrays(arrays, schema=LOG_RECORD_SCHEMA)
