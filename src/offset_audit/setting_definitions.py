"""How a setting is defined: once, as a field of one section of `settings.Settings`, with its type, default,
allowed values, TOML name, command-line flag and help (as Kafka's `ConfigDef.define` does).

Everything else is derived from those fields: the config files' validation and reading (runtime/config.py),
the flags (cli/options.py), conf/default.toml and docs/settings.md (cli/docs.py writes both; a test
compares them). A value is checked by `Setting.validated`, wherever it comes from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from offset_audit.durations import format_minutes, parse_minutes
from offset_audit.errors import UserError


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _same(value: Any, where: str) -> Any:
    return value


def _table(value: Any, where: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()}


@dataclass(frozen=True)
class Kind:
    """What a setting takes in a config file (`accepts`, worded as `wording` when it does not), how that
    becomes the field's value (`read`), how a field's value is written back in TOML (`toml`), the number
    a range bounds (`number`: the field's value in the unit the config writes), and the flag's metavar."""

    name: str
    wording: str
    accepts: Callable[[Any], bool]
    read: Callable[[Any, str], Any] = _same
    toml: Callable[[Any], Any] = lambda value: value
    number: Callable[[Any], Any] = lambda value: value
    metavar: str = ""


TEXT = Kind("text", "text", lambda v: isinstance(v, str))
WHOLE = Kind("whole number", "a whole number", lambda v: type(v) is int, metavar="N")
FLAG = Kind("true or false", "true or false", lambda v: isinstance(v, bool))
# Minutes, or a duration as on the command line ("7d"); written back as minutes or as a duration.
MINUTES = Kind(
    "minutes or duration",
    "minutes or a duration like 7d",
    lambda v: type(v) is int or isinstance(v, str),
    parse_minutes,
    metavar="DURATION",
)
DURATION = dataclasses.replace(MINUTES, name="duration", toml=format_minutes)
# A size written in MiB, kept in bytes.
MIB = Kind(
    "MiB", "a whole number", lambda v: type(v) is int, lambda v, where: v << 20, lambda v: v >> 20, lambda v: v >> 20
)
TEXTS = Kind(
    "list of text",
    'a list of text, like ["orders-.*"]',
    lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    lambda v, where: tuple(v),
    list,
)
OPTIONS = Kind(
    "table",
    "a table of NAME = value",
    lambda v: isinstance(v, dict) and all(_scalar(x) for x in v.values()),
    _table,
)
# A section that takes any name ([spark], [storage]): each value text, a number or true/false.
ANY_NAMES = Kind("section of any names", "text, a number or true/false", _scalar, _table)


@dataclass(frozen=True)
class Setting:
    """One setting. `section`, `field`, `key` and `dest` are filled in from where it is declared
    (`declared_in`): the section is the Settings field it sits under, the key its TOML name (the field's
    name unless given), `dest` the name flags, `runtime.config.load_settings` and the API give it by.

    `low`/`high` bound a whole number (`Kind.number`: in the unit the config writes), `choices`
    a text; `check` is what else a value must be, raising a UserError (a cluster's name, a broker
    version). `flag` is the command-line flag of the commands that take it."""

    kind: Kind
    help: str
    default: Any = None
    key: str = ""
    dest: str = ""
    low: int | None = None
    high: int | None = None
    unit: str = ""
    why: str = ""
    choices: tuple[str, ...] = ()
    check: Callable[[Any, str], Any] | None = None
    flag: str = ""
    metavar: str = ""
    section: str = ""
    field: str = ""

    @property
    def bounds(self) -> str:
        """The allowed values in words: `1 to 2147483647 minutes (...)`, `read_committed or ...`."""
        if self.choices:
            return " or ".join(filter(None, (", ".join(self.choices[:-1]), self.choices[-1])))
        if self.low is None and self.high is None:
            return ""
        span = f"{self.low} or more" if self.high is None else f"{self.low} to {self.high}"
        return span + (f" {self.unit}" if self.unit else "") + (f" ({self.why})" if self.why else "")

    def validated(self, value: Any, name: str) -> Any:
        """`value` (the field's), when the setting allows it; else a UserError of one sentence that
        calls the setting `name` (its flag, or its key in the config)."""
        if value is None or self.kind in (OPTIONS, ANY_NAMES, TEXTS):
            return value
        shown = self.kind.number(value)
        if self.choices and value not in self.choices:
            raise UserError(f"{name} takes {self.bounds}, not '{value}'")
        if (self.low is not None or self.high is not None) and not self._within(shown):
            raise UserError(f"{name} takes {self.bounds}, not {shown!r}")
        if self.check is not None:
            self.check(value, name)
        return value

    def _within(self, number: Any) -> bool:
        return (
            type(number) is int
            and (self.low is None or number >= self.low)
            and (self.high is None or number <= self.high)
        )

    @property
    def shows_default(self) -> bool:
        """Whether a flag's help names the default: not when it is nothing (no value, "", no entries)."""
        return self.default_text not in ("", '""', "none")

    @property
    def default_text(self) -> str:
        """The default as the config writes it, for help and docs ("" when there is none)."""
        value = self.kind.toml(self.default)
        if value is None:
            return ""
        if isinstance(value, bool):
            return str(value).lower()
        if isinstance(value, dict):
            return ", ".join(f"{k}={v}" for k, v in value.items()) or "none"
        if isinstance(value, list):
            return ", ".join(value) or "none"
        return str(value) if value != "" else '""'


def define(kind: Kind, help: str, default: Any = None, **given: Any) -> Any:
    """A dataclass field that is a setting: `name: int = define(WHOLE, "what it is", 5, flag="--n")`.
    A mutable default is copied for each instance."""
    setting = Setting(kind, help, default, **given)
    metadata = {"setting": setting}
    if isinstance(default, dict):
        return dataclasses.field(default_factory=lambda: dict(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def declared_in(sections: type) -> tuple[Setting, ...]:
    """Every setting of `sections` (a dataclass whose fields are the sections), in declaration order,
    its place filled in. A field of `sections` itself that is a setting is a section of free names."""
    found: list[Setting] = []
    for part in dataclasses.fields(sections):
        own = part.metadata.get("setting")
        if own is not None:
            found.append(dataclasses.replace(own, section=part.name, field=part.name, dest=own.dest or part.name))
            continue
        for item in dataclasses.fields(part.type if isinstance(part.type, type) else _resolve(sections, part)):
            setting = item.metadata["setting"]
            found.append(
                dataclasses.replace(
                    setting,
                    section=part.name,
                    field=item.name,
                    key=setting.key or item.name,
                    dest=setting.dest or item.name,
                )
            )
    return tuple(found)


def _resolve(owner: type, part: dataclasses.Field[Any]) -> type:
    """A field's class where `from __future__ import annotations` left its type a string."""
    import sys

    found = getattr(sys.modules[owner.__module__], str(part.type))
    assert isinstance(found, type), part
    return found
