"""Every input format, described once: its name (the `--input-format` value), how `--input-format auto`
recognises its files, the Spark data source that reads it, and what it can do.

Code outside inputs/ asks a format what it can do (`input_format(settings).resumable`), never what it is
called (`== "segments"`): adding a format is a reader and an entry here, not a search for every place
that spells a name.

    FORMATS       the formats a user names, in --help's order
    AUTO          --input-format auto: the format is worked out from the inputs (`opened.open_dump`)
    MIXED         what auto makes of inputs of several formats that each hold raw records
    SNIFFED       the formats one file is tried against, in that order
    CHOICES       what --input-format and [input] format take: auto and every name of FORMATS
    by_name       a name a user gave -> its format, or a UserError
    named         a name a run's settings, report or state hold -> its format (MIXED too)
    input_format  a run's format, as its settings name it (MIXED once auto has found several)
    help_text     --input-format's help, from the descriptions

This module imports no reader at load time (the command line reads CHOICES on every start): a format's
sniffing and reading functions import theirs when first called.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from offset_audit.errors import UserError
from offset_audit.settings import Settings

if TYPE_CHECKING:
    import pyarrow as pa

    from offset_audit.storage import Storage

# One file of a log dump -> LOG_RECORD_SCHEMA batches: (path, partition, batch_rows, storage, **options).
FileReader = Callable[..., Iterator["pa.RecordBatch"]]


@dataclass(frozen=True)
class InputFormat:
    """One input format. The recognition fields are what `opened.detect_formats` looks at; the flags each
    answer one question the code asks of a run's input, named for that question."""

    name: str  # the --input-format value; a run's report and an incremental state name the format so too
    description: str  # what --help says after the name
    spark_source: str = ""  # the short name of the Spark data source that reads it ("" for none)

    # -- how --input-format auto recognises it -----------------------------------------------------
    magic: bytes = b""  # a file whose first bytes are these is of this format
    looks_like: Callable[[str], bool] | None = None  # a file whose first bytes, as text, this accepts is
    suffix: str = ""  # how its files end: a folder whose files (hidden and _ folders aside) all do is of it
    suffix_alone: bool = False  # one file is of it by its suffix alone, where its bytes show nothing else
    subfolder: str = ""  # a folder holding a folder of this name is of this format

    # -- how it is read -------------------------------------------------------------------------------
    read_file: FileReader | None = None  # one file of a log dump -> LOG_RECORD_SCHEMA batches (log_files)

    # -- what it can do ---------------------------------------------------------------------------------
    # The live topic: read through --bootstrap-server, never from --input paths, so never guessed by auto;
    # the cluster's Admin API tells its cluster id, partitions and log start offsets.
    live: bool = False
    # Its records carry their timestamps (console-consumer text prints none): `--as-of latest` needs them.
    timestamps: bool = True
    # Transaction markers are visible (batch headers), so a record can be committed, aborted or pending:
    # the markers are gathered, and pending commits are reported.
    markers: bool = False
    # Several inputs of it are merged as copies of their partitions (`overlapping`). Segment folders merge
    # theirs in the partition's own task; console text has no offsets to merge by.
    copies_merged: bool = False
    # Its records carry their log offsets, so auto takes its inputs beside those of other such formats
    # (MIXED), merged as copies.
    mixable: bool = False
    # An incremental audit can resume it: its positions are record offsets a later copy keeps.
    resumable: bool = False
    # The text a Kafka tool prints of a log (kafka-dump-log, the console consumer): lines that number no
    # offsets a later dump keeps, and __consumer_offsets records only (never __share_group_state).
    text_dump: bool = False
    # Read as the files of a log dump (`log_files`: one LogFile per file, `read_file` for each).
    log_files: bool = False
    # A broker's partition folders: segment files with batch headers, read a partition per task (its
    # transaction markers are in its own log), meta.properties naming the cluster, and positions that
    # skip whole segment files.
    broker_folders: bool = False
    # Share-group state (the KIP-932 draft's control records): only `offset-audit share` reads it.
    share_state: bool = False
    # A Delta table: its files are found through delta-rs, and it is checked as the output tables are.
    delta_table: bool = False
    # Inputs of several formats: each is checked and read as its own format, then merged as copies.
    several_formats: bool = False
    # --input-format auto: the format is still to be worked out from the inputs.
    to_detect: bool = False

    def recognises(self, head: bytes, path: str) -> bool:
        """Whether one file, whose first bytes are `head`, is of this format (see SNIFFED for the order
        the formats are tried in)."""
        if self.magic and head.startswith(self.magic):
            return True
        if self.looks_like is not None and self.looks_like(head.decode("utf-8", errors="replace")):
            return True
        return self.suffix_alone and path.endswith(self.suffix)


def _share_state_json(text: str) -> bool:
    first = text.lstrip().split("\n", 1)[0]
    return first.startswith("{") and ('"SHARE_CHECKPOINT"' in first or '"SHARE_DELTA"' in first)


