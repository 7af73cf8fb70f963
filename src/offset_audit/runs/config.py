"""Run settings: conf/default.toml, overlaid by `--conf FILE`, overlaid by command-line flags."""

from __future__ import annotations

import tomllib
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from offset_audit.errors import UserError
from offset_audit.settings import INPUT_FORMATS, MAX_LONG, MAX_RETENTION_MINUTES, Settings

DEFAULT_CONF = resources.files("offset_audit") / "conf" / "default.toml"


def _merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for name, value in overlay.items():
        out[name] = _merge(out[name], value) if isinstance(value, dict) and isinstance(out.get(name), dict) else value
    return out


def _read_toml(path: Path | Traversable) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError as err:
        raise UserError(f"config file {path} does not exist") from err
    except tomllib.TOMLDecodeError as err:
        raise UserError(f"config file {path} is not valid TOML: {err}") from err


def load_settings(conf_file: str | None = None, **overrides: Any) -> Settings:
    raw = _read_toml(DEFAULT_CONF)
    if conf_file:
        raw = _merge(raw, _read_toml(Path(conf_file)))
    # conf/default.toml normally sets every value; an overlay file may leave any out.
    default = Settings()

    def section(name: str) -> dict[str, Any]:
        return raw.get(name, {})

    audit = section("audit")
    values: dict[str, Any] = {
        "input_format": section("input").get("format", default.input_format),
        "partition": section("input").get("partition", default.partition),
        "topic": section("input").get("topic", default.topic),
        "bootstrap_servers": section("kafka").get("bootstrap_servers", default.bootstrap_servers),
        "isolation_level": section("kafka").get("isolation_level", default.isolation_level),
        "kafka_options": {str(k): str(v) for k, v in section("kafka").get("options", {}).items()},
        "fast_path": bool(section("decode").get("fast_path", default.fast_path)),
        "max_batch_bytes": _whole_number(section("decode"), "max_batch_mib", default.max_batch_bytes >> 20) << 20,
        "spark": {str(k): str(v) for k, v in section("spark").items()},
        "storage": {str(k): str(v) for k, v in section("storage").items()},
        "retention_minutes": _minutes(audit, "retention_minutes", default.retention_minutes),
        "check_interval_ms": _whole_number(audit, "check_interval_ms", default.check_interval_ms),
        "as_of": str(audit.get("as_of", default.as_of)),
    }
    for name, value in overrides.items():
        if value is None:
            continue
        if name in ("kafka_options", "storage"):
            values[name] = {**values[name], **value}
        else:
            values[name] = value
    if values["input_format"] not in INPUT_FORMATS:
        raise UserError(f"unknown input format '{values['input_format']}'; use one of: {', '.join(INPUT_FORMATS)}")
    if not 1 <= values["retention_minutes"] <= MAX_RETENTION_MINUTES:
        raise UserError(
            f"retention_minutes takes 1 to {MAX_RETENTION_MINUTES} (the broker's offsets.retention.minutes is an "
            f"int), not {values['retention_minutes']}"
        )
    if not 1 <= values["check_interval_ms"] <= MAX_LONG:
        raise UserError(
            f"check_interval_ms must be a positive number of milliseconds, not {values['check_interval_ms']}"
        )
    if not 1 <= values["max_batch_bytes"] >> 20 <= 4096:
        raise UserError(f"max_batch_mib takes 1 to 4096 (MiB), not {values['max_batch_bytes'] >> 20}")
    partition = values["partition"]
    if partition is not None and (type(partition) is not int or not 0 <= partition <= 2**31 - 1):
        raise UserError(f"partition takes a __consumer_offsets partition number (0 or more), not {partition!r}")
    return Settings(**values)


def _minutes(section: dict[str, Any], name: str, default: int) -> int:
    """Minutes as a whole number, or a duration string as on the command line ("7d")."""
    value = section.get(name, default)
    if isinstance(value, str):
        from offset_audit.durations import parse_minutes

        return parse_minutes(value, f"{name} in the config")
    return _whole_number(section, name, default)


def _whole_number(section: dict[str, Any], name: str, default: int) -> int:
    value = section.get(name, default)
    if type(value) is not int:
        raise UserError(f"{name} in the config takes a whole number, not {value!r}")
    return value
