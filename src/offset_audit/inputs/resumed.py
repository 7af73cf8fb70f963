"""An incremental audit's input: the records its state carries, and the input's records past the state's
positions (docs/incremental.md).

Positions are record offsets, one per partition, never file names: the log cleaner rewrites segments
and names each after the first segment it replaces. So a segment file is left unopened only when the
next file's base offset is at or below the position (every record of a file lies below the next file's
base offset); in the files that are opened, and in every other format, the records below the position
are dropped as they are read (`ResumeFilter`, inside the decode tasks), before anything counts them.

The carried records travel with the new ones through the same decode tasks, marked by the CARRIED
column: broker folders read a partition's carried records in the same task as its new files, so that a
transactional commit left pending by the run before is settled by a marker among the new records.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.pandas.types import to_arrow_schema

from offset_audit.inputs import log_loader, transactions
from offset_audit.inputs.kafka_source import Piece, read_piece
from offset_audit.inputs.last_read import RECORD_FIELDS, LastRow, record_digest
from offset_audit.inputs.log_files import LOCATION, LogFile, PartitionFiles
from offset_audit.inputs.snapshot_files import FilesToRead
from offset_audit.layouts.tables import table_schema
from offset_audit.storage import LOCAL, Storage, parent

CARRIED = "carried"
# The raw columns an incremental run carries from one run to the next: state/records' own
# (schemas/tables/state_records.json).
STATE_RECORDS_SCHEMA = to_arrow_schema(table_schema("state_records").struct(), timezone="UTC")
# The columns of state/records that hold a group record kept decoded (`decoding.kept_decoded`): how the
# decode counts it (in CountKey's order), then its rows.
KEPT_COLUMNS = (
    "decoded_class",
    "decoded_record_type",
    "decoded_value_version",
    "decoded_layout_era",
    "decoded_is_tombstone",
    "group_metadata",
    "group_members",
    "modern_group_record",
)
# A table of kept rows: where each record is, and its kept columns.
KEPT_SCHEMA = pa.schema([STATE_RECORDS_SCHEMA.field(n) for n in ("source_partition", "source_offset", *KEPT_COLUMNS)])
# The records themselves: state/records less the columns of the group records kept decoded, which travel
# apart (`decoding.kept_decoded`), so that the offset commits, nearly every row, never hold their nulls.
CARRY_SCHEMA = pa.schema([f for f in STATE_RECORDS_SCHEMA if f.name not in KEPT_COLUMNS])
# The columns of a file of state/log (schemas/tables/state_log.json): its partition column,
# log_generation, lives in the Delta log, as Delta keeps partition values.
LOG_GENERATION = "log_generation"
_LOG = to_arrow_schema(table_schema("state_log").struct())
LOG_SCHEMA = _LOG.remove(_LOG.get_field_index(LOG_GENERATION))


@dataclass(frozen=True)
class Resume:
    """What the run resumes from: each partition's position, the files of its carried records, and the
    offset of the last record read of each partition whose record the decode tasks find again (`probes`:
    Kafka-source snapshots and the live topic; broker folders are checked before Spark starts)."""

    floors: dict[int, int]
    record_files: dict[int, tuple[str, ...]] = field(default_factory=dict)
    storage: Storage = LOCAL
    probes: dict[int, int] = field(default_factory=dict)
    # A Kafka-source snapshot's data files to open (`inputs.snapshot_files`); None: every one.
    files: FilesToRead | None = None

    @property
    def reread(self) -> frozenset[str]:
        """The files opened whose records may have been read before (changed, or rewritten by Delta):
        their records below the positions say nothing of a log whose offsets went backwards."""
        return frozenset(self.files.read_before) if self.files is not None else frozenset()

    def floor(self, partition: int | None) -> int:
        return 0 if partition is None else self.floors.get(partition, 0)

    def first_needed(self, partition: int | None) -> int:
        """The lowest offset the run reads of a partition: its last record read, where that is looked for
        again, else its position."""
        if partition is not None and partition in self.probes:
            return self.probes[partition]
        return self.floor(partition)


@dataclass(frozen=True)
class ResumedPartition:
    """A partition of broker folders: its files from the first one holding a record at or past the
    position, and its carried records."""

    partition: int | None
    segments: tuple[LogFile, ...]
    record_files: tuple[str, ...]
    storage: Storage
    rows: int  # for the task balance: carried records, and the new files' bytes as records


@dataclass(frozen=True)
class CarriedPartition:
    """A partition's carried records alone (inputs whose units are not partitions)."""

    partition: int
    record_files: tuple[str, ...]
    storage: Storage
    rows: int


