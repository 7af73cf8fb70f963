"""Where dumps and tables live: local (or mounted) folders, or an S3-compatible object store.

Paths are plain strings everywhere: an absolute local path, or `s3://bucket/key` (`s3a://` is taken as
`s3://`). `normalize` puts what a user types into that form on the driver, before any task sees it: a
relative path is made absolute (an executor would resolve it from its own work folder), `file://` is
dropped. A `Storage` holds what reaching an object store takes (credentials, endpoint, region: Kafka
operators' usual AWS_* names, as delta-rs reads them) and is shipped to the Python workers inside their
tasks, so executors need no environment of their own; pyarrow.fs does their reading and writing, and
delta-rs the driver's commits, from the same options.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, BinaryIO, TextIO

import pyarrow.fs as pafs

REMOTE_SCHEMES = ("s3://", "s3a://")
# Bytes fetched per object-store request when reading sequentially.
REMOTE_READ_BUFFER = 8 << 20
# The AWS_* variables delta-rs and this tool read from the driver's environment (AWS's own names).
AWS_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ALLOW_HTTP",
    "AWS_S3_ALLOW_UNSAFE_RENAME",
    "AWS_PROFILE",
)


@dataclass(frozen=True)
class FileStamp:
    """What tells a file that changed under the same name from the one read before: its size and when it
    was last written (epoch milliseconds; None where the store does not say)."""

    size: int
    modified_ms: int | None


def _stamp(info: pafs.FileInfo) -> FileStamp:
    modified = info.mtime_ns // 1_000_000 if info.mtime_ns is not None else None
    return FileStamp(info.size, modified)


def is_remote(path: str) -> bool:
    return path.startswith(REMOTE_SCHEMES)


def is_local(path: str) -> bool:
    """A path of this machine's file system (`normalize` left it without a scheme): not an object store,
    nor a scheme only a session's delta-spark reaches (hdfs://, abfss://)."""
    return "://" not in path


def normalize(path: str) -> str:
    """A path as the tool keeps it: absolute local, or s3://."""
    if path.startswith("s3a://"):
        return "s3://" + path[len("s3a://") :]
    if is_remote(path):
        return path
    if path.startswith("file://"):
        path = path[len("file://") :]
    if "://" in path:
        return path  # another scheme: refused where it is used, with the schemes that work
    return os.path.abspath(os.path.expanduser(path))


def spark_path(path: str) -> str:
    """A path as Spark's Hadoop file systems take it: S3 through the s3a connector."""
    return "s3a://" + path[len("s3://") :] if path.startswith("s3://") else path


def join(base: str, *names: str) -> str:
    return "/".join([base.rstrip("/"), *names]) if is_remote(base) else os.path.join(base, *names)


