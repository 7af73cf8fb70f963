"""Run settings: conf/default.toml, overlaid by `--conf FILE`, overlaid by command-line flags.

Every file is checked against KNOWN before it is used: a misspelt setting would otherwise be ignored
without a word (`retention_minute = 1440` auditing at the default 10080), and a value of the wrong type
would end in a traceback far from the file. Each mistake is one sentence naming the file and the setting.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Callable
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from offset_audit.broker_versions import parse_version
from offset_audit.errors import UserError
from offset_audit.inputs.formats import by_name
from offset_audit.settings import (
    MAX_LONG,
    MAX_RETENTION_MINUTES,
    WRITERS,
    AuditSettings,
    DecodeSettings,
    InputSettings,
    KafkaSettings,
    KeepSnapshots,
    MetricsSettings,
    OutputSettings,
    Settings,
    check_cluster_name,
)

DEFAULT_CONF = resources.files("offset_audit") / "conf" / "default.toml"
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _whole(value: Any) -> bool:
    return type(value) is int


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


def _minutes_or_duration(value: Any) -> bool:
    return type(value) is int or isinstance(value, str)


def _texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _table_of_scalars(value: Any) -> bool:
    return isinstance(value, dict) and all(_scalar(v) for v in value.values())


# What each setting takes, and how a mistake is worded.
_TEXT = (_text, "text")
_WHOLE = (_whole, "a whole number")
_FLAG = (_flag, "true or false")
_MINUTES = (_minutes_or_duration, "minutes or a duration like 7d")
_OPTIONS = (_table_of_scalars, "a table of NAME = value")
_ANY_NAME: tuple[Callable[[Any], bool], str] = (_scalar, "text, a number or true/false")
_TEXTS = (_texts, 'a list of text, like ["orders-.*"]')
_KEEP = (_minutes_or_duration, 'a count of snapshots, a duration like "30d", or "" to keep every one')

# Every section and setting a config file may hold (conf/default.toml documents each). [spark] and
# [storage] take any name: Spark's own settings, and delta-rs' object-store options.
KNOWN: dict[str, dict[str, tuple[Callable[[Any], bool], str]] | None] = {
    "input": {"format": _TEXT, "partition": _WHOLE, "topic": _TEXT, "cluster": _TEXT},
    "kafka": {"bootstrap_servers": _TEXT, "isolation_level": _TEXT, "options": _OPTIONS, "version": _TEXT},
    "decode": {"fast_path": _FLAG, "max_batch_mib": _WHOLE},
    "audit": {
        "retention_minutes": _MINUTES,
        "check_interval_ms": _WHOLE,
        "as_of": _TEXT,
        "delete_retention_ms": _WHOLE,
        "keep_log": _FLAG,
    },
    "output": {"writer": _TEXT, "keep_snapshots": _KEEP, "deleted_file_retention": _MINUTES},
    "metrics": {
        "granularity": _TEXT,
        "watch_expiring_within": _MINUTES,
        "max_samples": _WHOLE,
        "groups": _TEXTS,
        "exclude_groups": _TEXTS,
        "topics": _TEXTS,
        "push_gateway": _TEXT,
        "push_job": _TEXT,
    },
    "spark": None,
    "storage": None,
}


def _nearest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else f"; known: {', '.join(known)}"


def check_config(raw: dict[str, Any], source: str) -> None:
    """Every section and setting of one config file is known and of the right type."""
    for section, values in raw.items():
        if section not in KNOWN:
            if not isinstance(values, dict):
                raise UserError(f"{source}: unknown setting {section}; settings go in a section such as [audit]")
            raise UserError(f"{source}: unknown section [{section}]{_nearest(section, list(KNOWN))}")
        if not isinstance(values, dict):
            raise UserError(f"{source}: {section} must be a section ([{section}]), not a value")
        settings = KNOWN[section]
        for name, value in values.items():
            if settings is None:
                check, kind = _ANY_NAME
            elif name in settings:
                check, kind = settings[name]
            else:
                raise UserError(f"{source}: unknown setting {name} in [{section}]{_nearest(name, list(settings))}")
            if not check(value):
                raise UserError(f"{source}: {name} in [{section}] takes {kind}, not {value!r}")


def _merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for name, value in overlay.items():
        out[name] = _merge(out[name], value) if isinstance(value, dict) and isinstance(out.get(name), dict) else value
    return out


def _read_toml(path: Path | Traversable) -> dict[str, Any]:
    """One config file, read and checked (`check_config`)."""
    source = f"config file {path}"
    if isinstance(path, Path) and path.exists() and not path.is_file() and not path.is_dir():
        raise UserError(f"{source} is not a regular file (a pipe or a device cannot hold settings)")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise UserError(f"{source} does not exist") from err
    except IsADirectoryError as err:
        raise UserError(f"{source} is a folder; give a TOML file") from err
    except OSError as err:
        raise UserError(f"{source} cannot be read: {err.strerror or err}") from err
    except UnicodeDecodeError as err:
        raise UserError(f"{source} is not UTF-8 text (byte {err.start})") from err
    except tomllib.TOMLDecodeError as err:
        raise UserError(f"{source} is not valid TOML: {err}") from err
    check_config(raw, source)
    return raw


# The flags' names for the values of each section of Settings: what load_settings' overrides are called.
FLAG_NAMES: dict[str, tuple[str, str]] = {
    "input_format": ("input", "format"),
    "partition": ("input", "partition"),
    "topic": ("input", "topic"),
    "cluster": ("input", "cluster"),
    "bootstrap_servers": ("kafka", "bootstrap_servers"),
    "isolation_level": ("kafka", "isolation_level"),
    "kafka_options": ("kafka", "options"),
    "kafka_version": ("kafka", "version"),
    "fast_path": ("decode", "fast_path"),
    "max_batch_bytes": ("decode", "max_batch_bytes"),
    "retention_minutes": ("audit", "retention_minutes"),
    "check_interval_ms": ("audit", "check_interval_ms"),
    "as_of": ("audit", "as_of"),
    "delete_retention_ms": ("audit", "delete_retention_ms"),
    "keep_log": ("audit", "keep_log"),
    "writer": ("output", "writer"),
    "keep_snapshots": ("output", "keep_snapshots"),
    "deleted_file_retention_minutes": ("output", "deleted_file_retention_minutes"),
    **{f"metrics_{name}": ("metrics", name) for name in MetricsSettings.__dataclass_fields__},
}
SECTIONS = {
    "input": InputSettings,
    "kafka": KafkaSettings,
    "decode": DecodeSettings,
    "audit": AuditSettings,
    "output": OutputSettings,
    "metrics": MetricsSettings,
}


def _by_flag(settings: Settings) -> SimpleNamespace:
    """Settings' values under the flags' names (FLAG_NAMES)."""
    return SimpleNamespace(
        **{flag: getattr(getattr(settings, s), name) for flag, (s, name) in FLAG_NAMES.items()},
    )


def _sectioned(values: dict[str, Any]) -> Settings:
    parts: dict[str, dict[str, Any]] = {section: {} for section in SECTIONS}
    for flag, (section, name) in FLAG_NAMES.items():
        parts[section][name] = values[flag]
    built = {section: SECTIONS[section](**given) for section, given in parts.items()}
    return Settings(**built, spark=values["spark"], storage=values["storage"])


def load_settings(conf_file: str | None = None, **overrides: Any) -> Settings:
    """The settings of a run; `overrides` are the flags' values by their names (FLAG_NAMES, spark,
    storage, remote: the Spark Connect server), None for a flag not given."""
    from offset_audit.runs.session import REMOTE, check_remote

    raw = _read_toml(DEFAULT_CONF)
    if conf_file:
        raw = _merge(raw, _read_toml(Path(conf_file)))
    # conf/default.toml normally sets every value; an overlay file may leave any out.
    default = _by_flag(Settings())

    def section(name: str) -> dict[str, Any]:
        return raw.get(name, {})

    audit = section("audit")
    values: dict[str, Any] = {
        "input_format": section("input").get("format", default.input_format),
        "partition": section("input").get("partition", default.partition),
        "topic": section("input").get("topic", default.topic),
        "cluster": section("input").get("cluster", default.cluster),
        "bootstrap_servers": section("kafka").get("bootstrap_servers", default.bootstrap_servers),
        "isolation_level": section("kafka").get("isolation_level", default.isolation_level),
        "kafka_options": {str(k): str(v) for k, v in section("kafka").get("options", {}).items()},
        "fast_path": section("decode").get("fast_path", default.fast_path),
        "max_batch_bytes": section("decode").get("max_batch_mib", default.max_batch_bytes >> 20) << 20,
        "spark": {str(k): str(v) for k, v in section("spark").items()},
        "storage": {str(k): str(v) for k, v in section("storage").items()},
        "retention_minutes": _minutes(audit.get("retention_minutes", default.retention_minutes)),
        "check_interval_ms": audit.get("check_interval_ms", default.check_interval_ms),
        "as_of": audit.get("as_of", default.as_of),
        "delete_retention_ms": audit.get("delete_retention_ms", default.delete_retention_ms),
        "keep_log": audit.get("keep_log", default.keep_log),
        "writer": section("output").get("writer", default.writer),
        **_output(section("output"), default),
        "kafka_version": str(section("kafka").get("version", default.kafka_version)),
        **_metrics(section("metrics"), default),
    }
    for name, value in overrides.items():
        if name not in values and name != "remote":
            raise TypeError(f"load_settings() got an unknown setting {name!r}")
        if value is None:
            continue
        if name in ("kafka_options", "storage"):
            values[name] = {**values[name], **value}
        elif name == "remote":
            values["spark"] = {**values["spark"], REMOTE: value}
        else:
            values[name] = value
    check_remote(values["spark"], values["writer"])  # the URL's form and the client's libraries
    by_name(values["input_format"])  # one sentence naming the formats
    parse_version(values["kafka_version"])  # one sentence, before anything starts
    if values["writer"] not in WRITERS:
        raise UserError(f"writer takes {', '.join(WRITERS)}, not '{values['writer']}'")
    if values["isolation_level"] not in ISOLATION_LEVELS:
        raise UserError(f"isolation_level takes {' or '.join(ISOLATION_LEVELS)}, not '{values['isolation_level']}'")
    if not 1 <= values["retention_minutes"] <= MAX_RETENTION_MINUTES:
        raise UserError(
            f"retention_minutes takes 1 to {MAX_RETENTION_MINUTES} (the broker's offsets.retention.minutes is an "
            f"int), not {values['retention_minutes']}"
        )
    if not 1 <= values["check_interval_ms"] <= MAX_LONG:
        raise UserError(
            f"check_interval_ms must be a positive number of milliseconds, not {values['check_interval_ms']}"
        )
    if not 1 <= values["delete_retention_ms"] <= MAX_LONG:
        raise UserError(
            f"delete_retention_ms must be a positive number of milliseconds, not {values['delete_retention_ms']}"
        )
    if not 1 <= values["max_batch_bytes"] >> 20 <= 4096:
        raise UserError(f"max_batch_mib takes 1 to 4096 (MiB), not {values['max_batch_bytes'] >> 20}")
    if overrides.get("cluster") is not None:  # given, even empty: "" in the config means none given
        check_cluster_name(values["cluster"], "--cluster")
    elif values["cluster"]:
        check_cluster_name(values["cluster"], "cluster in the config")
    partition = values["partition"]
    if partition is not None and (type(partition) is not int or not 0 <= partition <= 2**31 - 1):
        raise UserError(f"partition takes a __consumer_offsets partition number (0 or more), not {partition!r}")
    return _sectioned(values)


def _output(output: dict[str, Any], default: SimpleNamespace) -> dict[str, Any]:
    """[output]'s retention settings, parsed: "" keeps every snapshot."""
    from offset_audit.durations import parse_minutes

    keep = output.get("keep_snapshots", "")
    retention = output.get("deleted_file_retention", default.deleted_file_retention_minutes)
    return {
        "keep_snapshots": None if keep == "" else KeepSnapshots.parse(keep, "keep_snapshots in the config"),
        "deleted_file_retention_minutes": parse_minutes(retention, "deleted_file_retention in the config"),
    }


