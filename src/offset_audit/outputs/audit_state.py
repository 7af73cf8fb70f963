"""An incremental audit's state, kept in Delta tables under the audit folder (docs/incremental.md):

    DIR/state/records     the records a full read would still replay (schemas/tables/state_records.json),
                          partitioned by source_partition, replaced whole by each run that merges
    DIR/state/positions   one row per partition: where the next run reads from, and which version of
                          state/records goes with it (schemas/tables/state_positions.json)
    DIR/state/log         every record the runs read, appended by each run that merges, for history
                          --audit (schemas/tables/state_log.json), partitioned by log_generation
    DIR/state/files       a Kafka-source snapshot's data files read so far (schemas/tables/state_files.json),
                          replaced whole with state/records, its version named by the positions too

A run commits state/records (and state/files) first, then appends to state/log, then commits state/positions naming the
records version it made. A run killed before the positions commit leaves positions that still name the
records version before, so the next run reads the state the run before left, and reads the new records
again (a record it appends to state/log again is read once: `outputs.kept_log`). The positions commit is
made against the version the run read at its start: when another run merged meanwhile, Delta's conflict
check refuses it (`StateMergedMeanwhile`), so two overlapping runs never both merge. On a local folder a lock file also
makes a second run refuse at its start (`state_lock`).

Written with delta-rs: the state is the tool's own bookkeeping, read back only by it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import IO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.pandas.types import to_arrow_schema

from offset_audit.decoding.kept_decoded import KEPT, are_kept, kept_of, with_kept
from offset_audit.errors import UserError
from offset_audit.inputs.last_read import BatchHeader, LastRead
from offset_audit.inputs.resumed import (
    CARRY_SCHEMA,
    KEPT_SCHEMA,
    LOG_GENERATION,
    LOG_SCHEMA,
    STATE_RECORDS_SCHEMA,
    LogFloors,
)
from offset_audit.inputs.snapshot_files import SeenFile, SeenFiles
from offset_audit.inputs.transactions import PENDING
from offset_audit.layouts.tables import table_schema
from offset_audit.outputs.delta import TABLE_PROPERTIES, DataFile, commit_files, commit_properties, new_run_dir
from offset_audit.storage import LOCAL, Storage, is_remote, join

STATE = "state"
RECORDS = f"{STATE}/records"
POSITIONS = f"{STATE}/positions"
LOG = f"{STATE}/log"
FILES = f"{STATE}/files"
# Raised when the state's layout changes: a run refuses a state of a newer layout and reads one of an
# older layout again from the start. 2: positions say what identifies the last record read (last_batch_*,
# last_record_digest), which a state of layout 1 cannot be checked by. 3: records keep group records
# decoded (`decoding.kept_decoded`); raised again whenever group records decode otherwise.
STATE_FORMAT = 3
LOCK_FILE = ".lock"
STATE_TABLES = (RECORDS, POSITIONS, LOG, FILES)


def positions_schema() -> pa.Schema:
    return to_arrow_schema(table_schema("state_positions").struct(), timezone="UTC")


def files_schema() -> pa.Schema:
    return to_arrow_schema(table_schema("state_files").struct())


def log_schema() -> pa.Schema:
    return to_arrow_schema(table_schema("state_log").struct())


@dataclass(frozen=True)
class Position:
    """One partition's row of state/positions."""

    partition: int
    next_offset: int
    log_start_offset: int | None = None
    topic_id: str | None = None
    cluster_id: str | None = None
    input_format: str | None = None
    newest_record_ms: int | None = None
    # What identifies the last record read (offset next_offset - 1), for the next run to find again.
    last_read: LastRead | None = None


