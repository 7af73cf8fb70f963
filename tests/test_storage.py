"""Paths as users write them, object-store options and their precedence, and the cluster-sized defaults
(offset_audit.storage, offset_audit.runtime.session). The live S3 and cluster runs are in test_object_store.py
and test_cluster.py."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner
from deltalake import DeltaTable

from offset_audit.cli.main import main
from offset_audit.runtime.config import load_settings
from offset_audit.runtime.session import cluster_cores, fit_to_cluster, quiet_spark_logs, shuffle_partitions
from offset_audit.storage import Storage, for_settings, join, normalize, parent, spark_path, storage_options


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("s3a://bucket/dumps/x", "s3://bucket/dumps/x"),
        ("s3://bucket/dumps/x", "s3://bucket/dumps/x"),
        ("file:///data/dump", "/data/dump"),
        ("/data/../data/dump/", "/data/dump"),
        ("hdfs://nn/dump", "hdfs://nn/dump"),
    ],
)
def test_paths_are_kept_absolute_or_as_s3(given, kept):
    assert normalize(given) == kept


def test_a_relative_path_is_made_absolute_from_the_drivers_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert normalize("dump/part-*.parquet") == f"{tmp_path}/dump/part-*.parquet"
    assert normalize("~/dump") == os.path.expanduser("~/dump")


def test_s3_paths_join_and_go_to_spark_as_s3a():
    assert join("s3://b/out/", "decoded", "runs") == "s3://b/out/decoded/runs"
    assert parent("s3://b/out/runs/") == "s3://b/out"
    assert spark_path("s3://b/out") == "s3a://b/out" and spark_path("/data/out") == "/data/out"


def test_options_come_from_the_environment_then_the_config_then_the_flags(tmp_path):
    environment = {"AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL": "https://env", "HOME": "/root", "AWS_PROFILE": ""}
    config = tmp_path / "c.toml"
    config.write_text('[storage]\nAWS_ENDPOINT_URL = "https://config"\nAWS_ACCESS_KEY_ID = "k"\n')
    settings = load_settings(str(config), storage={"AWS_ACCESS_KEY_ID": "flag"})
    assert storage_options(settings.storage, environment) == {
        "AWS_REGION": "eu-west-1",
        "AWS_ENDPOINT_URL": "https://config",
        "AWS_ACCESS_KEY_ID": "flag",
    }


def test_an_http_endpoint_allows_http_for_delta_rs_unless_told_otherwise():
    assert Storage.of({"AWS_ENDPOINT_URL": "http://127.0.0.1:9000"}).delta_options["AWS_ALLOW_HTTP"] == "true"
    told = Storage.of({"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_ALLOW_HTTP": "false"})
    assert told.delta_options["AWS_ALLOW_HTTP"] == "false"
    assert "AWS_ALLOW_HTTP" not in Storage.of({"AWS_ENDPOINT_URL": "https://s3.example"}).delta_options


def test_storage_travels_to_tasks_as_plain_options(monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    storage = for_settings(load_settings(storage={"AWS_ENDPOINT_URL": "http://127.0.0.1:1"}))
    assert storage.options == (("AWS_ENDPOINT_URL", "http://127.0.0.1:1"), ("AWS_REGION", "eu-central-1"))
    import pickle

    assert pickle.loads(pickle.dumps(storage)) == storage


@pytest.mark.parametrize("flag", ["AWS_REGION", "=value"])
def test_a_malformed_storage_option_is_one_sentence(flag, tmp_path):
    result = CliRunner().invoke(main, ["decode", "--input", str(tmp_path), "--output", str(tmp_path / "o"),
                                       "--storage-option", flag])  # fmt: skip
    assert result.exit_code == 2 and result.output == f"error: --storage-option takes NAME=VALUE, got '{flag}'\n"


def test_relative_paths_reach_the_run_absolute(spark, tmp_path, monkeypatch):
    from offset_audit.generator.demo_dump import generate_dump

    generate_dump(str(tmp_path / "dump"), 200, seed=3)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["decode", "--input", "dump", "--output", "file://" + str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    runs = DeltaTable(str(tmp_path / "out" / "runs")).to_pyarrow_table().to_pylist()
    assert runs[0]["input"] == str(tmp_path / "dump")
    assert not (tmp_path / "file:").exists()


@pytest.mark.parametrize(
    ("cores", "size", "partitions"),
    [(2, 6 << 20, 4), (2, None, 4), (8, 10 << 30, 40), (64, 1 << 30, 128), (1000, 1 << 50, 4096)],
)
def test_shuffle_partitions_follow_cores_and_input(cores, size, partitions):
    assert shuffle_partitions(cores, size) == partitions


def test_a_session_with_its_shuffle_partitions_set_keeps_them(spark):
    before = spark.conf.get("spark.sql.shuffle.partitions")
    assert fit_to_cluster(spark, 10 << 30) == {}
    assert spark.conf.get("spark.sql.shuffle.partitions") == before
    assert cluster_cores(spark) == spark.sparkContext.defaultParallelism  # local: nothing to wait for


def test_a_log4j_file_the_user_chose_is_left_alone(spark):
    jvm = spark.sparkContext._jvm
    assert jvm.java.lang.System.getProperty("log4j2.configurationFile")  # the local session sets ours
    assert quiet_spark_logs(jvm) is None
