"""What a run is told, as every stage reads it: the input, the decoder's switches, the broker's settings
the rules are judged with, Spark's and the object store's options.

runs/config.py fills it from conf/default.toml, `--conf FILE` and the command-line flags; the stages only
read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from offset_audit import constants as K

# auto: worked out from the inputs (offset_audit.inputs.dump.detect_format); kafka is never guessed.
# kip932-json (the KIP-932 draft's share-state control records) is read by the share command only.
INPUT_FORMATS = ("auto", "parquet", "delta", "kafka", "segments", "dump-log", "console", "kip932-json")
# Who writes the Delta tables: auto (delta-spark where the session has Delta configured, else delta-rs),
# or one of the two, chosen (offset_audit.outputs.delta).
WRITERS = ("auto", "delta-rs", "delta-spark")


@dataclass(frozen=True)
class Settings:
    input_format: str = "auto"
    # The __consumer_offsets partition of inputs that cannot tell it (flat segment files, console text).
    partition: int | None = None
    topic: str = K.OFFSETS_TOPIC
    bootstrap_servers: str = ""
    isolation_level: str = "read_committed"
    kafka_options: dict[str, str] = field(default_factory=dict)
    fast_path: bool = True
    # decode.max_batch_mib in bytes: the most one log-segment batch may take, stored or inflated.
    max_batch_bytes: int = 64 << 20
    spark: dict[str, str] = field(default_factory=dict)
    # [storage] of the config and --storage-option: object-store options, as delta-rs names them.
    storage: dict[str, str] = field(default_factory=dict)
    retention_minutes: int = K.OFFSETS_RETENTION_MINUTES_DEFAULT
    check_interval_ms: int = K.OFFSETS_RETENTION_CHECK_INTERVAL_MS_DEFAULT
    as_of: str = "latest"
    writer: str = "auto"
    # The broker version whose expiry rules judge the dump (offset_audit.coordinator.versions).
    kafka_version: str = "4.4"
    # `metrics`: which series it writes (offset_audit.views.metric_scope) and where it pushes them.
    metrics_granularity: str = "group"
    metrics_watch_expiring_within_minutes: int = 24 * 60
    metrics_max_samples: int = 200_000
    metrics_groups: tuple[str, ...] = ()
    metrics_exclude_groups: tuple[str, ...] = ()
    metrics_topics: tuple[str, ...] = ()
    metrics_push_gateway: str = ""
    metrics_push_job: str = "kafka_offset_audit"


# offsets.retention.minutes is a Java int; offsets.retention.check.interval.ms a long (reference 4.1).
MAX_RETENTION_MINUTES = 2**31 - 1
MAX_LONG = 2**63 - 1
