"""`kafka-console-consumer.sh --topic __consumer_offsets --formatter ...` output back to records
(reference 6.2).

Two families of formatter exist:

- the Scala ones (up to 3.9, `kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter`
  and `$GroupMetadataMessageFormatter`): one line per record, the toString of the loaded objects:
  `[g,t,p]::OffsetAndMetadata(...)`, `[g,t,p]::NULL`, `g::GroupMetadata(...)`, `g::NULL`;
- the Java ones (3.9+, `org.apache.kafka.tools.consumer.OffsetsMessageFormatter` and
  `GroupMetadataMessageFormatter`): one JSON object per record, `{"key":{"version"|"type":T,"data":..},
  "value":{"version":V,"data":..}|null}`, written with no separator between records (`json_stream`).

No formatter prints the record's partition, offset, timestamp or batch (producer, transaction), so
source_offset is the record's ordinal in the file, source_partition the `partition` argument, and
record_timestamp_ms null. A console consumer reads read_uncommitted by default, so a commit of an aborted
transaction looks like any other commit here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, TextIO

import pyarrow as pa

from offset_audit import constants as K
from offset_audit.inputs.textdumps import json_stream, reencode
from offset_audit.inputs.textdumps.text_rows import Row, batches, checked, join_notes
from offset_audit.storage import LOCAL, Storage

NOTE_CONSOLE = "console formatter: no record timestamp, partition, offset or transaction flags"

NOTE_SCALA_COMMIT = NOTE_CONSOLE + "; value version and key type (0/1) not printed"
"""The Scala offset line prints every OffsetCommitValue field (absent ones as Optional.empty / None),
but not the version. The lowest version holding every printed field is chosen: v3 when a leader epoch
is printed, otherwise v1 (it holds expireTimestamp, printed as Some(ms) or None = -1)."""

NOTE_SCALA_GROUP = (
    NOTE_CONSOLE + "; no currentStateTimestamp (an Empty group's offsets count from their commits), leader, "
    "subscriptions or assignments (members' subscriptions unknown); value version not printed"
)
"""The Scala group line prints the group as loaded: generation, protocol type, members with their ids and
timeouts and the selected protocol, but neither currentStateTimestamp, leader nor the members'
subscription and assignment bytes. The value is rebuilt as v1 (the lowest version with
rebalanceTimeout), v3 when a member has a groupInstanceId, with currentStateTimestamp -1. Subscriptions
are written as empty bytes, which no parser reads: they stay unknown, as in dump_log.NOTE_LEGACY_GROUP."""

_TOPIC = r"[A-Za-z0-9._-]*"
_SCALA_COMMIT = re.compile(
    rf"\[(?P<group>.*?),(?P<topic>{_TOPIC}),(?P<partition>-?\d+)\]::OffsetAndMetadata\(offset=(?P<offset>-?\d+), "
    r"leaderEpoch=(?:Optional\.empty|Optional\[(?P<epoch>-?\d+)\]), metadata=(?P<metadata>.*), "
    r"commitTimestamp=(?P<commit>-?\d+), expireTimestamp=(?:None|Some\((?P<expire>-?\d+)\))\)"
)
_SCALA_COMMIT_TOMBSTONE = re.compile(rf"\[(?P<group>.*?),(?P<topic>{_TOPIC}),(?P<partition>-?\d+)\]::NULL")
_SCALA_GROUP = re.compile(
    r"(?P<prefix>.*?)::GroupMetadata\(groupId=(?P<group>.*?), generation=(?P<generation>-?\d+), "
    r"protocolType=(?:None|Some\((?P<protocol_type>.*?)\)), currentState=(?P<state>\w+), "
    r"members=(?:Hash)?Map\((?P<members>.*)\)\)"
)
_SCALA_GROUP_TOMBSTONE = re.compile(r"(?P<group>.*)::NULL")
_SCALA_MEMBER = re.compile(
    r"(?P<key>.*?) -> MemberMetadata\(memberId=(?P<member_id>.*?), "
    r"groupInstanceId=(?:None|Some\((?P<instance>.*?)\)), clientId=(?P<client_id>.*?), "
    r"clientHost=(?P<client_host>.*?), sessionTimeoutMs=(?P<session>-?\d+), "
    r"rebalanceTimeoutMs=(?P<rebalance>-?\d+), supportedProtocols=List\((?P<protocols>.*?)\)\)(?:, |$)"
)
_TOOL_CHATTER = re.compile(r"Processed a total of \d+ messages")
"""What ConsoleConsumer prints on stderr when it stops; seen in dumps made with 2>&1. Not a record."""


class _TextError(Exception):
    """Text that cannot become a record; the message is the row's source_error."""


