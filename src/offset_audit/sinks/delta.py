"""Writes a DataFrame as a Delta table, by one of two routes behind one function.

- A session with Delta configured (a cluster started with delta-spark) writes `format("delta")`.
- Otherwise (the embedded default: Delta's Spark jars come from Maven Central, which is not always
  reachable) Spark writes the Parquet data files in parallel straight into the table folder, and
  delta-rs commits them to the Delta log in one transaction. The data never passes through the driver;
  the driver only reads the new files' footers for their row counts.

Either way a commit is atomic: readers see the previous version of the table until it lands.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_schema

from offset_audit.errors import UserError
from offset_audit.session import has_delta

# Table properties of the tables delta-rs creates. Every run adds a commit to each table it writes, and
# without a checkpoint each open replays every JSON commit of the log: opening a table took 15-20 ms
# with a checkpoint and 55-70 ms at 95 commits without one, an audit opens 13, and a scheduled audit
# would slow down run by run. delta-rs checkpoints every 100 commits unless told; Delta on Spark's
# default, 10, is used here too.
TABLE_PROPERTIES = {"delta.checkpointInterval": "10"}
# Every commit a run makes carries its run id in the commit info (delta-rs custom metadata; delta-spark's
# userMetadata), so the `runs` row can name the version of each table the run committed.
RUN_ID_KEY = "offset_audit.run_id"


@dataclass(frozen=True)
class WriteResult:
    table: str
    path: str
    rows: int
    files: int
    route: str  # "delta-rs" or "delta-spark"
    data_files: tuple[str, ...] = ()  # delta-rs route: the files this write added
    version: int | None = None  # the table version this write committed, when a run id was given


def is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def _local(path: str) -> Path:
    return Path(path[len("file://") :] if path.startswith("file://") else path)


def local_folder(path: str) -> Path:
    """The absolute local folder for a delta-rs write; object stores need delta-spark."""
    if not is_local(path):
        raise UserError(
            f"'{path}' is not a local path: without Delta's Spark jars, tables are written with delta-rs to local "
            "or mounted folders; for object stores run in a session started with delta-spark"
        )
    return _local(path).resolve()


def check_table_dir(table_dir: Path) -> None:
    """Refuse a table's place when something else is there: a file, or a folder that holds files but
    is no Delta table (someone's data, or a table of another format). Writing into it would take it
    over silently. An empty folder, a missing one, or a Delta table (a run before this one) is fine."""
    if table_dir.is_symlink() or table_dir.exists():
        if not table_dir.is_dir():
            raise UserError(f"{table_dir} is a file where this run writes a table; move it or give another --output")
        if not (table_dir / "_delta_log").is_dir() and any(table_dir.iterdir()):
            raise UserError(
                f"{table_dir} holds files but is not a Delta table; this run would take it over: empty it, move "
                "it, or give another --output"
            )


def write_delta(
    df: DataFrame,
    path: str,
    *,
    mode: str = "overwrite",
    partition_by: list[str] | None = None,
    replace_where: dict[str, str] | None = None,
    force_route: str | None = None,
    run_id: str | None = None,
) -> WriteResult:
    """Write `df` to the Delta table at `path`.

    mode "overwrite" replaces the table's rows (only those matching `replace_where`, a column -> value
    map, when given), "append" adds to them. With `run_id` the commit carries it, and the result says
    which version it made.
    """
    route = force_route or ("delta-spark" if has_delta(df.sparkSession) else "delta-rs")
    if route == "delta-spark":
        return _write_with_spark(df, path, mode, partition_by, replace_where, run_id)
    return _write_with_delta_rs(df, path, mode, partition_by, replace_where, run_id)


def committed_version(path: str, run_id: str | None) -> int | None:
    """The version of the table at `path` that carries `run_id` in its commit info: the commit this run
    made, even when other writers committed since (two audits into one folder at once)."""
    if run_id is None:
        return None
    from deltalake import DeltaTable

    for commit in DeltaTable(path).history(limit=100):
        if commit.get(RUN_ID_KEY) == run_id or commit.get("userMetadata") == run_id:
            return int(commit["version"])
    return None


def commit_properties(run_id: str | None):
    from deltalake import CommitProperties

    return CommitProperties(custom_metadata={RUN_ID_KEY: run_id}) if run_id else None


def _write_with_spark(
    df: DataFrame,
    path: str,
    mode: str,
    partition_by: list[str] | None,
    replace_where: dict[str, str] | None,
    run_id: str | None,
) -> WriteResult:
    writer = df.write.format("delta").mode(mode)
    if run_id:
        writer = writer.option("userMetadata", run_id)
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    if replace_where:
        condition = " AND ".join(f"`{k}` = '{v.replace(chr(39), chr(39) * 2)}'" for k, v in replace_where.items())
        writer = writer.option("replaceWhere", condition)
    elif mode == "overwrite":
        writer = writer.option("overwriteSchema", "true")
    else:
        writer = writer.option("mergeSchema", "true")
    writer.save(path)
    rows = df.sparkSession.read.format("delta").load(path).count()
    version = committed_version(path, run_id) if is_local(path) else None
    return WriteResult(Path(path).name, path, rows, -1, "delta-spark", version=version)


@dataclass(frozen=True)
class DataFile:
    """A Parquet file already written inside a table folder, waiting to be committed."""

    path: Path
    rows: int
    partition_values: dict[str, str | None]


def new_run_dir(table_dir: Path) -> Path:
    """A fresh folder inside the table for one write's files; Delta tracks files, not folders."""
    return table_dir / f"part-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"


