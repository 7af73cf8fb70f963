"""Where a warm session lives and what a run must share with it to use it.

One session per user and Python (the virtual environment's interpreter): its socket, log and state sit
in the user's cache folder under a name made from that interpreter's path, so two checkouts never hand
runs to each other. A run uses the session only when the session runs the same code (a fingerprint of
the package's files) and its JVM saw the same environment: the variables a JVM, Spark, Hadoop or an
object store read when the session started (credentials among them) cannot change under a running JVM.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

import offset_audit

# Variables the session's JVM (and the libraries in it) read when it started.
JVM_ENV_PREFIXES = ("JAVA_", "JDK_", "_JAVA_", "SPARK_", "PYSPARK_", "HADOOP_", "YARN_", "AWS_", "HIVE_")
JVM_ENV_NAMES = ("CLASSPATH", "TZ", "LD_LIBRARY_PATH", "LD_PRELOAD")
# An AF_UNIX socket's path must fit in 108 bytes.
MAX_SOCKET_PATH = 100


def cache_folder() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kafka-offset-audit"


def session_name() -> str:
    python = os.path.realpath(sys.executable)
    return "warm-" + hashlib.sha1(python.encode()).hexdigest()[:10]


def folder() -> Path:
    """The session's folder: the cache folder, or a private one under the temporary folder when that path
    is too long for a socket."""
    place = cache_folder()
    if len(str(place / session_name())) + 6 > MAX_SOCKET_PATH:
        place = Path(tempfile.gettempdir()) / f"kafka-offset-audit-{os.getuid()}"
    return place


def socket_path() -> Path:
    return folder() / f"{session_name()}.sock"


def log_path() -> Path:
    return folder() / f"{session_name()}.log"


def lock_path() -> Path:
    return folder() / f"{session_name()}.lock"


def make_folder() -> Path:
    place = folder()
    place.mkdir(parents=True, exist_ok=True, mode=0o700)
    return place


def code_fingerprint() -> str:
    """The package's files as they are now (names, sizes, modification times) and the interpreter: a run
    with other code than the session's would give other answers."""
    root = Path(offset_audit.__file__).parent
    digest = hashlib.sha1(f"{os.path.realpath(sys.executable)} {sys.version}".encode())
    for path, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            stat = os.stat(os.path.join(path, name))
            digest.update(
                f"{os.path.relpath(os.path.join(path, name), root)} {stat.st_size} {stat.st_mtime_ns}\n".encode()
            )
    return digest.hexdigest()


def jvm_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of `environ` a JVM started with it would have read."""
    return {k: v for k, v in environ.items() if k.startswith(JVM_ENV_PREFIXES) or k in JVM_ENV_NAMES}


def environment_difference(session: Mapping[str, str], run: Mapping[str, str]) -> str | None:
    """The first variable the session's JVM saw otherwise than this run would (its name only: values
    may be secrets), or None."""
    ours, theirs = jvm_environment(session), jvm_environment(run)
    for name in sorted(set(ours) | set(theirs)):
        if ours.get(name) != theirs.get(name):
            return name
    return None
