"""A real Apache Kafka broker for the live tests: one KRaft node (broker and controller in one process) on
127.0.0.1 with free ports, started from the jars `make kafka` fetched into .kafka/V/libs and stopped by pid.

The broker is the oracle: the tests let it write `__consumer_offsets` under real clients, then watch what
its expiry sweep deletes and when. Settings make that fast: offsets.retention.minutes=1 (the smallest the
broker takes) and a sweep every second. A version that `make kafka` could not fetch raises `Unavailable`
with the reason it wrote, so its tests skip saying why (and fail in CI: tests/ci_gate.py).
"""

from __future__ import annotations

import base64
import fcntl
import functools
import hashlib
import itertools
import os
import re
import shutil
import socket
import subprocess
import time
import uuid
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from live_services import LOOPBACK, SHORT_LIVED, Unavailable, _start, _stop, free_port
from repo_paths import ROOT

KAFKA = ROOT / ".kafka"
RETENTION_MINUTES = 1
CHECK_INTERVAL_MS = 1_000
FAST_HEARTBEAT_MS = 500
FAST_HEARTBEATS = {
    f"group.{kind}.{bound}heartbeat.interval.ms": str(FAST_HEARTBEAT_MS)
    for kind in ("consumer", "share", "streams")
    for bound in ("", "min.")
}

# Each tool's main class, newest location first: classes moved between releases (Scala core to the
# Java tools module), so the one a version's jars hold is looked up in them (kafka_broker.main_class).
TOOLS = {
    "server": ("kafka.Kafka",),
    "storage": ("kafka.tools.StorageTool",),
    "consumer-groups": (
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "kafka.admin.ConsumerGroupCommand",
    ),
    "get-offsets": ("org.apache.kafka.tools.GetOffsetShell", "kafka.tools.GetOffsetShell"),
    "dump-log": ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments"),
    "console-consumer": ("org.apache.kafka.tools.consumer.ConsoleConsumer", "kafka.tools.ConsoleConsumer"),
    "share-consumer": ("org.apache.kafka.tools.consumer.ConsoleShareConsumer",),
    "share-groups": ("org.apache.kafka.tools.consumer.group.ShareGroupCommand",),
    "streams-groups": ("org.apache.kafka.tools.streams.StreamsGroupCommand",),
    "offsets-formatter": (
        "org.apache.kafka.tools.consumer.OffsetsMessageFormatter",
        "kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter",
    ),
    "group-formatter": (
        "org.apache.kafka.tools.consumer.GroupMetadataMessageFormatter",
        "kafka.coordinator.group.GroupMetadataManager$GroupMetadataMessageFormatter",
    ),
}

LOG4J = """rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName={log}
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
"""


def kafka_versions() -> list[str]:
    """The versions the live tests run on: KAFKA_VERSIONS from the environment, or the Makefile's."""
    configured = os.environ.get("KAFKA_VERSIONS")
    if configured is None:
        found = re.search(r"^KAFKA_VERSIONS \?= (.+)$", (ROOT / "Makefile").read_text(), re.M)
        configured = found.group(1) if found else ""
    return configured.split()


def libs(version: str) -> Path:
    """The folder of the version's jars, or Unavailable with why `make kafka` has none."""
    folder = KAFKA / version
    if (folder / ".fetched").exists():
        return folder / "libs"
    reason = folder / "unavailable"
    if reason.exists():
        raise Unavailable(reason.read_text().strip())
    raise Unavailable(f"Kafka {version}'s jars are not in {folder}: run make kafka KAFKA_VERSIONS={version}")


@functools.cache
def _classes(version: str) -> frozenset[str]:
    names = set()
    for jar in libs(version).glob("kafka*.jar"):
        with zipfile.ZipFile(jar) as archive:
            names.update(n[: -len(".class")].replace("/", ".") for n in archive.namelist() if n.endswith(".class"))
    return frozenset(names)


def main_class(version: str, tool: str) -> str:
    """The tool's class in this version's jars (the first of TOOLS[tool] it holds)."""
    for candidate in TOOLS[tool]:
        if candidate in _classes(version):
            return candidate
    raise AssertionError(f"Kafka {version}'s jars hold none of {TOOLS[tool]}")


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found:
        raise Unavailable("java is not on PATH and JAVA_HOME is not set: Kafka's broker needs Java 17+")
    return found


