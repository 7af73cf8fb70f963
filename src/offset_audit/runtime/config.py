"""Run settings: each setting's default (its definition in settings.py), overlaid by `--conf FILE`,
overlaid by command-line flags.

Every file is checked against KNOWN before it is used: a misspelt setting would otherwise be ignored
without a word (`retention_minute = 1440` auditing at the default 10080), and a value of the wrong type
would end in a traceback far from the file. Each mistake is one sentence naming the file and the setting.
"""

from __future__ import annotations

import difflib
import tomllib
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from offset_audit.errors import UserError
from offset_audit.inputs.formats import by_name
from offset_audit.setting_definitions import ANY_NAMES, Setting
from offset_audit.settings import BY_DEST, SETTINGS, Settings

# The file this tool ships with every setting at its default, and what each does; written from the
# definitions (python -m offset_audit.cli.docs settings) and never read to run: the defaults are the
# definitions' own.
DEFAULT_CONF = resources.files("offset_audit") / "conf" / "default.toml"

# Every section and setting a config file may hold; a section of free names ([spark], [storage]) maps to
# its one setting.
KNOWN: dict[str, dict[str, Setting]] = {}
_DEFAULT = Settings()
for _setting in SETTINGS:
    KNOWN.setdefault(_setting.section, {})[_setting.key] = _setting


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
            setting = settings.get("") or settings.get(name)  # "": the one setting of a section of free names
            if setting is None:
                raise UserError(f"{source}: unknown setting {name} in [{section}]{_nearest(name, list(settings))}")
            if not setting.kind.accepts(value):
                raise UserError(f"{source}: {name} in [{section}] takes {setting.kind.wording}, not {value!r}")


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


def load_settings(conf_file: str | None = None, **overrides: Any) -> Settings:
    """The settings of a run: each setting's default, overlaid by `conf_file`, overlaid by `overrides`
    (by the settings' `dest` names, None for one not given; tables are merged; `remote` is the Spark Connect
    server). Every value is checked here, once, by its definition (`Setting.validated`), before anything starts."""
    from offset_audit.runtime.session import REMOTE, check_remote

    raw = _read_toml(Path(conf_file)) if conf_file else {}
    remote = overrides.pop("remote", None)
    unknown = sorted(set(overrides) - set(BY_DEST))
    if unknown:
        raise TypeError(f"load_settings() got an unknown setting {unknown[0]!r}")
    sections: dict[str, dict[str, Any]] = {}
    for setting in SETTINGS:
        given = overrides.get(setting.dest)
        value = _configured(setting, raw.get(setting.section, {}))
        if isinstance(value, dict) and given is not None:
            value = {**value, **given}
        elif given is not None:
            value = given
        name = setting.flag if given is not None and setting.flag else setting.key or setting.section
        sections.setdefault(setting.section, {})[setting.field] = setting.validated(value, name)
    spark, storage = sections.pop("spark")["spark"], sections.pop("storage")["storage"]
    if remote is not None:
        spark = {**spark, REMOTE: remote}
    built = Settings(
        **{section: type(getattr(_DEFAULT, section))(**values) for section, values in sections.items()},
        spark=spark,
        storage=storage,
    )
    check_remote(built.spark, built.output.writer)  # the URL's form and the client's libraries
    by_name(built.input.format)  # one sentence naming the formats (inputs.formats is their list)
    return built


def _named(setting: Setting) -> str:
    return f"{setting.key or setting.section} in the config"


def _configured(setting: Setting, section: dict[str, Any]) -> Any:
    """The setting's value from the config's section, read by its kind; its default when not there."""
    if setting.kind is ANY_NAMES:
        return {**setting.default, **setting.kind.read(section, _named(setting))}
    if setting.key not in section:
        return setting.default
    return setting.kind.read(section[setting.key], _named(setting))
