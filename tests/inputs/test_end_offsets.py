"""End offsets as operators have them: kafka-get-offsets.sh output, a CSV or Parquet table, or asked of
the live cluster (`--end-offsets kafka`); and the per-group lag totals they give.

Nothing here needs a broker: the cluster's answers come from a fake of `kafka_end_offsets.ask_cluster`,
and the unreachable cluster is a closed port on 127.0.0.1."""

from __future__ import annotations

import socket
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from offset_audit.cli.main import main
from offset_audit.errors import UserError
from offset_audit.inputs import kafka_end_offsets
from offset_audit.inputs.end_offsets import load_end_offsets
from offset_audit.inputs.kafka_end_offsets import PartitionAnswer, client_config, offsets_table
from offset_audit.runtime import preflight
from offset_audit.runtime.config import load_settings

INSTALL = "pip install 'kafka-offset-audit[kafka]'"


def run(*args):
    return CliRunner().invoke(main, list(args))


def write(path, text: str) -> str:
    path.write_text(text)
    return str(path)


def rows(table: pa.Table) -> list[tuple]:
    return [tuple(r.values()) for r in table.to_pylist()]


@pytest.fixture(scope="module")
def small_dump(tmp_path_factory):
    from offset_audit.generator.demo_dump import generate_dump

    folder = tmp_path_factory.mktemp("small") / "dump"
    generate_dump(str(folder), 300, seed=5)
    return str(folder)


# kafka-get-offsets.sh output ------------------------------------------------------------------


def test_get_offsets_lines_split_on_the_last_two_colons_and_blank_lines_are_skipped(tmp_path):
    ends = write(tmp_path / "ends", "orders:0:1234\n\nbilling.events_v2-eu:11:0\n  \norders:1:99\r\n")
    assert rows(load_end_offsets(ends)) == [
        ("orders", 0, None, 1234),
        ("billing.events_v2-eu", 11, None, 0),
        ("orders", 1, None, 99),
    ]


def test_an_empty_offset_is_unknown_as_older_tools_printed_it(tmp_path):
    # GetOffsetShell before Kafka 3.5 printed `topic:partition:` when the time asked for had no offset.
    assert rows(load_end_offsets(write(tmp_path / "ends", "orders:0:\n"))) == [("orders", 0, None, None)]


def test_start_offsets_fill_log_start_and_a_partition_in_one_file_only_keeps_nulls(tmp_path):
    ends = write(tmp_path / "latest.txt", "orders:0:100\norders:1:50\nnew-topic:0:7\n")
    starts = write(tmp_path / "earliest.txt", "orders:1:20\norders:0:0\ngone:0:3\n")
    assert rows(load_end_offsets(ends, start_offsets=starts)) == [
        ("gone", 0, 3, None),
        ("new-topic", 0, None, 7),
        ("orders", 0, 0, 100),
        ("orders", 1, 20, 50),
    ]


def test_the_form_comes_from_the_content_not_the_name(tmp_path):
    expected = [("orders", 0, 5, 100)]
    csv = write(tmp_path / "ends.txt", "topic,partition,log_start_offset,log_end_offset\norders,0,5,100\n")
    parquet = tmp_path / "ends.csv"
    pq.write_table(
        pa.table({"topic": ["orders"], "partition": [0], "log_start_offset": [5], "log_end_offset": [100]}), parquet
    )
    text = write(tmp_path / "ends.parquet", "orders:0:100\n")
    assert rows(load_end_offsets(csv)) == expected
    assert rows(load_end_offsets(str(parquet))) == expected
    assert rows(load_end_offsets(text)) == [("orders", 0, None, 100)]


