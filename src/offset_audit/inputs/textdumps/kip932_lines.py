"""The KIP-932 draft's share-state records as JSON lines (`--input-format kip932-json`): one row per
non-blank line, its share-partition read out so Spark can group by it. A line that is not a JSON object
with GroupId, topic and partition keeps its text and an error, to be quarantined with its file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pyarrow as pa

from offset_audit.storage import LOCAL, Storage

KIP932_LINES_TYPE = (
    "struct<source_file:string,line:bigint,group_id:string,topic:string,partition:int,offset:bigint,"
    "text:string,error:string>"
)
KIP932_LINES_ARROW = pa.schema(
    [
        ("source_file", pa.string()),
        ("line", pa.int64()),
        ("group_id", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("text", pa.string()),
        ("error", pa.string()),
    ]
)


def kip932_batch(path: str, storage: Storage = LOCAL) -> pa.RecordBatch:
    """The rows of one file as one batch (KIP932_LINES_ARROW)."""
    columns = list(zip(*read_kip932_lines(path, storage), strict=True)) or [()] * len(KIP932_LINES_ARROW)
    return pa.RecordBatch.from_arrays(
        [pa.array(column, field.type) for column, field in zip(columns, KIP932_LINES_ARROW, strict=True)],
        schema=KIP932_LINES_ARROW,
    )


def read_kip932_lines(path: str, storage: Storage = LOCAL) -> Iterator[tuple]:
    """The rows of one file, in the fields of KIP932_LINES_TYPE."""
    with storage.open_text(path, errors="replace") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            line = text.rstrip("\n")
            try:
                item = json.loads(text)
            except json.JSONDecodeError as err:
                yield (path, number, None, None, None, None, line, f"not JSON: {err}")
                continue
            if not isinstance(item, dict):
                yield (path, number, None, None, None, None, line, "not a JSON object")
                continue
            group, topic, partition = item.get("GroupId"), item.get("topic"), item.get("partition")
            if not (isinstance(group, str) and isinstance(topic, str) and type(partition) is int):
                reason = "needs a string GroupId and topic and an integer partition"
                yield (path, number, None, None, None, None, line, reason)
                continue
            offset = item.get("offset") if type(item.get("offset")) is int else None
            yield (path, number, group, topic, partition, offset, line, None)
