"""Readers for the text dumps of `__consumer_offsets` operators already have (reference section 6).

`kafka-dump-log.sh --offsets-decoder` output and `kafka-console-consumer.sh --formatter ...` output are
turned back into the records they print: Arrow batches of LOG_RECORD_SCHEMA whose key and value hold
the record's bytes in Kafka's wire format, so everything after the reader treats a text dump exactly
like records read from segments or from Kafka. What a format does not print is filled in the way that
keeps the audit honest and is named in each row's source_note.

    dump_log      `kafka-dump-log.sh --offsets-decoder` output back to records
    console       `kafka-console-consumer.sh --formatter ...` output back to records
    kip932_lines  the KIP-932 draft's share-state records as JSON lines, a row per line
    json_stream   the JSON objects of a stream that has no separator between them
    reencode      record bytes rebuilt from what a text dump shows, with the project's own encoder
    text_rows     the text readers' rows, cut into LOG_RECORD_SCHEMA batches

Callers import the module they use (`inputs.textdumps.console`); this package imports none of them.
"""
