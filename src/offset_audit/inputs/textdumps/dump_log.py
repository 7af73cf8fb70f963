"""`kafka-dump-log.sh --offsets-decoder --print-data-log` output back to records (reference 6.1).

The tool prints, per segment, a `Dumping PATH` header, a line per batch and a line per record. A record
line holds the record's offset, timestamp and key/value sizes, then what the offsets decoder made of
the key and value. That decoder changed shape twice:

- up to 2.3: `key: offset::G:T:P payload: OFFSET[:METADATA]`, group keys as `{"metadata":"G"}`, and no
  key at all for a tombstone;
- 2.4 to 3.7 (`GroupMetadataManager.formatRecordKeyAndValue`): `offset_commit::group=G,partition=T-P`
  with `offset=N[,metadata=M]` or `<DELETE>`, `group_metadata::group=G` with a four-key JSON payload,
  `unknown::version=N` for types the tool did not know;
- 3.8+ (`OffsetsMessageParser` / `CoordinatorRecordMessageParser`): the key and value as Kafka's JSON
  converters write them, with string "type" and "version", or a line of text for an unknown type or a
  record it could not read.

Each record line becomes one row whose key and value are the record's bytes rebuilt from the text
(`reencode.py`). What the older shapes do not print is filled in the way that keeps the audit honest
and is said in the row's source_note; see the constants below for each choice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from offset_audit import constants as K
from offset_audit.inputs.segments.decoded import NO_TIMESTAMP
from offset_audit.inputs.textdumps import reencode
from offset_audit.inputs.textdumps.text_rows import (
    LongLine,
    Row,
    batches,
    bounded_lines,
    checked,
    join_notes,
    partition_from_path,
)
from offset_audit.storage import LOCAL, Storage

# What each shape cannot tell, as notes (the summary counts rows per distinct note, so these are fixed
# strings rather than per-record text).

NOTE_LEGACY_COMMIT = (
    "kafka-dump-log <=3.7: commit timestamp is the record's CreateTime; value version, leader epoch and "
    "key type (0/1) not printed"
)
"""Up to 3.7 the tool prints a commit's offset and metadata only. The record is rebuilt as value v1 (the
version whose every field this text plus the record's CreateTime recovers) with commitTimestamp = the
record's CreateTime, the broker's clock at append: a separate reading from the one the broker stored
as the commit time (reference 1.1), so the two can differ by the few milliseconds between them; and
expireTimestamp -1 (none)."""

NOTE_LEGACY_COMMIT_V1 = (
    NOTE_LEGACY_COMMIT + "; valueSize fits a v1 value, whose expireTimestamp (explicit retention) is not printed"
)
"""The record's valueSize says the stored value was v1 (28 bytes plus metadata): it carried an
expireTimestamp the text does not show, so an explicit retention may be lost."""

NOTE_LEGACY_GROUP = (
    "kafka-dump-log <=3.7: no currentStateTimestamp (an Empty group's offsets count from their commits), leader, "
    "client ids, timeouts or subscriptions (members' subscriptions unknown); value version not printed"
)
"""Up to 3.7 a group's payload holds protocolType, protocol, generation and each member's assignment.
The value is rebuilt as v0, the lowest version holding those fields, so it has no currentStateTimestamp.
Members keep their ids and assignments; clientId/clientHost are "" and timeouts -1 (unknown). Each
member's subscription is written as empty bytes, which the broker's own parser (and ours) cannot read:
the subscription stays unknown, and an unknown subscription makes a Stable consumer group's offsets
never expire, as the broker does when it cannot parse one (reference 3). Writing an empty topic list
instead would claim the group subscribes to nothing and let every offset expire."""

NOTE_LEGACY_USER_DATA = "assignment user data rebuilt from hex that drops leading zero bytes"
"""The tool prints user data (and non-consumer assignments) as `%X` of a BigInt: leading zero bytes and
a leading zero nibble are gone."""

NOTE_SIZE_MISMATCH = "re-encoded key or value differs in size from the record's keySize/valueSize"
"""The rebuilt bytes are not the bytes the broker stored (for example a field the printing tool did not
know, or bytes after a consumer protocol struct)."""

NOTE_PROTOCOL_REBUILT = (
    "kafka-dump-log 3.8+: consumer protocol subscription/assignment rebuilt from decoded JSON (version inferred)"
)
"""3.8+ prints a consumer group's subscription and assignment decoded but without their int16 versions;
the subscription's version follows from its fields, the assignment is written as v0 (all its versions
have the same fields)."""

NOTE_NO_BATCH = "no batch header for this record: producer id, epoch and transactional flag unknown"
"""The record line's batch header is missing (a cut file) or does not cover the record's offset; the row
is read as a non-transactional record, which is what most coordinator writes are."""

NOTE_NO_METADATA = "kafka-dump-log --skip-record-metadata: no offset or timestamp; source_offset is the ordinal"

ERROR_BAD_CRC = "batch failed its CRC check (isvalid: false): key and value are not trusted"

_TOKEN = re.compile(r"(\w+): (\S+)")
# The record and batch lines of 3.0+, matched whole for speed; anything else goes through _TOKEN.
_RECORD_LINE = re.compile(
    r"\| offset: (?P<offset>-?\d+) (?:CreateTime|LogAppendTime|NoTimestampType): (?P<ts>-?\d+)"
    r" keySize: (?P<key_size>-?\d+) valueSize: (?P<value_size>-?\d+)"
    r"(?: sequence: -?\d+ headerKeys: \[[^\]]*\])?(?: isValid: \w+ crc: \d+\}?)? (?=key: |endTxnMarker: )"
)
_BATCH_LINE = re.compile(
    r"baseOffset: (?P<base>-?\d+) lastOffset: (?P<last>-?\d+) count: \S+ baseSequence: -?\d+ lastSequence: -?\d+"
    r" producerId: (?P<producer_id>-?\d+) producerEpoch: (?P<producer_epoch>-?\d+) partitionLeaderEpoch: -?\d+"
    r" isTransactional: (?P<transactional>true|false) isControl: (?P<control>true|false)"
    r" .* isvalid: (?P<valid>true|false)"
)
_CONTENT = re.compile(r" (?=(?:key|payload|endTxnMarker|controlType): )")
_LEGACY_COMMIT = re.compile(
    r"offset_commit::group=(?P<group>.*?),partition=(?P<topic>[A-Za-z0-9._-]*)-(?P<partition>\d+)"
    r" payload: (?P<payload>.*)"
)
_LEGACY_COMMIT_PAYLOAD = re.compile(r"offset=(?P<offset>-?\d+)(?:,metadata=(?P<metadata>.*))?")
_OLD_COMMIT = re.compile(
    r"offset::(?P<group>.*?):(?P<topic>[A-Za-z0-9._-]*):(?P<partition>\d+)"
    r" payload: (?P<offset>-?\d+)(?::(?P<metadata>.*))?"
)
_LEGACY_GROUP = re.compile(r"group_metadata::group=(?P<group>.*?) payload: (?P<payload><DELETE>|\{.*\})")
_UNKNOWN_KEY = re.compile(r"unknown::version=(?P<version>-?\d+)")
_CONTROL = re.compile(r"endTxnMarker: (?P<type>\w+) coordinatorEpoch: (?P<epoch>-?\d+)")
_OTHER_CONTROL = re.compile(r"controlType: (?P<name>\w+)\((?P<id>-?\d+)\)")
_TRAILING = re.compile(r"Found (?P<bytes>\d+) invalid bytes at the end of (?P<file>.*)")
_CONSUMER_MEMBER = re.compile(r"(?P<member>.*?)=\[(?P<partitions>[^\]]*)\](?::(?P<user_data>[0-9A-Fa-f]+))?(?:,|$)")
_OTHER_MEMBER = re.compile(r"(?P<member>.*?)=(?P<hex>[0-9A-Fa-f]*)(?:,|$)")

# Lines that carry no record: file and segment headers, and what the tool writes to stderr (seen
# when a dump was made with 2>&1), such as the non-consecutive offsets every compacted log has.
_IGNORED_PREFIXES = (
    "Log starting offset: ",
    "Starting offset: ",
    "Snapshot end offset: ",
    "KRaft bootstrap snapshot",
    "Non-consecutive offsets in ",
    "Mismatches in :",
    "Ignoring unknown file ",
)
_IGNORED = re.compile(r"\s+(?:-?\d+ is followed by -?\d+|Index offset: -?\d+, log offset: -?\d+)")

_JSON = json.JSONDecoder()


class _LineError(Exception):
    """A record line whose content cannot become a record; the message is the row's source_error."""


