"""Decode and write in one Spark pass: the default route to Delta when the session has no Delta jars.

Each task decodes its Arrow batches with `offset_audit.decoding.decoder.decode_batch` and writes the rows of every
table straight to Parquet files inside the table folders with pyarrow; it returns only the names,
sizes and row counts of its files and its record counts. The driver then commits each table's files
with delta-rs. Compared with turning the decoded rows back into Spark rows and letting Spark write
them, this skips two conversions of every offset commit (see `make bench` in the README).

Only files reported by successful tasks are committed; files of a failed or speculative attempt stay
out of the Delta log.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import BinaryIO, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark import TaskContext
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema

from offset_audit.decoding.compaction import RAW_KEY, LatestPerKey, commit_buckets, compactable, compaction_keys
from offset_audit.decoding.decoder import (
    SKIPPED_SUPERSEDED,
    TABLES,
    DecodedBatch,
    arrow_schema,
    decode_batch,
    for_decode,
    source_notes,
)
from offset_audit.decoding.fast_commits import key_types
from offset_audit.decoding.kept_decoded import KEPT, KeptDecoded, decoded_kept
from offset_audit.decoding.report import CountKey
from offset_audit.inputs.dump import FileUnits
from offset_audit.inputs.last_read import LastRow
from offset_audit.inputs.resumed import (
    KEPT_SCHEMA,
    LOG_SCHEMA,
    LogFloors,
    ResumeFilter,
    carry_table,
    logged_rows,
    pending_rows,
    unlocated,
    unmarked,
)
from offset_audit.layouts.codec import RecordCodec
from offset_audit.layouts.spec import record_layouts
from offset_audit.layouts.tables import parse_struct
from offset_audit.outputs.delta import DELTA_RS, DataFile, WriteResult, check_table_dir, commit_files, new_run_dir
from offset_audit.storage import Storage, join
from offset_audit.timestamps import MAX_MS, MIN_MS, datetime_of

ROW_GROUP_ROWS = 131_072
BUCKET_SUFFIX = "-b"
# The tables the coordinator state is rebuilt from: "latest" as-of is their newest record.
STATE_TABLES = ("offset_commits", "group_metadata", "modern_group_records")
# The tables a group record kept decoded has rows in (`decoding.kept_decoded`).
KEPT_TABLES = ("group_metadata", "group_members", "modern_group_records")

# What each task reports back, one small row each: its files, its record counts, how many raw records
# it read (kind "read"), the newest record timestamp among its decoded records (kind "newest",
# epoch milliseconds in `rows`) and the count of each source note (kind "note", the note in `table_name`);
# for an incremental audit also how far each partition's records reach and its last record read (kind
# "end": where its batch is, and its digest), the digest of each record found at a probe offset (kind
# "probe"), how many carried records it decoded (kind "carried"), its file of records to carry
# (table_name CARRY) and its file of records for state/log (table_name LOG).
TASK_REPORT = parse_struct(
    "struct<kind:string,table_name:string,path:string,rows:bigint,size:bigint,"
    "record_class:string,key_type:smallint,value_version:smallint,layout_era:string,is_tombstone:boolean,"
    "source_partition:int,end_offset:bigint,source_file:string,source_position:bigint,record_digest:string>"
)
CARRY = "_carry"
LOG = "_log"
_REPORT_ARROW = to_arrow_schema(TASK_REPORT)


class _TableFile:
    """One task's Parquet file for one table, written in row groups of ROW_GROUP_ROWS through pyarrow
    (a local file, or an object in an S3-compatible store)."""

    def __init__(self, path: str, schema: pa.Schema, storage: Storage) -> None:
        self.path = path
        self.schema = schema
        self.storage = storage
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
        self.rows = 0
        self.size = 0
        self.sink: BinaryIO | None = None  # a local file, or a pyarrow.fs stream
        self.writer: pq.ParquetWriter | None = None

    def add(self, table: pa.Table) -> None:
        self.pending.append(table)
        self.pending_rows += table.num_rows
        if self.pending_rows >= ROW_GROUP_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self.pending_rows:
            return
        if self.writer is None:
            self.sink = self.storage.open_output_stream(self.path)
            # Dictionary encoding pays off for the repetitive strings (group, topic, metadata), not for
            # offsets and timestamps, which are nearly all distinct.
            strings = [f.name for f in self.schema if pa.types.is_string(f.type)]
            self.writer = pq.ParquetWriter(self.sink, self.schema, compression="snappy", use_dictionary=strings)
        self.writer.write_table(pa.concat_tables(self.pending), row_group_size=ROW_GROUP_ROWS)
        self.rows += self.pending_rows
        self.pending, self.pending_rows = [], 0

    def close(self) -> None:
        self.flush()
        if self.writer is not None:
            self.writer.close()
            assert self.sink is not None  # opened with the writer (flush)
            self.size = self.sink.tell()
            self.sink.close()


class _BucketedFiles:
    """A task's compacted commits as one _TableFile per bucket of group ids (`commit_buckets`), named
    `<prefix>-b<bucket>.parquet`, so that the merge of every task's commits can be split by bucket."""

    def __init__(self, folder: str, prefix: str, schema: pa.Schema, storage: Storage, buckets: int) -> None:
        self.files = [
            _TableFile(join(folder, f"{prefix}{BUCKET_SUFFIX}{b:03d}.parquet"), schema, storage) for b in range(buckets)
        ]

    def add(self, table: pa.Table) -> None:
        which = commit_buckets(table.column("group_id"), len(self.files))
        for bucket in np.unique(which):
            self.files[bucket].add(table if len(self.files) == 1 else table.filter(pa.array(which == bucket)))


