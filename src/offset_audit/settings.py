"""What a run is told, as every stage reads it: the input, the decoder's switches, the broker's settings
the rules are judged with, Spark's and the object store's options.

runs/config.py fills it from conf/default.toml, `--conf FILE` and the command-line flags; the stages only
read it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from offset_audit import constants as K
from offset_audit.errors import UserError

# Who writes the Delta tables: auto (delta-spark where the session has Delta configured, else delta-rs),
# or one of the two, chosen (offset_audit.outputs.delta).
WRITERS = ("auto", "delta-rs", "delta-spark")


@dataclass(frozen=True)
class InputSettings:
    """[input]: what the dump is."""

    # A name of offset_audit.inputs.formats.CHOICES (checked where the config is read): auto is worked out
    # from the inputs (inputs.opened.open_dump); kafka is never guessed.
    format: str = "auto"
    # The __consumer_offsets partition of inputs that cannot tell it (flat segment files, console text).
    partition: int | None = None
    topic: str = K.OFFSETS_TOPIC
    # --cluster: the cluster's name in the output folder's tables and metrics; "" names it by its id (the
    # broker folders' meta.properties, or the Kafka source's Admin API). runs.clusters.
    cluster: str = ""


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


@dataclass(frozen=True)
class KafkaSettings:
    """[kafka]: the live cluster read through Spark's Kafka source, and the broker version that judges."""

    bootstrap_servers: str = ""
    isolation_level: str = "read_committed"
    options: dict[str, str] = field(default_factory=dict)
    # The broker version whose expiry rules judge the dump (offset_audit.broker_versions).
    version: str = "4.4"


@dataclass(frozen=True)
class DecodeSettings:
    """[decode]: the decoder's switches."""

    fast_path: bool = True
    # decode.max_batch_mib in bytes: the most one log-segment batch may take, stored or inflated.
    max_batch_bytes: int = 64 << 20


@dataclass(frozen=True)
class AuditSettings:
    """[audit]: the broker's retention settings the rules judge with, and the moment they judge at."""

    retention_minutes: int = K.OFFSETS_RETENTION_MINUTES_DEFAULT
    check_interval_ms: int = K.OFFSETS_RETENTION_CHECK_INTERVAL_MS_DEFAULT
    as_of: str = "latest"
    # audit --incremental: runs further apart than this may have missed tombstones the cleaner removed.
    delete_retention_ms: int = K.DELETE_RETENTION_MS_DEFAULT
    # audit --incremental: append every record read to DIR/state/log, for history --audit.
    keep_log: bool = True


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

    def __str__(self) -> str:
        from offset_audit.durations import format_minutes

        if self.count is not None:
            return f"the newest {self.count} snapshot{'' if self.count == 1 else 's'}"
        return f"the snapshots judged within {format_minutes(self.minutes or 0)} of the newest"


@dataclass(frozen=True)
class OutputSettings:
    """[output]: who writes the Delta tables (WRITERS), how many snapshots they keep, and how long a
    file they no longer list stays for readers of older versions (Delta's deletedFileRetentionDuration)."""

    writer: str = "auto"
    keep_snapshots: KeepSnapshots | None = None
    deleted_file_retention_minutes: int = 7 * 1440


@dataclass(frozen=True)
class MetricsSettings:
    """[metrics]: which series `metrics` writes (offset_audit.views.metric_scope) and where it pushes them."""

    granularity: str = "group"
    watch_expiring_within_minutes: int = 24 * 60
    max_samples: int = 200_000
    groups: tuple[str, ...] = ()
    exclude_groups: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    push_gateway: str = ""
    push_job: str = "kafka_offset_audit"


@dataclass(frozen=True)
class Settings:
    """One part per section of the config (conf/default.toml), so a stage reads only its own concern."""

    input: InputSettings = field(default_factory=InputSettings)
    kafka: KafkaSettings = field(default_factory=KafkaSettings)
    decode: DecodeSettings = field(default_factory=DecodeSettings)
    audit: AuditSettings = field(default_factory=AuditSettings)
    output: OutputSettings = field(default_factory=OutputSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    spark: dict[str, str] = field(default_factory=dict)
    # [storage] of the config and --storage-option: object-store options, as delta-rs names them.
    storage: dict[str, str] = field(default_factory=dict)

    def replaced(self, section: str, **changes: Any) -> Settings:
        """These settings with some values of one section changed (`settings.replaced("input", topic=...)`)."""
        return replace(self, **{section: replace(getattr(self, section), **changes)})


# offsets.retention.minutes is a Java int; offsets.retention.check.interval.ms a long (reference 4.1).
MAX_RETENTION_MINUTES = 2**31 - 1
MAX_LONG = 2**63 - 1