REFUSED_FILES = {
    "not any form": ("hello world\n", None, "neither Parquet, CSV with a header, nor kafka-get-offsets.sh output"),
    "a bad line later": ("orders:0:1\norders:1:1\nSkip getting offsets for orders-2\n", None, "line 3 of the"),
    "a word for an offset": ("orders:0:1\norders:1:lots\n", None, "line 2 of the --end-offsets file"),
    "a negative offset": ("orders:0:1\norders:1:-5\n", None, "line 2 of the --end-offsets file"),
    "beyond a long": ("orders:0:9223372036854775808\n", None, "beyond the largest long"),
    "the largest long is fine": ("orders:0:9223372036854775807\n", None, None),
    "a partition twice": ("orders:0:1\norders:1:1\norders:0:2\n", None, "lists orders:0 twice (lines 1 and 3)"),
    "empty": ("\n\n", None, "is empty"),
    "csv negative": ("topic,partition,log_start_offset,log_end_offset\norders,0,-1,5\n", None, "log_start_offset -1"),
    "csv twice": (
        "topic,partition,log_start_offset,log_end_offset\norders,0,0,5\norders,0,0,6\n",
        None,
        "1 topic partitions more than once, e.g. orders:0",
    ),
    "csv beyond a long": (
        "topic,partition,log_start_offset,log_end_offset\norders,0,0,99999999999999999999\n",
        None,
        "beyond a Java long",
    ),
    "start offsets with a csv": (
        "topic,partition,log_start_offset,log_end_offset\norders,0,0,5\n",
        "orders:0:0\n",
        "a table with its own log_start_offset column: drop --start-offsets",
    ),
    "a bad start offsets line": ("orders:0:5\n", "orders:0:0\norders 1 0\n", "line 2 of the --start-offsets file"),
    "start offsets twice": ("orders:0:5\n", "orders:0:0\norders:0:0\n", "--start-offsets file"),
}


@pytest.mark.parametrize("case", list(REFUSED_FILES), ids=list(REFUSED_FILES))
def test_mistakes_in_the_files_are_one_sentence_naming_the_file(tmp_path, case):
    ends_text, starts_text, words = REFUSED_FILES[case]
    ends = write(tmp_path / "ends", ends_text)
    starts = write(tmp_path / "starts", starts_text) if starts_text is not None else None
    if words is None:
        assert load_end_offsets(ends, start_offsets=starts).num_rows == 1
        return
    with pytest.raises(UserError) as raised:
        load_end_offsets(ends, start_offsets=starts)
    message = str(raised.value)
    assert words in message and "\n" not in message
    assert (starts if "--start-offsets file" in message else ends) in message


# The live cluster, faked ----------------------------------------------------------------------


def test_kafka_client_settings_are_the_java_names_librdkafka_shares_and_its_own_bare_names():
    config = client_config(
        "b1:9092,b2:9092",
        {
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
            'username="audit" password="s3\\"cret";',
            "kafka.ssl.endpoint.identification.algorithm": "",
            "kafka.ssl.truststore.location": "/etc/kafka/truststore.jks",  # Java's only: not for librdkafka
            "ssl.ca.location": "/etc/kafka/ca.pem",  # librdkafka's own name; Spark's source ignores it
            "startingOffsets": "earliest",  # Spark's source option
            "kafkaConsumer.pollTimeoutMs": "1000",  # Spark's source option
            "kafka.bootstrap.servers": "elsewhere:9092",  # --bootstrap-server wins
        },
    )
    assert config == {
        "bootstrap.servers": "b1:9092,b2:9092",
        "client.id": "offset-audit",
        "log_level": "0",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "audit",
        "sasl.password": 's3"cret',
        "ssl.endpoint.identification.algorithm": "none",
        "ssl.ca.location": "/etc/kafka/ca.pem",
    }


def test_the_table_from_the_clusters_answers_leaves_out_partitions_it_could_not_answer_for():
    answers = [
        PartitionAnswer("orders", 1, 10, 500),
        PartitionAnswer("orders", 0, 0, 1234),
        PartitionAnswer("audit.log", 0, None, None, "Broker: Leader not available"),
    ]
    assert rows(offsets_table(answers, "b:9092")) == [("orders", 0, 0, 1234), ("orders", 1, 10, 500)]
    assert offsets_table([], "b:9092").num_rows == 0


