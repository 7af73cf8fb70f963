"""--end-offsets: the log start and end offset of each topic partition, for lag.

The file is small (a line per partition), so the driver reads it whole: checked before Spark starts,
and handed to Spark as rows, so executors never need to reach the file (a path on the driver's disk
works on a cluster too). Local, or s3:// through the run's Storage. Three forms, told apart by what the
file holds, never by its name:

- Parquet (its `PAR1` magic) or CSV with a header: topic, partition, log_start_offset, log_end_offset.
- What Kafka's `kafka-get-offsets.sh` prints: `topic:partition:offset` lines. The default `--time -1`
  (latest) gives the log end offsets; `--start-offsets` takes a second file of `--time -2` (earliest),
  the log start offsets. Without it log_start_offset is null, and so is offset_out_of_range.

`--end-offsets kafka` asks the cluster instead (offset_audit.inputs.kafka_end_offsets).
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from offset_audit.errors import InputNotFound, UserError
from offset_audit.storage import LOCAL, Storage

COLUMNS = ("topic", "partition", "log_start_offset", "log_end_offset")
SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("log_start_offset", pa.int64()),
        ("log_end_offset", pa.int64()),
    ]
)
# Offsets are Java longs; partition numbers Java ints.
MAX_OFFSET = 2**63 - 1
MAX_PARTITION = 2**31 - 1
PARQUET_MAGIC = b"PAR1"
# kafka-get-offsets.sh (GetOffsetShell) prints `topic:partition:offset`, one partition a line. Topic
# names hold only [a-zA-Z0-9._-] (Kafka's Topic.validate), never a colon, so the line splits on its
# last two. Tools before Kafka 3.5 printed an empty offset when the time asked for had none.
GET_OFFSETS_LINE = re.compile(r"(?P<topic>[^:]+):(?P<partition>\d+):(?P<offset>\d*)")


def load_end_offsets(path: str, storage: Storage = LOCAL, start_offsets: str | None = None) -> pa.Table:
    """The four columns, typed, one row per topic partition; a user error names the file and what is
    wrong with it. `start_offsets` (kafka-get-offsets.sh --time -2 output) fills log_start_offset of a
    kafka-get-offsets.sh end-offsets file."""
    head, data = _read_whole(path, storage, "end-offsets")
    if head.startswith(PARQUET_MAGIC):
        table = _read_parquet(path, data)
    elif _is_csv(data):
        table = _read_csv(path, data)
    else:
        table = _read_get_offsets(path, data, "log_end_offset")
        if start_offsets is not None:
            _, start_data = _read_whole(start_offsets, storage, "start-offsets")
            starts = _read_get_offsets(start_offsets, start_data, "log_start_offset", option="--start-offsets")
            table = _join_start_offsets(table, starts)
        else:
            table = table.append_column("log_start_offset", pa.nulls(table.num_rows, pa.int64()))
        return _checked(path, table.select(list(COLUMNS)))
    if start_offsets is not None:
        raise UserError(
            f"--start-offsets fills the log start offsets of a kafka-get-offsets.sh --end-offsets file, and "
            f"'{path}' is a table with its own log_start_offset column: drop --start-offsets"
        )
    try:
        table = table.select(list(COLUMNS)).cast(SCHEMA)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise UserError(f"the end-offsets file '{path}' has values out of range: {str(err).splitlines()[0]}") from err
    return _checked(path, table)


def end_offsets_table(source: str | pa.Table, storage: Storage = LOCAL) -> pa.Table:
    """The end offsets as Arrow: from a file, or from the table preflight already read (or fetched)."""
    table = source if isinstance(source, pa.Table) else load_end_offsets(source, storage)
    return table.select(list(COLUMNS)).cast(SCHEMA)


def read_end_offsets(spark: SparkSession, source: str | pa.Table, storage: Storage = LOCAL) -> DataFrame:
    """The end offsets as rows (see end_offsets_table)."""
    table = end_offsets_table(source, storage)
    return spark.createDataFrame(table, schema=from_arrow_schema(table.schema))  # Connect infers none when empty


def _read_whole(path: str, storage: Storage, what: str) -> tuple[bytes, bytes]:
    option = "--start-offsets" if what == "start-offsets" else "--end-offsets"
    try:
        is_file = storage.exists(path) and not storage.is_dir(path)
    except OSError as err:
        raise UserError(f"the {what} file '{path}' cannot be reached: {str(err).splitlines()[0]}") from err
    if not is_file:
        raise InputNotFound(f"the {what} file '{path}' ({option}) does not exist")
    with storage.open_input_file(path) as handle:
        data = handle.read()
    if not data.strip():
        raise UserError(f"the {what} file '{path}' is empty")
    return data[:4], data


def _is_csv(data: bytes) -> bool:
    """A header line with commas: no kafka-get-offsets.sh line has one (topic names cannot)."""
    first = next((line for line in data.splitlines() if line.strip()), b"")
    return b"," in first


def _read_get_offsets(path: str, data: bytes, column: str, option: str = "--end-offsets") -> pa.Table:
    """topic:partition:offset lines into topic, partition and `column`; blank lines skipped."""
    topics, partitions, offsets = [], [], []
    seen: dict[tuple[str, int], int] = {}
    for number, raw in enumerate(data.splitlines(), start=1):
        line = raw.decode("utf-8", errors="replace").strip().lstrip("\ufeff")
        if not line:
            continue
        found = GET_OFFSETS_LINE.fullmatch(line)
        if found is None and not seen and option == "--end-offsets":
            raise UserError(
                f"the end-offsets file '{path}' is neither Parquet, CSV with a header, nor kafka-get-offsets.sh "
                f"output (topic:partition:offset lines): line {number} reads '{line[:60]}'"
            )
        if found is None:
            raise UserError(
                f"line {number} of the {option} file '{path}' is not a kafka-get-offsets.sh line "
                f"(topic:partition:offset): '{line[:60]}'"
            )
        topic, partition, offset = found["topic"], int(found["partition"]), found["offset"]
        if partition > MAX_PARTITION:
            raise UserError(f"line {number} of the {option} file '{path}' has partition {partition}, beyond a Java int")
        if offset and int(offset) > MAX_OFFSET:
            raise UserError(
                f"line {number} of the {option} file '{path}' has offset {offset}, beyond the largest long "
                f"({MAX_OFFSET})"
            )
        if (topic, partition) in seen:
            raise UserError(
                f"the {option} file '{path}' lists {topic}:{partition} twice (lines {seen[topic, partition]} "
                f"and {number}): give the output of one kafka-get-offsets.sh run"
            )
        seen[topic, partition] = number
        topics.append(topic)
        partitions.append(partition)
        offsets.append(int(offset) if offset else None)
    return pa.table(
        {
            "topic": pa.array(topics, pa.string()),
            "partition": pa.array(partitions, pa.int32()),
            column: pa.array(offsets, pa.int64()),
        }
    )


def _join_start_offsets(ends: pa.Table, starts: pa.Table) -> pa.Table:
    """Both files' partitions: one missing from either file has a null there (a topic created or
    deleted between the two runs of kafka-get-offsets.sh)."""
    joined = ends.join(starts, ["topic", "partition"], join_type="full outer", use_threads=False)
    return joined.select(list(COLUMNS)).sort_by([("topic", "ascending"), ("partition", "ascending")])


def _checked(path: str, table: pa.Table) -> pa.Table:
    """One row per topic partition, no negative offset or partition: Kafka has none, and a lag from one
    would be nonsense. The same for every form of the file."""
    if table.num_rows == 0:
        return table.cast(SCHEMA)
    for name in COLUMNS[1:]:
        lowest = pc.min(table.column(name)).as_py()
        if lowest is not None and lowest < 0:
            row = pc.index(pc.less(table.column(name), 0), True).as_py()
            topic, partition = table.column("topic")[row].as_py(), table.column("partition")[row].as_py()
            raise UserError(
                f"the end-offsets file '{path}' has {name} {lowest} for {topic}:{partition}; offsets and "
                "partitions are never negative"
            )
    counted = table.group_by(["topic", "partition"], use_threads=False).aggregate([([], "count_all")])
    twice = counted.filter(pc.greater(counted.column("count_all"), 1))
    if twice.num_rows:
        first = twice.slice(0, 1).to_pylist()[0]
        raise UserError(
            f"the end-offsets file '{path}' has {twice.num_rows} topic partitions more than once, e.g. "
            f"{first['topic']}:{first['partition']}; give one row per topic partition"
        )
    return table.cast(SCHEMA)


def _read_csv(path: str, data: bytes) -> pa.Table:
    header = data[: 1 << 16].split(b"\n", 1)[0].decode("utf-8", errors="replace").strip().split(",")
    _check_columns(path, [c.strip().strip('"') for c in header])
    types = {
        "topic": pa.string(),
        "partition": pa.string(),
        "log_start_offset": pa.string(),
        "log_end_offset": pa.string(),
    }
    try:
        table = pacsv.read_csv(
            pa.BufferReader(data), convert_options=pacsv.ConvertOptions(column_types=types, strings_can_be_null=True)
        )
    except pa.ArrowInvalid as err:
        raise UserError(f"the end-offsets file '{path}' is not a readable CSV: {str(err).splitlines()[0]}") from err
    columns = {"topic": table.column("topic")}
    for name in COLUMNS[1:]:
        values = []
        for line, value in enumerate(table.column(name).to_pylist(), start=2):
            text = (value or "").strip()
            if text and not text.lstrip("-").isdigit():
                raise UserError(
                    f"the end-offsets file '{path}' has '{text[:40]}' for {name} on line {line}, not a whole number"
                )
            if text and abs(int(text)) > MAX_OFFSET:
                raise UserError(
                    f"the end-offsets file '{path}' has {text[:40]} for {name} on line {line}, beyond a Java long"
                )
            values.append(int(text) if text else None)
        columns[name] = pa.array(values, pa.int64())
    return pa.table(columns)


def _read_parquet(path: str, data: bytes) -> pa.Table:
    try:
        schema = pq.read_schema(pa.BufferReader(data))
    except Exception as err:
        raise UserError(f"the end-offsets file '{path}' is not readable Parquet ({err})") from err
    _check_columns(path, schema.names)
    for name in COLUMNS[1:]:
        if not pa.types.is_integer(schema.field(name).type):
            raise UserError(
                f"column {name} of the end-offsets file '{path}' is {schema.field(name).type}, not an integer"
            )
    return pq.read_table(pa.BufferReader(data), columns=list(COLUMNS))


def _check_columns(path: str, columns: list[str]) -> None:
    missing = [c for c in COLUMNS if c not in columns]
    if missing:
        raise UserError(f"the end-offsets file '{path}' has no column {', '.join(missing)}")
