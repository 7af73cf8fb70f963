"""The README's cluster recipe, run as written against a live Spark standalone cluster (a master and two
one-core workers on 127.0.0.1, started here from the venv's pyspark), with the archives `make package`
builds: decode, audit and whatif give, table for table and row for row, what the local CLI gives, on
relative, absolute, file:// and S3 (a local S3 server) paths; Spark's INFO logging stays off; and a
mistake is answered before any application reaches the cluster."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from live_services import SHORT_LIVED_JVM, Unavailable, live, mini_yarn, sorted_rows, standalone_cluster, table_rows
from repo_paths import ROOT

from offset_audit.cli.main import main

pytestmark = pytest.mark.slow

# Every recipe runs on a dump of this size: enough for both workers to get decode tasks. The timings
# docs/cluster.md gives were taken with OFFSET_AUDIT_CLUSTER_RECORDS=200000 and `pytest -s` (submit prints them).
RECORDS = int(os.environ.get("OFFSET_AUDIT_CLUSTER_RECORDS", "20000"))
DECODE_TABLES = ["offset_commits", "group_metadata", "group_members", "modern_group_records", "other_records"]
AUDIT_TABLES = ["partition_verdicts", "group_verdicts", "deletion_candidates"]
README_MASTER = "spark://master-host:7077"
# What pip says when PyPI cannot be reached: the one failure of `make package` that is this machine's, not
# the project's (any other fails the test).
PIP_UNREACHABLE = (
    "No matching distribution found",
    "Could not find a version that satisfies",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Network is unreachable",
)


def readme_recipe() -> list[str]:
    """The standalone spark-submit line of the README, as argv, up to and including its job script."""
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- recipe: standalone -->", 1)[1].split("```", 2)[1]
    lines = [line.split("  #", 1)[0].rstrip() for line in block.splitlines()]
    command = " ".join(line.rstrip("\\").strip() for line in lines if line.strip() and not line.startswith(". "))
    argv = shlex.split(command)
    script = next(i for i, arg in enumerate(argv) if arg.startswith("jobs/"))
    assert argv[0] == "spark-submit" and argv[script] == "jobs/audit_offsets.py", argv
    assert README_MASTER in argv, argv
    return argv[:script]


def package_commands(dist: Path) -> list[list[str]]:
    """`make package`'s recipe, its output folder moved to `dist`."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\npackage: setup\n", 1)[1].split("\n\n", 1)[0]
    commands = []
    for line in recipe.splitlines():
        line = line.strip().replace("$(if $(PYTHON_PREFIX),--python-prefix $(PYTHON_PREFIX))", "")
        line = line.replace("$(BIN)/python", sys.executable).replace("dist/", f"{dist}/")
        commands.append(shlex.split(line))
    assert len(commands) == 2 and all(str(dist) in c[-1] for c in commands), commands
    return commands


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with live(standalone_cluster(tmp_path_factory.mktemp("cluster"))) as running:
        yield running


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A folder laid out as the repository after `make package`: jobs/, .venv, dist/ and a dump."""
    folder = tmp_path_factory.mktemp("checkout")
    (folder / "jobs").symlink_to(ROOT / "jobs")
    (folder / ".venv").symlink_to(Path(sys.prefix))
    (folder / ".jars").symlink_to(ROOT / ".jars")  # make spark-jars' folder, for the delta-spark recipe
    for command in package_commands(folder / "dist"):
        built = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        if built.returncode == 0:
            continue
        said = built.stderr.strip()[-500:]
        if any(sign in built.stderr for sign in PIP_UNREACHABLE):
            pytest.skip(f"`make package` could not fetch the executors' packages from PyPI: {said}")
        pytest.fail(f"`make package` could not build {command[-1]}: {said}")
    from offset_audit.generator.demo_dump import generate_dump

    generate_dump(str(folder / "dump"), RECORDS, seed=7, corrupt=12)
    return folder


def without_spark_variables() -> dict[str, str]:
    """This process's environment without what pytest's own Spark set, as a user's shell would be."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}


