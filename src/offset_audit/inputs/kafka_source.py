"""Kafka-source snapshots: Parquet or Delta with the columns Spark's Kafka source produces."""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, IntegralType, StringType, TimestampNTZType, TimestampType

from offset_audit.errors import InputNotFound, UserError
from offset_audit.inputs import formats
from offset_audit.inputs.parquet_files import literal_paths
from offset_audit.storage import LOCAL, FileStamp, Storage, is_remote, join, spark_path
from offset_audit.timestamps import millis_from_arrow

REQUIRED = ("key", "value", "partition", "offset")
_GLOB_CHARS = set("*?[{")


def _is_delta(path: str, storage: Storage = LOCAL) -> bool:
    return storage.is_dir(join(path, "_delta_log"))


def _expand(inputs: list[str], storage: Storage = LOCAL) -> list[str]:
    if not inputs:
        raise UserError("no input given; pass --input PATH (a file, folder or glob; repeatable)")
    # A path that exists is that path, whatever it holds ('?', '*' and '[' included): only one that does
    # not is taken for a pattern.
    paths = []
    for item in inputs:
        if is_remote(item):
            try:
                found = storage.exists(item)
            except OSError as err:
                raise UserError(f"cannot reach the input '{item}': {err}") from err
            if not found and _GLOB_CHARS & set(item):
                raise UserError(f"the input '{item}' is a pattern; patterns work on local paths, give the folder")
            if not found:
                raise InputNotFound(f"the input '{item}' does not exist")
            paths.append(item)
            continue
        if "://" in item:
            paths.append(item)  # another store: Spark reads it, with its own connectors
            continue
        if _GLOB_CHARS & set(item) and not os.path.exists(item):
            matches = sorted(glob.glob(item))
            if not matches:
                raise InputNotFound(f"the input pattern '{item}' matches no file")
            paths.extend(matches)
        elif not os.path.exists(item):
            raise InputNotFound(f"the input '{item}' does not exist")
        else:
            paths.append(item)
    return paths


@dataclass(frozen=True)
class DeltaSnapshot:
    """A Delta table as one load of its log shows it: its version, that version's data files, and each
    file's size and time as its add action records them."""

    version: int
    files: list[str]
    stamps: dict[str, FileStamp]


def delta_snapshot(path: str, storage: Storage = LOCAL) -> DeltaSnapshot:
    """A Delta table's current version and its data files, read through delta-rs from one load of its
    log (so the files are that version's), and so a Delta snapshot needs no Delta jars in Spark."""
    from urllib.parse import unquote

    from deltalake import DeltaTable

    table = DeltaTable(path, storage_options=storage.delta_options)
    check_plain_files(table, path)
    files = table.file_uris()
    actions = pa.table(table.get_add_actions(flatten=True)).select(["path", "size_bytes", "modification_time"])
    stamps = {}
    for uri, action in zip(files, actions.to_pylist(), strict=False):
        if uri.rsplit("/", 1)[-1] == unquote(action["path"].rsplit("/", 1)[-1]):
            modified = action["modification_time"]
            millis = int(modified.timestamp() * 1000) if hasattr(modified, "timestamp") else modified
            stamps[uri] = FileStamp(int(action["size_bytes"]), millis)
    return DeltaSnapshot(table.version(), files, stamps)


def check_plain_files(table, path: str) -> None:
    """A Delta table (deltalake.DeltaTable) whose data files hold its rows as they are, so they can be
    read without Delta: reading the files of a table with deletion vectors would resurrect deleted rows,
    and column mapping renames the columns inside them."""
    if "deletionVectors" in set(table.protocol().reader_features or []):
        raise UserError(
            f"the Delta table {path} may use deletion vectors; read it with a delta-spark session, or rewrite it "
            "without them (REORG TABLE ... APPLY (PURGE))"
        )
    if table.metadata().configuration.get("delta.columnMapping.mode", "none") != "none":
        raise UserError(f"the Delta table {path} uses column mapping; read it with a delta-spark session")


