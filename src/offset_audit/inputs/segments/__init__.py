"""Kafka log segments (`*.log` in `__consumer_offsets-N/` folders) read in pure Python, without Spark.

Modules, in the order bytes pass through them:

    framing       the file cut into batches by their 12-byte headers; truncation and nonsense sizes
    crc           CRC-32C (magic 2) and CRC-32 (magic 0/1)
    compression   gzip, snappy (xerial framing), lz4 (frame), zstd
    record_batch  magic 2 batches and their varint records, control (transaction marker) records
    legacy        magic 0/1 messages and compressed wrapper messages
    decoded       what a decoder returns: a batch's records as columns, or UntrustedBatch
    batch_rows    rows gathered into Arrow batches of LOG_RECORD_SCHEMA
    reader        the entry points: read_segment, partition_from_path
    fast_walk     the common cases (magic 2 data batches, transaction markers) walked in compiled code
    native        the C functions fast_walk calls: CRC-32C and decompression, loaded with ctypes
    writer        magic-2 segments written, for `generate --format segments`, the bench and the tests

Callers import the module they use (`inputs.segments.reader`); this package imports none of them.
"""
