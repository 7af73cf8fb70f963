"""A local session's JVM, started as pyspark starts it (spark-submit, serving py4j), with its stderr
passed on but for the one line the JDK writes at every start because of Spark's launcher.

Spark's launcher gives every driver JVM `--add-modules=jdk.incubator.vector` (its JavaModuleOptions,
with no setting to leave it out), and the JDK says "WARNING: Using incubator modules:
jdk.incubator.vector" on stderr whenever an incubator module is resolved (ModuleBootstrap, before any
code of Spark's runs; no JVM option silences it). It is nothing a user can act on, and cron mailed it
after every `--quiet` run. So the JVM's stderr is a pipe, and a thread copies it to this process's
stderr line by line without that exact line: whatever else the JVM says (log4j's errors, a crash)
passes unchanged. What the JVM writes after this process has exited, as it shuts down, is lost.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Mapping
from typing import BinaryIO

from offset_audit.session_kind import classic_start

INCUBATOR_WARNING = b"WARNING: Using incubator modules: jdk.incubator.vector"


@classic_start
def start_gateway(conf: Mapping[str, str]) -> None:
    """Start this process's JVM with `conf` (the local session's settings: the launcher takes the
    driver's memory and Java options from them), unless it has one already."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    launched_with = SparkConf(loadDefaults=False)  # no JVM yet: a plain mapping, as spark-submit's --conf
    for name, value in conf.items():
        launched_with.set(name, value)
    gateway = launch_gateway(launched_with, popen_kwargs={"stderr": subprocess.PIPE})
    # Where the JVM's stderr would have gone: this process's stderr as it is now.
    stderr = os.dup(2)
    threading.Thread(target=pass_on, args=(gateway.proc.stderr, stderr), name="jvm-stderr", daemon=True).start()
    SparkContext._ensure_initialized(gateway=gateway)


def pass_on(jvm_stderr: BinaryIO, stderr: int) -> None:
    """Copy the JVM's stderr to the file descriptor `stderr`, line by line, but for the JDK's
    incubator warning; until the JVM closes it."""
    with jvm_stderr, os.fdopen(stderr, "wb", buffering=0) as target:
        for line in jvm_stderr:
            if line.rstrip(b"\r\n") != INCUBATOR_WARNING:
                target.write(line)
