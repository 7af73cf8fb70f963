"""What a run is told, as every stage reads it: the input, the decoder's switches, the broker's settings
the rules are judged with, Spark's and the object store's options.

Each setting is defined once, here, as a field (`setting_definitions.define`): its type, default, allowed
values, TOML name, flag and help. runtime/config.py fills these from `--conf FILE` and the flags, the flags
are made from them (cli/options.py), and conf/default.toml and docs/settings.md are written from them.
The stages only read them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from offset_audit import constants as K
from offset_audit.broker_versions import NEWEST_VERSION, parse_version
from offset_audit.errors import UserError
from offset_audit.setting_definitions import (
    ANY_NAMES,
    DURATION,
    FLAG,
    MIB,
    MINUTES,
    OPTIONS,
    TEXT,
    TEXTS,
    WHOLE,
    Kind,
    Setting,
    declared_in,
    define,
)

# Who writes the Delta tables: auto (delta-spark where the session has Delta configured, else delta-rs),
# or one of the two, chosen (offset_audit.outputs.delta).
WRITERS = ("auto", "delta-rs", "delta-spark")
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")
# metrics' series: per group, per group and topic, or per committed offset (views.metric_scope).
GRANULARITIES = ("group", "topic", "partition")
# The snapshot and run gauges take up to five samples, the count of what was left out one, and a group
# up to ten: less could not hold one.
MIN_SAMPLES = 16
# offsets.retention.minutes is a Java int; offsets.retention.check.interval.ms a long (reference 4.1).
MAX_INT = 2**31 - 1
MAX_RETENTION_MINUTES = MAX_INT
MAX_LONG = 2**63 - 1


# A cluster's name (--cluster) and a cluster id read from a broker (Kafka's are 22 characters of URL-safe
# base64, so they may start with '-' or '_') take one form, so either is inert as a metric label, a file
# name (never '.' or '..', never hidden), a SQL literal and a shell word (the value of --cluster, which
# takes the next word whatever it starts with).
CLUSTER_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")


def check_cluster_name(name: str, option: str) -> str:
    """`name` when it has the one form cluster names take, else a UserError naming `option`."""
    if not isinstance(name, str) or not CLUSTER_NAME.fullmatch(name):
        raise UserError(
            f"{option} takes a cluster name of letters, digits, '.', '_' and '-' (at most 64, not starting with "
            f"'.'), not {name!r}"
        )
    return name


def _cluster_name(name: str, option: str) -> None:
    """[input] cluster: "" in the config leaves the cluster to the input; given as a flag, it names one."""
    if name or option.startswith("--"):
        check_cluster_name(name, option)


def _kafka_version(text: str, option: str) -> None:
    parse_version(text)


@dataclass(frozen=True)
class InputSettings:
    """[input]: what the dump is."""

    # Checked against offset_audit.inputs.formats, the formats' own list, where the config is read.
    format: str = define(
        TEXT,
        "how the dump is kept: auto (worked out from the inputs; kafka, a live cluster, is never guessed) or one "
        "of the formats docs/inputs.md describes (`offset-audit audit --help` lists them under --input-format).",
        "auto",
        dest="input_format",
        flag="--input-format",
    )
    partition: int | None = define(
        WHOLE,
        "the __consumer_offsets partition of inputs that do not tell it (flat segment files, console text).",
        low=0,
        high=MAX_INT,
        flag="--partition",
    )
    topic: str = define(
        TEXT,
        "the topic of the dump; records of other topics in a snapshot are counted as skipped, never decoded.",
        K.OFFSETS_TOPIC,
        flag="--topic",
    )
    cluster: str = define(
        TEXT,
        "the cluster's name in the output folder's tables and metrics: letters, digits, '.', '_' and '-'. "
        "\"\" names it by its id (the broker folders' meta.properties, or the Kafka source's Admin API); a name "
        "given once names that id in the folder from then on (docs/fleet.md).",
        "",
        check=_cluster_name,
        flag="--cluster",
        metavar="NAME",
    )


@dataclass(frozen=True)
class KafkaSettings:
    """[kafka]: the live cluster read through Spark's Kafka source, and the broker version that judges."""

    bootstrap_servers: str = define(
        TEXT,
        "the Kafka cluster, as Kafka's tools name it: read with --input-format kafka, asked with --end-offsets "
        'kafka; share writes it into its delete commands as given (else "$BOOTSTRAP_SERVER").',
        "",
        flag="--bootstrap-server",
        metavar="HOST:PORT[,HOST:PORT]",
    )
    isolation_level: str = define(
        TEXT,
        "how Spark's Kafka source reads (input format kafka): read_committed keeps aborted transactional offset "
        "commits out.",
        "read_committed",
        choices=ISOLATION_LEVELS,
    )
    options: dict[str, str] = define(
        OPTIONS,
        "for Spark's Kafka source: its options, and Kafka client settings as kafka.NAME "
        "(kafka.security.protocol=SASL_SSL). --end-offsets kafka (librdkafka) takes kafka.security.protocol, "
        "kafka.sasl.mechanism, kafka.sasl.jaas.config (PLAIN, SCRAM), kafka.ssl.keystore.*, kafka.ssl.key.password, "
        "kafka.ssl.endpoint.identification.algorithm, kafka.client.id, and librdkafka's own names bare "
        "(sasl.username, ssl.ca.location, ...), which Spark ignores.",
        {},
        dest="kafka_options",
        flag="--kafka-option",
        metavar="NAME=VALUE",
    )
    version: str = define(
        TEXT,
        "the broker version whose expiry rules judge the dump, 2.0 to 4.4 (X.Y is the line's newest release). "
        "Before 2.1 every offset expires from its commit; 2.1-2.3 keep the offsets of groups with members; "
        '2.1.0-2.1.1 and 2.4.0-3.1.0 verdicts name their known expiry bugs (docs/rules.md, "By version").',
        NEWEST_VERSION.given,
        dest="kafka_version",
        check=_kafka_version,
        flag="--kafka-version",
        metavar="X.Y[.Z]",
    )