def _metrics(metrics: dict[str, Any], default: SimpleNamespace) -> dict[str, Any]:
    """[metrics] as Settings fields; the values are checked where `metrics` builds its scope."""
    watch = metrics.get("watch_expiring_within", default.metrics_watch_expiring_within_minutes)
    if isinstance(watch, str):
        from offset_audit.durations import parse_minutes

        watch = parse_minutes(watch, "watch_expiring_within in the config")
    return {
        "metrics_granularity": metrics.get("granularity", default.metrics_granularity),
        "metrics_watch_expiring_within_minutes": watch,
        "metrics_max_samples": metrics.get("max_samples", default.metrics_max_samples),
        "metrics_groups": tuple(metrics.get("groups", default.metrics_groups)),
        "metrics_exclude_groups": tuple(metrics.get("exclude_groups", default.metrics_exclude_groups)),
        "metrics_topics": tuple(metrics.get("topics", default.metrics_topics)),
        "metrics_push_gateway": metrics.get("push_gateway", default.metrics_push_gateway),
        "metrics_push_job": metrics.get("push_job", default.metrics_push_job),
    }


def _minutes(value: int | str) -> int:
    """Minutes as a whole number, or a duration string as on the command line ("7d")."""
    if isinstance(value, str):
        from offset_audit.durations import parse_minutes

        return parse_minutes(value, "retention_minutes in the config")
    return value
