"""A broker's `server.properties`, read as Kafka reads it (`Utils.loadProps`, `java.util.Properties.load`).

The share audit checks the group.share.* settings an operator gives; reading the file as Java does
(continuations, escapes, `:` or whitespace as separators, ISO-8859-1) means a setting this reader sees
is the setting the broker sees, whatever the file's quirks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from offset_audit.errors import InputNotFound, UserError


class MalformedProperties(UserError):
    """A properties file Java would refuse to load."""


_WHITESPACE = " \t\f"
_NATURAL_LINE_END = re.compile(r"\r\n|\r|\n")
_ESCAPED_CHARS = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def load_broker_config(path: str | Path) -> dict[str, str]:
    """A broker's properties file as Kafka reads it: Utils.loadProps hands a byte stream to
    Properties.load, which decodes ISO-8859-1 (anything else must be written as \\uXXXX)."""
    config_path = Path(path)
    if not config_path.is_file():
        raise InputNotFound(f"the broker configuration '{config_path}' does not exist; give the server.properties path")
    return parse_properties(config_path.read_text(encoding="latin-1"))


def parse_properties(text: str) -> dict[str, str]:
    """java.util.Properties.load on text: later duplicates win, as in Java."""
    properties: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_key_value(line)
        properties[_unescape(key)] = _unescape(value)
    return properties


def _logical_lines(text: str) -> Iterator[str]:
    """Join continued lines; drop blank and comment lines.

    A natural line ending in an odd number of backslashes continues on the next, whose leading whitespace
    is dropped. `#` or `!` first makes a comment only at the start of a logical line, and a comment never
    continues, so a continued value may hold a `#`.
    """
    pending: str | None = None
    for natural in _NATURAL_LINE_END.split(text):
        stripped = natural.lstrip(_WHITESPACE)
        if pending is None and (not stripped or stripped[0] in "#!"):
            continue
        joined = stripped if pending is None else pending + stripped
        if _ends_with_escape(joined):
            pending = joined[:-1]
        else:
            pending = None
            yield joined
    if pending is not None:
        yield pending


def _ends_with_escape(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    """The key runs to the first unescaped `=`, `:` or whitespace; whitespace and one separator follow."""
    key_end = len(line)
    escaped = False
    for position, char in enumerate(line):
        if not escaped and (char in "=:" or char in _WHITESPACE):
            key_end = position
            break
        escaped = char == "\\" and not escaped
    value_start = key_end
    while value_start < len(line) and line[value_start] in _WHITESPACE:
        value_start += 1
    if value_start < len(line) and line[value_start] in "=:":
        value_start += 1
    while value_start < len(line) and line[value_start] in _WHITESPACE:
        value_start += 1
    return line[:key_end], line[value_start:]


def _unescape(text: str) -> str:
    """Properties.loadConvert: \\t \\n \\r \\f, \\uXXXX, and a backslash before anything else drops."""
    chars: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        position += 1
        if char != "\\" or position == len(text):
            chars.append(char if char != "\\" else "")
            continue
        escaped = text[position]
        position += 1
        if escaped == "u":
            code = text[position : position + 4]
            if not re.fullmatch(r"[0-9A-Fa-f]{4}", code):
                raise MalformedProperties(f"malformed \\uXXXX escape in '{text}'; write four hex digits after \\u")
            chars.append(chr(int(code, 16)))
            position += 4
        else:
            chars.append(_ESCAPED_CHARS.get(escaped, escaped))
    return "".join(chars)
