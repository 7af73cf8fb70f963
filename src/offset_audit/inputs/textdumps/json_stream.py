"""Pieces of a text stream that holds JSON objects with no separator between them, and maybe lines.

Kafka's JSON console formatters (3.9+) write each record as one JSON object and no line separator, so a
dump is `{...}{...}{...}` on a single line that can be gigabytes long (reference 6.2). Reading it line
by line would hold the whole file; this reads fixed-size chunks into a sliding buffer and decodes one
object at a time with `json.JSONDecoder.raw_decode`, so memory stays at about one chunk plus one object.

The same stream may hold text lines (the Scala formatters' output, or what the tool wrote to stderr
when the dump was made with 2>&1), a file cut in the middle of an object, or garbage; each comes out
as its own piece, so a damaged stretch costs the records in it and not the rest of the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

RECORD_START = re.compile(r'\{"key":(?:\{|null)')
"""How every formatter's record object begins (its key is an object, or null in 3.9). Inside a JSON string
a quote is escaped, so this text can only be the start of an object, and no record field holds an
object named "key"; it is where reading resumes after a damaged stretch."""

_START_CHARS = len('{"key":null')
_SPACE = re.compile(r"[ \t\r\n]*")

JSON_OBJECT = "json"
TEXT_LINE = "text"
DAMAGED = "damaged"
TRUNCATED = "truncated"

CHUNK_CHARS = 1 << 20
MAX_PIECE_CHARS = 64 << 20
"""No single object or line is held beyond this; a longer run without a record start is reported as
damaged and skipped, which keeps memory bounded whatever the input."""


@dataclass(frozen=True)
class Piece:
    kind: str  # JSON_OBJECT, TEXT_LINE, DAMAGED or TRUNCATED
    value: Any  # the decoded object, or the text
    line: int  # 1-based line of the piece's first character


class _Buffer:
    """A window on the stream: `text[pos:]` is what has been read and not yet consumed."""

    def __init__(self, stream: TextIO, chunk_chars: int) -> None:
        self.stream = stream
        self.chunk_chars = chunk_chars
        self.text = ""
        self.pos = 0
        self.line = 1
        self.eof = False

    def fill(self) -> bool:
        """Read one more chunk; False at the end of the stream."""
        if self.eof:
            return False
        chunk = self.stream.read(self.chunk_chars)
        if not chunk:
            self.eof = True
            return False
        self.text = self.text[self.pos :] + chunk
        self.pos = 0
        return True

    def advance(self, end: int) -> None:
        self.line += self.text.count("\n", self.pos, end)
        self.pos = end

    @property
    def pending(self) -> int:
        return len(self.text) - self.pos


def pieces(
    stream: TextIO,
    whole_line: Callable[[str], bool] = lambda _line: False,
    chunk_chars: int = CHUNK_CHARS,
) -> Iterator[Piece]:
    """The stream's objects and lines in order.

    `whole_line(line)` says whether a text line is a record of its own even if it contains
    RECORD_START (a Scala formatter line whose metadata holds that text); otherwise a text piece ends
    where the next record object starts.
    """
    decoder = json.JSONDecoder()
    buf = _Buffer(stream, chunk_chars)
    while True:
        # Skip whitespace between pieces.
        while True:
            space = _SPACE.match(buf.text, buf.pos)
            assert space is not None  # the pattern matches the empty string, so it matches at any position
            buf.advance(space.end())
            # Decide object or text only once a whole record start could be seen (or the stream ends).
            if buf.pending >= _START_CHARS or (buf.eof and buf.pending):
                break
            if not buf.fill() and not buf.pending:
                return
        if RECORD_START.match(buf.text, buf.pos):
            yield _json_piece(buf, decoder)
        else:
            yield _text_piece(buf, whole_line)


def _json_piece(buf: _Buffer, decoder: json.JSONDecoder) -> Piece:
    while True:
        start = buf.pos
        try:
            obj, end = decoder.raw_decode(buf.text, start)
        except json.JSONDecodeError:
            found = RECORD_START.search(buf.text, start + 1)
            resume = found.start() if found else -1
            if resume == -1 and not buf.eof and buf.pending < MAX_PIECE_CHARS:
                buf.fill()  # most likely the object continues in the next chunk
                continue
            line = buf.line
            if resume == -1:
                damaged = buf.text[start:]
                buf.advance(len(buf.text))
                return Piece(TRUNCATED if buf.eof else DAMAGED, damaged, line)
            damaged = buf.text[start:resume]
            buf.advance(resume)
            return Piece(DAMAGED, damaged, line)
        line = buf.line
        buf.advance(end)
        return Piece(JSON_OBJECT, obj, line)


def _text_piece(buf: _Buffer, whole_line: Callable[[str], bool]) -> Piece:
    while True:
        start = buf.pos
        newline = buf.text.find("\n", start)
        if newline == -1 and not buf.eof and buf.pending < MAX_PIECE_CHARS:
            buf.fill()
            continue
        end = newline if newline != -1 else len(buf.text)
        found = RECORD_START.search(buf.text, start, end)
        resume = found.start() if found else -1
        line_text = buf.text[start:end]
        if resume != -1 and not whole_line(line_text.rstrip("\r")):
            end = resume  # text glued to the next object, e.g. stderr output between records
            line_text = buf.text[start:end]
        line = buf.line
        buf.advance(end)
        return Piece(TEXT_LINE, line_text.rstrip("\r"), line)