def compile_against(version: str, source: Path) -> Path:
    """The folder of `source`'s classes compiled against the version's jars with the javac beside
    `java()`; Unavailable without a JDK, and a compile error fails the test with javac's output.

    Compiled once per version and source text: the classes stay in .kafka/V/classes, under a lock that
    the processes of a run (xdist's workers) share, so that a second caller waits for the first."""
    javac = Path(java()).with_name("javac")
    if not javac.exists():
        raise Unavailable(f"javac is not next to {java()}: compiling {source.name} needs a JDK")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    folder = KAFKA / version / "classes" / f"{source.stem}-{digest}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / ".compiled").exists():
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        built = subprocess.run(
            [str(javac), *(f"-J{flag}" for flag in SHORT_LIVED), "-cp", f"{libs(version)}/*",
             "-d", str(folder), str(source)],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert built.returncode == 0, built.stdout + built.stderr
        (folder / ".compiled").touch()
    return folder


def java_command(version: str, tool: str, *args: str, heap: str = "256m", log4j: Path | None = None) -> list[str]:
    """The command line of one of the version's tools (TOOLS), with the flags of the tests' short-lived
    JVMs: the broker's too, which lives a few minutes under a handful of clients (its start took 6.3 s of
    CPU with them, 10.9 s without; an idle minute 3.6 s against 4.8 s)."""
    command = [java(), f"-Xmx{heap}", *SHORT_LIVED, "-cp", f"{libs(version)}/*"]
    if log4j is not None:
        command.append(f"-Dlog4j2.configurationFile={log4j}")
    return [*command, main_class(version, tool), *args]


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:3])


@dataclass(frozen=True)
class Broker:
    version: str
    bootstrap: str
    log_dir: Path
    folder: Path
    pid: int

    def tool(self, tool: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        """Run one of the version's command-line tools (TOOLS) against this broker; its output as text.

        The first run of a tool of a version writes the classes it loaded into a class-data archive
        (.kafka/V/cds), which every later run of that tool maps instead of loading them from the jars:
        about 0.85 s of CPU a start becomes 0.5 s."""
        log4j = self.folder / "tools-log4j2.properties"
        archive = KAFKA / self.version / "cds" / f"{tool}.jsa"
        written = None if archive.exists() else archive.with_name(f"{tool}.{os.getpid()}.{uuid.uuid4().hex}.jsa")
        if written is None:
            sharing = f"-XX:SharedArchiveFile={archive}"
        else:
            archive.parent.mkdir(exist_ok=True)
            sharing = f"-XX:ArchiveClassesAtExit={written}"
        command = java_command(self.version, tool, *args, log4j=log4j)
        # the JVM's own notes on the archive would land in the tool's output: errors only, to stderr
        command[1:1] = [sharing, "-Xlog:disable", "-Xlog:all=error:stderr"]
        ran = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        if written is not None and written.exists():
            if ran.returncode == 0 and not archive.exists():
                written.replace(archive)  # one rename: a run beside this one sees the whole archive or none
            else:
                written.unlink()
        return ran

    def admin(self):
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap})

    def copy_offsets_log(self, destination: Path, topic: str = "__consumer_offsets") -> Path:
        """The broker's `<topic>-N` folders as they are now (segments roll and get cleaned under a
        running broker: a copy is what an operator's backup would hold)."""
        destination.mkdir(parents=True, exist_ok=True)
        for partition in sorted(self.log_dir.glob(f"{topic}-*")):
            target = destination / partition.name
            target.mkdir(exist_ok=True)
            for segment in partition.glob("*.log"):
                shutil.copyfile(segment, target / segment.name)
        return destination


