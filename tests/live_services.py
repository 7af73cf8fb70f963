"""Real services the slow tests start on 127.0.0.1 and stop by pid: an S3-compatible server (moto in
server mode), a Spark standalone master with workers (the venv's pyspark, through spark-class) and a
Spark Connect server (the venv's pyspark, through spark-submit).
Each helper raises `Unavailable` with the exact reason when it cannot be had; `live` turns that into the
skip of the tests that need it, saying why."""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

LOOPBACK = "127.0.0.1"
# The JVMs the tests start that live seconds to a few minutes (tools, the services' daemons, a test
# cluster's executors): the C1 compiler alone and the serial collector spend far less CPU getting going
# than C2 and G1, which pay off only in long-running processes; no hsperfdata file.
SHORT_LIVED = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData")
SHORT_LIVED_JVM = " ".join(SHORT_LIVED)


class Unavailable(Exception):
    """The service cannot be started here; the message says why."""


@contextmanager
def live(service: AbstractContextManager) -> Iterator:
    """A live service (one of the context managers below) while the block runs, or the test that needs it
    skipped with the reason it could not be had."""
    try:
        with service as running:
            yield running
    except Unavailable as reason:
        pytest.skip(str(reason))


# Ports for the services the tests start are handed out in turn, under a lock that every process of a
# run shares (xdist's workers, the pytest runs a test starts), from below the kernel's ephemeral range:
# a port the kernel picks for a client socket or a `bind(0)` never comes from there, and no two callers
# get the same port between the check that it is free and the service binding it. The ledger holds the
# last port handed out, so a port a stopped service left in TIME_WAIT comes round again only after
# thousands of others.
PORT_LEDGER = Path(tempfile.gettempdir()) / "offset-audit-test-ports"
_FIRST_PORT = 20_000


def _port_range() -> range:
    """The ports to hand out: from 20000 up to the first ephemeral port (32768 on Linux's default)."""
    try:
        ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral = 32_768
    return range(_FIRST_PORT, ephemeral) if ephemeral - _FIRST_PORT >= 2_000 else range(_FIRST_PORT, 30_000)


def free_port() -> int:
    """A loopback port no other caller of this run holds and nothing listens on now."""
    ports = _port_range()
    with open(PORT_LEDGER, "a+") as ledger:
        fcntl.flock(ledger, fcntl.LOCK_EX)  # released when the file closes
        ledger.seek(0)
        said = ledger.read().strip()
        last = int(said) if said.isdigit() else ports.start - 1
        for step in range(1, len(ports) + 1):
            port = ports.start + (last + step - ports.start) % len(ports)
            with socket.socket() as probe:
                try:
                    probe.bind((LOOPBACK, port))
                except OSError:
                    continue
            ledger.seek(0)
            ledger.truncate()
            ledger.write(str(port))
            ledger.flush()
            return port
    raise Unavailable(f"no free port on {LOOPBACK} between {ports.start} and {ports.stop}")


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the process group, SIGKILL after 10 s: spark-class runs java under a shell."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass


def run_at_once(
    commands: list[list[str]], env: dict[str, str], cwd: Path, timeout: float
) -> list[subprocess.CompletedProcess]:
    """Start every command before waiting for any (runs that must overlap); their results, in order."""
    processes = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
        for command in commands
    ]
    outputs = [process.communicate(timeout=timeout) for process in processes]
    return [
        subprocess.CompletedProcess(process.args, process.returncode, out, err)
        for process, (out, err) in zip(processes, outputs, strict=True)
    ]


def _start(
    command: list[str], log: Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen:
    handle = open(log, "wb")  # noqa: SIM115 - handed to the child, closed with it
    return subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True)


# S3 ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    bucket: str

    @property
    def environment(self) -> dict[str, str]:
        """What a user exports for an S3-compatible store: AWS's own variable names."""
        return {
            "AWS_ACCESS_KEY_ID": "offset-audit-test",
            "AWS_SECRET_ACCESS_KEY": "offset-audit-test-secret",
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": self.endpoint,
        }

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def upload(self, local: Path, key: str) -> str:
        """Copy a local file or folder to the bucket; its s3:// URL."""
        from offset_audit.storage import Storage

        storage = Storage.of(self.environment)
        files = [local] if local.is_file() else sorted(p for p in local.rglob("*") if p.is_file())
        for file in files:
            name = key if local.is_file() else f"{key}/{file.relative_to(local).as_posix()}"
            with storage.open_output_stream(self.url(name)) as sink:
                sink.write(file.read_bytes())
        return self.url(key)


