"""A live cluster, read in batch through Spark's Kafka source (earliest to latest).

Spark's Admin-based offset reader (the default since Spark 3.x) assigns no partition of an internal topic:
a batch read of __consumer_offsets returns no row at all (Spark 4.2: "Assigned: Set()"). And a
subscription would join a consumer group of Spark's own, writing that group's records into the very
topic being read. So the topic's partitions are looked up through the Admin API, assigned explicitly,
and their offsets fetched the consumer-based way (spark.sql.streaming.kafka.useDeprecatedOffsetFetching),
which joins no group and writes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from offset_audit.errors import ConnectorMissing, UserError
from offset_audit.jvm import has_class
from offset_audit.session_kind import connect_route
from offset_audit.settings import Settings

_OFFSET_FETCHING = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"


def kafka_package(spark: SparkSession) -> str:
    version = spark.version
    return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{version}"


def _missing(spark: SparkSession) -> ConnectorMissing:
    return ConnectorMissing(
        "Spark's Kafka connector is not on the classpath; run with "
        f"--packages {kafka_package(spark)} (spark-submit or PYSPARK_SUBMIT_ARGS), or --jars from "
        "make spark-jars, or read a Parquet snapshot instead"
    )


def topic_partitions(spark: SparkSession, settings: Settings) -> list[int]:
    """The partitions of the topic, asked of the cluster with the kafka-clients Admin the connector
    brings (so the same --kafka-option security settings apply)."""
    return topic_facts(spark, settings).partitions


@dataclass(frozen=True)
class TopicFacts:
    """What an incremental audit checks its positions against: the topic's partitions, each one's log
    start offset (the earliest offset ListOffsets gives), and the cluster's id."""

    partitions: list[int]
    log_starts: dict[int, int]
    cluster_id: str | None
    topic_id: str | None


def _client_topic_facts(spark: SparkSession, settings: Settings, log_starts: bool = False) -> TopicFacts:
    """`topic_facts` where no JVM is at hand (a Spark Connect session): asked with the Python client,
    confluent-kafka, under the same --kafka-option settings as --end-offsets kafka takes them."""
    admin, timeout = _client_admin(settings)
    from confluent_kafka import TopicCollection, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    topic = settings.input.topic
    try:
        described = admin.describe_topics(TopicCollection([topic]), request_timeout=timeout)[topic].result(timeout)
        partitions = sorted(p.id for p in described.partitions)
        if not log_starts:
            return TopicFacts(partitions, {}, None, None)
        asked = {TopicPartition(topic, p): OffsetSpec.earliest() for p in partitions}
        answers = admin.list_offsets(asked, request_timeout=timeout)
        starts = {tp.partition: future.result(timeout).offset for tp, future in answers.items()}
        cluster = admin.describe_cluster(request_timeout=timeout).result(timeout).cluster_id
        topic_id = str(described.topic_id) if described.topic_id is not None else None
        return TopicFacts(partitions, starts, cluster, topic_id)
    except Exception as err:
        raise UserError(
            f"cannot list the partitions of {topic} on {settings.kafka.bootstrap_servers}: {_first_line(err)}"
        ) from err


def _client_cluster_id(spark: SparkSession, settings: Settings) -> str | None:
    """`cluster_id` with the Python client (a Spark Connect session has no JVM here)."""
    admin, timeout = _client_admin(settings)
    try:
        return admin.describe_cluster(request_timeout=timeout).result(timeout).cluster_id or None
    except Exception as err:
        raise UserError(
            f"cannot ask {settings.kafka.bootstrap_servers} for its cluster id: {_first_line(err)}"
        ) from err


def _client_admin(settings: Settings):
    """confluent-kafka's AdminClient with the run's settings, and the seconds each answer may take."""
    from offset_audit.inputs.kafka_end_offsets import INSTALL, client_config

    try:
        from confluent_kafka.admin import AdminClient
    except ImportError as err:
        raise UserError(f"reading a live topic on a Spark Connect session needs the Kafka client: {INSTALL}") from err
    try:
        return AdminClient(client_config(settings.kafka.bootstrap_servers, settings.kafka.options)), 30.0
    except Exception as err:
        raise UserError(
            f"cannot set up a Kafka client for {settings.kafka.bootstrap_servers}: {_first_line(err)}"
        ) from err


def _first_line(err: BaseException) -> str:
    return str(err).splitlines()[0] if str(err) else type(err).__name__


