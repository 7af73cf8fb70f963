"""The one row shape every file-dump reader produces (log segments, kafka-dump-log text, console
formatter text), before transactions are resolved and records decoded.

Each reader turns its input into Arrow batches of LOG_RECORD_SCHEMA; from there all formats share one
path: transaction resolution, then the same decoder as a Kafka-source snapshot. Keeping the readers
to this shape is what makes `--input-format` a choice of reader and nothing more.

Columns:
- source_partition: the __consumer_offsets partition (from the `__consumer_offsets-N` folder, a
  `Dumping .../__consumer_offsets-N/...` header, or --partition); null when the format cannot tell.
- source_offset: the record's offset; for formats without offsets, the record's ordinal in the input
  (order of appearance is log order).
- record_timestamp_ms: the record's timestamp (CreateTime or LogAppendTime) in milliseconds since the
  epoch, exactly as Kafka stores it (any long); null when the format has none.
- key, value: the record's bytes as the broker stored them (text formats: re-encoded from the text);
  a null value is a tombstone.
- producer_id, producer_epoch, is_transactional: from the record batch header (-1, -1, false when the
  batch has none, e.g. magic 0/1 message sets).
- is_control, control_type: control records (transaction markers); control_type "COMMIT" or "ABORT",
  or "UNKNOWN(n)" for other control types; null for data records.
- source_file, source_position: where the record (or its batch) is in the input: file path and byte
  position of the batch for segments, line number for text.
- source_error: set on a row that stands for input that could not be read (bad CRC, truncated batch,
  unparseable line, unsupported codec); such a row carries no trusted key or value and is quarantined
  with this reason. Null otherwise.
- source_note: what this format could not tell about the record (for example "commit timestamp taken
  from the batch CreateTime"); the summary lists each note with its count. Null otherwise.
- skipped_bytes: on an error row that stands for bytes holding no readable batch or line (a damaged
  segment stretch between two good batches, the invalid tail kafka-dump-log reports): how many bytes
  it covers; the runs table sums them. Null otherwise.
"""

from __future__ import annotations

import pyarrow as pa

LOG_RECORD_SCHEMA = pa.schema(
    [
        pa.field("source_partition", pa.int32()),
        pa.field("source_offset", pa.int64()),
        pa.field("record_timestamp_ms", pa.int64()),
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("producer_id", pa.int64()),
        pa.field("producer_epoch", pa.int16()),
        pa.field("is_transactional", pa.bool_()),
        pa.field("is_control", pa.bool_()),
        pa.field("control_type", pa.string()),
        pa.field("source_file", pa.string()),
        pa.field("source_position", pa.int64()),
        pa.field("source_error", pa.string()),
        pa.field("source_note", pa.string()),
        pa.field("skipped_bytes", pa.int64()),
    ]
)
