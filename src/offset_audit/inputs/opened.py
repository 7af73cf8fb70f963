"""A dump opened once, before Spark starts: one value every later stage takes instead of working the dump
out again from its paths.

`open_dump(inputs, settings)` expands the paths (folders, globs), works out `--input-format auto` (each
path's own format where they are several: MIXED), and refuses what the run cannot read, in one sentence.
What the readers need after that is computed from it at most once, when first asked: each folder's files
(listed once, whoever asks: detection, the log files, the snapshot's data files, the dump's size), the
units Python workers read (log files, partition groups, snapshot pieces from the Parquet footers) and what
the input shows of itself (broker folders: meta.properties' cluster id, partitions, log start offsets,
topic ids, cleaner checkpoints). The live topic has no paths and nothing to list: the cluster tells.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from offset_audit.errors import UserError
from offset_audit.inputs import formats, log_files
from offset_audit.inputs.formats import InputFormat
from offset_audit.settings import Settings
from offset_audit.storage import FileStamp, Storage, for_settings, is_remote, join

if TYPE_CHECKING:
    from offset_audit.inputs.kafka_source import DeltaSnapshot, Piece
    from offset_audit.inputs.log_files import LogFile, PartitionFiles
    from offset_audit.inputs.resumed import InputFacts
    from offset_audit.inputs.snapshot_files import SeenFiles


@dataclass(eq=False)
class OpenedDump:
    """One dump as a run reads it. `settings` name its format (never auto); `paths` are the inputs
    expanded as the readers read them (none for the live topic). The cached properties are each worked
    out once, when a stage first needs them."""

    inputs: tuple[str, ...]  # as given (--input, the API's dump)
    paths: tuple[str, ...]
    settings: Settings
    storage: Storage
    # MIXED: each path's own format name, as auto found it.
    own_formats: dict[str, str] = field(default_factory=dict)
    # Each folder's files, listed once and shared with the dumps `part` makes of this one.
    _listed: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _stamps: dict[str, FileStamp] = field(default_factory=dict, repr=False)
    # Each Delta table's version and data files, loaded once (`kafka_source.delta_snapshot`).
    _deltas: dict[str, DeltaSnapshot] = field(default_factory=dict, repr=False)

    @property
    def format(self) -> InputFormat:
        return formats.input_format(self.settings)

    def files_under(self, folder: str) -> list[str]:
        """Every file under a folder of the dump, sorted: listed the first time it is asked, only then."""
        if folder not in self._listed:
            listing = self.storage.listing(folder)
            self._stamps.update(listing)
            self._listed[folder] = sorted(listing)
        return self._listed[folder]

    def stamp(self, path: str) -> FileStamp:
        """A file's size and when it was written, as its folder's listing gave them (else asked)."""
        if path not in self._stamps:
            self._stamps[path] = self.storage.stamp(path)
        return self._stamps[path]

    def part(self, paths: list[str], input_format: str) -> OpenedDump:
        """Some of the dump's paths read as one format (MIXED: each input as what it is; the dump-log
        texts among them, whose markers label each other's records). Listings are shared."""
        settings = self.settings.replaced("input", format=input_format)
        return OpenedDump(
            tuple(paths), tuple(paths), settings, self.storage, _listed=self._listed, _stamps=self._stamps
        )

    def on_topic(self, topic: str) -> OpenedDump:
        """The dump read for another internal topic (share reads __share_group_state): its files and
        units as listed already; what it shows of that topic is worked out anew."""
        if topic == self.settings.input.topic:
            return self
        moved = dataclasses.replace(self, settings=self.settings.replaced("input", topic=topic))
        for name in ("log_units", "partition_groups", "source_files", "data_files", "pieces", "size", "seen_files"):
            if name in self.__dict__:
                moved.__dict__[name] = self.__dict__[name]
        return moved

    @property
    def parts(self) -> list[OpenedDump]:
        """MIXED: each path as a dump of its own format; otherwise the dump itself."""
        if not self.format.several_formats:
            return [self]
        return [self.part([path], own) for path, own in self.path_formats]

    @property
    def path_formats(self) -> list[tuple[str, str]]:
        """Each path with its format: the run's, or, for MIXED, its own."""
        if not self.format.several_formats:
            return [(path, self.settings.input.format) for path in self.paths]
        return [(path, self.own_formats[path]) for path in self.paths]

    # -- log dumps ---------------------------------------------------------------------------------------

    @cached_property
    def log_units(self) -> list[LogFile]:
        """The dump's files (local, mounted or in an object store), in log order."""

        other = [p for p in self.paths if "://" in p and not is_remote(p)]
        if other:
            raise UserError(
                f"{self.settings.input.format} inputs are read from local, mounted or s3:// files, not '{other[0]}'"
            )
        return log_files.log_files(
            list(self.paths),
            self.settings.input.format,
            self.settings.input.partition,
            self.settings.decode.max_batch_bytes,
            self.storage,
            self.settings.decode.fast_path,
            files_under=self.files_under,
        )

    @cached_property
    def partition_groups(self) -> list[PartitionFiles]:
        """Broker folders: the segment files grouped by partition."""

        return log_files.by_partition(self.log_units)

    # -- snapshots ---------------------------------------------------------------------------------------

    @cached_property
    def source_files(self) -> list[str]:
        """What Spark reads of a snapshot: files, folders and Delta tables' current data files."""
        from offset_audit.inputs.kafka_source import source_files

        inputs, paths, input_format = list(self.inputs), list(self.paths), self.settings.input.format
        return source_files(inputs, paths, input_format, self.storage, self.delta_snapshot)

    def delta_snapshot(self, table: str) -> DeltaSnapshot:
        """A Delta table's version and that version's data files, loaded once."""
        from offset_audit.inputs.kafka_source import delta_snapshot

        if table not in self._deltas:
            self._deltas[table] = snapshot = delta_snapshot(table, self.storage)
            self._stamps.update(snapshot.stamps)
        return self._deltas[table]

    @cached_property
    def seen_files(self) -> SeenFiles | None:
        """What an incremental audit keeps of a snapshot it read (`inputs.snapshot_files`): each data
        file with its size and time, and the Delta version they are of; None where Spark, not Python
        workers, lists the files (other stores)."""
        from offset_audit.inputs.snapshot_files import SeenFile, SeenFiles

        if self.format.live or self.format.broker_folders or not self.read_by_workers:
            return None
        files = tuple(SeenFile(f, *dataclasses.astuple(self.stamp(f))) for f in self.data_files)
        versions = {self._deltas[p].version for p in self.paths if p in self._deltas}
        return SeenFiles(files, versions.pop() if len(versions) == 1 and len(self.paths) == 1 else None)

    @cached_property
    def data_files(self) -> list[str]:
        """Every Parquet data file of a snapshot Python workers read (folders walked once)."""
        from offset_audit.inputs.kafka_source import parquet_files

        return [f for item in self.source_files for f in parquet_files(item, self.storage, self.files_under)]

    @cached_property
    def pieces(self) -> list[Piece]:
        """The snapshot's pieces of whole row groups, from its files' footers (each schema checked)."""
        from offset_audit.inputs.kafka_source import pieces_of

        return pieces_of(self.data_files, storage=self.storage)

    @property
    def read_by_workers(self) -> bool:
        """Whether Python workers read every input themselves (local, mounted or S3), not Spark."""
        from offset_audit.inputs.kafka_source import read_by_workers

        return not self.format.live and read_by_workers(list(self.inputs))

    # -- what the input shows of itself ------------------------------------------------------------------

    @cached_property
    def facts(self) -> InputFacts:
        """What the input shows of its partitions before it is read: broker folders' log starts, topic
        ids, cleaner checkpoints and meta.properties' cluster id; nothing for the others (the live
        topic's are the cluster's, asked through Spark: `runs.incremental.input_facts`)."""
        from offset_audit.inputs.resumed import InputFacts, folder_facts

        if not self.format.broker_folders:
            return InputFacts()
        return folder_facts(self.partition_groups, self.settings.input.topic, self.storage)

    @cached_property
    def size(self) -> int | None:
        """The dump's size on disk, to size a run's JVM and a cluster run's shuffles by (a sparse file's
        holes not counted); unknown for the live topic and other stores."""
        if self.format.live:
            return None
        total = 0
        for path in self.paths:
            if "://" in path and not is_remote(path):
                return None
            if self.storage.is_dir(path):
                total += sum(self.storage.stored_size(f) for f in self.files_under(path))
            else:
                total += self.storage.stored_size(path)
        return total