def bucket_of(path: str) -> int:
    """The bucket a compacted-commits file holds, from its name (`_BucketedFiles`)."""
    return int(path.rsplit(BUCKET_SUFFIX, 1)[1].split(".", 1)[0])


def _newer(stamp: int | None, newest: int | None) -> int | None:
    return stamp if newest is None or (stamp is not None and stamp > newest) else newest


def _newest_shown(millis: pa.Array | pa.ChunkedArray, newest: int | None) -> int | None:
    """The newest of `millis` that a date can show (as_of is a date; a record timestamp beyond 9999
    cannot be one, so it never becomes "latest")."""
    shown = pc.and_(pc.greater_equal(millis, MIN_MS), pc.less_equal(millis, MAX_MS))
    return _newer(pc.max(pc.if_else(shown, millis, pa.scalar(None, pa.int64()))).as_py(), newest)


def _newest(table: pa.Table, newest: int | None) -> int | None:
    return _newest_shown(table.column("record_timestamp_ms"), newest)


def _newest_state_record(batch: pa.RecordBatch, state: np.ndarray, newest: int | None) -> int | None:
    """The newest timestamp among the raw records marked `state` (their key type is one the state is
    rebuilt from): superseded records are never decoded, so they are judged by their key."""
    if not state.any():
        return newest
    return _newest_shown(batch.column("record_timestamp_ms").filter(pa.array(state)), newest)