def server_properties(log_dir: Path, port: int, controller: int, extra: dict[str, str]) -> str:
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.bootstrap.servers": f"{LOOPBACK}:{controller}",
        "listeners": f"PLAINTEXT://{LOOPBACK}:{port},CONTROLLER://{LOOPBACK}:{controller}",
        "advertised.listeners": f"PLAINTEXT://{LOOPBACK}:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(log_dir),
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "3",
        "offsets.retention.minutes": str(RETENTION_MINUTES),
        "offsets.retention.check.interval.ms": str(CHECK_INTERVAL_MS),
        # Small segments, so that __consumer_offsets rolls (1 MiB is the least a topic takes from Kafka 4.0).
        "offsets.topic.segment.bytes": str(1024 * 1024),
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "share.coordinator.state.topic.num.partitions": "3",
        "group.initial.rebalance.delay.ms": "0",
        # Members of consumer (KIP-848), share and streams groups heartbeat every half second rather than
        # every 5 s: joins, assignments and leaves take a few heartbeats each. A test that needs slow ones
        # passes its own (test_live_streams_group.SLOW_HEARTBEATS). Versions without a group type ignore
        # its settings.
        **FAST_HEARTBEATS,
        **extra,
    }
    return "".join(f"{k}={v}\n" for k, v in settings.items())


def _features(version: str) -> list[str]:
    """Group types switched on at format time where the version has them as a feature."""
    return ["--feature", "share.version=1"] if version_tuple(version) >= (4, 1) else []