@dataclass(frozen=True)
class StoredState:
    """The state a run starts from: its positions, and the records version they name."""

    positions: dict[int, Position]
    positions_version: int
    records_version: int
    state_format: int
    merged_at: datetime
    run_id: str
    # The Parquet files of each partition's records at records_version, and their row counts.
    record_files: dict[int, tuple[str, ...]]
    records: int
    # A Kafka-source snapshot's data files read so far (None: the input keeps no list, or the state is
    # of a run before such lists were kept).
    seen_files: SeenFiles | None = None

    @property
    def newest_record_ms(self) -> int | None:
        stamps = [p.newest_record_ms for p in self.positions.values() if p.newest_record_ms is not None]
        return max(stamps) if stamps else None

    @property
    def cluster_id(self) -> str | None:
        ids = {p.cluster_id for p in self.positions.values() if p.cluster_id}
        return ids.pop() if len(ids) == 1 else None

    @property
    def input_format(self) -> str | None:
        formats = {p.input_format for p in self.positions.values() if p.input_format}
        return formats.pop() if len(formats) == 1 else None


def read_state(output: str, storage: Storage = LOCAL) -> StoredState | None:
    """The state under `output`, or None when no run has merged one yet."""
    from deltalake import DeltaTable

    options = storage.delta_options
    path = join(output, POSITIONS)
    if not DeltaTable.is_deltatable(path, storage_options=options):
        return None
    table = DeltaTable(path, storage_options=options)
    rows = table.to_pyarrow_table().to_pylist()
    if not rows:
        return None
    first = rows[0]
    positions = {
        r["source_partition"]: Position(
            r["source_partition"],
            r["next_offset"],
            r["log_start_offset"],
            r["topic_id"],
            r["cluster_id"],
            r["input_format"],
            r["newest_record_ms"],
            _last_read(r),
        )
        for r in rows
    }
    state_format = max(r["state_format"] for r in rows)
    record_files: dict[int, tuple[str, ...]] = {}
    records = 0
    if state_format == STATE_FORMAT:
        records_table = DeltaTable(join(output, RECORDS), version=first["records_version"], storage_options=options)
        for action in pa.table(records_table.get_add_actions(flatten=True)).to_pylist():
            partition = int(action["partition.source_partition"])
            record_files[partition] = (*record_files.get(partition, ()), join(output, RECORDS, action["path"]))
            records += int(action.get("num_records") or 0)
    seen = None
    if state_format == STATE_FORMAT and first.get("files_version") is not None:
        seen = _read_files(join(output, FILES), first["files_version"], storage)
    merged_at = first["merged_at"]
    if merged_at is not None and merged_at.tzinfo is None:
        merged_at = merged_at.replace(tzinfo=UTC)
    return StoredState(
        positions,
        table.version(),
        first["records_version"],
        state_format,
        merged_at,
        first["run_id"],
        record_files,
        records,
        seen,
    )


def _read_files(path: str, version: int, storage: Storage) -> SeenFiles:
    from deltalake import DeltaTable

    rows = DeltaTable(path, version=version, storage_options=storage.delta_options).to_pyarrow_table().to_pylist()
    versions = {r["table_version"] for r in rows}
    files = tuple(SeenFile(r["path"], r["size_bytes"], r["modified_ms"]) for r in rows)
    return SeenFiles(files, versions.pop() if len(versions) == 1 else None)


def write_files(output: str, seen: SeenFiles, run_id: str, storage: Storage = LOCAL) -> int:
    """Replace state/files with the snapshot's files this run leaves read; the version made, for
    `write_positions`. Committed before the positions, as state/records is."""
    from deltalake import DeltaTable, write_deltalake

    table = pa.table(
        {
            "path": [f.path for f in seen.files],
            "size_bytes": [f.size for f in seen.files],
            "modified_ms": [f.modified_ms for f in seen.files],
            "table_version": [seen.table_version] * len(seen.files),
        },
        schema=files_schema(),
    )
    path = join(output, FILES)
    options = storage.delta_options
    write_deltalake(
        path,
        table,
        mode="overwrite",
        configuration=TABLE_PROPERTIES,
        storage_options=options,
        commit_properties=commit_properties(run_id),
    )
    return DeltaTable(path, storage_options=options).version()