def _sniff(path: str, storage: Storage) -> str:
    """The format of one file, from its first bytes (formats.SNIFFED, in its order)."""
    with storage.open_input_file(path, buffer_size=log_files.SNIFF_BYTES) as handle:
        head = handle.read(log_files.SNIFF_BYTES)
    for fmt in formats.SNIFFED:
        if fmt.recognises(head, path):
            return fmt.name
    # The formats a dump file may be given as: not the live topic, not share's own state.
    given = [f.name for f in formats.FORMATS if not f.live and not f.share_state]
    raise UserError(f"cannot tell the format of '{path}'; pass --input-format ({', '.join(given[:-1])} or {given[-1]})")


def _format_of(path: str, storage: Storage, files_under: Callable[[str], list[str]]) -> str:
    if "://" in path and not is_remote(path):
        return formats.PARQUET.name  # another store: a Kafka-source snapshot read by Spark
    if storage.is_dir(path):
        for fmt in formats.FORMATS:
            if fmt.subfolder and storage.is_dir(join(path, fmt.subfolder)):
                return fmt.name
        root = path.rstrip("/") + "/"
        kinds: set[str] = set()
        for file in files_under(path):
            folders = file[len(root) :].split("/")[:-1]
            # Hidden and Spark/Delta bookkeeping folders, but not the broker's __consumer_offsets-N.
            if any(f.startswith((".", "_")) and not f.startswith("__") for f in folders):
                continue
            kinds.update(fmt.name for fmt in formats.FORMATS if fmt.suffix and file.endswith(fmt.suffix))
        if len(kinds) == 1:
            return kinds.pop()
        raise UserError(f"cannot tell the format of the folder '{path}'; pass --input-format")
    return _sniff(path, storage)