@dataclass(frozen=True)
class _Batch:
    """What a batch header says about the records under it."""

    base_offset: int | None
    last_offset: int | None
    producer_id: int = -1
    producer_epoch: int = -1
    is_transactional: bool = False
    is_control: bool = False
    is_valid: bool = True

    def covers(self, offset: int | None) -> bool:
        if offset is None or self.last_offset is None:
            return True
        low = self.base_offset if self.base_offset is not None else offset
        return low <= offset <= self.last_offset


def _int(tokens: dict[str, str], name: str) -> int | None:
    text = tokens.get(name)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _int_or(tokens: dict[str, str], name: str, default: int) -> int:
    value = _int(tokens, name)
    return default if value is None else value


def _timestamp(tokens: dict[str, str]) -> int | None:
    for name in ("createtime", "logappendtime"):
        ts = _int(tokens, name)
        if ts is not None:
            return None if ts == NO_TIMESTAMP else ts
    return None  # NoTimestampType (magic 0) or not printed


@dataclass
class _Record:
    """The metadata part of one record line."""

    line_no: int
    offset: int | None
    timestamp_ms: int | None
    key_size: int | None
    value_size: int | None
    batch: _Batch | None
    note: str | None = None


class DumpLogReader:
    """Turns the lines of one kafka-dump-log text file into rows, keeping the file and batch context."""

    def __init__(self, path: str, partition: int | None = None) -> None:
        self.path = path
        self.partition_arg = partition
        self.source_file = path
        self.partition = partition if partition is not None else partition_from_path(path)
        self.batch: _Batch | None = None
        self.skipping = False
        self.ordinal = 0

    # Lines --------------------------------------------------------------------------------------

    def rows(self, lines: Iterable[str]) -> Iterator[Row]:
        for line_no, raw in enumerate(lines, 1):
            if isinstance(raw, LongLine):
                yield self.error_row(
                    line_no,
                    f"line {line_no} is longer than {len(raw):,} characters ({raw.skipped:,} more skipped): "
                    "not a kafka-dump-log line (a binary or damaged file?)",
                )
                continue
            line = raw.rstrip("\r\n")
            try:
                row = self.parse_line(line_no, line)
            except (_LineError, reencode.ReencodeError) as err:  # a bad line becomes a row; a bug is a crash
                row = self.error_row(line_no, f"line {line_no} could not be read: {err}")
            if row is not None:
                yield checked(row, f"line {line_no}")

    def parse_line(self, line_no: int, line: str) -> Row | None:
        if line.startswith("Dumping "):
            self.file_header(line[len("Dumping ") :])
            return None
        if self.skipping:
            return None
        if line.startswith("| "):
            return self.record_line(line_no, line)
        if line.startswith("baseOffset: "):
            self.batch_header(line)
            return None
        if line.startswith("offset: "):
            if " keysize: " in line or " keySize: " in line:
                return self.record_line(line_no, line)  # 2.0: records printed without a batch line
            self.batch_header(line)
            return None
        if not line.strip() or line.startswith(_IGNORED_PREFIXES) or _IGNORED.fullmatch(line):
            return None
        trailing = _TRAILING.fullmatch(line)
        if trailing:
            # The segment ends in bytes that are not a whole batch: the records there are lost.
            return self.error_row(
                line_no,
                f"kafka-dump-log found {trailing['bytes']} invalid bytes at the end of {trailing['file']}",
                skipped_bytes=int(trailing["bytes"]),
            )
        return self.error_row(line_no, f"unparseable line {line_no}: {line[:200]}")

    def file_header(self, dumped: str) -> None:
        """`Dumping PATH`: a new segment, maybe of another partition. The tool also dumps index,
        time-index, transaction-index and snapshot files when given them; their lines hold no
        records, so they are skipped until the next `Dumping` line."""
        self.source_file = dumped
        self.batch = None
        self.skipping = not dumped.endswith(".log")
        if self.partition_arg is None:
            self.partition = partition_from_path(dumped)
            if self.partition is None:
                self.partition = partition_from_path(self.path)

    def batch_header(self, line: str) -> None:
        fast = _BATCH_LINE.fullmatch(line)
        if fast:
            self.batch = _Batch(
                int(fast["base"]),
                int(fast["last"]),
                int(fast["producer_id"]),
                int(fast["producer_epoch"]),
                fast["transactional"] == "true",
                fast["control"] == "true",
                fast["valid"] == "true",
            )
            return
        tokens = {name.lower(): value for name, value in _TOKEN.findall(line)}
        if "baseoffset" in tokens:
            self.batch = _Batch(
                base_offset=_int(tokens, "baseoffset"),
                last_offset=_int(tokens, "lastoffset"),
                producer_id=_int_or(tokens, "producerid", -1),
                producer_epoch=_int_or(tokens, "producerepoch", -1),
                is_transactional=tokens.get("istransactional") == "true",
                is_control=tokens.get("iscontrol") == "true",
                is_valid=tokens.get("isvalid", "true") == "true",
            )
        else:
            # magic 0/1 message set: no producer, no transactions; `offset` is the wrapper's last offset.
            self.batch = _Batch(None, _int(tokens, "offset"), is_valid=tokens.get("isvalid", "true") == "true")

    # Records ------------------------------------------------------------------------------------

    def record_line(self, line_no: int, line: str) -> Row:
        offset: int | None  # None where a line's text gives no offset
        fast = _RECORD_LINE.match(line)
        if fast:
            offset, ts = int(fast["offset"]), int(fast["ts"])
            batch = self.batch if self.batch is not None and self.batch.covers(offset) else None
            record = _Record(
                line_no,
                offset,
                None if ts == NO_TIMESTAMP else ts,
                int(fast["key_size"]),
                int(fast["value_size"]),
                batch,
                None if batch is not None else NOTE_NO_BATCH,
            )
            return self.record_from(record, line[fast.end() :])
        body = line[2:] if line.startswith("| ") else line
        if body.startswith(("key: ", "payload: ")):
            record = _Record(line_no, None, None, None, None, self.batch, NOTE_NO_METADATA)
            content = body
        else:
            split = _CONTENT.search(body)
            prefix, content = (body[: split.start()], body[split.end() :]) if split else (body, "")
            tokens = {name.lower(): value for name, value in _TOKEN.findall(prefix)}
            offset = _int(tokens, "offset")
            if offset is None:
                return self.error_row(line_no, f"unparseable line {line_no}: {line[:200]}")
            batch = self.batch
            if "producerid" in tokens or "istransactional" in tokens:  # 2.0 prints these per record
                batch = _Batch(
                    offset,
                    offset,
                    _int_or(tokens, "producerid", -1),
                    _int_or(tokens, "producerepoch", -1),
                    tokens.get("istransactional") == "true",
                    batch.is_control if batch else False,
                )
            elif (
                "baseoffset" in tokens  # 2.x repeats the batch bounds on every record line
                and batch is not None
                and (_int(tokens, "baseoffset"), _int(tokens, "lastoffset")) != (batch.base_offset, batch.last_offset)
            ):
                batch = None
            record = _Record(
                line_no,
                offset,
                _timestamp(tokens),
                _int(tokens, "keysize"),
                _int(tokens, "valuesize"),
                batch if batch is not None and batch.covers(offset) else None,
            )
            if record.batch is None:
                record.note = NOTE_NO_BATCH
        return self.record_from(record, content)

    def record_from(self, record: _Record, content: str) -> Row:
        try:
            return self.record_content(record, content)
        except (_LineError, reencode.ReencodeError) as err:
            return self.row(record, None, None, error=str(err))
        except UnicodeEncodeError:
            return self.row(record, None, None, error=f"line {record.line_no} holds bytes that are not UTF-8 text")

    def record_content(self, record: _Record, content: str) -> Row:
        if content.startswith("key: "):
            return self.key_and_payload(record, content[len("key: ") :])
        control = _CONTROL.fullmatch(content)
        if control:
            type_id = reencode.CONTROL_TYPES.get(control["type"])
            if type_id is None:
                raise _LineError(f"unknown transaction marker {control['type']!r} at line {record.line_no}")
            return self.row(
                record,
                reencode.control_record_key(type_id),
                reencode.end_txn_marker_value(int(control["epoch"])),
                control_type=control["type"],
            )
        other = _OTHER_CONTROL.fullmatch(content)
        if other:
            return self.row(
                record,
                reencode.control_record_key(int(other["id"])),
                None,
                control_type=f"UNKNOWN({other['id']})",
                note="control record value not printed",
            )
        if not content:
            if record.value_size == -1:
                raise _LineError(
                    f"record at line {record.line_no} has no key printed: a tombstone as kafka-dump-log before 2.4 "
                    "prints it, its key cannot be rebuilt"
                )
            raise _LineError(
                f"record at line {record.line_no} has no key or payload printed (was the dump made with "
                "--print-data-log --offsets-decoder?)"
            )
        raise _LineError(f"unparseable record content at line {record.line_no}: {content[:200]}")

    def key_and_payload(self, record: _Record, text: str) -> Row:
        if text.startswith("{"):
            return self.json_record(record, text)
        if text.startswith("offset_commit::"):
            return self.legacy_commit(record, text)
        if text.startswith("group_metadata::"):
            match = _LEGACY_GROUP.fullmatch(text)
            if not match:
                raise _LineError(f"unparseable group_metadata record at line {record.line_no}: {text[:200]}")
            return self.legacy_group(record, match["group"], match["payload"])
        if text.startswith("offset::"):
            match = _OLD_COMMIT.fullmatch(text)
            if not match:
                raise _LineError(f"unparseable offset record at line {record.line_no}: {text[:200]}")
            return self.commit_without_timestamp(
                record,
                match["group"],
                match["topic"],
                int(match["partition"]),
                int(match["offset"]),
                match["metadata"] or "",
            )
        unknown = _UNKNOWN_KEY.fullmatch(text)
        if unknown:
            raise _LineError(
                f"kafka-dump-log <=3.7 printed only 'unknown::version={unknown['version']}' (a record type it did "
                "not know): the key cannot be rebuilt"
            )
        if text.startswith(("Unknown record type ", "Error at offset ")):
            raise _LineError(text)  # the tool's own words: the record is quarantined with them
        raise _LineError(
            f"unparseable key at line {record.line_no} (was the dump made with --offsets-decoder?): {text[:200]}"
        )

    # 3.8+ JSON ----------------------------------------------------------------------------------

    def json_record(self, record: _Record, text: str) -> Row:
        try:
            key_obj, end = _JSON.raw_decode(text)
        except json.JSONDecodeError as err:
            raise _LineError(f"key at line {record.line_no} is not whole JSON: {err}") from err
        rest = text[end:]
        if isinstance(key_obj, dict) and set(key_obj) == {"metadata"}:
            return self.old_group(record, key_obj["metadata"], rest)
        if not isinstance(key_obj, dict) or "type" not in key_obj or "data" not in key_obj:
            raise _LineError(f"key at line {record.line_no} is not a coordinator key: {text[:200]}")
        if not rest.startswith(" payload: "):
            raise _LineError(f"record at line {record.line_no} has a key but no payload")
        record_type = reencode.json_number(key_obj["type"], "type")
        key = reencode.key_from_json(record_type, key_obj["data"])
        payload = rest[len(" payload: ") :]
        notes: list[str | None] = [record.note]
        value = None
        if payload != "<DELETE>":
            try:
                value_obj = json.loads(payload)
            except json.JSONDecodeError as err:
                raise _LineError(f"payload at line {record.line_no} is not whole JSON: {err}") from err
            if not isinstance(value_obj, dict) or "version" not in value_obj or "data" not in value_obj:
                raise _LineError(f"payload at line {record.line_no} is not a coordinator value: {payload[:200]}")
            version = reencode.json_number(value_obj["version"], "version")
            data = value_obj["data"]
            if record_type == K.GROUP_METADATA and reencode.rebuild_consumer_protocol(data):
                notes.append(NOTE_PROTOCOL_REBUILT)
            value, unknown = reencode.value_from_json(record_type, version, data)
            if unknown:
                notes.append(reencode.NOTE_DROPPED_FIELDS)
        if _size_differs(record, key, value):
            notes.append(NOTE_SIZE_MISMATCH)
        return self.row(record, key, value, note=join_notes(*notes))

    # Up to 3.7 ----------------------------------------------------------------------------------

    def legacy_commit(self, record: _Record, text: str) -> Row:
        match = _LEGACY_COMMIT.fullmatch(text)
        if not match:
            raise _LineError(f"unparseable offset_commit record at line {record.line_no}: {text[:200]}")
        group, topic, partition = match["group"], match["topic"], int(match["partition"])
        if match["payload"] == "<DELETE>":
            key = reencode.offset_commit_key(group, topic, partition)
            return self.row(record, key, None, note=join_notes(record.note, _size_note(record, key)))
        payload = _LEGACY_COMMIT_PAYLOAD.fullmatch(match["payload"])
        if not payload:
            raise _LineError(f"unparseable offset_commit payload at line {record.line_no}: {match['payload'][:200]}")
        return self.commit_without_timestamp(
            record, group, topic, partition, int(payload["offset"]), payload["metadata"] or ""
        )

    def commit_without_timestamp(
        self, record: _Record, group: str, topic: str, partition: int, offset: int, metadata: str
    ) -> Row:
        if record.timestamp_ms is None:
            raise _LineError(
                f"offset commit at line {record.line_no} has no CreateTime to stand for its commit timestamp"
            )
        key = reencode.offset_commit_key(group, topic, partition)
        value = reencode.offset_commit_value(1, offset, metadata, record.timestamp_ms, expire_timestamp=-1)
        meta_size = len(metadata.encode("utf-8", errors="surrogateescape"))
        # Value sizes by version (reference 2.3): v0/v2 20+m, v3/v4 24+m, v1 28+m bytes.
        note = NOTE_LEGACY_COMMIT_V1 if record.value_size == 28 + meta_size else NOTE_LEGACY_COMMIT
        return self.row(record, key, value, note=join_notes(record.note, note, _size_note(record, key)))

    def legacy_group(self, record: _Record, group: str, payload: str) -> Row:
        key = reencode.group_metadata_key(group)
        if payload == "<DELETE>":
            return self.row(record, key, None, note=join_notes(record.note, _size_note(record, key)))
        return self.group_from_payload(record, key, payload)

    def old_group(self, record: _Record, group: Any, rest: str) -> Row:
        """Up to 2.3 a group key is printed as {"metadata":"G"}; tombstones print nothing at all."""
        if not isinstance(group, str) or not rest.startswith(" payload: {"):
            raise _LineError(f"unparseable group record at line {record.line_no}")
        return self.group_from_payload(record, reencode.group_metadata_key(group), rest[len(" payload: ") :])

    def group_from_payload(self, record: _Record, key: bytes, payload: str) -> Row:
        try:
            fields = json.loads(payload)
        except json.JSONDecodeError as err:
            raise _LineError(f"group payload at line {record.line_no} is not whole JSON: {err}") from err
        if not isinstance(fields, dict) or not {"protocolType", "generationId", "assignment"} <= set(fields):
            raise _LineError(f"group payload at line {record.line_no} lacks protocolType/generationId/assignment")
        protocol_type = fields["protocolType"] or ""
        members, lost_user_data = _members_from_assignment(protocol_type, fields["assignment"], record.line_no)
        value = reencode.encode_value_fields(
            K.GROUP_METADATA,
            0,
            {
                "protocolType": protocol_type,
                "generation": reencode.json_number(fields["generationId"], "generationId"),
                "protocol": fields.get("protocol"),
                "leader": None,
                "members": members,
            },
        )
        notes = (record.note, NOTE_LEGACY_GROUP, NOTE_LEGACY_USER_DATA if lost_user_data else None)
        return self.row(record, key, value, note=join_notes(*notes, _size_note(record, key)))

    # Rows ---------------------------------------------------------------------------------------

    def row(
        self,
        record: _Record,
        key: bytes | None,
        value: bytes | None,
        note: str | None = None,
        error: str | None = None,
        control_type: str | None = None,
    ) -> Row:
        batch = record.batch
        if batch is not None and not batch.is_valid and error is None:
            error = ERROR_BAD_CRC
        if record.offset is None:
            offset = self.ordinal
        else:
            offset = record.offset
        self.ordinal += 1
        return {
            "source_partition": self.partition,
            "source_offset": offset,
            "record_timestamp_ms": record.timestamp_ms,
            "key": key,
            "value": value,
            "producer_id": batch.producer_id if batch else -1,
            "producer_epoch": batch.producer_epoch if batch else -1,
            "is_transactional": batch.is_transactional if batch else False,
            "is_control": control_type is not None,
            "control_type": control_type,
            "source_file": self.source_file,
            "source_position": record.line_no,
            "source_error": error,
            "source_note": note if note is not None else (record.note if error is None else None),
            "skipped_bytes": None,
        }

    def error_row(self, line_no: int, reason: str, skipped_bytes: int | None = None) -> Row:
        """A line that stands for no readable record: kept (quarantined) so it is counted, never dropped."""
        self.ordinal += 1
        return {
            "source_partition": self.partition,
            "source_offset": None,
            "record_timestamp_ms": None,
            "key": None,
            "value": None,
            "producer_id": -1,
            "producer_epoch": -1,
            "is_transactional": False,
            "is_control": False,
            "control_type": None,
            "source_file": self.source_file,
            "source_position": line_no,
            "source_error": reason,
            "source_note": None,
            "skipped_bytes": skipped_bytes,
        }


