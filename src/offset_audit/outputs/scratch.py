"""A run's scratch folder in the output, and the clearing of scratch that dead runs left behind.

The audit's decode tasks leave each key's last commit in `_replay-*` inside the output folder; the run
removes it when it ends, but a run killed with SIGKILL (or a lost machine) cannot. Each scratch folder
therefore holds an `.owner` file its run keeps locked (flock) for as long as it lives: the kernel drops
the lock when the process dies, however it dies. A later run takes the lock of every `_replay-*` it
finds; where it gets it, the owner is gone and the folder is removed; where it does not, a run is still
going (two audits into one folder at once) and its scratch is left alone.
"""

from __future__ import annotations

import fcntl
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from offset_audit.decoding.compaction import latest_commits
from offset_audit.decoding.decoder import arrow_schema
from offset_audit.outputs.fast_write import bucket_of
from offset_audit.python_tasks import run_tasks
from offset_audit.storage import Storage, is_remote, join

PREFIX = "_replay-"
OWNER = ".owner"
# A scratch folder without an owner file was made by an older version of this tool, or by a run killed in
# the instant between creating the folder and locking its file: left alone until it is this old.
UNOWNED_GRACE_SECONDS = 3600


@contextmanager
def scratch_folder(root: str, storage: Storage) -> Iterator[str]:
    """A fresh scratch folder under `root`, locked for the block and removed after it; scratch of dead
    runs is cleared first. In an object store, which has no locks, scratch is cleared once it is
    UNOWNED_GRACE_SECONDS old (no run writes to its scratch for that long: it is written while decoding)."""
    name = f"{PREFIX}{uuid.uuid4().hex[:12]}"
    if is_remote(root):
        clear_stale_remote_scratch(root, storage)
        remote_folder = join(root, name)
        try:
            yield remote_folder
        finally:
            storage.delete_dir(remote_folder)
        return
    local = Path(root)
    local.mkdir(parents=True, exist_ok=True)
    clear_dead_scratch(local)
    folder = local / name
    folder.mkdir()
    owner = open(folder / OWNER, "w")  # noqa: SIM115 - held open: the lock lives as long as the run
    try:
        fcntl.flock(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield str(folder)
    finally:
        owner.close()
        shutil.rmtree(folder, ignore_errors=True)


def clear_stale_remote_scratch(root: str, storage: Storage) -> list[str]:
    """Remove the scratch folders under an object-store `root` whose newest file is past the grace."""
    removed = []
    fs, inner = storage.filesystem(root)
    for name in storage.entries(root):
        if not name.startswith(PREFIX):
            continue
        folder = join(root, name)
        infos = fs.get_file_info(pafs.FileSelector(f"{inner.rstrip('/')}/{name}", recursive=True))
        newest = max((i.mtime.timestamp() for i in infos if i.mtime is not None), default=0.0)
        if time.time() - newest >= UNOWNED_GRACE_SECONDS:
            storage.delete_dir(folder)
            removed.append(folder)
    return removed


def clear_dead_scratch(root: Path) -> list[Path]:
    """Remove the scratch folders under `root` whose run is gone; the folders removed."""
    removed = []
    for folder in sorted(root.glob(f"{PREFIX}*")):
        if folder.is_dir() and not _owner_alive(folder):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _owner_alive(folder: Path) -> bool:
    owner = folder / OWNER
    try:
        handle = open(owner)  # noqa: SIM115 - closed below, after the lock test
    except FileNotFoundError:
        try:
            return time.time() - folder.stat().st_mtime < UNOWNED_GRACE_SECONDS
        except FileNotFoundError:  # another run cleared it just now
            return True
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
    return False


def merge_latest_commits(
    files: list[str], scratch: str, storage: Storage, name: str = "latest-commits"
) -> tuple[str, int]:
    """The decode tasks' compacted commits as one file `<scratch>/<name>.parquet` of one record per key
    (see `offset_audit.decoding.compaction.latest_commits`): its path and rows. The driver does this for
    a small state, which it holds easily; `merge_latest_commits_by_bucket` spreads a larger one."""
    schema = arrow_schema("offset_commits")
    parts = [pq.read_table(storage.parquet_source(file), schema=schema) for file in files]
    merged = latest_commits(pa.concat_tables(parts))
    path = join(scratch, f"{name}.parquet")
    with storage.open_output_stream(path) as sink:
        pq.write_table(merged, sink)
    return path, merged.num_rows


def merge_latest_commits_by_bucket(spark, files: list[str], scratch: str, storage: Storage) -> dict[str, int]:
    """`merge_latest_commits` of each bucket of group ids in a Spark task of its own (the decode tasks
    wrote a file per bucket, `offset_audit.outputs.fast_write`): every merged file and its rows.

    A key's rows from every decode task are in one bucket, so each merged file holds one record per key
    and the replay needs no window over them. That window shuffled and sorted every task's rows whole
    (on a 5M-record dump holding 657,673 live offsets, 1.15M rows of about 200 bytes); judging and writing
    partition_verdicts went from 27-31 s to 15-17 s there, and from 65.5 s to 25.7 s at 20M records
    and 2.7M live offsets (whole processes)."""
    by_bucket: dict[int, list[str]] = {}
    for file in files:
        by_bucket.setdefault(bucket_of(file), []).append(file)
    work = sorted(by_bucket.items())

    def merge(buckets: Iterator[tuple[int, list[str]]]) -> Iterator[tuple[str, int]]:
        for bucket, parts in buckets:
            yield merge_latest_commits(parts, scratch, storage, f"latest-commits-b{bucket:03d}")

    return dict(run_tasks(spark, [[item] for item in work], merge))