def _decode_and_write(
    batches: Iterator[pa.RecordBatch],
    run_dirs: dict[str, str],
    layouts,
    use_fast_path: bool,
    compact: bool,
    storage: Storage,
    buckets: int = 1,
    resume: Resumed | None = None,
) -> list[dict]:
    """One task: decode raw batches, write each table's rows to this task's file for it, report.

    With `compact`, the task first keeps only its last raw record of each key and decodes those at the
    end; the others are counted as skipped, superseded (see `offset_audit.decoding.compaction`); its
    commits go to a file per bucket of group ids (`buckets`). With `resume` (an incremental audit, which
    compacts), the new records below the positions are dropped as read, and what the next run carries
    (the task's last record of each key, and its pending transactional records) goes to a file of its own.
    """
    context = TaskContext.get()
    assert context is not None  # a Spark task's (decode_to_files runs it in one)
    prefix = f"part-{context.partitionId():05d}-{context.attemptNumber()}-{uuid.uuid4().hex[:12]}"
    codec = RecordCodec(layouts)
    files: dict[str, _TableFile | _BucketedFiles] = {
        name: _TableFile(join(run_dirs[name], f"{prefix}.parquet"), arrow_schema(name), storage) for name in TABLES
    }
    if compact:
        commits = "offset_commits"
        files[commits] = _BucketedFiles(run_dirs[commits], prefix, arrow_schema(commits), storage, buckets)
    latest = LatestPerKey((RAW_KEY,)) if compact else None
    carried_rows = KeptDecoded()
    kept_apart = ResumeFilter(resume.floors, resume.probes, resume.reread) if resume is not None else None
    log_file = None
    if resume is not None and resume.log is not None:
        assert resume.log_dir is not None  # given with the log (runs.audit takes both from its state log)
        log_file = _TableFile(join(resume.log_dir, f"{prefix}.parquet"), LOG_SCHEMA, storage)
    pending: list[pa.Table] = []
    state_types = np.array(sorted(layouts), np.int64)
    counts: Counter = Counter()
    notes: Counter = Counter()
    newest: int | None = None
    read = 0

    def write(tables: dict[str, pa.Table]) -> None:
        nonlocal newest
        for name, table in tables.items():
            if table.num_rows:
                if name in STATE_TABLES:
                    newest = _newest(table, newest)
                files[name].add(table)

    def decode(batch: pa.RecordBatch) -> tuple[DecodedBatch, dict[str, pa.Table]]:
        decoded = decode_batch(batch, codec, use_fast_path)
        counts.update(decoded.counts)
        tables = {name: decoded.table(name) for name in TABLES}
        write(tables)
        return decoded, tables

    for batch in batches:
        if kept_apart is not None:
            assert resume is not None  # kept_apart is made from it
            if carried_rows.take(batch):
                continue
            batch = kept_apart.keep(batch)
            # log_file is made only where resume.log is given.
            if log_file is not None and (logged := logged_rows(batch, cast(LogFloors, resume.log))) is not None:
                log_file.add(logged)
            batch = unmarked(batch)
            if (held := pending_rows(batch)) is not None:
                pending.append(held)
        batch = unlocated(batch)
        read += batch.num_rows
        notes.update(source_notes(batch))  # before compaction: superseded records count too
        if latest is not None:
            held = compactable(batch)
            if held.any():
                kept = batch if held.all() else batch.filter(pa.array(held))
                types = key_types(kept.column("key"))
                # The newest record of the state must count the records that will be superseded too.
                newest = _newest_state_record(kept, np.isin(types, state_types), newest)
                keys = compaction_keys(kept.column("key"), types)
                latest.add(pa.Table.from_batches([kept]).append_column(RAW_KEY, keys))
                batch = batch.slice(0, 0) if held.all() else batch.filter(pa.array(~held))
        if batch.num_rows:
            decode(batch)
    last = latest.result() if latest is not None else None
    kept_rows = KEPT_SCHEMA.empty_table()
    if last is not None:
        assert latest is not None  # last is its result
        counts[CountKey(SKIPPED_SUPERSEDED)] += latest.added - last.num_rows
        to_decode, taken = carried_rows.split(last)
        if taken is not None:
            write(taken.tables)
            counts.update(taken.counts)
        classified, decoded_tables = [], []
        for batch in to_decode.drop_columns([RAW_KEY]).to_batches(max_chunksize=ROW_GROUP_ROWS):
            decoded, tables = decode(batch)
            if kept_apart is not None:
                classified += decoded.classified
                decoded_tables.append({name: tables[name] for name in KEPT_TABLES})
        if kept_apart is not None:
            fresh = decoded_kept(classified, _joined(decoded_tables))
            kept_rows = pa.concat_tables([taken.kept, fresh]) if taken is not None else fresh
    report = [{"kind": "read", "rows": read}]
    if kept_apart is not None:
        assert resume is not None  # kept_apart is made from it
        report += _carry(kept_apart, last, kept_rows, pending, resume.carry_dir, prefix, storage)
    if log_file is not None:
        log_file.close()
        if log_file.rows:
            report.append(
                {"kind": "file", "table_name": LOG, "path": log_file.path, "rows": log_file.rows, "size": log_file.size}
            )
    report += [{"kind": "newest", "rows": newest}] if newest is not None else []
    report += [{"kind": "note", "table_name": note, "rows": n} for note, n in notes.items()]
    for name, written in files.items():
        for file in written.files if isinstance(written, _BucketedFiles) else [written]:
            file.close()
            if file.rows:
                report.append(
                    {"kind": "file", "table_name": name, "path": file.path, "rows": file.rows, "size": file.size}
                )
    for (cls, key_type, version, era, tombstone), n in counts.items():
        report.append(
            {
                "kind": "count",
                "record_class": cls,
                "key_type": key_type,
                "value_version": version,
                "layout_era": era,
                "is_tombstone": tombstone,
                "rows": n,
            }
        )
    return report


