"""conf/default.toml and docs/settings.md, written from the settings' definitions (settings.py), so that
neither can list a setting, a default or a flag the tool does not have. `python -m offset_audit.cli.docs
settings` rewrites both; tests/runtime/test_setting_definitions.py fails when they differ from these."""

from __future__ import annotations

import json
import textwrap
from typing import Any

from offset_audit.setting_definitions import ANY_NAMES, OPTIONS, Setting
from offset_audit.settings import SETTINGS

WIDTH = 110
TOML_HEAD = """\
# kafka-offset-audit's settings, each at its default. `--conf FILE` takes a file of the same shape: a setting
# it leaves out keeps its default, one it misspells is refused with the nearest known name. Flags win over the
# file. Written from src/offset_audit/settings.py (python -m offset_audit.cli.docs settings); docs/settings.md
# lists the same settings with their flags and allowed values.
"""
PAGE_HEAD = """\
# Settings

Every setting, by section of a `--conf FILE` (TOML), with its command-line flag where a command takes one
and its default. A flag wins over the file, and the file over the default; a value out of its range is one
sentence and exit 2 before Spark starts. [conf/default.toml](../conf/default.toml) holds each at its default.
This page is written from `src/offset_audit/settings.py`, where each setting is defined once.
"""


def toml_value(value: Any) -> str:
    """A value as TOML writes it (text as a basic string, escaped as JSON escapes it, which TOML reads)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def _comment(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH - 2, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False)


def _described(setting: Setting) -> str:
    said = setting.help
    if setting.bounds and not setting.choices:
        said += f" Takes {setting.bounds}."
    if setting.flag:
        said += f" Flag: {setting.flag}."
    return said


def default_toml() -> str:
    """conf/default.toml: each section, each setting's help as its comment, then the setting at its default
    (commented out where it has none: an example of the form it takes)."""
    lines = [TOML_HEAD.rstrip("\n")]
    section = ""
    for setting in SETTINGS:
        if setting.section != section:
            section = setting.section
            lines += ["", f"[{section}]"]
        lines += _comment(_described(setting))
        if setting.kind is ANY_NAMES:
            lines += [f"{toml_value(k)} = {toml_value(v)}" for k, v in setting.default.items()]
        elif setting.kind is OPTIONS:
            lines.append(f'# [{section}.{setting.key}] holds them, one NAME = "value" per line')
        elif setting.kind.toml(setting.default) is None:
            lines.append(f"# {setting.key} =")
        else:
            lines.append(f"{setting.key} = {toml_value(setting.kind.toml(setting.default))}")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def settings_page() -> str:
    """docs/settings.md: one table per section."""
    lines = [PAGE_HEAD.rstrip("\n")]
    section = ""
    for setting in SETTINGS:
        if setting.section != section:
            section = setting.section
            lines += [
                "",
                f"## [{section}]",
                "",
                "| setting | flag | default | takes | what it is |",
                "|---|---|---|---|---|",
            ]
        name = f"`{setting.key}`" if setting.key else "any name"
        flag = f"`{setting.flag}`" if setting.flag else ""
        default = f"`{setting.default_text}`" if setting.default_text else ""
        takes = setting.bounds or setting.kind.name
        lines.append(f"| {name} | {flag} | {_cell(default)} | {_cell(takes)} | {_cell(setting.help)} |")
    return "\n".join(lines) + "\n"