def _last_read(row: dict) -> LastRead | None:
    """A positions row's last record read; None in a state of layout 1, which has no such columns."""
    batch = None
    if row.get("last_batch_crc") is not None:
        batch = BatchHeader(
            row["last_batch_base_offset"],
            row["last_batch_last_offset"],
            row["last_batch_crc"],
            row["last_batch_leader_epoch"],
            row["last_batch_segment"] or "",
            row["last_batch_position"] or 0,
        )
    digest = row.get("last_record_digest")
    return LastRead(batch, digest, row.get("last_record_file")) if batch is not None or digest is not None else None


def _last_read_columns(last: LastRead | None) -> dict:
    batch = last.batch if last is not None else None
    return {
        "last_batch_base_offset": batch.base_offset if batch else None,
        "last_batch_last_offset": batch.last_offset if batch else None,
        "last_batch_crc": batch.crc if batch else None,
        "last_batch_leader_epoch": batch.leader_epoch if batch else None,
        "last_batch_segment": batch.segment if batch else None,
        "last_batch_position": batch.position if batch else None,
        "last_record_digest": last.record_digest if last is not None else None,
        "last_record_file": last.file if last is not None else None,
    }


class StateMergedMeanwhile(Exception):
    """Another run merged into the state after this one read it: this run's state is not merged."""


def write_records(output: str, state: CarriedState, run_id: str, storage: Storage = LOCAL) -> int | None:
    """Replace state/records (the first half of a merge); the version made, for `write_positions` (None
    when the run's commit is not found among the table's newest versions: `committed_version`)."""
    records_dir = join(output, RECORDS)
    files = _write_record_files(records_dir, state, storage)
    return commit_files(
        records_dir, files, STATE_RECORDS_SCHEMA, "overwrite", ["source_partition"], run_id=run_id, storage=storage
    )


def write_positions(
    output: str,
    positions: list[Position],
    records_version: int | None,
    read_version: int | None,
    run_id: str,
    storage: Storage = LOCAL,
    files_version: int | None = None,
) -> int:
    """Replace state/positions, naming `records_version`, committed against `read_version` (the
    positions version this run started from; None when it found no state): the commit that makes the
    merge. Returns the version made; raises StateMergedMeanwhile when another run merged first."""
    from deltalake import DeltaTable, write_deltalake
    from deltalake.exceptions import CommitFailedError

    now = datetime.now(UTC)
    rows = [
        {
            "source_partition": p.partition,
            "next_offset": p.next_offset,
            "log_start_offset": p.log_start_offset,
            "topic_id": p.topic_id,
            "cluster_id": p.cluster_id,
            "input_format": p.input_format,
            "newest_record_ms": p.newest_record_ms,
            **_last_read_columns(p.last_read),
            "records_version": records_version,
            "files_version": files_version,
            "state_format": STATE_FORMAT,
            "run_id": run_id,
            "merged_at": now,
        }
        for p in sorted(positions, key=lambda p: p.partition)
    ]
    table = pa.Table.from_pylist(rows, schema=positions_schema())
    path = join(output, POSITIONS)
    options = storage.delta_options
    try:
        if read_version is None:
            if DeltaTable.is_deltatable(path, storage_options=options):
                raise StateMergedMeanwhile
            write_deltalake(path, table, mode="error", configuration=TABLE_PROPERTIES, storage_options=options)
        else:
            base = DeltaTable(path, version=read_version, storage_options=options)
            # A state of an older layout is read again whole and its positions replaced in this one's.
            write_deltalake(base, table, mode="overwrite", schema_mode="overwrite")
    except CommitFailedError as err:
        raise StateMergedMeanwhile from err
    except Exception as err:  # delta-rs: "table already exists" for mode error
        if "exist" in str(err).lower():
            raise StateMergedMeanwhile from err
        raise
    return DeltaTable(path, storage_options=options).version()