@dataclass(frozen=True)
class Resumed:
    """An incremental audit's part in the decode tasks: each partition's position, the folder the
    tasks leave their records to carry in, what they append to state/log and where (None: no log
    is kept), the offsets of the records they look for again (`Resume.probes`) and the files read
    again (`Resume.reread`)."""

    floors: dict[int, int]
    carry_dir: str
    log: LogFloors | None = None
    log_dir: str | None = None
    probes: dict[int, int] = field(default_factory=dict)
    reread: frozenset[str] = frozenset()


def _joined(parts: list[dict[str, pa.Table]]) -> dict[str, pa.Table]:
    """Each of KEPT_TABLES' rows over the batches a task decoded."""
    return {
        name: pa.concat_tables([p[name] for p in parts]) if parts else arrow_schema(name).empty_table()
        for name in KEPT_TABLES
    }


def _carry(
    kept_apart: ResumeFilter,
    last: pa.Table | None,
    kept: pa.Table,
    pending: list[pa.Table],
    folder: str,
    prefix: str,
    storage: Storage,
) -> list[dict]:
    """A task's report of how far each partition reached, and its files to carry: its last record of
    each key (with the key they replace each other under) and its pending ones; and in a file of their
    own (named `...KEPT`), the rows of its group records kept decoded (`kept`: `decoding.kept_decoded`)."""
    report: list[dict] = [{"kind": "carried", "rows": kept_apart.carried}]
    for partition, end in sorted(kept_apart.ends.items()):
        last_row = kept_apart.last[partition]
        report.append(
            {
                "kind": "end",
                "source_partition": partition,
                "end_offset": end,
                "source_file": last_row.source_file,
                "source_position": last_row.source_position,
                "record_digest": last_row.record_digest,
            }
        )
    for partition, digests in sorted(kept_apart.probed.items()):
        report += [{"kind": "probe", "source_partition": partition, "record_digest": d} for d in sorted(digests)]
    parts = []
    if last is not None and last.num_rows:
        parts.append(carry_table(last).append_column(RAW_KEY, last.column(RAW_KEY)))
    for table in pending:
        parts.append(table.append_column(RAW_KEY, table.column("key")))
    for name, table in ((f"{prefix}.parquet", pa.concat_tables(parts) if parts else None), (f"{prefix}{KEPT}", kept)):
        if table is not None and table.num_rows:
            file = _TableFile(join(folder, name), table.schema, storage)
            file.add(table)
            file.close()
            report.append(
                {"kind": "file", "table_name": CARRY, "path": file.path, "rows": file.rows, "size": file.size}
            )
    return report


@dataclass
class DecodedFiles:
    """What one decode pass produced: record counts keyed (class, key type, version, era, tombstone),
    the uncommitted files of each table, the newest record timestamp of the state tables, how many
    records carry each source note, and how many raw records the tasks read."""

    counts: Counter
    files: dict[str, list[DataFile]]
    newest_record: datetime | None
    notes: Counter
    records_read: int
    # An incremental audit's: carried records decoded, how far each partition reached, files to carry.
    carried: int = 0
    ends: dict[int, int] = field(default_factory=dict)
    carry_files: list[str] = field(default_factory=list)
    log_files: list[DataFile] = field(default_factory=list)
    # Each partition's last record read, and the digests of the records found at the probe offsets.
    last_rows: dict[int, LastRow] = field(default_factory=dict)
    probed: dict[int, frozenset[str]] = field(default_factory=dict)