@contextmanager
def s3_server(folder: Path, checks_credentials: bool = False) -> Iterator[S3Server]:
    """moto's S3 in server mode on a free loopback port, with one bucket. By default it takes any
    credentials; `checks_credentials` makes it refuse all but its own (moto's IAM mode, which knows
    no user at first: every signed request is refused once the bucket exists)."""
    try:
        import moto.server  # noqa: F401
    except ImportError as err:
        raise Unavailable(f"moto[server] is not installed ({err}); `make setup` installs the test extras") from err
    port = free_port()
    environment = dict(os.environ)
    if checks_credentials:
        environment["INITIAL_NO_AUTH_ACTION_COUNT"] = "2"  # the bucket's creation (head, create), then IAM
    process = _start(
        [sys.executable, "-m", "moto.server", "-H", LOOPBACK, "-p", str(port)], folder / "moto.log", environment
    )
    endpoint = f"http://{LOOPBACK}:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:  # a connection, not a request: in IAM mode moto counts requests
                socket.create_connection((LOOPBACK, port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log = (folder / "moto.log").read_text(errors="replace")[-2000:]
                    raise Unavailable(f"moto's S3 server did not start on {endpoint}: {log}") from None
                time.sleep(0.2)
        server = S3Server(endpoint, "offset-audit")
        import pyarrow.fs as pafs

        env = server.environment
        pafs.S3FileSystem(
            access_key=env["AWS_ACCESS_KEY_ID"],
            secret_key=env["AWS_SECRET_ACCESS_KEY"],
            endpoint_override=f"{LOOPBACK}:{port}",
            scheme="http",
            region=env["AWS_REGION"],
            allow_bucket_creation=True,
        ).create_dir(server.bucket)
        yield server
    finally:
        _stop(process)


# Spark standalone ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cluster:
    master: str
    spark_home: Path
    workers: int
    cores_per_worker: int
    master_log: Path

    def applications(self) -> int:
        """Applications the master has registered so far."""
        return self.master_log.read_text(errors="replace").count("Registering app ")


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@contextmanager
def standalone_cluster(folder: Path, workers: int = 2, cores: int = 1, memory: str = "2g") -> Iterator[Cluster]:
    """A master and `workers` workers from the venv's pyspark, on 127.0.0.1, stopped by pid."""
    home = spark_home()
    if not (home / "bin" / "spark-class").exists():
        raise Unavailable(f"pyspark at {home} has no bin/spark-class to start a standalone master with")
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": LOOPBACK,
        "SPARK_NO_DAEMONIZE": "1",
        # the master, the workers and the executors they start (which inherit the workers' environment)
        "JAVA_TOOL_OPTIONS": SHORT_LIVED_JVM,
    }
    env.pop("PYSPARK_GATEWAY_PORT", None)
    # The master drops a worker it has not heard from in spark.worker.timeout (60 s), and its executors
    # with it: on two cores starved by the rest of the suite a worker's heartbeat came late once in CI.
    master_env = {**env, "SPARK_MASTER_OPTS": "-Dspark.worker.timeout=600"}
    port, ui = free_port(), free_port()
    master = f"spark://{LOOPBACK}:{port}"
    processes = []
    try:
        processes.append(
            _start(
                [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master",
                 "--host", LOOPBACK, "--port", str(port), "--webui-port", str(ui)],
                folder / "master.log",
                master_env,
            )
        )  # fmt: skip
        _wait_for(folder / "master.log", "I have been elected leader", processes[0], "the Spark master")
        for index in range(workers):
            log = folder / f"worker-{index}.log"
            processes.append(
                _start(
                    [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker",
                     "--host", LOOPBACK, "--cores", str(cores), "--memory", memory,
                     "--webui-port", str(free_port()), "--work-dir", str(folder / f"work-{index}"), master],
                    log,
                    env,
                )
            )  # fmt: skip
            _wait_for(log, "Successfully registered with master", processes[-1], f"Spark worker {index}")
        yield Cluster(master, home, workers, cores, folder / "master.log")
    finally:
        for process in reversed(processes):
            _stop(process)


# Spark Connect --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConnectServer:
    url: str
    log: Path
    pid: int


def connect_recipe() -> str:
    """docs/cluster.md's lines that start a Spark Connect server, as written (the command after them is the
    client's)."""
    from repo_paths import ROOT

    text = (ROOT / "docs" / "cluster.md").read_text()
    block = text.split("<!-- recipe: connect-server -->", 1)[1].split("```", 2)[1]
    return block.split("spark-internal", 1)[0] + "spark-internal\n"


@contextmanager
def connect_server(folder: Path, cores: int = 2, memory: str | None = None) -> Iterator[ConnectServer]:
    """A Spark Connect server started by docs/cluster.md's recipe (run by bash in the repository), on a
    free loopback port in place of 15002, with `cores` local cores, the driver's `memory` when given, and
    what a server of a few cores is given (shuffle and Delta snapshot partitions); stopped by pid."""
    from repo_paths import ROOT

    home = spark_home()
    if not list((home / "jars").glob("spark-connect_*.jar")):
        raise Unavailable(f"pyspark at {home} ships no spark-connect jar")
    try:
        import grpc  # noqa: F401
    except ImportError as err:
        raise Unavailable(f"Spark Connect's client needs grpcio: {err}") from err
    port = free_port()
    small = (
        f"--conf spark.sql.shuffle.partitions={2 * cores} "
        f"--conf spark.databricks.delta.snapshotPartitions={2 * cores} --conf spark.ui.enabled=false "
    ) + (f"--conf spark.driver.memory={memory} " if memory else "")
    script = connect_recipe().replace("15002", str(port)).replace("'local[*]'", f"'local[{cores}]'")
    script = script.replace("spark-internal", small + "spark-internal")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_GATEWAY", "SPARK_CONNECT_MODE"))}
    env.pop("SPARK_REMOTE", None)
    env.pop("VIRTUAL_ENV", None)
    log = folder / "connect-server.log"
    process = _start(["bash", "-c", "exec 2>&1\n" + script], log, env, cwd=ROOT)
    try:
        _wait_for(log, "Spark Connect server started", process, "the Spark Connect server", seconds=120)
        yield ConnectServer(f"sc://{LOOPBACK}:{port}", log, process.pid)
    finally:
        _stop(process)


# YARN -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class YarnCluster:
    conf_dir: Path  # HADOOP_CONF_DIR for spark-submit --master yarn
    folder: Path

    def containers(self) -> list[Path]:
        """The log folders of the containers the NodeManager has run, one per container."""
        return sorted(self.folder.glob("target/**/*-logDir-nm-*/application_*/container_*"))


@contextmanager
def mini_yarn(folder: Path, memory_mb: int = 6144) -> Iterator[YarnCluster]:
    """Hadoop's MiniYARNCluster (a ResourceManager and one NodeManager in one JVM, tests/yarn/MiniYarn.java)
    from the jars make spark-jars fetched into .jars/yarn, on 127.0.0.1, stopped by pid."""
    from repo_paths import ROOT

    jars = ROOT / ".jars" / "yarn"
    if (jars / "unavailable").exists():
        raise Unavailable((jars / "unavailable").read_text().strip())
    if not (jars / ".fetched").exists():
        raise Unavailable("the YARN test jars are not fetched: run make spark-jars (make setup does)")
    log4j = [str(p) for p in (spark_home() / "jars").glob("log4j-*.jar") if "slf4j" not in p.name]
    conf_dir = folder / "conf"
    conf_dir.mkdir(parents=True)
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
    classpath = os.pathsep.join([str(jars / "*"), *log4j])
    source = ROOT / "tests" / "yarn" / "MiniYarn.java"
    command = [
        java,
        "-Xmx1g",
        *SHORT_LIVED,
        "-cp",
        classpath,
        str(source),
        str(conf_dir),
        str(memory_mb),
        SHORT_LIVED_JVM,
    ]
    process = _start(command, folder / "yarn.log", cwd=folder)  # its node's folders go under target/
    try:
        deadline = time.monotonic() + 180
        while not (conf_dir / "ready").exists():
            if process.poll() is not None or time.monotonic() > deadline:
                said = (folder / "yarn.log").read_text(errors="replace")[-1500:]
                raise Unavailable(f"the MiniYARNCluster did not start (exit code {process.poll()}): {said}")
            time.sleep(0.5)
        yield YarnCluster(conf_dir, folder)
    finally:
        _stop(process)


def _wait_for(log: Path, line: str, process: subprocess.Popen, what: str, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if line in text:
            return
        if process.poll() is not None:
            raise Unavailable(f"{what} exited with code {process.returncode}: {text[-1500:]}")
        time.sleep(0.3)
    raise Unavailable(f"{what} did not start within {seconds:.0f} s: {log.read_text(errors='replace')[-1500:]}")


# Comparing tables ---------------------------------------------------------------------------------------

# Columns that differ between two runs of the same data by nature: when and which run, and where a run's
# scratch lived. Everything else must match row for row.
RUN_COLUMNS = {"run_id", "started_at", "finished_at"}


def table_rows(path: str, storage_options: dict[str, str] | None = None) -> pa.Table:
    from deltalake import DeltaTable

    from offset_audit.storage import Storage

    options = Storage.of(storage_options or {}).delta_options  # as the tool reads them (http allowed)
    table = DeltaTable(path, storage_options=options).to_pyarrow_table()
    return table.drop_columns([c for c in table.column_names if c in RUN_COLUMNS])


def sorted_rows(table: pa.Table) -> list[dict]:
    """Every row as a dict, in a total order (by their repr, which covers lists and maps too)."""
    return sorted(table.to_pylist(), key=repr)