def segments_to_open(files: tuple[LogFile, ...], floor: int) -> tuple[LogFile, ...]:
    """The files of one partition a resumed read opens: all from the last file whose base offset is at or
    below the position. Only where the folder is plain (one folder, every file a `.log` named by its base
    offset); a folder caught mid-compaction (`.cleaned`, `.swap`, `.deleted` files) is opened whole, and
    its records below the position dropped as read."""
    if floor <= 0 or len({parent(f.path) for f in files}) != 1:
        return files
    bases = [log_loader.base_offset(f.path) if log_loader.suffix(f.path) is None else None for f in files]
    if any(b is None for b in bases):
        return files
    first = 0
    for index, base in enumerate(cast(list[int], bases)):  # none is None (checked above)
        if base <= floor:
            first = index
    return files[first:]


def resumed_partitions(groups: list[PartitionFiles], resume: Resume, bytes_per_record: int) -> list[ResumedPartition]:
    units = []
    for group in groups:
        opened = segments_to_open(group.files, resume.floor(group.partition))
        carried = resume.record_files.get(group.partition, ()) if group.partition is not None else ()
        weight = sum(f.size for f in opened) // bytes_per_record + 200 * len(carried)
        units.append(ResumedPartition(group.partition, opened, carried, resume.storage, weight))
    return units


def read_resumed_partition(unit: ResumedPartition, topic: str | None = None) -> Iterator[pa.RecordBatch]:
    """A partition's carried records (first the rows of those kept decoded), then its new ones, labelled
    by the markers of its opened files."""
    from offset_audit.inputs.partition_folders import partition_raw

    carried = None
    if unit.record_files:
        assert unit.partition is not None  # resumed_partitions carries records of a known partition only
        table, kept = carried_records(unit.record_files, unit.partition, unit.storage)
        if kept.num_rows:
            yield from kept.to_batches()
        carried = partial(carried_raw_batch, table)
    group = PartitionFiles(unit.partition, unit.segments)
    for _, batch in partition_raw(group, topic, carried):
        yield batch


def carried_records(files: tuple[str, ...], partition: int, storage: Storage) -> tuple[pa.Table, pa.Table]:
    """One partition's stored records, in offset order, with their partition column (Delta keeps
    partition values in its log, not in the files); and the rows of those kept decoded, in the
    columns `decoding.kept_decoded` takes (a file of records none of which is kept has no such column)."""
    records, kept = [], []
    for path in files:
        table = pq.read_table(storage.parquet_source(path))
        table = table.append_column("source_partition", pa.array(np.full(table.num_rows, partition, np.int32)))
        records.append(table.select(CARRY_SCHEMA.names).cast(CARRY_SCHEMA))
        if KEPT_COLUMNS[0] in table.column_names:
            held = table.filter(pc.is_valid(table.column(KEPT_COLUMNS[0])))
            kept.append(held.select(KEPT_SCHEMA.names).cast(KEPT_SCHEMA))
    carried = pa.concat_tables(records).sort_by("source_offset") if records else CARRY_SCHEMA.empty_table()
    return carried, pa.concat_tables(kept) if kept else KEPT_SCHEMA.empty_table()