@dataclass(frozen=True)
class DecodeSettings:
    """[decode]: the decoder's switches."""

    fast_path: bool = define(
        FLAG,
        "the vectorised reader for offset commits and the compiled walker for log segments; false forces the "
        "generic layout-driven reader for all records and the Python segment reader (slower, the same tables; "
        "useful to cross-check).",
        True,
        flag="--no-fast-path",
    )
    max_batch_bytes: int = define(
        MIB,
        "the most one batch of a log segment may take, as stored or inflated. The broker's default "
        "message.max.bytes is 1 MiB; a batch past this bound (a damaged length, a decompression bomb) is "
        "quarantined without being read or inflated, so memory stays bounded whatever a batch claims.",
        64 << 20,
        key="max_batch_mib",
        low=1,
        high=4096,
        unit="MiB",
    )


@dataclass(frozen=True)
class AuditSettings:
    """[audit]: the broker's retention settings the rules judge with, and the moment they judge at."""

    retention_minutes: int = define(
        MINUTES,
        "the broker's offsets.retention.minutes (7 days since Kafka 2.0): minutes or a duration like 7d.",
        K.OFFSETS_RETENTION_MINUTES_DEFAULT,
        low=1,
        high=MAX_RETENTION_MINUTES,
        unit="minutes",
        why="the broker's offsets.retention.minutes is a Java int",
        flag="--retention-minutes",
        metavar="DURATION",
    )
    check_interval_ms: int = define(
        WHOLE,
        "the broker's offsets.retention.check.interval.ms: how often the expiry sweep runs.",
        K.OFFSETS_RETENTION_CHECK_INTERVAL_MS_DEFAULT,
        low=1,
        high=MAX_LONG,
        unit="milliseconds",
    )
    as_of: str = define(
        TEXT,
        'when to judge: "latest" (the newest record timestamp in the dump), "now", or an ISO timestamp.',
        "latest",
        flag="--as-of",
        metavar="WHEN",
    )
    delete_retention_ms: int = define(
        WHOLE,
        "the topic's delete.retention.ms: how long the log cleaner keeps a tombstone. An `audit --incremental` "
        "more than this after the run before may have missed tombstones the cleaner has removed since, and "
        "reads everything again (docs/incremental.md).",
        K.DELETE_RETENTION_MS_DEFAULT,
        low=1,
        high=MAX_LONG,
        unit="milliseconds",
    )
    keep_log: bool = define(
        FLAG,
        "whether `audit --incremental` appends every record it reads to DIR/state/log, so that "
        "`history --audit DIR` can still explain a deletion once the cleaner has removed its tombstone. The log "
        "grows by the records each run reads: its first run copies the whole topic there.",
        True,
    )