def test_a_cluster_that_answers_for_no_partition_is_one_sentence_with_its_reason():
    answers = [PartitionAnswer("orders", 0, None, None, "Broker: Topic authorization failed")]
    with pytest.raises(
        UserError, match=r"gave no offsets for any of its 1 partitions, e.g. orders:0: Broker: Topic auth"
    ):
        offsets_table(answers, "b:9092")


@pytest.fixture
def fake_cluster(monkeypatch):
    """The cluster's answers without a broker; the settings it was asked with are kept."""
    asked = []

    def ask(config, timeout_s):
        asked.append((config, timeout_s))
        return [PartitionAnswer("orders", 0, 3, 1234), PartitionAnswer("orders", 1, 0, 77)]

    monkeypatch.setattr(kafka_end_offsets, "ask_cluster", ask)
    return asked


def test_end_offsets_kafka_asks_the_bootstrap_server_with_the_kafka_options(fake_cluster):
    settings = load_settings(
        None, bootstrap_servers="b:9092", kafka_options={"kafka.security.protocol": "SSL", "failOnDataLoss": "true"}
    )
    table = preflight.check_end_offsets("kafka", settings)
    assert rows(table) == [("orders", 0, 3, 1234), ("orders", 1, 0, 77)]
    ((config, timeout),) = fake_cluster
    assert config["bootstrap.servers"] == "b:9092" and config["security.protocol"] == "SSL"
    assert "failOnDataLoss" not in config and timeout == kafka_end_offsets.FETCH_TIMEOUT_S == 10


def test_the_old_option_name_still_names_the_cluster(no_spark, fake_cluster, small_dump, tmp_path, monkeypatch):
    import offset_audit.runtime.preflight

    def stop(*_args, **_kwargs):  # the answer reached the run's checks; stop before any output
        raise UserError("stopped after the fetch")

    monkeypatch.setattr(offset_audit.runtime.preflight, "check_output", stop)
    result = run(
        "audit",
        "--input",
        small_dump,
        "--output",
        str(tmp_path / "out"),
        "--bootstrap-servers",
        "old:9092",
        "--end-offsets",
        "kafka",
    )
    assert result.exit_code == 2 and "stopped after the fetch" in result.output, result.output
    assert fake_cluster[0][0]["bootstrap.servers"] == "old:9092"
    assert "--bootstrap-servers" not in run("audit", "--help").output


REFUSED_OPTIONS = {
    "kafka without a cluster": (["audit", "--end-offsets", "kafka"], "--end-offsets kafka needs --bootstrap-server"),
    "start offsets alone": (["audit", "--start-offsets", "x"], "--start-offsets goes with --end-offsets"),
    "start offsets with kafka": (
        ["share", "--bootstrap-server", "b:9", "--end-offsets", "kafka", "--start-offsets", "x"],
        "asks the cluster for the log start offsets too",
    ),
    "start offsets missing": (
        ["audit", "--end-offsets", "ENDS", "--start-offsets", "/nonexistent/s"],
        "does not exist",
    ),
    "end offsets with a bad line": (["share", "--end-offsets", "BAD"], "line 2 of the --end-offsets file"),
}


@pytest.mark.parametrize("case", list(REFUSED_OPTIONS), ids=list(REFUSED_OPTIONS))
def test_option_mistakes_are_refused_before_spark_starts(no_spark, small_dump, tmp_path, case):
    args, words = REFUSED_OPTIONS[case]
    files = {"ENDS": write(tmp_path / "ends", "orders:0:5\n"), "BAD": write(tmp_path / "bad", "orders:0:5\nx\n")}
    args = [files.get(a, a) for a in args]
    if args[0] == "share":
        args += ["--input-format", "parquet"]
    out = tmp_path / "out"
    result = run(*args, "--input", small_dump, "--output", str(out))
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output
    assert words in result.output
    assert not out.exists()