@contextmanager
def kafka_broker(folder: Path, version: str, extra: dict[str, str] | None = None) -> Iterator[Broker]:
    """A formatted, started, answering broker of `version`; stopped by pid when the block ends."""
    folder.mkdir(parents=True, exist_ok=True)
    log_dir = folder / "data"
    port, controller = free_port(), free_port()
    config = folder / "server.properties"
    config.write_text(server_properties(log_dir, port, controller, extra or {}))
    (folder / "log4j2.properties").write_text(LOG4J.format(log=folder / "server.log"))
    (folder / "tools-log4j2.properties").write_text(LOG4J.format(log=folder / "tools.log"))
    formatted = subprocess.run(
        java_command(version, "storage", "format", "-t", _cluster_id(), "-c", str(config),
                     "--standalone", *_features(version), log4j=folder / "tools-log4j2.properties"),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if formatted.returncode != 0:
        raise AssertionError(f"kafka-storage format of Kafka {version} failed: {formatted.stdout}{formatted.stderr}")
    with restarted(folder, version) as broker:
        yield broker


@contextmanager
def restarted(folder: Path, version: str, changes: dict[str, str] | None = None) -> Iterator[Broker]:
    """The broker `kafka_broker` made in `folder` started again on the same data directory and ports,
    with `changes` to its settings; stopped by pid (a clean shutdown) when the block ends."""
    config = folder / "server.properties"
    settings = dict(line.split("=", 1) for line in config.read_text().splitlines() if "=" in line)
    settings.update(changes or {})
    config.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    port = settings["listeners"].split(",")[0].rsplit(":", 1)[1]
    process = _start(
        java_command(version, "server", str(config), heap="768m", log4j=folder / "log4j2.properties"),
        folder / "broker.out",
    )
    try:
        broker = Broker(version, f"{LOOPBACK}:{port}", Path(settings["log.dirs"]), folder, process.pid)
        _wait_until_answering(broker, process)
        yield broker
    finally:
        _stop(process)


def _cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes in URL-safe base64 without padding (as `random-uuid` prints).

    Like Kafka's Uuid.randomUuid, one starting with "-" is drawn again: kafka-storage's argument parser
    would take it for an option (one id in 64 did, and failed the format)."""
    while (text := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"):
        pass
    return text


def _wait_until_answering(broker: Broker, process: subprocess.Popen, seconds: float = 120) -> None:
    """The port takes connections and the broker answers a metadata request naming itself."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + seconds
    host, port = broker.bootstrap.split(":")
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = (broker.folder / "broker.out").read_text(errors="replace")[-2000:]
            raise AssertionError(f"Kafka {broker.version} exited with {process.returncode}: {tail}")
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            metadata = broker.admin().list_topics(timeout=5)
            if metadata.brokers:
                return
        except (OSError, KafkaException):  # not up yet: the port refuses, or the request times out
            time.sleep(0.5)
    raise AssertionError(f"Kafka {broker.version} did not answer on {broker.bootstrap} within {seconds} s")


# Clients of the live tests -----------------------------------------------------------------------


def group_consumer(broker: Broker, group: str, **extra):
    from confluent_kafka import Consumer

    config = {
        "bootstrap.servers": broker.bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        **extra,
    }
    return Consumer(config)


def wait_until(what: str, check, seconds: float = 60, pause: float = 0.2) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(pause)
    raise AssertionError(f"timed out waiting for {what}")


def group_member(broker: Broker, group: str, topics: list[str], **extra):
    """A consumer that joined `group`, subscribed to `topics`, and holds its assignment."""
    consumer = group_consumer(broker, group, **extra)
    consumer.subscribe(topics)
    wait_until(f"{group}'s assignment", lambda: holds_assignment(consumer, set(topics)))
    return consumer


def holds_assignment(consumer, topics: set[str]) -> bool:
    consumer.poll(0.2)
    return {tp.topic for tp in consumer.assignment()} == topics


def commit_offsets(consumer, *offsets: tuple[str, int, int], metadata: str | None = None) -> None:
    """A synchronous commit, retried while the coordinator is still being found (a new broker)."""
    from confluent_kafka import KafkaException, TopicPartition

    extra = {} if metadata is None else {"metadata": metadata}
    for _ in range(120):
        try:
            consumer.commit(offsets=[TopicPartition(t, p, o, **extra) for t, p, o in offsets], asynchronous=False)
            return
        except KafkaException as err:
            if not err.args[0].retriable() and "coordinator" not in str(err).lower():
                raise
            time.sleep(0.5)
    raise AssertionError("the group coordinator never answered a commit")


def committed_offsets(broker: Broker, groups: list[str]) -> dict[tuple[str, str, int], int]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    admin, found = broker.admin(), {}
    for group in groups:
        listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(60)
        found.update({(group, tp.topic, tp.partition): tp.offset for tp in listed.topic_partitions if tp.offset >= 0})
    return found


def delete_offsets(broker: Broker, group: str, topic: str, partitions: list[int], seconds: float = 60) -> None:
    """OffsetDelete (API key 47, version 0, the only one) sent to the single broker, which coordinates
    every group: confluent-kafka's AdminClient has no such call, and kafka-consumer-groups.sh starts a
    JVM first, which on a loaded machine took longer than a 2-minute retention, so that the sweep expired
    the offset before the request came. Retried while the coordinator loads; any other error fails."""
    import struct

    def string(text: str) -> bytes:
        raw = text.encode()
        return struct.pack(">h", len(raw)) + raw

    body = string(group) + struct.pack(">i", 1) + string(topic) + struct.pack(">i", len(partitions))
    body += b"".join(struct.pack(">i", p) for p in partitions)
    retriable = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
    host, port = broker.bootstrap.split(":")
    deadline = time.monotonic() + seconds
    for correlation in itertools.count(1):  # until the deadline
        header = struct.pack(">hhi", 47, 0, correlation) + string("offset-audit-tests")
        with socket.create_connection((host, int(port)), timeout=30) as connection:
            connection.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
            answer = connection.makefile("rb")
            (size,) = struct.unpack(">i", answer.read(4))
            data = answer.read(size)
        # Response header v0 (correlation id), then error code, throttle time and the topics.
        echoed, error, _throttle, topics = struct.unpack_from(">ihii", data)
        assert echoed == correlation, (echoed, correlation)
        at, failed = 14, {}
        for _ in range(topics):
            (length,) = struct.unpack_from(">h", data, at)
            name, at = data[at + 2 : at + 2 + length].decode(), at + 2 + length
            (count,) = struct.unpack_from(">i", data, at)
            at += 4
            for _ in range(count):
                partition, code = struct.unpack_from(">ih", data, at)
                at += 6
                if code:
                    failed[name, partition] = code
        if error == 0 and not failed:
            return
        if error not in retriable or time.monotonic() > deadline:
            raise AssertionError(f"OffsetDelete of {group} {topic}{partitions} failed: error {error}, {failed}")
        time.sleep(0.5)
