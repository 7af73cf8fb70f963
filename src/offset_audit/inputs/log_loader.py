"""A partition folder copied from a running broker, read as the broker's log loader recovers it on restart.

A copy of a live data directory holds more than the segments of the log. The log cleaner writes a
segment's compacted replacement as `<base>.log.cleaned`, renames it `<base>.log.swap` when it is
complete, renames the segments it replaces `<base>.log.deleted`, and finally renames the swap file
`<base>.log`. A copy can catch any step. On restart, `LogLoader.load` (Apache Kafka,
storage/src/main/java/org/apache/kafka/storage/internals/log/LogLoader.java, with
`removeTempFilesAndCollectSwapFiles`) settles it:

1. `.deleted` files are deleted: their records are in the segments that replaced them.
2. `.cleaned` files are deleted: the cleaner had not finished them, and the segments they would
   replace are still in place.
3. A `.swap` file whose base offset is at or past the lowest `.cleaned` file's is deleted: it is part of
   a segment split that did not finish (KAFKA-6264).
4. Every other `.swap` file is complete: the segments whose base offsets fall in [lowest swap base
   offset, highest swap next offset) are deleted, and the swap files become the segments.

`plan` applies the same rules to a folder's files, and every record of a file the broker would delete
is still read and counted, as skipped, with a note that says why (never silently dropped). Index
files (`.index`, `.timeindex`, `.txnindex`), producer `.snapshot` files and `partition.metadata` hold
no record; `leader-epoch-checkpoint` gives the leader epochs' start offsets, which settle copies that
diverged (`offset_audit.inputs.copies`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from offset_audit.storage import Storage, basename, join

SWAP, CLEANED, DELETED = ".swap", ".cleaned", ".deleted"
# A segment file, or one the cleaner left: "<20-digit base offset>.log" with a cleaner suffix or none.
_SEGMENT = re.compile(r"(\d{20})\.log(\.swap|\.cleaned|\.deleted)?")
EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"

NOTE_DELETED = (
    "in a .deleted segment, which the broker deletes on restart (its records are in the segment that replaced it)"
)
NOTE_CLEANED = "in a .cleaned file the log cleaner had not finished, which the broker deletes on restart"
NOTE_SPLIT = "in a .swap file at or past a .cleaned one (a segment split that did not finish), which the broker deletes"
NOTE_REPLACED = "in a segment a .swap file replaces (a cleaning cut short), which the broker deletes on restart"


def is_segment_file(name: str) -> bool:
    """Whether a file name is a segment, or a segment the cleaner left (`*.log` counts too, for
    segment files renamed by hand)."""
    return name.endswith(".log") or _SEGMENT.fullmatch(name) is not None


def base_offset(path: str) -> int | None:
    """The base offset a segment file's name gives (None for a name the broker would not write)."""
    match = _SEGMENT.fullmatch(basename(path))
    return int(match.group(1)) if match else None


def suffix(path: str) -> str | None:
    """The cleaner's suffix of a segment file name (SWAP, CLEANED or DELETED), None for a segment."""
    match = _SEGMENT.fullmatch(basename(path))
    return match.group(2) if match else None


@dataclass(frozen=True)
class Plan:
    """One folder's files as the loader leaves them: those that make up the log, in base-offset order,
    and those it deletes, each with the note its records carry."""

    log: list[Any]
    discarded: list[tuple[Any, str]]


def plan(files: list[Any], next_offset: Callable[[Any], int]) -> Plan:
    """The loader's view of one folder's segment files (anything with a `.path`). `next_offset` reads a
    swap file and gives the offset after its last record (its base offset when it holds none)."""
    if not any(suffix(f.path) for f in files):
        return Plan(list(files), [])
    discarded = [(f, NOTE_DELETED) for f in files if suffix(f.path) == DELETED]
    cleaned = [f for f in files if suffix(f.path) == CLEANED]
    discarded += [(f, NOTE_CLEANED) for f in cleaned]
    # A file with a cleaner suffix has a name _SEGMENT matched: its base offset is known.
    lowest_cleaned = min((cast(int, base_offset(f.path)) for f in cleaned), default=None)
    swaps = []
    for f in files:
        if suffix(f.path) == SWAP:
            if lowest_cleaned is not None and cast(int, base_offset(f.path)) >= lowest_cleaned:
                discarded.append((f, NOTE_SPLIT))
            else:
                swaps.append(f)
    segments = [f for f in files if suffix(f.path) is None]
    if swaps:
        low = min(cast(int, base_offset(f.path)) for f in swaps)
        high = max(next_offset(f) for f in swaps)
        replaced = [f for f in segments if (b := base_offset(f.path)) is not None and low <= b < high]
        discarded += [(f, NOTE_REPLACED) for f in replaced]
        segments = [f for f in segments if f not in replaced]
    log = sorted(segments + swaps, key=lambda f: (base_offset(f.path) or 0, basename(f.path)))
    return Plan(log, discarded)


def epoch_starts(folder: str, storage: Storage) -> tuple[tuple[int, int], ...] | None:
    """The (leader epoch, start offset) entries of a partition folder's `leader-epoch-checkpoint`
    (LeaderEpochCheckpointFile: a version line "0", a count line, then "epoch offset" lines); None
    when the folder has none or it does not read as one."""
    path = join(folder, EPOCH_CHECKPOINT)
    try:
        if not storage.exists(path):
            return None
        with storage.open_text(path) as handle:
            lines = handle.read().split("\n")
        if lines[0].strip() != "0":
            return None
        count = int(lines[1])
        entries = tuple((int(e), int(o)) for e, o in (line.split() for line in lines[2 : 2 + count]))
    except (OSError, ValueError, IndexError):
        return None
    return entries if len(entries) == count else None


def topic_id(folder: str, storage: Storage) -> str | None:
    """The topic id a partition folder's `partition.metadata` names ("version: 0", "topic_id: <id>");
    None when it has none."""
    path = join(folder, PARTITION_METADATA)
    try:
        if not storage.exists(path):
            return None
        with storage.open_text(path) as handle:
            for line in handle.read().split("\n"):
                name, _, value = line.partition(":")
                if name.strip() == "topic_id":
                    return value.strip() or None
    except OSError:
        return None
    return None