def _is_scala_record_line(line: str) -> bool:
    return bool(_SCALA_COMMIT.fullmatch(line) or _SCALA_GROUP.fullmatch(line))


class ConsoleReader:
    """Turns the pieces of one console-consumer dump into rows."""

    def __init__(self, path: str, partition: int | None = None) -> None:
        self.path = path
        self.partition = partition
        self.ordinal = 0
        # Which Scala formatter wrote the file, once a non-tombstone line says so: `[a,b,1]::NULL` is an
        # offset tombstone from the offsets formatter but a group tombstone from the group formatter.
        self.scala_kind: str | None = None

    def rows(self, stream: TextIO) -> Iterator[Row]:
        for piece in json_stream.pieces(stream, _is_scala_record_line):
            try:
                row = self.parse_piece(piece)
            except (_TextError, reencode.ReencodeError) as err:
                row = self.row(piece.line, None, None, error=str(err))
            except UnicodeEncodeError:
                row = self.row(piece.line, None, None, error=f"line {piece.line} holds bytes that are not UTF-8 text")
            if row is not None:
                yield checked(row, f"line {piece.line}")

    def parse_piece(self, piece: json_stream.Piece) -> Row | None:
        if piece.kind == json_stream.JSON_OBJECT:
            return self.json_record(piece.line, piece.value)
        if piece.kind == json_stream.TRUNCATED:
            raise _TextError(f"record at line {piece.line} is cut off at the end of the file: {piece.value[:200]}")
        if piece.kind == json_stream.DAMAGED:
            raise _TextError(f"unreadable JSON at line {piece.line}: {piece.value[:200]}")
        line = piece.value
        if not line.strip() or _TOOL_CHATTER.fullmatch(line.strip()):
            return None
        return self.scala_line(piece.line, line)

    # Java formatters (3.9+) -----------------------------------------------------------------------

    def json_record(self, line: int, record: Any) -> Row:
        if not isinstance(record, dict) or "key" not in record:
            raise _TextError(f"JSON at line {line} is not a formatter record: {str(record)[:200]}")
        key_obj, value_obj = record["key"], record.get("value")
        if key_obj is None:
            raise _TextError(f"record at line {line} has no key (the 3.9 formatter prints such records)")
        if not isinstance(key_obj, dict):
            raise _TextError(f"key at line {line} is not a coordinator key: {str(key_obj)[:200]}")
        # 3.9 labels the key's int16 "version", 4.0+ "type"; both are the record type.
        label = "type" if "type" in key_obj else "version"
        if label not in key_obj or "data" not in key_obj:
            raise _TextError(f"key at line {line} is not a coordinator key: {str(key_obj)[:200]}")
        record_type = reencode.json_number(key_obj[label], label)
        if key_obj["data"] == "unknown":
            raise _TextError(f"the formatter could not read the key of record type {record_type} (line {line})")
        key = reencode.key_from_json(record_type, key_obj["data"])
        if value_obj is None:
            return self.row(line, key, None, note=NOTE_CONSOLE)
        if not isinstance(value_obj, dict) or "version" not in value_obj or "data" not in value_obj:
            raise _TextError(f"value at line {line} is not a coordinator value: {str(value_obj)[:200]}")
        version = reencode.json_number(value_obj["version"], "version")
        if value_obj["data"] == "unknown":
            raise _TextError(
                f"the formatter could not read value version {version} of record type {record_type} (line {line})"
            )
        data = value_obj["data"]
        notes = [NOTE_CONSOLE]
        if record_type == K.GROUP_METADATA and reencode.rebuild_consumer_protocol(data):
            notes.append("consumer protocol subscription/assignment rebuilt from decoded JSON (version inferred)")
        value, unknown = reencode.value_from_json(record_type, version, data)
        if unknown:
            notes.append(reencode.NOTE_DROPPED_FIELDS)
        return self.row(line, key, value, note=join_notes(*notes))

    # Scala formatters (up to 3.9) -----------------------------------------------------------------

    def scala_line(self, line: int, text: str) -> Row:
        commit = _SCALA_COMMIT.fullmatch(text)
        if commit:
            self.scala_kind = "offsets"
            return self.scala_commit(line, commit)
        group = _SCALA_GROUP.fullmatch(text)
        if group:
            self.scala_kind = "group"
            return self.scala_group(line, group)
        tombstone = _SCALA_COMMIT_TOMBSTONE.fullmatch(text)
        if tombstone and self.scala_kind != "group":
            key = reencode.offset_commit_key(tombstone["group"], tombstone["topic"], int(tombstone["partition"]))
            return self.row(line, key, None, note=NOTE_CONSOLE)
        group_tombstone = _SCALA_GROUP_TOMBSTONE.fullmatch(text)
        if group_tombstone:
            return self.row(line, reencode.group_metadata_key(group_tombstone["group"]), None, note=NOTE_CONSOLE)
        raise _TextError(f"unparseable line {line}: {text[:200]}")

    def scala_commit(self, line: int, match: re.Match[str]) -> Row:
        epoch, expire = match["epoch"], match["expire"]
        if epoch is not None and expire is not None:
            raise _TextError(f"line {line} prints a leader epoch and an expireTimestamp: no value version holds both")
        version = 3 if epoch is not None else 1
        key = reencode.offset_commit_key(match["group"], match["topic"], int(match["partition"]))
        value = reencode.offset_commit_value(
            version,
            int(match["offset"]),
            match["metadata"],
            int(match["commit"]),
            leader_epoch=int(epoch) if epoch is not None else -1,
            expire_timestamp=int(expire) if expire is not None else -1,
        )
        return self.row(line, key, value, note=NOTE_SCALA_COMMIT)

    def scala_group(self, line: int, match: re.Match[str]) -> Row:
        if match["prefix"] != match["group"]:
            raise _TextError(f"line {line}: group {match['prefix']!r} prints groupId={match['group']!r}")
        members = _scala_members(match["members"], line)
        protocol = members[0].pop("_protocol") if members else None
        for member in members:
            member.pop("_protocol", None)
        version = 3 if any(m["groupInstanceId"] is not None for m in members) else 1
        value = reencode.encode_value_fields(
            K.GROUP_METADATA,
            version,
            {
                "protocolType": match["protocol_type"] or "",
                "generation": int(match["generation"]),
                "protocol": protocol,
                "leader": None,
                "currentStateTimestamp": -1,
                "members": members,
            },
        )
        return self.row(line, reencode.group_metadata_key(match["group"]), value, note=NOTE_SCALA_GROUP)

    # Rows -----------------------------------------------------------------------------------------

    def row(
        self, line: int, key: bytes | None, value: bytes | None, note: str | None = None, error: str | None = None
    ) -> Row:
        ordinal = self.ordinal
        self.ordinal += 1
        return {
            "source_partition": self.partition,
            "source_offset": ordinal,
            "record_timestamp_ms": None,
            "key": key,
            "value": value,
            "producer_id": -1,
            "producer_epoch": -1,
            "is_transactional": False,
            "is_control": False,
            "control_type": None,
            "source_file": self.path,
            "source_position": line,
            "source_error": error,
            "source_note": None if error else note,
            "skipped_bytes": None,
        }


