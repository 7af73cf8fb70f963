"""The two checksums Kafka stores in a segment, behind one name each.

Magic 2 batches carry a CRC-32C (Castagnoli) over everything from the attributes to the end of the
batch (DefaultRecordBatch.computeChecksum); magic 0 and 1 messages carry a zlib CRC-32 over the magic
byte to the end (LegacyRecord.computeChecksum). Both run over every byte of a 100 MiB segment, so both
come from C: zlib for CRC-32 and google-crc32c (hardware CRC32C where the CPU has it) for CRC-32C.
"""

from __future__ import annotations

import zlib

import google_crc32c

# CRC-32C of bytes as an unsigned int. Bound directly rather than wrapped: it runs once per batch, and a
# segment can hold a million batches. It takes bytes, not a memoryview (google-crc32c refuses buffers
# that can be released); copying one batch costs far less than checksumming it.
crc32c = google_crc32c.value

# zlib CRC-32 as an unsigned int (Python's zlib already returns it unsigned).
crc32 = zlib.crc32
