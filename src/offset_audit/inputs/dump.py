"""Where raw records come from. Every source yields the same raw-record DataFrame:

    source_topic string, source_partition int, source_offset bigint, record_timestamp_ms bigint,
    key binary, value binary

in which a null value is a tombstone; log-file dumps add source_error, source_note and transaction
(see offset_audit.decoding.decoder.OPTIONAL_RAW_COLUMNS). Only this package (and `outputs/`) touches files or Kafka.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from offset_audit.inputs import formats, log_files, log_frames
from offset_audit.inputs.kafka_source import pieces_of, read_kafka_source, read_piece, to_raw_records
from offset_audit.inputs.kafka_topic import read_kafka
from offset_audit.inputs.opened import OpenedDump
from offset_audit.inputs.overlapping import merged_raw_records, merges
from offset_audit.inputs.partition_folders import read_partition_raw
from offset_audit.inputs.resumed import (
    CARRIED,
    Resume,
    carried_units,
    read_resumed_partition,
    read_unit,
    resumed_partitions,
    resumed_pieces,
)
from offset_audit.inputs.transactions import Markers
from offset_audit.python_tasks import run_tasks
from offset_audit.session_kind import session_cores


@dataclass(frozen=True)
class FileUnits:
    """Input that Python workers read themselves, one unit per task slot: pieces of local snapshot
    files, or the files of a log dump. Skipping the JVM-to-Python transfer is what makes the fast
    route fast (see `make bench`)."""

    units: list[Any]
    read: Callable[[Any], Iterator[pa.RecordBatch]]  # a unit -> raw-record batches for the decoder
    rows: int | None  # records in the input when known before reading (Parquet footers)
    files: int = 0  # the input files the units hold (for progress)

    def slices(self, cores: int, keep_order: bool = False) -> list[list[Any]]:
        """The units dealt into tasks by weight (unit_weight): one task per core, or a few waves of them
        where the input is large enough that a task would hold more than RECORDS_PER_TASK records, so
        progress still moves on a big dump.

        Spark's own split of a list cuts it by position, and partitions of __consumer_offsets differ
        several-fold in size (groups hash unevenly), so its tasks did too: at 1M records the heaviest of
        four tasks held 46% of the records. A task costs tens of milliseconds to start, so balanced
        tasks, one per core, beat more, smaller ones (warm decode of the 1M-record segments: about 0.5 s
        against 0.75 s for four position-cut tasks on 2 cores).

        By default the heaviest unit goes first, each to the lightest task so far. `keep_order` cuts the
        list into runs of about equal weight instead, so that each task holds a stretch of the input:
        share's fold combines tasks' summaries of a share-partition only when their records do not
        interleave."""
        weights = [unit_weight(unit) for unit in self.units]
        total = sum(weights)
        waves = max(1, math.ceil(total / (cores * RECORDS_PER_TASK)))
        count = max(1, min(len(self.units), waves * cores))
        tasks: list[list[int]] = [[] for _ in range(count)]
        if keep_order:
            done = 0
            for index, weight in enumerate(weights):
                # the task whose share of the total holds this unit's middle
                tasks[min(count - 1, (2 * done + weight) * count // max(1, 2 * total))].append(index)
                done += weight
        else:
            loads = [0] * count
            for index in sorted(range(len(self.units)), key=lambda i: -weights[i]):
                lightest = loads.index(min(loads))
                tasks[lightest].append(index)
                loads[lightest] += weights[index]
        # Each task reads its units in input order (a partition's files stay in log order).
        return [[self.units[i] for i in sorted(task)] for task in tasks if task]

    def run(self, spark, task: Callable[[Iterator[Any]], Iterator[Any]], keep_order: bool = False) -> list:
        """`task` over every unit, one Spark task per slice (see `slices`); its results, collected."""
        return run_tasks(spark, self.slices(session_cores(spark), keep_order), task)


# About 1.5 s of one core's decoding: the most a task takes on before the units are split into waves.
RECORDS_PER_TASK = 4_000_000
# Bytes per record of a log segment as coordinators write it (one record per batch): 134 in make bench.
SEGMENT_BYTES_PER_RECORD = 128


def unit_weight(unit: Any) -> int:
    """About how many records a unit of FileUnits holds: its rows (snapshot pieces, from the Parquet
    footers), or its bytes over SEGMENT_BYTES_PER_RECORD (log files, a partition's files)."""
    files = getattr(unit, "files", None)
    if files is not None:
        return sum(f.size for f in files) // SEGMENT_BYTES_PER_RECORD
    if hasattr(unit, "size"):
        return unit.size // SEGMENT_BYTES_PER_RECORD
    return unit.rows


def _merged(spark: SparkSession, dump: OpenedDump) -> DataFrame | None:
    """Several inputs that may hold the same partitions, merged as copies (`overlapping`); None where
    the inputs are read as one."""
    if not merges(list(dump.paths), dump.format):
        return None
    paths_formats = dump.path_formats
    # A transaction's marker may sit in another input's text (kafka-dump-log of the next segment): the
    # markers of every dump-log input label the records of each.
    texts = [path for path, fmt in paths_formats if fmt == formats.DUMP_LOG.name]
    markers = log_files.gather_markers(spark, dump.part(texts, formats.DUMP_LOG.name).log_units) if texts else None

    def load(path: str, own_format: str) -> DataFrame:
        part = dump.part([path], own_format)
        if own_format == formats.DUMP_LOG.name:
            assert markers is not None  # the path is one of `texts`, whose markers were gathered
            return log_frames.raw_dataframe(spark, part.log_units, markers)
        return load_raw_records(spark, part)

    return merged_raw_records(paths_formats, load)


def _log_units(spark: SparkSession, dump: OpenedDump) -> tuple[list[log_files.LogFile], Markers]:
    """The dump's files, and its transaction markers (the first, light pass)."""
    return dump.log_units, log_files.gather_markers(spark, dump.log_units)


def load_raw_records(spark: SparkSession, dump: OpenedDump) -> DataFrame:
    """The dump's raw records as one DataFrame (several inputs merged as copies where they overlap)."""
    settings = dump.settings
    if dump.format.live:
        return to_raw_records(read_kafka(spark, settings))
    if (merged := _merged(spark, dump)) is not None:
        return merged
    if dump.format.broker_folders:  # each partition's task finds its own markers
        return log_frames.raw_dataframe(spark, dump.log_units, Markers())
    if dump.format.log_files:
        return log_frames.raw_dataframe(spark, *_log_units(spark, dump))
    return to_raw_records(read_kafka_source(spark, dump.source_files, dump.storage))


def raw_source(spark: SparkSession, dump: OpenedDump) -> DataFrame | FileUnits:
    """What the fast route reads: files Python workers read directly (local snapshots, log
    dumps), or else the raw-record DataFrame."""
    settings = dump.settings
    several = dump.format.copies_merged and len(dump.paths) > 1
    if dump.format.several_formats or several:  # copies to merge (`overlapping`)
        return load_raw_records(spark, dump)
    if dump.format.broker_folders:
        # A partition's transaction markers are in its own log: each task finds those of its partitions
        # itself, and the dump is read in one Spark job rather than two.
        groups = dump.partition_groups
        return FileUnits(groups, partial(read_partition_raw, topic=settings.input.topic), None, len(dump.log_units))
    if dump.format.log_files:
        units, markers = _log_units(spark, dump)
        return FileUnits(
            units, partial(log_files.read_raw, markers=markers, topic=settings.input.topic), None, len(units)
        )
    if dump.read_by_workers:
        pieces = dump.pieces
        rows = sum(p.rows for p in pieces)
        return FileUnits(pieces, partial(read_piece, topic=settings.input.topic), rows, len({p.path for p in pieces}))
    return load_raw_records(spark, dump)


def resumed_source(spark: SparkSession, dump: OpenedDump, resume: Resume) -> DataFrame | FileUnits:
    """An incremental audit's input (`inputs.resumed`): the records its state carries and the input's
    records from each partition's position on. Broker folders open no segment file that lies wholly
    below its position; snapshot pieces skip the row groups their footers show to lie below it; the
    live topic is read from the positions (from the last record read, where that is looked for again).
    The records counted are the carried and the new ones."""
    settings = dump.settings
    topic = settings.input.topic
    if dump.format.broker_folders:
        groups = resumed_partitions(dump.partition_groups, resume, SEGMENT_BYTES_PER_RECORD)
        opened = sum(len(g.segments) for g in groups)
        return FileUnits(groups, partial(read_resumed_partition, topic=topic), None, opened)
    if dump.read_by_workers:
        # Only the files the run has not read (`inputs.snapshot_files`), where the state lists them. A new
        # file is read whole: its records below the positions are a recreated topic or an export that
        # ran again, which the run must see (`runs.incremental.check_ends`), not skip by its footers.
        if resume.files is None:
            pieces = resumed_pieces(dump.pieces, resume)
        else:
            listed = pieces_of(list(resume.files.paths), storage=dump.storage)
            pieces = [p for p in listed if p.path not in resume.reread]
            pieces += resumed_pieces([p for p in listed if p.path in resume.reread], resume)
        opened = len({p.path for p in pieces})
        return FileUnits([*pieces, *carried_units(resume)], partial(read_unit, topic=topic), None, opened)
    if dump.format.live:
        # From each partition's last record read, which the decode tasks find again (`Resume.probes`).
        starting = {p: resume.first_needed(p) for p in resume.floors}
        new = to_raw_records(read_kafka(spark, settings, starting))
    else:
        new = to_raw_records(read_kafka_source(spark, dump.source_files, dump.storage))
    return carried_frame(spark, new, resume, topic)


def carried_frame(spark: SparkSession, new: DataFrame, resume: Resume, topic: str) -> DataFrame:
    """The new records of a DataFrame source, marked, with the carried ones beside them (a Kafka source
    reads read_committed: nothing it carries is transactional)."""
    from functools import reduce

    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    from offset_audit.inputs.parquet_files import read_parquet_files

    stored = StructType(
        [
            StructField("source_offset", LongType()),
            StructField("record_timestamp_ms", LongType()),
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
        ]
    )
    frames = [new.withColumn(CARRIED, F.lit(False))]
    for partition, files in sorted(resume.record_files.items()):
        rows = read_parquet_files(spark, list(files), stored, resume.storage)
        frames.append(
            rows.select(
                F.lit(topic).alias("source_topic"),
                F.lit(partition).cast("int").alias("source_partition"),
                "source_offset",
                "record_timestamp_ms",
                "key",
                "value",
                F.lit(True).alias(CARRIED),
            )
        )
    return reduce(DataFrame.unionByName, frames)
