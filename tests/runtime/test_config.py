"""Config files are checked before anything runs: a misspelt or misplaced setting, a value of the wrong
type, or a file that is not a TOML file is one sentence naming the file and the setting, exit 2."""

from __future__ import annotations

import os
import re

import pytest
from click.testing import CliRunner

from offset_audit.cli.main import main
from offset_audit.errors import UserError
from offset_audit.runtime.config import load_settings

MISTAKES = [
    (
        "[audit]\nretention_minute = 1440\n",
        "unknown setting retention_minute in [audit] (did you mean retention_minutes?)",
    ),
    ("[audt]\nretention_minutes = 1440\n", "unknown section [audt] (did you mean audit?)"),
    ('[decode]\nfast_path = "no"\n', "fast_path in [decode] takes true or false, not 'no'"),
    ('[decode]\nmax_batch_mib = "64"\n', "max_batch_mib in [decode] takes a whole number, not '64'"),
    ("[input]\npartition = 1.5\n", "partition in [input] takes a whole number, not 1.5"),
    (
        "[audit]\nretention_minutes = true\n",
        "retention_minutes in [audit] takes minutes or a duration like 7d, not True",
    ),
    ('[kafka]\noptions = "x"\n', "options in [kafka] takes a table of NAME = value, not 'x'"),
    ('[kafka.options]\n"kafka.sasl" = [1, 2]\n', "options in [kafka] takes a table of NAME = value"),
    (
        '[spark]\n"spark.master" = ["local"]\n',
        "spark.master in [spark] takes text, a number or true/false, not ['local']",
    ),
    ("spark = 5\n", "spark must be a section ([spark]), not a value"),
    ("retention_minutes = 1440\n", "unknown setting retention_minutes; settings go in a section such as [audit]"),
    ('[kafka]\nisolation_level = "read_uncommited"\n', "isolation_level takes read_committed or read_uncommitted"),
    ('[output]\nwriter = "spark"\n', "writer takes auto, delta-rs or delta-spark, not 'spark'"),
    ('[output]\nwritter = "delta-rs"\n', "unknown setting writter in [output] (did you mean writer?)"),
    ('[metrics]\ngroups = "orders-.*"\n', 'groups in [metrics] takes a list of text, like ["orders-.*"]'),
    ("[metrics]\nmax_samples = 1e5\n", "max_samples in [metrics] takes a whole number, not 100000.0"),
    ("[metrics]\ngranularty = 1\n", "unknown setting granularty in [metrics] (did you mean granularity?)"),
]


@pytest.mark.parametrize(("text", "said"), MISTAKES, ids=[m[1][:40] for m in MISTAKES])
def test_each_mistake_in_a_config_file_is_one_sentence_and_exit_2(no_spark, tmp_path, text, said):
    conf = tmp_path / "mine.toml"
    conf.write_text(text)
    result = CliRunner().invoke(main, ["decode", "--conf", str(conf), "--input", "x", "--output", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ") and said in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "runs").exists()


def test_a_misspelt_retention_no_longer_audits_at_the_default(tmp_path):
    """Before, retention_minute = 1440 was ignored without a word and the audit used 10080."""
    conf = tmp_path / "mine.toml"
    conf.write_text("[audit]\nretention_minute = 1440\n")
    with pytest.raises(UserError, match="did you mean retention_minutes"):
        load_settings(str(conf))
    conf.write_text("[audit]\nretention_minutes = 1440\n")
    assert load_settings(str(conf)).audit.retention_minutes == 1440


def test_free_sections_take_any_name_of_spark_and_of_the_object_store(tmp_path):
    conf = tmp_path / "mine.toml"
    conf.write_text('[spark]\n"spark.executor.cores" = 2\n[storage]\nAWS_REGION = "eu-west-1"\n')
    settings = load_settings(str(conf))
    assert settings.spark["spark.executor.cores"] == "2" and settings.storage["AWS_REGION"] == "eu-west-1"


def test_a_file_that_is_no_toml_file_is_one_sentence(tmp_path):
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe[audit]\n")
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    for path, said in [
        (tmp_path, "is a folder; give a TOML file"),
        (binary, "is not UTF-8 text (byte 0)"),
        (fifo, "is not a regular file"),  # reading it would wait forever
        ("/proc/self/mem", "cannot be read: "),  # a file root cannot read either
        (tmp_path / "missing.toml", "does not exist"),
    ]:
        with pytest.raises(UserError, match=re.escape(f"config file {path} {said}")):
            load_settings(str(path))


def test_the_metrics_section_reaches_the_settings(tmp_path):
    conf = tmp_path / "mine.toml"
    conf.write_text(
        '[metrics]\ngranularity = "topic"\nwatch_expiring_within = "3d"\nmax_samples = 20000\n'
        'exclude_groups = ["console-consumer-.*"]\npush_gateway = "http://pg:9091"\n'
    )
    settings = load_settings(str(conf))
    assert (settings.metrics.granularity, settings.metrics.watch_expiring_within_minutes) == ("topic", 4320)
    assert (settings.metrics.max_samples, settings.metrics.exclude_groups) == (20000, ("console-consumer-.*",))
    assert (settings.metrics.push_gateway, settings.metrics.push_job) == ("http://pg:9091", "kafka_offset_audit")
    assert load_settings().metrics.watch_expiring_within_minutes == 1440


def test_a_cluster_given_empty_is_refused_and_an_empty_one_in_the_config_means_none(tmp_path):
    """The API takes `cluster=""` as the CLI does: a name given that names nothing. The config's default,
    `cluster = ""`, leaves the cluster to the input."""
    with pytest.raises(UserError, match="--cluster takes a cluster name"):
        load_settings(cluster="")
    conf = tmp_path / "mine.toml"
    conf.write_text('[input]\ncluster = ""\n')
    assert load_settings(str(conf)).input.cluster == ""