def source_files(
    inputs: list[str],
    paths: list[str],
    input_format: str,
    storage: Storage = LOCAL,
    delta: Callable[[str], DeltaSnapshot] | None = None,
) -> list[str]:
    """The inputs (`paths`, expanded) as Spark should read them: files, folders and Delta tables' current
    data files (`delta`: how a table's version and files are read, `delta_snapshot` unless given)."""
    delta = delta or (lambda path: delta_snapshot(path, storage))
    files: list[str] = []
    for path in paths:
        if "://" in path and not is_remote(path):
            files.append(path)  # another store, read by Spark
        elif formats.named(input_format).delta_table or _is_delta(path, storage):
            if not _is_delta(path, storage):
                raise UserError(f"'{path}' is not a Delta table (it has no _delta_log folder)")
            files.extend(delta(path).files)
        else:
            files.append(path)
    if not files:
        raise InputNotFound(f"the input {', '.join(inputs)} holds no data files")
    return files


def _check_columns(columns: list[str]) -> None:
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise UserError(
            f"the input has no column {', '.join(missing)}; a Kafka-source snapshot has key, value, topic, "
            f"partition, offset and timestamp (found: {', '.join(columns)})"
        )


def check_source_schema(schema: pa.Schema, file: str) -> None:
    """A Kafka-source snapshot's columns, checked from a Parquet footer on the driver: a wrong type must
    be one sentence before any task runs, not an exception in every task."""
    _check_columns(schema.names)
    expected = {
        "key": ("binary", lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t)),
        "value": ("binary", lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t)),
        "partition": ("an integer", pa.types.is_integer),
        "offset": ("an integer", pa.types.is_integer),
        "timestamp": (
            "a timestamp (or epoch milliseconds)",
            lambda t: pa.types.is_timestamp(t) or pa.types.is_integer(t),
        ),
        "topic": ("a string", lambda t: pa.types.is_string(t) or pa.types.is_large_string(t)),
    }
    for name, (what, fits) in expected.items():
        if name in schema.names and not fits(schema.field(name).type):
            raise UserError(
                f"column '{name}' of {file} must be {what}, as Spark's Kafka source writes it, found "
                f"{schema.field(name).type}"
            )


def read_footer(file: str, storage: Storage = LOCAL) -> pq.FileMetaData:
    try:
        return pq.read_metadata(storage.parquet_source(file))
    except (OSError, pa.ArrowInvalid) as err:
        raise UserError(f"'{file}' is not a readable Parquet file ({err})") from err


def read_kafka_source(spark: SparkSession, files: list[str], storage: Storage = LOCAL) -> DataFrame:
    """A snapshot's files (`OpenedDump.source_files`) read by Spark."""
    reader = literal_paths(spark.read).option("recursiveFileLookup", "false")
    frame = reader.parquet(*[spark_path(f) for f in files])
    _check_columns(frame.columns)
    return frame


def to_raw_records(frame: DataFrame) -> DataFrame:
    """Normalise a Kafka-source frame to the raw-record columns (see offset_audit.inputs.dump)."""
    columns = set(frame.columns)
    expected = {
        "key": ("binary", (BinaryType,)),
        "value": ("binary", (BinaryType,)),
        "partition": ("an integer", (IntegralType,)),
        "offset": ("an integer", (IntegralType,)),
        "timestamp": ("a timestamp (or epoch milliseconds)", (TimestampType, TimestampNTZType, IntegralType)),
        "topic": ("a string", (StringType,)),
    }
    for name, (what, kinds) in expected.items():
        if name in columns and not isinstance(frame.schema[name].dataType, kinds):
            raise UserError(
                f"column '{name}' must be {what}, as Spark's Kafka source writes it, found "
                f"{frame.schema[name].dataType.simpleString()}"
            )
    topic = F.col("topic").cast("string") if "topic" in columns else F.lit(None).cast("string")
    if "timestamp" in columns and isinstance(frame.schema["timestamp"].dataType, IntegralType):
        stamp = F.col("timestamp").cast("long")  # already Kafka's epoch milliseconds
    elif "timestamp" in columns:
        stamp = F.unix_millis(F.col("timestamp").cast("timestamp"))
    else:
        stamp = F.lit(None).cast("long")
    return frame.select(
        topic.alias("source_topic"),
        F.col("partition").cast("int").alias("source_partition"),
        F.col("offset").cast("long").alias("source_offset"),
        stamp.alias("record_timestamp_ms"),
        F.col("key"),
        F.col("value"),
    )