def _dump_log_text(text: str) -> bool:
    from offset_audit.inputs.textdumps.dump_log import looks_like_dump_log

    return looks_like_dump_log(text)


def _console_text(text: str) -> bool:
    from offset_audit.inputs.textdumps.console import looks_like_console_dump

    return looks_like_console_dump(text)


def _read_segment(path: str, partition: int | None, batch_rows: int, storage: Storage, **options: Any):
    from offset_audit.inputs.segments.reader import read_segment

    return read_segment(path, partition, batch_rows, storage=storage, **options)


def _read_dump_log(path: str, partition: int | None, batch_rows: int, storage: Storage):
    from offset_audit.inputs.textdumps.dump_log import read_dump_log

    return read_dump_log(path, partition, batch_rows, storage)


def _read_console(path: str, partition: int | None, batch_rows: int, storage: Storage):
    from offset_audit.inputs.textdumps.console import read_console_dump

    return read_console_dump(path, partition, batch_rows, storage)


PARQUET = InputFormat(
    "parquet",
    "a Kafka-source snapshot's Parquet files",
    spark_source="parquet",
    magic=b"PAR1",
    suffix=".parquet",
    copies_merged=True,
    mixable=True,
    resumable=True,
)
DELTA = InputFormat(
    "delta",
    "a Kafka-source snapshot kept as a Delta table",
    spark_source="delta",
    subfolder="_delta_log",
    copies_merged=True,
    mixable=True,
    resumable=True,
    delta_table=True,
)
KAFKA = InputFormat(
    "kafka",
    "a live cluster",
    spark_source="kafka",
    live=True,
    resumable=True,
)
SEGMENTS = InputFormat(
    "segments",
    "log segment files, or a broker's partition folders",
    spark_source="kafka-log",
    suffix=".log",
    suffix_alone=True,  # a segment starts with its first batch's offset: no magic to tell it by
    read_file=_read_segment,
    markers=True,
    mixable=True,
    resumable=True,
    log_files=True,
    broker_folders=True,
)
DUMP_LOG = InputFormat(
    "dump-log",
    "kafka-dump-log.sh --offsets-decoder output",
    spark_source="kafka-dump-log",
    looks_like=_dump_log_text,
    read_file=_read_dump_log,
    markers=True,
    copies_merged=True,
    mixable=True,
    text_dump=True,
    log_files=True,
)
CONSOLE = InputFormat(
    "console",
    "kafka-console-consumer.sh formatter output",
    spark_source="kafka-console",
    looks_like=_console_text,
    read_file=_read_console,
    timestamps=False,
    text_dump=True,
    log_files=True,
)
KIP932_JSON = InputFormat(
    "kip932-json",
    "the KIP-932 draft's share-state control records as JSON lines, for share",
    spark_source="kafka-share-state",
    looks_like=_share_state_json,
    share_state=True,
)

FORMATS: tuple[InputFormat, ...] = (PARQUET, DELTA, KAFKA, SEGMENTS, DUMP_LOG, CONSOLE, KIP932_JSON)
AUTO = InputFormat("auto", "default: from the inputs", to_detect=True)
# Never a choice: auto's answer for inputs of several formats whose records carry offsets (segments and a
# snapshot of the same partitions), merged as copies. Its markers are those of its log inputs.
MIXED = InputFormat(
    "mixed", "inputs of several formats, merged as copies", markers=True, copies_merged=True, several_formats=True
)
# The order one file's first bytes are tried in: the most particular first. The draft's JSON lines before
# the console consumer's JSON records, kafka-dump-log text before console text, and a name ending .log
# only when the bytes are none of those (a segment has no magic; text saved under a .log name is text).
SNIFFED: tuple[InputFormat, ...] = (PARQUET, KIP932_JSON, DUMP_LOG, CONSOLE, SEGMENTS)
CHOICES: tuple[str, ...] = tuple(f.name for f in (AUTO, *FORMATS))
_CHOSEN = {f.name: f for f in (AUTO, *FORMATS)}


def by_name(name: str) -> InputFormat:
    """The format a user named (--input-format, [input] format); one sentence listing the names otherwise."""
    found = _CHOSEN.get(name) if isinstance(name, str) else None
    if found is None:
        raise UserError(f"unknown input format '{name}'; use one of: {', '.join(CHOICES)}")
    return found


def named(name: str) -> InputFormat:
    """The format a run's settings, report or state name: a choice, or MIXED once auto found several."""
    return MIXED if name == MIXED.name else by_name(name)


def input_format(settings: Settings) -> InputFormat:
    """The run's input format (AUTO until `opened.open_dump` has worked it out)."""
    return named(settings.input.format)


def help_text() -> str:
    """--input-format's help: every choice with what it reads."""
    described = [f"{f.name} ({f.description})" for f in (AUTO, *FORMATS)]
    return f"{', '.join(described[:-1])} or {described[-1]}."