def carried_raw_batch(carried: pa.Table, markers: transactions.Markers) -> pa.RecordBatch:
    """Carried records as raw records for the decoder (`log_files.to_raw_batch`'s columns), marked
    CARRIED; a record the run before left pending takes the outcome of its producer's next marker here."""
    n = carried.num_rows
    labels = carried.column("transaction").to_pylist()
    partitions = carried.column("source_partition").to_pylist()
    producers = carried.column("producer_id").to_pylist()
    offsets = carried.column("source_offset").to_pylist()
    for i, label in enumerate(labels):
        if label == transactions.PENDING and producers[i] is not None:
            labels[i] = markers.outcome(partitions[i], producers[i], offsets[i])
    return pa.RecordBatch.from_arrays(
        [
            carried.column("source_partition").combine_chunks(),
            carried.column("source_offset").combine_chunks(),
            carried.column("record_timestamp_ms").combine_chunks(),
            carried.column("key").combine_chunks(),
            carried.column("value").combine_chunks(),
            pa.array(np.zeros(n, bool)),
            pa.nulls(n, pa.string()),
            pa.nulls(n, pa.string()),
            pa.nulls(n, pa.int64()),
            pa.array(labels, pa.string()),
            pa.nulls(n, pa.string()),
            carried.column("producer_id").combine_chunks(),
            pa.array(np.ones(n, bool)),
        ],
        names=[
            "source_partition",
            "source_offset",
            "record_timestamp_ms",
            "key",
            "value",
            "other_topic",
            "source_error",
            "source_note",
            "skipped_bytes",
            "transaction",
            "copy_state",
            "producer_id",
            CARRIED,
        ],
    )


PIECE_COLUMNS = ("source_partition", "source_offset", "record_timestamp_ms", "key", "value", "other_topic")


def read_carried(unit: CarriedPartition) -> Iterator[pa.RecordBatch]:
    """Carried records in the columns of a snapshot's pieces (`read_piece`), after the rows of those
    kept decoded: a Kafka source reads read_committed, so nothing it carries is transactional."""
    table, kept = carried_records(unit.record_files, unit.partition, unit.storage)
    yield from kept.to_batches()
    if table.num_rows:
        batch = carried_raw_batch(table, transactions.Markers())
        yield batch.select([*PIECE_COLUMNS, CARRIED])


def resumed_pieces(pieces: list[Piece], resume: Resume) -> list[Piece]:
    """The snapshot's pieces less the row groups that hold only records below the positions, as their
    footers' statistics show: every offset below the lowest position of the partitions they span (the
    last record read of each is kept, to be found again). (A file of many partitions whose offsets differ
    widely is read, and its old records dropped as read.)"""
    kept = []
    for piece in pieces:
        metadata = pq.ParquetFile(piece.storage.parquet_source(piece.path)).metadata
        names = metadata.schema.to_arrow_schema().names
        at = {name: names.index(name) for name in ("partition", "offset")}
        groups = []
        rows = 0
        for index in piece.row_groups:
            group = metadata.row_group(index)
            part, off = (group.column(at[n]).statistics for n in ("partition", "offset"))
            if (
                part is not None
                and off is not None
                and part.has_min_max
                and off.has_min_max
                and part.max - part.min < 1 << 16
                and off.max < min(resume.first_needed(p) for p in range(int(part.min), int(part.max) + 1))
            ):
                continue
            groups.append(index)
            rows += group.num_rows
        if groups:
            kept.append(replace(piece, row_groups=tuple(groups), rows=rows))
    return kept


def read_unit(unit, topic: str) -> Iterator[pa.RecordBatch]:
    """A Kafka-source snapshot's unit of a resumed read: a piece of new rows, named by its file (the
    last record read of a partition is noted with it: `LastRead.file`), or carried records."""
    if isinstance(unit, CarriedPartition):
        yield from read_carried(unit)
        return
    for batch in read_piece(unit, topic):
        name = pa.DictionaryArray.from_arrays(pa.array(np.zeros(batch.num_rows, np.int32)), pa.array([unit.path]))
        yield batch.append_column("source_file", name)


def carried_units(resume: Resume) -> list[CarriedPartition]:
    return [
        CarriedPartition(p, files, resume.storage, 200 * len(files)) for p, files in sorted(resume.record_files.items())
    ]