KEEP = Kind(
    "count or duration",
    'a count of snapshots, a duration like "30d", or "" to keep every one',
    MINUTES.accepts,
    lambda v, where: None if v == "" else KeepSnapshots.parse(v, where),
    lambda v: "" if v is None else v.toml(),
)


@dataclass(frozen=True)
class KeepSnapshots:
    """--keep-snapshots: the newest `count` snapshots of each kind, or those judged within `minutes` of the
    newest one (offset_audit.runs.upkeep)."""

    count: int | None = None
    minutes: int | None = None

    @classmethod
    def parse(cls, text: str | int, option: str) -> KeepSnapshots:
        """A bare number is a count of snapshots (48), a number with a unit a duration (30d: those
        judged within 30 days of the newest). 0 would keep nothing, not even the snapshot just written,
        and is refused."""
        from offset_audit.durations import parse_minutes

        wrong = f"{option} takes a count of snapshots (1 or more, like 48) or a duration like 30d or 2w, not '{text}'"
        if isinstance(text, int) or str(text).strip().isdigit():
            if int(text) < 1:
                raise UserError(wrong)
            return cls(count=int(text))
        try:
            minutes = parse_minutes(text, option)
        except UserError as err:
            raise UserError(wrong) from err
        if minutes < 1:
            raise UserError(wrong)
        return cls(minutes=minutes)

    def toml(self) -> int | str:
        """As the config writes it: 48, or "30d"."""
        from offset_audit.durations import format_minutes

        return self.count if self.count is not None else format_minutes(self.minutes or 0)

    def __str__(self) -> str:
        from offset_audit.durations import format_minutes

        if self.count is not None:
            return f"the newest {self.count} snapshot{'' if self.count == 1 else 's'}"
        return f"the snapshots judged within {format_minutes(self.minutes or 0)} of the newest"


@dataclass(frozen=True)
class OutputSettings:
    """[output]: who writes the Delta tables, how many snapshots they keep, and how long a file they no
    longer list stays for readers of older versions."""

    writer: str = define(
        TEXT,
        "who writes the Delta tables: auto (delta-spark where the Spark session has Delta configured, else the "
        "embedded delta-rs), delta-rs, or delta-spark (refused before Spark starts when the session has no Delta).",
        "auto",
        choices=WRITERS,
        flag="--writer",
    )
    keep_snapshots: KeepSnapshots | None = define(
        KEEP,
        "after each run that writes a snapshot, keep only the newest N snapshots of each command (48), or those "
        'judged within a duration of the newest ("30d"), and tidy the folder\'s tables (docs/upkeep.md); "" keeps '
        "every one. The state under DIR/state (its log included) is never removed by it.",
        flag="--keep-snapshots",
        metavar="N|DURATION",
    )
    deleted_file_retention_minutes: int = define(
        DURATION,
        "how long a file the tables no longer list stays for readers of older versions before it is vacuumed: "
        "Delta's delta.deletedFileRetentionDuration, one week by default as Delta's is. Readers that run longer "
        "than this (or time travel further back) can find files gone.",
        7 * 1440,
        key="deleted_file_retention",
        low=0,
        unit="minutes",
        flag="--deleted-file-retention",
        metavar="DURATION",
    )


