"""The Python workers' daemon of a warm session (spark.python.daemon.module): PySpark's own, after importing
what the job's tasks run.

Spark forks each Python worker from its daemon, and retires a worker after a minute without a task; in a
session that lives for hours most runs find their workers retired. Forked from this daemon, a new worker
has the decoders, pyarrow, numpy and the compiled segment walker loaded already (each import costs a
worker about 0.4 s with numba's walker), instead of importing them in its first task.
"""

from __future__ import annotations

import contextlib
import importlib

# What the tasks of decode, audit and share import (their functions are pickled by reference to them).
TASK_MODULES = (
    "pyarrow",
    "pyarrow.compute",
    "pyarrow.parquet",
    "numpy",
    "offset_audit.decoding.decoder",
    "offset_audit.decoding.fast_commits",
    "offset_audit.decoding.compaction",
    "offset_audit.outputs.fast_write",
    "offset_audit.outputs.scratch",
    "offset_audit.inputs.dump",
    "offset_audit.inputs.parquet_files",
    "offset_audit.inputs.log_files",
    "offset_audit.inputs.segments.fast_walk",
    "offset_audit.runs.share_fast_replay",
)


def preload() -> None:
    for name in TASK_MODULES:
        # one that fails here is imported again by the task that needs it, which says why it cannot
        with contextlib.suppress(Exception):
            importlib.import_module(name)


if __name__ == "__main__":
    from pyspark import daemon

    preload()
    daemon.manager()
