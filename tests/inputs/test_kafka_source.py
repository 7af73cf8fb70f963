"""Spark's Kafka source against a live broker: `--input-format kafka --bootstrap-server` reads
__consumer_offsets from earliest to latest and must decode the same rows as the broker's own segment
files, copied at the same moment. It runs in the session with the jars `make spark-jars` fetched
(tests/spark_jars.py), whose tables it writes through the embedded delta-rs writer (--writer delta-rs),
against the newest Kafka version `make kafka` fetched, with a --kafka-option passed through."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from deltalake import DeltaTable
from kafka_broker import commit_offsets, group_consumer, kafka_broker, kafka_versions, version_tuple
from live_services import live

from offset_audit.cli.main import main
from offset_audit.inputs.kafka_end_offsets import ask_cluster_id
from offset_audit.jvm import has_class

pytestmark = pytest.mark.slow

KAFKA_SOURCE = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
# No expiry sweep may write between the copy of the segments and the read through the source.
SETTINGS = {"offsets.retention.minutes": "10080"}


def decoded(*args: str) -> tuple[dict, dict[str, list]]:
    """The command's JSON document and the decoded tables' rows."""
    output = args[args.index("--output") + 1]
    result = CliRunner().invoke(main, ["decode", *args, "--writer", "delta-rs", "--json"])
    assert result.exit_code == 0, result.output
    tables = {}
    for name in ("offset_commits", "group_metadata", "group_members"):
        rows = DeltaTable(f"{output}/{name}").to_pyarrow_table().to_pylist()
        tables[name] = sorted(repr({k: v for k, v in r.items() if k != "run_id"}) for r in rows)
    return json.loads(result.stdout), tables


@pytest.mark.delta_spark
def test_the_kafka_source_decodes_what_the_brokers_segments_hold(spark, tmp_path):
    assert has_class(spark, KAFKA_SOURCE), "the session with the Spark jars has no Kafka source"
    version = max(kafka_versions(), key=version_tuple)
    with live(kafka_broker(tmp_path / "broker", version, SETTINGS)) as broker:
        from confluent_kafka.admin import NewTopic

        admin = broker.admin()
        for future in admin.create_topics([NewTopic("orders", 3, 1)]).values():
            future.result(60)
        for group in ("billing", "shipping", "audit-é"):
            consumer = group_consumer(broker, group)
            try:
                for offset in range(1, 6):
                    commit_offsets(consumer, *[("orders", p, offset * 10 + p) for p in range(3)], metadata=group)
            finally:
                consumer.close()
        segments = broker.copy_offsets_log(tmp_path / "segments")  # the partitions' folders only
        formatted = (broker.log_dir / "meta.properties").read_text()
        # What the checks before Spark starts ask through the Python client: the same id.
        asked = ask_cluster_id(broker.bootstrap, {"kafka.security.protocol": "PLAINTEXT"})
        through_source = decoded("--input-format", "kafka", "--bootstrap-server", broker.bootstrap,
                                 "--kafka-option", "kafka.security.protocol=PLAINTEXT",
                                 "--output", str(tmp_path / "from-kafka"))  # fmt: skip
    from_segments = decoded("--input", str(segments), "--output", str(tmp_path / "from-segments"))
    document, tables = through_source
    counts = document["counts"]
    assert counts["records_read"] == from_segments[0]["counts"]["records_read"] == 3 * 5 * 3
    assert counts["decoded"] == from_segments[0]["counts"]["decoded"]
    assert tables == from_segments[1]
    # The run names the cluster the broker's Admin API gives, the id its storage was formatted with; the
    # copied partition folders carry no meta.properties, so that run names none.
    assert f"cluster.id={document['cluster']}" in formatted.splitlines() and asked == document["cluster"]
    assert from_segments[0]["cluster"] is None