def detect_formats(
    paths: list[str], storage: Storage, files_under: Callable[[str], list[str]]
) -> tuple[str, dict[str, str]]:
    """--input-format auto over the expanded paths: the one format all of them share, or MIXED for
    inputs of several formats that each hold raw records (read each by its own reader, then merged as
    copies); and each path's own format."""
    own = {path: _format_of(path, storage, files_under) for path in paths}
    kinds = set(own.values())
    if kinds == {formats.PARQUET.name, formats.DELTA.name}:
        return formats.PARQUET.name, own  # the parquet reader takes Delta folders too
    if len(kinds) != 1:
        if all(formats.by_name(kind).mixable for kind in kinds):
            return formats.MIXED.name, own
        raise UserError(f"the inputs mix formats ({', '.join(sorted(kinds))}); give one format per run")
    return kinds.pop(), own


def open_dump(inputs: list[str], settings: Settings, share: bool = False) -> OpenedDump:
    """The dump the inputs name, opened: paths expanded, --input-format auto worked out from them;
    kip932-json (share-state control records) only where `share` reads it."""
    from offset_audit.inputs.kafka_source import _expand

    storage = for_settings(settings)
    fmt = formats.input_format(settings)
    if fmt.live:
        return OpenedDump(tuple(inputs), (), settings, storage)
    if fmt.to_detect and not inputs:
        raise UserError("pass --input PATH (or --input-format kafka --bootstrap-server ...)")
    if fmt.share_state and not share:
        raise UserError(f"{settings.input.format} input holds share-group state: read it with offset-audit share")
    dump = OpenedDump(tuple(inputs), tuple(_expand(inputs, storage)), settings, storage)
    if fmt.to_detect:
        found, own = detect_formats(list(dump.paths), storage, dump.files_under)
        dump.settings = settings.replaced("input", format=found)
        dump.own_formats = own
        if dump.format.share_state and not share:
            raise UserError(f"{found} input holds share-group state: read it with offset-audit share")
    elif fmt.several_formats:  # a state or report that names MIXED: each path's own format again
        _, dump.own_formats = detect_formats(list(dump.paths), storage, dump.files_under)
    return dump


def opened(dump: OpenedDump | list[str], settings: Settings, share: bool = False) -> OpenedDump:
    """A run's dump: the one opened before Spark started, or, given paths (a caller of the runs that
    checked nothing first), opened here, once for the run."""
    return dump if isinstance(dump, OpenedDump) else open_dump(list(dump), settings, share)