def decode_to_files(
    spark: SparkSession,
    source: DataFrame | FileUnits,
    output: str,
    topic: str,
    use_fast_path: bool = True,
    compact_commits_to: str | None = None,
    *,
    storage: Storage,
    commit_buckets: int = 1,
    resume: Resumed | None = None,
) -> DecodedFiles:
    """Decode the raw records into Parquet files inside the decode tables' folders under `output`.

    `source` is either a raw-record DataFrame (live Kafka, object stores: Spark reads, Arrow batches
    travel to the Python workers) or units of local files (snapshot pieces, log dump files) that the
    Python workers read themselves (faster: no JVM-to-Python transfer). The files are not yet
    committed: the caller checks the counts first, then calls `commit_decoded`.

    `compact_commits_to` (a scratch folder) makes every task decode only its last record of each key
    and write its commits there: what the audit's replay needs, not the commit history; a file per
    bucket of group ids of `commit_buckets` (see `offset_audit.outputs.scratch.merge_latest_commits`).
    `resume` (with `compact_commits_to`): an incremental audit's positions and carry folder.
    """
    for name in TABLES:
        check_table_dir(join(output, name), storage)
    run_dirs = {name: new_run_dir(join(output, name)) for name in TABLES}
    compact = compact_commits_to is not None
    if compact:
        run_dirs["offset_commits"] = cast(str, compact_commits_to)  # not None: `compact`
    layouts = record_layouts()

    if isinstance(source, FileUnits):
        read_unit = source.read

        def unit_task(units: Iterator) -> Iterator[dict]:
            batches = (batch for unit in units for batch in read_unit(unit))
            yield from _decode_and_write(
                batches, run_dirs, layouts, use_fast_path, compact, storage, commit_buckets, resume
            )

        # One task per core, balanced by weight (FileUnits.slices); with `compact`, fewer tasks also
        # means fewer copies of each key for the replay to sort through.
        reports = [Row(**r) for r in source.run(spark, unit_task)]
    else:

        def arrow_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            yield pa.RecordBatch.from_pylist(
                _decode_and_write(batches, run_dirs, layouts, use_fast_path, compact, storage, commit_buckets, resume),
                schema=_REPORT_ARROW,
            )

        reports = for_decode(source, topic).mapInArrow(arrow_task, TASK_REPORT).collect()

    counts: Counter = Counter()
    files: dict[str, list[DataFile]] = {name: [] for name in TABLES}
    newest = None
    notes: Counter = Counter()
    read = 0
    ends: dict[int, int]
    carried, ends, carry_files, log_files = 0, {}, [], []
    last_rows: dict[int, LastRow] = {}
    probed: dict[int, frozenset[str]] = {}
    for row in reports:
        if row.kind == "file" and row.table_name == CARRY:
            carry_files.append(row.path)
        elif row.kind == "file" and row.table_name == LOG:
            log_files.append(DataFile(row.path, row.rows, row.size))
        elif row.kind == "carried":
            carried += row.rows
        elif row.kind == "end":
            partition = row.source_partition
            if partition not in last_rows or row.end_offset > ends[partition]:
                last_rows[partition] = LastRow(row.source_file, row.source_position, row.record_digest)
            ends[partition] = max(ends.get(partition, 0), row.end_offset)
        elif row.kind == "probe":
            probed[row.source_partition] = probed.get(row.source_partition, frozenset()) | {row.record_digest}
        elif row.kind == "file":
            files[row.table_name].append(DataFile(row.path, row.rows, row.size))
        elif row.kind == "newest":
            newest = row.rows if newest is None else max(newest, row.rows)
        elif row.kind == "note":
            notes[row.table_name] += row.rows
        elif row.kind == "read":
            read += row.rows
        else:
            counts[CountKey(row.record_class, row.key_type, row.value_version, row.layout_era, row.is_tombstone)] += (
                row.rows
            )
    stamp = datetime_of(newest)
    return DecodedFiles(counts, files, stamp, notes, read, carried, ends, carry_files, log_files, last_rows, probed)


def commit_decoded(
    output: str,
    files: dict[str, list[DataFile]],
    tables: tuple[str, ...] = TABLES,
    run_id: str | None = None,
    *,
    storage: Storage,
) -> dict[str, WriteResult]:
    """Replace each decode table's rows with its new files, one Delta commit per table (each carrying
    `run_id`)."""
    results = {}
    for name in tables:
        table_dir = join(output, name)
        version = commit_files(table_dir, files[name], arrow_schema(name), run_id=run_id, storage=storage)
        rows = sum(f.rows for f in files[name])
        results[name] = WriteResult(name, table_dir, rows, len(files[name]), DELTA_RS, version=version)
    return results