def test_an_unreachable_cluster_is_one_sentence_before_spark_starts(no_spark, small_dump, tmp_path, monkeypatch):
    pytest.importorskip("confluent_kafka")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setattr(kafka_end_offsets, "FETCH_TIMEOUT_S", 1.0)
    result = run(
        "audit",
        "--input",
        small_dump,
        "--output",
        str(tmp_path / "out"),
        "--bootstrap-server",
        f"127.0.0.1:{port}",
        "--end-offsets",
        "kafka",
        "--kafka-option",
        "kafka.security.protocol=PLAINTEXT",
    )
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: cannot reach the Kafka cluster at 127.0.0.1:{port} within 1 s: ")
    assert result.output.count("\n") == 1 and not (tmp_path / "out").exists()


def test_a_setting_librdkafka_does_not_know_is_one_sentence(no_spark):
    pytest.importorskip("confluent_kafka")
    with pytest.raises(UserError, match="refused its settings: No such configuration property"):
        kafka_end_offsets.fetch_end_offsets("127.0.0.1:9", {"no.such.setting": "1"}, timeout_s=0.5)


def test_without_the_kafka_library_the_sentence_says_what_to_install(no_spark, small_dump, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)
    monkeypatch.setitem(sys.modules, "confluent_kafka.admin", None)
    result = run(
        "audit",
        "--input",
        small_dump,
        "--output",
        str(tmp_path / "out"),
        "--bootstrap-server",
        "b:9092",
        "--end-offsets",
        "kafka",
    )
    assert result.exit_code == 2 and INSTALL in result.output, result.output


# generate --end-offsets -----------------------------------------------------------------------


def test_generate_writes_what_kafka_get_offsets_would_print_and_the_dump_stays_the_same(tmp_path):
    plain, with_files = tmp_path / "plain", tmp_path / "with"
    assert run("generate", "--output", str(plain), "--records", "3000", "--seed", "4").exit_code == 0
    ends, starts = tmp_path / "ends.txt", tmp_path / "nested" / "starts.txt"
    result = run(
        "generate",
        "--output",
        str(with_files),
        "--records",
        "3000",
        "--seed",
        "4",
        "--end-offsets",
        str(ends),
        "--start-offsets",
        str(starts),
    )
    assert result.exit_code == 0, result.output
    assert "topic partitions to" in result.output
    for part in sorted(plain.glob("*.parquet")):
        assert pq.read_table(part).equals(pq.read_table(with_files / part.name))
    table = load_end_offsets(str(ends), start_offsets=str(starts))
    assert table.num_rows > 20 and table.column("log_end_offset").null_count == 0
    assert pc.all(pc.greater_equal(table.column("log_end_offset"), table.column("log_start_offset"))).as_py()
    assert 0 < pc.sum(pc.greater(table.column("log_start_offset"), 0)).as_py() < table.num_rows / 3
    again = tmp_path / "again.txt"
    run(
        "generate", "--output", str(tmp_path / "again"), "--records", "3000", "--seed", "4", "--end-offsets", str(again)
    )
    assert again.read_bytes() == ends.read_bytes()


def test_generate_refuses_offsets_files_for_share_state(tmp_path):
    result = run("generate", "--output", str(tmp_path / "s"), "--format", "share-state", "--end-offsets", "x.txt")
    assert result.exit_code == 2 and "go with --format parquet or segments" in result.output


# Lag totals per group ------------------------------------------------------------------------


