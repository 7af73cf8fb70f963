"""Where raw records come from: one raw-record shape, whatever the dump.

    dump            a dump, whatever its format -> the raw records (format detection, the units Python
                    workers read, the raw-record DataFrame)
    snapshot        Kafka-source snapshots (Parquet, Delta)
    kafka_topic     the live topic, through Spark's Kafka source
    log_files       the files of a log dump: segments, kafka-dump-log text, console-consumer text
    segments/       log segment files (magic 0/1/2, CRCs, codecs) read byte-exactly; a segment writer
    textdumps/      kafka-dump-log and console-consumer text turned back into the records' bytes
    transactions    COMMIT/ABORT markers: each transactional record committed, aborted or pending
    end_offsets, kafka_end_offsets   the partitions' log start and end offsets, for lag
    parquet_files   Parquet read by the Python workers as a DataFrame

A new input format is a reader here that yields `log_records.LOG_RECORD_SCHEMA` batches (or a snapshot's
columns), and a name in `dump.detect_format`. Only inputs/ and outputs/ touch files, Kafka or Delta.

May import: the top-level modules, layouts.
"""
