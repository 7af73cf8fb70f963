"""The command line: user errors are one sentence and exit code 2; decode prints a summary."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from offset_audit.cli import main


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_missing_input_is_a_user_error(tmp_path):
    result = run("decode", "--input", str(tmp_path / "nope"), "--output", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "does not exist" in result.output
    assert "Traceback" not in result.output


def test_glob_matching_nothing_is_a_user_error(spark, tmp_path):
    result = run("decode", "--input", str(tmp_path / "*.parquet"), "--output", str(tmp_path / "out"))
    assert result.exit_code == 2 and "matches no file" in result.output


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
    assert result.exit_code == 2 and "--bootstrap-servers" in result.output


def test_kafka_without_the_connector_says_which_package_to_add(spark, tmp_path):
    from offset_audit.sources.kafka import kafka_package

    try:
        spark.read.format("kafka")._jreader.lookupDataSourceV2  # noqa: B018
        has_connector = (
            spark._jvm.java.lang.Class.forName("org.apache.spark.sql.kafka010.KafkaSourceProvider") is not None
        )
    except Exception:
        has_connector = False
    if has_connector:
        pytest.skip("Spark's Kafka connector is on the classpath here; this test covers its absence")
    result = run("decode", "--input-format", "kafka", "--bootstrap-servers", "localhost:9", "--output", str(tmp_path))
    assert result.exit_code == 2
    assert f"--packages {kafka_package(spark)}" in result.output


def test_decode_prints_a_summary_that_adds_up(spark, tmp_path):
    from offset_audit.generator import generate_dump

    generate_dump(str(tmp_path / "dump"), 800, seed=2, corrupt=4)
    result = run("decode", "--input", str(tmp_path / "dump"), "--output", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert re.search(r"records read +800\n", result.output)
    assert "quarantined" in result.output and "offset_commits" in result.output


def test_generate_command(tmp_path):
    result = run("generate", "--output", str(tmp_path), "--records", "300", "--seed", "4")
    assert result.exit_code == 0 and "wrote 300 records" in result.output


def test_whatif_and_audit_flags_reach_the_jobs(spark, tmp_path):
    from deltalake import DeltaTable

    from offset_audit.generator import generate_dump

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
    assert "Traceback" not in result.output
    read, quarantined = (int(re.search(rf"{name} +([\d,]+)", result.output)[1]) for name in ("read", "quarantined"))
    assert read == quarantined > 0
