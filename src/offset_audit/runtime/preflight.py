"""Everything a run needs, checked before the Spark session starts and before anything is written.

Starting Spark and decoding a dump takes tens of seconds; a typo in an option or a wrong output folder
must not cost that, nor leave half a run behind. Each check raises a UserError of one sentence, which
the CLI prints and exits 2 on. The checks read only file names, headers and Parquet footers.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.fs as pafs

from offset_audit.errors import InputNotFound, UserError
from offset_audit.inputs import formats
from offset_audit.settings import BY_DEST, Settings
from offset_audit.storage import LOCAL, Storage, for_settings, is_remote, join, normalize

if TYPE_CHECKING:
    import pyarrow as pa

    from offset_audit.inputs.opened import OpenedDump


# What delta-rs cannot take in a table's path, local or s3:// (deltalake 1.x): it builds an object-store
# URL from the path, so '^', '[', ']' and '|' make it panic ("Invalid object store url"), a backslash is
# read as a separator, and '%' with two hex digits is percent-decoded when the table is read back (a
# folder named out%25 is written, then looked for as out%). file:// URLs with escapes fare the same.
DELTA_REFUSED = re.compile(r"[\^\[\]|\\]|%[0-9A-Fa-f]{2}")
# In an s3:// key delta-rs also cuts the path at '#' or '?' (a URL's fragment and query): out#x would be
# written as out, into whatever table is there.
DELTA_REFUSED_REMOTE = re.compile(r"[\^\[\]|\\#?]|%[0-9A-Fa-f]{2}")


def check_delta_path(path: str, option: str) -> None:
    """A folder of Delta tables (written, or read back) must hold none of DELTA_REFUSED (nor, in an
    object store, DELTA_REFUSED_REMOTE)."""
    found = (DELTA_REFUSED_REMOTE if is_remote(path) else DELTA_REFUSED).search(path)
    if found:
        text = found.group()
        named = "a backslash" if text == "\\" else f"'{text}' (a URL escape)" if len(text) == 3 else f"'{text}'"
        raise UserError(
            f"{option} {path} holds {named}, which the Delta writer (delta-rs) cannot take in a path: "
            "choose a folder without it"
        )


def check_output(output: str, tables: Iterable[str], settings: Settings) -> None:
    """`output` can hold the tables this run writes (paths relative to it): it is a folder or can
    become one, it is writable (an object store: reachable, its bucket there), and no table's place holds
    anything but that Delta table. A delta-spark session writes any URI through Spark's own connectors
    (hdfs://, abfss://, s3a:// with hadoop-aws), which it alone can check."""
    from offset_audit.outputs.delta import DELTA_SPARK_MISSING, check_table_dir
    from offset_audit.runtime.session import delta_spark_configured

    by_spark = settings.output.writer != "delta-rs" and delta_spark_configured(settings.spark)
    if settings.output.writer == "delta-spark" and not by_spark:
        raise UserError(DELTA_SPARK_MISSING)
    if "://" in output and not is_remote(output) and by_spark:
        return  # written by Spark, through its own connectors and their credentials
    check_delta_path(output, "--output")
    storage = for_settings(settings)
    check_output_path(
        output,
        "--output",
        storage,
        folder=True,
        other_schemes="(other file systems need a delta-spark session: see docs/cluster.md)",
    )
    for table in tables:
        check_table_dir(join(output, table), storage if is_remote(output) else LOCAL)


def check_output_path(
    path: str,
    option: str,
    storage: Storage | None = None,
    *,
    folder: bool = False,
    suffix: tuple[str, str] | None = None,
    other_schemes: str = "",
) -> None:
    """Where a command will write can be written, asked before anything is read: the one check of every
    writer (the output folder, the report page, the metrics file, the delete script).

    A local path must be a folder that exists or can be created (`folder`), or a file name in an existing
    folder that is not itself a folder or a device; in both cases a file is really created there and
    removed: os.access answers yes to root where a write fails (/proc, a read-only or special file
    system). `suffix`: the name the file must end with, and why. An s3:// path, where `storage` is given
    (the writer can write there), must have a bucket
    that answers with these credentials. The files are written whole, by a rename over the path, so what
    a path points to (a symlink's target) is never written through."""
    if suffix is not None and (is_remote(path) or not path.endswith(suffix[0])):
        raise UserError(f"{option} {path} must be a local file named *{suffix[0]}, {suffix[1]}")
    if is_remote(path) and storage is not None:
        check_reachable(path, storage)
        return
    if "://" in path:
        takes = "a local path or an s3:// URI" if storage is not None else "a local path"
        raise UserError(" ".join(f"{option} takes {takes}, not {path} {other_schemes}".split()))
    target = Path(path)
    if folder:
        if target.exists() and not target.is_dir():
            raise UserError(f"{option} {path} is a file, not a folder")
        writable = target
        while not writable.exists():
            writable = writable.parent
        if not writable.is_dir():
            raise UserError(f"{option} {path} cannot be created: {writable} is a file")
    else:
        if target.is_dir():
            raise UserError(f"{option} {path} is a folder; give a file name")
        writable = target.parent
        if not writable.is_dir():
            raise UserError(f"{option} {path} cannot be written: the folder {writable} does not exist")
        if target.exists() and not target.is_symlink() and not target.is_file():
            raise UserError(f"{option} {path} is not a regular file (a device or a pipe); give a file name")
    try:
        handle, probe = tempfile.mkstemp(prefix=".offset-audit-probe-", dir=writable)
        os.close(handle)
        os.unlink(probe)
    except OSError as err:
        raise UserError(f"{option} {path} cannot be written: {writable}: {err.strerror}") from err


def check_reachable(path: str, storage: Storage) -> None:
    """An object-store path's bucket exists and answers with the credentials given (the AWS_* variables,
    [storage] in the config, --storage-option), asked once before anything starts."""
    bucket = path.split("://", 1)[1].split("/", 1)[0]
    scheme = path.split("://", 1)[0]
    try:
        found = storage.info(f"{scheme}://{bucket}").type
    except OSError as err:
        reason = str(err).splitlines()[0]
        if any(word in reason for word in ("ACCESS_DENIED", "AccessDenied", "InvalidAccessKeyId", "403")):
            reason += " (check the credentials: AWS_* variables, [storage] in the config, --storage-option)"
        raise UserError(f"cannot reach {path}: {reason}") from err
    if found == pafs.FileType.NotFound:
        raise UserError(
            f"the bucket of {path} does not exist or cannot be seen with these credentials (AWS_* variables, "
            "[storage] in the config, --storage-option)"
        )


def check_end_offsets(path: str | None, settings: Settings, start_offsets: str | None = None) -> pa.Table | None:
    """The end offsets the run uses, or None without --end-offsets: the file (and --start-offsets) read
    here whole, one line per topic partition, and checked; or, with `--end-offsets kafka`, asked of the
    --bootstrap-server cluster (within 10 s, before Spark starts)."""
    from offset_audit.inputs import kafka_end_offsets
    from offset_audit.inputs.end_offsets import load_end_offsets

    if not path:
        if start_offsets:
            raise UserError("--start-offsets goes with --end-offsets (kafka-get-offsets.sh --time -1 output)")
        return None
    if path == kafka_end_offsets.FROM_CLUSTER:
        if start_offsets:
            raise UserError("--end-offsets kafka asks the cluster for the log start offsets too: drop --start-offsets")
        if not settings.kafka.bootstrap_servers:
            raise UserError("--end-offsets kafka needs --bootstrap-server HOST:PORT[,HOST:PORT], the cluster to ask")
        return kafka_end_offsets.fetch_end_offsets(settings.kafka.bootstrap_servers, settings.kafka.options)
    starts = normalize(start_offsets) if start_offsets else None
    return load_end_offsets(normalize(path), for_settings(settings), starts)


def check_file(path: str, option: str) -> None:
    if not os.path.isfile(path):
        raise InputNotFound(f"{option} '{path}' does not exist")


def check_inputs(inputs: list[str], settings: Settings, share: bool = False) -> OpenedDump:
    """The inputs exist and are what the run expects: the dump opened (`inputs.opened`), its format worked
    out (`auto` replaced) and its files listed, so the run takes it as it is and works out none of it again."""
    from offset_audit.inputs.opened import open_dump

    if formats.input_format(settings).live:
        if not settings.kafka.bootstrap_servers:
            raise UserError("--input-format kafka needs --bootstrap-server HOST:PORT[,HOST:PORT]")
        return open_dump(inputs, settings, share)
    storage = for_settings(settings)
    for item in inputs:
        if is_remote(item):
            check_reachable(item, storage)
    dump = open_dump(inputs, settings, share)
    for part in dump.parts:  # MIXED: each input as what it is
        fmt = part.format
        if fmt.delta_table:  # read through delta-rs, as the tables are
            for item in part.inputs:
                check_delta_path(item, "--input")
        if fmt.log_files or fmt.share_state:
            part.log_units  # noqa: B018 - listed, and refused here where it holds no such files
        elif part.read_by_workers:
            part.pieces  # noqa: B018 - every footer read, and each schema checked
    return dump


def check_retention_list(text: str, option: str = "--retention-minutes") -> list[int]:
    """whatif's comma-separated retentions (minutes or durations), each one the broker can hold."""
    from offset_audit.durations import parse_minutes

    values = [parse_minutes(v, option) for v in text.split(",") if v.strip()]
    if not values:
        raise UserError(f"{option} needs at least one number of minutes")
    return [BY_DEST["retention_minutes"].validated(value, option) for value in values]
