"""Each file dump format as a Spark data source (Spark's Python Data Source API, Arrow batches), so that
any session that has registered them reads a dump as it reads Parquet:

    spark.read.format("kafka-log").load("dump/")                      log segments, broker folders
    spark.read.format("kafka-dump-log").load("dump-log.txt")          kafka-dump-log.sh text
    spark.read.format("kafka-console").option("partition", 7).load(p) kafka-console-consumer.sh text
    spark.read.format("kafka-share-state").load("share.jsonl")        the KIP-932 draft's JSON lines

A source's partitions are the units the audit's own route reads (a partition's segment folders, a text
file), and each is read by the same function (`log_frames.raw_units`), so the rows are the raw records
the audit decodes: RAW_LOG_DDL for the log dumps, KIP932_LINES_TYPE for the draft's lines.

Options (Spark lower-cases their names): `partition` (the __consumer_offsets partition of inputs that
cannot tell it), `maxBatchMib`,
`fastPath` (false: segments through the Python reader only) and `storage.NAME` (an object store's
options, as --storage-option NAME=VALUE). Several paths (`load([a, b])`) are one dump; copies of a
partition in several text dumps are merged by `offset_audit.api.read_dump`, which reads each by itself.

The planning (the files listed, kafka-dump-log's transaction markers gathered) runs in a Python process
of the session's `spark.pyspark.python` on the driver: a dump-log's markers are read there file by file,
where the audit's own route gathers them in a Spark job first.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from offset_audit.errors import UserError
from offset_audit.inputs import formats, log_files, transactions
from offset_audit.inputs.kafka_source import _expand
from offset_audit.inputs.log_frames import RAW_LOG_DDL, raw_units
from offset_audit.inputs.segments.framing import DEFAULT_MAX_BATCH_BYTES
from offset_audit.inputs.textdumps import kip932_lines
from offset_audit.layouts.tables import parse_struct
from offset_audit.storage import Storage

_STORAGE_PREFIX = "storage."


def _paths(options: Mapping[str, str]) -> list[str]:
    if "paths" in options:
        return list(json.loads(options["paths"]))
    if "path" in options:
        return [options["path"]]
    raise UserError("give the dump's path: spark.read.format(...).load(PATH)")


def _storage(options: Mapping[str, str]) -> Storage:
    return Storage.of({k[len(_STORAGE_PREFIX) :]: v for k, v in options.items() if k.startswith(_STORAGE_PREFIX)})


def _flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    value = options.get(name.lower())
    if value is None:
        return default
    if value.lower() not in ("true", "false"):
        raise UserError(f"option {name} takes true or false, not '{value}'")
    return value.lower() == "true"


def _number(options: Mapping[str, str], name: str) -> int | None:
    value = options.get(name.lower())
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise UserError(f"option {name} takes a whole number, not '{value}'") from None


class _Units(DataSourceReader):
    """The units of a dump, one Spark partition each, read by `read_unit`."""

    def __init__(self, units: list[Any], read_unit: Callable[[Any], Iterator[pa.RecordBatch]]):
        self.units = units
        self.read_unit = read_unit

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(unit) for unit in self.units]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from self.read_unit(partition.value)


class _LogDumpSource(DataSource):
    """A log dump of one format (FORMAT, its descriptor in `inputs.formats`) as raw records."""

    FORMAT: ClassVar[formats.InputFormat]

    @classmethod
    def name(cls) -> str:
        return cls.FORMAT.spark_source

    def schema(self) -> str:
        return RAW_LOG_DDL

    def units(self) -> list[log_files.LogFile]:
        partition, mib = _number(self.options, "partition"), _number(self.options, "maxBatchMib")
        fast, storage = _flag(self.options, "fastPath", True), _storage(self.options)
        return log_files.log_files(
            _expand(_paths(self.options), storage),
            self.FORMAT.name,
            partition,
            DEFAULT_MAX_BATCH_BYTES if mib is None else mib << 20,
            storage,
            fast,
        )

    def markers(self, units: list[log_files.LogFile]) -> transactions.Markers:
        """A text dump's transaction markers, gathered while planning: a marker may sit in the text of a
        later segment than its records. Broker folders find each partition's in its task; console text
        shows none."""
        if not self.FORMAT.markers or self.FORMAT.broker_folders:
            return transactions.Markers()
        return transactions.Markers.from_rows(row for unit in units for row in log_files.marker_rows(unit))

    def reader(self, schema: StructType) -> DataSourceReader:
        units = self.units()
        return _Units(*raw_units(units, self.markers(units)))


def _log_source(described: formats.InputFormat) -> type[_LogDumpSource]:
    """The source of a format read as the files of a log dump, made from its registry entry alone, so
    that a new such format needs no source of its own. A module-level name (SegmentsSource,
    DumpLogSource, ConsoleSource), so that Spark's workers unpickle it by reference."""
    name = "".join(part.title() for part in described.name.split("-")) + "Source"
    made = type(name, (_LogDumpSource,), {"FORMAT": described, "__module__": __name__, "__qualname__": name})
    made.__doc__ = f"{described.description}, as raw records."
    globals()[name] = made
    return made


class ShareStateSource(DataSource):
    """The KIP-932 draft's share-state records as JSON lines, a row per line (KIP932_LINES_TYPE)."""

    FORMAT: ClassVar[formats.InputFormat] = formats.KIP932_JSON

    @classmethod
    def name(cls) -> str:
        return cls.FORMAT.spark_source

    def schema(self) -> StructType:
        return parse_struct(kip932_lines.KIP932_LINES_TYPE)

    def reader(self, schema: StructType) -> DataSourceReader:
        storage = _storage(self.options)
        files = log_files.log_files(_expand(_paths(self.options), storage), self.FORMAT.name, storage=storage)
        return _Units(files, _kip932_batches)


def _kip932_batches(unit: log_files.LogFile) -> Iterator[pa.RecordBatch]:
    yield kip932_lines.kip932_batch(unit.path, unit.storage)


SOURCES: tuple[type[DataSource], ...] = (
    *(_log_source(described) for described in formats.FORMATS if described.log_files),
    ShareStateSource,
)


def register(spark: SparkSession) -> None:
    """Registers every dump format's data source in `spark`, once a session."""
    if getattr(spark, "_offset_audit_sources", False):
        return
    for source in SOURCES:
        spark.dataSource.register(source)
    spark._offset_audit_sources = True  # type: ignore[attr-defined]