def _scala_members(text: str, line: int) -> list[dict[str, Any]]:
    """Members from Scala's `HashMap(id -> MemberMetadata(...), ...)` rendering (order unspecified)."""
    members: list[dict[str, Any]] = []
    pos = 0
    while pos < len(text):
        match = _SCALA_MEMBER.match(text, pos)
        if not match:
            raise _TextError(f"line {line}: members unreadable at {text[pos : pos + 80]!r}")
        pos = match.end()
        protocols = match["protocols"]
        members.append(
            {
                "memberId": match["member_id"],
                "groupInstanceId": match["instance"],
                "clientId": match["client_id"],
                "clientHost": match["client_host"],
                "rebalanceTimeout": int(match["rebalance"]),
                "sessionTimeout": int(match["session"]),
                "subscription": b"",  # not printed: unknown, see NOTE_SCALA_GROUP
                "assignment": b"",
                # The group's selected protocol is each member's one supported protocol (loadGroup).
                "_protocol": None if protocols in ("", "null") else protocols,
            }
        )
    return members


def read_console_dump(
    path: str, partition: int | None = None, batch_rows: int = 50_000, storage: Storage = LOCAL
) -> Iterator[pa.RecordBatch]:
    """Rows of LOG_RECORD_SCHEMA, one per printed record, in file order, read in bounded chunks."""
    reader = ConsoleReader(path, partition)
    with storage.open_text(path) as stream:
        yield from batches(reader.rows(stream), batch_rows)


def looks_like_console_dump(head: str) -> bool:
    """Whether the first KiB of a file are console-formatter output (JSON records or Scala lines)."""
    stripped = head.lstrip()
    if json_stream.RECORD_START.match(stripped):
        return True
    for line in stripped.splitlines()[:50]:
        if "]::OffsetAndMetadata(offset=" in line or "::GroupMetadata(groupId=" in line:
            return True
        if _SCALA_COMMIT_TOMBSTONE.fullmatch(line):
            return True
    return False
