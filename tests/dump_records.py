"""Records of __consumer_offsets written one by one for tests (commits, tombstones, classic and KIP-848
group records, each at a day after T0), and the Kafka-source snapshot that holds them in log order."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa

from offset_audit import constants as K
from offset_audit.generator.writers import SNAPSHOT_SCHEMA
from offset_audit.layouts.encoder import encode_consumer_protocol, encode_key, encode_value
from offset_audit.layouts.spec import record_layouts

LAYOUTS = record_layouts()
DAY = 86_400_000
T0 = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1000)


def commit(group, topic, partition, offset, day, version=3):
    key = encode_key(LAYOUTS[K.OFFSET_COMMIT], {"group": group, "topic": topic, "partition": partition})
    value = encode_value(
        LAYOUTS[K.OFFSET_COMMIT],
        version,
        {"offset": offset, "leaderEpoch": 1, "metadata": "", "commitTimestamp": T0 + day * DAY, "expireTimestamp": -1},
    )
    return key, value, T0 + day * DAY


def offset_tombstone(group, topic, partition, day):
    return (
        encode_key(LAYOUTS[K.OFFSET_COMMIT], {"group": group, "topic": topic, "partition": partition}),
        None,
        T0 + day * DAY,
    )


def group_record(group, day, members=(), version=3, protocol_type="consumer", state_day=None):
    def subscription(topics):
        return encode_consumer_protocol(
            "consumer_protocol_subscription", 1, {"Topics": list(topics), "UserData": None, "OwnedPartitions": []}
        )

    value = {
        "protocolType": protocol_type,
        "generation": 4,
        "protocol": "range" if members else None,
        "leader": "m0" if members else None,
        "currentStateTimestamp": T0 + (state_day if state_day is not None else day) * DAY,
        "members": [
            {
                "memberId": f"m{i}",
                "groupInstanceId": None,
                "clientId": "c",
                "clientHost": "/h",
                "rebalanceTimeout": 1000,
                "sessionTimeout": 1000,
                "subscription": subscription(topics),
                "assignment": b"",
            }
            for i, topics in enumerate(members)
        ],
    }
    return (
        encode_key(LAYOUTS[K.GROUP_METADATA], {"group": group}),
        encode_value(LAYOUTS[K.GROUP_METADATA], version, value),
        T0 + day * DAY,
    )


def group_tombstone(group, day):
    return encode_key(LAYOUTS[K.GROUP_METADATA], {"group": group}), None, T0 + day * DAY


def modern(record_type, key, value, day):
    layout = LAYOUTS[record_type]
    return encode_key(layout, key), (None if value is None else encode_value(layout, 0, value)), T0 + day * DAY


def snapshot_table(records) -> pa.Table:
    """(key, value, timestamp ms) records as a Kafka-source snapshot of partition 0, offsets in order."""
    keys, values, stamps = zip(*records, strict=True)
    return pa.table(
        {
            "key": pa.array(keys, pa.binary()),
            "value": pa.array(values, pa.binary()),
            "topic": [K.OFFSETS_TOPIC] * len(keys),
            "partition": pa.array([0] * len(keys), pa.int32()),
            "offset": pa.array(range(len(keys)), pa.int64()),
            "timestamp": pa.array([s * 1000 for s in stamps], pa.timestamp("us", tz="UTC")),
            "timestampType": pa.array([0] * len(keys), pa.int32()),
        },
        schema=SNAPSHOT_SCHEMA,
    )
