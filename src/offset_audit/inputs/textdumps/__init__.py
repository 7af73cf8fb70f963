"""Readers for the text dumps of `__consumer_offsets` operators already have (reference section 6).

`kafka-dump-log.sh --offsets-decoder` output and `kafka-console-consumer.sh --formatter ...` output are
turned back into the records they print: Arrow batches of LOG_RECORD_SCHEMA whose key and value hold
the record's bytes in Kafka's wire format, so everything after the reader treats a text dump exactly
like records read from segments or from Kafka. What a format does not print is filled in the way that
keeps the audit honest and is named in each row's source_note.
"""

from offset_audit.inputs.textdumps.console import looks_like_console_dump, read_console_dump
from offset_audit.inputs.textdumps.dump_log import looks_like_dump_log, read_dump_log

__all__ = ["looks_like_console_dump", "looks_like_dump_log", "read_console_dump", "read_dump_log"]
