"""--end-offsets kafka: the log start and end offsets of every partition, asked of the live cluster.

Which partitions the dump holds offsets for is known only after decoding it, in Spark; the question goes
to the cluster before Spark starts, so that an unreachable cluster costs seconds, not a decoded dump.
So every partition of every topic the cluster's metadata lists is asked for, in two ListOffsets
requests (earliest and latest: what `kafka-get-offsets.sh --time -2` and `--time -1` print), within
FETCH_TIMEOUT_S in all. A partition the cluster cannot answer for (no leader) is left out, as
kafka-get-offsets.sh skips it: its lag is null.

The client is confluent-kafka (librdkafka), an optional extra: `pip install 'kafka-offset-audit[kafka]'`.
"""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass

import pyarrow as pa

from offset_audit.errors import UserError
from offset_audit.inputs.end_offsets import COLUMNS, SCHEMA

FETCH_TIMEOUT_S = 10.0
# ask_cluster_id's bound: a cluster that answers does within a second; one that cannot be reached from
# here costs this much before the run goes on without it.
CLUSTER_ID_TIMEOUT_S = 5.0
INSTALL = "pip install 'kafka-offset-audit[kafka]'"
# The word that asks the cluster instead of naming a file: `--end-offsets kafka` (a file named kafka is
# `./kafka`), as `--input-format kafka` reads the live topic.
FROM_CLUSTER = "kafka"

# Settings librdkafka reads under the name and with the meaning Java's clients give them. Spark's Kafka
# source takes Java client settings as `--kafka-option kafka.NAME=VALUE`; these go to the fetch too,
# without the prefix. The rest (ssl.truststore.*, ...) librdkafka names differently or lacks: give its
# own name bare (`--kafka-option ssl.ca.location=ca.pem`), which Spark's Kafka source ignores.
SHARED_WITH_JAVA = (
    "security.protocol",
    "sasl.mechanism",
    "sasl.kerberos.service.name",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
    "ssl.cipher.suites",
    "client.id",
)
# A librdkafka setting given bare: lower-case words joined by dots (sasl.username, ssl.ca.location).
# Spark's own source options are camelCase (startingOffsets, kafkaConsumer.pollTimeoutMs).
LIBRDKAFKA_NAME = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)+")
# Java's PLAIN and SCRAM logins carry the user and password in sasl.jaas.config; librdkafka has
# sasl.username and sasl.password for them.
JAAS_LOGIN = re.compile(r"\b(?:plain\.PlainLoginModule|scram\.ScramLoginModule)\b")
JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
# librdkafka's settings, typed as confluent-kafka's clients take them (they take numbers and flags too; ours
# are all text).
ClientConfig = dict[str, str | int | float | bool]


def client_config(bootstrap: str, kafka_options: dict[str, str]) -> ClientConfig:
    """The librdkafka settings of the fetch, from --bootstrap-server and the --kafka-option entries."""
    config: ClientConfig = {"bootstrap.servers": bootstrap, "client.id": "offset-audit", "log_level": "0"}
    for name, value in kafka_options.items():
        if not name.startswith("kafka."):
            continue
        java_name = name[len("kafka.") :]
        if java_name in SHARED_WITH_JAVA:
            # Java turns host name checking off with an empty value; librdkafka with "none".
            empty_is_none = java_name == "ssl.endpoint.identification.algorithm" and not value
            config[java_name] = "none" if empty_is_none else value
        elif java_name == "sasl.jaas.config" and JAAS_LOGIN.search(value):
            login = {k: v.replace('\\"', '"') for k, v in JAAS_OPTION.findall(value)}
            if "username" in login and "password" in login:
                config["sasl.username"], config["sasl.password"] = login["username"], login["password"]
    for name, value in kafka_options.items():
        if LIBRDKAFKA_NAME.fullmatch(name) and not name.startswith("kafka."):
            config[name] = value
    config["bootstrap.servers"] = bootstrap
    return config


@dataclass(frozen=True)
class PartitionAnswer:
    """What the cluster said about one partition: its offsets, or why it gave none."""

    topic: str
    partition: int
    log_start_offset: int | None
    log_end_offset: int | None
    error: str | None = None