class ResumeFilter:
    """Inside a decode task: drops the new records below their partition's position, and notes how far
    each partition's records reach (`ends`: the offset after the last record read, before the drop,
    so a log whose offsets went backwards shows), the last record read of each (`last`: what the next run
    finds again), the records at the `probes` offsets (`probed`: the digest of each found, the check of
    the run before's last record) and how many carried records went through."""

    def __init__(
        self, floors: dict[int, int], probes: dict[int, int] | None = None, reread: frozenset[str] = frozenset()
    ) -> None:
        self.floors = floors
        self.probes = probes or {}
        self.reread = reread
        self.ends: dict[int, int] = {}
        self.last: dict[int, LastRow] = {}
        self.probed: dict[int, set[str]] = {}
        self.carried = 0

    def take(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return unmarked(self.keep(batch))

    def keep(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The batch less the new records below their partition's position, still marked CARRIED."""
        names = batch.schema.names
        n = batch.num_rows
        carried = (
            batch.column(CARRIED).fill_null(False).to_numpy(zero_copy_only=False)
            if CARRIED in names
            else np.zeros(n, bool)
        )
        self.carried += int(carried.sum())
        partitions = batch.column("source_partition")
        offsets = batch.column("source_offset")
        fresh = ~carried
        if "source_error" in names:
            fresh_read = fresh & batch.column("source_error").is_null().to_numpy(zero_copy_only=False)
        else:
            fresh_read = fresh
        if "other_topic" in names:
            fresh_read &= ~batch.column("other_topic").fill_null(False).to_numpy(zero_copy_only=False)
        known = fresh_read & partitions.is_valid().to_numpy(zero_copy_only=False)
        known &= offsets.is_valid().to_numpy(zero_copy_only=False)
        keep = np.ones(n, bool)
        # Filled, so that NumPy keeps exact integers (a null would make the column float: offsets past 2^53).
        parts = partitions.fill_null(-1).to_numpy(zero_copy_only=False)
        offs = offsets.fill_null(-1).to_numpy(zero_copy_only=False)
        again = self._read_again(batch)
        if known.any():
            for partition in np.unique(parts[known]).tolist():
                mine = known & (parts == partition)
                floor = self.floors.get(partition, 0)
                rows = np.flatnonzero(mine & ~(again & (offs < floor)))
                if len(rows):
                    at = int(rows[np.argmax(offs[rows])])
                    top = int(offs[at]) + 1
                    if top > self.ends.get(partition, -1):
                        self.ends[partition] = top
                        self.last[partition] = last_row(batch, at)
                probe = self.probes.get(partition)
                if probe is not None:
                    for hit in np.flatnonzero(mine & (offs == probe)).tolist():
                        self.probed.setdefault(partition, set()).add(last_row(batch, hit).record_digest)
                if floor:
                    keep &= ~(mine & (offs < floor))
        if "source_error" in names and self.floors:
            # An error row with an offset below its partition's position stands for bytes read before;
            # one without coordinates is kept.
            errors = fresh & batch.column("source_error").is_valid().to_numpy(zero_copy_only=False)
            errors &= partitions.is_valid().to_numpy(zero_copy_only=False)
            errors &= offsets.is_valid().to_numpy(zero_copy_only=False)
            if errors.any():
                floors = np.array([self.floors.get(int(p), 0) for p in parts[errors]], np.int64)
                below = np.zeros(n, bool)
                below[np.flatnonzero(errors)] = offs[errors] < floors
                keep &= ~below
        return batch if keep.all() else batch.filter(pa.array(keep))

    def _read_again(self, batch: pa.RecordBatch) -> np.ndarray:
        """Which rows come from a file read before that changed since (`reread`)."""
        n = batch.num_rows
        if not self.reread or "source_file" not in batch.schema.names:
            return np.zeros(n, bool)
        files = batch.column("source_file")
        if pa.types.is_dictionary(files.type):
            files = files.dictionary_decode()
        found = pc.is_in(files, value_set=pa.array(sorted(self.reread), files.type))
        return found.fill_null(False).to_numpy(zero_copy_only=False)


def last_row(batch: pa.RecordBatch, at: int) -> LastRow:
    """What a task keeps of the record at row `at`: where its batch is, when the rows say (broker
    folders), and the digest of the record."""
    names = batch.schema.names

    def value(name: str):
        return batch.column(name)[at].as_py() if name in names else None

    return LastRow(value("source_file"), value("source_position"), record_digest(*map(value, RECORD_FIELDS)))


def unmarked(batch: pa.RecordBatch) -> pa.RecordBatch:
    return batch.drop_columns([CARRIED]) if CARRIED in batch.schema.names else batch


def unlocated(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch without where its records are in the input (`log_files.LOCATION`), once noted: the
    decoder does not need them, nor the compaction of every record of a key to hold them."""
    located = [name for name in LOCATION if name in batch.schema.names]
    return batch.drop_columns(located) if located else batch


@dataclass(frozen=True)
class LogFloors:
    """What a run appends to state/log (docs/incremental.md): the new records from each partition's
    `floors` on (the positions of the log's generation so far; none for a new one), and the records at
    `held` positions (those the state left waiting for a marker), each once it is settled; with
    `carried`, every carried record too (the log's first run over a state kept without one)."""

    floors: dict[int, int] = field(default_factory=dict)
    held: frozenset[tuple[int, int]] = frozenset()
    carried: bool = False


def logged_rows(batch: pa.RecordBatch, log: LogFloors) -> pa.Table | None:
    """A decode task's rows for state/log from a batch past the resume filter (`ResumeFilter.keep`):
    settled records of the dump itself (no reader's error, not another topic's) that are new from the
    log's floors, or at a held position. A carried record is logged only from a held position (the
    others were logged by the run that first read them), unless the log takes every carried record."""
    names = batch.schema.names
    n = batch.num_rows
    if not n:
        return None
    carried = (
        batch.column(CARRIED).fill_null(False).to_numpy(zero_copy_only=False) if CARRIED in names else np.zeros(n, bool)
    )
    valid = batch.column("source_partition").is_valid().to_numpy(zero_copy_only=False)
    valid &= batch.column("source_offset").is_valid().to_numpy(zero_copy_only=False)
    if "source_error" in names:
        valid &= batch.column("source_error").is_null().to_numpy(zero_copy_only=False)
    if "other_topic" in names:
        valid &= ~batch.column("other_topic").fill_null(False).to_numpy(zero_copy_only=False)
    if "transaction" in names:
        valid &= ~pc.fill_null(pc.equal(batch.column("transaction"), transactions.PENDING), False).to_numpy(
            zero_copy_only=False
        )
    if not valid.any():
        return None
    parts = batch.column("source_partition").fill_null(-1).to_numpy(zero_copy_only=False)
    offs = batch.column("source_offset").fill_null(-1).to_numpy(zero_copy_only=False)
    floors = np.array([log.floors.get(int(p), 0) for p in parts.tolist()], np.int64) if log.floors else np.zeros(n)
    take = (carried & log.carried) | (~carried & (offs >= floors))
    if log.held:
        held = np.array([(int(p), int(o)) in log.held for p, o in zip(parts.tolist(), offs.tolist(), strict=True)])
        take |= held
    take &= valid
    if not take.any():
        return None
    return in_columns(pa.Table.from_batches([batch.filter(pa.array(take))]), LOG_SCHEMA)


def pending_rows(batch: pa.RecordBatch) -> pa.Table | None:
    """The batch's transactional records still waiting for a marker, as the state carries them."""
    if "transaction" not in batch.schema.names:
        return None
    pending = pc.fill_null(pc.equal(batch.column("transaction"), transactions.PENDING), False)
    if not pc.any(pending).as_py():
        return None
    picked = pa.Table.from_batches([batch.filter(pending)])
    return carry_table(picked)


def in_columns(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` in `schema`'s columns and types; a column it lacks is null."""
    n = table.num_rows
    return pa.table(
        [table.column(f.name).cast(f.type) if f.name in table.column_names else pa.nulls(n, f.type) for f in schema],
        schema=schema,
    )


def carry_table(table: pa.Table) -> pa.Table:
    """Rows in the carried columns (a producer id only where a record is still pending)."""
    out = in_columns(table, CARRY_SCHEMA)
    pending = pc.fill_null(pc.equal(out.column("transaction"), transactions.PENDING), False)
    producers = pc.if_else(pending, out.column("producer_id"), pa.scalar(None, pa.int64()))
    return out.set_column(out.schema.get_field_index("producer_id"), "producer_id", producers)


@dataclass(frozen=True)
class InputFacts:
    """What the input shows before it is read, for an incremental audit's checks of its positions;
    empty where the input cannot tell (Kafka-source snapshots show nothing until read)."""

    partitions: tuple[int, ...] | None = None
    log_starts: dict[int, int] = field(default_factory=dict)
    topic_ids: dict[int, str] = field(default_factory=dict)
    cluster_id: str | None = None
    # cleaner-offset-checkpoint: how far the log cleaner has cleaned each partition; None when unknown.
    cleaned_to: dict[int, int] | None = None
    # Whether the partitions listed are all the topic has (a live cluster), not only those given.
    whole_topic: bool = False
    # Broker folders: each partition's segment files, where the last batch read is looked for again.
    segments: dict[int, tuple[LogFile, ...]] = field(default_factory=dict)


CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
META_PROPERTIES = "meta.properties"


def folder_facts(groups: list[PartitionFiles], topic: str, storage: Storage = LOCAL) -> InputFacts:
    """Broker folders: each partition's first segment's base offset (its log start once the loader
    has run), its folder's topic id, and from the data directory holding it the cluster id
    (meta.properties; of every data directory given, which a run of one cluster's brokers shares), how
    far the cleaner got (cleaner-offset-checkpoint), reference 4.5, and its segment files, where the last
    batch read is found again (`inputs.last_read`)."""
    log_starts: dict[int, int] = {}
    topic_ids: dict[int, str] = {}
    data_dirs: set[str] = set()
    cleaned: dict[int, int] | None = {}
    for group in groups:
        if group.partition is None or not group.files:
            continue
        folder = parent(group.files[0].path)
        bases = [log_loader.base_offset(f.path) for f in group.files if log_loader.suffix(f.path) is None]
        known = [b for b in bases if b is not None]
        if known:
            log_starts[group.partition] = min(known)
        if (topic_id := log_loader.topic_id(folder, storage)) is not None:
            topic_ids[group.partition] = topic_id
        data_dir = parent(folder)
        data_dirs.update(parent(parent(f.path)) for f in group.files)  # every copy's: replicas of other brokers
        if cleaned is not None:
            offsets = _cleaner_offsets(data_dir, topic, storage)
            if offsets is None:
                cleaned = None
            elif group.partition in offsets:
                cleaned[group.partition] = offsets[group.partition]
    clusters = {c for c in map(partial(_cluster_id, storage=storage), sorted(data_dirs)) if c is not None}
    partitions = tuple(sorted(g.partition for g in groups if g.partition is not None))
    cluster_id = ",".join(sorted(clusters)) if clusters else None
    segments = {
        g.partition: tuple(f for f in g.files if f.topic in (None, topic)) for g in groups if g.partition is not None
    }
    return InputFacts(partitions, log_starts, topic_ids, cluster_id, cleaned, segments=segments)


def _cluster_id(data_dir: str, storage: Storage) -> str | None:
    from offset_audit.inputs.broker_properties import parse_properties
    from offset_audit.storage import join

    path = join(data_dir, META_PROPERTIES)
    try:
        if not storage.exists(path):
            return None
        with storage.open_text(path) as handle:
            return parse_properties(handle.read()).get("cluster.id") or None
    except (OSError, ValueError):
        return None


def _cleaner_offsets(data_dir: str, topic: str, storage: Storage) -> dict[int, int] | None:
    """The data directory's cleaner-offset-checkpoint for `topic` (version 0: a version line, a count
    line, then "topic partition offset" lines); None when it is missing or unreadable. A partition it
    does not list has never been cleaned."""
    from offset_audit.storage import join

    path = join(data_dir, CLEANER_CHECKPOINT)
    try:
        if not storage.exists(path):
            return None
        with storage.open_text(path) as handle:
            lines = handle.read().split("\n")
    except OSError:
        return None
    if len(lines) < 2 or lines[0].strip() != "0":
        return None
    offsets = {}
    for line in lines[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[0] == topic and parts[1].isdigit() and parts[2].lstrip("-").isdigit():
            offsets[int(parts[1])] = int(parts[2])
    return offsets