def test_group_lag_totals_sum_the_partitions_whose_lag_is_known(spark):
    from audit_frames import AS_OF, WEEK, frames, group, offset

    from offset_audit.coordinator import verdicts

    groups, offsets = frames(
        spark,
        [group("reading", topics=["orders"]), group("left", members=0, state="Empty", topics=[]), group("none")],
        [
            offset("reading", "orders", 0, committed=90),  # lag 10
            offset("reading", "orders", 1, committed=50),  # caught up
            offset("reading", "payments", 0, committed=5),  # a topic it left: lag 45, stale
            offset("reading", "unknown", 0, committed=5),  # no end offset: left out
            offset("left", "unknown", 0, committed=1),  # no partition with a known lag
        ],
    )
    ends = spark.createDataFrame(
        [("orders", 0, 0, 100), ("orders", 1, 0, 50), ("payments", 0, 0, 50)],
        "topic string, partition int, log_start_offset bigint, log_end_offset bigint",
    )
    judged = verdicts.judged_offsets(offsets, groups)
    partitions = verdicts.partition_verdicts(judged, AS_OF, WEEK, 600_000, ends)
    totals = {
        r.group_id: (r.lag_total, r.stale_lag_total, r.partitions_with_lag)
        for r in verdicts.group_verdicts(partitions, groups, AS_OF, WEEK, 600_000).collect()
    }
    assert totals == {"reading": (55, 45, 2), "left": (None, None, None), "none": (None, None, None)}
    without_ends = verdicts.partition_verdicts(judged, AS_OF, WEEK, 600_000)
    rows = verdicts.group_verdicts(without_ends, groups, AS_OF, WEEK, 600_000).collect()
    assert {(r.lag_total, r.stale_lag_total, r.partitions_with_lag) for r in rows} == {(None, None, None)}


# Lag, end to end ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A generated dump with the kafka-get-offsets.sh files of its cluster, and the same offsets as CSV."""
    from offset_audit.generator.demo_dump import generate_dump

    root = tmp_path_factory.mktemp("cluster")
    ends, starts = root / "latest.txt", root / "earliest.txt"
    generate_dump(str(root / "dump"), 4000, seed=9, end_offsets=str(ends), start_offsets=str(starts))
    csv = root / "offsets.csv"
    pacsv.write_csv(load_end_offsets(str(ends), start_offsets=str(starts)), csv)
    return {"root": root, "dump": str(root / "dump"), "ends": str(ends), "starts": str(starts), "csv": str(csv)}


def _verdicts(output, table, columns):
    from offset_audit.views.audit_folder import read_table

    return read_table(str(output), table, columns=columns)


def test_kafka_get_offsets_files_give_the_lag_the_same_table_as_csv_gives(spark, cluster, tmp_path):
    from offset_audit.runs.audit import run_audit

    key = ["group_id", "topic", "partition"]
    wanted = [*key, "committed_offset", "lag", "stale_lag", "offset_out_of_range", "log_end_offset"]
    judged = {}
    for name, args in {
        "text": (cluster["ends"], cluster["starts"]),
        "csv": (cluster["csv"], None),
    }.items():
        settings = load_settings(None)
        ends = preflight.check_end_offsets(args[0], settings, args[1])
        run_audit(spark, [cluster["dump"]], str(tmp_path / name), settings, end_offsets=ends)
        judged[name] = _verdicts(tmp_path / name, "partition_verdicts", wanted).sort_by([(k, "ascending") for k in key])
    text = judged["text"]
    assert text.equals(judged["csv"])
    # The generated log end is at or past every ordinary committed offset (the generator's few commits
    # past 2^54, there for exact integers, are left ahead of it), so no lag was cut at 0 ...
    assert text.column("lag").null_count == 0
    ordinary = text.filter(pc.less(text.column("committed_offset"), 1 << 53))
    assert 0 < ordinary.num_rows < text.num_rows
    assert pc.all(pc.greater_equal(ordinary.column("log_end_offset"), ordinary.column("committed_offset"))).as_py()
    # ... some partitions are caught up, and a few lost records a group had not read yet.
    assert pc.sum(pc.equal(text.column("lag"), 0)).as_py() > 0
    assert pc.sum(text.column("offset_out_of_range").cast(pa.int64())).as_py() > 0