def submit(
    master: str,
    checkout: Path,
    job: str,
    *args: str,
    env: dict[str, str] | None = None,
    conf: tuple[str, ...] = (),
):
    """The README's line with this master, job and arguments (and `--conf` settings), from the checkout,
    the venv activated."""
    settings = [part for setting in conf for part in ("--conf", setting)]
    argv = [master if a == README_MASTER else a for a in readme_recipe()] + [*settings, f"jobs/{job}", *args]
    environment = without_spark_variables()
    bin_dir = str(checkout / ".venv" / "bin")
    environment.update({"PATH": f"{bin_dir}:{environment['PATH']}", "VIRTUAL_ENV": str(checkout / ".venv")})
    # the submitting machine's JVM settings for spark-submit's own JVM (the driver, in client mode): a
    # minute's run spends less CPU on the C1 compiler alone (tests/live_services.SHORT_LIVED)
    environment["SPARK_SUBMIT_OPTS"] = SHORT_LIVED_JVM
    environment.update(env or {})
    started = time.monotonic()
    result = subprocess.run(argv, cwd=checkout, env=environment, capture_output=True, text=True, timeout=900)
    result.seconds = time.monotonic() - started
    print(f"spark-submit {job} {' '.join(args)}: {result.seconds:.1f} s")  # the README's times (pytest -s)
    return result


# The AWS SDK bundle hadoop-aws needs carries slf4j 1.7's API, which says it found no binding for it.
SDK_BUNDLE_LINES = ("SLF4J: ",)


# Spark's race at the end of a YARN application: an executor's disconnection reaches the driver's
# endpoint after its scheduler stopped, which logs the failed revive with its stack trace (the run has
# succeeded and written everything by then). Seen once in five CI runs of the YARN test.
YARN_SHUTDOWN_RACE = (
    re.compile(r".* ERROR Utils: Uncaught exception in thread dispatcher-CoarseGrainedScheduler$"),
    re.compile(r"org\.apache\.spark\.SparkException: Could not find CoarseGrainedScheduler\.$"),
    re.compile(r"\tat \S+\(.*\)$"),
    re.compile(
        r".* ERROR TransportResponseHandler: Still have \d+ requests outstanding when connection from .* is closed$"
    ),
)


def assert_quiet_success(result, cores: int = 2, also: tuple[str, ...] = (), yarn: bool = False) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[:6000]
    assert " INFO " not in output, [line for line in output.splitlines() if " INFO " in line][:5]
    assert f"spark.sql.shuffle.partitions={2 * cores} for {cores} cores" in output, output[-2000:]
    lines = [line for line in result.stderr.splitlines() if not (also and line.startswith(also))]
    if yarn:
        lines = [line for line in lines if not any(race.match(line) for race in YARN_SHUTDOWN_RACE)]
    assert len(lines) <= 6, result.stderr  # spark-submit's own few lines before Python


def local(*args: str) -> None:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output + repr(result.exception)


def assert_same_tables(
    mine: str, theirs: str, tables: list[str], options: dict[str, str] | None = None, nullable: bool = False
) -> None:
    """`nullable`: `theirs` was written by delta-spark, which declares every column of a table it
    creates nullable (Delta's DataFrame writes do), where delta-rs keeps the schema's NOT NULL."""
    for table in tables:
        expected, got = table_rows(os.path.join(mine, table)), table_rows(f"{theirs}/{table}", options)
        if nullable:
            expected = expected.cast(pa.schema([f.with_nullable(True) for f in expected.schema]))
        assert expected.schema.equals(got.schema), f"{table}: {expected.schema} != {got.schema}"
        assert sorted_rows(expected) == sorted_rows(got), table