def _size_differs(record: _Record, key: bytes | None, value: bytes | None) -> bool:
    if record.key_size is not None and key is not None and record.key_size != len(key):
        return True
    value_size = -1 if value is None else len(value)
    return record.value_size is not None and record.value_size != value_size


def _size_note(record: _Record, key: bytes) -> str | None:
    """Shapes that cannot give a byte-exact value (the version is not printed) are checked on the key."""
    return NOTE_SIZE_MISMATCH if record.key_size is not None and record.key_size != len(key) else None


def _hex_bytes(text: str) -> bytes:
    return bytes.fromhex(text if len(text) % 2 == 0 else "0" + text)


def _members_from_assignment(protocol_type: str, assignment: Any, line_no: int) -> tuple[list[dict], bool]:
    """Members rebuilt from the <=3.7 `assignment` string: `{m1=[t-0, t-1],m2=[t-2]:HEX}` for consumer
    groups, `{m1=HEX}` for other protocol types. Returns the members and whether hex was rebuilt."""
    if not isinstance(assignment, str) or not (assignment.startswith("{") and assignment.endswith("}")):
        raise _LineError(f"group assignment at line {line_no} is not a {{member=...}} string")
    inner = assignment[1:-1]
    consumer = protocol_type == K.CONSUMER_PROTOCOL_TYPE
    pattern = _CONSUMER_MEMBER if consumer else _OTHER_MEMBER
    members: list[dict] = []
    lost_user_data = False
    pos = 0
    while pos < len(inner):
        match = pattern.match(inner, pos)
        if not match or match.end() == pos:
            raise _LineError(f"group assignment at line {line_no} is unreadable at: {inner[pos : pos + 80]!r}")
        pos = match.end()
        if consumer:
            pairs = []
            for item in match["partitions"].split(", ") if match["partitions"] else []:
                topic, _, partition = item.rpartition("-")
                if not partition.isdigit():
                    raise _LineError(f"group assignment at line {line_no}: {item!r} is not topic-partition")
                pairs.append((topic, int(partition)))
            user_data = _hex_bytes(match["user_data"]) if match["user_data"] else None
            lost_user_data |= user_data is not None
            blob = reencode.assignment_blob(pairs, user_data)
        else:
            blob = _hex_bytes(match["hex"])
            lost_user_data |= bool(blob)
        members.append(
            {
                "memberId": match["member"],
                "clientId": "",
                "clientHost": "",
                "sessionTimeout": -1,
                "subscription": b"",  # unknown: see NOTE_LEGACY_GROUP
                "assignment": blob,
            }
        )
    return members, lost_user_data


def read_dump_log(
    path: str, partition: int | None = None, batch_rows: int = 50_000, storage: Storage = LOCAL
) -> Iterator[pa.RecordBatch]:
    """Rows of LOG_RECORD_SCHEMA, one per record line, in file order, read line by line."""
    reader = DumpLogReader(path, partition)
    with storage.open_text(path) as stream:
        yield from batches(reader.rows(bounded_lines(stream)), batch_rows)


def looks_like_dump_log(head: str) -> bool:
    """Whether the first KiB of a file are kafka-dump-log output (a header, batch or record line)."""
    for line in head.splitlines()[:50]:
        if line.startswith(("Dumping ", "Log starting offset: ", "Starting offset: ", "baseOffset: ")):
            return True
        if line.startswith("| offset: ") or (line.startswith("offset: ") and " position: " in line):
            return True
    return False
