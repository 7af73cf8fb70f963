"""A local session's JVM: its options and the class-data archive small audits map (offset_audit.runtime.local_jvm)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from offset_audit.runtime import local_jvm
from offset_audit.runtime.local_jvm import QUICK_JVM_BYTES, QUICK_JVM_OPTIONS, check_java, driver_java_options

# Starts a run's session over the dump argv[1] in a fresh process (the tests' own session is started
# already) and prints its JVM's options, then, with argv[2] "info", what the JVM says of itself.
SHOW_JVM = """
import subprocess, sys
from offset_audit.runtime.config import load_settings
from offset_audit.runtime.session import start_spark
spark = start_spark(load_settings(), [sys.argv[1]])
print(list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()))
if sys.argv[2:] == ["info"]:
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    print(subprocess.run(["jcmd", str(pid), "VM.info"], capture_output=True, text=True).stdout)
spark.stop()
"""


def _jvm_of_a_small_run(tmp_path, *args: str) -> str:
    dump = tmp_path / "dump.parquet"
    pq.write_table(pa.table({"key": [b"k"], "value": [b"v"]}), dump)
    shown = subprocess.run(
        [sys.executable, "-c", SHOW_JVM, str(dump), *args], capture_output=True, text=True, timeout=300
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    return shown.stdout


@pytest.mark.heavy
def test_the_java_version_line_is_the_one_naming_the_version_whatever_the_jvm_prints_first(monkeypatch):
    """With JAVA_TOOL_OPTIONS set, `java -version` starts with "Picked up JAVA_TOOL_OPTIONS: ...": the
    archive is still named after the version line, so such a run finds the archive `make setup` built."""
    plain = check_java()
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-Dkafka.offset.audit.test=1")
    assert check_java() == plain
    assert 'version "' in plain


@pytest.mark.heavy
def test_the_archive_is_used_only_once_built_and_only_for_small_dumps(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    java = check_java()
    assert local_jvm.sharing_options(java) == ""
    archive = local_jvm.archive_path(java)
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"built")
    assert local_jvm.sharing_options(java).startswith(f"-XX:SharedArchiveFile={archive} ")
    assert f"-XX:SharedArchiveFile={archive}" in driver_java_options("log4j2.properties", 1000, java)
    assert "SharedArchive" not in driver_java_options("log4j2.properties", QUICK_JVM_BYTES + 1, java)
    assert local_jvm.archive_path(java + " another build") != archive


@pytest.mark.heavy
def test_a_jvm_given_an_archive_it_cannot_use_starts_without_it_and_says_nothing(tmp_path):
    stale = tmp_path / "stale.jsa"
    stale.write_bytes(b"not an archive" * 100)
    ran = subprocess.run(
        ["java", f"-XX:SharedArchiveFile={stale}", *local_jvm.QUIET.split(), "-version"],
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0
    assert all("version" in line or "Runtime" in line or "VM" in line for line in ran.stderr.splitlines())


@pytest.mark.heavy
def test_a_built_archive_is_mapped_by_the_next_small_audit(tmp_path, monkeypatch):
    """Built as make setup builds it, then a run over a small dump maps it (the JVM says so itself)."""
    if shutil.which("jcmd") is None:
        pytest.skip("jcmd (a JDK's) is not on the PATH to ask the JVM what it mapped")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    archive = local_jvm.build(check_java())
    assert archive is not None and archive.is_file()
    assert not list(archive.parent.glob("*.tmp")), "the archive was written under another name, then renamed"
    shown = _jvm_of_a_small_run(tmp_path, "info")
    assert "CDS archive(s) mapped at" in shown and str(archive) in shown


def test_a_small_dump_gets_a_jvm_that_compiles_with_c1_only_and_a_large_or_live_one_does_not():
    log = "/conf/log4j2.properties"
    assert driver_java_options(log, 1000) == f"-Dlog4j2.configurationFile={log} {QUICK_JVM_OPTIONS}"
    assert driver_java_options(log, QUICK_JVM_BYTES).endswith(QUICK_JVM_OPTIONS)
    assert driver_java_options(log, QUICK_JVM_BYTES + 1) == f"-Dlog4j2.configurationFile={log}"
    assert driver_java_options(log, None) == f"-Dlog4j2.configurationFile={log}"  # a live topic


@pytest.mark.heavy
def test_a_run_over_a_small_dump_starts_its_jvm_with_c1_only(tmp_path):
    """The option must reach the JVM the run starts, not only the settings."""
    assert QUICK_JVM_OPTIONS in _jvm_of_a_small_run(tmp_path).splitlines()[0]