def _write_record_files(records_dir: str, state: CarriedState, storage: Storage) -> list[DataFile]:
    """Per partition, in offset order, under a new folder of the table: a Parquet file of the records
    kept decoded, with every column, and one of the others, without the kept columns (read as null)."""
    run_dir = new_run_dir(records_dir)
    records = state.records
    if not records.num_rows:
        return []
    records = records.sort_by([("source_partition", "ascending"), ("source_offset", "ascending")])
    is_kept = are_kept(state.kept, records)
    files = []
    for rows, schema in (
        (records.filter(pa.array(~is_kept)), CARRY_SCHEMA),
        (with_kept(records.filter(pa.array(is_kept)), state.kept, STATE_RECORDS_SCHEMA), STATE_RECORDS_SCHEMA),
    ):
        data = schema.remove(schema.get_field_index("source_partition"))
        partitions = rows.column("source_partition").to_numpy()
        cuts = np.flatnonzero(np.diff(partitions)) + 1
        for start, end in zip([0, *cuts.tolist()], [*cuts.tolist(), len(partitions)], strict=True):
            if start == end:
                continue
            partition = int(partitions[start])
            path = join(run_dir, f"source_partition={partition}", f"part-{uuid.uuid4().hex[:12]}.parquet")
            with storage.open_output_stream(path) as sink:
                pq.write_table(rows.slice(start, end - start).select(data.names).cast(data), sink, compression="snappy")
                size = sink.tell()
            files.append(DataFile(path, end - start, size, {"source_partition": str(partition)}))
    return files


