"""Names from the dump, made inert for each medium they leave the program in: one function per medium.

Any client that may commit offsets picks its group id, and Kafka accepts any character in it: a newline,
an escape sequence, quotes, `$(...)`, `<script>`, a NUL. Member ids, client ids, hosts, topics and
metadata come from the dump too. None of them may ever act as anything but text where they are shown:
not as a command in a shell script, not as cursor movement in a terminal, not as markup in a report,
not as a new series in a metrics scrape, not as a string's end in JSON. The modules that write an
output pass every such value through the function for its medium here and never format raw names.
"""

from __future__ import annotations

import html
import json
import shlex
from typing import Any

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def stored_text(text: str) -> str:
    """Text read with `surrogateescape` (bytes that were not UTF-8, in a dump or a file name), with those
    bytes written as `\\xNN` so it can be stored (Arrow and Delta hold valid UTF-8 only)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _escaped(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: Any) -> str:
    """A value as it may be printed to a terminal or a log: every character that would not be shown as
    itself written as a visible escape: controls and ESC, the formatting characters that reorder or hide
    text (bidi overrides, zero-width characters: "Trojan Source"), line separators, unassigned code
    points and bytes that were not UTF-8. A backslash is doubled, so a name cannot fake one of ours."""
    shown = str(text)
    if shown.isprintable() and "\\" not in shown:
        return shown
    return "".join(char if char.isprintable() and char != "\\" else _escaped(char) for char in shown)


class NotAShellArgument(ValueError):
    """A value no command line can carry: argv strings end at a NUL byte."""


def shell_word(text: str) -> str:
    """One shell word that bash passes on as exactly `text`: single-quoted when it is printable, as
    ANSI-C `$'...'` when it holds control characters (so the script itself holds none)."""
    if "\x00" in text:
        raise NotAShellArgument(f"{terminal(text)} holds a NUL byte, which no command-line argument can carry")
    text = stored_text(text)
    if text.isprintable():
        return shlex.quote(text)
    escaped = "".join(_ansi_c(char) for char in text)
    return f"$'{escaped}'"


def _ansi_c(char: str) -> str:
    if char in "\\'":
        return "\\" + char
    if char.isprintable():
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shell_comment(text: str) -> str:
    """Text for a `#` comment of a shell script: one line, nothing a terminal would act on."""
    return terminal(text)


def html_text(text: Any) -> str:
    """Text for HTML content or a quoted attribute: markup characters escaped, and invisible characters
    made visible as in a terminal."""
    return html.escape(terminal(text), quote=True)


def json_for_html(value: Any) -> str:
    """JSON to embed in an HTML <script> block: `<`, `>` and `&` escaped, so no value can close the
    block or open a comment; control characters are escaped by JSON itself."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    text = stored_text(text)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("\u2028", "\\u2028")


def json_text(document: str) -> str:
    """JSON text (as json.dumps writes it with ensure_ascii=False) with every character that would not show
    as itself in a terminal (C1 controls, bidi overrides, line separators, unassigned code points) written
    as a \\u escape: JSON reads the same value back, and the text is safe to print. Such characters can
    only stand inside strings, where the escape means the same; the rest (letters of every script) stays."""
    if document.isascii() or document.isprintable():
        return document
    return "".join(char if char.isascii() or char.isprintable() else _json_escape(char) for char in document)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code > 0xFFFF:  # a UTF-16 surrogate pair, as JSON spells characters beyond the BMP
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def prometheus_label(text: Any) -> str:
    """A label value of the Prometheus text exposition format: backslash, double quote and line feed
    escaped (the format's three escapes), and valid UTF-8."""
    return stored_text(str(text)).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
