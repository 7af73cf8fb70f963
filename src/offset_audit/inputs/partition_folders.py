"""One partition's segment folders, read by one task: each folder as the broker's log loader would
recover it (`log_loader`), and the folders that are copies of one log merged (`copies`).

A partition's folders are copies of its log when they name the same topic: several brokers'
`__consumer_offsets-N`, or the `-future` or `-delete` folder beside the live one. Each copy is read
whole into memory with the partition leader epoch of every batch (from the batch header) and its
`leader-epoch-checkpoint`, which is what settles copies that diverged. One copy alone is streamed, a
chunk at a time, as before.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.escaping import stored_text
from offset_audit.inputs import copies as merging
from offset_audit.inputs import log_loader, transactions
from offset_audit.inputs.log_files import (
    LogFile,
    PartitionFiles,
    located_errors,
    marker_rows,
    read_log_file,
    read_raw,
    to_raw_batch,
)
from offset_audit.inputs.log_records import LOG_RECORD_SCHEMA
from offset_audit.storage import is_remote, parent

BATCH_ROWS = 50_000


def read_partition_raw(group: PartitionFiles, topic: str | None = None) -> Iterator[pa.RecordBatch]:
    """One partition's segments as raw-record batches: its markers first (the light pass of
    `log_files.gather_markers`, over these files only), then its records labelled by them; the files the
    log loader would delete, and the records other copies stand for, marked (`copies.COPY_STATE`)."""
    for _, batch in partition_raw(group, topic):
        yield batch


def partition_raw(
    group: PartitionFiles,
    topic: str | None,
    carried: Callable[[transactions.Markers], pa.RecordBatch] | None = None,
) -> Iterator[tuple[str | None, pa.RecordBatch]]:
    """`read_partition_raw`'s batches, each with the topic its folder names; first, with `carried`, an
    incremental audit's records of this partition (`inputs.resumed`), settled by the same markers."""
    sets = [[log_loader.plan(files, swap_next_offset) for files in folders] for folders in copy_sets(group.files)]
    markers = transactions.Markers.from_rows(
        row for plans in sets for plan in plans for unit in plan.log for row in marker_rows(unit)
    )
    if carried is not None:
        yield topic, carried(markers)
    for plans in sets:
        logs = [plan.log for plan in plans if plan.log]
        if len(logs) == 1:
            for unit in logs[0]:
                for batch in read_raw(unit, markers, topic):
                    yield unit.topic, batch
        elif logs:
            for batch in _read_copies(logs, markers, topic):
                yield logs[0][0].topic, batch
        for plan in plans:
            for unit, note in plan.discarded:
                for batch in read_raw(unit, markers, topic):
                    yield unit.topic, _marked(batch, merging.DISCARDED, note)


def copy_sets(files: tuple[LogFile, ...]) -> list[list[list[LogFile]]]:
    """One partition's files by topic, then by folder: each folder one copy of that topic's log."""
    sets: dict[str | None, dict[str, list[LogFile]]] = {}
    for unit in files:
        sets.setdefault(unit.topic, {}).setdefault(parent(unit.path), []).append(unit)
    return [list(folders.values()) for folders in sets.values()]


def swap_next_offset(unit: LogFile) -> int:
    """The offset after a swap file's last record (LogSegment.readNextOffset), its base offset when it
    holds none."""
    last = None
    for batch in read_log_file(unit):
        valid = batch.column("source_offset").filter(batch.column("source_error").is_null())
        top = pc.max(valid).as_py() if len(valid) else None
        if top is not None and (last is None or top > last):
            last = top
    base = log_loader.base_offset(unit.path) or 0
    return base if last is None else last + 1


def _marked(batch: pa.RecordBatch, state: str, note: str) -> pa.RecordBatch:
    """A raw batch whose every record is left out, for `state`, with `note`."""
    n = batch.num_rows
    batch = batch.set_column(batch.schema.get_field_index(merging.COPY_STATE), merging.COPY_STATE,
                             pa.array([state] * n, pa.string()))  # fmt: skip
    return batch.set_column(
        batch.schema.get_field_index("source_note"), "source_note", pa.array([note] * n, pa.string())
    )