@contextmanager
def state_lock(output: str) -> Iterator[None]:
    """Held for a whole incremental run on a local folder: a second run refuses at once, in one
    sentence, instead of doing all its work only to find its merge refused. (Object stores have no
    lock here: there the positions commit's conflict check alone keeps overlapping runs apart.)"""
    if is_remote(output):
        yield
        return
    folder = join(output, STATE)
    os.makedirs(folder, exist_ok=True)
    path = join(folder, LOCK_FILE)
    handle = open(path, "a+")  # noqa: SIM115 - held for the block, closed below
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            if err.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            holder = _holder(handle)
            raise UserError(
                f"another incremental audit ({holder}) is merging into the state of '{output}'; run again when "
                "it has finished"
            ) from err
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}, since {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC")
        handle.flush()
        yield
    finally:
        handle.close()


def _holder(handle: IO[str]) -> str:
    """Who holds the lock, as it wrote itself down: it writes just after taking the lock, so a run
    refused in that instant waits a moment for the line rather than naming no one."""
    for _ in range(50):
        handle.seek(0)
        holder = handle.read().strip()
        if holder:
            return holder
        time.sleep(0.02)
    return "another process"


def check_unlocked(output: str) -> None:
    """Before Spark starts: refuse at once when another run holds the state's lock."""
    with state_lock(output):
        pass


@dataclass(frozen=True)
class CarriedState:
    """What a merge writes to state/records: the records, and the rows of those kept decoded."""

    records: pa.Table
    kept: pa.Table


def compacted_state(carry_files: list[str], storage: Storage = LOCAL) -> CarriedState:
    """The next state from the files of every task's carried rows (`outputs.fast_write`): the last record
    of each key in log order, less tombstones (a tombstone that is its key's last record hides nothing
    left in the state), and every pending transactional record; with the kept rows of those records."""
    from offset_audit.decoding.compaction import RAW_KEY, last_per_key

    kept_parts = [pq.read_table(storage.parquet_source(f)) for f in carry_files if f.endswith(KEPT)]
    kept = pa.concat_tables(kept_parts).cast(KEPT_SCHEMA) if kept_parts else KEPT_SCHEMA.empty_table()
    parts = [pq.read_table(storage.parquet_source(f)) for f in carry_files if not f.endswith(KEPT)]
    carried = pa.concat_tables(parts) if parts else None
    if carried is None or not carried.num_rows:
        return CarriedState(CARRY_SCHEMA.empty_table(), kept.slice(0, 0))
    pending = pc.fill_null(pc.equal(carried.column("transaction"), PENDING), False)
    settled = last_per_key(carried.filter(pc.invert(pending)), (RAW_KEY,))
    settled = settled.filter(pc.is_valid(settled.column("value")))
    records = pa.concat_tables([settled, carried.filter(pending)]).select(CARRY_SCHEMA.names).cast(CARRY_SCHEMA)
    return CarriedState(records, kept_of(kept, records))


@dataclass(frozen=True)
class StoredLog:
    """state/log as the runs before left it: its version, its newest generation, and each generation's
    files and records (the files of runs killed before they merged included: history --audit reads each
    record once)."""

    version: int | None = None
    generation: int = 0
    files: dict[int, tuple[str, ...]] = field(default_factory=dict)
    records: dict[int, int] = field(default_factory=dict)


def read_log(output: str, storage: Storage = LOCAL) -> StoredLog:
    from deltalake import DeltaTable

    path = join(output, LOG)
    options = storage.delta_options
    if not DeltaTable.is_deltatable(path, storage_options=options):
        return StoredLog()
    table = DeltaTable(path, storage_options=options)
    files: dict[int, tuple[str, ...]] = {}
    records: dict[int, int] = {}
    for action in pa.table(table.get_add_actions(flatten=True)).to_pylist():
        generation = int(action[f"partition.{LOG_GENERATION}"])
        files[generation] = (*files.get(generation, ()), join(path, action["path"]))
        records[generation] = records.get(generation, 0) + int(action.get("num_records") or 0)
    return StoredLog(table.version(), max(files, default=0), files, records)


def log_floors(stored: StoredState | None, storage: Storage = LOCAL) -> LogFloors:
    """What a run appends to a generation of state/log it continues: from the stored positions on (the
    records before them were appended by the runs that read them), and the records the state holds as
    pending, once settled. Without a state it can read, everything read (history --audit reads a record
    appended twice once)."""
    if stored is None or stored.state_format != STATE_FORMAT:
        return LogFloors()
    pending = pending_records(stored, storage)
    held = zip(pending.column("source_partition").to_pylist(), pending.column("source_offset").to_pylist(), strict=True)
    return LogFloors({p: position.next_offset for p, position in stored.positions.items()}, frozenset(held))


def pending_records(stored: StoredState, storage: Storage) -> pa.Table:
    """The state's records still waiting for a marker, in state/log's columns."""
    parts = [LOG_SCHEMA.empty_table()]
    for partition, files in sorted(stored.record_files.items()):
        for f in files:
            table = pq.read_table(storage.parquet_source(f))
            table = table.filter(pc.fill_null(pc.equal(table.column("transaction"), PENDING), False))
            column = pa.array(np.full(table.num_rows, partition, np.int32))
            parts.append(table.append_column("source_partition", column).select(LOG_SCHEMA.names).cast(LOG_SCHEMA))
    return pa.concat_tables(parts).combine_chunks()  # one chunk: Spark's createDataFrame reads it by chunk


def closing_files(output: str, stored: StoredState, generation: int, storage: Storage = LOCAL) -> list[DataFile]:
    """The records a generation ends with that state/log does not hold: the state's pending ones. The
    topic that would have settled them is gone; a history of that log shows them pending, as a full
    read of it did."""
    table = pending_records(stored, storage)
    if not table.num_rows:
        return []
    path = join(log_dir(output, generation), f"part-{uuid.uuid4().hex[:12]}.parquet")
    with storage.open_output_stream(path) as sink:
        pq.write_table(table, sink, compression="snappy")
        size = sink.tell()
    return [DataFile(path, table.num_rows, size, {LOG_GENERATION: str(generation)})]


def log_dir(output: str, generation: int) -> str:
    """Where a run's tasks write their state/log files: a fresh folder in the generation's partition."""
    return new_run_dir(join(output, LOG, f"{LOG_GENERATION}={generation}"))


def append_log(
    output: str, files: list[DataFile], generation: int, run_id: str, storage: Storage = LOCAL
) -> int | None:
    """Append a run's state/log files (one commit), into `generation` where a file names none; the
    version made (None as `write_records` says). Committed before the positions: a run killed between the
    two leaves records the next run appends again, which history --audit reads once."""
    marked = [
        f if f.partition_values else replace(f, partition_values={LOG_GENERATION: str(generation)}) for f in files
    ]
    return commit_files(
        join(output, LOG), marked, log_schema(), "append", [LOG_GENERATION], run_id=run_id, storage=storage
    )
