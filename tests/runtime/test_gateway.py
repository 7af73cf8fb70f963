"""A local session's JVM passes its stderr on without the JDK's incubator warning (offset_audit.runtime.gateway)."""

from __future__ import annotations

import io
import os

from offset_audit.runtime.gateway import INCUBATOR_WARNING, pass_on


def test_the_jdk_incubator_warning_is_dropped_and_every_other_line_passes_unchanged(tmp_path):
    jvm_said = [
        INCUBATOR_WARNING + b"\n",
        b"26/01/01 10:00:00 ERROR Executor: the task failed\n",
        b"WARNING: Using incubator modules: jdk.incubator.vector, jdk.incubator.foreign\n",
        b"a last line without its newline",
    ]
    passed_on = tmp_path / "stderr"
    with open(passed_on, "wb") as target:
        pass_on(io.BytesIO(b"".join(jvm_said)), os.dup(target.fileno()))
    assert passed_on.read_bytes() == b"".join(jvm_said[1:])
