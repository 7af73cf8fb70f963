"""Everything a run needs, checked before the Spark session starts and before anything is written.

Starting Spark and decoding a dump takes tens of seconds; a typo in an option or a wrong output folder
must not cost that, nor leave half a run behind. Each check raises a UserError of one sentence, which
the CLI prints and exits 2 on. The checks read only file names, headers and Parquet footers.
"""

from __future__ import annotations

import csv
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from offset_audit.config import Settings
from offset_audit.errors import InputNotFound, UserError
from offset_audit.sinks.delta import check_table_dir, is_local

END_OFFSET_COLUMNS = ("topic", "partition", "log_start_offset", "log_end_offset")


def check_output(output: str, tables: Iterable[str], settings: Settings) -> None:
    """`output` can hold the tables this run writes (paths relative to it): it is a folder or can
    become one, it is writable, and no table's place holds anything but that Delta table."""
    if not is_local(output):
        extensions = settings.spark.get("spark.sql.extensions", "")
        if "DeltaSparkSessionExtension" not in extensions:
            raise UserError(
                f"--output {output} is not a local path: without Delta's Spark jars, tables are written with "
                "delta-rs to local or mounted folders (run with delta-spark for object stores)"
            )
        return
    root = Path(output.removeprefix("file://"))
    if root.exists() and not root.is_dir():
        raise UserError(f"--output {output} is a file, not a folder")
    existing = root
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UserError(f"--output {output} cannot be created: {existing} is a file")
    try:  # os.access answers yes to root on a read-only or special file system; a real try does not
        os.rmdir(tempfile.mkdtemp(prefix=".offset-audit-probe-", dir=existing))
    except OSError as err:
        raise UserError(f"--output {output} cannot be written: {existing}: {err.strerror}") from err
    for table in tables:
        check_table_dir(root / table)


def check_retention_minutes(minutes: int, option: str = "--retention-minutes") -> None:
    """offsets.retention.minutes is a Java int on the broker: 1 to 2,147,483,647."""
    if not 1 <= minutes <= 2**31 - 1:
        raise UserError(
            f"{option} takes 1 to 2147483647 minutes (the broker's offsets.retention.minutes is an int), not {minutes}"
        )


def check_as_of(spec: str, input_format: str) -> None:
    """--as-of parses, and `latest` has record timestamps to come from."""
    from offset_audit.audit import resolve_as_of

    if spec == "latest":
        if input_format == "console":
            raise UserError(
                "--as-of latest needs record timestamps, which console-consumer dumps do not have; "
                "give --as-of now or a timestamp"
            )
        return
    resolve_as_of(spec, None)


def check_end_offsets(path: str) -> None:
    """--end-offsets exists, has the columns (CSV header or Parquet schema), and holds whole numbers
    where numbers go (a CSV is read here whole: one line per topic partition)."""
    if not os.path.isfile(path):
        raise InputNotFound(f"the end-offsets file '{path}' does not exist")
    if path.endswith(".csv"):
        with open(path, newline="", encoding="utf-8", errors="replace") as handle:
            rows = csv.reader(handle)
            columns = next(rows, [])
            _check_end_offset_columns(path, columns)
            numbers = [columns.index(c) for c in END_OFFSET_COLUMNS[1:]]
            for line, row in enumerate(rows, start=2):
                for index in numbers:
                    value = row[index].strip() if index < len(row) else ""
                    if value and not value.lstrip("-").isdigit():
                        raise UserError(
                            f"the end-offsets file '{path}' has '{value[:40]}' for {columns[index]} on line {line}, "
                            "not a whole number"
                        )
        return
    try:
        schema = pq.read_schema(path)
    except Exception as err:
        raise UserError(f"the end-offsets file '{path}' is neither CSV (.csv) nor readable Parquet ({err})") from err
    _check_end_offset_columns(path, schema.names)
    for name in END_OFFSET_COLUMNS[1:]:
        if not pa.types.is_integer(schema.field(name).type):
            raise UserError(
                f"column {name} of the end-offsets file '{path}' is {schema.field(name).type}, not an integer"
            )


def _check_end_offset_columns(path: str, columns: list[str]) -> None:
    missing = [c for c in END_OFFSET_COLUMNS if c not in columns]
    if missing:
        raise UserError(f"the end-offsets file '{path}' has no column {', '.join(missing)}")


def check_file(path: str, option: str) -> None:
    if not os.path.isfile(path):
        raise InputNotFound(f"{option} '{path}' does not exist")


def check_script_path(path: str) -> None:
    """--script can be written: not a folder, and its folder exists and is writable."""
    target = Path(path)
    if target.is_dir():
        raise UserError(f"--script {path} is a folder; give a file name")
    folder = target.parent
    if not folder.is_dir():
        raise UserError(f"--script {path} cannot be written: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UserError(f"--script {path} cannot be written: no write permission")


def check_inputs(inputs: list[str], settings: Settings, share: bool = False) -> Settings:
    """The inputs exist and are what the run expects; returns the settings with the input format worked
    out (`auto` replaced), so the run does not work it out again."""
    from offset_audit.sources import KIP932_JSON, local_snapshot, log_files, resolved
    from offset_audit.sources.snapshot import _expand, check_snapshot_schema, local_data_files, read_footer

    if settings.input_format == "kafka":
        if not settings.bootstrap_servers:
            raise UserError("--input-format kafka needs --bootstrap-servers HOST:PORT[,HOST:PORT]")
        return settings
    settings = resolved(settings, inputs, share)
    kind = settings.input_format
    if kind in log_files.LOG_FORMATS or kind == KIP932_JSON:
        paths = _expand(inputs)
        remote = [p for p in paths if not is_local(p)]
        if remote:
            raise UserError(f"{kind} inputs are read from local or mounted files, not '{remote[0]}'")
        log_files.log_files(paths, kind, settings.partition)
    elif local_snapshot(inputs):
        for file in local_data_files(inputs, kind):
            check_snapshot_schema(read_footer(file).schema.to_arrow_schema(), file)
    return settings
