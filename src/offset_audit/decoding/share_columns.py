"""`__share_group_state` records to columns: ShareSnapshot and ShareUpdate values read with numpy.

A dump of `__share_group_state` is nearly all values of one layout (4.1+, version 0), so, like
`offset_audit.decoding.fast_commits` for offset commits, whole Arrow columns are read at once for the exact byte
layouts the broker writes (reference 2.9):

    ShareSnapshotValue v0: int16 version, int32 SnapshotEpoch, int32 StateEpoch, int32 LeaderEpoch,
        int64 StartOffset, int64 CreateTimestamp, int64 WriteTimestamp, StateBatches, tagged fields
    ShareUpdateValue v0:   int16 version, int32 SnapshotEpoch, int32 LeaderEpoch, int64 StartOffset,
        StateBatches, tagged fields
    StateBatches: compact array (a one- or two-byte varint length) of 20-byte elements: int64
        FirstOffset, int64 LastOffset, int8 DeliveryState, int16 DeliveryCount, no tagged field (00)
    tagged fields: none (00), or only DeliveryCompleteCount (01 00 04 + int32, KIP-1226; -1 without it)

A value is taken only when these bytes read it exactly; every other row (the 4.0 preview layouts,
unknown tags, longer varints, trailing or missing bytes, bad keys) goes to the generic reader
(`offset_audit.decoding.share_records`), which knows every layout and gives the exact quarantine reason. Keys
repeat for every record of a share-partition, so each distinct key is read once, by the generic reader.
Both readers are held to the same vectors in tests/vectors/share_state.json.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.decoding.decoder import COPY_SKIPS, claim
from offset_audit.decoding.fast_commits import BinaryColumn, be_ints, byte_windows, read_ints
from offset_audit.decoding.records import QUARANTINE, SHARE_STATE
from offset_audit.decoding.report import CountKey
from offset_audit.decoding.share_records import (
    NO_DELIVERY_COMPLETE_COUNT,
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    decode_share_state_record,
)
from offset_audit.inputs.copies import COPY_STATE
from offset_audit.layouts.codec import RecordCodec

SKIPPED = "skipped"
# Record kinds as numbers in the columns.
SNAPSHOT, UPDATE, TOMBSTONE = 0, 1, 2
KIND_CODES = {"snapshot": SNAPSHOT, "update": UPDATE, "tombstone": TOMBSTONE}
_BATCH_BYTES = 20  # FirstOffset 8, LastOffset 8, DeliveryState 1, DeliveryCount 2, tagged fields 1
_ARRAY_AT = {SHARE_SNAPSHOT: 38, SHARE_UPDATE: 18}  # where StateBatches starts in each value
_MAX_KEYS = 100_000  # distinct keys remembered per task (a dump holds one or two per share-partition)
UNKNOWN = -1  # a source partition or offset the input did not give

# Per-record columns of ShareColumns, all int64.
RECORD_FIELDS = (
    "share_partition",
    "source_partition",
    "source_offset",
    "kind",
    "snapshot_epoch",
    "state_epoch",
    "leader_epoch",
    "start_offset",
    "create_timestamp",
    "write_timestamp",
    "delivery_complete_count",
)
BATCH_FIELDS = ("first_offset", "last_offset", "delivery_state", "delivery_count")


@dataclass
class ShareColumns:
    """Decoded share-state records of one task as columns.

    `share_partition` indexes `share_partitions` ((group id, topic id, partition), as the keys read);
    record i's batches are rows batch_start[i]:batch_start[i + 1] of the batch columns. Timestamps a
    layout does not have (4.0) are 0, which the replay shows the same way (not recorded).
    """

    share_partitions: list[tuple[str, str, int]]
    records: dict[str, np.ndarray]
    batch_start: np.ndarray
    batches: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.records["source_offset"])


@dataclass
class _Pieces:
    """What a task gathers batch by batch before it is one ShareColumns."""

    records: list[dict[str, np.ndarray]] = field(default_factory=list)
    batch_counts: list[np.ndarray] = field(default_factory=list)
    batches: list[dict[str, np.ndarray]] = field(default_factory=list)


class ShareStateReader:
    """Reads the raw-record batches of one task into ShareColumns, quarantine rows and record counts
    (keyed by CountKey)."""

    def __init__(self, codec: RecordCodec, use_fast_path: bool = True) -> None:
        self.codec = codec
        self.use_fast_path = use_fast_path
        self.share_partitions: list[tuple[str, str, int]] = []
        self._ids: dict[tuple[str, str, int], int] = {}
        self._keys: dict[bytes, tuple[int, int] | None] = {}  # key -> (record type, share-partition id)
        self._generic_keys: dict = {}  # the generic reader's own cache of decoded keys
        self._pieces = _Pieces()
        self.quarantine: list[dict[str, Any]] = []
        self.counts: Counter = Counter()
        # The era of the layouts the fast path reads: the newest of each record type.
        self._fast_era = {t: codec.layouts[t].values[0].era for t in _ARRAY_AT if t in codec.layouts}

    def _share_partition(self, fields: dict[str, Any]) -> int:
        name = (fields["GroupId"], fields["TopicId"], int(fields["Partition"]))
        found = self._ids.get(name)
        if found is None:
            found = self._ids[name] = len(self.share_partitions)
            self.share_partitions.append(name)
        return found

    def _key(self, key: bytes) -> tuple[int, int] | None:
        """(record type, share-partition id) of a key the fast path may take; None sends its rows to the
        generic reader (unreadable keys, other record types)."""
        if key in self._keys:
            return self._keys[key]
        if len(self._keys) > _MAX_KEYS:
            self._keys.clear()
        try:
            record_type, fields = self.codec.decode_key(key)
        except Exception:  # any unreadable key: the generic reader gives its rows their exact reason
            read = None
        else:
            read = (record_type, self._share_partition(fields)) if record_type in _ARRAY_AT else None
        self._keys[key] = read
        return read

    def add(self, batch: pa.RecordBatch) -> None:
        """Read one raw-record batch (the columns `offset_audit.decoding.decoder.for_decode` gives)."""
        n = batch.num_rows
        names = batch.schema.names
        other = batch.column("other_topic").to_numpy(zero_copy_only=False).astype(bool)
        if "transaction" in names:
            # The share coordinator writes no transactions, but a marker must never be read as a state record.
            marker = pc.fill_null(pc.is_in(batch.column("transaction"), pa.array(["marker", "aborted"])), False)
            other |= marker.to_numpy(zero_copy_only=False)
        self.counts[CountKey(SKIPPED)] += int(other.sum())
        pending = ~other
        if COPY_STATE in names:
            for skipped, n in claim(batch.column(COPY_STATE), COPY_SKIPS, pending).items():
                self.counts[CountKey(skipped)] += n
        if "source_error" in names:
            failed = batch.column("source_error").is_valid().to_numpy(zero_copy_only=False) & pending
            self._quarantine_read_errors(batch, failed)
            pending &= ~failed
        keys = batch.column("key")
        encoded = pc.dictionary_encode(keys)
        distinct = [self._key(k) if k is not None else None for k in encoded.dictionary.to_pylist()]
        index = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        key_type = np.array([-1 if d is None else d[0] for d in distinct] + [-1], np.int64)[index]
        key_share = np.array([-1 if d is None else d[1] for d in distinct] + [-1], np.int64)[index]
        fast = pending & (key_type >= 0)
        if not self.use_fast_path:
            fast[:] = False
        taken = np.zeros(n, bool)
        if fast.any():
            taken = self._read_fast(batch, fast, key_type, key_share)
        generic = pending & ~taken
        if generic.any():
            self._read_generic(batch, np.flatnonzero(generic))

    def _quarantine_read_errors(self, batch: pa.RecordBatch, failed: np.ndarray) -> None:
        """A log reader's error rows: quarantined with its reason, never decoded."""
        names = batch.schema.names
        skipped = batch.column("skipped_bytes") if "skipped_bytes" in names else pa.nulls(batch.num_rows, pa.int64())
        for i in np.flatnonzero(failed).tolist():
            self.quarantine.append(
                {
                    **_coordinates(batch, i),
                    "reason": batch.column("source_error")[i].as_py(),
                    "key": batch.column("key")[i].as_py(),
                    "value": batch.column("value")[i].as_py(),
                    "skipped_bytes": skipped[i].as_py(),
                }
            )
        self.counts[CountKey(QUARANTINE)] += int(failed.sum())

    def _read_fast(
        self, batch: pa.RecordBatch, candidates: np.ndarray, key_type: np.ndarray, key_share: np.ndarray
    ) -> np.ndarray:
        """Decode the candidate rows whose values read exactly in the 4.1+ layouts; the rows taken."""
        values = BinaryColumn.of(batch.column("value"))
        data = values.data
        tombstone = values.is_null
        snapshot = key_type == SHARE_SNAPSHOT
        array_at = np.where(snapshot, _ARRAY_AT[SHARE_SNAPSHOT], _ARRAY_AT[SHARE_UPDATE])
        head = byte_windows(data, values.starts, 30)  # byte_windows reads at most fast_commits._PAD bytes
        ok = candidates & (tombstone | ((values.lengths >= 2) & (be_ints(head, 0, 2) == 0)))
        # The StateBatches length: a compact varint of one byte (< 127 batches) or two.
        length_at = values.starts + array_at
        varint = byte_windows(data, length_at, 2).astype(np.int64)
        two_bytes = (varint[:, 0] & 0x80) != 0
        compact = np.where(two_bytes, (varint[:, 0] & 0x7F) | (varint[:, 1] << 7), varint[:, 0])
        ok &= tombstone | ((~two_bytes | ((varint[:, 1] & 0x80) == 0)) & (compact >= 1))
        count = np.where(ok & ~tombstone, compact - 1, 0)
        batches_at = length_at + np.where(two_bytes, 2, 1)
        tail_at = batches_at + _BATCH_BYTES * count
        tail = byte_windows(data, tail_at, 7)
        no_tags = tail[:, 0] == 0
        completed_count = (tail[:, 0] == 1) & (tail[:, 1] == 0) & (tail[:, 2] == 4)  # tag 0, 4 bytes
        ok &= tombstone | ((no_tags | completed_count) & (tail_at + np.where(no_tags, 1, 7) == values.ends))
        # Each batch: the 20 bytes at batches_at + 20 j, with no tagged field of its own.
        count = np.where(ok & ~tombstone, count, 0)
        owner = np.repeat(np.arange(len(count)), count)
        first_of_row = np.cumsum(count) - count
        element_at = batches_at[owner] + _BATCH_BYTES * (np.arange(len(owner)) - first_of_row[owner])
        element = byte_windows(data, element_at, _BATCH_BYTES)
        tagged = element[:, 19] != 0
        if tagged.any():
            ok[np.unique(owner[tagged])] = False
            keep = ok[owner]
            owner, element = owner[keep], element[keep]
            count = np.where(ok & ~tombstone, count, 0)
        rows = np.flatnonzero(ok)
        live = ~tombstone[rows]
        snap = snapshot[rows]
        head = head[rows]
        completed = np.where(completed_count[rows], be_ints(tail[rows], 3, 4), NO_DELIVERY_COMPLETE_COUNT)
        self._pieces.records.append(
            {
                "share_partition": key_share[rows],
                "source_partition": _int_column(batch, "source_partition", rows),
                "source_offset": _int_column(batch, "source_offset", rows),
                "kind": np.where(live, np.where(snap, SNAPSHOT, UPDATE), TOMBSTONE),
                "snapshot_epoch": np.where(live, be_ints(head, 2, 4), 0),
                "state_epoch": np.where(live & snap, be_ints(head, 6, 4), 0),
                "leader_epoch": np.where(live, np.where(snap, be_ints(head, 10, 4), be_ints(head, 6, 4)), 0),
                "start_offset": np.where(live, np.where(snap, be_ints(head, 14, 8), be_ints(head, 10, 8)), 0),
                "create_timestamp": np.where(live & snap, be_ints(head, 22, 8), 0),
                "write_timestamp": np.where(live & snap, read_ints(data, values.starts[rows] + 30, 8), 0),
                "delivery_complete_count": np.where(live, completed, NO_DELIVERY_COMPLETE_COUNT),
            }
        )
        self._pieces.batch_counts.append(count[rows])
        self._pieces.batches.append(
            {
                "first_offset": be_ints(element, 0, 8),
                "last_offset": be_ints(element, 8, 8),
                "delivery_state": element[:, 16].view(np.int8).astype(np.int64),
                "delivery_count": be_ints(element, 17, 2),
            }
        )
        for record_type, era in self._fast_era.items():
            of_type = key_type[rows] == record_type
            for is_tombstone in (False, True):
                n = int((of_type & (~live if is_tombstone else live)).sum())
                if n:
                    layout: tuple[int | None, str | None] = (None, None) if is_tombstone else (0, era)
                    self.counts[CountKey(SHARE_STATE, record_type, *layout, is_tombstone)] += n
        return ok

    def _read_generic(self, batch: pa.RecordBatch, rows: np.ndarray) -> None:
        keys = batch.column("key")
        values = batch.column("value")
        read: list[dict[str, Any]] = []
        for i in rows.tolist():
            decoded = decode_share_state_record(self.codec, keys[i].as_py(), values[i].as_py(), self._generic_keys)
            if len(self._generic_keys) > _MAX_KEYS:
                self._generic_keys.clear()
            if decoded["record_class"] == QUARANTINE:
                self.quarantine.append({**_coordinates(batch, i), **decoded, "skipped_bytes": None})
                unread = (decoded["record_type"], decoded["value_version"], None, decoded["is_tombstone"])
                self.counts[CountKey(QUARANTINE, *unread)] += 1
                continue
            read.append({**_coordinates(batch, i), **decoded})
            key = (decoded["record_type"], decoded.get("value_version"), decoded.get("layout_era"))
            self.counts[CountKey(SHARE_STATE, *key, decoded["is_tombstone"])] += 1
        if read:
            self._add_rows(read)

    def _add_rows(self, rows: list[dict[str, Any]]) -> None:
        """Rows the generic reader decoded, into the same columns."""
        names = ({"GroupId": r["group_id"], "TopicId": r["topic_id"], "Partition": r["partition"]} for r in rows)
        ids = [self._share_partition(name) for name in names]
        records = {
            "share_partition": np.array(ids, np.int64),
            "source_partition": np.array([_known(r["source_partition"]) for r in rows], np.int64),
            "source_offset": np.array([_known(r["source_offset"]) for r in rows], np.int64),
            "kind": np.array([KIND_CODES[r["kind"]] for r in rows], np.int64),
        }
        for name in RECORD_FIELDS[4:]:
            absent = NO_DELIVERY_COMPLETE_COUNT if name == "delivery_complete_count" else 0
            records[name] = np.array([absent if r.get(name) is None else r[name] for r in rows], np.int64)
        batches = [b for r in rows for b in r.get("state_batches") or ()]
        self._pieces.records.append(records)
        self._pieces.batch_counts.append(np.array([len(r.get("state_batches") or ()) for r in rows], np.int64))
        self._pieces.batches.append({name: np.array([b[name] for b in batches], np.int64) for name in BATCH_FIELDS})

    def columns(self) -> ShareColumns:
        """Everything read so far, as one ShareColumns."""
        pieces = self._pieces
        if pieces.records:
            records = {name: np.concatenate([p[name] for p in pieces.records]) for name in RECORD_FIELDS}
            batches = {name: np.concatenate([p[name] for p in pieces.batches]) for name in BATCH_FIELDS}
            counts = np.concatenate(pieces.batch_counts)
        else:
            records = {name: np.empty(0, np.int64) for name in RECORD_FIELDS}
            batches = {name: np.empty(0, np.int64) for name in BATCH_FIELDS}
            counts = np.empty(0, np.int64)
        batch_start = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=batch_start[1:])
        return ShareColumns(list(self.share_partitions), records, batch_start, batches)


def _known(coordinate: int | None) -> int:
    """A source coordinate as a column value: -1 where the input had none (Kafka's are never negative)."""
    return UNKNOWN if coordinate is None else coordinate


def _int_column(batch: pa.RecordBatch, name: str, rows: np.ndarray) -> np.ndarray:
    column = batch.column(name).fill_null(UNKNOWN)
    return column.to_numpy(zero_copy_only=False).astype(np.int64)[rows]


def _coordinates(batch: pa.RecordBatch, i: int) -> dict[str, Any]:
    names = ("source_partition", "source_offset", "record_timestamp_ms")
    return {name: batch.column(name)[i].as_py() for name in names}