def test_decode_from_a_relative_path_to_a_file_url(spark, cluster, checkout, tmp_path):
    result = submit(
        cluster.master, checkout, "decode_offsets.py", "--input", "dump", "--output", f"file://{tmp_path}/c"
    )
    assert_quiet_success(result)
    local("decode", "--input", str(checkout / "dump"), "--output", str(tmp_path / "l"))
    assert_same_tables(str(tmp_path / "l"), str(tmp_path / "c"), [*DECODE_TABLES, "quarantine"])
    runs = table_rows(str(tmp_path / "c" / "runs")).to_pylist()
    assert runs[0]["input"] == str(checkout / "dump")  # made absolute on the driver


def test_audit_from_a_file_url_to_a_relative_path(spark, cluster, checkout, tmp_path):
    name = f"audit-{tmp_path.name}"
    result = submit(cluster.master, checkout, "audit_offsets.py", "--input", f"file://{checkout}/dump", "--output",
                    name, "--snapshot-id", "cluster")  # fmt: skip
    assert_quiet_success(result)
    assert "Audited" in result.stdout
    local("audit", "--input", str(checkout / "dump"), "--output", str(tmp_path / "l"), "--snapshot-id", "cluster")
    assert_same_tables(str(tmp_path / "l"), str(checkout / name), AUDIT_TABLES)
    assert_same_tables(str(tmp_path / "l" / "decoded"), str(checkout / name / "decoded"), ["quarantine"])


def test_whatif_between_absolute_paths(spark, cluster, checkout, tmp_path):
    args = ["--retention-minutes", "1440,10080,43200", "--per-group", "--snapshot-id", "w"]
    result = submit(cluster.master, checkout, "whatif_retention.py", "--input", str(checkout / "dump"), "--output",
                    str(tmp_path / "c"), *args)  # fmt: skip
    assert_quiet_success(result)
    local("whatif", "--input", str(checkout / "dump"), "--output", str(tmp_path / "l"), *args)
    assert_same_tables(str(tmp_path / "l"), str(tmp_path / "c"), ["whatif", "whatif_groups"])


def test_audit_from_and_to_s3(spark, cluster, checkout, s3, tmp_path):
    dump = s3.upload(checkout / "dump", "cluster-dump")
    result = submit(cluster.master, checkout, "audit_offsets.py", "--input", dump, "--output", s3.url("cluster-audit"),
                    "--snapshot-id", "s3", env=s3.environment)  # fmt: skip
    assert_quiet_success(result)
    local("audit", "--input", str(checkout / "dump"), "--output", str(tmp_path / "l"), "--snapshot-id", "s3")
    assert_same_tables(str(tmp_path / "l"), s3.url("cluster-audit"), AUDIT_TABLES, s3.environment)


def docs_recipe(name: str) -> str:
    """A recipe block of docs/cluster.md, as the shell script it is."""
    text = (ROOT / "docs" / "cluster.md").read_text()
    return text.split(f"<!-- recipe: {name} -->", 1)[1].split("```", 2)[1]