def commit_files(
    table_dir: Path,
    files: list[DataFile],
    arrow_schema,
    mode: str = "overwrite",
    partition_by: list[str] | None = None,
    replace_where: dict[str, str] | None = None,
    run_id: str | None = None,
) -> int | None:
    """Commit files written under `table_dir` to its Delta log in one transaction (delta-rs); the
    version made, when `run_id` is given.

    "overwrite" removes the table's current files (those matching `replace_where` only, when given) in
    the same commit, so readers switch from the old rows to the new ones atomically.
    """
    from deltalake import DeltaTable, Schema
    from deltalake.transaction import AddAction, create_table_with_add_actions

    actions = [
        AddAction(
            path=f.path.relative_to(table_dir).as_posix(),
            size=f.path.stat().st_size,
            partition_values=f.partition_values,
            modification_time=int(f.path.stat().st_mtime * 1000),
            data_change=True,
            stats=json.dumps({"numRecords": f.rows}),
        )
        for f in files
    ]
    partition_filters = [(k, "=", v) for k, v in (replace_where or {}).items()] or None
    if DeltaTable.is_deltatable(str(table_dir)):
        DeltaTable(str(table_dir)).create_write_transaction(
            actions,
            mode=mode,
            schema=arrow_schema,
            partition_by=partition_by,
            partition_filters=partition_filters,
            commit_properties=commit_properties(run_id),
        )
    else:
        create_table_with_add_actions(
            str(table_dir),
            Schema.from_arrow(arrow_schema),
            actions,
            mode="overwrite",
            partition_by=partition_by,
            configuration=TABLE_PROPERTIES,
            commit_properties=commit_properties(run_id),
        )
    return committed_version(str(table_dir), run_id)


def _write_with_delta_rs(
    df: DataFrame,
    path: str,
    mode: str,
    partition_by: list[str] | None,
    replace_where: dict[str, str] | None,
    run_id: str | None,
) -> WriteResult:
    table_dir = local_folder(path)
    check_table_dir(table_dir)
    table_dir.mkdir(parents=True, exist_ok=True)
    run_dir = new_run_dir(table_dir)
    writer = df.write.mode("error")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.parquet(str(run_dir))
    _remove_spark_markers(run_dir)
    files = []
    for file in sorted(run_dir.rglob("*.parquet")):
        partition_values = {}
        for part in file.parent.relative_to(run_dir).parts:
            name, _, value = part.partition("=")
            partition_values[name] = None if value == "__HIVE_DEFAULT_PARTITION__" else unquote(value)
        files.append(DataFile(file, pq.read_metadata(file).num_rows, partition_values))
    schema = to_arrow_schema(df.schema, timezone="UTC")
    version = commit_files(table_dir, files, schema, mode, partition_by, replace_where, run_id)
    rows = sum(f.rows for f in files)
    return WriteResult(
        table_dir.name, str(table_dir), rows, len(files), "delta-rs", tuple(str(f.path) for f in files), version
    )


def _remove_spark_markers(run_dir: Path) -> None:
    """Spark leaves _SUCCESS and Hadoop .crc files beside the data; Delta never reads them."""
    for marker in list(run_dir.rglob("_SUCCESS")) + list(run_dir.rglob(".*.crc")):
        os.remove(marker)