def _copy_labels(copies: list[list[LogFile]]) -> list[str]:
    """How the notes name each copy: the data directory that holds it (a broker), or its own folder
    where two copies sit in one data directory."""
    folders = [parent(files[0].path) for files in copies]
    labels = [parent(folder) or folder for folder in folders]
    if len(set(labels)) < len(labels):
        labels = folders
    return [f"'{stored_text(label)}'" for label in labels]


def _read_copies(
    copies: list[list[LogFile]], markers: transactions.Markers, topic: str | None
) -> Iterator[pa.RecordBatch]:
    """Several copies of one partition merged by offset: each read whole, with the leader epoch of
    every batch and its folder's leader-epoch-checkpoint, then every row yielded once, those another
    copy stands for marked with the reason."""
    from offset_audit.inputs.segments.reader import partition_from_path

    read = []
    for label, files in zip(_copy_labels(copies), copies, strict=True):
        batches, epochs = [], []
        for unit in files:
            mine = [
                located_errors(b if b.schema == LOG_RECORD_SCHEMA else b.cast(LOG_RECORD_SCHEMA), unit)
                for b in read_log_file(unit)
            ]
            if mine:  # the file is read once more, for the batch headers' epochs
                positions = pa.chunked_array([b.column("source_position") for b in mine]).combine_chunks()
                epochs.append(batch_epochs(unit, positions))
                batches += mine
        rows = pa.Table.from_batches(batches, LOG_RECORD_SCHEMA)
        checkpoint = log_loader.epoch_starts(parent(files[0].path), files[0].storage)
        held = np.concatenate(epochs) if epochs else None
        read.append(merging.Copy(label, rows, held, _covers(files, rows), checkpoint))
    first = copies[0][0]
    number = partition_from_path(first.path) if first.partition is None else first.partition
    merged = merging.merge(read, f"{first.topic or 'partition'}-{number}")
    other = first.topic is not None and topic is not None and first.topic != topic
    for batch in merged.to_batches(max_chunksize=BATCH_ROWS):
        yield to_raw_batch(batch, markers, other)


def batch_epochs(unit: LogFile, positions: pa.Array) -> np.ndarray:
    """The partition leader epoch of the batch at each position of a segment file (-1 for a magic 0
    or 1 message set, which has none, and for an error row): the header's bytes 12-16, beside the magic
    byte at 16 (DefaultRecordBatch)."""
    wanted = positions.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    epochs = np.full(len(wanted), merging.UNKNOWN_EPOCH, np.int64)
    if not len(wanted):
        return epochs
    if is_remote(unit.path):
        with unit.storage.open_input_file(unit.path) as handle:
            data = np.frombuffer(handle.read(), np.uint8)
    else:  # mapped: only the pages holding batch headers are read
        data = np.memmap(unit.path, np.uint8, mode="r") if os.path.getsize(unit.path) else np.empty(0, np.uint8)
    ok = (wanted >= 0) & (wanted + 17 <= len(data))
    at = wanted[ok]
    header = np.stack([data[at + 12 + i] for i in range(4)], axis=1).astype(np.uint8)
    value = header.copy().view(">i4").ravel().astype(np.int64)
    epochs[np.flatnonzero(ok)] = np.where(data[at + 16] == 2, value, merging.UNKNOWN_EPOCH)
    return epochs


def _covers(files: list[LogFile], rows: pa.Table) -> tuple[tuple[int, int], ...] | None:
    """The offsets a copy's segments cover: each file from its base offset (its name) to the next
    file's, the last to its last record. None when a file's name is not a base offset."""
    bases = [log_loader.base_offset(unit.path) for unit in files]
    if any(b is None for b in bases) or not rows.num_rows:
        return None
    known = cast(list[int], bases)  # none is None (checked above)
    last = pc.max(rows.column("source_offset")).as_py()
    ends = [*known[1:], (last if last is not None else known[-1]) + 1]
    return tuple((b, max(b, e)) for b, e in zip(known, ends, strict=True))
