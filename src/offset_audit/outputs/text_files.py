"""The files the read commands write for people and other programs: the delete script, the report page,
the metrics file. Each is written whole, so a reader (a shell, a browser, node_exporter's collector)
sees the old file or the new one, never half of one.

Nothing here loads Spark: the read commands answer in about a second.
"""

from __future__ import annotations

import os
import tempfile

from offset_audit.storage import Storage, is_remote


def replace_file(path: str, data: bytes, mode: int | None = None, executable: bool = False) -> None:
    """Write a local file whole: into a temporary file beside it, flushed to disk, then renamed over
    it, so a reader (a browser, node_exporter's collector, a shell) sees the old file or the new one,
    never half of one, and a symlink at `path` is replaced, not written through. `mode` is the file's
    permissions; by default what open() would give under the umask (mkstemp's own are private to the
    owner), with the execute bits the umask allows where `executable`."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".offset-audit-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = (0o777 if executable else 0o666) & ~umask
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def write_page(output: str, html: str, storage: Storage) -> int:
    """Write the report page whole: locally through a temporary file renamed over `output`; to an object
    store in one put. Returns its size in bytes."""
    data = html.encode("utf-8")
    if is_remote(output):
        with storage.open_output_stream(output) as stream:
            stream.write(data)
        return len(data)
    replace_file(output, data)
    return len(data)


def write_script(path: str, text: str) -> None:
    """The delete plan as a shell script: whole, never through a symlink at `path`, and executable as far
    as the umask lets files be."""
    replace_file(path, text.encode("utf-8"), executable=True)


def write_metrics_file(path: str, text: str) -> None:
    """A Prometheus text file for node_exporter's textfile collector: renamed over the target (a scrape
    sees the old file or the new one), readable by all, since node_exporter usually runs as another user."""
    replace_file(path, text.encode("utf-8"), mode=0o644)
