"""One `__share_group_state` record (ShareSnapshot 0, ShareUpdate 1) to its row, never raising.

Same framing as `__consumer_offsets` (int16 type, key struct; int16 version, value struct), read with
the layouts in schemas/share_state/ (4.0 and 4.1+ eras: the 4.0 preview layouts are not wire-compatible
with 4.1, and each era is tried, newest first). A record that reads in no era, or of a type the topic
never held, is quarantined with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from offset_audit.decoding.records import QUARANTINE, SHARE_STATE
from offset_audit.layouts.codec import RecordCodec, UnknownRecordType, record_type_of
from offset_audit.layouts.wire import DecodeError

# Record types of __share_group_state (the key's int16), and the replay's name for each record.
SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1
# The replay's name for each record kind; a tombstone is a ShareSnapshot key with a null value.
SNAPSHOT = "snapshot"
UPDATE = "update"
TOMBSTONE = "tombstone"
# DeliveryCompleteCount (KIP-1226, written from Kafka 4.2) when a record has none: the tag's default.
# Unlike the start offset, an update's -1 is not "not updated": the merge copies it as it is.
NO_DELIVERY_COMPLETE_COUNT = -1
KINDS = {SHARE_SNAPSHOT: SNAPSHOT, SHARE_UPDATE: UPDATE}


@dataclass(frozen=True)
class StateBatch:
    """A run of offsets sharing one delivery state and count (PersisterStateBatch): what a record's
    StateBatches hold, which the share coordinator replays and the group coordinator's share limits count."""

    first_offset: int
    last_offset: int
    state: int
    delivery_count: int

    @property
    def record_count(self) -> int:
        return self.last_offset - self.first_offset + 1


def _batches(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "first_offset": b["FirstOffset"],
            "last_offset": b["LastOffset"],
            "delivery_state": b["DeliveryState"],
            "delivery_count": b["DeliveryCount"],
        }
        for b in items
    ]


def decode_share_state_record(
    codec: RecordCodec, key: bytes | None, value: bytes | None, keys: dict | None = None
) -> dict[str, Any]:
    """{"record_class": "share_state", ...row} or {"record_class": "quarantine", ...reason}.

    `keys` caches decoded keys: a dump repeats each share-partition's key for every update.
    """
    record_type: int | None = None
    value_version: int | None = None
    try:
        record_type = record_type_of(key)
        if value is not None and len(value) >= 2:
            value_version = int.from_bytes(value[:2], "big", signed=True)
        cached = None if keys is None else keys.get(key)
        if cached is None:
            cached = codec.decode_key(key)
            if keys is not None:
                keys[key] = cached
        record_type, fields = cached
        decoded = None if value is None else codec.decode_value(record_type, value)
    except UnknownRecordType:
        reason = f"record type {record_type} is not a __share_group_state record (0 ShareSnapshot, 1 ShareUpdate)"
        return _quarantined(record_type, value_version, reason, key, value)
    except DecodeError as err:
        return _quarantined(record_type, value_version, str(err), key, value)
    row: dict[str, Any] = {
        "record_class": SHARE_STATE,
        "record_type": record_type,
        "kind": TOMBSTONE if decoded is None else KINDS[record_type],
        "group_id": fields["GroupId"],
        "topic_id": fields["TopicId"],
        "partition": fields["Partition"],
        "is_tombstone": decoded is None,
    }
    if decoded is None:
        return row
    f = decoded.fields
    return row | {
        "value_version": decoded.version,
        "layout_era": decoded.era,
        "snapshot_epoch": f["SnapshotEpoch"],
        "state_epoch": f.get("StateEpoch"),
        "leader_epoch": f["LeaderEpoch"],
        "start_offset": f["StartOffset"],
        # -1 (the tag's default: absent, or a 4.1 writer) is kept: an update's -1 replaces the count.
        "delivery_complete_count": f.get("DeliveryCompleteCount", -1),
        "create_timestamp": f.get("CreateTimestamp"),
        "write_timestamp": f.get("WriteTimestamp"),
        "state_batches": _batches(f["StateBatches"]),
    }


def _quarantined(
    record_type: int | None, value_version: int | None, reason: str, key: bytes | None, value: bytes | None
) -> dict[str, Any]:
    return {
        "record_class": QUARANTINE,
        "record_type": record_type,
        "value_version": value_version,
        "is_tombstone": value is None,
        "reason": reason,
        "key": key,
        "value": value,
    }
