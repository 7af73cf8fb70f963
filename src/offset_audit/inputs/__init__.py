"""Where raw records come from: one raw-record shape, whatever the dump.

    formats         every input format described once: its name, how auto recognises it, its Spark data
                    source, what it can do (FORMATS, by_name, input_format)
    opened          a dump opened once, before Spark starts (open_dump -> OpenedDump): its paths, its format
                    worked out, its files listed once, the units to read and what it shows of itself
    dump            an opened dump -> the raw records (format detection, the units Python workers read,
                    the raw-record DataFrame)
    kafka_source    Kafka-source snapshots: what Spark's Kafka source wrote, as Parquet or Delta
    kafka_topic     the live topic, through Spark's Kafka source
    log_records     the one row shape every file-dump reader produces (LOG_RECORD_SCHEMA)
    log_files       the files of a log dump: segments, kafka-dump-log text, console-consumer text
    log_frames      a log dump as one raw-record DataFrame (the route sessions with delta-spark take)
    data_sources    each file dump format as a Spark data source: spark.read.format("kafka-log") and kin
    log_loader      a partition folder copied from a running broker, read as its log loader recovers it
    partition_folders   one partition's segment folders in one task: each read as the broker's
                    `log_loader` recovers it (the log cleaner's .swap, .cleaned and .deleted files), copies merged
    copies          the copies of one partition merged as the broker treats replicas (duplicates,
                    diverged replicas, records another copy's cleaner removed)
    overlapping     several inputs that may hold the same partitions, or of several formats, merged
    resumed         an incremental audit's input: the records its state carries and those past its
                    positions (segment files below them unopened), and what the input shows of them
    last_read       what identifies the last record an incremental run read of a partition (its batch
                    header, or a digest of the record), and finding it again before the next run reads on
    snapshot_files  the data files of a Kafka-source snapshot an incremental run has read, and those the
                    next one opens: new ones, changed ones, or a Delta table's rewritten ones
    segments/       log segment files (magic 0/1/2, CRCs, codecs) read byte-exactly; a segment writer
    textdumps/      kafka-dump-log and console-consumer text turned back into the records' bytes
    transactions    COMMIT/ABORT markers: each transactional record committed, aborted or pending
    end_offsets, kafka_end_offsets   the partitions' log start and end offsets, for lag
    parquet_files   Parquet read by the Python workers as a DataFrame
    broker_properties   a broker's server.properties, read as java.util.Properties.load reads it

A new input format is a reader here that yields `log_records.LOG_RECORD_SCHEMA` batches, and one entry in
`formats` (its name, how auto recognises it, its reader, what it can do; docs/development.md shows the
steps). Code outside inputs/ asks a format what it can do (`input_format(settings).resumable`), never its
name, and takes the dump `opened.open_dump` opened instead of its paths. Only inputs/ and outputs/ touch
files, Kafka or Delta.

May import: the top-level modules, layouts.
"""