# Reading snapshot files in Python workers --------------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """Some row groups of one Parquet file: the unit of work when Python workers read a snapshot."""

    path: str
    row_groups: tuple[int, ...]
    rows: int
    storage: Storage = LOCAL


def parquet_files(
    path: str, storage: Storage = LOCAL, files_under: Callable[[str], list[str]] | None = None
) -> list[str]:
    """The data files of a folder (not those in hidden or _bookkeeping folders, nor .crc), or the file.
    `files_under`: how the folder is listed (an opened dump's listing, made once)."""
    if not storage.is_dir(path):
        return [path]
    root = path.rstrip("/") + "/"
    found = []
    for file in (files_under or storage.files_under)(path):
        parts = file[len(root) :].split("/")
        if any(p.startswith(("_", ".")) for p in parts) or parts[-1].endswith(".crc"):
            continue
        found.append(file)
    return found


def read_by_workers(inputs: list[str]) -> bool:
    """Whether Python workers read every input themselves (local, mounted or S3), not Spark."""
    return all("://" not in item or is_remote(item) for item in inputs)


def pieces_of(files: list[str], rows_per_piece: int = 1_000_000, storage: Storage = LOCAL) -> list[Piece]:
    """Split the snapshot's data files into pieces of whole row groups, reading only the files' footers."""
    pieces = []
    for file in files:
        metadata = read_footer(file, storage)
        check_source_schema(metadata.schema.to_arrow_schema(), file)
        group, rows = [], 0
        for index in range(metadata.num_row_groups):
            group.append(index)
            rows += metadata.row_group(index).num_rows
            if rows >= rows_per_piece:
                pieces.append(Piece(file, tuple(group), rows, storage))
                group, rows = [], 0
        if group:
            pieces.append(Piece(file, tuple(group), rows, storage))
    return pieces


def read_piece(piece: Piece, topic: str, batch_rows: int = 100_000) -> Iterator[pa.RecordBatch]:
    """Raw-record batches of one piece, as `offset_audit.decoding.decoder.for_decode` would give them."""
    parquet = pq.ParquetFile(piece.storage.parquet_source(piece.path))
    names = parquet.schema_arrow.names
    columns = [c for c in ("key", "value", "topic", "partition", "offset", "timestamp") if c in names]
    check_source_schema(parquet.schema_arrow, piece.path)  # the driver checked; the file may have changed
    for batch in parquet.iter_batches(batch_size=batch_rows, row_groups=list(piece.row_groups), columns=columns):
        n = batch.num_rows
        if "topic" in names:
            other_topic = pc.fill_null(pc.not_equal(batch.column("topic"), topic), False)
        else:
            other_topic = pa.array(np.zeros(n, bool))
        if "timestamp" in names:
            stamps = millis_from_arrow(batch.column("timestamp"))
        else:
            stamps = pa.nulls(n, pa.int64())
        yield pa.RecordBatch.from_arrays(
            [
                batch.column("partition").cast(pa.int32()),
                batch.column("offset").cast(pa.int64()),
                stamps,
                batch.column("key"),
                batch.column("value"),
                other_topic,
            ],
            names=["source_partition", "source_offset", "record_timestamp_ms", "key", "value", "other_topic"],
        )
