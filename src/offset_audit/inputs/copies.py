"""One partition given more than once, read as the broker reads its replicas.

Operators copy `__consumer_offsets-N/` from several brokers (the leader and its followers), or gather
dumps taken at different times into one input. Reading every copy would replay each record once per
copy, so the copies of a partition are merged by offset first, and every record left out is still
counted (as skipped, with the reason below) and named in a source note that says which copy holds the
record that stands for it:

- DUPLICATE: the same record (key, value, timestamp) at the same offset as in another copy. It is
  counted once, from the first copy given.
- DIVERGED: a record the broker's truncation removes. After an unclean leader election a replica can
  hold records that the new leader never had. A follower truncates its log to the end offset, as the
  leader knows it, of the last leader epoch they share (KIP-101, KIP-279): a record written in epoch e
  at an offset at or past the first offset another copy wrote in a later epoch is gone from the
  cluster. Where the epochs cannot settle it (formats without them), the copy whose log reaches
  furthest wins where two copies disagree at one offset.
- COMPACTED: a record only this copy still holds, at an offset that another copy covers but no longer
  holds. Replicas compact on their own, and a copy lacks a record inside its range only because its
  cleaner removed it, once a later record of the same key existed. Keeping it would be harmless unless
  that later record was a tombstone the other copy's cleaner has also removed, in which case the record
  would come back to life (an old dump merged with a newer one). So it is left out.

Reader error rows (a batch that fails its CRC) are never merged: they stay quarantined, so a damaged
replica shows even where another copy holds the good bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

DUPLICATE = "duplicate"
DIVERGED = "diverged"
COMPACTED = "compacted"
# A record of a file the broker's log loader deletes on restart (offset_audit.inputs.log_loader).
DISCARDED = "discarded"
COPY_STATE = "copy_state"
UNKNOWN_EPOCH = -1
_NO_END = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Copy:
    """One copy of one partition: its rows (LOG_RECORD_SCHEMA columns, any order), where it came from,
    the partition leader epoch of each row where the format keeps it (UNKNOWN_EPOCH otherwise), and the
    offset ranges [start, end) it covers, which a compacted copy holds only some offsets of (None: from
    its first to its last record)."""

    label: str
    rows: pa.Table
    epochs: np.ndarray | None = None
    covers: tuple[tuple[int, int], ...] | None = None
    epoch_starts: tuple[tuple[int, int], ...] | None = None  # its leader-epoch-checkpoint: (epoch, start offset)


def merge(copies: list[Copy], partition: str) -> pa.Table:
    """All rows of the copies in offset order, with COPY_STATE set on the rows left out (null on the
    rows kept) and a source note on each of those naming the copy that stands for it. `partition` names
    the partition in the notes (for example "__consumer_offsets-7")."""
    tables = [c.rows for c in copies]
    table = pa.concat_tables(tables, promote_options="permissive") if tables else pa.table({})
    n = table.num_rows
    sizes = [t.num_rows for t in tables]
    copy = np.repeat(np.arange(len(copies)), sizes)
    offsets = table.column("source_offset").fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    good = table.column("source_offset").is_valid().to_numpy(zero_copy_only=False)
    good &= table.column("source_error").is_null().to_numpy(zero_copy_only=False)
    epochs = np.concatenate(
        [c.epochs if c.epochs is not None else np.full(s, UNKNOWN_EPOCH) for c, s in zip(copies, sizes, strict=True)]
    ).astype(np.int64) if n else np.empty(0, np.int64)  # fmt: skip
    if COPY_STATE in table.column_names:  # an input that merged copies of its own (segment folders)
        state = np.array(table.column(COPY_STATE).to_pylist(), dtype=object)
        good &= table.column(COPY_STATE).is_null().to_numpy(zero_copy_only=False)
        table = table.drop_columns([COPY_STATE])
    else:
        state = np.full(n, None, dtype=object)
    note = np.array(table.column("source_note").to_pylist(), dtype=object) if n else np.empty(0, object)
    labels = [c.label for c in copies]

    checkpoints = [c.epoch_starts for c in copies]
    truncated_from = _truncate(copy, offsets, epochs, good, checkpoints, state, note, labels, partition)
    _same_offset(table, copy, offsets, epochs, good, copies, state, note, partition)
    _compacted(copy, offsets, good, copies, truncated_from, state, note)

    table = table.append_column(COPY_STATE, pa.array(state, pa.string()))
    index = table.schema.get_field_index("source_note")
    table = table.set_column(index, "source_note", pa.array(note, pa.string()))
    order = np.lexsort((np.arange(n), copy, np.where(good | (offsets >= 0), offsets, _NO_END)))
    return table.take(pa.array(order))


def _truncate(copy, offsets, epochs, good, checkpoints, state, note, labels, partition) -> np.ndarray:
    """DIVERGED by leader epochs: a row of epoch e at or past the first offset of a later epoch in
    another copy (from its batches, and its leader-epoch-checkpoint where it has one, which still knows
    an epoch's start after the cleaner removed its first records). Returns, per copy, the first offset
    it loses this way (_NO_END where it loses none)."""
    count = len(checkpoints)
    first: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for c in range(count):
        mine = good & (copy == c) & (epochs >= 0)
        starts_of = {int(e): int(offsets[mine & (epochs == e)].min()) for e in np.unique(epochs[mine]).tolist()}
        for epoch, start in checkpoints[c] or ():
            starts_of[epoch] = min(start, starts_of.get(epoch, start))
        if not starts_of:
            continue
        held = np.array(sorted(starts_of), np.int64)
        starts = np.array([starts_of[e] for e in held.tolist()], np.int64)
        # the end of epoch e as this copy knows it: the first offset of any later epoch
        ends = np.minimum.accumulate(starts[::-1])[::-1]
        first[c] = (held, ends)
    truncated_from = np.full(count, _NO_END, np.int64)
    for c in range(count):
        mine = np.flatnonzero(good & (copy == c) & (epochs >= 0))
        for d, (held, ends) in first.items():
            if d == c or not len(mine):
                continue
            after = np.searchsorted(held, epochs[mine], side="right")
            end = np.where(after < len(held), ends[np.minimum(after, len(held) - 1)], _NO_END)
            lost = mine[(offsets[mine] >= end) & (state[mine] == None)]  # noqa: E711 (numpy object array)
            if not len(lost):
                continue
            winner = held[after[np.searchsorted(mine, lost)]]
            for row, epoch in zip(lost.tolist(), winner.tolist(), strict=True):
                state[row] = DIVERGED
                note[row] = (
                    f"{partition} in {labels[c]} diverged from {labels[d]} (leader epoch {epochs[row]} against "
                    f"{epoch}): left out, as the broker truncates a replica"
                )
            truncated_from[c] = min(truncated_from[c], int(offsets[lost].min()))
    return truncated_from


def _same_offset(table, copy, offsets, epochs, good, copies, state, note, partition) -> None:
    """DUPLICATE for rows equal to a kept row at their offset; where copies disagree at one offset and
    the epochs did not settle it, DIVERGED for all but the copy of the highest epoch, then the longest
    log, then the last given."""
    live = np.flatnonzero(good & (state == None))  # noqa: E711
    if len(live) < 2:
        return
    live = live[np.lexsort((copy[live], offsets[live]))]
    repeat = offsets[live[1:]] == offsets[live[:-1]]
    if not repeat.any():
        return
    later, earlier = live[1:][repeat], live[:-1][repeat]
    same = np.ones(len(later), bool)
    for column in _compared(table):
        values = table.column(column)
        a, b = values.take(pa.array(later)), values.take(pa.array(earlier))
        equal = pc.equal(a, b).fill_null(False).to_numpy(zero_copy_only=False)
        both_null = pc.and_(a.is_null(), b.is_null()).to_numpy(zero_copy_only=False)
        same &= equal | both_null
    # offsets where every copy agrees: the first copy's row is kept, the others are duplicates
    group_of = np.concatenate([[0], np.cumsum(~repeat)])  # the offset group of each row of `live`
    disagree = np.zeros(group_of[-1] + 1, bool)
    np.logical_or.at(disagree, group_of[1:][repeat], ~same)
    first_row = live[np.flatnonzero(np.concatenate([[True], ~repeat]))]
    groups = group_of[1:][repeat]
    agreed = ~disagree[groups]
    rows, kept = later[agreed], first_row[groups[agreed]]
    state[rows] = DUPLICATE
    note[rows] = _pair_notes(copies, copy[rows], copy[kept], _duplicate_note)
    reach = [int(offsets[good & (copy == c)].max(initial=-1)) for c in range(len(copies))]
    bounds = np.concatenate([np.flatnonzero(np.concatenate([[True], ~repeat])), [len(live)]])
    for group in np.flatnonzero(disagree).tolist():
        rows = live[bounds[group] : bounds[group + 1]]
        winner = max(rows.tolist(), key=lambda r: (epochs[r], reach[copy[r]], copy[r]))
        for row in rows.tolist():
            if row == winner:
                continue
            if _equal_rows(table, row, winner):
                state[row] = DUPLICATE
                note[row] = _duplicate_note(copies[copy[row]].label, copies[copy[winner]].label)
            else:
                state[row] = DIVERGED
                note[row] = (
                    f"{partition} in {copies[copy[row]].label} disagrees with {copies[copy[winner]].label} at one "
                    "offset: left out, the other copy's log reaches further or has the later leader epoch"
                )


def _compared(table: pa.Table) -> list[str]:
    """The columns two copies of a record must agree on (those the input's format has)."""
    return [c for c in ("key", "value", "record_timestamp_ms", "is_control", "control_type") if c in table.column_names]


def _equal_rows(table: pa.Table, a: int, b: int) -> bool:
    return all(table.column(c)[a].as_py() == table.column(c)[b].as_py() for c in _compared(table))


def _compacted(copy, offsets, good, copies, truncated_from, state, note) -> None:
    """COMPACTED: a kept row whose offset no other copy holds although one covers it."""
    held = good.copy()
    if not held.any() or len(copies) < 2:
        return
    values, counts = np.unique(offsets[held], return_counts=True)
    alone = np.flatnonzero(held & (state == None))  # noqa: E711
    alone = alone[counts[np.searchsorted(values, offsets[alone])] == 1]
    if not len(alone):
        return
    for d, other in enumerate(copies):
        mine = good & (copy == d)
        if other.covers is not None:
            ranges = [(s, e) for s, e in other.covers]
        elif mine.any():
            ranges = [(int(offsets[mine].min()), int(offsets[mine].max()) + 1)]
        else:
            ranges = []
        stop = int(truncated_from[d])
        for start, end in ranges:
            end = min(end, stop)
            inside = alone[(copy[alone] != d) & (offsets[alone] >= start) & (offsets[alone] < end)]
            inside = inside[state[inside] == None]  # noqa: E711
            state[inside] = COMPACTED
            note[inside] = _pair_notes(copies, copy[inside], np.full(len(inside), d), _compacted_note)


def _duplicate_note(copy: str, kept: str) -> str:
    return f"the same record as in {kept}, counted once: left out of {copy}"


def _compacted_note(copy: str, other: str) -> str:
    return f"{other} covers the offset but its cleaner removed the record: left out of {copy}"


def _pair_notes(copies: list[Copy], these: np.ndarray, others: np.ndarray, text) -> np.ndarray:
    """The note of each row, by its copy and the copy named (one string per pair, shared)."""
    notes = np.empty(len(these), dtype=object)
    for a, b in set(zip(these.tolist(), others.tolist(), strict=True)):
        notes[(these == a) & (others == b)] = text(copies[a].label, copies[b].label)
    return notes