@dataclass(frozen=True)
class MetricsSettings:
    """[metrics]: which series `metrics` writes (offset_audit.views.metric_scope) and where it pushes them."""

    granularity: str = define(
        TEXT,
        "series per group (group), also per group and topic (topic), or per committed offset (partition). "
        "Offsets expiring within watch_expiring_within (or already expired) and offsets deletable now get their "
        "partition series at every granularity.",
        "group",
        dest="metrics_granularity",
        choices=GRANULARITIES,
        flag="--granularity",
    )
    watch_expiring_within_minutes: int = define(
        DURATION,
        "offsets expiring within this (expired ones too) and deletable ones get partition series at every granularity.",
        24 * 60,
        key="watch_expiring_within",
        dest="metrics_watch_expiring_within_minutes",
        low=0,
        unit="minutes",
        flag="--watch-expiring-within",
        metavar="DURATION",
    )
    max_samples: int = define(
        WHOLE,
        "write at most this many samples, the most important first; what is left out is said on stderr "
        "(docs/dashboards.md).",
        200_000,
        dest="metrics_max_samples",
        low=MIN_SAMPLES,
        flag="--max-samples",
    )
    groups: tuple[str, ...] = define(
        TEXTS,
        "only groups matching one of these anchored regular expressions (when any is given).",
        (),
        dest="metrics_groups",
        flag="--group",
        metavar="REGEX",
    )
    exclude_groups: tuple[str, ...] = define(
        TEXTS,
        "leave out groups matching one of these anchored regular expressions.",
        (),
        dest="metrics_exclude_groups",
        flag="--exclude-group",
        metavar="REGEX",
    )
    topics: tuple[str, ...] = define(
        TEXTS,
        "topic and partition series only of topics matching one of these anchored regular expressions.",
        (),
        dest="metrics_topics",
        flag="--topic",
        metavar="REGEX",
    )
    push_gateway: str = define(
        TEXT,
        "a Pushgateway (http://host:9091) to push the series to, besides or instead of a file.",
        "",
        dest="metrics_push_gateway",
        flag="--push-gateway",
        metavar="URL",
    )
    push_job: str = define(
        TEXT,
        "the job label to push under.",
        "kafka_offset_audit",
        dest="metrics_push_job",
        flag="--push-job",
        metavar="NAME",
    )


@dataclass(frozen=True)
class Settings:
    """One part per section of the config, so a stage reads only its own concern."""

    input: InputSettings = field(default_factory=InputSettings)
    kafka: KafkaSettings = field(default_factory=KafkaSettings)
    decode: DecodeSettings = field(default_factory=DecodeSettings)
    audit: AuditSettings = field(default_factory=AuditSettings)
    output: OutputSettings = field(default_factory=OutputSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    spark: dict[str, str] = define(
        ANY_NAMES,
        "Spark's own settings, used only when the job builds its own local session (the CLI, `make demo`, "
        "tests); under spark-submit the cluster's settings win.",
        {"spark.master": "local[*]", "spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "4"},
    )
    storage: dict[str, str] = define(
        ANY_NAMES,
        "options for s3:// (and s3a://) inputs and outputs, by delta-rs's names (AWS_ENDPOINT_URL, AWS_REGION, "
        "...). They overlay the driver's AWS_* environment variables. Credentials are better left to the "
        "environment (or an instance role) than written here.",
        {},
        flag="--storage-option",
        metavar="KEY=VALUE",
    )

    def replaced(self, section: str, **changes: Any) -> Settings:
        """These settings with some values of one section changed (`settings.replaced("input", topic=...)`)."""
        return replace(self, **{section: replace(getattr(self, section), **changes)})


# Every setting, in the order the config and the docs list them.
SETTINGS: tuple[Setting, ...] = declared_in(Settings)
BY_DEST: dict[str, Setting] = {s.dest: s for s in SETTINGS}
