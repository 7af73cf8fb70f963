"""A Kafka-source snapshot's data files as an incremental audit keeps them: which it read, so that the
next run opens only the others (docs/incremental.md, "What each input resumes from").

A scheduled export grows a snapshot by adding files. Spark's own file stream source keeps a log of the
files it has seen for the same reason; here the list is part of the state (DIR/state/files) and is
committed with it, before the positions that name its version.

- Parquet: a file is the one read before when its path, size and time are. One that changed under the
  same name is read again (its records below the positions are dropped as read, as always), and the
  run says which. One gone from the input is forgotten: its records were read, and the state holds
  what a full read would still replay of them.
- Delta: the files of the version read, as its log gives them. Data files never change, so the files
  of later versions that the list lacks are what those versions added. Versions that removed a file
  read before (a compaction, an overwrite, a delete) may have rewritten its records into files that
  look new, so then every file of the current version is read, past the positions.

A partition's last record read need not be found again while the file it was read in is there as it
was (`LastRead.file`): the log read is still there. Where that file changed, or a Delta table's versions
rewrote files, it is looked for (`Resume.probes`), as a run without a file list does.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SeenFile:
    """A data file as it was read: its path, size and last-written time (epoch milliseconds)."""

    path: str
    size: int
    modified_ms: int | None


@dataclass(frozen=True)
class SeenFiles:
    """A snapshot's data files, and the Delta version they are of (None: Parquet files)."""

    files: tuple[SeenFile, ...]
    table_version: int | None = None

    @property
    def by_path(self) -> dict[str, SeenFile]:
        return {f.path: f for f in self.files}


@dataclass(frozen=True)
class FilesToRead:
    """What a resumed run opens of a snapshot, and why."""

    paths: tuple[str, ...]
    new: int
    changed: tuple[str, ...]  # read before, another size or time now: read again
    unopened: int  # read before and unchanged: left unopened
    gone: int  # read before, no longer in the input
    # Delta: versions after the one read removed files it had read; every current file is read.
    rewritten: bool = False

    @property
    def read_before(self) -> tuple[str, ...]:
        """The files opened whose records may have been read before: the changed ones, or every one of a
        Delta table whose versions since rewrote files."""
        return self.paths if self.rewritten else self.changed

    def look_for(self, file: str | None) -> bool:
        """Whether a partition's last record read, read in `file` (None: not known), must be found again:
        that file changed since, or the Delta versions since rewrote files."""
        return self.rewritten or (bool(self.changed) and (file is None or file in self.changed))

    def note(self, before: SeenFiles, now: SeenFiles) -> str:
        """One line for the summary: what the run opened, against the files `before` it read."""
        version_now = now.table_version
        delta = "" if version_now is None else f" (Delta version {before.table_version} read before, {version_now} now)"
        if self.rewritten:
            return (
                f"files: every one of the {len(self.paths):,} read again, as later versions removed files the "
                f"run before read{delta}"
            )
        parts = [f"{self.new:,} new read", f"{self.unopened:,} read before left unopened"]
        if self.changed:
            names = ", ".join(p.rsplit("/", 1)[-1] for p in self.changed[:3])
            more = f" and {len(self.changed) - 3:,} more" if len(self.changed) > 3 else ""
            parts.insert(1, f"{len(self.changed):,} changed since read again ({names}{more})")
        if self.gone:
            parts.append(f"{self.gone:,} read before gone")
        return f"files: {', '.join(parts)}{delta}"


def files_to_read(now: SeenFiles, before: SeenFiles) -> FilesToRead:
    """The files a resumed run opens, from the snapshot's files now and those the state says it read."""
    read = before.by_path
    current = now.by_path
    gone = sum(1 for path in read if path not in current)
    if now.table_version is not None and gone:
        return FilesToRead(tuple(current), 0, (), 0, gone, rewritten=True)
    new = [f.path for f in now.files if f.path not in read]
    changed = [
        f.path
        for f in now.files
        if f.path in read and (f.size, f.modified_ms) != (read[f.path].size, read[f.path].modified_ms)
    ]
    unopened = len(current) - len(new) - len(changed)
    return FilesToRead((*new, *changed), len(new), tuple(changed), unopened, gone)