def test_the_delta_spark_recipe_writes_through_s3a_what_delta_rs_writes(spark, cluster, checkout, s3, tmp_path):
    """docs/cluster.md's delta-spark line, run by bash as written (its --jars from make spark-jars),
    with this cluster, this S3 server's s3a settings, and its paths: the tables delta-spark commits
    through hadoop-aws equal those a local run writes through delta-rs, both with default flags."""
    from spark_jars import spark_jars

    from offset_audit.storage import Storage

    try:
        spark_jars(s3a=True)
    except Unavailable as reason:
        pytest.skip(str(reason))
    dump, output = s3.upload(checkout / "dump", "delta-dump"), s3.url("delta-audit")
    endpoint = s3.environment["AWS_ENDPOINT_URL"]
    s3a = {
        "spark.hadoop.fs.s3a.endpoint": endpoint,
        "spark.hadoop.fs.s3a.endpoint.region": s3.environment["AWS_REGION"],
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.access.key": s3.environment["AWS_ACCESS_KEY_ID"],
        "spark.hadoop.fs.s3a.secret.key": s3.environment["AWS_SECRET_ACCESS_KEY"],
    }
    script = docs_recipe("standalone-delta")
    assert script.count("spark://master-host:7077") == 1 and script.count("s3://bucket/dumps/offsets") == 1
    # As the suite's own session sets it (conftest.py): Delta reads a table's log in 50 partitions by
    # default, hundreds of tasks for these one-commit tables; 2 covers their few files.
    tiny_tables = {"spark.databricks.delta.snapshotPartitions": "2"}
    settings = " ".join(f"--conf {shlex.quote(f'{k}={v}')}" for k, v in {**s3a, **tiny_tables}.items())
    script = (
        script.replace("spark://master-host:7077", f"{cluster.master} {settings}")
        .replace("s3://bucket/dumps/offsets", dump)
        .replace("s3://bucket/offset-audit", f"{output} --snapshot-id s3a")
    )
    environment = {**without_spark_variables(), **s3.environment}
    result = subprocess.run(["bash", "-e", "-c", script], cwd=checkout, env=environment, capture_output=True,
                            text=True, timeout=1200)  # fmt: skip
    assert_quiet_success(result, also=SDK_BUNDLE_LINES)
    # delta-spark sessions decode every record, the local run each task's last of a key: the verdicts
    # are the same (its decoded tables are compared with --keep-decoded in tests/outputs/test_writers.py)
    local("audit", "--input", str(checkout / "dump"), "--output", str(tmp_path / "l"), "--snapshot-id", "s3a")
    assert_same_tables(str(tmp_path / "l"), output, AUDIT_TABLES, s3.environment, nullable=True)
    storage = Storage.of(s3.environment)
    with storage.open_input_file(f"{output}/partition_verdicts/_delta_log/{0:020d}.json") as log:
        commit = log.read().decode()
    assert '"engineInfo":"Apache-Spark' in commit.replace(" ", ""), commit[:500]


def test_the_yarn_line_runs_on_a_mini_yarn_cluster(spark, checkout, tmp_path):
    """docs/cluster.md's YARN client-mode line (the README's with --master yarn) on Hadoop's
    MiniYARNCluster: a ResourceManager and one NodeManager of 6 GiB on 127.0.0.1, whose containers run
    the application master and two executors of 1 GiB with the archive's Python."""
    shown = (ROOT / "docs" / "cluster.md").read_text()
    assert "**YARN, client mode**: the same line with `--master yarn`" in shown
    assert "--conf spark.ui.enabled=false" in shown
    args = ["--input", str(checkout / "dump"), "--output", str(tmp_path / "y"), "--snapshot-id", "yarn"]
    with live(mini_yarn(tmp_path / "yarn")) as running:
        # docs/cluster.md's workaround for Spark's race between the UI's start and the proxy filter
        result = submit(
            "yarn",
            checkout,
            "audit_offsets.py",
            *args,
            env={"HADOOP_CONF_DIR": str(running.conf_dir)},
            conf=("spark.ui.enabled=false",),
        )
    assert_quiet_success(result, yarn=True)
    assert "Audited" in result.stdout
    local("audit", "--input", str(checkout / "dump"), "--output", str(tmp_path / "l"), "--snapshot-id", "yarn")
    assert_same_tables(str(tmp_path / "l"), str(tmp_path / "y"), AUDIT_TABLES)
    assert len(running.containers()) >= 3, running.containers()  # the application master and two executors


def test_a_mistake_is_answered_before_the_cluster_sees_an_application(cluster, checkout, tmp_path):
    applications = cluster.applications()
    result = submit(cluster.master, checkout, "audit_offsets.py", "--input", "no-such-dump", "--output", str(tmp_path))
    assert result.returncode == 2, result.stdout + result.stderr
    errors = [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("error:")]
    assert errors == [f"error: the input '{checkout}/no-such-dump' does not exist"], result.stdout + result.stderr
    assert cluster.applications() == applications
