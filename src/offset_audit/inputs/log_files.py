"""Dumps operators already have: log segment files, kafka-dump-log text, console-consumer text.

Each input file is one unit of work, read by a Python worker with the reader of its format (all three
yield Arrow batches of `offset_audit.inputs.log_records.LOG_RECORD_SCHEMA`). Transactions need a
look across files (a marker may sit in a later segment than its commits), so reading takes two
passes: a light one gathering the COMMIT/ABORT markers, resolved on the driver
(`offset_audit.inputs.transactions`), then the real one, in which every task labels its own records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import SparkSession

from offset_audit.errors import InputNotFound, UserError
from offset_audit.escaping import stored_text
from offset_audit.inputs import formats, log_loader, transactions
from offset_audit.inputs.copies import COPY_STATE
from offset_audit.inputs.log_loader import is_segment_file
from offset_audit.inputs.log_records import LOG_RECORD_SCHEMA
from offset_audit.inputs.segments.framing import DEFAULT_MAX_BATCH_BYTES
from offset_audit.python_tasks import cut, run_tasks
from offset_audit.session_kind import session_cores
from offset_audit.storage import LOCAL, Storage, basename, join, parent

SNIFF_BYTES = 65_536


@dataclass(frozen=True)
class LogFile:
    """One input file and how to read it: the unit of work of a log-file dump."""

    path: str
    input_format: str  # its formats.InputFormat's name (a unit travels to Python workers)
    partition: int | None  # --partition; otherwise the reader takes it from the path or the text
    size: int
    topic: str | None = None  # the internal topic a segment's folder names; None when it does not say
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES  # decode.max_batch_mib: the most one batch may take
    storage: Storage = LOCAL  # how to reach it (an object store's options travel with the unit)
    fast_path: bool = True  # decode.fast_path: segments through the compiled walker (false: Python only)


def _walk(path: str, keep, files_under: Callable[[str], list[str]]) -> list[str]:
    return [f for f in files_under(path) if keep(basename(f))]


def _segment_sort_key(path: str) -> tuple:
    from offset_audit.inputs.segments.reader import partition_from_path

    partition = partition_from_path(path)
    return (partition is None, partition or 0, parent(path), basename(path))


def log_files(
    paths: list[str],
    input_format: str,
    partition: int | None = None,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    storage: Storage = LOCAL,
    fast_path: bool = True,
    files_under: Callable[[str], list[str]] | None = None,
) -> list[LogFile]:
    """The files of the dump, in log order within each partition (segment names are base offsets).
    `files_under`: how a folder is listed (an opened dump's listing, made once)."""
    fmt = formats.named(input_format)
    listing = files_under or storage.files_under
    files: list[str] = []
    for path in paths:
        if storage.is_dir(path):
            if fmt.broker_folders:
                files += _walk(path, is_segment_file, listing)
            elif fmt.share_state:
                files += _walk(path, lambda n: n.endswith((".json", ".jsonl")), listing)
            else:
                files += _walk(path, lambda n: not n.startswith((".", "_")), listing)
        else:
            files.append(path)
    if not files:
        raise InputNotFound(f"no {input_format} files under {', '.join(paths)}")
    if fmt.broker_folders:
        from offset_audit.inputs.segments.reader import partition_from_path

        files.sort(key=_segment_sort_key)
        unknown = [f for f in files if partition is None and partition_from_path(f) is None]
        if unknown:
            raise UserError(
                f"cannot tell which __consumer_offsets partition '{unknown[0]}' belongs to: keep segments in "
                "their __consumer_offsets-N folders, or pass --partition N for a flat list of one partition's files"
            )
    if fmt.broker_folders:
        _check_one_topic_id(files, storage)
    topic_of = _segment_topic if fmt.broker_folders else (lambda _: None)
    return [
        LogFile(f, input_format, partition, storage.size(f), topic_of(f), max_batch_bytes, storage, fast_path)
        for f in files
    ]


def _check_one_topic_id(files: list[str], storage: Storage) -> None:
    """Folders of one partition from different clusters (or from before the topic was re-created) are
    not copies of one log: their partition.metadata names different topic ids."""
    from offset_audit.inputs.segments.reader import partition_from_path

    seen: dict[tuple, tuple[str, str]] = {}
    for folder in dict.fromkeys(parent(f) for f in files):
        topic_id = log_loader.topic_id(folder, storage)
        if topic_id is None:
            continue
        key = (_segment_topic(join(folder, "x.log")), partition_from_path(join(folder, "x.log")))
        if key in seen and seen[key][0] != topic_id:
            raise UserError(
                f"'{stored_text(seen[key][1])}' and '{stored_text(folder)}' hold the same partition of topics with "
                f"different ids ({seen[key][0]} and {topic_id}): they are not copies of one log; give one cluster's "
                "dump per run"
            )
        seen.setdefault(key, (topic_id, folder))


def _segment_topic(path: str) -> str | None:
    from offset_audit.inputs.segments.reader import topic_from_path

    return topic_from_path(path)


def read_log_file(unit: LogFile, batch_rows: int = 50_000, only_control: bool = False) -> Iterator[pa.RecordBatch]:
    """The unit's records as LOG_RECORD_SCHEMA batches, with the reader of its format (its `read_file`).
    `only_control` lets a reader that can skip data batches cheaply (segments) do so; the others read
    everything."""
    fmt = formats.named(unit.input_format)
    if fmt.broker_folders:  # segment files: the batch cap and the compiled walker are decode settings
        options = {"only_control": only_control, "max_batch_bytes": unit.max_batch_bytes, "fast": unit.fast_path}
    else:
        options = {}
    assert fmt.read_file is not None  # a unit's format is read as log files: each such format names its reader
    yield from fmt.read_file(unit.path, unit.partition, batch_rows, unit.storage, **options)


def marker_rows(unit: LogFile) -> Iterator[tuple[int | None, int, int, str]]:
    """The light pass over one file: its control records, for `transactions.Markers.from_rows`."""
    for batch in read_log_file(unit, only_control=True):
        yield from transactions.marker_rows(batch)


def gather_markers(spark: SparkSession, units: list[LogFile]) -> transactions.Markers:
    """First pass: the COMMIT/ABORT markers of every file (a few per transaction), to the driver."""
    if not units or not formats.named(units[0].input_format).markers:
        return transactions.Markers()

    def task(items: Iterator[LogFile]) -> Iterator[tuple]:
        for unit in items:
            yield from marker_rows(unit)

    # A few tasks per core: a task costs tens of milliseconds to start, about what scanning 100 MiB for
    # markers costs. (Segments find their markers inside the decode task, see read_partition_raw.)
    rows = run_tasks(spark, cut(units, 2 * session_cores(spark)), task)
    return transactions.Markers.from_rows(rows)


@dataclass(frozen=True)
class PartitionFiles:
    """The segment files of one partition, in log order: a unit of work that needs nothing from the
    other partitions, since a transaction's markers sit in the log of the partition its records are in."""

    partition: int | None
    files: tuple[LogFile, ...]


def by_partition(units: list[LogFile]) -> list[PartitionFiles]:
    """Segment files grouped by partition (`log_files` gives them sorted by partition, then log order)."""
    from offset_audit.inputs.segments.reader import partition_from_path

    groups: dict[int | None, list[LogFile]] = {}
    for unit in units:
        partition = unit.partition if unit.partition is not None else partition_from_path(unit.path)
        groups.setdefault(partition, []).append(unit)
    return [PartitionFiles(partition, tuple(files)) for partition, files in groups.items()]


# What the decode stage takes from a labelled log-file batch (see offset_audit.decoding.decoder.RAW_COLUMNS).
_RAW = ("source_partition", "source_offset", "record_timestamp_ms", "key", "value")
# Where a raw record's batch sits in the input (LOG_RECORD_SCHEMA's columns): file and byte position.
LOCATION = ("source_file", "source_position")


def to_raw_batch(batch: pa.RecordBatch, markers: transactions.Markers, other_topic: bool = False) -> pa.RecordBatch:
    """A LOG_RECORD_SCHEMA batch as raw records for `offset_audit.decoding.decoder.decode_batch`, labelled with
    its transaction state; `other_topic` when the file's folder names another topic than the one read
    (a data directory holding both __consumer_offsets and __share_group_state)."""
    columns = [batch.column(name) for name in _RAW]
    names = list(_RAW)
    columns.append(pa.array([other_topic] * batch.num_rows, pa.bool_()))
    names.append("other_topic")
    for name in ("source_error", "source_note", "skipped_bytes"):
        columns.append(batch.column(name))
        names.append(name)
    columns.append(transactions.label(batch, markers))
    names.append("transaction")
    copy_state = COPY_STATE in batch.schema.names
    columns.append(batch.column(COPY_STATE) if copy_state else pa.nulls(batch.num_rows, pa.string()))
    names.append(COPY_STATE)
    # The producer settles a pending record: an incremental audit carries it to the next run's markers.
    columns.append(batch.column("producer_id"))
    names.append("producer_id")
    # Where each record's batch is: an incremental audit keeps the last one it read, to find it again
    # (`inputs.last_read`); the decode tasks drop these first (`resumed.unlocated`).
    for name in LOCATION:
        columns.append(batch.column(name))
        names.append(name)
    return pa.RecordBatch.from_arrays(columns, names=names)


def located_errors(batch: pa.RecordBatch, unit: LogFile) -> pa.RecordBatch:
    """Error rows name where in the input they are: the quarantine table has no file column."""
    errors = batch.column("source_error")
    if errors.null_count == batch.num_rows:
        return batch
    positions = batch.column("source_position").to_pylist()
    where = "byte" if formats.named(unit.input_format).broker_folders else "line"
    path = stored_text(unit.path)  # a file name need not be UTF-8
    located = [
        None if error is None else f"{error} [{path}, {where} {position}]"
        for error, position in zip(errors.to_pylist(), positions, strict=True)
    ]
    index = batch.schema.get_field_index("source_error")
    return batch.set_column(index, "source_error", pa.array(located, pa.string()))


def read_raw(unit: LogFile, markers: transactions.Markers, topic: str | None = None) -> Iterator[pa.RecordBatch]:
    """Second pass over one unit: raw-record batches ready for the decoder (records of a file whose
    folder names another topic than `topic` are marked, to be counted as skipped)."""
    other = unit.topic is not None and topic is not None and unit.topic != topic
    for batch in read_log_file(unit):
        if batch.schema != LOG_RECORD_SCHEMA:
            batch = batch.cast(LOG_RECORD_SCHEMA)
        yield to_raw_batch(located_errors(batch, unit), markers, other)