def test_an_audit_folder_of_the_previous_version_takes_the_lag_totals(spark, cluster, tmp_path, monkeypatch):
    """group_verdicts written without the lag total columns (as the version before them wrote it), then
    audited again with end offsets: the table gains the columns, the old snapshot reads them as null,
    and each group's totals are the sums of its partitions' lag."""
    from offset_audit.layouts.tables import TableSchema, table_schema
    from offset_audit.outputs import snapshot_tables
    from offset_audit.runs.audit import run_audit

    added = {"lag_total", "stale_lag_total", "partitions_with_lag"}

    def previous(name):
        schema = table_schema(name)
        return TableSchema(schema.name, schema.about, tuple(c for c in schema.columns if c.name not in added))

    output = str(tmp_path / "audit")
    with monkeypatch.context() as old_version:
        old_version.setattr(snapshot_tables, "table_schema", previous)
        first = run_audit(spark, [cluster["dump"]], output, load_settings(None))
    second = run_audit(spark, [cluster["dump"]], output, load_settings(None, as_of="now"), end_offsets=cluster["csv"])
    assert first.snapshot_id != second.snapshot_id

    groups = _verdicts(output, "group_verdicts", ["snapshot_id", "group_id", "offset_count", *sorted(added)])
    old = groups.filter(pc.equal(groups.column("snapshot_id"), first.snapshot_id))
    new = groups.filter(pc.equal(groups.column("snapshot_id"), second.snapshot_id))
    assert old.num_rows == new.num_rows > 0
    assert all(old.column(c).null_count == old.num_rows for c in added)

    partitions = _verdicts(output, "partition_verdicts", ["snapshot_id", "group_id", "lag", "stale_lag"])
    partitions = partitions.filter(pc.equal(partitions.column("snapshot_id"), second.snapshot_id))
    sums = {
        r["group_id"]: r
        for r in partitions.append_column("lagging", pc.greater(partitions.column("lag"), 0).cast(pa.int64()))
        .group_by("group_id", use_threads=False)
        .aggregate([("lag", "sum"), ("stale_lag", "sum"), ("lagging", "sum")])
        .to_pylist()
    }
    for group in new.to_pylist():
        if group["offset_count"] == 0:
            assert (group["lag_total"], group["stale_lag_total"], group["partitions_with_lag"]) == (None, None, None)
            continue
        expected = sums[group["group_id"]]
        assert group["lag_total"] == expected["lag_sum"]
        assert group["stale_lag_total"] == expected["stale_lag_sum"]
        assert group["partitions_with_lag"] == expected["lagging_sum"]


@pytest.mark.parametrize(
    ("args", "written"),
    [(["--bootstrap-server", "broker-1:9092"], "broker-1:9092"), ([], '"$BOOTSTRAP_SERVER"')],
    ids=["given", "default"],
)
def test_share_writes_the_cluster_into_its_delete_commands_or_the_shell_word(
    small_dump, tmp_path, monkeypatch, args, written
):
    import offset_audit.runs.share
    import offset_audit.runtime.session

    asked = {}

    def run_share(*_args, **kwargs):
        asked.update(kwargs)
        raise UserError("stopped before the share run")

    from unittest.mock import MagicMock

    # A stand-in session: the run sets its time zone for the run and gives it back, then stops here.
    monkeypatch.setattr(offset_audit.runtime.session, "start_spark", lambda *_args, **_kwargs: MagicMock())
    monkeypatch.setattr(offset_audit.runs.share, "run_share", run_share)
    result = run("share", "--input", small_dump, "--input-format", "parquet", "--output", str(tmp_path / "o"), *args)
    assert "stopped before the share run" in result.output, result.output
    assert asked["bootstrap"] == written