@connect_route(_client_topic_facts)
def topic_facts(spark: SparkSession, settings: Settings, log_starts: bool = False) -> TopicFacts:
    """The topic's partitions (and, with `log_starts`, their log start offsets and the cluster and topic
    ids), asked of the cluster through the connector's Admin client."""
    jvm = spark._jvm
    assert jvm is not None  # a classic session's (connect_route): SparkSession.__init__ asserts it
    admin = _admin(spark, jvm, settings)
    topics = jvm.java.util.ArrayList()
    topics.add(settings.input.topic)
    try:
        described = admin.describeTopics(topics).allTopicNames().get().get(settings.input.topic)
        partitions = sorted(p.partition() for p in described.partitions())
        if not log_starts:
            return TopicFacts(partitions, {}, None, None)
        wanted = jvm.java.util.HashMap()
        for partition in partitions:
            wanted.put(
                jvm.org.apache.kafka.common.TopicPartition(settings.input.topic, partition),
                jvm.org.apache.kafka.clients.admin.OffsetSpec.earliest(),
            )
        answers = admin.listOffsets(wanted).all().get()
        starts = {entry.getKey().partition(): entry.getValue().offset() for entry in answers.entrySet()}
        cluster = admin.describeCluster().clusterId().get()
        topic_id = described.topicId().toString() if described.topicId() is not None else None
        return TopicFacts(partitions, starts, cluster, topic_id)
    except Exception as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise UserError(
            f"cannot list the partitions of {settings.input.topic} on {settings.kafka.bootstrap_servers}: {first}"
        ) from err
    finally:
        admin.close()


@connect_route(_client_cluster_id)
def cluster_id(spark: SparkSession, settings: Settings) -> str | None:
    """The cluster's id, as its Admin API gives it (DescribeCluster): what names the cluster of a run
    that reads the live topic (runs.clusters)."""
    admin = _admin(spark, spark._jvm, settings)
    try:
        return admin.describeCluster().clusterId().get() or None
    except Exception as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise UserError(f"cannot ask {settings.kafka.bootstrap_servers} for its cluster id: {first}") from err
    finally:
        admin.close()


def _admin(spark: SparkSession, jvm, settings: Settings):
    """A kafka-clients Admin of the connector's, with the run's --kafka-option kafka.* settings."""
    # Without kafka-clients, py4j names a package rather than failing: ask the class loader first.
    if not has_class(spark, "org.apache.kafka.clients.admin.Admin"):
        raise _missing(spark)
    props = jvm.java.util.HashMap()
    props.put("bootstrap.servers", settings.kafka.bootstrap_servers)
    props.put("default.api.timeout.ms", "30000")
    props.put("request.timeout.ms", "15000")
    for name, value in settings.kafka.options.items():
        if name.startswith("kafka."):
            props.put(name.removeprefix("kafka."), value)
    try:
        return jvm.org.apache.kafka.clients.admin.Admin.create(props)
    except Exception as err:
        raise UserError(
            f"cannot set up a Kafka client for {settings.kafka.bootstrap_servers}: {str(err).splitlines()[0]}"
        ) from err


def read_kafka(spark: SparkSession, settings: Settings, starting: dict[int, int] | None = None) -> DataFrame:
    """The topic from its start, or with `starting` (an incremental audit's positions) from each
    partition's position (a partition without one from its start), to its latest offsets."""
    if not settings.kafka.bootstrap_servers:
        raise UserError("--input-format kafka needs --bootstrap-server HOST:PORT[,HOST:PORT]")
    if not has_class(spark, "org.apache.spark.sql.kafka010.KafkaSourceProvider"):
        raise _missing(spark)
    partitions = topic_partitions(spark, settings)
    options = {
        "kafka.bootstrap.servers": settings.kafka.bootstrap_servers,
        "assign": json.dumps({settings.input.topic: partitions}),
        "startingOffsets": "earliest"
        if not starting
        else json.dumps({settings.input.topic: {str(p): starting.get(p, -2) for p in partitions}}),
        "endingOffsets": "latest",
        # Aborted transactional offset commits never reach us (reference 1.1, "Transactions").
        "kafka.isolation.level": settings.kafka.isolation_level,
        "failOnDataLoss": "false",
        **settings.kafka.options,
    }
    reader = spark.read.format("kafka")
    for name, value in options.items():
        reader = reader.option(name, value)
    spark.conf.set(_OFFSET_FETCHING, "true")
    try:
        return reader.load()
    except AnalysisException as err:
        if "kafka" in str(err).lower() and (
            "find data source" in str(err).lower() or "DATA_SOURCE_NOT_FOUND" in str(err)
        ):
            raise _missing(spark) from err
        raise
