"""A local session's JVM: the options it starts with, and the class-data archive small runs map.

A local run over a small dump (`QUICK_JVM_BYTES`) gets a JVM that compiles with C1 only and maps a
class-data archive (the JVM's own AppCDS) of the classes a small audit loads, instead of reading,
parsing and verifying them from Spark's jars at every start. The archive is built once:

    python -m offset_audit.runtime.local_jvm      (make setup runs it)

by a real audit of a small generated dump, whose JVM writes the classes it loaded as it exits. It
belongs to one Java build and one set of Spark jars: it is named after both, and a JVM that finds it
does not match (another classpath) ignores it without a word, so a stale archive costs nothing but the
time it would have saved.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

import pyspark

from offset_audit.errors import JavaMissing

# A run over a dump this small is over before C2's optimised code would pay for its compiling. In fresh
# processes on two cores, a 1,000-record audit took 25 s with C1 only against 47 s, Spark's own start
# 8.0 s against 12.9 s, and a 5M-record dump (159 MiB) was no slower. Past it, or for a live topic,
# the JVM compiles as it always does.
QUICK_JVM_BYTES = 256 << 20
QUICK_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
# The JVM's notes about the archive would land in the run's output: errors only.
QUIET = "-Xlog:disable -Xlog:all=error:stderr"
WAIT_FOR_JVM_S = 180


def check_java() -> str:
    """Spark needs Java 17 or newer; say so plainly instead of letting py4j fail obscurely. The version
    line `java -version` printed (it names the class archive)."""
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    hint = "install a Java 17+ runtime (e.g. 'apt-get install openjdk-17-jre-headless') or set JAVA_HOME"
    if not java or not os.path.exists(java):
        raise JavaMissing(f"Java was not found; {hint}.")
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except OSError as err:
        raise JavaMissing(f"Java at {java} could not run ({err}); {hint}.") from err
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        raise JavaMissing(f"could not read the Java version from '{out.strip()}'; {hint}.")
    major = int(match.group(1))
    if major == 1:  # "1.8.0_xxx" style
        major = int(match.group(2) or 0)
    if major < 17:
        raise JavaMissing(f"Java {major} found at {java}, Spark 4 needs 17 or newer; {hint}.")
    # the line that names the version: JAVA_TOOL_OPTIONS makes the JVM print a line of its own first
    return next(line for line in out.splitlines() if match.group(0) in line)


def log_config() -> str:
    """The project's log4j settings file, as the JVM is pointed at it."""
    return str(resources.files("offset_audit") / "conf" / "log4j2.properties")


def driver_java_options(log_config: str, input_bytes: int | None, java_version: str | None = None) -> str:
    """A local session's JVM options: the project's log4j settings; for a small dump, C1 only, and the
    class archive of `java_version`'s JVM where one was built."""
    options = f"-Dlog4j2.configurationFile={log_config}"
    if input_bytes is not None and input_bytes <= QUICK_JVM_BYTES:
        options += f" {QUICK_JVM_OPTIONS}"
        sharing = sharing_options(java_version) if java_version else ""
        options += f" {sharing}" if sharing else ""
    return options


def archive_path(java_version: str) -> Path:
    """Where the archive for this Java build and this pyspark lives (the user's cache folder)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kafka-offset-audit"
    java = hashlib.sha1(java_version.encode()).hexdigest()[:10]
    return cache / f"spark-{pyspark.__version__}-java-{java}.jsa"


def sharing_options(java_version: str) -> str:
    """The JVM options that map the archive, or none while it has not been built."""
    archive = archive_path(java_version)
    return f"-XX:SharedArchiveFile={archive} {QUIET}" if archive.is_file() else ""


# The archive's builder: a small audit in a process of its own, its JVM options read from stdin.
BUILD = """
import sys, tempfile
from offset_audit.generator.demo_dump import generate_dump
from offset_audit.runs.audit import run_audit
from offset_audit.runtime.config import load_settings
from offset_audit.runtime.session import get_spark
options = sys.stdin.read()
with tempfile.TemporaryDirectory(prefix="offset-audit-jvm-archive-") as work:
    generate_dump(work + "/dump", 1000, seed=1)
    spark = get_spark({"spark.driver.extraJavaOptions": options})
    run_audit(spark, [work + "/dump"], work + "/audit", load_settings())
    print(spark._jvm.java.lang.ProcessHandle.current().pid(), flush=True)
    spark.stop()
"""


def build(java_version: str) -> Path | None:
    """Build the archive unless it is there: a fresh process audits a small dump, its JVM writes the
    archive under a name of its own as it exits, and one rename makes it the archive (a run beside this
    one sees the whole archive or none). None when it could not be built, said on stderr: runs then
    start without it, as before."""
    archive = archive_path(java_version)
    if archive.is_file():
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    written = archive.with_name(f"{archive.stem}.{os.getpid()}.jsa.tmp")
    options = f"{driver_java_options(log_config(), 1000)} -XX:ArchiveClassesAtExit={written} {QUIET}"
    with tempfile.TemporaryFile("w+") as log:
        done = subprocess.run(
            [sys.executable, "-c", BUILD], input=options, stdout=subprocess.PIPE, stderr=log, text=True
        )
        if done.returncode != 0:
            log.seek(0)
            print(f"offset-audit: no JVM class archive ({log.read()[-500:].strip()})", file=sys.stderr)
            return None
    wait_for_exit(int(done.stdout.split()[-1]), WAIT_FOR_JVM_S)  # the JVM outlives its driver by the archive's writing
    if not written.is_file():
        print("offset-audit: no JVM class archive (the JVM wrote none)", file=sys.stderr)
        return None
    written.replace(archive)
    return archive


def wait_for_exit(pid: int, seconds: float) -> bool:
    """Whether the process `pid` ended within `seconds` (polled: it need not be this process's child)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def main() -> None:
    archive = build(check_java())
    if archive is not None:
        print(f"JVM class archive for small audits: {archive} ({archive.stat().st_size / 2**20:,.0f} MiB)")


if __name__ == "__main__":
    main()
