"""Kafka log segments (`*.log` in `__consumer_offsets-N/` folders) read in pure Python, without Spark.

Modules, in the order bytes pass through them:

    framing       the file cut into batches by their 12-byte headers; truncation and nonsense sizes
    crc           CRC-32C (magic 2) and CRC-32 (magic 0/1)
    compression   gzip, snappy (xerial framing), lz4 (frame), zstd
    record_batch  magic 2 batches and their varint records, control (transaction marker) records
    legacy        magic 0/1 messages and compressed wrapper messages
    decoded       what a decoder returns: a batch's records as columns, or UntrustedBatch
    rows          rows gathered into Arrow batches of LOG_RECORD_SCHEMA
    reader        the public entry points below
"""

from offset_audit.inputs.segments.reader import partition_from_path, read_segment

__all__ = ["partition_from_path", "read_segment"]
