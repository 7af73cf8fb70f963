"""The command line: user errors are one sentence and exit code 2; decode prints a summary."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from offset_audit.cli.main import main


def run(*args):
    return CliRunner().invoke(main, list(args))


def assert_no_crash(result) -> None:
    """CliRunner catches what the command raises into result.exception (never into its output): a clean
    end is no exception but the SystemExit of the exit code."""
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info


def test_missing_input_is_a_user_error(tmp_path):
    result = run("decode", "--input", str(tmp_path / "nope"), "--output", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and "does not exist" in result.output
    assert_no_crash(result)


def test_glob_matching_nothing_is_a_user_error(spark, tmp_path):
    result = run("decode", "--input", str(tmp_path / "*.parquet"), "--output", str(tmp_path / "out"))
    assert result.exit_code == 2 and "matches no file" in result.output


@pytest.mark.parametrize(
    "how",
    [["--kafka-version", "1.1"], ["--kafka-version", "4.5"], ["--conf", "CONF"]],
)
def test_a_kafka_version_without_rules_is_one_sentence_before_anything_is_written(tmp_path, how):
    (tmp_path / "dump").mkdir()
    conf = tmp_path / "version.toml"
    conf.write_text('[kafka]\nversion = "0.11"\n')
    how = [str(conf) if arg == "CONF" else arg for arg in how]
    result = run("audit", "--input", str(tmp_path / "dump"), "--output", str(tmp_path / "out"), *how)
    assert result.exit_code == 2 and "2.0 to 4.4" in result.output and result.output.count("\n") == 1
    assert not (tmp_path / "out").exists()
    assert_no_crash(result)


@pytest.mark.parametrize(("given", "says"), [("3.9", "share groups came with Kafka 4.0"), ("4.5", "2.0 to 4.4")])
def test_share_refuses_a_kafka_version_without_share_groups_in_one_sentence(tmp_path, given, says):
    (tmp_path / "state").mkdir()
    result = run("share", "--input", str(tmp_path / "state"), "--output", str(tmp_path / "out"),
                 "--kafka-version", given)  # fmt: skip
    assert result.exit_code == 2 and says in result.output and result.output.count("\n") == 1, result.output
    assert not (tmp_path / "out").exists()
    assert_no_crash(result)


def test_no_input_at_all(tmp_path):
    result = run("decode", "--output", str(tmp_path))
    assert result.exit_code == 2 and "--input" in result.output


def test_unknown_input_format_is_refused_by_the_parser(tmp_path):
    result = run("decode", "--input-format", "csv", "--input", "x", "--output", str(tmp_path))
    assert result.exit_code == 2 and "csv" in result.output


def test_bad_config_file(tmp_path):
    conf = tmp_path / "bad.toml"
    conf.write_text("[input\nformat=")
    result = run("decode", "--conf", str(conf), "--input", "x", "--output", str(tmp_path))
    assert result.exit_code == 2 and "not valid TOML" in result.output


def test_kafka_needs_bootstrap_servers(spark, tmp_path):
    result = run("decode", "--input-format", "kafka", "--output", str(tmp_path))
    assert result.exit_code == 2 and "needs --bootstrap-server HOST:PORT" in result.output


def test_kafka_without_the_connector_says_which_package_to_add(spark, tmp_path):
    from offset_audit.inputs.kafka_topic import kafka_package
    from offset_audit.jvm import has_class

    if has_class(spark, "org.apache.spark.sql.kafka010.KafkaSourceProvider"):
        pytest.skip("Spark's Kafka connector is on the classpath here; this test covers its absence")
    # Both ask the cluster for its id (the cluster the run names) before reading: that question says it too.
    for command in ("decode", "audit"):
        result = run(command, "--input-format", "kafka", "--bootstrap-servers", "localhost:9", "--output",
                     str(tmp_path / command))  # fmt: skip
        assert result.exit_code == 2, (command, result.output)
        assert f"--packages {kafka_package(spark)}" in result.output, (command, result.output)


def test_decode_prints_a_summary_that_adds_up(spark, tmp_path):
    """The printed counts add up (read = skipped + decoded + unknown + quarantined, decoded = the sum of
    the per-type lines) and are what the tables and the runs row hold."""
    from deltalake import DeltaTable

    from offset_audit.generator.demo_dump import generate_dump

    generate_dump(str(tmp_path / "dump"), 800, seed=2, corrupt=8)  # the eighth is of an unknown type
    result = run("decode", "--input", str(tmp_path / "dump"), "--output", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output

    def count(label: str) -> int:
        return int(re.search(rf"^  {label} +([\d,]+)", result.output, re.M)[1].replace(",", ""))

    read, skipped, decoded = count("records read"), count("skipped"), count("decoded")
    unknown, quarantined = count("unknown types"), count("quarantined")
    assert read == 800 and read == skipped + decoded + unknown + quarantined
    assert quarantined > 0 and unknown > 0
    per_type = [int(m.replace(",", "")) for m in re.findall(r"^    +\d+ \S+ +\S+ .*?([\d,]+)$", result.output, re.M)]
    assert sum(per_type) == decoded
    tables = {
        name: DeltaTable(str(tmp_path / "out" / name)).count()
        for name in ("offset_commits", "group_metadata", "modern_group_records", "other_records", "quarantine")
    }
    assert tables["other_records"] == unknown and tables["quarantine"] == quarantined
    assert tables["offset_commits"] + tables["group_metadata"] + tables["modern_group_records"] == decoded
    (row,) = DeltaTable(str(tmp_path / "out" / "runs")).to_pyarrow_table().to_pylist()
    assert (row["records_read"], row["records_skipped"], row["records_decoded"]) == (read, skipped, decoded)
    assert (row["other_records"], row["quarantined"]) == (unknown, quarantined)


def test_generate_command(tmp_path):
    result = run("generate", "--output", str(tmp_path), "--records", "300", "--seed", "4")
    assert result.exit_code == 0 and "wrote 300 records" in result.output


def test_whatif_and_audit_flags_reach_the_jobs(spark, tmp_path):
    from deltalake import DeltaTable

    from offset_audit.generator.demo_dump import generate_dump

    generate_dump(str(tmp_path / "dump"), 600, seed=3)
    result = run(
        "whatif",
        "--input",
        str(tmp_path / "dump"),
        "--output",
        str(tmp_path / "w"),
        "--retention-minutes",
        "60,10080",
        "--per-group",
        "--keep-decoded",
    )
    assert result.exit_code == 0, result.output
    assert {
        r["retention_minutes"] for r in DeltaTable(f"{tmp_path}/w/whatif_groups").to_pyarrow_table().to_pylist()
    } == {
        60,
        10080,
    }
    assert DeltaTable(f"{tmp_path}/w/decoded/offset_commits").count() > 0
    result = run("audit", "--input", str(tmp_path / "dump"), "--output", str(tmp_path / "a"))
    assert result.exit_code == 0, result.output
    assert DeltaTable(f"{tmp_path}/a/decoded/offset_commits").count() == 0
    assert DeltaTable(f"{tmp_path}/a/decoded/quarantine").count() == 0


def test_a_binary_file_read_as_console_text_is_quarantined_not_a_traceback(spark, tmp_path):
    binary = tmp_path / "binary.dat"
    binary.write_bytes(bytes(range(256)) * 64 + b'\n\xff\xfe{"key":{\x00')
    result = run("decode", "--input", str(binary), "--input-format", "console", "--output", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert_no_crash(result)
    read, quarantined = (int(re.search(rf"{name} +([\d,]+)", result.output)[1]) for name in ("read", "quarantined"))
    assert read == quarantined > 0


def test_a_user_error_raised_in_a_spark_task_is_one_sentence_and_exit_2(spark, capfd):
    """Once, a UserError in a task reached the user as a 150-line PythonException, exit 1."""
    from offset_audit.cli.options import user_errors

    def _raise_user_error(_):
        from offset_audit.errors import UserError

        raise UserError("the thing in the task is wrong")

    @user_errors
    def command():
        spark.sparkContext.parallelize([1], 1).map(_raise_user_error).collect()

    with pytest.raises(SystemExit) as stopped:
        command()
    assert stopped.value.code == 2
    assert capfd.readouterr().err == "error: the thing in the task is wrong\n"


def test_anything_else_from_a_task_keeps_its_traceback(spark):
    from offset_audit.cli.options import user_errors

    @user_errors
    def command():
        spark.sparkContext.parallelize([1], 1).map(lambda _: 1 // 0).collect()

    with pytest.raises(Exception, match="ZeroDivisionError"):
        command()


@pytest.fixture(scope="module")
def small_dump(tmp_path_factory):
    from offset_audit.generator.demo_dump import generate_dump

    folder = tmp_path_factory.mktemp("small") / "dump"
    generate_dump(str(folder), 300, seed=5)
    return str(folder)


def _bad_end_offsets(tmp_path):
    path = tmp_path / "ends.csv"
    path.write_text("topic,partition,log_start_offset\norders,0,0\n")
    return str(path)


def _end_offsets_with_words(tmp_path):
    path = tmp_path / "words.csv"
    path.write_text("topic,partition,log_start_offset,log_end_offset\norders,0,0,lots\n")
    return str(path)


def _bad_conf(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[audit]\nretention_minutes = 5000000000\n")
    return str(path)


def _string_keys(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "strings.parquet"
    table = pa.table({"key": ["k"], "value": [b"v"], "partition": [0], "offset": [0]})
    pq.write_table(table, path)
    return str(path)


def _console_text(tmp_path):
    path = tmp_path / "console.txt"
    path.write_text('{"key":{"type":2,"data":{"group":"g"}},"value":null}')
    return str(path)


# Each: the arguments after the command (DUMP and OUT filled in), and words the one sentence must hold.
REFUSED = {
    "retention beyond the broker's int": (["audit", "--retention-minutes", "5000000000"], "2147483647"),
    "retention list beyond the broker's int": (["whatif", "--retention-minutes", "60,99999999999"], "2147483647"),
    "zero retention": (["audit", "--retention-minutes", "0"], "takes 1 to"),
    "bad as-of": (["audit", "--as-of", "yesterday-ish"], "--as-of takes latest"),
    "bad as-of among several": (["whatif", "--retention-minutes", "60", "--as-of", "now", "--as-of", "x"], "not 'x'"),
    "end offsets without a column": (["audit", "--end-offsets", _bad_end_offsets], "no column log_end_offset"),
    "end offsets missing": (["audit", "--end-offsets", "/nonexistent/ends.csv"], "does not exist"),
    "end offsets not numbers": (["audit", "--end-offsets", _end_offsets_with_words], "'lots' for log_end_offset"),
    "config value out of range": (["audit", "--conf", _bad_conf], "retention_minutes takes 1 to"),
    "key column of type string": (["decode", "--input", _string_keys], "must be binary"),
    "latest as-of of a console dump": (["audit", "--input", _console_text], "console-consumer dumps do not have"),
    "share of a text dump": (["share", "--input", _console_text, "--input-format", "console"], "__share_group_state"),
    "snapshot id that ends the SQL literal": (["audit", "--snapshot-id", "x\\' OR true --"], "takes a letter or digit"),
    "snapshot id that climbs up": (["whatif", "--retention-minutes", "60", "--snapshot-id", "../x"], "at most 100"),
    "snapshot id with a slash": (["history", "--snapshot-id", "a/b"], "--snapshot-id"),
    "history of a dump and an audit": (["history", "--audit", lambda t: str(t)], "not both"),
    "incremental and full at once": (["audit", "--incremental", "--full"], "give one of them"),
    "full and incremental at once": (["audit", "--full", "--incremental"], "give one of them"),
    "a log generation without an audit": (["history", "--log-generation", "2"], "give --audit AUDIT"),
    "delta-spark writer without Delta": (["audit", "--writer", "delta-spark"], "needs a Spark session with Delta"),
    "delta-spark writer for a decode": (["decode", "--writer", "delta-spark"], "spark.sql.extensions"),
}


@pytest.mark.parametrize("case", list(REFUSED), ids=list(REFUSED))
def test_mistakes_are_refused_before_spark_starts_and_nothing_is_written(no_spark, small_dump, tmp_path, case):
    args, words = REFUSED[case]
    args = [a(tmp_path) if callable(a) else a for a in args]
    if "--input" not in args:
        args += ["--input", small_dump]
    out = tmp_path / "out"
    result = run(*args, "--output", str(out))
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output
    assert words in result.output
    assert not out.exists()


def test_history_of_an_audit_that_kept_no_log_is_refused_and_writes_nothing(no_spark, small_dump, tmp_path):
    (tmp_path / "audit").mkdir()
    result = run("history", "--audit", str(tmp_path / "audit"))
    assert result.exit_code == 2 and "holds no state/log: only audit --incremental keeps one" in result.output
    assert list((tmp_path / "audit").iterdir()) == []


def test_output_that_is_a_file_is_refused_and_left_alone(no_spark, small_dump, tmp_path):
    target = tmp_path / "report.txt"
    target.write_text("mine")
    result = run("audit", "--input", small_dump, "--output", str(target))
    assert result.exit_code == 2 and "is a file, not a folder" in result.output
    assert target.read_text() == "mine"


def test_output_in_a_place_that_cannot_be_written_is_refused(no_spark, small_dump, tmp_path):
    result = run("decode", "--input", small_dump, "--output", "/proc/offset-audit-test/out")
    assert result.exit_code == 2 and "cannot be written" in result.output


def test_a_folder_that_is_not_a_delta_table_is_never_taken_over(no_spark, small_dump, tmp_path):
    verdicts = tmp_path / "out" / "partition_verdicts"
    verdicts.mkdir(parents=True)
    (verdicts / "notes.txt").write_text("mine")
    result = run("audit", "--input", small_dump, "--output", str(tmp_path / "out"))
    assert result.exit_code == 2 and "not a Delta table" in result.output
    assert sorted(p.name for p in (tmp_path / "out").rglob("*")) == ["notes.txt", "partition_verdicts"]


def test_an_empty_folder_where_a_table_goes_is_fine(spark, small_dump, tmp_path):
    (tmp_path / "out" / "offset_commits").mkdir(parents=True)
    result = run("decode", "--input", small_dump, "--output", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output


def test_a_snapshot_column_of_another_type_is_one_sentence(no_spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "strings.parquet"
    pq.write_table(pa.table({"key": [b"k"], "value": [b"v"], "partition": ["zero"], "offset": [0]}), path)
    result = run("decode", "--input", str(path), "--output", str(tmp_path / "out"))
    assert result.exit_code == 2 and "column 'partition'" in result.output and "must be an integer" in result.output


def test_the_dataframe_route_checks_the_same_types(spark):
    from offset_audit.errors import UserError
    from offset_audit.inputs.kafka_source import to_raw_records

    frame = spark.createDataFrame([(b"k", b"v", 0, "x")], "key binary, value binary, partition int, offset string")
    with pytest.raises(UserError, match="column 'offset' must be an integer"):
        to_raw_records(frame)


@pytest.mark.heavy
def test_a_quiet_audit_in_a_fresh_process_writes_nothing_on_stderr(small_dump, tmp_path):
    """What cron mails: a `--quiet` run of the installed command, its own JVM started (no warm session),
    says nothing on stderr, neither the JDK's nor Spark's start-up lines, and its summary on stdout."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    program = Path(sys.executable).parent / "offset-audit"
    done = subprocess.run(
        [str(program), "audit", "--input", small_dump, "--output", str(tmp_path / "out"), "--quiet"],
        capture_output=True,
        text=True,
        env={**os.environ, "OFFSET_AUDIT_WARM": "0"},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith("Audited ")


def _commands_taking_cluster() -> list[str]:
    return [name for name, command in main.commands.items() if any("--cluster" in p.opts for p in command.params)]


@pytest.mark.parametrize("command", _commands_taking_cluster())
def test_every_command_refuses_an_empty_cluster_in_one_sentence_before_anything_starts(no_spark, tmp_path, command):
    """An empty --cluster (a shell variable that was not set) names no cluster: no command takes it for
    "the one the input holds"."""
    takes_output = any("--output" in p.opts for p in main.commands[command].params)
    result = run(command, "--cluster", "", *(["--output", str(tmp_path / "out")] if takes_output else []))
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output
    assert "'--cluster': takes a cluster name" in result.output and "not ''" in result.output
    assert not (tmp_path / "out").exists()


def test_both_kinds_of_command_are_among_those_checked_for_an_empty_cluster():
    """The dump's commands (the run's settings) and the audit folder's (which cluster to read)."""
    assert {"decode", "audit", "whatif", "share", "history", "describe", "metrics"} <= set(_commands_taking_cluster())


def test_the_as_of_a_summary_prints_given_back_with_as_of_judges_at_the_same_moment(spark, small_dump, tmp_path):
    """--as-of latest takes the newest record's time, to the millisecond: shown to the second, the same
    audit run again at the printed time judged at another moment and every row's as_of changed."""
    import json

    first = run("audit", "--input", small_dump, "--output", str(tmp_path / "first"), "--quiet")
    assert_no_crash(first)
    printed = re.match(r"Audited \S+ as of (\S+) ", first.output).group(1)
    described = run("describe", "--audit", str(tmp_path / "first"))
    assert described.output.splitlines()[0].endswith(f" as of {printed}")
    again = run(
        "audit", "--input", small_dump, "--output", str(tmp_path / "again"), "--as-of", printed, "--json", "--quiet"
    )
    assert_no_crash(again)
    first_json = json.loads(run("describe", "--audit", str(tmp_path / "first"), "--json").output)
    assert json.loads(again.output)["as_of"] == first_json["as_of"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", printed)  # the dump's newest record: .130
