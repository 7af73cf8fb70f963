"""--end-offsets: the log start and end offset of each topic partition, for lag.

The file is small (a line per partition), so the driver reads it whole: checked before Spark starts,
and handed to Spark as rows, so executors never need to reach the file (a path on the driver's disk
works on a cluster too). CSV with a header, or Parquet; local, or s3:// through the run's Storage.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

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


def load_end_offsets(path: str, storage: Storage = LOCAL) -> pa.Table:
    """The file's four columns, typed; a user error names the file and what is wrong with it."""
    try:
        is_file = storage.exists(path) and not storage.is_dir(path)
    except OSError as err:
        raise UserError(f"the end-offsets file '{path}' cannot be reached: {str(err).splitlines()[0]}") from err
    if not is_file:
        raise InputNotFound(f"the end-offsets file '{path}' does not exist")
    with storage.open_input_file(path) as handle:
        table = _read_csv(path, handle) if path.endswith(".csv") else _read_parquet(path, handle)
    try:
        return table.select(list(COLUMNS)).cast(SCHEMA)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise UserError(f"the end-offsets file '{path}' has values out of range: {str(err).splitlines()[0]}") from err


def read_end_offsets(spark: SparkSession, path: str, storage: Storage = LOCAL) -> DataFrame:
    return spark.createDataFrame(load_end_offsets(path, storage))


def _read_csv(path: str, handle) -> pa.Table:
    header = handle.read(1 << 16).split(b"\n", 1)[0].decode("utf-8", errors="replace").strip().split(",")
    handle.seek(0)
    _check_columns(path, [c.strip().strip("\"") for c in header])
    types = {
        "topic": pa.string(),
        "partition": pa.string(),
        "log_start_offset": pa.string(),
        "log_end_offset": pa.string(),
    }
    try:
        table = pacsv.read_csv(
            handle, convert_options=pacsv.ConvertOptions(column_types=types, strings_can_be_null=True)
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
            values.append(int(text) if text else None)
        columns[name] = pa.array(values, pa.int64())
    return pa.table(columns)


def _read_parquet(path: str, handle) -> pa.Table:
    try:
        schema = pq.read_schema(handle)
    except Exception as err:
        raise UserError(f"the end-offsets file '{path}' is neither CSV (.csv) nor readable Parquet ({err})") from err
    _check_columns(path, schema.names)
    for name in COLUMNS[1:]:
        if not pa.types.is_integer(schema.field(name).type):
            raise UserError(
                f"column {name} of the end-offsets file '{path}' is {schema.field(name).type}, not an integer"
            )
    handle.seek(0)
    return pq.read_table(handle, columns=list(COLUMNS))


def _check_columns(path: str, columns: list[str]) -> None:
    missing = [c for c in COLUMNS if c not in columns]
    if missing:
        raise UserError(f"the end-offsets file '{path}' has no column {', '.join(missing)}")