def parent(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[0] if is_remote(path) else os.path.dirname(path)


def basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Storage:
    """The options that reach an object store, as delta-rs names them (AWS_ENDPOINT_URL, ...)."""

    options: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, options: Mapping[str, str]) -> Storage:
        return cls(tuple(sorted((str(k), str(v)) for k, v in options.items())))

    @property
    def delta_options(self) -> dict[str, str]:
        """For delta-rs, which refuses plain HTTP unless told: an http:// endpoint the user gave is taken
        as that permission (pyarrow follows the endpoint's scheme on its own)."""
        options = dict(self.options)
        endpoint = options.get("AWS_ENDPOINT_URL", "")
        if endpoint.lower().startswith("http://") and "AWS_ALLOW_HTTP" not in options:
            options["AWS_ALLOW_HTTP"] = "true"
        return options

    @cached_property
    def _s3(self) -> pafs.S3FileSystem:
        options = {k.upper(): v for k, v in self.options}
        kwargs: dict[str, Any] = {}
        if "AWS_ACCESS_KEY_ID" in options:
            kwargs["access_key"] = options["AWS_ACCESS_KEY_ID"]
            kwargs["secret_key"] = options.get("AWS_SECRET_ACCESS_KEY", "")
            if "AWS_SESSION_TOKEN" in options:
                kwargs["session_token"] = options["AWS_SESSION_TOKEN"]
        region = options.get("AWS_REGION") or options.get("AWS_DEFAULT_REGION")
        if region:
            kwargs["region"] = region
        endpoint = options.get("AWS_ENDPOINT_URL")
        if endpoint:
            scheme, _, host = endpoint.partition("://")
            kwargs["endpoint_override"] = host.rstrip("/") if host else endpoint
            kwargs["scheme"] = scheme if host else "https"
        return pafs.S3FileSystem(**kwargs)

    def filesystem(self, path: str) -> tuple[pafs.FileSystem, str]:
        """The pyarrow file system and the path within it."""
        if is_remote(path):
            return self._s3, path.split("://", 1)[1]
        return pafs.LocalFileSystem(), path

    # Reading ---------------------------------------------------------------------------------------

    def open_input_file(self, path: str, buffer_size: int = REMOTE_READ_BUFFER) -> BinaryIO:
        """A seekable binary file, buffered: a log segment is read a batch (often under 200 bytes) at a
        time, and from an object store each unbuffered read would be a request of its own. Give a
        small `buffer_size` to read only a file's first bytes."""
        if not is_remote(path):
            return open(path, "rb", buffering=min(buffer_size, 1 << 20))
        fs, inner = self.filesystem(path)
        return io.BufferedReader(fs.open_input_file(inner), buffer_size=buffer_size)

    def parquet_source(self, path: str) -> Any:
        """What pyarrow's Parquet reader takes: a local path (read natively, not through Python) or an
        object-store file."""
        if not is_remote(path):
            return path
        fs, inner = self.filesystem(path)
        return fs.open_input_file(inner)

    def open_text(self, path: str, errors: str = "surrogateescape") -> TextIO:
        """A text dump as UTF-8. Kafka's tools print UTF-8; bytes that are not (a damaged file, a dump made
        on a machine with another default charset) are kept as surrogate escapes by default, so
        re-encoding a name that holds them fails and the record is quarantined instead of silently renamed."""
        if not is_remote(path):
            return open(path, encoding="utf-8", errors=errors, newline="\n")
        fs, inner = self.filesystem(path)
        stream = fs.open_input_stream(inner, buffer_size=REMOTE_READ_BUFFER)
        return io.TextIOWrapper(stream, encoding="utf-8", errors=errors, newline="\n")

    def info(self, path: str) -> pafs.FileInfo:
        fs, inner = self.filesystem(path)
        return fs.get_file_info(inner)

    def exists(self, path: str) -> bool:
        if not is_remote(path):
            return os.path.exists(path)
        return bool(self.info(path).type != pafs.FileType.NotFound)

    def is_dir(self, path: str) -> bool:
        if not is_remote(path):
            return os.path.isdir(path)
        return bool(self.info(path).type == pafs.FileType.Directory)

    def size(self, path: str) -> int:
        if not is_remote(path):
            return os.path.getsize(path)
        return int(self.info(path).size)

    def stored_size(self, path: str) -> int:
        """The bytes a read of the file goes through: a local file's holes (a preallocated segment's unused
        tail, sparse where the broker wrote it) are stepped over, not read (`segments.framing`)."""
        if not is_remote(path):
            stat = os.stat(path)
            return min(stat.st_size, stat.st_blocks * 512) if hasattr(stat, "st_blocks") else stat.st_size
        return int(self.info(path).size)

    def files_under(self, path: str) -> list[str]:
        """Every file under the folder, sorted, as paths of the same kind as `path`."""
        return sorted(self.listing(path))

    def listing(self, path: str) -> dict[str, FileStamp]:
        """Every file under the folder, as paths of the same kind as `path`, with its size and when it
        was last written: one listing (an object store's LIST) tells both."""
        fs, inner = self.filesystem(path)
        infos = fs.get_file_info(pafs.FileSelector(inner, recursive=True, allow_not_found=True))
        prefix = path.split("://", 1)[0] + "://" if is_remote(path) else ""
        return {prefix + i.path: _stamp(i) for i in infos if i.type == pafs.FileType.File}

    def stamp(self, path: str) -> FileStamp:
        """One file's size and when it was last written."""
        if not is_remote(path):
            stat = os.stat(path)
            return FileStamp(stat.st_size, stat.st_mtime_ns // 1_000_000)
        return _stamp(self.info(path))

    def file_sizes(self, path: str) -> dict[str, tuple[int, float]]:
        """Every file under the folder, its size and when it was last written (seconds since the epoch),
        by path relative to the folder."""
        root = path.rstrip("/") + "/"
        return {
            file[len(root) :]: (stamp.size, (stamp.modified_ms or 0) / 1000)
            for file, stamp in self.listing(path).items()
        }

    def entries(self, path: str) -> list[str]:
        """The names directly inside a folder (none when it does not exist)."""
        if not is_remote(path):
            return sorted(os.listdir(path)) if os.path.isdir(path) else []
        fs, inner = self.filesystem(path)
        infos = fs.get_file_info(pafs.FileSelector(inner, recursive=False, allow_not_found=True))
        return sorted(basename(i.path) for i in infos)

    # Writing ---------------------------------------------------------------------------------------

    def open_output_stream(self, path: str) -> Any:
        if not is_remote(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            return open(path, "wb")
        fs, inner = self.filesystem(path)
        return fs.open_output_stream(inner)

    def delete_dir(self, path: str) -> None:
        if not is_remote(path):
            shutil.rmtree(path, ignore_errors=True)
            return
        fs, inner = self.filesystem(path)
        with contextlib.suppress(OSError):  # already gone
            fs.delete_dir(inner)


LOCAL = Storage()


def for_settings(settings: Any) -> Storage:
    """The Storage of a run: the driver's AWS_* variables, the config's [storage], --storage-option."""
    return Storage.of(storage_options(settings.storage))


def storage_options(configured: Mapping[str, str], environment: Mapping[str, str] | None = None) -> dict[str, str]:
    """The driver's AWS_* variables, overlaid by the config's [storage] table and --storage-option flags."""
    environment = os.environ if environment is None else environment
    options = {name: environment[name] for name in AWS_VARIABLES if environment.get(name)}
    options.update(configured)
    return options