def ask_cluster(config: ClientConfig, timeout_s: float) -> list[PartitionAnswer]:
    """The client call: the metadata's partitions, then their earliest and latest offsets.

    Raises UserError when the library is missing, refuses a setting, or the cluster does not answer
    within `timeout_s` seconds in all.
    """
    try:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient, OffsetSpec
    except ImportError as err:
        raise UserError(f"--end-offsets kafka needs the Kafka client library: {INSTALL}") from err
    from concurrent.futures import TimeoutError as FutureTimeout

    bootstrap = config["bootstrap.servers"]
    deadline = time.monotonic() + timeout_s

    def left() -> float:
        return max(0.01, deadline - time.monotonic())

    def unreachable(reason: object) -> UserError:
        return UserError(f"cannot reach the Kafka cluster at {bootstrap} within {timeout_s:g} s: {_reason(reason)}")

    try:
        admin = AdminClient(config)
    except (KafkaException, ValueError, TypeError) as err:
        raise UserError(
            f"the Kafka client refused its settings: {_reason(err)} (the fetch passes --kafka-option "
            "kafka.NAME entries it shares with Java's clients, and bare librdkafka names, to librdkafka)"
        ) from err
    try:
        metadata = admin.list_topics(timeout=left())
    except KafkaException as err:
        raise unreachable(err) from err
    wanted = [
        (name, number)
        for name, topic in sorted(metadata.topics.items())
        if topic.error is None
        for number in sorted(topic.partitions)
    ]
    if not wanted:
        return []
    answers: dict[tuple[str, int], dict] = {key: {} for key in wanted}
    from confluent_kafka import TopicPartition

    for column, spec in (("log_start_offset", OffsetSpec.earliest()), ("log_end_offset", OffsetSpec.latest())):
        try:
            futures = admin.list_offsets({TopicPartition(t, p): spec for t, p in wanted}, request_timeout=left())
        except KafkaException as err:
            raise unreachable(err) from err
        for asked, future in futures.items():
            key = (asked.topic, asked.partition)
            try:
                answers[key][column] = future.result(timeout=left()).offset
            except FutureTimeout as err:
                raise unreachable("no answer to ListOffsets") from err
            except KafkaException as err:
                answers[key]["error"] = _reason(err)
    return [
        PartitionAnswer(t, p, a.get("log_start_offset"), a.get("log_end_offset"), a.get("error"))
        for (t, p), a in answers.items()
    ]


def ask_cluster_id(
    bootstrap: str, kafka_options: dict[str, str], timeout_s: float = CLUSTER_ID_TIMEOUT_S
) -> str | None:
    """The live cluster's id (its metadata's, as DescribeCluster gives it), asked before Spark starts so
    that a run of another cluster's topic is refused then; None when it cannot be asked here: the
    library is not installed, or the cluster does not answer it within `timeout_s` (a security setting
    only Java's client takes). The run then asks through Spark's Kafka source, as it reads. Asked once
    per process: the checks before Spark starts each want it, and a cluster that cannot answer here
    would cost `timeout_s` each time."""
    return _cluster_id(bootstrap, tuple(sorted(kafka_options.items())), timeout_s)


@functools.cache
def _cluster_id(bootstrap: str, kafka_options: tuple[tuple[str, str], ...], timeout_s: float) -> str | None:
    try:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient
    except ImportError:
        return None
    try:
        config = client_config(bootstrap, dict(kafka_options))
        return AdminClient(config).list_topics(timeout=timeout_s).cluster_id or None
    except (KafkaException, ValueError, TypeError):
        return None


def offsets_table(answers: list[PartitionAnswer], bootstrap: str) -> pa.Table:
    """The end-offsets table from the cluster's answers; a partition it gave no offsets for is left out.
    When it answered for none, one sentence with its first reason (usually missing authorization)."""
    known = [a for a in answers if a.error is None and a.log_end_offset is not None]
    if answers and not known:
        first = next((a for a in answers if a.error), answers[0])
        raise UserError(
            f"the Kafka cluster at {bootstrap} gave no offsets for any of its {len(answers)} partitions, e.g. "
            f"{first.topic}:{first.partition}: {first.error or 'no offset'}"
        )
    known.sort(key=lambda a: (a.topic, a.partition))
    return pa.table({name: [getattr(a, name) for a in known] for name in COLUMNS}, schema=SCHEMA)


def fetch_end_offsets(bootstrap: str, kafka_options: dict[str, str], timeout_s: float | None = None) -> pa.Table:
    """Every partition's log start and end offset, asked of the cluster at `bootstrap`."""
    timeout = FETCH_TIMEOUT_S if timeout_s is None else timeout_s
    return offsets_table(ask_cluster(client_config(bootstrap, kafka_options), timeout), bootstrap)


def _reason(err: object) -> str:
    """librdkafka's own words, on one line: `KafkaError{code=_TRANSPORT,val=-195,str="..."}` -> the str."""
    if hasattr(err, "args") and err.args and hasattr(err.args[0], "str"):
        text = err.args[0].str()
    else:
        text = str(err)
    return " ".join(text.split()) or type(err).__name__
