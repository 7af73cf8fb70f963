"""Vectorised decoding of offset commits, the records that make up nearly all of a dump.

It reads whole Arrow columns of keys and values with numpy instead of one record at a time, for the
layouts the broker actually writes: OffsetCommitKey (types 0 and 1) and OffsetCommitValue v0-v4 with
one- or two-byte compact metadata lengths and either no tagged field or only the topicId tag. Every row
it is not certain about (any other layout, longer varints, unknown tags, trailing bytes, strings that
are not valid UTF-8, truncation) is left to the generic reader in `offset_audit.decoding.records`,
which knows every layout and gives exact quarantine reasons. Both are tested on the same vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.lib.stride_tricks import sliding_window_view

from offset_audit import constants as K

_PAD = 32  # reads near the end of a buffer stay in bounds; rows that needed them are rejected anyway
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_UUID_DASHES = (8, 12, 16, 20)
_ZERO_UUID = "00000000-0000-0000-0000-000000000000"


@dataclass
class BinaryColumn:
    """A binary Arrow column as numpy: start/end byte offsets per row, the bytes, and nulls."""

    starts: np.ndarray
    ends: np.ndarray
    data: np.ndarray
    is_null: np.ndarray

    @staticmethod
    def of(array: pa.Array) -> BinaryColumn:
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        n = len(array)
        large = pa.types.is_large_binary(array.type) or pa.types.is_large_string(array.type)
        offset_type = np.int64 if large else np.int32
        buffers = array.buffers()
        offsets = np.frombuffer(buffers[1], dtype=offset_type)[array.offset : array.offset + n + 1]
        offsets = offsets.astype(np.int64)
        data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.empty(0, np.uint8)
        data = np.concatenate([data, np.zeros(_PAD, np.uint8)])
        is_null = array.is_null().to_numpy(zero_copy_only=False)
        return BinaryColumn(offsets[:-1], offsets[1:], data, is_null)

    @property
    def lengths(self) -> np.ndarray:
        return np.where(self.is_null, -1, self.ends - self.starts)


def key_types(keys: pa.Array) -> np.ndarray:
    """The record type (the key's int16 version) of every key; -1 for null or shorter keys."""
    column = BinaryColumn.of(keys)
    return np.where(column.lengths >= 2, read_ints(column.data, column.starts, 2), -1)


def read_ints(data: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """Big-endian signed integers of `width` bytes at each position (positions clamped in bounds)."""
    return be_ints(byte_windows(data, pos, width), 0, width)


def byte_windows(data: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """The `width` bytes at each position as one (rows, width) matrix (positions clamped in bounds)."""
    pos = np.clip(pos, 0, len(data) - _PAD)
    return sliding_window_view(data, width)[pos]


def be_ints(window: np.ndarray, start: int, width: int) -> np.ndarray:
    """Big-endian signed integers from columns start:start+width of a window matrix."""
    return np.ascontiguousarray(window[:, start : start + width]).view(f">i{width}").ravel().astype(np.int64)


def _gather_strings(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """Build a UTF-8 Arrow array from byte ranges; also return which rows have non-ASCII bytes."""
    lengths = lengths.astype(np.int64)
    offsets = np.zeros(len(starts) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    if total:
        index = np.repeat(starts - offsets[:-1], lengths) + np.arange(total)
        gathered = data[index]
    else:
        gathered = np.empty(0, np.uint8)
    high = gathered >= 0x80
    non_ascii = np.zeros(len(starts), bool)
    if high.any():
        rows = np.repeat(np.arange(len(starts)), lengths)
        non_ascii[np.unique(rows[high])] = True
    if total > np.iinfo(np.int32).max:
        array = pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(offsets), pa.py_buffer(gathered))
    else:
        array = pa.StringArray.from_buffers(len(starts), pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(gathered))
    return array, non_ascii


def _uuid_strings(data: np.ndarray, starts: np.ndarray) -> pa.Array:
    raw = byte_windows(data, starts, 16)
    hexed = np.empty((len(starts), 32), np.uint8)
    hexed[:, 0::2] = _HEX[raw >> 4]
    hexed[:, 1::2] = _HEX[raw & 0x0F]
    parts = np.split(hexed, _UUID_DASHES, axis=1)
    dash = np.full((len(starts), 1), ord("-"), np.uint8)
    text = np.concatenate([parts[0], dash, parts[1], dash, parts[2], dash, parts[3], dash, parts[4]], axis=1)
    offsets = (np.arange(len(starts) + 1) * 36).astype(np.int32)
    return pa.StringArray.from_buffers(len(starts), pa.py_buffer(offsets), pa.py_buffer(text.ravel()))


@dataclass
class FastCommits:
    """Decoded offset commits for the rows in `rows` (indexes into the batch)."""

    rows: np.ndarray
    columns: dict[str, pa.Array]


def _valid_utf8(data: np.ndarray, start: int, length: int) -> bool:
    try:
        data[start : start + length].tobytes().decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


@dataclass
class _CommitKeys:
    """OffsetCommitKey fields of each distinct key in a batch (a dump commits the same keys over and
    over, so keys are decoded once per batch, not once per record)."""

    ok: np.ndarray
    key_type: np.ndarray
    partition: np.ndarray
    groups: pa.Array
    topics: pa.Array


def _decode_keys(keys: BinaryColumn) -> _CommitKeys:
    klen = keys.lengths
    key_type = np.where(klen >= 2, read_ints(keys.data, keys.starts, 2), -1)
    ok = (klen >= 10) & ((key_type == K.LEGACY_OFFSET_COMMIT) | (key_type == K.OFFSET_COMMIT))
    # OffsetCommitKey: int16 type, string group, string topic, int32 partition (never flexible).
    group_len = read_ints(keys.data, keys.starts + 2, 2)
    topic_pos = keys.starts + 4 + group_len
    topic_len = read_ints(keys.data, topic_pos, 2)
    ok &= (group_len >= 0) & (topic_len >= 0) & (10 + group_len + topic_len == klen)
    partition = read_ints(keys.data, topic_pos + 2 + topic_len, 4)
    group_len = np.where(ok, group_len, 0)
    topic_len = np.where(ok, topic_len, 0)
    groups, group_high = _gather_strings(keys.data, keys.starts + 4, group_len)
    topics, topic_high = _gather_strings(keys.data, topic_pos + 2, topic_len)
    for i in np.flatnonzero(group_high | topic_high):
        # Non-ASCII is fine when it is valid UTF-8; otherwise the generic reader replaces bad bytes as Java does.
        if not (
            _valid_utf8(keys.data, keys.starts[i] + 4, group_len[i])
            and _valid_utf8(keys.data, topic_pos[i] + 2, topic_len[i])
        ):
            ok[i] = False
    return _CommitKeys(ok, key_type, partition, groups, topics)


def decode_offset_commits(keys: pa.Array, values: pa.Array, allowed: np.ndarray | None = None) -> FastCommits:
    """Decode the rows (among `allowed`) that are certainly well-formed offset commits; the caller
    sends the rest to the generic reader."""
    encoded = pc.dictionary_encode(keys)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    distinct = _decode_keys(BinaryColumn.of(encoded.dictionary))
    has_key = encoded.indices.is_valid().to_numpy(zero_copy_only=False)
    key_index = encoded.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    if len(distinct.ok) == 0:
        key_index = np.zeros(len(keys), np.int64)
        distinct.ok = np.zeros(1, bool)
    ok = has_key & distinct.ok[key_index]
    if allowed is not None:
        ok &= allowed

    # OffsetCommitValue v0-v4 (reference 2.3).
    values = BinaryColumn.of(values)
    vdata = values.data
    tombstone = values.is_null
    vlen = values.lengths
    live = ~tombstone
    # Two gathers per batch: the fixed head of every value, then its tail after the metadata string.
    # head: version(0:2) offset(2:10), then v0-v2: metadata length (10:12); v3: leaderEpoch (10:14) and
    # metadata length (14:16); v4: leaderEpoch (10:14) and a compact length varint (14, 15).
    head = byte_windows(vdata, values.starts, 16)
    version = np.where(vlen >= 2, be_ints(head, 0, 2), -1)
    ok &= tombstone | ((version >= 0) & (version <= 4))
    offset = be_ints(head, 2, 8)
    has_epoch = version >= 3
    leader_epoch = np.where(has_epoch, be_ints(head, 10, 4), -1)
    flexible = version == 4
    # Compact length of metadata: a varint of one byte (< 127 bytes of metadata) or two (< 16383 bytes,
    # e.g. JSON checkpoints); longer varints are left to the generic reader.
    first = head[:, 14].astype(np.int64)
    second = head[:, 15].astype(np.int64)
    two_bytes = (first & 0x80) != 0
    compact_len = np.where(two_bytes, (first & 0x7F) | (second << 7), first)
    ok &= ~(live & flexible) | (~two_bytes | ((second & 0x80) == 0)) & (compact_len >= 1)
    meta_len = np.where(flexible, compact_len - 1, np.where(has_epoch, be_ints(head, 14, 2), be_ints(head, 10, 2)))
    meta_start = values.starts + np.where(flexible, np.where(two_bytes, 16, 15), np.where(has_epoch, 16, 12))
    ok &= tombstone | (meta_len >= 0)
    # tail: commitTimestamp (0:8), then v1: expireTimestamp (8:16); v4: tagged fields, none (8: 00) or
    # only topicId (8: 01, 9: tag 00, 10: size 10, 11:27 the uuid).
    pos = meta_start + np.maximum(meta_len, 0)
    tail = byte_windows(vdata, pos, 27)
    commit_ts = be_ints(tail, 0, 8)
    has_expire = version == 1
    expire_ts = np.where(has_expire, be_ints(tail, 8, 8), -1)
    tag_count = np.where(flexible, tail[:, 8], 0)
    has_topic_id = flexible & (tag_count == 1) & (be_ints(tail, 9, 2) == 0x0010)
    ok &= ~(live & flexible) | (tag_count == 0) | has_topic_id
    pos = pos + 8 + 8 * has_expire + np.where(flexible, 1, 0) + np.where(has_topic_id, 18, 0)
    ok &= tombstone | (pos == values.ends)

    rows = np.flatnonzero(ok)
    live_rows = live[rows]
    metadata, meta_high = _gather_strings(vdata, meta_start[rows], np.where(live_rows, meta_len[rows], 0))
    bad = [i for i in np.flatnonzero(meta_high) if not _valid_utf8(vdata, meta_start[rows[i]], meta_len[rows[i]])]
    if bad:
        keep = np.ones(len(rows), bool)
        keep[bad] = False
        rows, live_rows, metadata = rows[keep], live_rows[keep], metadata.filter(pa.array(keep))
    row_keys = pa.array(key_index[rows])

    def live_only(values_: np.ndarray, type_: pa.DataType, sentinel: int | None = None) -> pa.Array:
        mask = ~live_rows
        if sentinel is not None:
            mask = mask | (values_ == sentinel)
        return pa.array(values_, type=type_, mask=mask)

    topic_ids = pa.nulls(len(rows), pa.string())
    with_id = has_topic_id[rows]
    if with_id.any():
        ids = _uuid_strings(vdata, pos[rows][with_id] - 16)
        # Kafka writes no topicId when it is ZERO_UUID; a written zero means the same: unknown.
        ids = pc.if_else(pc.equal(ids, _ZERO_UUID), pa.scalar(None, pa.string()), ids)
        index = np.cumsum(with_id) - 1
        topic_ids = ids.take(pa.array(np.maximum(index, 0), mask=~with_id))

    columns = {
        "key_type": pa.array(distinct.key_type[key_index[rows]], pa.int16()),
        "group_id": distinct.groups.take(row_keys),
        "topic": distinct.topics.take(row_keys),
        "partition": pa.array(distinct.partition[key_index[rows]], pa.int32()),
        "is_tombstone": pa.array(tombstone[rows], pa.bool_()),
        "value_version": live_only(version[rows], pa.int16()),
        "committed_offset": live_only(offset[rows], pa.int64()),
        "leader_epoch": live_only(leader_epoch[rows], pa.int32(), sentinel=-1),
        "metadata": pc.if_else(pa.array(live_rows), metadata, pa.scalar(None, pa.string())),
        "commit_timestamp_ms": live_only(commit_ts[rows], pa.int64()),
        "expire_timestamp_ms": live_only(expire_ts[rows], pa.int64(), sentinel=-1),
        "topic_id": topic_ids,
    }
    return FastCommits(rows, columns)
